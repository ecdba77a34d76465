//! Surrogate generation for `replace`: realistic, shape-aware stand-ins.
//!
//! # Why shape-aware
//!
//! Downstream tools (and readers) parse de-identified notes: a phone number must still
//! look like a phone number, a date like a date in the same format, an MRN like an MRN.
//! So identifiers keep their character classes (digit → digit, letter → letter with the
//! same case, separators kept), dates are shifted by the request's offset in their own
//! format, and names, streets and cities come from built-in lists spanning many origins
//! (written for phiguard, CC0; see [`FEMALE_FIRST`]) and the US Census Bureau's
//! frequency lists ([`census`](crate::detect::census), public domain). Every surrogate that could collide with a real value is drawn from reserved
//! space where one exists: e-mail and URLs use the RFC 2606 `example.*` domains, IP
//! addresses the RFC 5737 / RFC 3849 documentation ranges, SSNs the never-issued 9xx area.
//!
//! The generator is a pure function of its inputs and the RNG; memoisation (same source,
//! same surrogate) lives in [`super::Deidentifier`].

use std::collections::HashSet;
use std::sync::LazyLock;

use rand::Rng;
use unicode_normalization::UnicodeNormalization;

use super::gender::Gender;
use crate::detect::census;
use crate::detect::normalize::decimal_value;
use crate::detect::rules::dates::{self, DateParts};
use crate::detect::Label;

/// Given names for surrogates, by the gender they are mostly given to (95 women's, 90
/// men's, 8 either), from every continent; written for phiguard from general knowledge (no
/// third-party list copied; CC0, like `src/detect/lists`). The women's names:
pub(crate) const FEMALE_FIRST: &[&str] = &[
    "Maria",
    "Aisha",
    "Priya",
    "Olga",
    "Fatima",
    "Sofia",
    "Amara",
    "Elena",
    "Ingrid",
    "Mei",
    "Nadia",
    "Zainab",
    "Chloe",
    "Leilani",
    "Ana",
    "Freya",
    "Lucia",
    "Imani",
    "Rosa",
    "Hana",
    "Adaeze",
    "Agnieszka",
    "Aiko",
    "Alejandra",
    "Amina",
    "Anahera",
    "Anneli",
    "Astrid",
    "Aylin",
    "Beatriz",
    "Bianca",
    "Camila",
    "Chiamaka",
    "Dalia",
    "Daniela",
    "Deepika",
    "Dilnoza",
    "Efua",
    "Elif",
    "Esperanza",
    "Farah",
    "Folake",
    "Gabriela",
    "Greta",
    "Hyun-jung",
    "Ilse",
    "Ines",
    "Isabela",
    "Jia",
    "Kalani",
    "Kamala",
    "Katarzyna",
    "Keiko",
    "Lakshmi",
    "Larissa",
    "Leila",
    "Liesel",
    "Lin",
    "Lupita",
    "Magdalena",
    "Malia",
    "Mariam",
    "Marisol",
    "Mirela",
    "Nasrin",
    "Ngozi",
    "Nilufar",
    "Noor",
    "Oksana",
    "Paola",
    "Parisa",
    "Pilar",
    "Qing",
    "Ranjani",
    "Rania",
    "Saanvi",
    "Sakura",
    "Salma",
    "Samira",
    "Seo-yeon",
    "Shirin",
    "Sigrid",
    "Siobhan",
    "Soledad",
    "Sunita",
    "Svetlana",
    "Tamar",
    "Thandiwe",
    "Valentina",
    "Wanjiru",
    "Ximena",
    "Yasmin",
    "Yara",
    "Zehra",
    "Zofia",
];
/// The men's names.
pub(crate) const MALE_FIRST: &[&str] = &[
    "James",
    "Carlos",
    "Kwame",
    "Liam",
    "Mateo",
    "Hiroshi",
    "Omar",
    "Tariq",
    "Diego",
    "Sven",
    "Arjun",
    "Dmitri",
    "Kofi",
    "Rohan",
    "Jamal",
    "Tomasz",
    "Kenji",
    "Emeka",
    "Abebe",
    "Adebayo",
    "Alejandro",
    "Anders",
    "Andrzej",
    "Arash",
    "Bao",
    "Bilal",
    "Bongani",
    "Chidi",
    "Cian",
    "Dariusz",
    "Dawit",
    "Eduardo",
    "Emil",
    "Esteban",
    "Farid",
    "Femi",
    "Florin",
    "Giorgos",
    "Goran",
    "Gustavo",
    "Haruto",
    "Hemi",
    "Henrik",
    "Hussein",
    "Ibrahim",
    "Ivan",
    "Jakub",
    "Javier",
    "Jin-ho",
    "Joaquin",
    "Kaveh",
    "Kemal",
    "Khalid",
    "Kiri",
    "Lars",
    "Lorenzo",
    "Luca",
    "Mahmoud",
    "Malik",
    "Marek",
    "Matteo",
    "Mehmet",
    "Miguel",
    "Minh",
    "Mustafa",
    "Nikhil",
    "Nikolai",
    "Obinna",
    "Oskar",
    "Pablo",
    "Paolo",
    "Pedro",
    "Rafael",
    "Rajesh",
    "Rashid",
    "Rizwan",
    "Santiago",
    "Sergei",
    "Seung-woo",
    "Sipho",
    "Stefan",
    "Takeshi",
    "Tane",
    "Thabo",
    "Tiago",
    "Tunde",
    "Vikram",
    "Wiremu",
    "Yusuf",
    "Zoran",
];

