//! Protected terms: drug names, disease names and eponyms that are never a person.
//!
//! # Why a list and not a better model
//!
//! "Parkinson", "Hodgkin" and "Crohn" are surnames in a model's eyes, and brand names
//! such as "Keppra" or "Coumadin" look like capitalised names; masking them destroys the
//! clinical meaning of a note without protecting anyone. A small committed list
//! (`lists/protected_terms.txt`, our own, CC0) vetoes *name* labels on spans whose every
//! word is a protected term. It never removes dates, numbers or places, so it cannot open
//! a leak outside names, and a rule span (a title before the word: "Dr. Parkinson") keeps
//! the name because only model spans and unanchored heuristics are filtered.

use std::collections::HashSet;
use std::sync::OnceLock;

use super::{CharIndex, Label, Source, Span};

const RAW: &str = include_str!("lists/protected_terms.txt");

/// Clinical head nouns after which an ambiguous term (`?Bishop`) is an eponym.
const HEADS: &[&str] = &[
    "disease",
    "syndrome",
    "score",
    "sign",
    "signs",
    "test",
    "lymphoma",
    "palsy",
    "esophagus",
    "oesophagus",
    "contracture",
    "procedure",
    "maneuver",
    "manoeuvre",
    "phenomenon",
    "criteria",
    "scale",
    "classification",
    "thyroiditis",
    "ulcer",
    "catheter",
    "tumor",
    "tumour",
    "fundoplication",
    "chorea",
    "triad",
    "reflex",
    "fracture",
    "node",
    "sarcoma",
    "stool",
    "rules",
    "rule",
    "pupil",
    "law",
    "point",
    "incision",
];

/// The parsed list, lowercased: `(always, ambiguous)`.
fn terms() -> &'static (HashSet<String>, HashSet<String>) {
    static TERMS: OnceLock<(HashSet<String>, HashSet<String>)> = OnceLock::new();
    TERMS.get_or_init(|| {
        let mut always = HashSet::new();
        let mut ambiguous = HashSet::new();
        for l in RAW.lines().map(str::trim) {
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            match l.strip_prefix('?') {
                Some(a) => ambiguous.insert(a.to_lowercase()),
                None => always.insert(l.to_lowercase()),
            };
        }
        (always, ambiguous)
    })
}

/// True for the person-name labels the list vetoes.
pub(crate) fn is_name_label(label: Label) -> bool {
    matches!(
        label,
        Label::Person | Label::FirstName | Label::LastName | Label::MiddleName
    )
}

/// Strips a trailing possessive (`Crohn's`, `Legionnaires'`).
fn strip_possessive(word: &str) -> &str {
    word.strip_suffix("'s")
        .or_else(|| word.strip_suffix("’s"))
        .or_else(|| word.strip_suffix('\''))
        .or_else(|| word.strip_suffix('’'))
        .unwrap_or(word)
}

/// True when `text` (one word or a phrase) is a protected term, or every word of it is.
/// Ambiguous terms count only through [`is_protected_at`], which sees what follows.
pub fn is_protected(text: &str) -> bool {
    let (t, _) = terms();
    let whole = strip_possessive(text.trim()).to_lowercase();
    if whole.is_empty() {
        return false;
    }
    if t.contains(&whole) {
        return true;
    }
    let mut words = whole
        .split(|c: char| c.is_whitespace() || c == '/')
        .filter(|w| !w.is_empty())
        .peekable();
    words.peek().is_some() && words.all(|w| t.contains(strip_possessive(w)))
}

/// True when `word`, followed in the text by `after`, is protected: an always-protected
/// term, or an ambiguous one followed by a clinical head noun (`Bishop score`).
pub fn is_protected_at(word: &str, after: &str) -> bool {
    if is_protected(word) {
        return true;
    }
    let (_, ambiguous) = terms();
    let w = strip_possessive(word.trim()).to_lowercase();
    if !ambiguous.contains(&w) {
        return false;
    }
    let rest = ["'s", "’s", "'", "’"]
        .iter()
        .find_map(|p| after.strip_prefix(p))
        .unwrap_or(after);
    let next: String = rest
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    HEADS.contains(&next.as_str())
}

/// Drops model name spans whose text is protected (see the module docs).
pub fn drop_protected(text: &str, spans: &mut Vec<Span>) {
    let idx = CharIndex::new(text);
    spans.retain(|s| {
        if s.source != Source::Model || !is_name_label(s.label) || s.end > idx.char_len() {
            return true;
        }
        let after: String = text[idx.byte(s.end)..].chars().take(40).collect();
        !is_protected_at(idx.slice(text, s.start, s.end), &after)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eponyms_and_drugs_are_protected_with_possessives() {
        for w in [
            "Parkinson",
            "Hodgkin",
            "crohn's",
            "Alzheimer’s",
            "Keppra",
            "Coumadin",
            "Legionnaires'",
        ] {
            assert!(is_protected(w), "{w}");
        }
        for w in ["Davis", "Renée", "", "Parkinson Smith", "Bishop"] {
            assert!(!is_protected(w), "{w}");
        }
        assert!(is_protected_at("Bishop", " score 6"));
        assert!(is_protected_at("Wilson", "'s disease"));
        assert!(!is_protected_at("Wilson", ", who agrees"));
    }

    #[test]
    fn only_model_name_spans_are_dropped() {
        let text = "Hodgkin lymphoma; Dr. Hodgkin; Hodgkin";
        let mut spans = vec![
            Span::new(0, 7, Label::LastName, 0.9, Source::Model),
            Span::new(22, 29, Label::LastName, 0.8, Source::Rule),
            Span::new(31, 38, Label::City, 0.9, Source::Model),
        ];
        drop_protected(text, &mut spans);
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].source, Source::Rule);
        assert_eq!(spans[1].label, Label::City);
    }
}
