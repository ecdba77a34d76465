//! Protected terms: drug names, disease names and eponyms that are never a person.
//!
//! # Why a list and not a better model
//!
//! "Parkinson", "Hodgkin" and "Crohn" are surnames in a model's eyes, and brand names
//! such as "Keppra" or "Coumadin" look like capitalised names; masking them destroys the
//! clinical meaning of a note without protecting anyone. A small committed list
//! (`lists/protected_terms.txt`, our own, CC0) vetoes *name* labels on spans whose every
//! word is a protected term. It never removes dates or numbers, so it cannot open a leak
//! outside names, and a rule span (a title before the word: "Dr. Parkinson") keeps the name
//! because only model spans and unanchored heuristics are filtered.
//!
//! A second list (`lists/clinical_terms.txt`: analytes, scales, diagnoses' abbreviations,
//! units of a hospital, drugs, genes; none a town's or a person's name) vetoes model spans
//! of places, organisations and names made only of its terms, numbers and connectors: on
//! short texts a model read `Na 140, K 4.0` as a street address, `the ICU` as an
//! organisation and `methimazole` as a country ([`is_clinical`]).

use std::collections::HashSet;
use std::sync::OnceLock;

use super::{CharIndex, Label, Source, Span};

const RAW: &str = include_str!("lists/protected_terms.txt");

/// Clinical head nouns after which an ambiguous term (`?Bishop`) is an eponym.
const HEADS: &[&str] = &[
    "disease",
    "syndrome",
    "score",
    "sign",
    "signs",
    "test",
    "lymphoma",
    "palsy",
    "esophagus",
    "oesophagus",
    "contracture",
    "procedure",
    "maneuver",
    "manoeuvre",
    "phenomenon",
    "criteria",
    "scale",
    "classification",
    "thyroiditis",
    "ulcer",
    "catheter",
    "tumor",
    "tumour",
    "fundoplication",
    "chorea",
    "triad",
    "reflex",
    "fracture",
    "node",
    "sarcoma",
    "stool",
    "rules",
    "rule",
    "pupil",
    "law",
    "point",
    "incision",
    // devices, instruments and anatomy named after people (`Holter monitor`, `Hickman
    // line`, `Pfannenstiel incision`, `Bartholin gland`)
    "monitor",
    "monitoring",
    "line",
    "valve",
    "tube",
    "shunt",
    "stent",
    "splint",
    "forceps",
    "retractor",
    "needle",
    "cannula",
    "drain",
    "technique",
    "operation",
    "repair",
    "position",
    "ligament",
    "cyst",
    "gland",
    "duct",
    "nerve",
    "hernia",
    "anomaly",
    "effect",
    "respiration",
    "breathing",
    "formula",
    "equation",
    "index",
    "graft",
    "flap",
    "traction",
    "collar",
    // `Glasgow Coma Scale`, `Achilles tendon`, `Hoehn and Yahr stage`
    "coma",
    "tendon",
    "stage",
];

const CLINICAL_RAW: &str = include_str!("lists/clinical_terms.txt");

/// The clinical vocabulary (`lists/clinical_terms.txt`).
struct Clinical {
    /// Words (`Cardiology`, `Na`, `daily`), lower case: they match in any case.
    words: HashSet<String>,
    /// Terms with a capital after their first letter (`AKI`, `HFrEF`, `mRS`): they match
    /// only as written or in capitals, so that `AKI` is no `Aki Maruyama`.
    abbreviations: HashSet<String>,
    /// The words of the section of a note's labels (`Pt`, `Nota`, `Nambari`: "number"),
    /// lower case: clinical words, but a number after one is no analyte's value.
    labels: HashSet<String>,
}

/// The header of `lists/clinical_terms.txt`'s section of label words.
const LABELS_SECTION: &str = "# --- the words of a note's labels";

fn clinical() -> &'static Clinical {
    static CLINICAL: OnceLock<Clinical> = OnceLock::new();
    CLINICAL.get_or_init(|| {
        let mut c = Clinical {
            words: HashSet::new(),
            abbreviations: HashSet::new(),
            labels: HashSet::new(),
        };
        let mut in_labels = false;
        for l in CLINICAL_RAW
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            if l.starts_with("# ---") {
                in_labels = l.starts_with(LABELS_SECTION);
            }
            if l.starts_with('#') {
                continue;
            }
            if in_labels {
                c.labels.insert(l.to_lowercase());
            }
            if l.chars().skip(1).any(char::is_uppercase) {
                c.abbreviations.insert(l.to_owned());
                c.abbreviations.insert(l.to_uppercase());
            } else {
                c.words.insert(l.to_lowercase());
            }
        }
        c
    })
}

/// True when `word` is a term of the clinical vocabulary ([`clinical`]).
fn is_clinical_term(word: &str) -> bool {
    let c = clinical();
    c.abbreviations.contains(word) || c.words.contains(&word.to_lowercase())
}

/// Field names of a record, in capitals as forms write them: never a name, though a model
/// sometimes takes one for the name before its value. Not clinical vocabulary: a number
/// after them is an identifier or a date, not a value to keep.
pub(crate) const RECORD_FIELDS: &[&str] = &[
    "DOB", "MRN", "SSN", "DOS", "DOD", "EMR", "EHR", "PCP", "IBAN", "SWIFT", "BIC",
];

/// The names of national and health identifiers, as notes write them. The one list of
/// them: a number after one is that person's identifier (the identifier cues), the name
/// ends a name read across a comma (`Anna Kowalska, PESEL 44051401359` is no `Last,
/// First`), and a model span of the name alone is no one's name or place.
pub(crate) const IDENTIFIER_NAMES: &[&str] = &[
    "PESEL", "BSN", "CPF", "DNI", "NIE", "NIR", "CURP", "ABHA", "PAN", "NHS", "NIDA", "NHIF",
    "Aadhaar", "AADHAAR", "kimlik", "Kimlik", "KIMLIK",
];

/// True for a record's field name or an identifier's name ([`RECORD_FIELDS`],
/// [`IDENTIFIER_NAMES`]).
pub(crate) fn is_record_word(word: &str) -> bool {
    RECORD_FIELDS.contains(&word) || IDENTIFIER_NAMES.contains(&word)
}

/// True when `value` is a record's field or identifier's name with at most label words
/// beside it (`ABHA`, `NHIF nambari`: "NHIF number") and nothing else: no number, which
/// would be the identifier itself.
fn names_a_record(value: &str) -> bool {
    let mut any = false;
    value
        .split_whitespace()
        .map(|w| w.trim_end_matches([':', '.']))
        .all(|w| {
            any |= is_record_word(w);
            is_record_word(w) || is_clinical_term(w)
        })
        && any
}

/// Words that join clinical terms and numbers in a span (`NYHA class II`, `the ICU`).
const CONNECTORS: &[&str] = &[
    "the", "a", "an", "and", "or", "of", "to", "from", "on", "in", "at", "with", "per", "for",
    "class", "stage", "grade", "score", "i", "ii", "iii", "iiia", "iiib", "iv", "v",
];

/// True when `value` reads as clinical content and nothing else: every word a term of
/// `lists/clinical_terms.txt`, a number (`140`, `4.0`, `25/100`, `7.2%`) or a connector, and
/// at least one a clinical term. `Na 140, K 4.0` (taken for a street address), `the ICU`
/// (an organisation) and `NYHA` (a given name) are; `Mayo Clinic`, `Unit 4B` and `Wells`
/// are not.
pub(crate) fn is_clinical(value: &str) -> bool {
    let number = |w: &str| {
        w.chars().any(|c| c.is_ascii_digit())
            && w.chars()
                .all(|c| c.is_ascii_digit() || ".,/%-+=:x".contains(c))
    };
    let mut any = false;
    for word in value
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')'))
        .map(|w| w.trim_end_matches(['.', ':']))
        .filter(|w| !w.is_empty())
    {
        let lower = word.to_lowercase();
        if is_clinical_term(word) {
            any = true;
        } else if word.contains('/') && word.split('/').all(|p| is_clinical_term(p) || number(p)) {
            any |= word.split('/').any(is_clinical_term);
        } else if !(number(&lower) || CONNECTORS.contains(&lower.as_str())) {
            return false;
        }
    }
    any
}

/// True when span `s` is a number alone and the word just before it is a clinical term
/// (`Plt 210`, `Cl 101`, `KPS 80`).
fn value_of_clinical_word(text: &str, idx: &CharIndex, s: &Span) -> bool {
    let value = idx.slice(text, s.start, s.end).trim();
    if value.is_empty() || !value.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return false;
    }
    let before = text[..idx.byte(s.start)].trim_end_matches([' ', ':', '=']);
    let word = before
        .rsplit(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '('))
        .next()
        .unwrap_or("");
    let word = word.to_lowercase();
    !word.is_empty()
        && is_clinical_term(&word)
        && !PLACE_WORDS.contains(&word.as_str())
        && !clinical().labels.contains(&word)
}

