//! Addresses and places: streets, cities, regions, postcodes and countries.
//!
//! The rule table in `detect::rules` knows US street suffixes, PO boxes and a ZIP after a
//! state; addresses written elsewhere, or with a suffix it lacks, are read here:
//!
//! - **postcodes by shape** ([`POSTCODES`]): Canadian (`M5V 2T6`) and UK (`NR2 3PH`)
//!   postcodes, and an Indian PIN code after ` - ` (`Bengaluru - 560038`), whose city is
//!   the words before the dash;
//! - **streets** ([`STREETS`], [`BEFORE_TOWN`], [`UNITS`]): suffixes and prefixes the rule
//!   table lacks (`Close`, `Rue`, `-straße`), Indian door and plot numbers, flats and
//!   units, and a street of any name when a city-and-postcode line follows it;
//! - **cities by their neighbours** ([`CITIES`], [`ZIP_BEFORE_TOWN`]): before a UK
//!   postcode, after "lives in", after a five-digit postcode;
//! - **named places** ([`Named`]): country and region names from `lists/places.txt`; a
//!   region abbreviation only between a city and a postcode (`Savannah, GA 31406`,
//!   `Fitzroy VIC 3065`), since `IN`, `ON` and `ME` are also words.

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::Regex;

use super::super::{re, ByteSpan, STRONG, WEAK};
use super::cues::Cue;
use crate::detect::Label;

const PLACES: &str = include_str!("../../lists/places.txt");

/// Code systems whose name stands before a code as a city stands before a postcode
/// (`CPT 99214`, `ICD 10`): a billing code, never a place.
const CODE_SYSTEMS: &[&str] = &[
    "CPT", "ICD", "HCPCS", "DRG", "NDC", "LOINC", "SNOMED", "RxNorm", "CVX", "CDT", "NPI",
];

/// True when the "city" before a region and a postcode is a billing code's system (`CPT
/// 99214`) or ends in an identifier's field name (`Patient ID 12345` read as a city in
/// Idaho).
fn not_a_city(city: &str) -> bool {
    CODE_SYSTEMS.contains(&city)
        || city
            .rsplit([' ', '\t'])
            .next()
            .is_some_and(super::identifier::is_field_name)
}

/// Postcodes by shape, and the city before an Indian PIN code.
pub(super) const POSTCODES: &[Cue] = &[
    // Canada: A1A 1A1, without the letters Canada Post never uses
    Cue::new(
        r"\b([ABCEGHJ-NPRSTVXY]\d[ABCEGHJ-NPRSTV-Z][ \t]?\d[ABCEGHJ-NPRSTV-Z]\d)\b",
        Label::Zipcode,
        STRONG,
    ),
    // UK: outward code, space, inward code
    Cue::new(
        r"\b([A-Z]{1,2}\d[A-Z\d]?[ \t]\d[ABD-HJLNP-UW-Z]{2})\b",
        Label::Zipcode,
        STRONG,
    ),
    // India: City - 560038
    Cue::new(
        r"\b(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]\p{Lu}[\p{L}\p{M}'’.-]*)?)[ \t]+-[ \t]+(\d{6})\b",
        Label::City,
        STRONG,
    ),
    Cue::new(
        r"\b\p{Lu}[\p{L}\p{M}'’.-]*[ \t]+-[ \t]+(\d{6})\b",
        Label::Zipcode,
        STRONG,
    ),
];