/// Names given to either.
const UNISEX_FIRST: &[&str] = &["Wei", "Yuki", "Alex", "Kai", "Sasha", "Robin", "Noa", "Ari"];

#[cfg(test)]
/// Every given name of the three pools.
pub(crate) fn all_first_names() -> impl Iterator<Item = &'static str> {
    POOLS.any.iter().copied()
}

/// The surrogate pools: the lists above, then the census lists ([`census`](crate::detect::census)), without
/// repeats. With a few hundred names, a subject's people shared surrogates (a pool of 138
/// family names gave two of twelve people one name as often as not), and the within-note
/// redraw that parts them made one person's surrogate depend on who else was named.
struct Pools {
    female: Vec<&'static str>,
    male: Vec<&'static str>,
    any: Vec<&'static str>,
    last: Vec<&'static str>,
}

/// Census given names per sex in each pool, and census family names.
const CENSUS_GIVEN: usize = 700;
const CENSUS_FAMILY: usize = 1500;

static POOLS: LazyLock<Pools> = LazyLock::new(|| {
    fn union(own: &[&'static str], more: impl Iterator<Item = &'static str>) -> Vec<&'static str> {
        let mut seen: HashSet<String> = own.iter().map(|n| n.to_lowercase()).collect();
        let mut out = own.to_vec();
        out.extend(more.filter(|n| seen.insert(n.to_lowercase())));
        out
    }
    let female = union(FEMALE_FIRST, census::female().take(CENSUS_GIVEN));
    let male = union(MALE_FIRST, census::male().take(CENSUS_GIVEN));
    let any = union(
        &female,
        male.iter().copied().chain(UNISEX_FIRST.iter().copied()),
    );
    let last = union(LAST_NAMES, census::family().take(CENSUS_FAMILY));
    Pools {
        female,
        male,
        any,
        last,
    }
});

#[cfg(test)]
/// The given names a surrogate for a woman's name is drawn from.
pub(crate) fn female_names() -> &'static [&'static str] {
    &POOLS.female
}

#[cfg(test)]
/// The given names a surrogate for a man's name is drawn from.
pub(crate) fn male_names() -> &'static [&'static str] {
    &POOLS.male
}

/// A given name from any pool, each name as likely as another.
fn any_first_name<R: Rng + ?Sized>(rng: &mut R) -> &'static str {
    pick(&POOLS.any, rng)
}

/// A given name from the pool of `gender`'s cue (either pool without one).
fn first_name<R: Rng + ?Sized>(gender: Gender, rng: &mut R) -> &'static str {
    match gender {
        Gender::Female => pick(&POOLS.female, rng),
        Gender::Male => pick(&POOLS.male, rng),
        Gender::Unknown => any_first_name(rng),
    }
}

/// A family name.
fn family_name<R: Rng + ?Sized>(rng: &mut R) -> &'static str {
    pick(&POOLS.last, rng)
}

