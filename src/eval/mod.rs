//! Accuracy measurement: reading gold annotations and scoring predicted spans against them.
//!
//! Owns the gold readers ([`read_gold`], [`LabelMap`]), the scorer ([`score`]) and the
//! [`Report`] that `phiguard eval` prints and the admin API returns. Pure library: files and
//! spans in, figures out; no HTTP, no models.
//!
//! # Why several metrics and not one F1?
//!
//! De-identification is judged by what it leaves behind, not by how neatly it draws
//! boundaries, so one number hides the failure that matters. Each figure answers a
//! different question:
//!
//! - **Span, strict**: a predicted span counts only when its start, end and label equal a
//!   gold span's. This is the conventional NER score, and it punishes a detector that finds
//!   `Dr. Ana Lima` where the gold says `Ana Lima` although nothing leaked.
//! - **Span, overlapping**: a gold span is *found* when some predicted span of the same
//!   label shares at least one code point with it, and a predicted span is *correct* when it
//!   overlaps some gold span of its label. Matching is not one-to-one: one long prediction
//!   can find two adjacent gold spans. The **any-label** variant ignores labels entirely
//!   (a name tagged as an organisation is still removed), which is what a redaction user
//!   cares about.
//! - **Character level**: every code point of every document is PHI or not; precision and
//!   recall count code points. The overall figure is label-agnostic (PHI vs not), the
//!   per-label figure compares the code points gold assigns to a label with those predicted
//!   for it. Character recall is the closest single proxy for "how much PHI was removed".
//!   Whitespace inside a span counts like any other code point.
//! - **Leak rate**: the share of gold PHI code points still visible after de-identification.
//!   With the de-identified texts it is measured on the output (see [`Leak`]); without them
//!   it is `1 - character recall`, the PHI that no predicted span covered.
//!
//! Empty denominators follow one rule: `0/0` is 1.0 (nothing to find and nothing found is
//! perfect), so an empty document does not drag figures down, and F1 is 0 when precision
//! and recall are both 0.

mod gold;
mod report;
mod score;

pub use gold::{openmed_label, read_gold, read_gold_str, ForeignSpan, GoldDoc, GoldSpan, LabelMap};
pub use report::{DocTiming, ForeignMetrics, LabelMetrics, Leak, LeakBasis, Metrics, Prf, Report};
pub use score::score;

use std::path::PathBuf;

/// Why reading a gold file or a label map failed. Messages name the file and the line (or
/// document index) but never echo annotated text.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// Returned when a gold file or label map cannot be read from disk.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file that could not be read.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Returned when a line (or array element) is not valid JSON or has the wrong shape;
    /// `what` is a fixed description of the problem, never the offending value.
    #[error("line {line}: {what}")]
    Malformed {
        /// 1-based line number (document index for JSON arrays).
        line: usize,
        /// What is wrong, in fixed words.
        what: String,
    },
    /// Returned when a span's offsets are empty, reversed or past the end of the text.
    #[error(
        "line {line}: span {span} has offsets {start}..{end} outside a text of {len} code points"
    )]
    BadOffsets {
        /// 1-based line number.
        line: usize,
        /// 0-based index of the span within its document.
        span: usize,
        /// Start offset as given.
        start: usize,
        /// End offset as given.
        end: usize,
        /// Length of the text in code points.
        len: usize,
    },
    /// Returned when a span carries its own `text` and it differs from the slice its
    /// offsets select (usually byte offsets where code points were expected).
    #[error("line {line}: span {span} text does not match its offsets (byte offsets instead of code points?)")]
    SpanTextMismatch {
        /// 1-based line number.
        line: usize,
        /// 0-based index of the span within its document.
        span: usize,
    },
    /// Returned when a label map maps a name onto a label that is not canonical.
    #[error(
        "line {line}: unknown label `{label}` (the target of a label map must be a phiguard label)"
    )]
    UnknownLabel {
        /// 1-based line number (0 for a label map entry).
        line: usize,
        /// The label name when it looks like one (ASCII word characters, at most 40),
        /// otherwise a placeholder: a misplaced value could be patient text.
        label: String,
    },
    /// Returned when a label map file is not a flat table of strings.
    #[error("label map {path}: {what}")]
    LabelMap {
        /// The label map file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
}

/// Result alias of this module.
pub type Result<T> = std::result::Result<T, EvalError>;
