//! Identifiers after their field names: `Rx #`, `Specimen:`, `Accession:`, `Acct:`,
//! `Registration number:`, `Member ID`, `Serial no.` and a bare `#`.
//!
//! Record, account, licence, plan, device and vehicle numbers have no shape of their own;
//! the field name before them is the evidence, and it also says which label the value
//! gets ([`FIELDS`]). The value is one token with digits, or spaced groups in the shape of
//! an IBAN (`DE29 7798 0816 …`).
//!
//! Without a field name, a token is still an identifier by its shape alone
//! ([`Identifiers::by_shape`]): seven or more digits (`8001015009087`, `804.536.729-65`,
//! `2467 7832 5484`), five or more digits among capital letters (`Z8939936W`,
//! `BON-765432109`), or a UK National Insurance number (`QQ 12 34 56 C`). Field names are
//! written in every language (`Aadhaar`, `CPF`, `BSN`, `Steuer-ID`) and a list of them is
//! never complete; the shape is. What else a clinical note writes with that many digits is
//! a decimal, a range of years, an amount of money or a count with its unit (`1500000
//! copies/mL`), and those are left alone. A phone number or a date of the same shape keeps
//! its own label: `ID_NUM` is the generic label and loses to any specific one when spans
//! merge.

use regex::Regex;

use super::super::{re, ByteSpan, STRONG, WEAK};
use super::cues::{trim_punct, Cue};
use crate::detect::protected::IDENTIFIER_NAMES;
use crate::detect::Label;

/// A free-form identifier after a bare `#` (`#A-20331`, `order #88412`).
pub(super) const AFTER_HASH: &[Cue] = &[Cue::new(
    r"(?:^|[\s(])#[ \t]*([A-Za-z0-9-]*\d[A-Za-z0-9-]{3,})",
    Label::IdNum,
    WEAK,
)];

/// Field names (a regex alternation) and the label of the value after them.
pub(super) struct Field {
    pub(super) words: &'static str,
    pub(super) label: Label,
}

/// The field names, by the label their value gets.
pub(super) const FIELDS: &[Field] = &[
    Field {
        words: r"id|identifier|identification|rx|prescription|script|specimen|accession|acc|order|requisition|req|lab|case|encounter|visit|claim|ref|reference|sample|barcode|study|report|ticket|confirmation|workstation|station|exam|image|series|episode|admission|csn|fin|har|employee|staff|personnel|payroll|student|passport|national|citizen|customer|client|tracking|booking|document|voucher|authori[sz]ation|auth|pin|unique",
        label: Label::IdNum,
    },
    Field {
        words: r"acct|account|a/c|iban|billing|invoice|guarantor",
        label: Label::AccountNumber,
    },
    Field {
        words: r"mrn|mr|nhs|medical[ \t]+record|chart|hospital|patient",
        label: Label::MedicalRecordNumber,
    },
    Field {
        words: r"registration|reg|gmc|npi|dea|licen[cs]e|lic|cert|certificate|board|provider|ahpra|nmc|cpso",
        label: Label::LicenseNumber,
    },
    Field {
        words: r"member|policy|subscriber|insurance|medicare|medicaid|plan|beneficiary|mbi|insured|health[ \t]+card|ohip|carte",
        label: Label::HealthPlanNumber,
    },
    Field {
        words: r"serial|s/n|device|udi|implant|lot|model|imei|pump|monitor|transmitter|pacemaker|defibrillator|icd|sensor|meter",
        label: Label::DeviceId,
    },
    Field {
        words: r"plate|vin|vehicle|tag",
        label: Label::VehicleId,
    },
];