/// Words of the clinical list that name parts of a hospital (lower case): a number after
/// one numbers a place (`Unit 12`, `Ward 7`), and a name with one is a person's (`Kerry
/// Ward`).
const PLACE_WORDS: &[&str] = &[
    "unit",
    "floor",
    "ward",
    "clinic",
    "department",
    "dept",
    "facility",
    "service",
];

/// Labels of places and organisations, which clinical content is never. A postcode is
/// left out: its letters may read as an analyte (`1077 HB`).
fn place_label(label: Label) -> bool {
    matches!(
        label,
        Label::StreetAddress
            | Label::City
            | Label::State
            | Label::Country
            | Label::Location
            | Label::Organization
    )
}

/// The parsed list, lowercased: `(always, ambiguous)`.
fn terms() -> &'static (HashSet<String>, HashSet<String>) {
    static TERMS: OnceLock<(HashSet<String>, HashSet<String>)> = OnceLock::new();
    TERMS.get_or_init(|| {
        let mut always = HashSet::new();
        let mut ambiguous = HashSet::new();
        for l in RAW.lines().map(str::trim) {
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            match l.strip_prefix('?') {
                Some(a) => ambiguous.insert(a.to_lowercase()),
                None => always.insert(l.to_lowercase()),
            };
        }
        (always, ambiguous)
    })
}

/// True for the person-name labels the list vetoes.
pub(crate) fn is_name_label(label: Label) -> bool {
    matches!(
        label,
        Label::Person | Label::FirstName | Label::LastName | Label::MiddleName
    )
}

/// Strips a trailing possessive (`Crohn's`, `Legionnaires'`).
fn strip_possessive(word: &str) -> &str {
    word.strip_suffix("'s")
        .or_else(|| word.strip_suffix("’s"))
        .or_else(|| word.strip_suffix('\''))
        .or_else(|| word.strip_suffix('’'))
        .unwrap_or(word)
}

/// True when `text` (one word or a phrase) is a protected term, or every word of it is.
/// Ambiguous terms count only through [`is_protected_at`], which sees what follows.
pub fn is_protected(text: &str) -> bool {
    let (t, _) = terms();
    let whole = strip_possessive(text.trim()).to_lowercase();
    if whole.is_empty() {
        return false;
    }
    if t.contains(&whole) {
        return true;
    }
    let mut words = whole
        .split(|c: char| c.is_whitespace() || c == '/')
        .filter(|w| !w.is_empty())
        .peekable();
    words.peek().is_some() && words.all(|w| t.contains(strip_possessive(w)))
}

/// True when `word`, followed in the text by `after`, is protected: an always-protected
/// term, or an ambiguous one followed by a clinical head noun (`Bishop score`).
pub fn is_protected_at(word: &str, after: &str) -> bool {
    if is_protected(word) {
        return true;
    }
    let (_, ambiguous) = terms();
    let w = strip_possessive(word.trim()).to_lowercase();
    ambiguous.contains(&w) && followed_by_head(after)
}

/// True when the text right after a word starts with a clinical head noun, possibly after
/// a possessive (`'s disease`, ` catheter`, ` sign`): the word names a term, not a person.
/// This decides for any eponym, listed or not, so `Foley catheter` stays while a `Dr. Foley`
/// in the same note is masked.
pub fn followed_by_head(after: &str) -> bool {
    let rest = ["'s", "’s", "'", "’"]
        .iter()
        .find_map(|p| after.strip_prefix(p))
        .unwrap_or(after);
    if !rest.starts_with([' ', '\t', '-']) {
        return false;
    }
    let next: String = rest
        .trim_start_matches([' ', '\t', '-'])
        .split(|c: char| c.is_whitespace() || c == '-')
        .next()
        .unwrap_or("")
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    HEADS.contains(&next.as_str())
}

/// Credentials and roles written after a name, which the model sometimes reads as a
/// given name.
const CREDENTIALS: [&str; 24] = [
    "MD", "DO", "RN", "NP", "PA", "PA-C", "PhD", "LPN", "APRN", "DNP", "BSN", "MSN", "CNA", "CRNA",
    "PharmD", "DDS", "LCSW", "LICSW", "MBBS", "FACP", "FACC", "RRT", "SW", "MSW",
];

/// True for an organisation span that is the start of a discharge summary's heading
/// (`Brief Hospital Course:`), not a hospital's name.
fn heading_not_org(text: &str, idx: &CharIndex, s: &Span) -> bool {
    let after = text[idx.byte(s.end)..].trim_start_matches([' ', '\t']);
    s.label == Label::Organization
        && idx.slice(text, s.start, s.end).ends_with("Hospital")
        && after
            .get(..6)
            .is_some_and(|w| w.eq_ignore_ascii_case("course"))
}

/// True for a word that says the date after it is a birth date (`DOB`, `D.O.B.`, `born`,
/// `birth`, `Geburtsdatum`, `né(e)`), whatever its case and punctuation.
pub(crate) fn is_birth_cue_word(word: &str) -> bool {
    let w: String = word
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    matches!(
        w.as_str(),
        "dob" | "born" | "birthdate" | "birthday" | "né" | "née" | "geburtsdatum"
    ) || w.starts_with("birth")
}

/// Two capitals that a note writes before a number as a measurement (`HR 72`, `RR 18`),
/// not as a region's code; none is a US state's or a Canadian province's.
const VITAL_SIGNS: [&str; 9] = ["HR", "RR", "BP", "EF", "BS", "BM", "PO", "IV", "VS"];

/// True when span `s` is a credential right after a name and its comma (`Tomás Aguirre,
/// MD`, `J. Whitfield-Osei, PA-C`): `MD` and `PA` are states' codes too, and a model took
/// them for states there. `Baltimore, MD` has no name before it.
fn credential_after_name(
    text: &str,
    idx: &CharIndex,
    s: &Span,
    name_ends: &HashSet<usize>,
) -> bool {
    let value = idx.slice(text, s.start, s.end).trim();
    let after = &text[idx.byte(s.end)..];
    let whole = if after.starts_with("-C") {
        format!("{value}-C")
    } else {
        value.replace('.', "")
    };
    if !CREDENTIALS.contains(&whole.as_str()) {
        return false;
    }
    let before = &text[..idx.byte(s.start)];
    let gap = before.len() - before.trim_end_matches([' ', ',']).len();
    let name_end = idx.char_at_byte(before.len() - gap);
    gap > 0 && name_ends.contains(&name_end)
}

