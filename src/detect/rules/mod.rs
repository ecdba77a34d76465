//! The rule recognizer: HIPAA Safe Harbor identifiers that patterns, checksums and context
//! words can find without a model.
//!
//! # Why rules next to a model
//!
//! A token classifier is good at names and free-form locations and poor at structure: it
//! misses a phone number split over an unusual separator, cannot check a Luhn digit, and
//! never sees more than its window. Rules are the opposite, and they keep working when the
//! model's circuit breaker is open (the opt-in `fallback=rules` degraded mode). Each rule
//! is a regex (compiled once), an optional *context requirement* (a keyword within
//! [`CONTEXT_CHARS`] code points to the left, matched case-insensitively on word
//! boundaries) and a validator (checksum, range or issuance rule, see `checks`). The
//! families and their rationale are documented in `patterns`.
//!
//! # Why bounded left context
//!
//! Bare numbers are the commonest false positive in clinical text (doses, lab values,
//! counts). A bare nine-digit number is an SSN only after "SSN"; a bare ID only after
//! "MRN", "member id" or "acct". Looking a bounded distance to the left keeps the rule
//! local: a window with at least `CONTEXT_CHARS` plus one token of left context sees the
//! same evidence the whole text would.
//!
//! Scores are fixed per pattern; they only matter for overlap resolution
//! ([`crate::detect::merge::resolve`]), where the higher score names the merged span.

pub(crate) mod checks;
pub(crate) mod dates;
pub(crate) mod hl7;
mod patterns;
#[cfg(test)]
mod tests;

use regex::Regex;

use super::{merge, CharIndex, Label, Recognizer, RecognizerError, Source, Span};

/// How many code points to the left of a candidate the context words are looked for.
pub const CONTEXT_CHARS: usize = 32;

/// A context requirement or label override by keyword.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Context {
    /// The pattern stands alone.
    None,
    /// One of the keywords must appear in the left context.
    Required(&'static [&'static str]),
    /// None of the keywords may appear in the left context.
    Forbidden(&'static [&'static str]),
}

/// One compiled rule.
#[derive(Debug)]
pub(crate) struct Pattern {
    /// Stable name for tests and debugging (never request data).
    pub(crate) name: &'static str,
    pub(crate) re: Regex,
    /// Capture group that holds the identifier (0 = the whole match).
    pub(crate) group: usize,
    pub(crate) label: Label,
    pub(crate) score: f32,
    pub(crate) context: Context,
    /// When one of these keywords is in the left context, use the other label
    /// (phone numbers after "fax").
    pub(crate) relabel: Option<(&'static [&'static str], Label)>,
    /// Validator: the accepted prefix of the candidate, or `None`.
    pub(crate) check: fn(&str) -> Option<&str>,
    /// Validator of the whole match when the identifier is a capture group (the state
    /// before a ZIP code).
    pub(crate) full_check: fn(&str) -> bool,
    /// Further items the same evidence covers: a list that follows an accepted match (see
    /// [`dates::listed_month_days`]).
    pub(crate) listed: Option<Listed>,
}

/// The items listed after a rule's match that the match's evidence vouches for, compiled
/// with the rule.
#[derive(Debug)]
pub(crate) struct Listed {
    /// One more item at the start of the rest of a text.
    pub(crate) item: Regex,
    /// Given `item`, a text and the byte end of an accepted match, the items' byte ranges.
    pub(crate) items: ListedItems,
}

/// The function of [`Listed::items`].
pub(crate) type ListedItems = fn(item: &Regex, text: &str, end: usize) -> Vec<(usize, usize)>;

/// The rule recognizer. Regexes are compiled once in [`RuleRecognizer::new`]; the value is
/// immutable afterwards, so one instance can be shared behind an `Arc` by every worker.
#[derive(Debug)]
pub struct RuleRecognizer {
    patterns: Vec<Pattern>,
}

impl RuleRecognizer {
    /// Compiles every rule.
    ///
    /// # Panics
    /// Only if a built-in pattern does not compile, which the unit tests rule out.
    pub fn new() -> Self {
        RuleRecognizer {
            patterns: patterns::all(),
        }
    }