/// What may stand between a field name and its value (`#`, `no.`, `number`, `:`), and the
/// value: IBAN-style groups, or one token with a digit (a word without one is not a value,
/// so `Hospital MRN 4471` finds the number after `MRN`). Inside the token, dots and
/// underscores join parts (`PLC.993.2201`, `2021_00417`), and groups
/// of three or more digits separated by one space continue it (`0099 1123`), as record
/// systems print them. One to four capitals and a space may lead it (`ZHP 445 921 003`;
/// see [`letter_prefix`]).
const VALUE: &str = r"[ \t]*(?:#|no\.?|number|num|id)?[ \t]*[:#]?[ \t]*((?-i:[A-Z]{1,4}[ ])?(?:[A-Z]{2}\d{2}(?:[ \t]?[A-Z0-9]{4}){2,7}(?:[ \t]?[A-Z0-9]{1,4})?|(?:[A-Za-z0-9][A-Za-z0-9/_-]*\.)*(?:\d|[A-Za-z0-9][A-Za-z0-9/_-]*\d)[A-Za-z0-9/_-]*(?:\.[A-Za-z0-9/_-]+)*(?:[ ]\d{3,}\b)*))";

/// A plain decimal (`12.5`, `100.25`): a measurement after a field-like word, not an
/// identifier.
fn is_decimal(value: &str) -> bool {
    value.split_once('.').is_some_and(|(a, b)| {
        !a.is_empty() && !b.is_empty() && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
    })
}

/// A token: word characters (any script's letters and digits) joined by `-`, `.`, `/`.
const TOKEN: &str = r"\w+(?:[-./]\w+)*";

/// A UK National Insurance number (`QQ 12 34 56 C`, `AB123456D`): two capitals, six
/// digits, often in pairs, and a suffix A–D. Any two capitals, not only the prefixes HMRC
/// issues: the specimen `QQ` is what forms and test records use. Its digits are too few
/// for the shape rule, and the pairs look like nothing else a note writes.
const UK_NINO: &str = r"\b[A-Z]{2}[ \u{a0}]?\d{2}[ \u{a0}]?\d{2}[ \u{a0}]?\d{2}[ \u{a0}]?[A-D]\b";

/// Digit groups joined by single spaces, as national numbers and cards are printed
/// (`2467 7832 5484`, `7604 8764 7593 81`): a first group, two or more groups of three
/// or more digits, and an optional short check group.
const SPACED_DIGITS: &str = r"\d{2,6}(?:[ \u{a0}]\d{3,6}){2,}(?:[ \u{a0}]\d{1,3}\b)?";

/// Words after a number that make it a count or an amount, not an identifier.
const UNITS: &[&str] = &[
    "copies", "copy", "cells", "cell", "units", "unit", "u", "iu", "mg", "mcg", "ug", "µg", "g",
    "kg", "ml", "l", "mmol", "mol", "cfu", "per", "times", "x", "dollars", "usd", "eur", "euros",
    "steps", "kcal", "calories", "people", "patients", "cases", "doses", "tablets",
];

/// Code systems whose codes a note cites (`SNOMED 44054006`, `NDC 0002-8215-01`,
/// `PMID 31978945`): a code after one of these names is a concept, not a person's number.
const CODE_SYSTEMS: &[&str] = &[
    "snomed",
    "snomed-ct",
    "sct",
    "sctid",
    "ct",
    "loinc",
    "rxnorm",
    "rxcui",
    "ndc",
    "cpt",
    "hcpcs",
    "icd",
    "icd-9",
    "icd-10",
    "icd-11",
    "icd-9-cm",
    "icd-10-cm",
    "icd-10-pcs",
    "umls",
    "cui",
    "mesh",
    "omim",
    "pmid",
    "pmcid",
    "doi",
    "nct",
    "atc",
    "isbn",
    "issn",
    "hgnc",
    "rs",
    "dbsnp",
    "clinvar",
    "ucum",
    "unii",
    "cas",
];

/// True when `word` is one of [`FIELDS`]' one-word field names, in any case (`Patient`,
/// `Member`, `ID`).
pub(super) fn is_field_name(word: &str) -> bool {
    FIELDS
        .iter()
        .flat_map(|f| f.words.split('|'))
        .any(|w| w.eq_ignore_ascii_case(word))
}

/// The compiled [`FIELDS`] and identifier shapes.
#[derive(Debug)]
pub(super) struct Identifiers {
    fields: Vec<(Regex, Label)>,
    token: Regex,
    spaced: Regex,
    nino: Regex,
}

