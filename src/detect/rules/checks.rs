//! Validators that turn a regex candidate into a finding: checksums, ranges, issuance
//! rules.
//!
//! Patterns alone over-match (any nine digits look like an SSN, any 17 characters like a
//! VIN). A validator is what keeps doses, lab values and scores out: each one encodes a
//! rule the real identifier must satisfy (Luhn for cards and NPIs, the DEA and VIN check
//! digits, the SSA's never-issued SSN ranges, octets ≤ 255). Each returns the accepted
//! part of the candidate (usually all of it; URLs drop trailing punctuation) or `None`.

use std::net::Ipv6Addr;

use super::dates::{ascii_digits, is_decimal_digit, DateParts};

/// Digits of `s`, as numbers.
fn digits(s: &str) -> Vec<u32> {
    s.chars().filter_map(|c| c.to_digit(10)).collect()
}

/// The numbers written in `s` (runs of ASCII digits), as numbers.
fn numbers(s: &str) -> Vec<u32> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Luhn check over a digit sequence.
pub(crate) fn luhn(ds: &[u32]) -> bool {
    let mut sum = 0;
    for (i, d) in ds.iter().rev().enumerate() {
        let mut v = *d;
        if i % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    !ds.is_empty() && sum % 10 == 0
}

/// Accepts any candidate unchanged.
pub(crate) fn any(s: &str) -> Option<&str> {
    Some(s)
}

/// The value after an address's field label (`Adresse`, `पता`, `住所`), trimmed, when it
/// reads as an address: a house number in any script's digits and a word, no `@` (an
/// e-mail address is a contact, not a place) and at most [`ADDRESS_CHARS`] characters
/// (the regex leaves the length open: a bounded repetition of a Unicode class is that
/// many copies of it in the automaton, megabytes of it at run time). Without a number the
/// field more often holds something else (`adresse e-mail`, `domicilio`'s home visits)
/// than an address.
pub(crate) fn address_value(s: &str) -> Option<&str> {
    let v = s.trim_end_matches(|c: char| {
        c.is_whitespace() || matches!(c, ',' | '،' | '\u{2066}'..='\u{2069}')
    });
    let numbered = v.chars().any(is_decimal_digit);
    let worded = v.chars().any(char::is_alphabetic);
    let short = v.chars().nth(ADDRESS_CHARS).is_none();
    (numbered && worded && short && !v.contains('@')).then_some(v)
}

/// The longest address value read after a field label, in characters: a street, a
/// district and a town (`123 ถนนสุขุมวิท แขวงคลองตัน เขตคลองเตย กรุงเทพฯ` is 46).
const ADDRESS_CHARS: usize = 120;

/// [`address_value`] after the English word `address` in a note of another script
/// (`address गली 12 लखनऊ`): the value must start with a number or a word of another
/// script and hold a letter outside the Latin script. A Latin address is the English
/// street rules' and the model's, with finer labels, and English prose uses the word as
/// a verb too (`change my address to …`).
pub(crate) fn address_value_other_script(s: &str) -> Option<&str> {
    let v = address_value(s)?;
    let first = v.split_whitespace().next()?;
    let opens = first.chars().all(is_decimal_digit) || !first.chars().any(is_latin);
    (opens && v.chars().any(|c| c.is_alphabetic() && !is_latin(c))).then_some(v)
}

/// [`address_value`] with a number as its first or second word (`44 कमल मार्ग`, `سڑک ٢٤
/// حیدرآباد`), after a label that is also an everyday word.
pub(crate) fn address_value_numbered_early(s: &str) -> Option<&str> {
    let v = address_value(s)?;
    v.split_whitespace()
        .take(2)
        .any(|w| w.chars().all(is_decimal_digit))
        .then_some(v)
}

/// True for a letter of the Latin script (ASCII, Latin-1, Latin Extended-A and -B, and
/// the Vietnamese block of Latin Extended Additional).
fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic()
        || ('\u{00C0}'..='\u{024F}').contains(&c)
        || ('\u{1E00}'..='\u{1EFF}').contains(&c)
}