/// Family names for surrogates (138, from every continent; same provenance as
/// [`FEMALE_FIRST`]).
const LAST_NAMES: &[&str] = &[
    "Garcia",
    "Nguyen",
    "Okafor",
    "Kowalski",
    "Haddad",
    "Tanaka",
    "Johansson",
    "Patel",
    "Mensah",
    "Rossi",
    "Schmidt",
    "Kim",
    "Petrov",
    "Alvarez",
    "Chen",
    "Mbeki",
    "O'Brien",
    "Dubois",
    "Yilmaz",
    "Singh",
    "Novak",
    "Andersen",
    "Costa",
    "Ibrahim",
    "Fischer",
    "Moreau",
    "Sato",
    "Kaur",
    "Walsh",
    "Herrera",
    "Adeyemi",
    "Lindqvist",
    "Farouk",
    "Morales",
    "Park",
    "Abara",
    "Achterberg",
    "Aguilar",
    "Ahmadi",
    "Akhtar",
    "Alves",
    "Amadi",
    "Antonov",
    "Arslan",
    "Asante",
    "Bakker",
    "Balogun",
    "Banerjee",
    "Bartosz",
    "Becker",
    "Bianchi",
    "Bondarenko",
    "Brennan",
    "Castillo",
    "Celik",
    "Chaudhry",
    "Cruz",
    "Dahl",
    "Dlamini",
    "Esposito",
    "Eze",
    "Fernandes",
    "Ferreira",
    "Gallagher",
    "Greco",
    "Gupta",
    "Hakimi",
    "Hansen",
    "Horvat",
    "Hosseini",
    "Huang",
    "Ivanova",
    "Jansen",
    "Jovanovic",
    "Kamau",
    "Karimi",
    "Kaya",
    "Khan",
    "Koh",
    "Kovacs",
    "Kruger",
    "Lambert",
    "Larsen",
    "Laurent",
    "Lee",
    "Lopez",
    "Lund",
    "Mahlangu",
    "Mahmoud",
    "Marino",
    "Medina",
    "Mendoza",
    "Mishra",
    "Mokoena",
    "Molina",
    "Mwangi",
    "Nakamura",
    "Nasser",
    "Ndlovu",
    "Nilsson",
    "Novotny",
    "Nowak",
    "Obi",
    "Ortiz",
    "Osei",
    "Ozturk",
    "Pereira",
    "Popescu",
    "Quispe",
    "Rahman",
    "Ramos",
    "Reyes",
    "Rocha",
    "Romano",
    "Rosen",
    "Sahin",
    "Salazar",
    "Santos",
    "Shapiro",
    "Silva",
    "Sokolov",
    "Suzuki",
    "Szabo",
    "Takahashi",
    "Tran",
    "Vargas",
    "Vasquez",
    "Volkov",
    "Wagner",
    "Wang",
    "Watanabe",
    "Weber",
    "Wojcik",
    "Yamamoto",
    "Yeo",
    "Zhang",
    "Zhou",
    "Zielinski",
];
const STREETS: &[&str] = &[
    "Maple",
    "Cedar",
    "Willow",
    "Harbor",
    "Juniper",
    "Lakeview",
    "Sycamore",
    "Orchard",
    "Birch",
    "Meadow",
    "Riverside",
    "Hillcrest",
    "Chestnut",
    "Magnolia",
    "Aspen",
    "Linden",
];
const STREET_SUFFIXES: &[&str] = &["Street", "Avenue", "Road", "Lane", "Drive", "Court", "Way"];
const CITIES: &[&str] = &[
    "Riverton",
    "Fairview",
    "Lakewood",
    "Milford",
    "Ashland",
    "Brookfield",
    "Clayton",
    "Georgetown",
    "Kingsport",
    "Oakdale",
    "Westbury",
    "Greenville",
    "Salem",
    "Dayton",
];
const STATES_FULL: &[&str] = &["Oregon", "Ohio", "Vermont", "Nevada", "Kansas", "Maine"];
const STATES_ABBR: &[&str] = &["OR", "OH", "VT", "NV", "KS", "ME"];
const COUNTRIES: &[&str] = &["Norway", "Chile", "Kenya", "Portugal", "Vietnam", "Canada"];
const ORGS: &[&str] = &[
    "Riverside Medical Center",
    "Northgate Clinic",
    "Summit Health Partners",
    "Lakeshore Family Practice",
    "Bayview Community Hospital",
];
const EMAIL_DOMAINS: &[&str] = &["example.com", "example.org", "example.net"];

fn pick<'a, R: Rng + ?Sized>(list: &[&'a str], rng: &mut R) -> &'a str {
    list[rng.random_range(0..list.len())]
}

