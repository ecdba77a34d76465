//! Cutting a de-identified text into a stream's lines.
//!
//! The NDJSON streams (`/pii/extract/stream`, `/pii/deidentify/stream`) send a text's
//! result in fragments. Every span of the text is known before the first fragment is cut:
//! detection reads the whole text first, as the single-shot routes do, because the sweep
//! marks every occurrence of a name found anywhere, and an occurrence early in the text
//! may only be known from a name found near its end. (An earlier design detected window
//! by window and emitted each window as it was read; a name found in a later window then
//! stayed readable in the lines already sent.)
//!
//! # The guarantees
//!
//! - *Fragments never split an identifier.* A cut is placed next to whitespace where
//!   there is some, and one that would fall inside a span moves to that span's start (or
//!   its end, when the span starts the fragment).
//! - *The fragments joined are the text*, and redacted in order with one
//!   [`Deidentifier`] they equal the single-shot output (surrogates and the date offset
//!   stay consistent across fragments).
//! - *Offsets are original-text code points*, in fragments and spans.
//!
//! ```
//! use phiguard::deid::{fragments, StreamConfig};
//! use phiguard::detect::RuleRecognizer;
//!
//! let text = "Call 555-123-4567 on 01/02/2020. ".repeat(300);
//! let spans = RuleRecognizer::new().find(&text);
//! let parts = fragments(&text, spans, StreamConfig::default());
//! assert!(parts.len() > 1);
//! let joined: String = parts.iter().map(|c| c.text.as_str()).collect();
//! assert_eq!(joined, text);
//! ```

use rand::Rng;

use crate::detect::{merge, CharIndex, Span};

use super::{DeidOutput, Deidentifier};

/// Sizes of a stream's fragments, in code points (OpenMed's `window_chars`,
/// `tokenizer_context_chars`, `max_entity_chars`, accepted as OpenMed's stream requests
/// send them; they size the lines, not detection, which reads the whole text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    /// Largest window OpenMed hands its detector (context included).
    pub window_chars: usize,
    /// Committed text OpenMed keeps before each window as left context.
    pub tokenizer_context_chars: usize,
    /// Longest identifier OpenMed guarantees not to split.
    pub max_entity_chars: usize,
}

impl Default for StreamConfig {
    /// OpenMed's defaults: 4096, 128, 512.
    fn default() -> Self {
        StreamConfig {
            window_chars: 4096,
            tokenizer_context_chars: 128,
            max_entity_chars: 512,
        }
    }
}

/// Smallest number of new code points a window commits beyond the held-back tail.
const MIN_PROGRESS_CHARS: usize = 64;

impl StreamConfig {
    /// New code points per fragment: what one of OpenMed's windows commits,
    /// `window_chars - context`, but at least `max_entity_chars + 64`.
    pub fn step_chars(&self) -> usize {
        self.window_chars
            .saturating_sub(self.tokenizer_context_chars)
            .max(self.max_entity_chars.max(1) + MIN_PROGRESS_CHARS)
    }
}

/// A fragment of the text, with the spans inside it.
#[derive(Clone, Debug, PartialEq)]
pub struct Commit {
    /// Code-point offset of `text` in the original text.
    pub offset: usize,
    /// The original text of this fragment.
    pub text: String,
    /// The spans inside the fragment, in original-text code points, sorted, disjoint.
    pub spans: Vec<Span>,
}

impl Commit {
    /// De-identifies the fragment with the request's [`Deidentifier`] (so surrogates and
    /// the date offset stay consistent across fragments).
    pub fn redact<R: Rng>(&self, deid: &mut Deidentifier<R>) -> DeidOutput {
        deid.apply_at(&self.text, self.offset, &self.spans)
    }
}

/// Cuts `text`, whose spans (code points, any order, overlaps allowed) are all known, into
/// fragments of about [`StreamConfig::step_chars`] code points: see the module docs.
/// Spans past the end of the text are clipped to it.
pub fn fragments(text: &str, spans: Vec<Span>, cfg: StreamConfig) -> Vec<Commit> {
    let idx = CharIndex::new(text);
    let total = idx.char_len();
    // Widened as `Deidentifier::apply` widens them (a date that begins an ISO timestamp
    // covers it), so that no cut falls inside what the single-shot output replaces whole.
    let spans = super::whole_timestamps(
        text,
        &idx,
        merge::resolve(
            spans
                .into_iter()
                .map(|mut s| {
                    s.end = s.end.min(total);
                    s
                })
                .collect(),
        ),
    );
    let step = cfg.step_chars();
    let is_ws = |c: usize| c < total && idx.slice(text, c, c + 1).chars().all(char::is_whitespace);
    let mut out = Vec::new();
    let mut committed = 0;
    let mut next_span = 0;
    while committed < total {
        let target = committed + step;
        let mut cut = if target >= total {
            total
        } else {
            // The largest cut in (committed, target] next to whitespace, else target.
            (committed + 1..=target)
                .rev()
                .find(|&c| is_ws(c - 1) || is_ws(c))
                .unwrap_or(target)
        };
        // Spans end in order, so the first that ends past the cut is the one crossing it.
        while spans.get(next_span).is_some_and(|s| s.end <= committed) {
            next_span += 1;
        }
        if let Some(s) = spans[next_span..]
            .iter()
            .find(|s| s.end > cut)
            .filter(|s| s.start < cut)
        {
            cut = if s.start > committed { s.start } else { s.end };
        }
        let inside: Vec<Span> = spans[next_span..]
            .iter()
            .take_while(|s| s.end <= cut)
            .cloned()
            .collect();
        next_span += inside.len();
        out.push(Commit {
            offset: committed,
            text: idx.slice(text, committed, cut).to_owned(),
            spans: inside,
        });
        committed = cut;
    }
    out
}

#[cfg(test)]
mod tests;
