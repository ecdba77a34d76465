//! The streaming carry buffer: a sans-IO state machine that turns a text arriving in
//! chunks into detection windows and committed, never-changing output fragments.
//!
//! # Why sans-IO
//!
//! Detection on the streaming routes is guarded (breaker, deadline, bulkhead) and async;
//! the buffering rules are pure arithmetic on code points. Keeping them apart means the
//! buffer is tested exhaustively with a synchronous detector (the rule recognizer), and
//! the server drives it with whatever guarded call it has:
//!
//! ```
//! use phiguard::deid::{chunks_of, CarryBuffer, StreamConfig};
//! use phiguard::detect::RuleRecognizer;
//!
//! let rules = RuleRecognizer::new();
//! let text = "Call 555-123-4567 on 01/02/2020.";
//! let mut buf = CarryBuffer::new(StreamConfig::default());
//! let mut out = Vec::new();
//! for piece in chunks_of(text, 7) {
//!     buf.push(piece);
//!     while let Some(w) = buf.next_window() {
//!         let spans = rules.find(w.text);
//!         out.extend(buf.commit(spans));
//!     }
//! }
//! buf.finish();
//! while let Some(w) = buf.next_window() {
//!     let spans = rules.find(w.text);
//!     out.extend(buf.commit(spans));
//! }
//! let joined: String = out.iter().map(|c| c.text.as_str()).collect();
//! assert_eq!(joined, text);
//! ```
//!
//! # The guarantees and how they are kept
//!
//! - *Fragments never split an identifier.* A window is committed only up to a cut point
//!   `max_entity_chars` before its end (the held-back tail), moved back to a whitespace
//!   boundary and then to the start of any span that crosses it. An entity that crosses
//!   the cut is at most `max_entity_chars` long, so it lies wholly inside the window and
//!   is seen.
//! - *Committed text never changes.* Committed code points are never re-emitted; the next
//!   window starts with up to `tokenizer_context_chars` of them as left context (so
//!   context words and tokenizer state are the same as in a single pass), and spans lying
//!   entirely in that context are ignored. A span that reaches back into it is clipped to
//!   the uncommitted part (recall first: the new part is still redacted).
//! - *Offsets are original-text code points*, in windows, spans and commits.
//! - *Progress.* A window holds at most `window_chars` code points; when that is not more
//!   than context + tail, the window is widened (see [`StreamConfig::step_chars`]). A span
//!   longer than `max_entity_chars` that starts at the commit point is committed whole.

use rand::Rng;

use crate::detect::{merge, CharIndex, Span};

use super::{DeidOutput, Deidentifier};

/// Sizes of the carry buffer, in code points (OpenMed's `window_chars`,
/// `tokenizer_context_chars`, `max_entity_chars`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    /// Largest window handed to the detector (context included).
    pub window_chars: usize,
    /// Committed text kept before each window as left context.
    pub tokenizer_context_chars: usize,
    /// Longest identifier the buffer guarantees not to split; this much is held back.
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
    /// New (uncommitted) code points per full window: `window_chars - context`, but at
    /// least `max_entity_chars + 64` so that every window can commit something.
    pub fn step_chars(&self) -> usize {
        self.window_chars
            .saturating_sub(self.tokenizer_context_chars)
            .max(self.max_entity_chars.max(1) + MIN_PROGRESS_CHARS)
    }
}

/// A window to run detection on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window<'a> {
    /// The text to detect on (left context included).
    pub text: &'a str,
    /// Code-point offset of `text` in the original text.
    pub offset: usize,
}

/// Text that is now final, with the spans inside it.
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

#[derive(Clone, Copy, Debug)]
struct Pending {
    start: usize,
    end: usize,
    last: bool,
}

/// The carry buffer. See the module docs for the protocol and guarantees.
#[derive(Debug)]
pub struct CarryBuffer {
    cfg: StreamConfig,
    /// Received text from code point `base` on.
    buf: String,
    base: usize,
    /// Code points received in total.
    total: usize,
    /// Code points committed.
    committed: usize,
    finished: bool,
    pending: Option<Pending>,
    max_buffered: usize,
}

impl CarryBuffer {
    /// An empty buffer.
    pub fn new(cfg: StreamConfig) -> Self {
        CarryBuffer {
            cfg,
            buf: String::new(),
            base: 0,
            total: 0,
            committed: 0,
            finished: false,
            pending: None,
            max_buffered: 0,
        }
    }

    /// Appends received text.
    pub fn push(&mut self, piece: &str) {
        self.buf.push_str(piece);
        self.total += piece.chars().count();
        self.max_buffered = self.max_buffered.max(self.total - self.base);
    }

    /// Marks the end of the input: the remaining text becomes windows that commit fully.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// Code points committed so far.
    pub fn committed_chars(&self) -> usize {
        self.committed
    }

    /// Largest number of code points held at once (for the stream audit).
    pub fn max_buffered_chars(&self) -> usize {
        self.max_buffered
    }

