//! HL7 v2 segments pasted into a note (`PID|1||00482913^^^MRN^MR||WHITFIELD^ROSALIND^JANE…`).
//!
//! # Why a parser and not patterns
//!
//! Interface analysts and clinicians paste raw HL7 v2 messages into notes and tickets. In a
//! segment the PHI is positional: the fifth field of `PID` is the patient's name as
//! `family^given^middle`, the eleventh the address as `street^other^city^state^zip`, the
//! seventh field of `PV1` the attending doctor as `id^family^given`. Neither a model
//! trained on prose nor a pattern sees that: a red team found the street, city, ZIP,
//! middle name and the attending's name of such segments left in place. So the segments
//! HL7 v2.x defines for patients, next of kin, visits, guarantors, insurance and orders are
//! read field by field, and each component that holds PHI becomes a span with the label its
//! data type gives it (HL7 v2.5.1, chapters 2, 3, 4, 6 and 7). Other segments, and fields
//! that hold codes (sex, race, visit class), are left as they are.

use super::super::Label;

/// What a field holds, by its HL7 data type.
#[derive(Clone, Copy, Debug)]
enum Field {
    /// XPN: `family^given^middle^suffix^prefix`.
    Name,
    /// XCN: `id^family^given^middle^suffix^prefix`.
    Provider,
    /// XAD: `street^other^city^state^zip^country^type^other^county`.
    Address,
    /// XTN: `number^use^equipment^email^country^area^local^extension`.
    Phone,
    /// CX or a plain identifier: the first component.
    Id(Label),
    /// TS/DTM: the first component, `YYYYMMDD[HHMM[SS]]`.
    Date(Label),
    /// PL: `point of care^room^bed^facility`; the room, bed and facility.
    Place,
    /// XON: an organisation's name first.
    Org,
}

use Field::{Address, Date, Id, Name, Org, Phone, Place, Provider};

/// The fields read, as `(segment, field number, type)`; numbers as HL7 counts them (for
/// `MSH` the field separator itself is field 1).
const FIELDS: &[(&str, usize, Field)] = &[
    ("MSH", 7, Date(Label::Date)),
    ("EVN", 2, Date(Label::Date)),
    ("EVN", 6, Date(Label::Date)),
    ("PID", 2, Id(Label::MedicalRecordNumber)),
    ("PID", 3, Id(Label::MedicalRecordNumber)),
    ("PID", 4, Id(Label::MedicalRecordNumber)),
    ("PID", 5, Name),
    ("PID", 6, Name),
    ("PID", 7, Date(Label::DateOfBirth)),
    ("PID", 9, Name),
    ("PID", 11, Address),
    ("PID", 13, Phone),
    ("PID", 14, Phone),
    ("PID", 18, Id(Label::AccountNumber)),
    ("PID", 19, Id(Label::Ssn)),
    ("PID", 20, Id(Label::LicenseNumber)),
    ("PID", 21, Id(Label::IdNum)),
    ("PID", 23, Id(Label::City)),
    ("PID", 29, Date(Label::Date)),
    ("MRG", 1, Id(Label::MedicalRecordNumber)),
    ("MRG", 3, Id(Label::AccountNumber)),
    ("MRG", 7, Name),
    ("NK1", 2, Name),
    ("NK1", 4, Address),
    ("NK1", 5, Phone),
    ("NK1", 6, Phone),
    ("NK1", 13, Org),
    ("NK1", 16, Date(Label::DateOfBirth)),
    ("NK1", 30, Name),
    ("NK1", 31, Phone),
    ("NK1", 32, Address),
    ("NK1", 33, Id(Label::IdNum)),
    ("NK1", 37, Id(Label::Ssn)),
    ("PV1", 3, Place),
    ("PV1", 6, Place),
    ("PV1", 7, Provider),
    ("PV1", 8, Provider),
    ("PV1", 9, Provider),
    ("PV1", 11, Place),
    ("PV1", 17, Provider),
    ("PV1", 19, Id(Label::IdNum)),
    ("PV1", 42, Place),
    ("PV1", 43, Place),
    ("PV1", 44, Date(Label::Date)),
    ("PV1", 45, Date(Label::Date)),
    ("GT1", 2, Id(Label::IdNum)),
    ("GT1", 3, Name),
    ("GT1", 5, Address),
    ("GT1", 6, Phone),
    ("GT1", 7, Phone),
    ("GT1", 8, Date(Label::DateOfBirth)),
    ("GT1", 12, Id(Label::Ssn)),
    ("IN1", 16, Name),
    ("IN1", 18, Date(Label::DateOfBirth)),
    ("IN1", 19, Address),
    ("IN1", 36, Id(Label::HealthPlanNumber)),
    ("IN1", 49, Id(Label::IdNum)),
    ("ORC", 2, Id(Label::IdNum)),
    ("ORC", 3, Id(Label::IdNum)),
    ("ORC", 9, Date(Label::Date)),
    ("ORC", 10, Provider),
    ("ORC", 11, Provider),
    ("ORC", 12, Provider),
    ("ORC", 13, Place),
    ("OBR", 2, Id(Label::IdNum)),
    ("OBR", 3, Id(Label::IdNum)),
    ("OBR", 6, Date(Label::Date)),
    ("OBR", 7, Date(Label::Date)),
    ("OBR", 8, Date(Label::Date)),
    ("OBR", 14, Date(Label::Date)),
    ("OBR", 16, Provider),
    ("OBR", 22, Date(Label::Date)),
    ("OBR", 28, Provider),
    ("OBX", 14, Date(Label::Date)),
    ("OBX", 16, Provider),
    ("TXA", 4, Date(Label::Date)),
    ("TXA", 5, Provider),
    ("TXA", 9, Provider),
    ("TXA", 22, Provider),
    ("SCH", 11, Date(Label::Date)),
    ("AIP", 3, Provider),
];

