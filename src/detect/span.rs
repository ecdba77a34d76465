//! The span and label types every recognizer produces and every transform consumes.
//!
//! Offsets are Unicode code-point (char) offsets into the submitted text, as OpenMed's:
//! `text.chars().skip(start).take(end - start)` is the entity text.

use serde::{Deserialize, Serialize};

/// Canonical PHI labels: a closed set, so they may appear in metrics and logs.
///
/// The canonical form (`FIRST_NAME`) is OpenMed's `canonical_label`; the wire form
/// (`first_name`) is the `label` / `entity_type` of responses and the mask token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Label {
    Person,
    FirstName,
    LastName,
    MiddleName,
    Date,
    DateOfBirth,
    Time,
    Age,
    Phone,
    Fax,
    Email,
    Url,
    IpAddress,
    Ssn,
    MedicalRecordNumber,
    HealthPlanNumber,
    AccountNumber,
    LicenseNumber,
    VehicleId,
    DeviceId,
    IdNum,
    CreditCard,
    Zipcode,
    StreetAddress,
    City,
    State,
    Country,
    Location,
    Organization,
    Username,
    Password,
    Other,
}

impl Label {
    /// Every label, in declaration order.
    pub const ALL: [Label; 32] = [
        Label::Person,
        Label::FirstName,
        Label::LastName,
        Label::MiddleName,
        Label::Date,
        Label::DateOfBirth,
        Label::Time,
        Label::Age,
        Label::Phone,
        Label::Fax,
        Label::Email,
        Label::Url,
        Label::IpAddress,
        Label::Ssn,
        Label::MedicalRecordNumber,
        Label::HealthPlanNumber,
        Label::AccountNumber,
        Label::LicenseNumber,
        Label::VehicleId,
        Label::DeviceId,
        Label::IdNum,
        Label::CreditCard,
        Label::Zipcode,
        Label::StreetAddress,
        Label::City,
        Label::State,
        Label::Country,
        Label::Location,
        Label::Organization,
        Label::Username,
        Label::Password,
        Label::Other,
    ];