    /// The next window to detect on, or `None` until more text arrives (or, after
    /// [`finish`](Self::finish), when everything is committed). Call
    /// [`commit`](Self::commit) with the window's spans before asking again; asking again
    /// without committing returns the same window.
    pub fn next_window(&mut self) -> Option<Window<'_>> {
        let uncommitted = self.total - self.committed;
        if uncommitted == 0 {
            return None;
        }
        let step = self.cfg.step_chars();
        if !self.finished && uncommitted < step {
            return None;
        }
        let end = (self.committed + step).min(self.total);
        let last = self.finished && end == self.total;
        let idx = self.index_upto(end);
        let rel = |p: usize| p - self.base;
        // Left context, started at a whitespace boundary when one is available so that a
        // half token never opens the window.
        let mut start = self
            .committed
            .saturating_sub(self.cfg.tokenizer_context_chars)
            .max(self.base);
        if start > self.base && start < self.committed {
            let ctx = idx.slice(&self.buf, rel(start), rel(self.committed));
            let prev_ws = idx
                .slice(&self.buf, rel(start) - 1, rel(start))
                .chars()
                .all(char::is_whitespace);
            if !prev_ws {
                if let Some(k) = ctx.chars().position(char::is_whitespace) {
                    start += k + 1;
                }
            }
        }
        self.pending = Some(Pending { start, end, last });
        let text = idx.slice(&self.buf, rel(start), rel(end));
        Some(Window {
            text,
            offset: start,
        })
    }

    /// Commits what the last window allows, given the detector's spans for it (in the
    /// window's own code-point offsets). Returns `None` when no window is pending.
    pub fn commit(&mut self, spans: Vec<Span>) -> Option<Commit> {
        let p = self.pending.take()?;
        let width = p.end - p.start;
        let shifted: Vec<Span> = spans
            .into_iter()
            .filter(|s| s.start < s.end && s.end <= width)
            .map(|mut s| {
                s.start += p.start;
                s.end += p.start;
                s
            })
            .collect();
        let mut spans: Vec<Span> = merge::resolve(shifted)
            .into_iter()
            .filter(|s| s.end > self.committed)
            .map(|mut s| {
                s.start = s.start.max(self.committed);
                s
            })
            .collect();
        let idx = self.index_upto(p.end);
        let rel = |q: usize| q - self.base;
        let mut cut = if p.last {
            p.end
        } else {
            let target = p
                .end
                .saturating_sub(self.cfg.max_entity_chars)
                .max(self.committed + 1);
            self.whitespace_cut(&idx, target)
        };
        if let Some(s) = spans.iter().find(|s| s.start < cut && s.end > cut) {
            cut = if s.start > self.committed {
                s.start
            } else {
                s.end
            };
        }
        spans.retain(|s| s.end <= cut);
        let text = idx
            .slice(&self.buf, rel(self.committed), rel(cut))
            .to_owned();
        let commit = Commit {
            offset: self.committed,
            text,
            spans,
        };
        self.committed = cut;
        self.trim(&idx);
        Some(commit)
    }

    /// Index of the buffered text up to code point `upto` (original offsets), so a large
    /// pushed piece costs one window's work per window, not the whole piece's.
    fn index_upto(&self, upto: usize) -> CharIndex {
        let byte = self
            .buf
            .char_indices()
            .nth(upto - self.base)
            .map_or(self.buf.len(), |(b, _)| b);
        CharIndex::new(&self.buf[..byte])
    }

    /// The largest cut in `(committed, target]` that sits next to whitespace, else
    /// `target`.
    fn whitespace_cut(&self, idx: &CharIndex, target: usize) -> usize {
        let lo = self.committed + 1;
        let window = idx.slice(&self.buf, lo - 1 - self.base, target - self.base);
        // chars()[k] is the code point at lo - 1 + k; a cut at c is good when the code
        // point before it (c - 1) or at it (c) is whitespace.
        let ws: Vec<bool> = window.chars().map(char::is_whitespace).collect();
        let at = |c: usize| -> bool {
            let before = ws.get(c - lo).copied().unwrap_or(false);
            let here = ws.get(c - lo + 1).copied().unwrap_or(false);
            before || here
        };
        (lo..=target).rev().find(|c| at(*c)).unwrap_or(target)
    }

    /// Drops text that can no longer be context.
    fn trim(&mut self, idx: &CharIndex) {
        let keep_from = self
            .committed
            .saturating_sub(self.cfg.tokenizer_context_chars + 1);
        if keep_from > self.base {
            let b = idx.byte(keep_from - self.base);
            self.buf.drain(..b);
            self.base = keep_from;
        }
    }
}

/// Splits `text` into pieces of at most `chunk_size` code points (at least one), on
/// code-point boundaries.
pub fn chunks_of(text: &str, chunk_size: usize) -> impl Iterator<Item = &str> {
    let size = chunk_size.max(1);
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = rest.char_indices().nth(size).map_or(rest.len(), |(b, _)| b);
        let (head, tail) = rest.split_at(cut);
        rest = tail;
        Some(head)
    })
}

#[cfg(test)]
mod tests;
