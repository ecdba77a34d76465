//! Allow and deny lists: terms a site decides about whatever the detectors say.
//!
//! A clinic's own drug or device names, staff roles and the like must never be masked
//! (allow); a study's site names and local nicknames must always be (deny). The lists come
//! from the settings (`deid.allow_terms`, `deid.deny_terms`) and from each request
//! (`"allow"`, `"deny"`), and are applied to the detected spans before any transform, so a
//! denied term gets a surrogate like any other entity.
//!
//! A term is a literal (matched case-insensitively, on word boundaries) or, written
//! `/…/`, a regular expression (Rust `regex` syntax, case-sensitive unless it says `(?i)`).
//! An allowed term removes a detected span whose whole text it matches, and is cut out of a
//! longer one (the rest of it stays masked); a denied term adds
//! a span (`OTHER`) wherever it occurs and replaces the detected spans it overlaps. Deny
//! wins over allow: a term in both lists is masked, the safe side for a de-identifier.
//!
//! Bounded: at most [`MAX_TERMS`] terms a list, each at most [`MAX_TERM_CHARS`] characters,
//! each regex compiled under a size limit; errors name the list and the position of a bad
//! term, never the term.

use super::{CharIndex, Label, Source, Span};

/// Most terms in one list.
pub const MAX_TERMS: usize = 256;
/// Longest term, in characters.
pub const MAX_TERM_CHARS: usize = 256;
/// Compiled size limit of one term's regex.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// The confidence reported for a denied term.
const DENY_SCORE: f32 = 1.0;

/// A list that cannot be used, with the 0-based position of the bad term.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TermsError {
    /// Returned for more than [`MAX_TERMS`] terms.
    #[error("the {list} list has more than {MAX_TERMS} terms")]
    TooMany {
        /// `allow` or `deny`.
        list: &'static str,
    },
    /// Returned for an empty term or one over [`MAX_TERM_CHARS`] characters.
    #[error("{list}[{index}] must be 1 to {MAX_TERM_CHARS} characters")]
    Length {
        /// `allow` or `deny`.
        list: &'static str,
        /// Position of the term.
        index: usize,
    },
    /// Returned for a `/…/` term that is not a valid regex (or is too large).
    #[error("{list}[{index}] is not a valid regular expression")]
    Regex {
        /// `allow` or `deny`.
        list: &'static str,
        /// Position of the term.
        index: usize,
    },
}

/// One compiled term.
#[derive(Debug, Clone)]
struct Term {
    /// Finds occurrences (deny): the literal on word boundaries, or the regex.
    find: regex::Regex,
    /// Matches a whole span (allow): the same, anchored.
    whole: regex::Regex,
}

impl Term {
    fn parse(list: &'static str, index: usize, raw: &str) -> Result<Term, TermsError> {
        let n = raw.chars().count();
        if raw.trim().is_empty() || n > MAX_TERM_CHARS {
            return Err(TermsError::Length { list, index });
        }
        let pattern = match raw.strip_prefix('/').and_then(|r| r.strip_suffix('/')) {
            Some(re) if !re.is_empty() => re.to_string(),
            _ => format!(r"(?i)\b{}\b", regex::escape(raw.trim())),
        };
        let build = |p: &str| {
            regex::RegexBuilder::new(p)
                .size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map_err(|_| TermsError::Regex { list, index })
        };
        Ok(Term {
            find: build(&pattern)?,
            whole: build(&format!("^(?:{pattern})$"))?,
        })
    }
}

/// Compiled allow and deny lists.
#[derive(Debug, Clone, Default)]
pub struct Terms {
    allow: Vec<Term>,
    deny: Vec<Term>,
}

impl Terms {
    /// Compiles both lists.
    ///
    /// # Errors
    /// [`TermsError`] for the first bad list or term.
    pub fn parse<A: AsRef<str>, D: AsRef<str>>(
        allow: &[A],
        deny: &[D],
    ) -> Result<Terms, TermsError> {
        Ok(Terms {
            allow: compile("allow", allow)?,
            deny: compile("deny", deny)?,
        })
    }

    /// True when neither list has a term.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// These lists followed by `other`'s (a request's terms after the settings').
    pub fn with(&self, other: &Terms) -> Terms {
        Terms {
            allow: self.allow.iter().chain(&other.allow).cloned().collect(),
            deny: self.deny.iter().chain(&other.deny).cloned().collect(),
        }
    }