    /// The canonical UPPER_SNAKE name (`FIRST_NAME`).
    pub fn canonical(self) -> &'static str {
        match self {
            Label::Person => "PERSON",
            Label::FirstName => "FIRST_NAME",
            Label::LastName => "LAST_NAME",
            Label::MiddleName => "MIDDLE_NAME",
            Label::Date => "DATE",
            Label::DateOfBirth => "DATE_OF_BIRTH",
            Label::Time => "TIME",
            Label::Age => "AGE",
            Label::Phone => "PHONE",
            Label::Fax => "FAX",
            Label::Email => "EMAIL",
            Label::Url => "URL",
            Label::IpAddress => "IP_ADDRESS",
            Label::Ssn => "SSN",
            Label::MedicalRecordNumber => "MEDICAL_RECORD_NUMBER",
            Label::HealthPlanNumber => "HEALTH_PLAN_NUMBER",
            Label::AccountNumber => "ACCOUNT_NUMBER",
            Label::LicenseNumber => "LICENSE_NUMBER",
            Label::VehicleId => "VEHICLE_ID",
            Label::DeviceId => "DEVICE_ID",
            Label::IdNum => "ID_NUM",
            Label::CreditCard => "CREDIT_CARD",
            Label::Zipcode => "ZIPCODE",
            Label::StreetAddress => "STREET_ADDRESS",
            Label::City => "CITY",
            Label::State => "STATE",
            Label::Country => "COUNTRY",
            Label::Location => "LOCATION",
            Label::Organization => "ORGANIZATION",
            Label::Username => "USERNAME",
            Label::Password => "PASSWORD",
            Label::Other => "OTHER",
        }
    }

    /// The lowercase wire label (`first_name`, `phone_number`), used as `label`,
    /// `entity_type` and inside mask tokens (`[first_name]`).
    pub fn wire(self) -> &'static str {
        match self {
            Label::Person => "person",
            Label::FirstName => "first_name",
            Label::LastName => "last_name",
            Label::MiddleName => "middle_name",
            Label::Date => "date",
            Label::DateOfBirth => "date_of_birth",
            Label::Time => "time",
            Label::Age => "age",
            Label::Phone => "phone_number",
            Label::Fax => "fax_number",
            Label::Email => "email",
            Label::Url => "url",
            Label::IpAddress => "ip_address",
            Label::Ssn => "ssn",
            Label::MedicalRecordNumber => "medical_record_number",
            Label::HealthPlanNumber => "health_plan_number",
            Label::AccountNumber => "account_number",
            Label::LicenseNumber => "license_number",
            Label::VehicleId => "vehicle_id",
            Label::DeviceId => "device_id",
            Label::IdNum => "id_num",
            Label::CreditCard => "credit_card",
            Label::Zipcode => "zipcode",
            Label::StreetAddress => "street_address",
            Label::City => "city",
            Label::State => "state",
            Label::Country => "country",
            Label::Location => "location",
            Label::Organization => "organization",
            Label::Username => "username",
            Label::Password => "password",
            Label::Other => "other",
        }
    }

    /// Parses a canonical or wire name, case-insensitively (`FIRST_NAME`, `first_name`,
    /// `phone`, `phone_number`). Returns `None` for names outside the closed set.
    pub fn parse(name: &str) -> Option<Label> {
        let upper = name.trim().to_ascii_uppercase().replace(['-', ' '], "_");
        let alias = match upper.as_str() {
            "PHONE_NUMBER" => Some(Label::Phone),
            "FAX_NUMBER" => Some(Label::Fax),
            _ => None,
        };
        alias.or_else(|| Label::ALL.into_iter().find(|l| l.canonical() == upper))
    }

    /// True for the date-like labels that `shift_dates` moves.
    pub fn is_date(self) -> bool {
        matches!(self, Label::Date | Label::DateOfBirth)
    }
}

/// Which kind of recognizer found a span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A pattern, checksum or context rule.
    Rule,
    /// A token-classification model.
    Model,
}

impl Source {
    /// The wire name used in `sources` / `detector` fields (`rule`, `ml`).
    pub fn wire(self) -> &'static str {
        match self {
            Source::Rule => "rule",
            Source::Model => "ml",
        }
    }
}

/// The detectors that found one entity: every member of a merged span adds its own
/// ([`super::merge::resolve`]). OpenMed lists them as `detector_sources` ([`Sources::wire`]);
/// serialized as a list of [`Source`]s, as `source` is (`["model", "rule"]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Sources(u8);

impl Serialize for Sources {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(Self::ORDER.into_iter().filter(|x| self.contains(*x)))
    }
}

impl<'de> Deserialize<'de> for Sources {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let list = Vec::<Source>::deserialize(d)?;
        Ok(list
            .into_iter()
            .fold(Sources::default(), |acc, x| acc.with(Sources::of(x))))
    }
}

impl Sources {
    /// The set holding `source` alone.
    pub fn of(source: Source) -> Self {
        Sources(Self::bit(source))
    }

    /// Both sets.
    #[must_use]
    pub fn with(self, other: Sources) -> Self {
        Sources(self.0 | other.0)
    }

    /// Whether `source` is in the set.
    pub fn contains(self, source: Source) -> bool {
        self.0 & Self::bit(source) != 0
    }

    /// The model first, as OpenMed orders `["ml", "locale_rule"]`.
    const ORDER: [Source; 2] = [Source::Model, Source::Rule];

    /// The wire names, the model first.
    pub fn wire(self) -> Vec<&'static str> {
        Self::ORDER
            .into_iter()
            .filter(|s| self.contains(*s))
            .map(Source::wire)
            .collect()
    }

    fn bit(source: Source) -> u8 {
        match source {
            Source::Rule => 1,
            Source::Model => 2,
        }
    }
}

