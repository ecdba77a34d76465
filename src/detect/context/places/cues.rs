//! The cue engine: a [`Cue`] is one row of a family's table (a pattern, the capture group
//! that is the span, its label, score and [`SpanRule`]); [`run`] applies compiled rows in
//! order.
//!
//! Most context heuristics have the same shape: a regex whose capture group is the PHI,
//! trailing punctuation trimmed, and a fixed label and score. Writing them as table rows
//! keeps each family's file a readable list of cues, and puts the little logic they share
//! (trimming, the institution rule) in one place. Heuristics that need more than a match
//! (the region between a city and a postcode, a phone's digit count) stay code in their
//! family's module.

use regex::Regex;

use super::super::{re, ByteSpan};
use super::organization::Institution;
use crate::detect::Label;

/// What happens to a match before it becomes a span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SpanRule {
    /// Trailing sentence punctuation is trimmed.
    Trim,
    /// Trimmed, then read as an institution name ([`Institution::refine`]): a trailing
    /// department is cut, a person or role is dropped, an abbreviation keeps its stop.
    Institution,
}

/// One row of a cue table.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cue {
    /// The regex source; `{NAME}` placeholders are filled from [`super::FRAGMENTS`].
    pub(super) pattern: &'static str,
    /// The capture group that is the span; `0` is the whole match.
    pub(super) group: usize,
    pub(super) label: Label,
    pub(super) score: f32,
    pub(super) rule: SpanRule,
}

impl Cue {
    /// Capture group 1 is the span, trimmed.
    pub(super) const fn new(pattern: &'static str, label: Label, score: f32) -> Self {
        Cue {
            pattern,
            group: 1,
            label,
            score,
            rule: SpanRule::Trim,
        }
    }

    /// Capture group 1 is an institution name ([`SpanRule::Institution`]).
    pub(super) const fn institution(pattern: &'static str, score: f32) -> Self {
        Cue {
            pattern,
            group: 1,
            label: Label::Organization,
            score,
            rule: SpanRule::Institution,
        }
    }

    /// The whole match is the span, not group 1.
    pub(super) const fn whole(self) -> Self {
        Cue { group: 0, ..self }
    }
}

/// A [`Cue`] with its regex compiled.
#[derive(Debug)]
pub(super) struct Compiled {
    pub(super) rx: Regex,
    pub(super) group: usize,
    pub(super) label: Label,
    pub(super) score: f32,
    pub(super) rule: SpanRule,
}

/// Compiles `cue`, filling each `{NAME}` placeholder of its pattern from `fragments`.
///
/// # Panics
/// If the filled pattern does not compile (a programming error the unit tests catch).
pub(super) fn compile(cue: &Cue, fragments: &[(&str, &str)]) -> Compiled {
    let mut pattern = cue.pattern.to_owned();
    for (name, value) in fragments {
        pattern = pattern.replace(name, value);
    }
    Compiled {
        rx: re(&pattern),
        group: cue.group,
        label: cue.label,
        score: cue.score,
        rule: cue.rule,
    }
}

/// Runs `cues` in order over `text`, pushing one span per match of each.
pub(super) fn run(
    cues: &[Compiled],
    institution: &Institution,
    text: &str,
    out: &mut Vec<ByteSpan>,
) {
    for cue in cues {
        for caps in cue.rx.captures_iter(text) {
            let Some(m) = caps.get(cue.group) else {
                continue;
            };
            let (s, mut e) = trim_punct(text, m.start(), m.end());
            if cue.rule == SpanRule::Institution {
                match institution.refine(text, s, e) {
                    Some(end) => e = end,
                    None => continue,
                }
            }
            if s < e {
                out.push(ByteSpan::new(s, e, cue.label, cue.score));
            }
        }
    }
}

/// Trims trailing sentence punctuation from a byte range.
pub(super) fn trim_punct(text: &str, start: usize, end: usize) -> (usize, usize) {
    let trimmed =
        text[start..end].trim_end_matches(['.', ',', ';', ':', ')', '\'', '"', ' ', '\t']);
    (start, start + trimmed.len())
}