/// A surrogate for `original` labelled `label`. `shift_days` is the request's date offset
/// (dates are shifted rather than invented, so intervals between them are kept); `gender`
/// is the cue a given name keeps ([`super::gender`]).
pub(crate) fn generate<R: Rng + ?Sized>(
    label: Label,
    original: &str,
    shift_days: i64,
    gender: Gender,
    rng: &mut R,
) -> String {
    // Digits of another script (full-width `１２３４５６７`, Arabic-Indic) are read as the
    // ASCII digits they stand for: every generator below knows only those, and kept the
    // others as they were (a full-width MRN came back unchanged).
    let folded: String;
    let original = if original
        .chars()
        .any(|c| c.is_numeric() && !c.is_ascii_digit())
    {
        folded = original
            .nfkc()
            .map(|c| {
                c.to_digit(10)
                    .or_else(|| decimal_value(c))
                    .map_or(c, digit_char)
            })
            .collect();
        folded.as_str()
    } else {
        original
    };
    let initial = original.trim_end_matches('.').chars().count() <= 1;
    match label {
        // An initial (`K.`, `J`) stays an initial, with its stop.
        Label::FirstName | Label::LastName if initial => {
            let letter = any_first_name(rng).chars().next().unwrap_or('A');
            if original.ends_with('.') {
                format!("{letter}.")
            } else {
                letter.to_string()
            }
        }
        Label::FirstName => first_name(gender, rng).to_owned(),
        Label::LastName => family_name(rng).to_owned(),
        Label::MiddleName => {
            if original.trim_end_matches('.').chars().count() <= 1 {
                let initial = any_first_name(rng).chars().next().unwrap_or('A');
                if original.ends_with('.') {
                    format!("{initial}.")
                } else {
                    initial.to_string()
                }
            } else {
                any_first_name(rng).to_owned()
            }
        }
        Label::Person => person(original, gender, rng),
        // A date moves; a weekday or a year alone moves with it; what is none of these (a
        // holiday, a date in words, `Sunday the 7th`) is masked.
        Label::Date | Label::DateOfBirth => DateParts::parse(original)
            .and_then(|d| d.shifted(shift_days, false))
            .or_else(|| dates::shifted_weekday(original, shift_days))
            .or_else(|| dates::shifted_bare_year(original, shift_days))
            // Letters and digits for letters and digits gave impossible dates (`Thu 6/83`)
            // and words of random letters.
            .unwrap_or_else(|| format!("[{}]", label.wire())),
        Label::Email => {
            let first = any_first_name(rng).to_ascii_lowercase();
            let last = family_name(rng).to_ascii_lowercase().replace('\'', "");
            format!("{first}.{last}@{}", pick(EMAIL_DOMAINS, rng))
        }
        Label::Url => format!(
            "https://www.{}/{}",
            pick(EMAIL_DOMAINS, rng),
            shape("abc123", rng)
        ),
        Label::IpAddress => {
            if original.contains(':') {
                format!(
                    "2001:db8::{:x}:{:x}",
                    rng.random::<u16>(),
                    rng.random::<u16>()
                )
            } else {
                let net = pick(&["192.0.2", "198.51.100", "203.0.113"], rng);
                format!("{net}.{}", rng.random_range(1..=254))
            }
        }
        Label::Ssn => {
            let s = shape(original, rng);
            // Area 9xx is never issued: a surrogate SSN can never be a real one.
            replace_first_digit(&s, '9')
        }
        Label::Phone | Label::Fax => phone(original, rng),
        Label::Zipcode => format!("{:05}", rng.random_range(10_000..=99_999)),
        Label::StreetAddress => street(original, rng),
        Label::City | Label::Location => pick(CITIES, rng).to_owned(),
        Label::State => {
            if original.trim().chars().count() == 2 {
                pick(STATES_ABBR, rng).to_owned()
            } else {
                pick(STATES_FULL, rng).to_owned()
            }
        }
        Label::Country => pick(COUNTRIES, rng).to_owned(),
        Label::Organization => pick(ORGS, rng).to_owned(),
        Label::Age => age(original, rng),
        Label::MedicalRecordNumber | Label::HealthPlanNumber | Label::IdNum
            if nhs_check_digit(&digits_of(original)).is_some() =>
        {
            nhs_number(original, rng)
        }
        Label::Time
        | Label::MedicalRecordNumber
        | Label::HealthPlanNumber
        | Label::AccountNumber
        | Label::LicenseNumber
        | Label::VehicleId
        | Label::DeviceId
        | Label::IdNum
        | Label::CreditCard
        | Label::Username
        | Label::Password
        | Label::Other => shape(original, rng),
    }
}

fn digit_char(d: u32) -> char {
    char::from_digit(d, 10).unwrap_or('0')
}

/// Same character classes: digit → random digit, letter → random letter of the same
/// case, everything else kept.
pub(crate) fn shape<R: Rng + ?Sized>(original: &str, rng: &mut R) -> String {
    original
        .chars()
        .map(|c| {
            if c.is_numeric() {
                char::from(b'0' + rng.random_range(0..10u8))
            } else if c.is_ascii_uppercase() {
                char::from(b'A' + rng.random_range(0..26u8))
            } else if c.is_ascii_lowercase() {
                char::from(b'a' + rng.random_range(0..26u8))
            } else if c.is_alphabetic() {
                if c.is_uppercase() {
                    char::from(b'A' + rng.random_range(0..26u8))
                } else {
                    char::from(b'a' + rng.random_range(0..26u8))
                }
            } else {
                c
            }
        })
        .collect()
}

fn digits_of(s: &str) -> Vec<u8> {
    s.bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect()
}

/// The NHS number's check digit of ten `digits` when they are a valid NHS number (modulus
/// 11 over the first nine, weights 10 down to 2; a check of 10 is never issued). Only for
/// an original written as ten digits in one group or as 3-3-4.
fn nhs_check_digit(digits: &[u8]) -> Option<u8> {
    if digits.len() != 10 {
        return None;
    }
    let check = nhs_check(&digits[..9])?;
    (check == digits[9]).then_some(check)
}

/// The check digit the first nine digits of an NHS number call for; `None` for 10.
fn nhs_check(nine: &[u8]) -> Option<u8> {
    let sum: u32 = nine
        .iter()
        .zip((2..=10u32).rev())
        .map(|(&d, w)| u32::from(d) * w)
        .sum();
    match 11 - sum % 11 {
        11 => Some(0),
        10 => None,
        c => Some(c as u8),
    }
}

/// A surrogate NHS number in the original's layout: `999` (the range NHS England keeps
/// for test data, never issued to a patient) and six random digits, with a valid check
/// digit, so a system that validates NHS numbers accepts it and it cannot be anyone's.
fn nhs_number<R: Rng + ?Sized>(original: &str, rng: &mut R) -> String {
    let digits = loop {
        let mut d = vec![9u8, 9, 9];
        d.extend((0..6).map(|_| rng.random_range(0..10u8)));
        if let Some(check) = nhs_check(&d) {
            d.push(check);
            break d;
        }
    };
    let mut next = digits.into_iter();
    original
        .chars()
        .map(|c| {
            if c.is_ascii_digit() {
                char::from(b'0' + next.next().unwrap_or(0))
            } else {
                c
            }
        })
        .collect()
}

