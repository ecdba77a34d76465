//! The final safety sweep: a name or organisation found once is masked everywhere in the
//! same text.
//!
//! # Why a sweep after merging
//!
//! Every recognizer decides from local evidence: "Mrs. Davis" is a name because of the
//! title, but three lines later "Davis" alone has no anchor and a small model may miss
//! it. That second occurrence is the same person, and leaving it is a leak. After the
//! merge, the sweep takes the text of every name and organisation span (at least three
//! letters, not a protected term, not a common word) and marks its other occurrences —
//! the same spelling, or its all-caps and title-case forms — on word boundaries. It only
//! adds spans, so it can never lower recall; it runs within one call, so a streaming
//! window sweeps what it sees.

use std::collections::BTreeMap;

use super::protected::{followed_by_head, is_name_label, is_protected};
use super::{merge, CharIndex, Label, Source, Span};

/// Score of a swept span: below the evidence that found the first occurrence.
const SWEEP: f32 = 0.72;

/// Capitalised words that are names too rarely to sweep alone.
const COMMON: &[&str] = &[
    "The", "And", "May", "Will", "Mark", "Grace", "Hope", "Faith", "Joy", "Rose", "June", "April",
    "August", "Max", "Bill", "Art", "Guy", "Sky", "Young", "Long", "Bell", "Page", "Hospital",
    "Clinic", "Health", "Care", "Center", "Centre", "Medical", "Saint", "Mount",
];

/// True for the labels whose text is swept.
fn swept(label: Label) -> bool {
    is_name_label(label) || matches!(label, Label::Organization | Label::Username)
}

/// Adds spans for other occurrences of swept names (see the module docs) and resolves.
pub fn sweep(text: &str, spans: Vec<Span>) -> Vec<Span> {
    let idx = CharIndex::new(text);
    let mut needles: BTreeMap<String, Label> = BTreeMap::new();
    for s in &spans {
        if !swept(s.label) || s.end > idx.char_len() {
            continue;
        }
        let value = idx.slice(text, s.start, s.end).trim();
        let letters = value.chars().filter(|c| c.is_alphabetic()).count();
        if letters < 3 || COMMON.contains(&value) || is_protected(value) {
            continue;
        }
        for form in forms(value) {
            needles.entry(form).or_insert(s.label);
        }
    }
    if needles.is_empty() {
        return spans;
    }
    let mut out = spans;
    for (needle, label) in needles {
        for (b, _) in text.match_indices(needle.as_str()) {
            let e = b + needle.len();
            // Hyphens and apostrophes join words: `Wolff-Parkinson-White` is not `White`.
            let joined = |c: char| c.is_alphanumeric() || c == '-' || c == '\'' || c == '’';
            let before_ok = text[..b].chars().next_back().is_none_or(|c| !joined(c));
            let after_ok = text[e..]
                .chars()
                .next()
                .is_none_or(|c| !joined(c) || c == '\'' || c == '’');
            // `Dr. Foley` found once does not make `Foley catheter` a person.
            let term = followed_by_head(&text[e..]);
            if before_ok && after_ok && !term {
                let (start, end) = (idx.char_at_byte(b), idx.char_at_byte(e));
                if start < end {
                    out.push(Span::new(start, end, label, SWEEP, Source::Rule));
                }
            }
        }
    }
    merge::resolve(out)
}

/// The spelling, its all-caps form and its title-case form.
fn forms(value: &str) -> Vec<String> {
    let upper = value.to_uppercase();
    let title: String = value
        .split(' ')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f
                    .to_uppercase()
                    .chain(c.flat_map(char::to_lowercase))
                    .collect(),
                None => String::new(),
            }
        })
        .collect::<Vec<String>>()
        .join(" ");
    let mut v = vec![value.to_string(), upper, title];
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_found_once_is_masked_everywhere() {
        let text = "Mrs. Davis is here. DAVIS agreed. Davis, again; Davison is not.";
        let spans = vec![Span::new(5, 10, Label::LastName, 0.8, Source::Rule)];
        let out = sweep(text, spans);
        let starts: Vec<usize> = out.iter().map(|s| s.start).collect();
        assert_eq!(starts, vec![5, 20, 34]);
        assert!(out.iter().all(|s| s.label == Label::LastName));
    }

    #[test]
    fn an_eponymous_term_is_not_swept_as_the_person_of_that_name() {
        let text = "Dr. Foley saw her. Foley catheter in place. Foley agreed.";
        let spans = vec![Span::new(4, 9, Label::LastName, 0.8, Source::Rule)];
        let starts: Vec<usize> = sweep(text, spans).iter().map(|s| s.start).collect();
        assert_eq!(starts, vec![4, 44]);
    }

    #[test]
    fn protected_and_short_values_are_not_swept() {
        let text = "Parkinson. Parkinson. Li met Li.";
        let spans = vec![
            Span::new(0, 9, Label::LastName, 0.8, Source::Model),
            Span::new(22, 24, Label::LastName, 0.8, Source::Rule),
        ];
        assert_eq!(sweep(text, spans.clone()), spans);
    }
}