impl Identifiers {
    pub(super) fn new() -> Self {
        let mut fields: Vec<(Regex, Label)> = FIELDS
            .iter()
            .map(|f| (re(&format!(r"(?i)\b(?:{}){VALUE}", f.words)), f.label))
            .collect();
        // The names of national identifiers, as written (`PAN`, not the Polish `pan`,
        // "Mr."; `NIE`, not `nie`, "not"), except those a field above already reads.
        let national: Vec<&str> = IDENTIFIER_NAMES
            .iter()
            .copied()
            .filter(|name| !is_field_name(name))
            .collect();
        fields.push((
            re(&format!(r"(?i)\b(?-i:{}){VALUE}", national.join("|"))),
            Label::IdNum,
        ));
        Identifiers {
            fields,
            token: re(TOKEN),
            spaced: re(SPACED_DIGITS),
            nino: re(UK_NINO),
        }
    }

    /// Identifiers by shape alone, wherever they stand (see the module documentation).
    pub(super) fn by_shape(&self, text: &str, out: &mut Vec<ByteSpan>) {
        for m in self.token.find_iter(text) {
            let token = m.as_str();
            if shaped_like_id(token)
                && !is_quantity(text, m.start(), m.end())
                && !after_code_system(&text[..m.start()])
            {
                out.push(ByteSpan::new(m.start(), m.end(), Label::IdNum, WEAK));
            }
        }
        for m in self.nino.find_iter(text) {
            out.push(ByteSpan::new(m.start(), m.end(), Label::IdNum, WEAK));
        }
        for m in self.spaced.find_iter(text) {
            let digits = m.as_str().chars().filter(|c| c.is_numeric()).count();
            if digits >= 9
                && !is_quantity(text, m.start(), m.end())
                && !after_code_system(&text[..m.start()])
            {
                out.push(ByteSpan::new(m.start(), m.end(), Label::IdNum, WEAK));
            }
        }
    }

    /// The value after each field name, when it has at least three digits and is not a
    /// date-like fraction.
    pub(super) fn find(&self, text: &str, out: &mut Vec<ByteSpan>) {
        for (rx, label) in &self.fields {
            for caps in rx.captures_iter(text) {
                if let Some(m) = caps.get(1) {
                    let (s, e) = trim_punct(text, m.start(), m.end());
                    let s = letter_prefix(text, s);
                    let value = &text[s..e];
                    // At least three digits, and not a lone dose or a date-like fraction.
                    if value.chars().filter(char::is_ascii_digit).count() >= 3
                        && !value.contains("//")
                        && !is_decimal(value)
                    {
                        out.push(ByteSpan::new(s, e, *label, STRONG));
                    }
                }
            }
        }
    }
}

/// Where the value really starts. A group of one to four capitals and a space before it
/// belongs to the number when the field's `:` or `#` stands before it (`Policy number: ZHP
/// 445 921 003`); without one it is another field's name (`Hospital MRN 4471`, `vehicle VIN
/// 1HGCM…`) and is left out.
fn letter_prefix(text: &str, start: usize) -> usize {
    let value = &text[start..];
    let letters = value.len()
        - value
            .trim_start_matches(|c: char| c.is_ascii_uppercase())
            .len();
    let prefixed = (1..=4).contains(&letters) && value[letters..].starts_with(' ');
    let separated = text[..start]
        .trim_end_matches([' ', '\t'])
        .ends_with([':', '#']);
    if prefixed && !separated {
        start + letters + 1
    } else {
        start
    }
}

/// Seven or more digits, or five or more among capital letters and no small ones; not a
/// decimal (`3.14159265`), not a range of years (`1998-2004`), and not an underscore-joined
/// name (`file_20240101`, left to the other rules).
fn shaped_like_id(token: &str) -> bool {
    let digits = token.chars().filter(|c| c.is_numeric()).count();
    let upper = token.chars().filter(|c| c.is_uppercase()).count();
    let lower = token.chars().filter(|c| c.is_lowercase()).count();
    let shaped = if upper + lower == 0 {
        digits >= 7
    } else {
        lower == 0 && digits >= 5 && digits + upper >= 7
    };
    shaped
        && !token.contains('_')
        && !is_decimal(token)
        && !is_year_range(token)
        && !is_numeric_date(token)
        && !crate::detect::protected::value_chain(token)
}