/// Cleans model spans: a name never crosses a line break (`Smirnov⏎Facharzt` is split at
/// it), a name part that is protected is dropped (see the module docs), a postcode
/// needs three digits (spine levels such as `L4-L5` are not postcodes), a lowercase letter
/// alone is no place or other entity (a table cell `y` is not a country; a capital may be
/// a region's code, `Beniarbeig, A 3778`), and a vital sign's abbreviation is no state
/// (`HR 72` is a heart rate; regions of other countries have two-letter codes too); a span
/// with no letter or digit is nothing.
pub fn drop_protected(text: &str, spans: &mut Vec<Span>) {
    let idx = CharIndex::new(text);
    // Where a model name span that is itself no protected term ends: a capitalised
    // protected word one space after it is in a name position (`Janina Hartmann`, not
    // `Epley maneuver`).
    let name_ends: HashSet<usize> = spans
        .iter()
        .filter(|s| s.source == Source::Model && is_name_label(s.label))
        .filter(|s| s.end <= idx.char_len())
        .filter(|s| {
            let after: String = text[idx.byte(s.end)..].chars().take(40).collect();
            !is_protected_at(idx.slice(text, s.start, s.end), &after)
        })
        .map(|s| s.end)
        .collect();
    // Where any name span ends, for a credential after it.
    let all_name_ends: HashSet<usize> = spans
        .iter()
        .filter(|s| is_name_label(s.label))
        .map(|s| s.end)
        .collect();
    let mut out = Vec::with_capacity(spans.len());
    for s in spans.drain(..) {
        if s.source != Source::Model || s.end > idx.char_len() {
            out.push(s);
            continue;
        }
        // A model span that starts on the stop and space before its entity (`. Ingrid`
        // taken whole) starts at the entity: the stop was masked with it and two sentences
        // ran together (`in index[first_name] called`).
        let mut s = s;
        while s.start < s.end
            && idx
                .slice(text, s.start, s.start + 1)
                .chars()
                .all(|c| c.is_whitespace() || matches!(c, '.' | ',' | ';' | ':' | '!' | '?'))
        {
            s.start += 1;
        }
        if s.start == s.end {
            continue;
        }
        // The word for the patient before a name (`रोगी काव्या`: "patient Kavya") is no part
        // of it: the rules' patient field starts after it, the model took it with the name.
        if is_name_label(s.label) {
            trim_patient_word(text, &idx, &mut s);
        }
        // A part of a German doctor's degree after the title (`Dr. med. Klaus Weber`,
        // `Dr. rer. nat.`) is no name.
        if is_name_label(s.label) && degree_part(text, &idx, &s) {
            continue;
        }
        // Clinical content taken for a place, an organisation or a name (`Na 140, K 4.0`,
        // `the ICU`, `carbidopa/levodopa 25/100 TID`, `NYHA`), and an eponym's place name
        // (`Glasgow Coma Scale`, `Romberg sign`), are no one's.
        // An HL7 segment's id (`MSH|`, `ORC|`) is nobody's name or town.
        let after = &text[idx.byte(s.end)..];
        if crate::detect::rules::hl7::is_segment_id(idx.slice(text, s.start, s.end).trim(), after) {
            continue;
        }
        // A name of one or two letters is an initial (`Silke K. Loewe`), not potassium; in
        // Han or Hangul two characters are a whole word (`患者`, `환자`: "patient").
        let value = idx.slice(text, s.start, s.end);
        if in_value_chain(text, &idx, &s) {
            continue;
        }
        // A surname that is a ward's word (`Kerry Ward`) stays a name.
        let name = is_name_label(s.label)
            && (value.trim().chars().count() > 2
                || !value.is_ascii()
                || clinical().labels.contains(&value.trim().to_lowercase()))
            && !value
                .split_whitespace()
                .any(|w| PLACE_WORDS.contains(&w.to_lowercase().as_str()));
        if (place_label(s.label) || name) && (is_clinical(value) || names_a_record(value)) {
            continue;
        }
        // A record's field name taken for the name beside it (`Initials: RW. DOB 3/4/1950`
        // gave `DOB` as a surname) is nobody's name.
        if is_name_label(s.label) && in_record_field(text, &idx, &s) {
            continue;
        }
        if place_label(s.label) && followed_by_head(&text[idx.byte(s.end)..]) {
            continue;
        }
        // A number right after an analyte or a scale (`Plt 210`, `KPS 80`) is its value.
        if (place_label(s.label) || s.label == Label::Zipcode)
            && value_of_clinical_word(text, &idx, &s)
        {
            continue;
        }
        // A span with no letter and no digit (`😀😀`, a dash, a bullet) holds nothing that
        // could identify anyone.
        if !idx
            .slice(text, s.start, s.end)
            .chars()
            .any(char::is_alphanumeric)
        {
            continue;
        }
        if s.label == Label::Zipcode {
            let digits = idx
                .slice(text, s.start, s.end)
                .chars()
                .filter(char::is_ascii_digit)
                .count();
            // A tumour's stage (`T2N1M0`, `pT3N0M1`) or a coma score has a postcode's
            // letters and digits.
            if digits >= 3 && !year_not_postcode(text, &idx, &s) && !stage_or_score(text, &idx, &s)
            {
                out.push(s);
            }
            continue;
        }
        if !is_name_label(s.label) {
            let mut s = s;
            if heading_not_org(text, &idx, &s) {
                continue;
            }
            end_run_on(text, &idx, &mut s);
            // What is left once the next sentence is cut off may be clinical alone
            // (`at bedside. HCP is son …`: `bedside` was masked as an organisation).
            if place_label(s.label) && is_clinical(idx.slice(text, s.start, s.end)) {
                continue;
            }
            if matches!(s.label, Label::Date | Label::DateOfBirth) {
                trim_date_fragment(text, &idx, &mut s);
            }
            if let Some(dates) = date_list(text, &idx, &s) {
                out.extend(dates);
                continue;
            }
            let value = idx.slice(text, s.start, s.end).trim();
            let lone_letter = value.chars().count() == 1 && value.chars().all(char::is_lowercase);
            let vital_sign = s.label == Label::State && VITAL_SIGNS.contains(&value);
            // `born` alone is no date: taken as one, it hid the cue that makes the date
            // after it a birth date (`born 14 February 1931` kept its year under Safe
            // Harbor).
            let cue_only = matches!(s.label, Label::Date | Label::DateOfBirth | Label::Time)
                && value.split_whitespace().all(is_birth_cue_word);
            // A credential after a name (`Quixadale PhD`) is no organisation either, nor
            // a state (`Tomás Aguirre, MD`).
            let credential = (s.label == Label::Organization
                && CREDENTIALS.contains(&value.replace('.', "").as_str()))
                || (s.label == Label::State
                    && credential_after_name(text, &idx, &s, &all_name_ends));
            // A phone or fax number has digits (`cell` before one was taken with it).
            let no_number = matches!(s.label, Label::Phone | Label::Fax)
                && !value.chars().any(char::is_numeric);
            if !(lone_letter || vital_sign || cue_only || credential || no_number) {
                out.push(s);
            }
            continue;
        }
        // A credential after a name (`Maria Lopez, RN`) is no name of its own, nor a title
        // before one (`Rev. Thomas Brennan`).
        let value = idx.slice(text, s.start, s.end).trim().replace('.', "");
        if CREDENTIALS.contains(&value.as_str()) || TITLES.contains(&value.as_str()) {
            continue;
        }
        // One part per line and per sentence, trimmed of whitespace.
        let mut start = s.start;
        let value: Vec<char> = idx.slice(text, s.start, s.end).chars().collect();
        for (i, &c) in value.iter().enumerate() {
            let pos = s.start + i;
            // A name hyphenated over a line (`Abdul-⏎rahman`) is one name.
            let hyphenated = c == '\n' && i > 0 && value[i - 1] == '-';
            if (c == '\n' || c == '\r' || sentence_end(&value, i)) && !hyphenated {
                push_name_part(text, &idx, &s, start, pos, &name_ends, &mut out);
                start = pos + 1;
            }
        }
        push_name_part(text, &idx, &s, start, s.end, &name_ends, &mut out);
    }
    *spans = out;
}

/// True when `chars[i]` is a full stop that ends a sentence inside a model's name span
/// (`Smith. Foley catheter`): whitespace follows, and the word before it is neither an
/// initial (`J. Smith`) nor a title or suffix (`Dr.`, `St.`, `Jr.`).
fn sentence_end(chars: &[char], i: usize) -> bool {
    if chars[i] != '.' || !chars.get(i + 1).is_some_and(|c| c.is_whitespace()) {
        return false;
    }
    let start = chars[..i]
        .iter()
        .rposition(|c| !c.is_alphabetic())
        .map_or(0, |p| p + 1);
    let word: String = chars[start..i].iter().collect();
    i - start >= 2 && !TITLES.contains(&word.as_str()) && !SUFFIXES.contains(&word.as_str())
}

/// Abbreviations that end with a full stop inside a name.
const SUFFIXES: &[&str] = &["St", "Jr", "Sr", "Ste", "Mt"];

/// A model date that is a list of whole dates (`4 Mar 2021, 2021-03-04`, `03/04/21; 3/4/2021`)
/// as one span a date, so that each can be moved or cut to its year: as one, the list
/// could be neither, and was masked with its separators. `None` when `s` is no such list.
fn date_list(text: &str, idx: &CharIndex, s: &Span) -> Option<Vec<Span>> {
    if !matches!(s.label, Label::Date | Label::DateOfBirth) {
        return None;
    }
    let value = idx.slice(text, s.start, s.end);
    let mut parts = Vec::new();
    let mut at = s.start;
    for piece in value.split_inclusive([',', ';']) {
        let len = piece.chars().count();
        let body = piece.trim_end_matches([',', ';']);
        let lead = body.chars().take_while(|c| c.is_whitespace()).count();
        let trimmed = body.trim();
        let whole = crate::detect::rules::dates::DateParts::parse(trimmed)
            .is_some_and(|d| d.year.is_some() && d.day.is_some());
        if !whole {
            return None;
        }
        let start = at + lead;
        parts.push(Span {
            start,
            end: start + trimmed.chars().count(),
            ..s.clone()
        });
        at += len;
    }
    (parts.len() > 1).then_some(parts)
}

/// True for a TNM cancer stage, or a Glasgow Coma Scale score where the text says it is
/// one (`GCS E4V5M6`, `Glasgow … E3VTM5`): both have a postcode's letters and digits, and
/// a postcode of the score's shape after a town (`Moncton, NB E4V5M6`) stays a postcode.
fn stage_or_score(text: &str, idx: &CharIndex, s: &Span) -> bool {
    let value = idx.slice(text, s.start, s.end).trim();
    if tnm_stage(value) {
        return true;
    }
    if !gcs_score(value) {
        return false;
    }
    let before = &text[..idx.byte(s.start)];
    let from = before.char_indices().rev().nth(23).map_or(0, |(i, _)| i);
    let before = before[from..].to_lowercase();
    value.to_lowercase().starts_with("gcs")
        || ["gcs", "glasgow", "coma"]
            .iter()
            .any(|w| before.contains(w))
}

/// True for a Glasgow Coma Scale score by component (`E4V5M6`, `GCS E3VTM5`, `E2 V2 M4`):
/// eye 1–4, verbal 1–5 or T (intubated), motor 1–6. Written without spaces it is a
/// Canadian postcode's shape (`E4V 5M6` is one, in New Brunswick).
fn gcs_score(value: &str) -> bool {
    static GCS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)^(?:GCS[\s:=]*)?E[1-4][\s,]*V(?:[1-5]|T)[\s,]*M[1-6]$")
            .expect("a valid pattern")
    });
    GCS.is_match(value)
}