/// A day of a month, 1 to 31, with or without its ordinal suffix (`1er`, `2nd`).
pub(crate) fn day_of_month(s: &str) -> Option<&str> {
    let digits = s.trim_end_matches(|c: char| !c.is_ascii_digit());
    digits
        .parse::<u32>()
        .is_ok_and(|d| (1..=31).contains(&d))
        .then_some(s)
}

/// A day and another language's month (`3 de mayo`, `4. Mai`, `5 marzo`): the day is one
/// (see [`day_of_month`]), and a month named only in Spanish or Portuguese has the `de`
/// those languages write before it, so `3 mayo packets` is no date.
pub(crate) fn day_and_other_month(s: &str) -> Option<&str> {
    day_of_month(s.split_whitespace().next()?)?;
    let mut words = s.split_whitespace().skip(1);
    let first = words.next()?;
    let month = words.last().unwrap_or(first);
    let de = first.eq_ignore_ascii_case("de") && month != first;
    (de || !super::dates::iberian_month_word(month)).then_some(s)
}

/// A match that does not end in the verb `may` (`from 2 to 3 may be given`): the month is
/// written `May` in English, and French writes `mai`.
pub(crate) fn not_the_verb_may(s: &str) -> bool {
    s.split_whitespace()
        .next_back()
        .is_none_or(|w| w.trim_end_matches('.') != "may")
}

/// The numbers of a date in another language (a month's name, `년 월 일`), which the parser
/// may not read:
/// one year from 1850 to 2150, and the other numbers days of a month (1–31), one of them a
/// month (1–12) when there are two.
pub(crate) fn day_month_year_numbers(s: &str) -> Option<&str> {
    day_month_year_in_era(s, 0)
}

/// [`day_month_year_numbers`] with the year counted `era` years later than the common era.
fn day_month_year_in_era(s: &str, era: u32) -> Option<&str> {
    let nums = numbers(s);
    let (years, rest): (Vec<u32>, Vec<u32>) = nums.iter().partition(|n| **n >= 1000);
    let ok = matches!(years.as_slice(), [y] if (1850 + era..=2150 + era).contains(y))
        && !rest.is_empty()
        && rest.iter().all(|n| (1..=31).contains(n))
        && (rest.len() < 2 || rest.iter().any(|n| *n <= 12));
    ok.then_some(s)
}

/// A month name and a year the parser cannot read (`marzo de 2020`): one number, a year
/// from 1850 to 2150.
pub(crate) fn year_alone(s: &str) -> Option<&str> {
    matches!(numbers(s).as_slice(), [y] if (1850..=2150).contains(y)).then_some(s)
}

/// The digit a spelled-out digit names (`oh` is zero).
fn spelled_digit(word: &str) -> Option<u32> {
    const WORDS: [&str; 10] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    if word.eq_ignore_ascii_case("oh") {
        return Some(0);
    }
    WORDS
        .iter()
        .position(|d| d.eq_ignore_ascii_case(word))
        .map(|d| d as u32)
}

/// A number read aloud digit by digit, as a phone number is (`five five five, one two three
/// four`): seven to fifteen digits, not counting up or down (`one two three four five six
/// seven`, a neurological exam's).
pub(crate) fn spelled_number(s: &str) -> Option<&str> {
    let ds: Vec<u32> = s
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .map(spelled_digit)
        .collect::<Option<_>>()?;
    let counting =
        ds.windows(2).all(|w| w[1] == w[0] + 1) || ds.windows(2).all(|w| w[0] == w[1] + 1);
    ((7..=15).contains(&ds.len()) && !counting).then_some(s)
}

/// A numeric date in native digits (`১৪/০১/২০২৬`): a valid calendar date with a plausible
/// year once its digits are read. ASCII dates are the other rules'.
pub(crate) fn native_date(s: &str) -> Option<&str> {
    // The parser reads the native digits itself.
    (ascii_digits(s).1.is_some() && date(s).is_some()).then_some(s)
}