    /// Finds the rule-detectable PHI in `text`: code-point offsets, sorted, non-overlapping
    /// (overlaps are resolved with [`merge::resolve`]).
    pub fn find(&self, text: &str) -> Vec<Span> {
        let idx = CharIndex::new(text);
        let mut spans = Vec::new();
        for p in &self.patterns {
            for caps in matches(p, text) {
                let Some(m) = caps.get(p.group) else { continue };
                if !caps
                    .get(0)
                    .is_some_and(|whole| (p.full_check)(whole.as_str()))
                {
                    continue;
                }
                let Some(accepted) = (p.check)(m.as_str()) else {
                    continue;
                };
                if accepted.is_empty() {
                    continue;
                }
                let (b_start, b_end) = (m.start(), m.start() + accepted.len());
                // The left context is only built for rules that read it.
                let needs_left = !matches!(p.context, Context::None) || p.relabel.is_some();
                let left = if needs_left {
                    left_context(text, b_start)
                } else {
                    String::new()
                };
                match p.context {
                    Context::Required(words) if !has_keyword(&left, words) => continue,
                    Context::Forbidden(words) if has_keyword(&left, words) => continue,
                    _ => {}
                }
                let label = match p.relabel {
                    Some((words, other)) if has_keyword(&left, words) => other,
                    _ => p.label,
                };
                let (start, end) = (idx.char_at_byte(b_start), idx.char_at_byte(b_end));
                if start < end {
                    spans.push(Span::new(start, end, label, p.score, Source::Rule));
                }
                let listed = p.listed.as_ref();
                for (b, e) in listed.map_or_else(Vec::new, |l| (l.items)(&l.item, text, b_end)) {
                    let (start, end) = (idx.char_at_byte(b), idx.char_at_byte(e));
                    spans.push(Span::new(start, end, label, p.score, Source::Rule));
                }
            }
        }
        for (b, e, label, score) in hl7::find(text) {
            let (start, end) = (idx.char_at_byte(b), idx.char_at_byte(e));
            if start < end {
                spans.push(Span::new(start, end, label, score, Source::Rule));
            }
        }
        merge::resolve(spans)
    }

    /// Names of the compiled rules, in evaluation order (for diagnostics and tests).
    pub fn rule_names(&self) -> Vec<&'static str> {
        self.patterns.iter().map(|p| p.name).collect()
    }
}

/// The matches of `p` in `text`, left to right. A rule whose span is a group may consume a
/// delimiter after it (`(?:[^\p{L}]|$)`, a `.` and a blank: the regex crate has no
/// look-ahead); the next search starts where the group ends, not where the match does, so
/// that delimiter can begin the next match (`ঠিকানা ১২ রোড. ঠিকানা ১৪ রোড`: the second label
/// was never read). A rule whose span is the whole match searches on from its end.
fn matches<'t>(p: &'t Pattern, text: &'t str) -> impl Iterator<Item = regex::Captures<'t>> + 't {
    let mut at = Some(0);
    std::iter::from_fn(move || {
        let caps = p.re.captures_at(text, at?)?;
        let whole = caps.get(0)?;
        let end = match caps.get(p.group) {
            Some(m) if p.group != 0 && m.end() > whole.start() => m.end(),
            _ => whole.end(),
        };
        // An empty match moves on by one character, as `captures_iter` does.
        at = if end > whole.start() || end > at.unwrap_or(0) {
            Some(end)
        } else {
            text[end..].chars().next().map(|c| end + c.len_utf8())
        };
        Some(caps)
    })
}

impl Default for RuleRecognizer {
    fn default() -> Self {
        RuleRecognizer::new()
    }
}

impl Recognizer for RuleRecognizer {
    fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
        Ok(texts.iter().map(|t| self.find(t)).collect())
    }
}

/// The lowercased [`CONTEXT_CHARS`] code points before byte `b_start`.
fn left_context(text: &str, b_start: usize) -> String {
    let before = &text[..b_start];
    let from = before
        .char_indices()
        .rev()
        .nth(CONTEXT_CHARS - 1)
        .map_or(0, |(b, _)| b);
    before[from..].to_lowercase()
}

/// True when one of `words` occurs in `left` on word boundaries (alphanumeric ends of a
/// keyword must not touch other alphanumerics).
fn has_keyword(left: &str, words: &[&str]) -> bool {
    words.iter().any(|w| {
        let alnum_start = w.chars().next().is_some_and(char::is_alphanumeric);
        let alnum_end = w.chars().last().is_some_and(char::is_alphanumeric);
        left.match_indices(w).any(|(i, _)| {
            let before_ok = !alnum_start
                || left[..i]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !c.is_alphanumeric());
            let after_ok = !alnum_end
                || left[i + w.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric());
            before_ok && after_ok
        })
    })
}