/// One detected PHI span, in code-point offsets into the text it was found in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Span {
    /// First code point of the span.
    pub start: usize,
    /// One past the last code point of the span.
    pub end: usize,
    /// Canonical label.
    pub label: Label,
    /// Confidence in [0, 1]; rules report a fixed confidence per pattern.
    pub score: f32,
    /// Who named it: the detector of the member whose label it carries.
    pub source: Source,
    /// Every detector whose span is part of it (`source` among them).
    #[serde(default)]
    pub found_by: Sources,
}

impl Span {
    /// Builds a span; `start < end` is the caller's contract.
    pub fn new(start: usize, end: usize, label: Label, score: f32, source: Source) -> Self {
        debug_assert!(start < end, "empty span");
        Span {
            start,
            end,
            label,
            score,
            source,
            found_by: Sources::of(source),
        }
    }

    /// True when the span stands at a request's confidence `threshold`: a rule found it
    /// (a pattern or a context, whose fixed confidence is no model's), or its score reaches
    /// the threshold. A threshold meant to quiet the model let an SSN or an MRN through.
    pub fn passes(&self, threshold: f32) -> bool {
        self.found_by.contains(Source::Rule) || self.score >= threshold
    }

    /// Length in code points.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Always false for a valid span (kept for clippy's `len_without_is_empty`).
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// True when the two spans share at least one code point.
    pub fn overlaps(&self, other: &Span) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// Maps between code-point offsets and UTF-8 byte offsets of one text.
///
/// Regexes and tokenizers report byte offsets; responses carry code-point offsets.
#[derive(Clone, Debug)]
pub struct CharIndex {
    /// `byte_of[i]` is the byte offset of code point `i`; the last entry is `text.len()`.
    byte_of: Vec<usize>,
}

impl CharIndex {
    /// Indexes `text`.
    pub fn new(text: &str) -> Self {
        let mut byte_of: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
        byte_of.push(text.len());
        CharIndex { byte_of }
    }

    /// Number of code points in the text.
    pub fn char_len(&self) -> usize {
        self.byte_of.len() - 1
    }

    /// Byte offset of code point `char_pos` (`char_pos <= char_len`).
    pub fn byte(&self, char_pos: usize) -> usize {
        self.byte_of[char_pos]
    }

    /// Code-point offset of a byte offset that lies on a char boundary; a byte inside a
    /// code point maps to that code point.
    pub fn char_at_byte(&self, byte: usize) -> usize {
        match self.byte_of.binary_search(&byte) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        }
    }

    /// The slice of `text` (the same text this index was built from) for a char range.
    pub fn slice<'t>(&self, text: &'t str, start: usize, end: usize) -> &'t str {
        &text[self.byte(start)..self.byte(end)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_through_both_names() {
        for l in Label::ALL {
            assert_eq!(Label::parse(l.canonical()), Some(l));
            assert_eq!(Label::parse(l.wire()), Some(l));
        }
        assert_eq!(Label::parse("nonsense"), None);
    }

    #[test]
    fn detector_sets_serialize_as_their_sources_and_back() {
        let both = Sources::of(Source::Rule).with(Sources::of(Source::Model));
        let text = serde_json::to_string(&both).unwrap_or_default();
        assert_eq!(text, r#"["model","rule"]"#);
        assert_eq!(serde_json::from_str::<Sources>(&text).ok(), Some(both));
        assert_eq!(both.wire(), ["ml", "rule"]);
        assert!(serde_json::from_str::<Sources>(r#"["regex"]"#).is_err());
    }

    #[test]
    fn char_index_maps_multibyte_text() {
        let text = "Zoë 😀 ab";
        let idx = CharIndex::new(text);
        assert_eq!(idx.char_len(), 8);
        assert_eq!(idx.slice(text, 2, 3), "ë");
        assert_eq!(idx.slice(text, 4, 5), "😀");
        assert_eq!(idx.char_at_byte(text.find('a').unwrap_or(0)), 6);
    }
}