    /// Applies the lists to the spans detected in `text`: allowed spans go, denied terms
    /// come in (replacing what they overlap). The result is sorted by start.
    pub fn apply(&self, text: &str, spans: Vec<Span>) -> Vec<Span> {
        if self.is_empty() {
            return spans;
        }
        let idx = CharIndex::new(text);
        let mut denied: Vec<Span> = Vec::new();
        for t in &self.deny {
            for m in t.find.find_iter(text).filter(|m| !m.is_empty()) {
                let (start, end) = (idx.char_at_byte(m.start()), idx.char_at_byte(m.end()));
                if start < end {
                    denied.push(Span::new(
                        start,
                        end,
                        Label::Other,
                        DENY_SCORE,
                        Source::Rule,
                    ));
                }
            }
        }
        // Where an allowed term occurs: a span inside one (`Wound Care` of an allowed
        // `Wound Care Team`) is part of the term, never masked.
        let allowed: Vec<(usize, usize)> = self
            .allow
            .iter()
            .flat_map(|t| t.find.find_iter(text))
            .filter(|m| !m.is_empty())
            .map(|m| (idx.char_at_byte(m.start()), idx.char_at_byte(m.end())))
            .collect();
        let mut out: Vec<Span> = spans
            .into_iter()
            .filter(|s| {
                let covered = idx.slice(text, s.start, s.end).trim();
                !self.allow.iter().any(|t| t.whole.is_match(covered))
            })
            .filter(|s| !allowed.iter().any(|&(b, e)| b <= s.start && s.end <= e))
            .flat_map(|s| self.cut_allowed(text, &idx, s))
            .filter(|s| !denied.iter().any(|d| d.start < s.end && s.start < d.end))
            .collect();
        denied.sort_by_key(|d| (d.start, std::cmp::Reverse(d.end)));
        // Overlapping denied matches become one span each run.
        let mut merged: Vec<Span> = Vec::new();
        for d in denied {
            match merged.last_mut() {
                Some(last) if d.start < last.end => last.end = last.end.max(d.end),
                _ => merged.push(d),
            }
        }
        out.extend(merged);
        out.sort_by_key(|s| (s.start, s.end));
        out
    }
}

impl Terms {
    /// `s` without the allowed terms inside it: a span the model drew over an allowed
    /// term and its neighbours (`Lasix. Hgb 10.4`) keeps the neighbours and loses the
    /// term, which is never masked, as the settings promise (the whole span used to be
    /// masked, term and all). Each remaining part is trimmed of the separators around it
    /// and kept if it still holds a letter or digit.
    fn cut_allowed(&self, text: &str, idx: &CharIndex, s: Span) -> Vec<Span> {
        if self.allow.is_empty() {
            return vec![s];
        }
        let covered = idx.slice(text, s.start, s.end);
        let base = idx.byte(s.start);
        let mut cuts: Vec<(usize, usize)> = self
            .allow
            .iter()
            .flat_map(|t| t.find.find_iter(covered).map(|m| (m.start(), m.end())))
            .filter(|(b, e)| b < e)
            .collect();
        if cuts.is_empty() {
            return vec![s];
        }
        cuts.sort_unstable();
        let mut parts = Vec::new();
        let mut from = 0;
        for (b, e) in cuts {
            if b > from {
                parts.push((from, b));
            }
            from = from.max(e);
        }
        parts.push((from, covered.len()));
        parts
            .into_iter()
            .filter_map(|(b, e)| {
                let part = &covered[b..e];
                let lead = part.len()
                    - part
                        .trim_start_matches(|c: char| !c.is_alphanumeric())
                        .len();
                let kept =
                    part[lead..].trim_end_matches(|c: char| c.is_whitespace() || ",;:".contains(c));
                if !kept.chars().any(char::is_alphanumeric) {
                    return None;
                }
                let (pb, pe) = (base + b + lead, base + b + lead + kept.len());
                let mut piece = s.clone();
                piece.start = idx.char_at_byte(pb);
                piece.end = idx.char_at_byte(pe);
                (piece.start < piece.end).then_some(piece)
            })
            .collect()
    }
}

