//! Per-label confidence thresholds for model spans (`models.label_thresholds`,
//! `PHIGUARD_LABEL_THRESHOLDS`, a list like `ORGANIZATION=0.6,CITY=0.55`).
//!
//! # Why per label and not one number
//!
//! A token classifier is not equally calibrated across labels: its e-mail and phone
//! scores sit near 1.0, while its city and street scores spread out over the whole range
//! and a wrong city at 0.55 is as common as a right one. One global threshold either
//! drops the right low-scoring names (a leak) or keeps the wrong low-scoring cities (noise).
//! A threshold per label filters model spans before they are merged with the rules, so a
//! rule that finds the same text still wins; labels without an entry keep every span.

use std::collections::BTreeMap;

use super::{Label, Source, Span};

/// Why a thresholds list did not parse. Messages name the entry's position, never a value
/// that might be text.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ThresholdError {
    /// Returned when an entry is not `LABEL=NUMBER`.
    #[error("entry {0} is not LABEL=NUMBER")]
    Shape(usize),
    /// Returned when an entry names no canonical label.
    #[error("entry {0} names an unknown label")]
    UnknownLabel(usize),
    /// Returned when a threshold is not a number in [0, 1].
    #[error("entry {0} must have a threshold between 0 and 1")]
    Range(usize),
}

/// Minimum model confidence per label.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelThresholds {
    min: BTreeMap<Label, f32>,
}

impl LabelThresholds {
    /// Parses `LABEL=0.4` entries (canonical or wire label names, case-insensitive);
    /// empty entries are ignored.
    ///
    /// # Errors
    /// [`ThresholdError`] naming the first bad entry (1-based).
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, ThresholdError> {
        let mut min = BTreeMap::new();
        for (i, entry) in entries.iter().enumerate() {
            let entry = entry.as_ref().trim();
            if entry.is_empty() {
                continue;
            }
            let (name, value) = entry.split_once('=').ok_or(ThresholdError::Shape(i + 1))?;
            let label = Label::parse(name).ok_or(ThresholdError::UnknownLabel(i + 1))?;
            let t: f32 = value
                .trim()
                .parse()
                .map_err(|_| ThresholdError::Range(i + 1))?;
            if !(0.0..=1.0).contains(&t) {
                return Err(ThresholdError::Range(i + 1));
            }
            min.insert(label, t);
        }
        Ok(LabelThresholds { min })
    }

    /// The threshold of `label` (0 when it has none).
    pub fn get(&self, label: Label) -> f32 {
        self.min.get(&label).copied().unwrap_or(0.0)
    }

    /// Keeps rule spans and the model spans that reach their label's threshold.
    pub fn retain(&self, spans: &mut Vec<Span>) {
        if self.min.is_empty() {
            return;
        }
        spans.retain(|s| s.source != Source::Model || s.score >= self.get(s.label));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_canonical_and_wire_names() -> Result<(), ThresholdError> {
        let t = LabelThresholds::parse(&["CITY=0.6", " phone_number = 0.3 ", ""])?;
        assert_eq!(t.get(Label::City), 0.6);
        assert_eq!(t.get(Label::Phone), 0.3);
        assert_eq!(t.get(Label::Date), 0.0);
        Ok(())
    }

    #[test]
    fn bad_entries_name_their_position() {
        assert_eq!(
            LabelThresholds::parse(&["CITY"]),
            Err(ThresholdError::Shape(1))
        );
        assert_eq!(
            LabelThresholds::parse(&["CITY=0.5", "TOWN=0.5"]),
            Err(ThresholdError::UnknownLabel(2))
        );
        assert_eq!(
            LabelThresholds::parse(&["CITY=1.5"]),
            Err(ThresholdError::Range(1))
        );
        assert_eq!(
            LabelThresholds::parse(&["CITY=x"]),
            Err(ThresholdError::Range(1))
        );
    }

    #[test]
    fn filters_only_model_spans_below_their_label() -> Result<(), ThresholdError> {
        let t = LabelThresholds::parse(&["CITY=0.6"])?;
        let mut spans = vec![
            Span::new(0, 3, Label::City, 0.5, Source::Model),
            Span::new(4, 6, Label::City, 0.5, Source::Rule),
            Span::new(7, 9, Label::City, 0.7, Source::Model),
            Span::new(10, 12, Label::Date, 0.1, Source::Model),
        ];
        t.retain(&mut spans);
        let starts: Vec<usize> = spans.iter().map(|s| s.start).collect();
        assert_eq!(starts, vec![4, 7, 10]);
        Ok(())
    }

    proptest! {
        #[test]
        fn parsing_never_panics(s in ".{0,60}") {
            let entries: Vec<&str> = s.split(',').collect();
            let _ = LabelThresholds::parse(&entries);
        }
    }
}
