//! Identifiers after their field names: `Rx #`, `Specimen:`, `Accession:`, `Acct:`,
//! `Registration number:`, `Member ID`, `Serial no.` and a bare `#`.
//!
//! Record, account, licence, plan, device and vehicle numbers have no shape of their own;
//! the field name before them is the evidence, and it also says which label the value
//! gets ([`FIELDS`]). The value is one token with digits, or spaced groups in the shape of
//! an IBAN (`DE29 7798 0816 …`).

use regex::Regex;

use super::super::{re, ByteSpan, STRONG, WEAK};
use super::cues::{trim_punct, Cue};
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
        words: r"id|identifier|identification|rx|prescription|script|specimen|accession|acc|order|requisition|req|lab|case|encounter|visit|claim|ref|reference|sample|barcode|study|report|ticket|confirmation|workstation|station|exam|image|series|episode|admission|csn|fin|har",
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
/// systems print them.
const VALUE: &str = r"[ \t]*(?:#|no\.?|number|num|id)?[ \t]*[:#]?[ \t]*((?:[A-Z]{2}\d{2}(?:[ \t]?[A-Z0-9]{4}){2,7}(?:[ \t]?[A-Z0-9]{1,4})?)|(?:[A-Za-z0-9][A-Za-z0-9/_-]*\.)*(?:\d|[A-Za-z0-9][A-Za-z0-9/_-]*\d)[A-Za-z0-9/_-]*(?:\.[A-Za-z0-9/_-]+)*(?:[ ]\d{3,}\b)*)";

/// A plain decimal (`12.5`, `100.25`): a measurement after a field-like word, not an
/// identifier.
fn is_decimal(value: &str) -> bool {
    value.split_once('.').is_some_and(|(a, b)| {
        !a.is_empty() && !b.is_empty() && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
    })
}

/// The compiled [`FIELDS`].
#[derive(Debug)]
pub(super) struct Identifiers {
    fields: Vec<(Regex, Label)>,
}

impl Identifiers {
    pub(super) fn new() -> Self {
        Identifiers {
            fields: FIELDS
                .iter()
                .map(|f| (re(&format!(r"(?i)\b(?:{}){VALUE}", f.words)), f.label))
                .collect(),
        }
    }

    /// The value after each field name, when it has at least three digits and is not a
    /// date-like fraction.
    pub(super) fn find(&self, text: &str, out: &mut Vec<ByteSpan>) {
        for (rx, label) in &self.fields {
            for caps in rx.captures_iter(text) {
                if let Some(m) = caps.get(1) {
                    let (s, e) = trim_punct(text, m.start(), m.end());
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
        iban_account: "Acct: DE29 7798 0816 0791 4234 20\nDOB", "DE29 7798 0816 0791 4234 20" => Some(Label::AccountNumber);
    }
}