fn compile<T: AsRef<str>>(list: &'static str, raw: &[T]) -> Result<Vec<Term>, TermsError> {
    if raw.len() > MAX_TERMS {
        return Err(TermsError::TooMany { list });
    }
    raw.iter()
        .enumerate()
        .map(|(i, t)| Term::parse(list, i, t.as_ref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sp(start: usize, end: usize, label: Label) -> Span {
        Span::new(start, end, label, 0.9, Source::Model)
    }

    fn texts(text: &str, spans: &[Span]) -> Vec<String> {
        let idx = CharIndex::new(text);
        spans
            .iter()
            .map(|s| idx.slice(text, s.start, s.end).to_string())
            .collect()
    }

    /// An allowed term inside a longer span is cut out of it; the rest stays masked.
    #[test]
    fn an_allowed_term_inside_a_span_is_cut_out_of_it() {
        let text = "Started on Lasix. Hgb 10.4, Plt 210.";
        let spans = vec![sp(11, 26, Label::StreetAddress), sp(28, 35, Label::Zipcode)];
        let terms = Terms::parse(&["lasix", "/Plt [0-9]+/"], &[] as &[&str]).expect("terms");
        let out = terms.apply(text, spans);
        assert_eq!(texts(text, &out), ["Hgb 10.4"]);
        // And a span inside an allowed term is part of it.
        let text = "Seen by the Wound Care Team today.";
        let terms = Terms::parse(&["Wound Care Team"], &[] as &[&str]).expect("terms");
        assert!(terms
            .apply(text, vec![sp(12, 22, Label::Organization)])
            .is_empty());
    }

    #[test]
    fn allowed_terms_keep_their_text_and_denied_terms_are_found() {
        let text = "Seen at Oakridge by Nurse Keppra; Dr. Lee prescribed Keppra.";
        let spans = vec![
            sp(8, 16, Label::Organization),
            sp(26, 32, Label::LastName),
            sp(38, 41, Label::LastName),
            sp(53, 59, Label::FirstName),
        ];
        let terms = Terms::parse(&["keppra"], &["Oakridge", "/Nurse [A-Z][a-z]+/"]).expect("valid");
        let out = terms.apply(text, spans);
        assert_eq!(texts(text, &out), ["Oakridge", "Nurse Keppra", "Lee"]);
        assert!(out.iter().filter(|s| s.label == Label::Other).count() == 2);
    }

    #[test]
    fn literals_match_whole_words_case_insensitively() {
        let text = "OAKRIDGE clinic, not Oakridgeville.";
        let out = Terms::parse::<&str, _>(&[], &["oakridge"])
            .expect("valid")
            .apply(text, vec![]);
        assert_eq!(texts(text, &out), ["OAKRIDGE"]);
    }

    #[test]
    fn deny_wins_over_allow() {
        let text = "Site Alpha";
        let out = Terms::parse(&["Site Alpha"], &["Site Alpha"])
            .expect("valid")
            .apply(text, vec![sp(0, 10, Label::Organization)]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].label, Label::Other);
    }

    #[test]
    fn bad_lists_name_the_position_never_the_term() {
        let e = Terms::parse::<&str, &str>(&["ok", "/Canary(/"], &[]).expect_err("bad regex");
        assert_eq!(
            e,
            TermsError::Regex {
                list: "allow",
                index: 1
            }
        );
        assert!(!e.to_string().contains("Canary"));
        let many: Vec<String> = (0..=MAX_TERMS).map(|i| format!("t{i}")).collect();
        assert!(matches!(
            Terms::parse::<&str, _>(&[], &many),
            Err(TermsError::TooMany { list: "deny" })
        ));
        let long = "x".repeat(MAX_TERM_CHARS + 1);
        assert!(matches!(
            Terms::parse(&[long], &[""; 0]),
            Err(TermsError::Length { index: 0, .. })
        ));
        assert!(Terms::parse(&[" "], &[""; 0]).is_err());
    }

    proptest! {
        #[test]
        fn denied_spans_index_the_text_by_code_points(text in "[a-zé ü日本]{0,40}", term in "[a-zé日]{1,3}") {
            let terms = Terms::parse::<&str, _>(&[], &[term.as_str()]).expect("valid");
            let out = terms.apply(&text, vec![]);
            let n = text.chars().count();
            for s in &out {
                prop_assert!(s.start < s.end && s.end <= n);
                let covered: String = text.chars().skip(s.start).take(s.end - s.start).collect();
                prop_assert_eq!(covered.to_lowercase(), term.to_lowercase());
            }
        }
    }
}