/// Streets the rule table lacks.
pub(super) const STREETS: &[Cue] = &[
    // a number, capitalised words and an English or Indian suffix
    Cue::new(
        r"\b(\d{1,5}[A-Za-z]?,?[ \t]+(?:\p{Lu}[\p{L}\p{M}'’.-]*[ \t]+){1,4}(?:Close|Crescent|Gardens|Row|Mews|Walk|Hill|Grove|Green|Rise|View|Park|Marg|Nagar|Road|Street|Lane|Avenue|Ave|Way|Drive|Court|Place|Terrace|Square|Parade|Esplanade|Highway|Quay|Wharf|Boulevard|Run|Loop|Pass|Path|Trace|Bend|Point|Ridge|Cove|Heights|Alley|Pike|Glen|Vale|Dale|Hollow|Circle|Trail|Parkway|Plaza|Apartments)(?:[ \t]+(?:West|East|North|South|NW|NE|SW|SE))?(?:[ \t]+No\.[ \t]*\d+)?(?:,[ \t]+Near[ \t]+\p{Lu}\p{L}*(?:[ \t]\p{Lu}\p{L}*){0,3})?(?:,?[ \t]+(?:Apt|Apartment|Unit|Suite|Ste|Flat)\.?[ \t]*#?[A-Za-z0-9-]+)?)\b",
        Label::StreetAddress,
        STRONG,
    ),
    // a number and a Romance prefix: 12 Rue de la Paix
    Cue::new(
        r"\b(\d{1,5},?[ \t]+(?:Rue|Via|Calle|Avenida|Avenue|Chemin|Boulevard|Viale|Piazza|Plaza|Rua|Praça)(?:[ \t]+(?:de|du|des|la|le|del|di|da|dos)?[ \t]*\p{Lu}[\p{L}\p{M}'’-]*){1,4})",
        Label::StreetAddress,
        STRONG,
    ),
    // a German compound and its number: Karl-Marx-Allee 59
    Cue::new(
        r"\b(\p{Lu}[\p{L}\p{M}-]*(?i:straße|strasse|weg|gasse|allee|platz|ring|damm|ufer|markt)[ \t]+\d{1,4}[a-z]?)\b",
        Label::StreetAddress,
        STRONG,
    ),
    // Door No. 12, Gandhi Road
    Cue::new(
        r"\b((?:Door|Flat|House|Plot)[ \t]+No\.?[ \t]+[\d-]+(?:,[ \t]+\p{Lu}[\p{L}\p{M}'’-]*[ \t]+(?:Street|Road|Nagar|Marg|Lane|Colony))?)",
        Label::StreetAddress,
        STRONG,
    ),
    // Flat 4B, Lotus Residency
    Cue::new(
        r"\b((?:Flat|Apt|Unit)[ \t]+\w+,[ \t]+(?:\p{Lu}[\p{L}\p{M}'’-]*[ \t]+){1,3}(?:Apartments|Residency|Towers|Tower|Court|House|Heights|Enclave))\b",
        Label::StreetAddress,
        STRONG,
    ),
    // US military mail (USPS Publication 28, 225): PSC 1234, Box 5678, APO AE 09012; the
    // unit, box, post office and state code are the whole address
    Cue::new(
        r"\b((?:PSC|CMR|UMR|Unit)[ \t]+\d{1,5}(?:[ \t]*,[ \t]*|[ \t]+|\r?\n[ \t]*)Box[ \t]+\d{1,5}(?:[ \t]*,[ \t]*|[ \t]+|\r?\n[ \t]*)(?:APO|FPO|DPO)[ \t]+(?:AA|AE|AP)[ \t]+\d{5}(?:-\d{4})?)\b",
        Label::StreetAddress,
        STRONG,
    ),
    // a street of any name when a "City, ST 12345" or "City ON  M5V 2T6" line follows: the
    // slot decides, not the street's words
    Cue::new(
        r"\b(\d{1,5}[A-Za-z]?[ \t]+(?:(?:\p{Lu}[\p{L}\p{M}'’.-]*|des|de|du|la|le|del|van|von)[ \t]+){0,4}\p{Lu}[\p{L}\p{M}'’.-]*(?:,?[ \t]+(?:Apt|Apartment|Unit|Suite|Ste|Flat|\#)\.?[ \t]*\#?[A-Za-z0-9-]+)?)[ \t]*(?:,[ \t]*|\r?\n[ \t]*)\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]\p{Lu}[\p{L}\p{M}'’.-]*){0,2},?[ \t]+(?:[A-Z]{2,3}|\p{Lu}\p{L}+(?:[ \t]\p{Lu}\p{L}+)?)[ \t]+(?:\d{5}(?:-\d{4})?|[A-Z]\d[A-Z][ \t]?\d[A-Z]\d)\b",
        Label::StreetAddress,
        STRONG,
    ),
];