/// True for a chain of clinical values joined by slashes that no date is written as: four
/// or more fields (`7.38/42/88/24`, a blood gas's pH, pCO₂, pO₂ and HCO₃), or a decimal
/// point beside a slash (`7.38/42`).
pub(crate) fn value_chain(value: &str) -> bool {
    static CHAIN: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(?:\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?){3,}|\d+\.\d+(?:/\d+(?:\.\d+)?)+|\d+(?:/\d+)*/\d+\.\d+(?:/\d+(?:\.\d+)?)*)$")
            .expect("a valid pattern")
    });
    CHAIN.is_match(value.trim())
}

/// True for a date span inside a [`value_chain`]: the whole run of non-space characters
/// around it (less a closing stop or comma) is one, so any part of it (`42/88/24` of
/// `7.38/42/88/24`) is a value, not a date.
fn in_value_chain(text: &str, idx: &CharIndex, s: &Span) -> bool {
    if !matches!(s.label, Label::Date | Label::DateOfBirth) {
        return false;
    }
    let token = token_around(text, idx, s).trim_end_matches(['.', ',', ';', ':', ')']);
    value_chain(token.trim_start_matches('('))
}

/// The run of non-space characters that holds span `s` (any whitespace, multi-byte
/// included, ends it).
fn token_around<'t>(text: &'t str, idx: &CharIndex, s: &Span) -> &'t str {
    let (b, e) = (idx.byte(s.start), idx.byte(s.end));
    let start = text[..b]
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let end = text[e..]
        .find(char::is_whitespace)
        .map_or(text.len(), |i| e + i);
    &text[start.min(b)..end.max(e)]
}

/// True for a name span that is a record's field name, or part of one written with stops
/// (`D.O.B.`, `M.R.N.:`).
fn in_record_field(text: &str, idx: &CharIndex, s: &Span) -> bool {
    // Compared without its stops, without building a string for every name span.
    let token = token_around(text, idx, s);
    let letters = || {
        token
            .chars()
            .filter(|c| !matches!(c, '.' | ':' | ',' | ';'))
    };
    RECORD_FIELDS
        .iter()
        .chain(IDENTIFIER_NAMES)
        .any(|f| f.chars().eq(letters()))
}

/// True for a TNM cancer stage (`T2N1M0`, `pT3aN0M1`, `ypT1N0MX`).
fn tnm_stage(value: &str) -> bool {
    static TNM: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(?:[cpyra]|yp)?T(?:[0-4]|is|X)[a-d]?N[0-3X][a-c]?M[01X][a-c]?$")
            .expect("a valid pattern")
    });
    TNM.is_match(value)
}

/// A date that begins inside the word before it (`f/u 6/14` read as `/u 6/14`): the
/// fragment is no part of the date, and masked with it the text lost `/u`.
fn trim_date_fragment(text: &str, idx: &CharIndex, s: &mut Span) {
    let chars: Vec<char> = idx.slice(text, s.start, s.end).chars().collect();
    if chars.first() != Some(&'/') {
        return;
    }
    let Some(space) = chars.iter().position(|c| c.is_whitespace()) else {
        return;
    };
    let skip = space
        + chars[space..]
            .iter()
            .take_while(|c| c.is_whitespace())
            .count();
    if skip < chars.len() {
        s.start += skip;
    }
}