/// A day, a word and a year (`१२ ऑक्टोबर १९७९`, `15 במרץ 2020`), the word in a script
/// after Latin, Greek, Cyrillic and Armenian (the rule's pattern sees to that: `12 patients
/// 2020` is no date): [`day_month_year_numbers`] once its digits are read.
///
/// A Thai date may count its year in the Buddhist era, 543 years ahead
/// (`15 มกราคม 2567` is 15 January 2024), so after a Thai word that year is read too.
pub(crate) fn native_day_word_year(s: &str) -> Option<&str> {
    /// The Thai block.
    const THAI: std::ops::RangeInclusive<char> = '\u{0E00}'..='\u{0E7F}';
    /// How many years the Buddhist era runs ahead of the common era.
    const BUDDHIST_ERA: u32 = 543;
    let ascii = ascii_digits(s).0;
    let thai = s.chars().any(|c| THAI.contains(&c));
    (day_month_year_numbers(&ascii).is_some()
        || (thai && day_month_year_in_era(&ascii, BUDDHIST_ERA).is_some()))
    .then_some(s)
}

/// A date in Ethiopic numerals (`፲፬/፭/፲፱፻፹፰`): a day (1–30, or the 13th month's 1–6) and a
/// month (1–13) in either order, and a year from 1800 to 2200 (the Ethiopian calendar runs
/// seven or eight years behind).
pub(crate) fn ethiopic_date(s: &str) -> Option<&str> {
    let parts: Option<Vec<u32>> = s.split('/').map(ethiopic_number).collect();
    let [a, b, year] = parts?[..] else {
        return None;
    };
    let day_month = |d: u32, m: u32| (1..=13).contains(&m) && (1..=30).contains(&d);
    ((day_month(a, b) || day_month(b, a)) && (1800..=2200).contains(&year)).then_some(s)
}

/// The value of a number in Ethiopic numerals: units `፩`–`፱`, tens `፲`–`፺`, `፻` a hundred
/// times what is before it (`፲፱፻፹፰` is 19 × 100 + 88). `None` for anything else, and for
/// `፼` (ten thousand), which no date needs.
fn ethiopic_number(s: &str) -> Option<u32> {
    let (mut total, mut group) = (0u32, 0u32);
    for c in s.chars() {
        match u32::from(c) {
            u @ 0x1369..=0x1371 => group += u - 0x1368,
            t @ 0x1372..=0x137A => group += (t - 0x1371) * 10,
            0x137B => {
                total += group.max(1) * 100;
                group = 0;
            }
            _ => return None,
        }
    }
    let n = total + group;
    (n > 0).then_some(n)
}

/// A French social security number (NIR, `1 51 04 69 123 456 42`) whose key holds: 97 less
/// the first thirteen digits modulo 97, Corsica's departments `2A` and `2B` read as 19 and
/// 18.
pub(crate) fn nir(s: &str) -> Option<&str> {
    let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.len() != 15 || !compact.is_ascii() {
        return None;
    }
    let department = match &compact[5..7] {
        "2A" => "19",
        "2B" => "18",
        d => d,
    };
    let body: u64 = format!("{}{department}{}", &compact[..5], &compact[7..13])
        .parse()
        .ok()?;
    let key: u64 = compact[13..].parse().ok()?;
    (key == 97 - body % 97).then_some(s)
}

/// A Russian SNILS whose check number holds: the first nine digits weighted 9 down to 1 and
/// summed, taken modulo 101, with 100 written `00`.
pub(crate) fn snils(s: &str) -> Option<&str> {
    let ds = digits(s);
    let [body @ .., c1, c2] = ds.as_slice() else {
        return None;
    };
    if body.len() != 9 {
        return None;
    }
    let sum: u32 = body.iter().zip((1..=9).rev()).map(|(d, w)| d * w).sum();
    let check = match sum % 101 {
        100 => 0,
        c => c,
    };
    (check == c1 * 10 + c2).then_some(s)
}

/// ICAO 9303's check digit of `field`: each character's value (digits as themselves, `A`–`Z`
/// 10–35, the filler `<` 0) weighted 7, 3, 1 in turn, summed, modulo 10.
fn mrz_check_digit(field: &str) -> Option<u32> {
    let mut sum = 0;
    for (c, w) in field.chars().zip([7, 3, 1].into_iter().cycle()) {
        let v = match c {
            '<' => 0,
            c => c.to_digit(36)?,
        };
        sum += v * w;
    }
    Some(sum % 10)
}

