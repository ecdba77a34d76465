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
    /// The most characters the pattern's group named `lead` may hold; a longer lead is
    /// no match. `None`: the pattern has no such group.
    ///
    /// Why not a bounded repeat in the regex: `[\p{L}\p{M}. ]{0,40}` compiles to forty
    /// copies of a class of every letter and mark, 15 ms of every start for one cue (the
    /// rule layer's build is on the critical path of a short `phiguard deid`). `*?` with
    /// its length checked after the match finds the same spans: a match starts at most
    /// once a line, and the lazy lead there is the shortest one that lets the rest match,
    /// so where it is over the bound the bounded pattern had no match on that line either.
    pub(super) lead_max: Option<usize>,
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
            lead_max: None,
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
            lead_max: None,
        }
    }

    /// The whole match is the span, not group 1.
    pub(super) const fn whole(self) -> Self {
        Cue { group: 0, ..self }
    }

    /// The span is capture group `group` (named groups count in the numbering too).
    pub(super) const fn group(self, group: usize) -> Self {
        Cue { group, ..self }
    }

    /// The group named `lead` holds at most `max` characters ([`Cue::lead_max`]).
    pub(super) const fn lead_at_most(self, max: usize) -> Self {
        Cue {
            lead_max: Some(max),
            ..self
        }
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
    pub(super) lead_max: Option<usize>,
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
        lead_max: cue.lead_max,
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
            if let (Some(max), Some(lead)) = (cue.lead_max, caps.name("lead")) {
                if lead.as_str().chars().count() > max {
                    continue;
                }
            }
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