/// Score of a span read from a segment's structure: as sure as a checked pattern.
const SCORE: f32 = 0.95;

/// The PHI of every segment of [`FIELDS`] in `text`, as byte ranges with a label and score (the caller maps
/// them to code points). A segment starts at a line's start, or after whitespace, with its
/// three-letter id and the field separator `|`, and runs to the end of its line or to the
/// next segment in the same line.
pub(crate) fn find(text: &str) -> Vec<(usize, usize, Label, f32)> {
    let mut out = Vec::new();
    if !text.contains('|') {
        return out;
    }
    let starts = segment_starts(text);
    for (n, &(id, start)) in starts.iter().enumerate() {
        let line_end = text[start..]
            .find(['\n', '\r'])
            .map_or(text.len(), |e| start + e);
        let end = starts
            .get(n + 1)
            .map_or(line_end, |&(_, next)| next.min(line_end));
        read_segment(text, id, start, end, &mut out);
    }
    out
}

/// True for a segment's id (`PID`, `MSH`) right before its `|`: a model took such ids for
/// names, towns and countries.
pub(crate) fn is_segment_id(word: &str, after: &str) -> bool {
    after.starts_with('|') && FIELDS.iter().any(|(s, _, _)| *s == word)
}

/// Where segments of [`FIELDS`] start: `(id, byte offset)`, in order.
fn segment_starts(text: &str) -> Vec<(&'static str, usize)> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices('|') {
        // Three ASCII bytes before the `|`, or no segment id (and no slice inside a
        // character).
        let Some(id) = i.checked_sub(3).and_then(|b| text.get(b..i)) else {
            continue;
        };
        let before = text[..i - 3].chars().next_back();
        if !before.is_none_or(char::is_whitespace) {
            continue;
        }
        if let Some(&(known, _, _)) = FIELDS.iter().find(|(s, _, _)| *s == id) {
            out.push((known, i - 3));
        }
    }
    out
}

/// Adds the spans of one segment `text[start..end]` whose id is `id`.
fn read_segment(
    text: &str,
    id: &str,
    start: usize,
    end: usize,
    out: &mut Vec<(usize, usize, Label, f32)>,
) {
    // A segment pasted into a sentence ends where the prose resumes: at the first space
    // before a lower-case word in its last field (`…^Fontenot^Remy which was attached`).
    let last_bar = text[start..end].rfind('|').map_or(start, |i| start + i);
    let end = text[last_bar..end]
        .match_indices(' ')
        .find(|(i, _)| {
            text[last_bar + i + 1..end]
                .chars()
                .next()
                .is_some_and(char::is_lowercase)
        })
        .map_or(end, |(i, _)| last_bar + i);
    let segment = &text[start..end];
    // Field n of the split is field n of the segment, except in MSH, whose first `|` is
    // its field 1.
    let shift = usize::from(id == "MSH");
    let mut at = start;
    for (n, field) in segment.split('|').enumerate() {
        let number = n + shift;
        if n > 0 {
            if let Some(&(_, _, kind)) = FIELDS.iter().find(|(s, f, _)| *s == id && *f == number) {
                read_field(field, at, kind, out);
            }
        }
        at += field.len() + 1;
    }
}