/// A machine-readable zone whose document number's check digit holds (line 1, characters
/// 6–14 of an identity card's three lines; line 2, characters 1–9 of two), with its filler.
pub(crate) fn mrz(s: &str) -> Option<&str> {
    let lines: Vec<&str> = s.lines().map(|l| l.trim_end_matches('\r')).collect();
    let (line, at) = match lines.as_slice() {
        [first, _, _] => (*first, 5),
        [_, second] => (*second, 0),
        _ => return None,
    };
    let number = line.get(at..at + 9)?;
    let check = line.get(at + 9..at + 10)?.chars().next()?.to_digit(10)?;
    let ok = s.contains("<<") && mrz_check_digit(number) == Some(check);
    ok.then_some(s)
}

/// A valid calendar date with a plausible year (1850–2150).
pub(crate) fn date(s: &str) -> Option<&str> {
    let parts = DateParts::parse(s)?;
    match parts.year {
        Some(y) if (1850..=2150).contains(&y) => Some(s),
        _ => None,
    }
}

/// A date with a day and a month that may lack its year (`5 mars`, `2 avril`): a rule
/// whose pattern names the month in full.
pub(crate) fn day_month(s: &str) -> Option<&str> {
    let parts = DateParts::parse(s)?;
    (parts.day.is_some() && parts.year.is_none_or(|y| (1850..=2150).contains(&y))).then_some(s)
}

/// An SSN the SSA could have issued: area not 000, 666 or 9xx; group not 00; serial not
/// 0000.
pub(crate) fn ssn(s: &str) -> Option<&str> {
    let ds = digits(s);
    if ds.len() != 9 {
        return None;
    }
    let area = ds[0] * 100 + ds[1] * 10 + ds[2];
    let group = ds[3] * 10 + ds[4];
    let serial = ds[5..].iter().fold(0, |a, d| a * 10 + d);
    let ok = area != 0 && area != 666 && area < 900 && group != 0 && serial != 0;
    ok.then_some(s)
}

/// Dotted quad with every octet ≤ 255.
pub(crate) fn ipv4(s: &str) -> Option<&str> {
    let ok = s.split('.').count() == 4
        && s.split('.')
            .all(|o| !o.is_empty() && o.len() <= 3 && o.parse::<u32>().is_ok_and(|v| v <= 255));
    ok.then_some(s)
}

/// An IPv4 address, with a port (`172.16.5.96:8443`) when one is written.
pub(crate) fn ipv4_port(s: &str) -> Option<&str> {
    let (host, port) = s.split_once(':').unwrap_or((s, "0"));
    (ipv4(host).is_some() && port.parse::<u16>().is_ok()).then_some(s)
}

/// A holiday, not an eponym (`Christmas disease`, `Christmas factor`).
pub(crate) fn holiday(s: &str) -> Option<&str> {
    (!s.ends_with("disease") && !s.ends_with("factor")).then_some(s)
}

/// `M/D` (the part before any space or `@`) with a month (1 to 12) and a day (1 to 31).
pub(crate) fn month_day(s: &str) -> bool {
    let md = s
        .split(|c: char| c.is_whitespace() || c == '@')
        .next()
        .unwrap_or("");
    let mut parts = md.split('/').map(|p| p.parse::<u32>().ok());
    matches!(
        (parts.next(), parts.next()),
        (Some(Some(m)), Some(Some(d))) if (1..=12).contains(&m) && (1..=31).contains(&d)
    )
}