/// Cities by their neighbours.
pub(super) const CITIES: &[Cue] = &[
    // before a UK postcode, on the same line after a comma or on the line above
    Cue::new(
        r"\b(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]\p{Lu}[\p{L}\p{M}'’.-]*){0,2})(?:,[ \t]*|[ \t]*\r?\n[ \t]*)[A-Z]{1,2}\d[A-Z\d]?[ \t]\d[ABD-HJLNP-UW-Z]{2}\b",
        Label::City,
        STRONG,
    ),
    Cue::new(
        r"(?i:\b(?:lives|living|resides|residing|moved|relocated|based))[ \t]+(?i:in|to)[ \t]+(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]\p{Lu}[\p{L}\p{M}'’.-]*){0,2})",
        Label::City,
        WEAK,
    ),
    // after a five-digit postcode: 60311 Frankfurt am Main
    Cue::new(
        r"\b\d{5}[ \t]+(\p{Lu}[\p{L}\p{M}-]+(?:[ \t](?:am|an|der|im|\p{Lu}[\p{L}\p{M}-]+)){0,3})",
        Label::City,
        WEAK,
    ),
];

/// Streets recognised by the town line after them.
pub(super) const BEFORE_TOWN: &[Cue] = &[
    // before "60311 Frankfurt"
    Cue::new(
        r"\b((?:\p{Lu}[\p{L}\p{M}-]+[ \t]+){0,2}\p{Lu}[\p{L}\p{M}-]+[ \t]+\d{1,4}[a-z]?)[ \t]*(?:,[ \t]*|\r?\n[ \t]*)\d{5}[ \t]+\p{Lu}",
        Label::StreetAddress,
        WEAK,
    ),
    // before "Bengaluru - 560038"
    Cue::new(
        r"\b((?:Door[ \t]+No\.|No\.|Plot|Flat)[ \t]*[\w/-]+(?:,[ \t]+(?:Near[ \t]+)?[\p{Lu}\d][\p{L}\d.]*(?:[ \t][\p{Lu}\d][\p{L}\d.]*){0,4}){1,3})(?:,[ \t]+|[ \t]*\r?\n[ \t]*)\p{Lu}\p{L}*[ \t]+-[ \t]+\d{6}",
        Label::StreetAddress,
        STRONG,
    ),
];

/// Flats, units and numbered sectors on their own.
pub(super) const UNITS: &[Cue] = &[
    Cue::new(
        r"\b(?:Flat|Apt|Apartment|Unit|Suite)\.?[ \t]+#?\d+[A-Za-z]?\b",
        Label::StreetAddress,
        STRONG,
    )
    .whole(),
    Cue::new(
        r"\b(?:Road|Plot|House|Sector|Block)[ \t]+No\.?[ \t]+\d+\b|\bSector[ \t]+\d+\b",
        Label::StreetAddress,
        STRONG,
    )
    .whole(),
];

/// A five-digit postcode before a capitalised word (the town).
pub(super) const ZIP_BEFORE_TOWN: &[Cue] = &[Cue::new(
    r"\b(\d{5})[ \t]+\p{Lu}[\p{L}\p{M}-]+\b",
    Label::Zipcode,
    WEAK,
)];

/// Lowercase words a street's name may hold (`Rue de Bouillon`, `Rákóczi út`, `ul. Cicha`).
const STREET_WORDS: &[&str] = &[
    "de", "du", "des", "la", "le", "les", "del", "di", "da", "dos", "das", "do", "van", "von",
    "der", "den", "rue", "út", "utca", "ul.", "al.", "pl.", "os.", "via", "calle", "straat",
    "gade", "vej", "gatan", "vägen", "ulica", "y", "e",
];

/// The street that ends `head` right before `, <city>`: the words walked back from the
/// comma while they can belong to a street's name (capitalised, numbered or
/// [`STREET_WORDS`]), holding a number and at most six words. `I'll meet you at
/// Skolegyden 99, København K` gives `Skolegyden 99`; a part without a number gives none.
/// Byte offsets into `head`.
fn street_before(head: &str) -> Option<(usize, usize)> {
    let part = head.trim_end_matches([' ', '\t']).strip_suffix(',')?;
    let end = part.trim_end_matches([' ', '\t']).len();
    let line = part[..end]
        .rfind(['\n', ',', ':', ';', '('])
        .map_or(0, |i| i + 1);
    let mut start = None;
    let mut numbered = false;
    for &(i, w) in words_of(&part[line..end]).iter().rev().take(6) {
        let first = w.chars().next()?;
        let fits = first.is_uppercase()
            || first.is_ascii_digit()
            || STREET_WORDS.contains(&w.to_lowercase().as_str());
        if !fits {
            break;
        }
        numbered |= w.chars().any(|c| c.is_ascii_digit());
        start = Some(line + i);
    }
    // A street starts with its number or a capitalised word, not a particle.
    let mut s = start?;
    while let Some(w) = part[s..end].split_whitespace().next() {
        let first = w.chars().next()?;
        if first.is_uppercase() || first.is_ascii_digit() || w.ends_with('.') || w.len() > 3 {
            break;
        }
        s += w.len() + (part[s + w.len()..].len() - part[s + w.len()..].trim_start().len());
    }
    (numbered && s < end).then_some((s, end))
}