/// Three numbers joined by `-`, `.` or `/` with a plausible year and day and month
/// (`2024-03-01`, `01.03.2024`): a date, which the date rules label.
fn is_numeric_date(token: &str) -> bool {
    let parts: Vec<&str> = token.split(['-', '.', '/']).collect();
    let [a, b, c] = parts.as_slice() else {
        return false;
    };
    let n = |s: &str| s.parse::<u32>().ok().filter(|_| s.len() <= 4);
    let (Some(x), Some(y), Some(z)) = (n(a), n(b), n(c)) else {
        return false;
    };
    let year = |v: u32, s: &str| s.len() == 4 && (1850..=2150).contains(&v);
    let day_month =
        |p: u32, q: u32| (1..=31).contains(&p) && (1..=31).contains(&q) && (p <= 12 || q <= 12);
    (year(x, a) && day_month(y, z)) || (year(z, c) && day_month(x, y))
}

/// Two years joined by a dash or slash (`1998-2004`, `2019/2020`).
fn is_year_range(token: &str) -> bool {
    let year = |s: &str| {
        s.len() == 4
            && s.bytes().all(|b| b.is_ascii_digit())
            && (s.starts_with("18") || s.starts_with("19") || s.starts_with("20"))
    };
    token
        .split_once(['-', '/'])
        .is_some_and(|(a, b)| year(a) && year(b))
}

/// True when the word before a code (past `:`, `#` and the word `code`) names a code
/// system.
fn after_code_system(before: &str) -> bool {
    let mut rest = before.trim_end_matches(|c: char| c.is_whitespace() || c == ':' || c == '#');
    for filler in ["codes", "code", "Code", "CODE"] {
        if let Some(r) = rest.strip_suffix(filler) {
            rest = r.trim_end_matches(|c: char| c.is_whitespace() || c == ':' || c == '#');
        }
    }
    let word = rest
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '-'))
        .next()
        .unwrap_or("")
        .to_lowercase();
    CODE_SYSTEMS.contains(&word.as_str())
}

/// A number with a currency sign before it or a unit word after it (`$1250000`,
/// `1500000 copies/mL`).
fn is_quantity(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].trim_end_matches([' ', '\u{a0}']);
    if before.ends_with(['$', '€', '£', '¥', '₹']) {
        return true;
    }
    let after = text[end..].trim_start_matches([' ', '\u{a0}']);
    if after.starts_with(['%', '/', '×']) {
        return true;
    }
    let word: String = after
        .chars()
        .take_while(|c| c.is_alphabetic())
        .flat_map(char::to_lowercase)
        .collect();
    UNITS.contains(&word.as_str())
}

#[cfg(test)]
mod tests {
    use crate::detect::context::tests::rows;
    use crate::detect::Label;