/// A cue word, a month and a day (1–12 / 1–31), and no unit or dose after it (`on 1/2
/// NS`, `3/4 strength`, `1/2 tab`): see the `date_md_cue` pattern.
pub(crate) fn cued_month_day(s: &str) -> bool {
    let mut words = s
        .split_whitespace()
        .skip_while(|w| !w.contains('/') || w.starts_with("f/"));
    let Some(md) = words.next() else {
        return false;
    };
    let md = md.trim_end_matches(|c: char| !c.is_ascii_digit());
    let after = words
        .next()
        .unwrap_or("")
        .trim_end_matches(|c: char| c.is_ascii_punctuation() && c != '%')
        .to_ascii_lowercase();
    const UNITS: &[&str] = &[
        "ns", "tab", "tabs", "tablet", "tablets", "strength", "dose", "doses", "of", "cup", "cups",
        "mg", "ml", "cc", "units", "unit", "inch", "cm", "mm", "times", "x", "pts", "points",
        "score", "normal", "ratio", "%", "liter", "liters", "l", "pill", "pills", "capsule",
        "capsules", "teaspoon", "tsp", "tbsp", "oz", "lb", "lbs", "kg", "day", "days", "week",
        "weeks", "month", "months", "hours", "hrs",
    ];
    // A whole date (`02/30/2020`) is the date rules' to take or refuse; the day must be
    // one of its month's (any year's: `2/29`).
    let mut parts = md.split('/').map(|p| p.parse::<u32>().ok());
    let fits = match (parts.next(), parts.next(), parts.next()) {
        (Some(Some(m)), Some(Some(d)), None) => crate::detect::rules::dates::days_in_month(2000, m)
            .is_some_and(|n| (1..=n).contains(&d)),
        _ => false,
    };
    fits && !UNITS.contains(&after.as_str())
}

/// `Mon-DD` with a day of a month (1 to 31).
pub(crate) fn day_after_dash(s: &str) -> bool {
    s.rsplit('-')
        .next()
        .and_then(|d| d.parse::<u32>().ok())
        .is_some_and(|d| (1..=31).contains(&d))
}

/// A parseable IPv6 address with at least two hex digits (so `::` and clock times fail).
pub(crate) fn ipv6(s: &str) -> Option<&str> {
    let hex = s.chars().filter(|c| c.is_ascii_hexdigit()).count();
    let colons = s.chars().filter(|c| *c == ':').count();
    (colons >= 2 && hex >= 2 && s.parse::<Ipv6Addr>().is_ok()).then_some(s)
}

/// A payment card number: 13–19 digits, a known issuer prefix, Luhn-valid.
pub(crate) fn credit_card(s: &str) -> Option<&str> {
    let ds = digits(s);
    let ok = (13..=19).contains(&ds.len()) && matches!(ds[0], 2..=6) && luhn(&ds);
    ok.then_some(s)
}

/// NPI: 10 digits, Luhn-valid with the `80840` prefix the standard prescribes.
pub(crate) fn npi(s: &str) -> Option<&str> {
    let ds = digits(s);
    if ds.len() != 10 {
        return None;
    }
    let mut full = vec![8, 0, 8, 4, 0];
    full.extend_from_slice(&ds);
    luhn(&full).then_some(s)
}

/// DEA registration number: a registrant-type letter, a letter, seven digits, and the
/// check digit `(d1+d3+d5 + 2*(d2+d4+d6)) mod 10 == d7`.
pub(crate) fn dea(s: &str) -> Option<&str> {
    let mut chars = s.chars();
    let first = chars.next()?.to_ascii_uppercase();
    if !"ABCDEFGHJKLMPRSTUX".contains(first) {
        return None;
    }
    let ds = digits(s);
    if ds.len() != 7 {
        return None;
    }
    let check = (ds[0] + ds[2] + ds[4] + 2 * (ds[1] + ds[3] + ds[5])) % 10;
    (check == ds[6]).then_some(s)
}

/// VIN: 17 characters without I, O, Q, letters and digits both present, and the
/// position-9 check digit of the North American standard.
pub(crate) fn vin(s: &str) -> Option<&str> {
    let up: Vec<char> = s.chars().map(|c| c.to_ascii_uppercase()).collect();
    if up.len() != 17 || up.iter().any(|c| matches!(c, 'I' | 'O' | 'Q')) {
        return None;
    }
    if !up.iter().any(char::is_ascii_digit) || !up.iter().any(char::is_ascii_alphabetic) {
        return None;
    }
    const WEIGHTS: [u32; 17] = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2];
    let value = |c: char| -> Option<u32> {
        if let Some(d) = c.to_digit(10) {
            return Some(d);
        }
        Some(match c {
            'A' | 'J' => 1,
            'B' | 'K' | 'S' => 2,
            'C' | 'L' | 'T' => 3,
            'D' | 'M' | 'U' => 4,
            'E' | 'N' | 'V' => 5,
            'F' | 'W' => 6,
            'G' | 'P' | 'X' => 7,
            'H' | 'Y' => 8,
            'R' | 'Z' => 9,
            _ => return None,
        })
    };
    let mut sum = 0;
    for (c, w) in up.iter().zip(WEIGHTS) {
        sum += value(*c)? * w;
    }
    let check = match sum % 11 {
        10 => 'X',
        d => char::from_digit(d, 10)?,
    };
    (up[8] == check).then_some(s)
}