fn replace_first_digit(s: &str, with: char) -> String {
    let mut done = false;
    s.chars()
        .map(|c| {
            if !done && c.is_ascii_digit() {
                done = true;
                with
            } else {
                c
            }
        })
        .collect()
}

/// A name with as many parts as the source (one part → a last name, `Last, First` kept).
fn person<R: Rng + ?Sized>(original: &str, gender: Gender, rng: &mut R) -> String {
    let parts: Vec<&str> = original.split_whitespace().collect();
    if original.contains(',') {
        return format!("{}, {}", family_name(rng), first_name(gender, rng));
    }
    match parts.len() {
        0 | 1 => family_name(rng).to_owned(),
        n => {
            let mut out = vec![first_name(gender, rng).to_owned()];
            for p in &parts[1..n - 1] {
                let initial = any_first_name(rng).chars().next().unwrap_or('A');
                out.push(if p.trim_end_matches('.').chars().count() <= 1 {
                    format!("{initial}.")
                } else {
                    any_first_name(rng).to_owned()
                });
            }
            out.push(family_name(rng).to_owned());
            out.join(" ")
        }
    }
}

/// Same digit shape; a leading `+` country code is kept so the number stays plausible.
/// A phone or fax surrogate in the original's layout. Numbers of the two plans the notes use
/// come from ranges reserved for fiction, so a surrogate never rings a real line:
/// - North American (10 digits, or 11 with the leading 1): `NXX-555-01XX`, the block the
///   North American Numbering Plan Administrator keeps for fictional use;
/// - UK (`+44…` or 11 digits from `0`): Ofcom's drama ranges, `07700 900XXX` for mobiles and
///   `020 7946 0XXX` otherwise.
///
/// Any other plan keeps the shape with random digits (a `+` country prefix kept).
fn phone<R: Rng + ?Sized>(original: &str, rng: &mut R) -> String {
    if let Some(digits) = fictional_phone(original, rng) {
        return fill_digits(original, &digits);
    }
    let keep = if original.starts_with('+') {
        original
            .char_indices()
            .skip(1)
            .find(|(_, c)| !c.is_ascii_digit())
            .map_or(original.len(), |(i, _)| i)
    } else {
        0
    };
    let (head, tail) = original.split_at(keep);
    let mut body = shape(tail, rng);
    // NANP area and exchange codes never start with 0 or 1.
    if keep == 0 {
        body = replace_first_digit(&body, char::from(b'2' + rng.random_range(0..8u8)));
    }
    format!("{head}{body}")
}

/// The digits of a fictional number of the original's plan, as many as it has; `None` for
/// a plan without a fictional range here.
fn fictional_phone<R: Rng + ?Sized>(original: &str, rng: &mut R) -> Option<Vec<u8>> {
    let digits: Vec<u8> = original
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    // NANP area codes never start with 0 or 1.
    let area_first = 2 + rng.random_range(0..8u8);
    let mut random = |n: usize| -> Vec<u8> { (0..n).map(|_| rng.random_range(0..10u8)).collect() };
    let uk_mobile = |national: &[u8]| national.first() == Some(&7);
    let out = if original.trim_start().starts_with("+44") && digits.len() == 12 {
        let mut d = vec![4, 4];
        d.extend(if uk_mobile(&digits[2..]) {
            vec![7, 7, 0, 0, 9, 0, 0]
        } else {
            vec![2, 0, 7, 9, 4, 6, 0]
        });
        d.extend(random(3));
        d
    } else if original.trim_start().starts_with('+') {
        return None;
    } else if digits.len() == 11 && digits[0] == 0 {
        let mut d = if uk_mobile(&digits[1..]) {
            vec![0, 7, 7, 0, 0, 9, 0, 0]
        } else {
            vec![0, 2, 0, 7, 9, 4, 6, 0]
        };
        d.extend(random(3));
        d
    } else if digits.len() == 10 || (digits.len() == 11 && digits[0] == 1) {
        let mut d = if digits.len() == 11 {
            vec![1]
        } else {
            Vec::new()
        };
        d.push(area_first);
        d.extend(random(2));
        d.extend([5, 5, 5, 0, 1]);
        d.extend(random(2));
        d
    } else {
        return None;
    };
    Some(out)
}

/// `original` with its digits replaced, in order, by `digits` (as many as it has).
fn fill_digits(original: &str, digits: &[u8]) -> String {
    let mut next = digits.iter();
    original
        .chars()
        .map(
            |c| match c.is_ascii_digit().then(|| next.next()).flatten() {
                Some(d) => char::from(b'0' + d),
                None => c,
            },
        )
        .collect()
}