/// The whitespace-separated words of `text` with their byte offsets.
fn words_of(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out
}

/// The names in `lists/places.txt` whose lines start with `prefix`, as a regex
/// alternation.
fn alternation(prefix: &str) -> String {
    let mut names: Vec<&str> = PLACES
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .flat_map(|l| l.split('|'))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    // Longest first so `United States of America` wins over `United States`.
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    names
        .iter()
        .map(|n| regex::escape(n))
        .collect::<Vec<_>>()
        .join("|")
}

/// The region abbreviations (`A:` lines of `lists/places.txt`).
fn region_abbrevs() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| {
        PLACES
            .lines()
            .filter_map(|l| l.strip_prefix("A:"))
            .flat_map(|l| l.split('|'))
            .collect()
    })
}

/// The compiled country and region heuristics.
#[derive(Debug)]
pub(super) struct Named {
    countries: Regex,
    /// Medical centres known by a short name (`I:` lines).
    institutions: Regex,
    regions: Regex,
    /// The city before `, <region>`.
    city_before: Regex,
    /// City, region abbreviation, postcode.
    city_region_zip: Regex,
    /// City and postcode without a region (`Szczecin,  70-762`, `Porto 4000-322`).
    city_zip: Regex,
    /// Only punctuation or quoting marks since the line's start (`> `, `* `).
    line_start: Regex,
    /// A line of one to three capitalised words, right above where the text ends.
    city_line: Regex,
}

impl Named {
    pub(super) fn new() -> Self {
        Named {
            countries: re(&format!(r"\b({})(?:\b|$)", alternation("C:"))),
            institutions: re(&format!(r"\b(?:{})(?:\b|$)", alternation("I:"))),
            regions: re(&format!(r"\b({})\b", alternation("S:"))),
            city_before: re(
                r"(?:^|[,\n][ \t]*)(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t]\p{Lu}[\p{L}\p{M}'’.-]*){0,2})[ \t]*\z",
            ),
            city_region_zip: re(
                r"\b(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t](?:de|da|do|del|la|le|am|an|sur|\p{Lu}[\p{L}\p{M}'’.-]*)){0,3}),?[ \t]+([A-Z]{2,3}|\d{1,2})[ \t]+(\d{4,5}(?:-\d{3,4})?(?:[ \t][A-Z]{2}\b)?|[A-Z]\d[A-Z][ \t]?\d[A-Z]\d)\b",
            ),
            city_zip: re(
                r"\b(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t](?:de|da|do|del|la|le|am|an|sur|\p{Lu}[\p{L}\p{M}'’.-]*)){0,3}),?[ \t]+(\d{2}-\d{3}|\d{4}-\d{3}|\d{5})\b",
            ),
            line_start: re(r"(?:^|\n)[^\p{L}\d\n]*\z"),
            city_line: re(
                r"(?:^|\n)[^\p{L}\d\n]*(\p{Lu}[\p{L}\p{M}'’.-]*(?:[ \t](?:de|la|le|am|an|sur|\p{Lu}[\p{L}\p{M}'’.-]*)){0,2})[ \t]*\r?\n[^\p{L}\d\n]*\z",
            ),
        }
    }