/// Ends `s` where it ran on past its entity (see [`run_on`]), and an organisation before
/// a connector and clinical words alone (`Mass General for ECMO`: the reason for the
/// transfer was masked with the hospital; `Hospital for Special Surgery` stays whole).
fn end_run_on(text: &str, idx: &CharIndex, s: &mut Span) {
    let chars: Vec<char> = idx.slice(text, s.start, s.end).chars().collect();
    let mut end = (1..chars.len().saturating_sub(1))
        .find(|&i| run_on(s.label, &chars, i))
        .unwrap_or(chars.len());
    if s.label == Label::Organization {
        let value: String = chars[..end].iter().collect();
        let cut = value.match_indices(' ').map(|(i, _)| i).find(|&i| {
            let rest = &value[i + 1..];
            let (word, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            CONNECTORS.contains(&word) && is_clinical(tail)
        });
        if let Some(i) = cut {
            end = value[..i].chars().count();
        }
    }
    // The sentence's own full stop, before the next sentence, is no part of the entity
    // (`ECMO. Records`); an abbreviation's is (`Inc. Boston`, `Jan. 5`).
    let next_sentence = || {
        let mut after = text[idx.byte(s.start + end)..].chars();
        after.next().is_some_and(char::is_whitespace)
            && after
                .find(|c| !c.is_whitespace())
                .is_some_and(char::is_uppercase)
    };
    if end >= 2
        && chars[end - 1] == '.'
        && sentence_label(s.label)
        && (chars[end - 2].is_ascii_digit() || !abbreviation(&chars[..end - 1]))
        && next_sentence()
    {
        end -= 1;
    }
    s.end = s.start + end;
}

/// The labels whose spans end at a sentence's stop: an address (`Jl. Merdeka No. 10`,
/// `ul. Przykładowa 12`) runs over abbreviations of every language.
fn sentence_label(label: Label) -> bool {
    matches!(
        label,
        Label::Organization
            | Label::City
            | Label::State
            | Label::Country
            | Label::Date
            | Label::DateOfBirth
            | Label::Time
    )
}

/// True when the word that ends `chars` is an abbreviation that takes a full stop: one
/// letter (`J.`), a title, a name suffix, a place or organisation abbreviation in any
/// case, glued or not (`CO.LTD.`, `BANKLTD.`, `HOLDINGSINC.`), or a month.
fn abbreviation(chars: &[char]) -> bool {
    let start = chars
        .iter()
        .rposition(|c| !c.is_alphabetic())
        .map_or(0, |p| p + 1);
    let word: String = chars[start..].iter().collect();
    let lower = word.to_lowercase();
    word.chars().count() < 2
        || TITLES.contains(&word.as_str())
        || SUFFIXES.contains(&word.as_str())
        || PLACE_ABBREVIATIONS
            .iter()
            .any(|a| a.eq_ignore_ascii_case(&word))
        || ORG_ABBREVIATIONS.iter().any(|a| {
            // Glued to a name (`LOCONDOInc`, `HoldingsInc`, `BANKLTD`), not the end of a
            // word (`Mexico`): the form starts with a capital, or the name is in capitals.
            let head = word.chars().count().saturating_sub(a.len());
            lower.ends_with(a)
                && (word.chars().nth(head).is_some_and(char::is_uppercase)
                    || word.chars().take(head).all(char::is_uppercase))
        })
        || MONTH_ABBREVIATIONS.contains(&word.as_str())
}

/// Company forms that end a name with a full stop, glued to it or not (lower case).
const ORG_ABBREVIATIONS: &[&str] = &["inc", "ltd", "corp", "co", "llc", "plc", "bros"];

/// Month abbreviations, which keep their full stop in a date (`Jan. 5`).
const MONTH_ABBREVIATIONS: &[&str] = &[
    "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec",
];

/// Cleans the rules' spans: organisation and place spans end where they ran on into the
/// next sentence (`transferred to BWH for ECMO. Records faxed`: their cues take any run of
/// capitalised words, and a word's full stop is part of a word, `St.`, `Inc.`), and a
/// tumour stage is no Canadian postcode (`T2N1M0`; the postcode is written `T2N 1M0`).
pub fn clean_rule_spans(text: &str, spans: &mut Vec<Span>) {
    let idx = CharIndex::new(text);
    spans.retain(|s| {
        s.label != Label::Zipcode || s.end > idx.char_len() || !stage_or_score(text, &idx, s)
    });
    spans.retain(|s| s.end > idx.char_len() || !in_value_chain(text, &idx, s));
    spans.retain(|s| s.end > idx.char_len() || !heading_not_org(text, &idx, s));
    // A context word's organisation or place that is a unit of the hospital (`transferred
    // from the ED`, `discharged to SNF`) is no one's.
    spans.retain(|s| {
        !matches!(s.label, Label::Organization | Label::Location)
            || s.end > idx.char_len()
            || !is_clinical(idx.slice(text, s.start, s.end))
    });
    for s in spans.iter_mut().filter(|s| {
        s.end <= idx.char_len()
            && matches!(
                s.label,
                Label::Organization | Label::City | Label::Location | Label::Country
            )
    }) {
        end_run_on(text, &idx, s);
    }
}

/// True when a model span of `label` (not a name: names are split by [`sentence_end`])
/// has run on past its entity at `chars[i]`, so that it ends there; what follows is the
/// model's run-on and is no part of the entity.
/// - A full stop after a digit, before whitespace (`08/23/2021. 97 y/o.`), for dates: run
///   on, a date swallowed the next sentence's age, and the joined span could be neither
///   moved nor cut to its year.
/// - A full stop that ends a sentence, before a capital (`BWH for ECMO. Records faxed`,
///   `Lagos. Daughter lives`): run on, the span deleted the next sentence's first words
///   with its stop. The word before the stop must be no abbreviation (`St. Patrick's`,
///   `Main St. Boston`, `Acme Inc. Boston`).
/// - A line break, for what is no place (`Name⏎Chidi`: a table's header and its first
///   row); an address runs over lines.
fn run_on(label: Label, chars: &[char], i: usize) -> bool {
    let next = chars.get(i + 1).copied().unwrap_or(' ');
    let place = matches!(
        label,
        Label::StreetAddress
            | Label::City
            | Label::State
            | Label::Zipcode
            | Label::Country
            | Label::Location
    );
    let date = matches!(label, Label::Date | Label::DateOfBirth | Label::Time);
    match chars[i] {
        '\n' | '\r' => !place,
        '.' if date && chars[i - 1].is_ascii_digit() && next.is_whitespace() => true,
        '.' if next.is_whitespace() && sentence_label(label) => {
            let capital = chars[i + 1..]
                .iter()
                .find(|c| !c.is_whitespace())
                .is_some_and(|c| c.is_uppercase());
            capital && !abbreviation(&chars[..i])
        }
        _ => false,
    }
}

/// Abbreviations that end with a full stop inside an address or an organisation's name.
const PLACE_ABBREVIATIONS: &[&str] = &[
    "Ave", "Blvd", "Rd", "Ln", "Dr", "Hwy", "Pkwy", "Ct", "Pl", "Sq", "Apt", "Bldg", "Fl", "Rm",
    "Inc", "Corp", "Co", "Ltd", "LLC", "Bros", "Assn", "Assoc", "Dept", "Univ", "Hosp", "Ctr",
    "Med", "Inst", "Natl", "Intl", "Mass", "Calif", "Penn", "Wash", "Conn", "Mich", "Minn", "Wis",
    "Ariz", "Colo", "Fla", "Ga", "Ill", "Ind", "Kan", "Ky", "La", "Md", "Mo", "Mont", "Neb", "Nev",
    "Okla", "Ore", "Pa", "Tenn", "Tex", "Va", "Vt", "Wyo", "No", "Nos", "Ord",
];

/// True for a model postcode that is a bare year (`1998`, `2021`) after a lowercase word
/// or at a sentence position (`in 1998`, `since 2021`): postcodes follow a place name, a
/// region code or a comma, which are capitalised or punctuation.
fn year_not_postcode(text: &str, idx: &CharIndex, s: &Span) -> bool {
    let value = idx.slice(text, s.start, s.end);
    let year_like = value.len() == 4
        && value.chars().all(|c| c.is_ascii_digit())
        && (value.starts_with("19") || value.starts_with("20"));
    if !year_like {
        return false;
    }
    let before = text[..idx.byte(s.start)].trim_end();
    match before.chars().next_back() {
        None => true,
        Some(c) if c.is_lowercase() => true,
        Some(c) => matches!(c, '(' | '/' | '-' | '–'),
    }
}

/// Pushes the part `start..end` of the model name span `s` unless it is blank or protected.
/// A protected word in a person's position (after a title, or one space after another name
/// span) is a surname unless a clinical head noun follows it.
fn push_name_part(
    text: &str,
    idx: &CharIndex,
    s: &Span,
    start: usize,
    end: usize,
    name_ends: &HashSet<usize>,
    out: &mut Vec<Span>,
) {
    let part = idx.slice(text, start, end);
    let lead = part.chars().take_while(|c| c.is_whitespace()).count();
    let trail = part.chars().rev().take_while(|c| c.is_whitespace()).count();
    let (start, end) = (start + lead, end.saturating_sub(trail));
    if start >= end {
        return;
    }
    let after: String = text[idx.byte(end)..].chars().take(40).collect();
    let value = idx.slice(text, start, end);
    // One capitalised word before a clinical head noun is an eponymous term (`Foley
    // catheter`, `Bell palsy`) unless a title makes it a person (`Dr. Foley's catheter`).
    let before = &text[..idx.byte(start)];
    let eponym =
        !value.contains(char::is_whitespace) && followed_by_head(&after) && !after_title(before);
    let person = !followed_by_head(&after)
        && value.starts_with(char::is_uppercase)
        && (after_title(before)
            || (start > 0
                && name_ends.contains(&(start - 1))
                && before.ends_with([' ', '\t'])
                && !before[..before.len() - 1].ends_with(char::is_whitespace)));
    if !eponym && (person || !is_protected_at(value, &after)) {
        out.push(Span::new(start, end, s.label, s.score, s.source));
    }
}

/// Personal titles, as written before a name (without the full stop): the name heuristics
/// anchor on them and [`after_title`] reads them.
pub(crate) const TITLES: &[&str] = &[
    "Dr",
    "Mr",
    "Mrs",
    "Ms",
    "Mx",
    "Miss",
    "Prof",
    "Sr",
    "Sra",
    "Srta",
    "Dra",
    "Herr",
    "Frau",
    "Mme",
    "Mlle",
    "Doctor",
    "Professor",
    "Sir",
    "Dame",
    "Rev",
    "Revd",
    "Pastor",
    "Rabbi",
    "Imam",
    // Honorifics of scripts without letter case, where a capital cannot mark a name and
    // the title is the only cue (Devanagari, Bengali and Assamese, Gujarati, Gurmukhi,
    // Odia, Tamil, Telugu, Kannada, Malayalam, Arabic, Urdu, Persian, Hebrew, Amharic).
    "श्री",
    "श्रीमती",
    "श्रीमान",
    "सुश्री",
    "कुमारी",
    "कु",
    "डॉ",
    "শ্রী",
    "শ্রীমতী",
    "শ্ৰী",
    "শ্ৰীমতী",
    "ডাঃ",
    "શ્રી",
    "શ્રીમતી",
    "ਸ਼੍ਰੀ",
    "ਸ੍ਰੀ",
    "ਸ਼੍ਰੀਮਤੀ",
    "ਸ੍ਰੀਮਤੀ",
    "ਬੀਬੀ",
    // Sardar, written as its first letter with a full stop (`ਸ. ਜੱਸਪ੍ਰੀਤ ਸਿੰਘ`).
    "ਸ",
    "ଶ୍ରୀ",
    "ଶ୍ରୀମତୀ",
    "திரு",
    "திருமதி",
    "செல்வி",
    "శ్రీ",
    "శ్రీమతి",
    "ಶ್ರೀ",
    "ಶ್ರೀಮತಿ",
    "ശ്രീ",
    "ശ്രീമതി",
    "جناب",
    "محترمہ",
    "محترم",
    "السيد",
    "السيدة",
    "آقای",
    "خانم",
    "מר",
    "גברת",
    "አቶ",
    "ወይዘሮ",
    // Doctor, and the short married woman's title, in the same scripts.
    "सौ",
    "डॉक्टर",
    "ডা",
    "ডাক্তার",
    "ડૉ",
    "ଡା",
    "டாக்டர்",
    "డా",
    "డాక్టర్",
    "ಡಾ",
    "ഡോ",
    "ഡോക്ടർ",
    "ڈاکٹر",
    "ወ/ሮ",
    "ዶ/ር",
];

/// The word for the patient in scripts without letter case, as written before the
/// patient's name (`रोगी आरव शर्मा`, `المريض كريم حسن`).
pub(crate) const PATIENT_WORDS: &[&str] = &[
    "रोगी",
    "मरीज़",
    "मरीज",
    // Punjabi, with its nukta apart as every view has it (NFKC never composes `ਜ਼`).
    "ਮਰੀਜ\u{0A3C}",
    "रुग्ण",
    "রোগী",
    "நோயாளர்",
    "நோயாளி",
    "രോഗി",
    "రోగి",
    "ರೋಗಿ",
    "مریض",
    "المريض",
    "بیمار",
    "החולה",
];

/// The parts of a German or Austrian doctor's degree written after `Dr.` or `Prof.`, each
/// with its stop (`Dr. med.`, `Dr. med. dent.`, `Dr. rer. nat.`, `Prof. Dr. med. habil.`).
const DEGREE_PARTS: &[&str] = &[
    "med", "dent", "vet", "rer", "nat", "pol", "soc", "oec", "phil", "jur", "theol", "habil",
    "univ", "sc", "techn", "ing",
];

/// True for a name span that is one of [`DEGREE_PARTS`] with its stop, right after a title
/// or another such part (`Dr. med.`, `Dr. rer. nat.`).
fn degree_part(text: &str, idx: &CharIndex, s: &Span) -> bool {
    let value = idx.slice(text, s.start, s.end);
    let before = &text[..idx.byte(s.start)];
    let after = &text[idx.byte(s.end)..];
    if !(DEGREE_PARTS.contains(&value) && after.starts_with('.')) {
        return false;
    }
    let mut head = before.trim_end();
    // Other parts before this one (`rer.` before `nat.`), then the title.
    while let Some(rest) = head.strip_suffix('.') {
        let word_start = rest.rfind(|c: char| !c.is_alphabetic()).map_or(0, |i| {
            i + rest[i..].chars().next().map_or(1, char::len_utf8)
        });
        if !DEGREE_PARTS.contains(&&rest[word_start..]) {
            break;
        }
        head = rest[..word_start].trim_end();
    }
    after_title(head)
}

/// Moves a name span's start past a leading word for the patient ([`PATIENT_WORDS`]) and the
/// space after it, when a name is left.
fn trim_patient_word(text: &str, idx: &CharIndex, s: &mut Span) {
    let value = idx.slice(text, s.start, s.end);
    let Some((first, rest)) = value.split_once(char::is_whitespace) else {
        return;
    };
    let name = rest.trim_start();
    if PATIENT_WORDS.contains(&first) && !name.is_empty() {
        s.start += value[..value.len() - name.len()].chars().count();
    }
}

/// True when the text before a word ends in a personal title (`Dr.`, `Mrs `, `Prof.`).
pub(crate) fn after_title(before: &str) -> bool {
    let word = before
        .trim_end()
        .trim_end_matches('.')
        .rsplit(|c: char| !c.is_alphabetic())
        .next()
        .unwrap_or("");
    TITLES.contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model span over the `nth` occurrence of `word` in `text`.
    fn model_span(text: &str, word: &str, nth: usize, label: Label) -> Span {
        let b = text.match_indices(word).nth(nth).expect("in the text").0;
        let start = text[..b].chars().count();
        Span::new(
            start,
            start + word.chars().count(),
            label,
            0.9,
            Source::Model,
        )
    }

    /// What `drop_protected` keeps of `spans`, as text.
    fn kept_after_drop(text: &str, mut spans: Vec<Span>) -> Vec<&str> {
        drop_protected(text, &mut spans);
        let idx = CharIndex::new(text);
        spans
            .iter()
            .map(|s| idx.slice(text, s.start, s.end))
            .collect()
    }

    #[test]
    fn a_degree_after_the_title_is_no_name_but_the_name_after_it_is() {
        let text = "Seen by Dr. med. Klaus Weber and Prof. Dr. rer. nat. Jana Med. Dr. Med.";
        let spans = vec![
            model_span(text, "med", 0, Label::FirstName),
            model_span(text, "Klaus", 0, Label::FirstName),
            model_span(text, "nat", 0, Label::FirstName),
            model_span(text, "Jana", 0, Label::FirstName),
            model_span(text, "Med", 0, Label::LastName),
            model_span(text, "Med", 1, Label::LastName),
        ];
        // `Jana Med.` is a surname; the last `Med` follows a title but is no degree part
        // written in lowercase.
        assert_eq!(
            kept_after_drop(text, spans),
            ["Klaus", "Jana", "Med", "Med"]
        );
    }

    #[test]
    fn the_word_for_the_patient_is_no_part_of_the_name_after_it() {
        let text = "रोगी काव्या शर्मा, उम्र 34 वर्ष। रोगी ठीक है।";
        let spans = vec![
            model_span(text, "रोगी काव्या", 0, Label::FirstName),
            model_span(text, "शर्मा", 0, Label::LastName),
        ];
        assert_eq!(kept_after_drop(text, spans), ["काव्या", "शर्मा"]);
    }

    #[test]
    fn a_bare_year_is_not_a_postcode_but_a_postcode_after_a_region_is() {
        let text = "moved here in 2019. Glenelg SA 5045; since 2021";
        let mut spans = vec![
            Span::new(14, 18, Label::Zipcode, 0.9, Source::Model),
            Span::new(31, 35, Label::Zipcode, 0.9, Source::Model),
            Span::new(43, 47, Label::Zipcode, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let kept: Vec<usize> = spans.iter().map(|s| s.start).collect();
        assert_eq!(kept, [31]);
    }

    /// A number after a label word (`Pt`, `Nambari`: "number") taken for a postcode is
    /// kept: no analyte's value. After an analyte it is dropped (`Plt 210`).
    #[test]
    fn a_number_after_a_label_word_is_no_analytes_value() {
        assert!(clinical().labels.contains("pt") && clinical().labels.contains("nambari"));
        assert!(!clinical().labels.contains("icu"));
        let text = "Pt 48213 seen. Nambari 55213. Plt 21000";
        let spans = ["48213", "55213", "21000"]
            .map(|n| model_span(text, n, 0, Label::Zipcode))
            .to_vec();
        assert_eq!(kept_after_drop(text, spans), ["48213", "55213"]);
    }

    /// A credential after a name is no state (`Tomás Aguirre, MD`, `J. Whitfield-Osei,
    /// PA-C`), a state after a town is (`Baltimore, MD`); a phone without a digit is
    /// none (`cell`); `Pt` is no given name.
    #[test]
    fn credentials_words_and_label_abbreviations_are_not_entities() {
        let text = "Resident: Tomás Aguirre, MD. Signed: J. Whitfield-Osei, PA-C. \
                    Lives in Baltimore, MD. Daughter (cell 319.555.0147). Pt reports pain.";
        let spans = vec![
            model_span(text, "Aguirre", 0, Label::LastName),
            model_span(text, "MD", 0, Label::State),
            model_span(text, "Whitfield-Osei", 0, Label::LastName),
            model_span(text, "PA", 0, Label::State),
            model_span(text, "Baltimore", 0, Label::City),
            model_span(text, "MD", 1, Label::State),
            model_span(text, "cell", 0, Label::Phone),
            model_span(text, "319.555.0147", 0, Label::Phone),
            model_span(text, "Pt", 0, Label::FirstName),
        ];
        assert_eq!(
            kept_after_drop(text, spans),
            [
                "Aguirre",
                "Whitfield-Osei",
                "Baltimore",
                "MD",
                "319.555.0147"
            ]
        );
    }

    /// A title a model took for a given name is none (`Rev. Thomas Brennan`).
    #[test]
    fn a_title_is_no_given_name() {
        let text = "Contact: Rev. Thomas Brennan.";
        let spans = vec![
            model_span(text, "Rev", 0, Label::FirstName),
            model_span(text, "Thomas Brennan", 0, Label::LastName),
        ];
        assert_eq!(kept_after_drop(text, spans), ["Thomas Brennan"]);
    }

    /// A discharge summary's heading is no hospital (`Brief Hospital Course:`), and a
    /// social worker's credential is no name (`SW (Kathleen)`).
    #[test]
    fn a_heading_and_a_role_are_not_entities() {
        let text = "Brief Hospital Course: seen by SW (Kathleen). Moved to Mercy Hospital today.";
        let spans = vec![
            model_span(text, "Brief Hospital", 0, Label::Organization),
            model_span(text, "SW", 0, Label::FirstName),
            model_span(text, "Kathleen", 0, Label::FirstName),
            model_span(text, "Mercy Hospital", 0, Label::Organization),
        ];
        assert_eq!(kept_after_drop(text, spans), ["Kathleen", "Mercy Hospital"]);
        let mut rules: Vec<Span> = ["Brief Hospital", "Mercy Hospital"]
            .map(|w| {
                let m = model_span(text, w, 0, Label::Organization);
                Span::new(m.start, m.end, m.label, 0.8, Source::Rule)
            })
            .to_vec();
        clean_rule_spans(text, &mut rules);
        assert_eq!(rules.len(), 1);
        assert_eq!(&text[rules[0].start..rules[0].end], "Mercy Hospital");
    }

    /// A place that runs on into the next sentence and is clinical once cut there is
    /// dropped (`at bedside. HCP`).
    #[test]
    fn a_place_cut_at_its_sentence_end_may_be_clinical() {
        let text = "Daughter at bedside. HCP is son Michael.";
        let spans = vec![model_span(text, "bedside. HCP", 0, Label::Organization)];
        assert!(kept_after_drop(text, spans).is_empty());
    }

    /// The name of an identifier a model took for a name or a place is dropped; the number
    /// after it is kept, and no clinical word makes it a value to keep (`Aadhaar`,
    /// `kimlik` were clinical words, so a number after them taken for a postcode was
    /// dropped).
    #[test]
    fn the_name_of_an_identifier_is_no_name_but_its_number_stays() {
        let text = "PESEL 44051401359, ABHA 12345, Aadhaar 56789, NHIF nambari 246813579";
        let spans = vec![
            model_span(text, "PESEL", 0, Label::LastName),
            model_span(text, "44051401359", 0, Label::IdNum),
            model_span(text, "ABHA", 0, Label::City),
            model_span(text, "12345", 0, Label::Zipcode),
            model_span(text, "Aadhaar", 0, Label::FirstName),
            model_span(text, "56789", 0, Label::Zipcode),
            model_span(text, "NHIF nambari", 0, Label::City),
            model_span(text, "246813579", 0, Label::IdNum),
        ];
        assert_eq!(
            kept_after_drop(text, spans),
            ["44051401359", "12345", "56789", "246813579"]
        );
    }

    /// Clinical content a model took for a place, organisation or name is dropped; real
    /// places and names beside clinical words are kept.
    #[test]
    fn clinical_content_is_no_place_organisation_or_name() {
        for v in [
            "Na 140, K 4.0",
            "Hgb 10.4, Plt 210",
            "the ICU",
            "cardiology clinic",
            "carbidopa/levodopa 25/100 TID",
            "NYHA class II",
            "methimazole",
            "HFrEF",
            "Nota sintética",
            "रोगी",
            "Nambari",
        ] {
            assert!(is_clinical(v), "{v}");
        }
        for v in [
            "Mayo Clinic",
            "Unit 4B",
            "Wells",
            "Toledo",
            "140",
            "Portland, OR",
            "the",
            "Aki",
            "Pomáz, PE",
            "रोगी अनिता",
        ] {
            assert!(!is_clinical(v), "{v}");
        }
        let text =
            "Na 140, K 4.0. Moved to Toledo. Glasgow Coma Scale 15. Lives in Glasgow. Plt 210";
        let mut spans = vec![
            Span::new(0, 13, Label::StreetAddress, 0.9, Source::Model),
            Span::new(77, 80, Label::Zipcode, 0.9, Source::Model),
            Span::new(24, 30, Label::City, 0.9, Source::Model),
            Span::new(32, 39, Label::City, 0.9, Source::Model),
            Span::new(64, 71, Label::City, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let kept: Vec<usize> = spans.iter().map(|s| s.start).collect();
        assert_eq!(kept, [24, 64]);
    }

    /// An organisation ends before a connector and clinical words alone: the reason for a
    /// transfer is no part of the hospital; a name that goes on in other words stays whole.
    #[test]
    fn an_organisation_ends_before_what_the_patient_was_sent_for() {
        let text = "From Mass General for ECMO. To Hospital for Special Surgery for rehab.";
        let mut spans = vec![
            Span::new(5, 26, Label::Organization, 0.9, Source::Model),
            Span::new(31, 69, Label::Organization, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let kept: Vec<&str> = spans.iter().map(|s| &text[s.start..s.end]).collect();
        assert_eq!(kept, ["Mass General", "Hospital for Special Surgery"]);
    }

    /// A label word of two Han or Hangul characters taken for a name is dropped, as a longer
    /// one is; a two-letter Latin name stays (an initial, not the analyte).
    #[test]
    fn a_two_character_label_word_is_no_name_and_a_latin_initial_stays() {
        let text = "환자: 김민준; 患者: 王芳; Silke K. Loewe";
        let mut spans = vec![
            Span::new(0, 2, Label::FirstName, 0.9, Source::Model),
            Span::new(4, 7, Label::Person, 0.9, Source::Model),
            Span::new(9, 11, Label::FirstName, 0.9, Source::Model),
            Span::new(23, 24, Label::MiddleName, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let kept: Vec<usize> = spans.iter().map(|s| s.start).collect();
        assert_eq!(kept, [4, 23]);
    }

    /// A model span starting on the stop before its entity starts at the entity, and an
    /// HL7 segment's id is nobody's.
    #[test]
    fn a_leading_stop_is_no_part_of_an_entity_and_a_segment_id_is_nobody() {
        let text = "in index. Ingrid called.\nMSH|^~\\&|EPIC";
        let mut spans = vec![
            Span::new(8, 16, Label::Organization, 0.9, Source::Model),
            Span::new(25, 28, Label::LastName, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let kept: Vec<(usize, usize)> = spans.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(kept, [(10, 16)]);
    }

    #[test]
    fn a_head_noun_makes_any_eponym_a_term_and_a_title_makes_it_a_person() {
        assert!(followed_by_head(" catheter was placed"));
        assert!(followed_by_head("'s palsy"));
        assert!(!followed_by_head(" agreed"));
        assert!(!followed_by_head("son is here"));
        let text = "Foley catheter placed; Dr. Foley reviewed. Bell palsy.";
        let mut spans = vec![
            Span::new(0, 5, Label::LastName, 0.9, Source::Model),
            Span::new(27, 32, Label::LastName, 0.9, Source::Model),
            Span::new(43, 47, Label::LastName, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let kept: Vec<usize> = spans.iter().map(|s| s.start).collect();
        assert_eq!(kept, [27]);
    }

    #[test]
    fn eponyms_and_drugs_are_protected_with_possessives() {
        for w in [
            "Parkinson",
            "Hodgkin",
            "crohn's",
            "Alzheimer’s",
            "Keppra",
            "Coumadin",
            "Legionnaires'",
        ] {
            assert!(is_protected(w), "{w}");
        }
        for w in ["Davis", "Renée", "", "Parkinson Smith", "Bishop"] {
            assert!(!is_protected(w), "{w}");
        }
        assert!(is_protected_at("Bishop", " score 6"));
        assert!(is_protected_at("Wilson", "'s disease"));
        assert!(!is_protected_at("Wilson", ", who agrees"));
    }

    #[test]
    fn only_model_name_spans_are_dropped() {
        let text = "Hodgkin lymphoma; Dr. Hodgkin; Hodgkin";
        let mut spans = vec![
            Span::new(0, 7, Label::LastName, 0.9, Source::Model),
            Span::new(22, 29, Label::LastName, 0.8, Source::Rule),
            Span::new(31, 38, Label::City, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].source, Source::Rule);
        assert_eq!(spans[1].label, Label::City);
    }

    #[test]
    fn a_protected_word_after_a_model_name_is_a_surname_unless_a_term_follows() {
        let text = "Mr. Janina Hartmann; Janina Hartmann procedure; Epley Hartmann";
        let mut spans = vec![
            Span::new(4, 10, Label::FirstName, 0.9, Source::Model),
            Span::new(11, 19, Label::LastName, 0.9, Source::Model),
            Span::new(21, 27, Label::FirstName, 0.9, Source::Model),
            Span::new(28, 36, Label::LastName, 0.9, Source::Model),
            Span::new(48, 53, Label::FirstName, 0.9, Source::Model),
            Span::new(54, 62, Label::LastName, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let kept: Vec<(usize, usize)> = spans.iter().map(|s| (s.start, s.end)).collect();
        // `Hartmann` before `procedure` is the procedure; `Epley` is a term, so nothing
        // after it stands in a name position.
        assert_eq!(kept, vec![(4, 10), (11, 19), (21, 27)]);
    }

    #[test]
    fn model_names_split_at_a_sentence_end_but_not_after_an_initial_or_title() {
        let text = "Dr. Smith. Foley catheter in. J. Smith. Dr. Lee";
        let mut spans = vec![
            Span::new(4, 16, Label::LastName, 0.9, Source::Model),
            Span::new(30, 38, Label::Person, 0.9, Source::Model),
            Span::new(40, 47, Label::Person, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let got: Vec<(usize, usize)> = spans.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(got, vec![(4, 9), (30, 38), (40, 47)]);
    }

    #[test]
    fn model_names_split_at_line_breaks_and_spine_levels_are_not_postcodes() {
        let text = "Smirnov\nFacharzt\nL4-L5 and 90210";
        let mut spans = vec![
            Span::new(0, 16, Label::LastName, 0.9, Source::Model),
            Span::new(17, 22, Label::Zipcode, 0.9, Source::Model),
            Span::new(27, 32, Label::Zipcode, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let got: Vec<(usize, usize)> = spans.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(got, vec![(0, 7), (27, 32)]);
    }

    #[test]
    fn a_lowercase_letter_is_no_place_and_a_vital_sign_is_no_state() {
        let text = "y | HR 72 | Austin, TX | Telc, VY 588 | I | Beniarbeig, A 3778";
        let mut spans = vec![
            Span::new(0, 1, Label::Country, 0.9, Source::Model),
            Span::new(4, 6, Label::State, 0.9, Source::Model),
            Span::new(20, 22, Label::State, 0.9, Source::Model),
            Span::new(31, 33, Label::State, 0.9, Source::Model),
            Span::new(40, 41, Label::FirstName, 0.9, Source::Model),
            Span::new(56, 57, Label::State, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let got: Vec<(usize, usize)> = spans.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(got, vec![(20, 22), (31, 33), (40, 41), (56, 57)]);
    }

    #[test]
    fn a_span_of_no_letter_or_digit_is_nothing() {
        let text = "Mood 😀😀 — Zed";
        let mut spans = vec![
            Span::new(5, 7, Label::FirstName, 0.9, Source::Model),
            Span::new(8, 9, Label::LastName, 0.9, Source::Model),
            Span::new(10, 13, Label::FirstName, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let got: Vec<(usize, usize)> = spans.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(got, vec![(10, 13)]);
    }

    /// Model spans over `parts` (each at its first place in `text`), cleaned by
    /// [`drop_protected`]: the texts of what is left.
    fn cleaned<'a>(text: &'a str, parts: &[(&str, Label)]) -> Vec<&'a str> {
        let at = |s: &str| text[..text.find(s).expect("in text")].chars().count();
        let mut spans: Vec<Span> = parts
            .iter()
            .map(|&(s, label)| {
                Span::new(at(s), at(s) + s.chars().count(), label, 0.9, Source::Model)
            })
            .collect();
        drop_protected(text, &mut spans);
        let idx = CharIndex::new(text);
        spans
            .iter()
            .map(|s| idx.slice(text, s.start, s.end))
            .collect()
    }

    #[test]
    fn a_date_ends_at_a_full_stop_after_a_digit() {
        let text = "seen on 08/23/2021. 97 y/o; Jan. 5, 2021";
        let mut spans = vec![
            Span::new(8, 22, Label::Date, 0.9, Source::Model),
            Span::new(29, 40, Label::Date, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let got: Vec<(usize, usize)> = spans.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(got, vec![(8, 18), (29, 40)]);
    }

    /// `for ECMO` goes too: what the patient was sent for is no part of the hospital
    /// ([`end_run_on`]).
    #[test]
    fn a_span_that_ran_on_into_the_next_sentence_or_line_ends_at_its_stop() {
        let text = "to BWH for ECMO. Records; in Lagos. Daughter; St. Patrick's Church; \
                    12 Main St. Boston; Acme Inc. of Ohio; Name\nChidi; 12 Elm Rd\nBoston";
        let got = cleaned(
            text,
            &[
                ("BWH for ECMO. Records", Label::Organization),
                ("Lagos. Daughter", Label::City),
                ("St. Patrick's Church", Label::Organization),
                ("12 Main St. Boston", Label::StreetAddress),
                ("Acme Inc. of Ohio", Label::Organization),
                ("Name\nChidi", Label::Organization),
                ("12 Elm Rd\nBoston", Label::StreetAddress),
            ],
        );
        assert_eq!(
            got,
            [
                "BWH",
                "Lagos",
                "St. Patrick's Church",
                "12 Main St. Boston",
                "Acme Inc. of Ohio",
                "Name",
                "12 Elm Rd\nBoston"
            ]
        );
    }

    #[test]
    fn a_tumour_stage_is_no_postcode_and_a_name_hyphenated_over_a_line_is_one() {
        let text = "staging T2N1M0, Mr. Abdul-\nrahman Al-Farsi";
        let got = cleaned(
            text,
            &[
                ("T2N1M0", Label::Zipcode),
                ("Abdul-\nrahman Al-Farsi", Label::LastName),
            ],
        );
        assert_eq!(got, ["Abdul-\nrahman Al-Farsi"]);
        let text = "f/u 6/14 in clinic";
        assert_eq!(cleaned(text, &[("/u 6/14", Label::Date)]), ["6/14"]);
    }

    /// A Glasgow Coma Scale score is no Canadian postcode, whoever found it; a postcode
    /// with its space, or with letters a score cannot have, stays one.
    #[test]
    fn a_coma_score_is_no_postcode() {
        for v in ["E4V5M6", "GCS E4V5M6", "E3VTM5", "GCS: E2 V2 M4", "e4v5m6"] {
            assert!(gcs_score(v), "{v}");
        }
        for v in ["E4V 5M6", "M5V2T6", "T2N 1M0", "E5V5M6", "K1A0B1"] {
            assert!(!gcs_score(v), "{v}");
        }
        let text = "GCS E4V5M6 on arrival; mail to Toronto M5V 2T6.";
        let got = cleaned(
            text,
            &[("GCS E4V5M6", Label::Zipcode), ("M5V 2T6", Label::Zipcode)],
        );
        assert_eq!(got, ["M5V 2T6"]);
        let postcode = text.find("M5V").expect("in the text");
        let mut spans = vec![
            Span::new(0, 10, Label::Zipcode, 0.9, Source::Model),
            Span::new(postcode, postcode + 7, Label::Zipcode, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        assert_eq!(
            spans.iter().map(|s| s.start).collect::<Vec<_>>(),
            [postcode]
        );
        // Without a word that says it is a score, the shape is a postcode's.
        let text = "Lives in Moncton, NB E4V5M6. Neuro: GCS 14 (E4V4M6).";
        let got = cleaned(
            text,
            &[("E4V5M6", Label::Zipcode), ("E4V4M6", Label::Zipcode)],
        );
        assert_eq!(got, ["E4V5M6"]);
    }

    /// A record's field name is no name; a name beside it stays one.
    #[test]
    fn a_record_field_is_no_name() {
        let text = "Initials: RW. DOB 3/4/1950. Dob Smith seen. D.O.B. 3/4/1950";
        let dob = text.find("DOB").expect("in the text");
        let smith = text.find("Dob Smith").expect("in the text");
        let dotted = text.find("D.O.B.").expect("in the text");
        let mut spans = vec![
            Span::new(dob, dob + 3, Label::LastName, 0.9, Source::Model),
            Span::new(smith, smith + 9, Label::Person, 0.9, Source::Model),
            Span::new(dotted, dotted + 1, Label::FirstName, 0.9, Source::Model),
            Span::new(dotted + 2, dotted + 3, Label::LastName, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        assert_eq!(spans.iter().map(|s| s.start).collect::<Vec<_>>(), [smith]);
    }

    /// A blood gas or another chain of values joined by slashes is no date; dates with
    /// slashes stay dates.
    #[test]
    fn a_chain_of_values_is_no_date() {
        for v in [
            "7.38/42/88/24",
            "7.38/42",
            "120/80/72/18",
            "12/4.5/30",
            " 7.4/40/90 ",
        ] {
            assert!(value_chain(v), "{v}");
        }
        for v in ["3/4/2024", "12/25", "2024/03/04", "3.4.2024", "7.38", "3/4"] {
            assert!(!value_chain(v), "{v}");
        }
        let text = "ABG 7.38/42/88/24 on RA; seen 3/4/2024.";
        let mut spans = vec![
            Span::new(4, 17, Label::Date, 0.8, Source::Model),
            Span::new(30, 38, Label::Date, 0.8, Source::Model),
        ];
        drop_protected(text, &mut spans);
        assert_eq!(spans.iter().map(|s| s.start).collect::<Vec<_>>(), [30]);
        // A part of the chain, found by a model or a rule, is no date either.
        let got = cleaned(
            text,
            &[("42/88/24", Label::Date), ("3/4/2024", Label::Date)],
        );
        assert_eq!(got, ["3/4/2024"]);
        let mut spans = vec![Span::new(9, 17, Label::Date, 0.8, Source::Model)];
        drop_protected(text, &mut spans);
        assert!(spans.is_empty());
        // Whatever the spaces around it (a no-break space is two bytes).
        let text = "ABG\u{a0}7.38/42/88/24\u{2003}on RA";
        let got = cleaned(text, &[("7.38/42/88/24", Label::Date)]);
        assert!(got.is_empty());
    }

    #[test]
    fn a_list_of_dates_is_one_span_a_date() {
        let text = "Visits: 4 Mar 2021, 2021-03-04; 03/04/21, then March 4, 2021.";
        let got = cleaned(
            text,
            &[
                ("4 Mar 2021, 2021-03-04; 03/04/21", Label::Date),
                ("March 4, 2021", Label::Date),
            ],
        );
        assert_eq!(
            got,
            ["4 Mar 2021", "2021-03-04", "03/04/21", "March 4, 2021"]
        );
    }

    #[test]
    fn a_company_form_keeps_its_stop_and_an_address_its_abbreviations() {
        let text = "at Sompo HoldingsInc. Boston; TOKYO KEIKI INC. In; Mexico. Daughter; \
                    Jl. Merdeka No. 10";
        let got = cleaned(
            text,
            &[
                ("Sompo HoldingsInc.", Label::Organization),
                ("TOKYO KEIKI INC.", Label::Organization),
                ("Mexico.", Label::Country),
                ("Jl. Merdeka No. 10", Label::StreetAddress),
            ],
        );
        assert_eq!(
            got,
            [
                "Sompo HoldingsInc.",
                "TOKYO KEIKI INC.",
                "Mexico",
                "Jl. Merdeka No. 10"
            ]
        );
    }

    #[test]
    fn a_birth_cue_is_no_date_and_a_credential_no_organisation() {
        let text = "Quixadale PhD, born 14 February 1931; DOB: 1931";
        let mut spans = vec![
            Span::new(10, 13, Label::Organization, 0.9, Source::Model),
            Span::new(15, 19, Label::Date, 0.9, Source::Model),
            Span::new(20, 36, Label::Date, 0.9, Source::Model),
            Span::new(38, 42, Label::DateOfBirth, 0.9, Source::Model),
            Span::new(44, 48, Label::Date, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let got: Vec<(usize, usize)> = spans.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(got, vec![(20, 36), (44, 48)]);
    }

    #[test]
    fn a_credential_after_a_name_is_no_name() {
        let text = "Maria Lopez, RN; D. Kim, M.D.";
        let mut spans = vec![
            Span::new(0, 11, Label::Person, 0.9, Source::Model),
            Span::new(13, 15, Label::FirstName, 0.9, Source::Model),
            Span::new(17, 23, Label::Person, 0.9, Source::Model),
            Span::new(25, 29, Label::FirstName, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        let got: Vec<(usize, usize)> = spans.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(got, vec![(0, 11), (17, 23)]);
    }
}
