//! Context heuristics beside the model: names after titles, field labels, relations and
//! signatures; organisations, places, ages, dates written in words, and identifiers after
//! their field names.
//!
//! # Why heuristics next to a model
//!
//! The bundled model is small and general: it misses a surname after "Dr." when the
//! surname is rare, it has no organisation label at all, and it never saw "Rx #" or
//! "Specimen:". Clinical notes are written on forms, so the *left context* of PHI is
//! regular even when the PHI is not: a title, a field label, a relation word ("son"), a
//! signature marker (`--`, `/s/`). Each heuristic here is anchored on such a context
//! and reads at most a few tokens after it, so its false positives stay local. Spans are
//! [`Source::Rule`] with fixed scores that pass the default `/pii/deidentify` threshold.
//!
//! The word lists (`lists/*.txt`) are our own and small; they only ever *add* evidence
//! next to an anchor or a capitalised token and never decide alone that a common word is
//! PHI.

mod names;

pub(crate) use names::{surname_after, Surname};
mod places;

use super::{merge, CharIndex, Label, Recognizer, RecognizerError, Source, Span};

/// Score of a span found after a strong anchor (title, field label).
const STRONG: f32 = 0.82;
/// Score of a span found after a weaker anchor (relation word, known first name).
const WEAK: f32 = 0.76;

/// A byte-offset span being built, converted to code points at the end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ByteSpan {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) label: Label,
    pub(crate) score: f32,
}

impl ByteSpan {
    pub(crate) fn new(start: usize, end: usize, label: Label, score: f32) -> Self {
        ByteSpan {
            start,
            end,
            label,
            score,
        }
    }
}

/// The context recognizer. Immutable after [`ContextRecognizer::new`]; share it behind an
/// `Arc`.
#[derive(Debug)]
pub struct ContextRecognizer {
    names: &'static names::Names,
    places: places::Places,
}

impl ContextRecognizer {
    /// Compiles every heuristic.
    ///
    /// # Panics
    /// Only if a built-in pattern does not compile, which the unit tests rule out.
    pub fn new() -> Self {
        ContextRecognizer {
            names: names::Names::shared(),
            places: places::Places::new(),
        }
    }

    /// Finds context-anchored PHI in `text`: code-point offsets, sorted, non-overlapping.
    pub fn find(&self, text: &str) -> Vec<Span> {
        let mut found = Vec::new();
        self.names.find(text, &mut found);
        self.places.find(text, &mut found);
        let idx = CharIndex::new(text);
        let spans = found
            .into_iter()
            .filter(|b| b.start < b.end && b.end <= text.len())
            .filter(|b| text.is_char_boundary(b.start) && text.is_char_boundary(b.end))
            .map(|b| {
                Span::new(
                    idx.char_at_byte(b.start),
                    idx.char_at_byte(b.end),
                    b.label,
                    b.score,
                    Source::Rule,
                )
            })
            .filter(|s| s.start < s.end)
            .collect();
        merge::resolve(spans)
    }
}

impl Default for ContextRecognizer {
    fn default() -> Self {
        ContextRecognizer::new()
    }
}

impl Recognizer for ContextRecognizer {
    fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
        Ok(texts.iter().map(|t| self.find(t)).collect())
    }
}

/// Compiles a built-in pattern.
///
/// # Panics
/// If the pattern does not compile (a programming error the unit tests catch).
pub(crate) fn re(pattern: &str) -> regex::Regex {
    #[allow(clippy::expect_used)]
    regex::Regex::new(pattern).expect("built-in context pattern compiles")
}

#[cfg(test)]
mod tests;