    /// Countries anywhere; a region name after a comma or before a postcode (with that
    /// postcode and the city before the comma); a region abbreviation only between a
    /// city and a postcode.
    pub(super) fn find(&self, text: &str, out: &mut Vec<ByteSpan>) {
        for m in self.institutions.find_iter(text) {
            out.push(ByteSpan::new(
                m.start(),
                m.end(),
                Label::Organization,
                STRONG,
            ));
        }
        for m in self.countries.find_iter(text) {
            out.push(ByteSpan::new(m.start(), m.end(), Label::Country, WEAK));
            // A country starting a line ends a postal block: the line above it, when it is
            // one to three capitalised words, is the town, and digits after the country on
            // its line are the postcode (`Apt. 782⏎Egilsstaðir⏎Iceland 701`).
            let head = &text[..m.start()];
            if !self.line_start.is_match(head) {
                continue;
            }
            if let Some(city) = self.city_line.captures(head).and_then(|c| c.get(1)) {
                if !self.countries.is_match(city.as_str()) {
                    out.push(ByteSpan::new(city.start(), city.end(), Label::City, WEAK));
                }
            }
            let after = &text[m.end()..];
            let gap = after.len() - after.trim_start_matches([' ', '\t', ',']).len();
            let digits = after[gap..]
                .chars()
                .take_while(char::is_ascii_digit)
                .count();
            let next = after[gap + digits..].chars().next();
            if gap > 0 && (3..=6).contains(&digits) && next.is_none_or(|c| !c.is_alphanumeric()) {
                let zs = m.end() + gap;
                out.push(ByteSpan::new(zs, zs + digits, Label::Zipcode, STRONG));
            }
        }
        for m in self.regions.find_iter(text) {
            let before = text[..m.start()].trim_end_matches([' ', '\t']);
            let after = text[m.end()..].trim_start_matches([' ', '\t']);
            let zip_len = after.chars().take_while(char::is_ascii_digit).count();
            if before.ends_with(',') || zip_len > 0 {
                out.push(ByteSpan::new(m.start(), m.end(), Label::State, WEAK));
            }
            if (4..=6).contains(&zip_len) {
                let zs = text.len() - after.len();
                out.push(ByteSpan::new(zs, zs + zip_len, Label::Zipcode, STRONG));
            }
            if let Some(head) = before.strip_suffix(',') {
                if let Some(city) = self.city_before.captures(head).and_then(|c| c.get(1)) {
                    out.push(ByteSpan::new(city.start(), city.end(), Label::City, WEAK));
                }
            }
        }
        // City and postcode with no region, after a numbered street part:
        // `ul. Cicha 58, Wrocław,  51-659`.
        for caps in self.city_zip.captures_iter(text) {
            let (Some(city), Some(zip)) = (caps.get(1), caps.get(2)) else {
                continue;
            };
            if not_a_city(city.as_str()) {
                continue;
            }
            let Some((ss, se)) = street_before(&text[..city.start()]) else {
                continue;
            };
            out.push(ByteSpan::new(ss, se, Label::StreetAddress, WEAK));
            out.push(at(city, Label::City, WEAK));
            out.push(at(zip, Label::Zipcode, STRONG));
        }
        let abbrevs = region_abbrevs();
        for caps in self.city_region_zip.captures_iter(text) {
            let (Some(city), Some(region), Some(zip)) = (caps.get(1), caps.get(2), caps.get(3))
            else {
                continue;
            };
            if not_a_city(city.as_str()) {
                continue;
            }
            // A region code the list lacks (`Tallinn, HA 10119`, `Brirem, 32 8127`) counts
            // when the part before the city holds a number: the whole line is an address,
            // and that part is its street.
            if !abbrevs.contains(region.as_str()) {
                let Some((ss, se)) = street_before(&text[..city.start()]) else {
                    continue;
                };
                out.push(ByteSpan::new(ss, se, Label::StreetAddress, WEAK));
            }
            out.push(at(city, Label::City, STRONG));
            out.push(at(region, Label::State, STRONG));
            out.push(at(zip, Label::Zipcode, STRONG));
        }
    }
}

/// The span of a regex match.
fn at(m: regex::Match<'_>, label: Label, score: f32) -> ByteSpan {
    ByteSpan::new(m.start(), m.end(), label, score)
}

#[cfg(test)]
mod tests {
    use crate::detect::context::tests::rows;
    use crate::detect::Label;