/// A street address in the original's layout: each line, and each comma-separated part of
/// a line, is replaced by its own kind (house and street, unit, city, state, postcode), so
/// `12 Elm St\nSpringfield, IL 62704` stays three parts on two lines.
fn street<R: Rng + ?Sized>(original: &str, rng: &mut R) -> String {
    // Military mail (`PSC 1234, Box 5678, APO AE 09012`): the post office and its region
    // code stay, as a state would; every number is drawn anew.
    let words: Vec<String> = original
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(str::to_ascii_uppercase)
        .collect();
    if words
        .iter()
        .any(|w| matches!(w.as_str(), "APO" | "FPO" | "DPO"))
        && words.iter().any(|w| w == "BOX")
    {
        return original
            .chars()
            .map(|c| {
                if c.is_ascii_digit() {
                    char::from(b'0' + rng.random_range(0..10u8))
                } else {
                    c
                }
            })
            .collect();
    }
    let mut first = true;
    original
        .split_inclusive('\n')
        .map(|line| {
            let body = line.trim_end_matches(['\n', '\r']);
            let end = &line[body.len()..];
            let parts: Vec<String> = body
                .split(',')
                .map(|part| {
                    let lead = &part[..part.len() - part.trim_start().len()];
                    let tail = &part[part.trim_end().len()..];
                    let core = part.trim();
                    let out = if core.is_empty() {
                        String::new()
                    } else if first {
                        first = false;
                        street_line(core, rng)
                    } else {
                        address_part(core, rng)
                    };
                    format!("{lead}{out}{tail}")
                })
                .collect();
            format!("{}{end}", parts.join(","))
        })
        .collect()
}

/// The first part of an address: house number and street, or a PO box.
fn street_line<R: Rng + ?Sized>(original: &str, rng: &mut R) -> String {
    let lower = original.to_ascii_lowercase();
    let house_digits = original
        .chars()
        .take_while(char::is_ascii_digit)
        .count()
        .clamp(1, 5);
    if lower.contains("box") {
        return format!("PO Box {}", rng.random_range(100..=9999));
    }
    let max = 10u32.pow(u32::try_from(house_digits).unwrap_or(3));
    let number = rng.random_range(max / 10..max).max(1);
    let mut out = format!(
        "{number} {} {}",
        pick(STREETS, rng),
        pick(STREET_SUFFIXES, rng)
    );
    // Whole words: `Aste St` or `Chestnut Road` holds no unit.
    if lower.contains('#')
        || lower
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| ["apt", "unit", "suite", "ste"].contains(&w))
    {
        out.push_str(&format!(" Apt {}", rng.random_range(1..=40)));
    }
    out
}

/// A later part of an address: a unit, a city, a state (and postcode), or a postcode.
fn address_part<R: Rng + ?Sized>(original: &str, rng: &mut R) -> String {
    let lower = original.to_ascii_lowercase();
    let first_word = lower.split_whitespace().next().unwrap_or("");
    if ["apt", "apt.", "unit", "suite", "ste", "flat", "#", "room"].contains(&first_word)
        || first_word.starts_with('#')
    {
        let word = original.split_whitespace().next().unwrap_or("Apt");
        let word = if word.starts_with('#') { "#" } else { word };
        let sep = if word == "#" { "" } else { " " };
        return format!("{word}{sep}{}", rng.random_range(1..=40));
    }
    let words: Vec<&str> = original.split_whitespace().collect();
    let has_digit = original.chars().any(|c| c.is_ascii_digit());
    match words.as_slice() {
        // `IL 62704`, `OR`: a state abbreviation, then a postcode shaped like the original.
        [state, rest @ ..] if state.len() == 2 && state.chars().all(|c| c.is_ascii_uppercase()) => {
            let mut out = pick(STATES_ABBR, rng).to_owned();
            for w in rest {
                out.push(' ');
                out.push_str(&shape(w, rng));
            }
            out
        }
        // A postcode alone (`62704`, `SW1A 1AA`, `K1A 0B1`).
        _ if has_digit => shape(original, rng),
        _ => pick(CITIES, rng).to_owned(),
    }
}