    rows! {
        id_after_id_field: "Badge ID QX-4471-B, seen", "QX-4471-B" => Some(Label::IdNum);
        patient_id_is_a_record_number: "Patient ID: QX-4471-B, seen", "QX-4471-B" => Some(Label::MedicalRecordNumber);
        id_after_hash: "see order #A20331 for details", "A20331" => Some(Label::IdNum);
        field_word_then_field: "Lab MRN 4471-22 today", "4471-22" => Some(Label::MedicalRecordNumber);
        rx_number: "(Rx #HU-95-842234, last filled", "HU-95-842234" => Some(Label::IdNum);
        id_with_dots: "Policy # PLC.993.2201 on file", "PLC.993.2201" => Some(Label::HealthPlanNumber);
        id_with_underscore: "Case no. 2021_00417.", "2021_00417" => Some(Label::IdNum);
        id_in_digit_groups: "Chart number 0099 1123.", "0099 1123" => Some(Label::MedicalRecordNumber);
        id_ends_before_sentence_dot: "Visit number V00213344. Seen", "V00213344" => Some(Label::IdNum);
        decimal_is_not_an_id: "Lab 123.5 units", "123.5" => None;
        bare_national_number: "ID-nommer 8001015009087, gebore", "8001015009087" => Some(Label::IdNum);
        dotted_national_number: "Nota: CPF 804.536.729-65 registrado", "804.536.729-65" => Some(Label::IdNum);
        spaced_national_number: "Aadhaar 2467 7832 5484 on file", "2467 7832 5484" => Some(Label::IdNum);
        national_name_short_number: "NHIF 44712 member since 2019.", "44712" => Some(Label::IdNum);
        national_name_as_written: "Pan 4471 przyszedł.", "4471" => None;
        spaced_number_with_check_group: "card 7604 8764 7593 81 seen", "7604 8764 7593 81" => Some(Label::IdNum);
        letters_around_digits: "DNI Z8939936W, Madrid", "Z8939936W" => Some(Label::IdNum);
        prefixed_number: "lwezonyango BON-765432109 ", "BON-765432109" => Some(Label::IdNum);
        other_script_digits: "आधार २४६७ ७८३२ ५४८४ है", "२४६७ ७८३२ ५४८४" => Some(Label::IdNum);
        short_number_is_not_an_id: "Platelets 250000 today", "250000" => None;
        gene_is_not_an_id: "CYP2C19 and HLA-B5801 typing", "HLA-B5801" => None;
        year_range_is_not_an_id: "lived there 1998-2004 alone", "1998-2004" => None;
        count_with_unit_is_not_an_id: "viral load 1500000 copies/mL", "1500000" => None;
        money_is_not_an_id: "billed $1250000 in total", "1250000" => None;
        long_decimal_is_not_an_id: "pi is 3.14159265 here", "3.14159265" => None;
        lowercase_word_with_digits_is_not_an_id: "see abc1234567 here", "abc1234567" => None;
        date_is_left_to_the_date_rules: "Call scheduled for 2024-03-01 with", "2024-03-01" => None;
        blood_gas_is_not_an_id: "ABG 7.38/42/88/24 on room air", "7.38/42/88/24" => None;
        vitals_chain_is_not_an_id: "VS 120/80/72/18/98 stable", "120/80/72/18/98" => None;
        snomed_code_is_not_an_id: "Coded as SNOMED 44054006 and I10", "44054006" => None;
        ndc_code_is_not_an_id: "NDC code: 0002-8215-01 dispensed", "0002-8215-01" => None;
        snomed_ct_code_is_not_an_id: "SNOMED CT 1234567890 recorded", "1234567890" => None;
        iban_account: "Acct: DE29 7798 0816 0791 4234 20\nDOB", "DE29 7798 0816 0791 4234 20" => Some(Label::AccountNumber);
        letters_before_spaced_digits: "Policy number: ZHP 445 921 003\n", "ZHP 445 921 003" => Some(Label::HealthPlanNumber);
        field_name_before_a_value_is_not_part_of_it: "Hospital MRN 4471229 seen", "4471229" => Some(Label::MedicalRecordNumber);
        field_name_before_a_vin_is_not_part_of_it: "vehicle VIN U38JL28S7T0EVJ67J, plate", "U38JL28S7T0EVJ67J" => Some(Label::VehicleId);
        employee_number: "Employee number: E-55120, on leave", "E-55120" => Some(Label::IdNum);
        uk_national_insurance_spaced: "her NI QQ 12 34 56 C is on file", "QQ 12 34 56 C" => Some(Label::IdNum);
        uk_national_insurance_packed: "NINO AB123456D.", "AB123456D" => Some(Label::IdNum);
        not_a_national_insurance_number: "QT interval 12 34 56 A seen", "QT interval 12 34 56 A" => None;
        staff_number: "Staff no. 88213 signed", "88213" => Some(Label::IdNum);
    }
}