/// Adds the spans of one field (its repetitions split on `~`, components on `^`).
fn read_field(field: &str, at: usize, kind: Field, out: &mut Vec<(usize, usize, Label, f32)>) {
    let mut rep_at = at;
    for rep in field.split('~') {
        let mut comp_at = rep_at;
        for (c, comp) in rep.split('^').enumerate() {
            if let Some(label) = component_label(kind, c, comp) {
                let lead = comp.len() - comp.trim_start().len();
                let value = comp.trim();
                if !value.is_empty() {
                    let b = comp_at + lead;
                    out.push((b, b + value.len(), label, SCORE));
                }
            }
            comp_at += comp.len() + 1;
        }
        rep_at += rep.len() + 1;
    }
}

/// The label of component `c` (0-based) of a field of type `kind`, or `None` where it
/// holds no PHI (a name's suffix, an address's type, a phone's use code).
fn component_label(kind: Field, c: usize, value: &str) -> Option<Label> {
    let digits = value.chars().filter(char::is_ascii_digit).count();
    match (kind, c) {
        (Name, 0) | (Provider, 1) => Some(Label::LastName),
        (Name, 1) | (Provider, 2) => Some(Label::FirstName),
        (Name, 2) | (Provider, 3) => Some(Label::MiddleName),
        // An id of three letters or fewer (`MR`, `NPI`) is an assigning authority's code.
        (Provider, 0) | (Id(_), 0) if digits == 0 && value.chars().count() <= 3 => None,
        (Provider, 0) => Some(Label::IdNum),
        (Id(label), 0) => Some(label),
        (Address, 0 | 1) => Some(Label::StreetAddress),
        (Address, 2) => Some(Label::City),
        (Address, 3) => Some(Label::State),
        (Address, 4) => Some(Label::Zipcode),
        (Address, 8) => Some(Label::Location),
        (Phone, 3) if value.contains('@') => Some(Label::Email),
        (Phone, _) if digits >= 3 => Some(Label::Phone),
        (Date(label), 0) if digits >= 4 => Some(label),
        (Place, 1 | 2) => Some(Label::Location),
        (Place, 3) | (Org, 0) => Some(Label::Organization),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(&str, Label)> {
        find(text)
            .into_iter()
            .map(|(b, e, l, _)| (&text[b..e], l))
            .collect()
    }

    #[test]
    fn a_pid_segment_gives_its_name_ids_dates_address_and_phones() {
        let pid = "PID|1||00482913^^^MRN^MR||WHITFIELD^ROSALIND^JANE||19470219|F|||\
                   4417 CEDARBROOK LN^^TOLEDO^OH^43615^USA||(419)555-0193";
        assert_eq!(
            found(pid),
            [
                ("00482913", Label::MedicalRecordNumber),
                ("WHITFIELD", Label::LastName),
                ("ROSALIND", Label::FirstName),
                ("JANE", Label::MiddleName),
                ("19470219", Label::DateOfBirth),
                ("4417 CEDARBROOK LN", Label::StreetAddress),
                ("TOLEDO", Label::City),
                ("OH", Label::State),
                ("43615", Label::Zipcode),
                ("(419)555-0193", Label::Phone),
            ]
        );
    }

    #[test]
    fn a_visit_gives_its_doctors_and_places_and_msh_counts_its_separator() {
        let text = "Msg:\nMSH|^~\\&|LAB|MERCY|||202403051642||ADT^A01|1|P|2.5\r\
                    PV1|1|I|4W^412^B^MERCYHOSP||||1234567893^OKONKWO^CHIDI^^^DR|||MED";
        assert_eq!(
            found(text),
            [
                ("202403051642", Label::Date),
                ("412", Label::Location),
                ("B", Label::Location),
                ("MERCYHOSP", Label::Organization),
                ("1234567893", Label::IdNum),
                ("OKONKWO", Label::LastName),
                ("CHIDI", Label::FirstName),
            ]
        );
    }

    #[test]
    fn repetitions_pasted_segments_and_prose_with_pipes() {
        let text = "see NK1|1|WHITFIELD^THEODORE~WHITFIELD^TED|SPO|1 Elm St^^Toledo^OH^43615\nok";
        assert_eq!(
            found(text),
            [
                ("WHITFIELD", Label::LastName),
                ("THEODORE", Label::FirstName),
                ("WHITFIELD", Label::LastName),
                ("TED", Label::FirstName),
                ("1 Elm St", Label::StreetAddress),
                ("Toledo", Label::City),
                ("OH", Label::State),
                ("43615", Label::Zipcode),
            ]
        );
        // Prose after a segment pasted into a sentence is no part of its last field.
        let text =
            "The feed showed PV1|1|O|ER^^^MERCY|||||091122^Fontenot^Remy which was attached.";
        let got = found(text);
        assert_eq!(got.last(), Some(&("Remy", Label::FirstName)), "{got:?}");
        // A table in prose is no segment.
        assert!(found("| PID | 5 | x |\nXPID|1||123").is_empty());
    }
}