    rows! {
        country: "Glenelg SA 5045, Australia.", "Australia" => Some(Label::Country);
        city_state_zip: "25 Coronation Drive, Glenelg SA 5045, Australia", "Glenelg" => Some(Label::City);
        code_system_is_no_city: "Tanner stage 3, CPT 99214.", "CPT" => None;
        code_system_is_no_city_zip: "Tanner stage 3, CPT 99214.", "99214" => None;
        field_name_is_no_city: "Patient ID 12345 seen today.", "Patient" => None;
        field_name_is_no_region: "Patient ID 12345 seen today.", "ID" => None;
        city_in_idaho: "Lives at 40 Elm St, Boise ID 83702.", "Boise" => Some(Label::City);
        canadian_postcode: "Toronto ON  M5V 2T6\n", "M5V 2T6" => Some(Label::Zipcode);
        uk_postcode: "Norwich\nNR2 3PH\n", "NR2 3PH" => Some(Label::Zipcode);
        state_after_comma: "Bengaluru - 560038, Karnataka\n", "Karnataka" => Some(Label::State);
        indian_pin: "Bengaluru - 560038, Karnataka\n", "560038" => Some(Label::Zipcode);
        uk_city_line: "211 Kingsley Road\nAberdeen\nAB24 3FX\n", "Aberdeen" => Some(Label::City);
        german_street: "Karl-Marx-Allee 59\n60311 Frankfurt am Main", "Karl-Marx-Allee 59" => Some(Label::StreetAddress);
        german_city: "Karl-Marx-Allee 59\n60311 Frankfurt am Main.", "Frankfurt am Main" => Some(Label::City);
        lives_in: "Works as a driver for Kestrel Aerospace; lives in Savannah, GA", "Savannah" => Some(Label::City);
        city_before_state: "6081 Oak Street, Apt 25B, Savannah, Georgia 31471, USA", "Savannah" => Some(Label::City);
        zip_after_state: "6081 Oak Street, Apt 25B, Savannah, Georgia 31471, USA", "31471" => Some(Label::Zipcode);
        street_before_city_line: "with son Dorothy Reddy (4605430668), 1641 Defilo Hubewigu West, Moncton NB  E1C 4B8.", "1641 Defilo Hubewigu West" => Some(Label::StreetAddress);
        street_with_unit: "(688) 555-0184), 8681 Gerova Tozi, Unit 279\nBurlington, Vermont 05420", "8681 Gerova Tozi, Unit 279" => Some(Label::StreetAddress);
        military_address: "Mail to PSC 1234, Box 5678, APO AE 09012.", "PSC 1234, Box 5678, APO AE 09012" => Some(Label::StreetAddress);
        region_code_not_listed: "lives at Vana-Viru 25, Tallinn, HA 10119 now", "HA" => Some(Label::State);
        city_before_unlisted_region: "lives at Vana-Viru 25, Tallinn, HA 10119 now", "Tallinn" => Some(Label::City);
        street_before_unlisted_region: "lives at Vana-Viru 25, Tallinn, HA 10119 now", "Vana-Viru 25" => Some(Label::StreetAddress);
        city_with_particle: "Rua Mar Grande 1490, Rio de Janeiro, RJ 21010-290.", "Rio de Janeiro" => Some(Label::City);
        unlisted_region_needs_a_street: "Noted: Ortho Clinic, XQ 12345 units", "XQ" => None;
        city_above_country: "Apt. 782\nEgilsstaðir\nIceland 701\n", "Egilsstaðir" => Some(Label::City);
        postcode_after_country: "Apt. 782\nEgilsstaðir\nIceland 701\n", "701" => Some(Label::Zipcode);
        quoted_city_above_country: "> Suite 971\n> JESSHEIM\n> Norway 2050", "JESSHEIM" => Some(Label::City);
        country_mid_sentence_has_no_city: "Travelled\nRecently to France 2019", "Recently" => None;
        city_before_postcode: "sent to ul. Karpacka 69, Bydgoszcz,  85-164?", "Bydgoszcz" => Some(Label::City);
        postcode_after_city: "sent to ul. Karpacka 69, Bydgoszcz,  85-164?", "85-164" => Some(Label::Zipcode);
        street_with_lowercase_prefix: "sent to ul. Karpacka 69, Bydgoszcz,  85-164?", "ul. Karpacka 69" => Some(Label::StreetAddress);
        year_after_town_is_not_a_postcode: "Moved to Leeds, 2019 onwards", "2019" => None;
        street_starts_at_its_name: "I'll meet you at Skolegyden 99, København K, SJ 1017 after", "Skolegyden 99" => Some(Label::StreetAddress);
        street_after_a_label: "Address:     Rue de Bouillon 316, Grandmetz, WH 6510", "Rue de Bouillon 316" => Some(Label::StreetAddress);
        military_address_lines: "Unit 2050\nBox 4190\nFPO AP 96522-4190\n", "Unit 2050\nBox 4190\nFPO AP 96522-4190" => Some(Label::StreetAddress);
    }
}