/// The first number in an age expression.
pub(crate) fn age_value(original: &str) -> Option<u32> {
    let digits: String = original
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `92-year-old` → `90+-year-old`, `95` → `90+`; `None` for ages of 89 and under.
pub(crate) fn cap_age(original: &str) -> Option<String> {
    let v = age_value(original)?;
    if v <= 89 {
        return None;
    }
    Some(replace_number(original, "90+"))
}

/// Another age in the same phrase: within three years of the original, never over 89 and
/// never under 1 unless the original was 0, so a child stays a child and an adult an adult
/// (ages drawn from 18–89 turned a 3-year-old girl into a 69-year-old). An age over 89 is
/// 90, the floor of the one group Safe Harbor lets stand (a surrogate drawn near it told
/// the real age: 93 gave 94–98). An age in words becomes one in digits (letters for
/// letters, `ninety-four` gave `tzigmv-cjok`).
fn age<R: Rng + ?Sized>(original: &str, rng: &mut R) -> String {
    match age_value(original) {
        Some(v) if v > 89 => replace_number(original, "90"),
        Some(v) => replace_number(original, &near_age(v, rng).to_string()),
        None => {
            let lower = original.to_lowercase();
            if lower.contains("ninety") || lower.contains("hundred") {
                "90".to_owned()
            } else {
                match words_value(&lower) {
                    Some(v) => near_age(v, rng).to_string(),
                    None => rng.random_range(18..=89).to_string(),
                }
            }
        }
    }
}

/// The number an age in words says (`forty-two`, `six`), below ninety.
fn words_value(lower: &str) -> Option<u32> {
    const UNITS: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 8] = [
        "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    let mut total = None;
    for w in lower
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
    {
        if let Some(t) = TENS.iter().position(|t| *t == w) {
            total = Some(total.unwrap_or(0) + 20 + 10 * t as u32);
        } else if let Some(u) = UNITS.iter().position(|u| *u == w) {
            total = Some(total.unwrap_or(0) + u as u32);
        } else if !matches!(w, "and" | "year" | "years" | "old" | "yo") {
            return None;
        }
    }
    total
}

/// A number within three of `v` (1–89, or 0 for 0), other than `v` where there is one.
fn near_age<R: Rng + ?Sized>(v: u32, rng: &mut R) -> u32 {
    let lo = if v == 0 {
        0
    } else {
        v.saturating_sub(3).max(1)
    };
    let hi = (v + 3).min(89).max(lo);
    let others: Vec<u32> = (lo..=hi).filter(|&a| a != v).collect();
    if others.is_empty() {
        v
    } else {
        others[rng.random_range(0..others.len())]
    }
}

fn replace_number(original: &str, with: &str) -> String {
    let start = original.find(|c: char| c.is_ascii_digit()).unwrap_or(0);
    let end = original[start..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(original.len(), |e| start + e);
    format!("{}{with}{}", &original[..start], &original[end..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn classes(s: &str) -> String {
        s.chars()
            .map(|c| match c {
                '0'..='9' => 'd',
                'a'..='z' => 'l',
                'A'..='Z' => 'U',
                o => o,
            })
            .collect()
    }

    macro_rules! shape_rows {
        ($($name:ident: $label:ident, $src:expr;)*) => {$(
            #[test]
            fn $name() {
                let mut rng = StdRng::seed_from_u64(7);
                let out = generate(Label::$label, $src, 10, Gender::Unknown, &mut rng);
                assert_eq!(classes(&out), classes($src), "{out}");
            }
        )*};
    }

    shape_rows! {
        mrn_shape: MedicalRecordNumber, "AB-123456";
        plan_shape: HealthPlanNumber, "1EG4-TE5-MK73";
        phone_shape: Phone, "(555) 123-4567";
        fax_shape: Fax, "+44 20 7946 0958";
        ssn_shape: Ssn, "123-45-6789";
        card_shape: CreditCard, "4111 1111 1111 1111";
        date_shape: Date, "01/02/1980";
    }

    #[test]
    fn a_given_name_keeps_its_gender_cue() {
        let mut rng = StdRng::seed_from_u64(5);
        for _ in 0..50 {
            let f = generate(Label::FirstName, "Ana", 0, Gender::Female, &mut rng);
            assert!(female_names().contains(&f.as_str()), "{f}");
            let m = generate(Label::Person, "Omar Haddad", 0, Gender::Male, &mut rng);
            let first = m.split_whitespace().next().unwrap_or("");
            assert!(male_names().contains(&first), "{m}");
        }
    }

    #[test]
    fn the_gendered_pools_agree_with_the_gender_lists() {
        for n in FEMALE_FIRST {
            assert!(!MALE_FIRST.contains(n), "{n}");
            assert_eq!(super::super::gender::of_name(n), Gender::Female, "{n}");
        }
        for n in MALE_FIRST {
            assert_eq!(super::super::gender::of_name(n), Gender::Male, "{n}");
        }
    }

    #[test]
    fn military_mail_keeps_its_post_office_and_redraws_the_numbers() {
        let mut rng = StdRng::seed_from_u64(2);
        let original = "PSC 1234, Box 5678, APO AE 09012";
        let out = generate(Label::StreetAddress, original, 0, Gender::Unknown, &mut rng);
        let layout = |s: &str| {
            s.chars()
                .map(|c| if c.is_ascii_digit() { '9' } else { c })
                .collect::<String>()
        };
        assert_eq!(layout(&out), layout(original));
        assert_ne!(out, original);
    }

    #[test]
    fn an_initial_stays_an_initial() {
        let mut rng = StdRng::seed_from_u64(3);
        for (label, original) in [
            (Label::LastName, "K."),
            (Label::FirstName, "J"),
            (Label::LastName, "R"),
        ] {
            let out = generate(label, original, 0, Gender::Unknown, &mut rng);
            assert_eq!(out.ends_with('.'), original.ends_with('.'), "{out}");
            assert_eq!(out.trim_end_matches('.').chars().count(), 1, "{out}");
        }
    }

    #[test]
    fn reserved_ranges() {
        let mut rng = StdRng::seed_from_u64(1);
        assert!(
            generate(Label::Email, "a@b.org", 0, Gender::Unknown, &mut rng).contains("@example.")
        );
        assert!(generate(Label::Ssn, "123-45-6789", 0, Gender::Unknown, &mut rng).starts_with('9'));
        // 943 476 5919 is a valid NHS number (the published example): the surrogate keeps
        // the layout, starts 999 and has a valid check digit.
        let nhs = generate(
            Label::MedicalRecordNumber,
            "943 476 5919",
            0,
            Gender::Unknown,
            &mut rng,
        );
        assert!(nhs.starts_with("999 ") && nhs.len() == 12, "{nhs}");
        assert!(nhs_check_digit(&digits_of(&nhs)).is_some(), "{nhs}");
        // An invalid one is only reshaped.
        let other = generate(
            Label::MedicalRecordNumber,
            "943 476 5918",
            0,
            Gender::Unknown,
            &mut rng,
        );
        assert_eq!(other.len(), 12);
        let ip = generate(Label::IpAddress, "10.0.0.1", 0, Gender::Unknown, &mut rng);
        assert!(
            ip.starts_with("192.0.2.")
                || ip.starts_with("198.51.100.")
                || ip.starts_with("203.0.113.")
        );
        assert!(
            generate(Label::IpAddress, "fe80::1", 0, Gender::Unknown, &mut rng)
                .starts_with("2001:db8::")
        );
        assert_eq!(
            generate(Label::Zipcode, "02115-6110", 0, Gender::Unknown, &mut rng).len(),
            5
        );
    }

    #[test]
    fn ages_stay_on_their_side_of_89() {
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..50 {
            let old = age_value(&generate(
                Label::Age,
                "92-year-old",
                0,
                Gender::Unknown,
                &mut rng,
            ));
            // 90, the floor of the group: a draw near the real age told it.
            assert_eq!(old, Some(90));
        }
        for words in ["ninety-four", "one hundred and two"] {
            assert_eq!(
                generate(Label::Age, words, 0, Gender::Unknown, &mut rng),
                "90"
            );
        }
        let young = generate(Label::Age, "forty-two", 0, Gender::Unknown, &mut rng);
        assert!(
            age_value(&young).is_some_and(|v| (39..=45).contains(&v) && v != 42),
            "{young}"
        );
        assert_eq!(cap_age("92-year-old").as_deref(), Some("90+-year-old"));
        assert_eq!(cap_age("95").as_deref(), Some("90+"));
        assert_eq!(cap_age("45"), None);
    }

    #[test]
    fn a_weekday_or_a_year_alone_moves_with_the_dates_and_a_holiday_is_no_letters() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut date =
            |original: &str, days| generate(Label::Date, original, days, Gender::Unknown, &mut rng);
        assert_eq!(date("Thursday", 3), "Sunday");
        assert_eq!(date("THU", -4), "SUN");
        assert_eq!(date("1925", -200), "1924");
        assert_eq!(date("1925", 100), "1925");
        assert_eq!(date("Christmas", 10), "[date]");
        // Neither letters for letters nor a two-digit year read as a day (`Jan '29`).
        assert_eq!(date("Sunday the 7th", 10), "[date]");
        assert_eq!(date("Jan '19", 10), "[date]");
    }

    #[test]
    fn dates_are_shifted_in_format() {
        let mut rng = StdRng::seed_from_u64(3);
        assert_eq!(
            generate(Label::Date, "Jan 2, 1980", 10, Gender::Unknown, &mut rng),
            "Jan 12, 1980"
        );
    }

    /// A number in full-width or Arabic-Indic digits gets a surrogate like any other
    /// (it came back unchanged under `replace`).
    #[test]
    fn digits_of_other_scripts_are_replaced() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for original in ["１２３４５６７", "٠١٢٣٤٥٦٧", "(６１７) ５５５-０１４２"]
        {
            for label in [Label::MedicalRecordNumber, Label::Phone, Label::IdNum] {
                let out = generate(label, original, 0, Gender::Unknown, &mut rng);
                assert!(
                    out.chars().all(|c| !c.is_numeric() || c.is_ascii_digit()),
                    "{out}"
                );
                assert!(out.chars().any(|c| c.is_ascii_digit()), "{label:?}: {out}");
            }
        }
        assert_eq!(decimal_value('٣'), Some(3));
        assert_eq!(decimal_value('३'), Some(3));
        assert_eq!(decimal_value('3'), None);
    }

    /// An age stays within three years, in its life stage: a 3-year-old is 1–6, a
    /// 62-year-old 59–65, an 88-year-old at most 89.
    #[test]
    fn an_age_stays_near_the_original() {
        let mut rng = StdRng::seed_from_u64(3);
        for (original, lo, hi) in [("3", 1, 6), ("62-year-old", 59, 65), ("88 yo", 85, 89)] {
            for _ in 0..50 {
                let out = generate(Label::Age, original, 0, Gender::Unknown, &mut rng);
                let v = age_value(&out).expect("an age");
                assert!(
                    (lo..=hi).contains(&v) && out != original,
                    "{original} -> {out}"
                );
            }
        }
    }
}