/// An identifier token found next to a context word: at least four digits and five
/// characters, not a bare year, not ending in a separator.
pub(crate) fn id_token(s: &str) -> Option<&str> {
    let ds = digits(s);
    let alnum = s.chars().filter(char::is_ascii_alphanumeric).count();
    let bare_year = s.len() == 4 && (s.starts_with("19") || s.starts_with("20"));
    let ok = ds.len() >= 4 && alnum >= 5 && !bare_year && !s.ends_with('-');
    ok.then_some(s)
}

/// A licence plate next to a context word: 2–8 alphanumerics with a digit.
pub(crate) fn plate(s: &str) -> Option<&str> {
    let alnum = s.chars().filter(char::is_ascii_alphanumeric).count();
    let ok = (2..=8).contains(&alnum) && s.chars().any(|c| c.is_ascii_digit());
    ok.then_some(s)
}

/// Bare digits next to a context word (SSN without dashes): a valid SSN.
pub(crate) fn bare_ssn(s: &str) -> Option<&str> {
    ssn(s)
}

/// International phone: 8–15 digits in total (E.164 allows at most 15).
pub(crate) fn intl_phone(s: &str) -> Option<&str> {
    let n = digits(s).len();
    (8..=15).contains(&n).then_some(s)
}

/// US state and territory postal abbreviations.
pub(crate) const STATES: [&str; 56] = [
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS",
    "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY",
    "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV",
    "WI", "WY", "DC", "PR", "GU", "VI", "AS", "MP",
];

/// `ST 12345`: the two letters must be a state abbreviation (the ZIP is the capture).
pub(crate) fn state_zip(s: &str) -> Option<&str> {
    let state = s.get(..2)?;
    STATES.contains(&state).then_some(s)
}

/// An age over 89 (Safe Harbor: ages 89 and under are not identifiers), at most 125.
pub(crate) fn age_over_89(s: &str) -> Option<&str> {
    let v: u32 = s.trim().parse().ok()?;
    (90..=125).contains(&v).then_some(s)
}

/// A decade of life from the nineties on (`90s`, `90's`, `100s`): [`age_over_89`] of its
/// number.
pub(crate) fn age_decade_over_89(s: &str) -> Option<&str> {
    age_over_89(s.trim_end_matches('s').trim_end_matches(['\'', '’'])).map(|_| s)
}

/// A URL without the sentence punctuation that often follows it.
pub(crate) fn url(s: &str) -> Option<&str> {
    let trimmed = s.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '\'', '"']);
    (trimmed.len() > 4).then_some(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_accept_known_good_values() {
        assert!(credit_card("4111 1111 1111 1111").is_some());
        assert!(credit_card("4111 1111 1111 1112").is_none());
        assert!(npi("1234567893").is_some());
        assert!(npi("1234567890").is_none());
        assert!(dea("AB1234563").is_some());
        assert!(dea("AB1234567").is_none());
        assert!(vin("1M8GDM9AXKP042788").is_some());
        assert!(vin("1M8GDM9A1KP042788").is_none());
    }

    #[test]
    fn ssn_issuance_rules() {
        assert!(ssn("123-45-6789").is_some());
        for bad in [
            "000-12-3456",
            "666-12-3456",
            "900-12-3456",
            "123-00-4567",
            "123-45-0000",
        ] {
            assert!(ssn(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn ip_validators() {
        assert!(ipv4("192.168.1.20").is_some());
        assert!(ipv4("192.168.1.256").is_none());
        assert!(ipv6("2001:db8::8a2e:370:7334").is_some());
        assert!(ipv6("10:30:45").is_none());
        assert!(ipv6("::").is_none());
    }
}
