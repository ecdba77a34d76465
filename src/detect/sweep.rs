//! The final safety sweep: a name, organisation or town found once is masked everywhere in
//! the same text, and a given name found alone gets the surname that follows it.
//!
//! # Why a sweep after merging
//!
//! Every recognizer decides from local evidence: "Mrs. Davis" is a name because of the
//! title, but three lines later "Davis" alone has no anchor and a small model may miss
//! it. That second occurrence is the same person, and leaving it is a leak. After the
//! merge, the sweep takes the text of every name, organisation and town span (at least
//! three letters, not a protected term, not a common word) and marks its other occurrences
//! — the same spelling, or its all-caps and title-case forms — on word boundaries. It only
//! adds spans, so it can never lower recall; it runs within one call, so a streaming
//! window sweeps what it sees. The texts of one document that are detected apart (a
//! table's cells, a FHIR resource's strings) are swept across one another ([`across`]).
//!
//! The same holds within one name: a model that tags `Troy` in `Troy Hodneland` and leaves
//! the rare surname has found a person whose surname is the next word. Before sweeping,
//! every given name is completed with the capitalised word after it when the name
//! heuristics accept that word as a surname.

use std::collections::BTreeMap;

use aho_corasick::AhoCorasick;

use super::context::{surname_after, Surname};
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

/// True for the labels whose text is swept: people, organisations, user names and towns
/// (`LONDON` in an address block, then `I am in LONDON` in a sentence with no cue).
fn swept(label: Label) -> bool {
    is_name_label(label) || matches!(label, Label::Organization | Label::Username | Label::City)
}

/// Adds the surname after every given name (see [`surnames`]), then spans for other
/// occurrences of swept names (see the module docs), and resolves. A given name that only
/// the sweep found may have a surname too (`Troy … a Troy Hodneland fan`), so a second
/// round runs when it does.
pub fn sweep(text: &str, spans: Vec<Span>) -> Vec<Span> {
    let idx = CharIndex::new(text);
    let (spans, _) = surnames(text, &idx, spans);
    let spans = sweep_once(text, &idx, spans);
    match surnames(text, &idx, spans) {
        (spans, true) => sweep_once(text, &idx, spans),
        (spans, false) => spans,
    }
}

/// The free texts of one document (a table's cells, a FHIR resource's strings), each
/// detected on its own: a value swept in one is marked in every other, as the sweep does
/// within one text. `spans` are each text's, in its code points; the texts' own sweeps
/// have run. Rows of a table are usually other patients, so this can mask a name that
/// belongs to someone else: a recall-first choice, as within one text.
pub fn across(texts: &[&str], spans: Vec<Vec<Span>>) -> Vec<Vec<Span>> {
    let idxs: Vec<CharIndex> = texts.iter().map(|t| CharIndex::new(t)).collect();
    let mut needles = Needles::new();
    for ((text, idx), spans) in texts.iter().zip(&idxs).zip(&spans) {
        gather(text, idx, spans, &mut needles);
    }
    let Some(finder) = Finder::new(needles) else {
        return spans;
    };
    texts
        .iter()
        .zip(&idxs)
        .zip(spans)
        .map(|((text, idx), spans)| finder.mark(text, idx, spans))
        .collect()
}

/// One pass of the sweep proper: every other occurrence of a swept value.
fn sweep_once(text: &str, idx: &CharIndex, spans: Vec<Span>) -> Vec<Span> {
    let mut needles = Needles::new();
    gather(text, idx, &spans, &mut needles);
    match Finder::new(needles) {
        Some(finder) => finder.mark(text, idx, spans),
        None => spans,
    }
}

/// The values to sweep, each spelling with the label of the span it came from.
type Needles = BTreeMap<String, Label>;

/// Adds the forms of every swept span's value in `text` to `needles` (the first label
/// seen for a spelling stays).
fn gather(text: &str, idx: &CharIndex, spans: &[Span], needles: &mut Needles) {
    for s in spans {
        if !swept(s.label) || s.end > idx.char_len() {
            continue;
        }
        let value = idx.slice(text, s.start, s.end).trim();
        let letters = value.chars().filter(|c| c.is_alphabetic()).count();
        // A value in lower case is swept nowhere: names are written capitalised, and a
        // lowercase word the model took for one (`Abdomen soft`, `with a walker`) would
        // otherwise be masked at every use in the note. Where it was found it stays
        // masked. Scripts without case (Devanagari, Arabic, Tamil, ...) are swept as before.
        let lowercase =
            value.chars().any(char::is_lowercase) && !value.chars().any(char::is_uppercase);
        if letters < 3 || lowercase || COMMON.contains(&value) || is_protected(value) {
            continue;
        }
        for form in forms(value) {
            needles.entry(form).or_insert(s.label);
        }
    }
}

/// Every needle at once: one pass over a text whatever their number (a table's rows
/// can give thousands), overlapping matches included so that each occurrence is seen.
struct Finder {
    automaton: AhoCorasick,
    labels: Vec<Label>,
}

impl Finder {
    /// None when there is nothing to find.
    fn new(needles: Needles) -> Option<Finder> {
        if needles.is_empty() {
            return None;
        }
        let (patterns, labels): (Vec<String>, Vec<Label>) = needles.into_iter().unzip();
        // The patterns are at most a few thousand short words: building cannot fail on a
        // size limit, and if it did the sweep would only add nothing.
        let automaton = AhoCorasick::new(&patterns).ok()?;
        Some(Finder { automaton, labels })
    }

    /// `spans` plus a span for every occurrence of a needle in `text` on word boundaries,
    /// resolved.
    fn mark(&self, text: &str, idx: &CharIndex, spans: Vec<Span>) -> Vec<Span> {
        let mut found: Vec<(usize, usize, Label)> = Vec::new();
        for m in self.automaton.find_overlapping_iter(text) {
            let (b, e) = (m.start(), m.end());
            // Hyphens and apostrophes join words: `Wolff-Parkinson-White` is not `White`.
            // A name in lower case may sit between hyphens (`castellano-dmitri-labs.txt`):
            // it needs another name beside it anyway ([`beside`]).
            let lower_case = {
                let m = &text[b..e];
                m.chars().any(char::is_lowercase) && !m.chars().any(char::is_uppercase)
            };
            let joined =
                |c: char| c.is_alphanumeric() || (c == '-' && !lower_case) || c == '\'' || c == '’';
            let before_ok = text[..b].chars().next_back().is_none_or(|c| !joined(c));
            let after_ok = text[e..]
                .chars()
                .next()
                .is_none_or(|c| !joined(c) || c == '\'' || c == '’');
            // `Dr. Foley` found once does not make `Foley catheter` a person.
            let term = followed_by_head(&text[e..]);
            if before_ok && after_ok && !term {
                found.push((b, e, self.labels[m.pattern().as_usize()]));
            }
        }
        // Where matches start and end, so that each lower-case match finds its neighbours at
        // once (a table's thousands of matches were compared pair by pair).
        let starts: std::collections::HashSet<usize> = found.iter().map(|m| m.0).collect();
        let ends: std::collections::HashSet<usize> = found.iter().map(|m| m.1).collect();
        let mut out = spans;
        for &(b, e, label) in &found {
            // A name in lower case (`whitfield rosalind in portal`, a file name
            // `whitfield_rosalind.pdf`) counts only beside another of the note's names:
            // alone it is as likely the word (`brown stool` in Mr Brown's note).
            let m = &text[b..e];
            let lower = m.chars().any(char::is_lowercase) && !m.chars().any(char::is_uppercase);
            if lower && !beside(text, (b, e), &starts, &ends) {
                continue;
            }
            let (start, end) = (idx.char_at_byte(b), idx.char_at_byte(e));
            if start < end {
                out.push(Span::new(start, end, label, SWEEP, Source::Rule));
            }
        }
        merge::resolve(out)
    }
}

/// Completes names a recognizer found only in part: a given name followed by a
/// capitalised word that reads as a surname (`Troy Hodneland`, where the model took
/// `Troy` alone) gets that word as its surname, so `replace` and the sweep see the whole
/// name. What counts as a surname is decided by the name heuristics
/// ([`crate::detect::context::surname_after`]); a word some span already covers is left to
/// that span.
/// Returns the spans and whether any was added.
fn surnames(text: &str, idx: &CharIndex, mut spans: Vec<Span>) -> (Vec<Span>, bool) {
    let starts: std::collections::HashSet<usize> = spans.iter().map(|s| s.start).collect();
    let mut added = Vec::new();
    for s in spans.iter().filter(|s| s.label == Label::FirstName) {
        if s.end > idx.char_len() {
            continue;
        }
        let Some(Surname {
            initial,
            word: (b, e),
        }) = surname_after(text, idx.byte(s.end))
        else {
            continue;
        };
        let (start, end) = (idx.char_at_byte(b), idx.char_at_byte(e));
        let first = initial.map_or(start, |(ib, _)| idx.char_at_byte(ib));
        if starts.contains(&first) || starts.contains(&start) {
            continue;
        }
        let score = s.score.min(SWEEP);
        if let Some((ib, ie)) = initial {
            let (i0, i1) = (idx.char_at_byte(ib), idx.char_at_byte(ie));
            added.push(Span::new(i0, i1, Label::MiddleName, score, Source::Rule));
        }
        added.push(Span::new(start, end, Label::LastName, score, Source::Rule));
    }
    // `Lee, Ann` (a schedule's or a census's row): a surname, its comma, and a given name
    // the census lists know. The surname was found and the given name kept.
    for s in spans.iter().filter(|s| s.label == Label::LastName) {
        if s.end > idx.char_len() {
            continue;
        }
        let at = idx.byte(s.end);
        if let Some((b, e)) = given_after_comma(&text[at..]) {
            let (start, end) = (idx.char_at_byte(at + b), idx.char_at_byte(at + e));
            if !starts.contains(&start) {
                let score = s.score.min(SWEEP);
                added.push(Span::new(start, end, Label::FirstName, score, Source::Rule));
            }
        }
    }
    if added.is_empty() {
        return (spans, false);
    }
    spans.extend(added);
    (merge::resolve(spans), true)
}

/// The byte range in `rest` of a given name right after a comma (`, Ann`), when the census
/// lists know it as one and it is no month or weekday (`Smith, May 3`) and a word ends
/// there.
fn given_after_comma(rest: &str) -> Option<(usize, usize)> {
    let after = rest.strip_prefix(',')?;
    let spaces = after.len() - after.trim_start_matches([' ', '\t']).len();
    if spaces == 0 || spaces > 2 {
        return None;
    }
    let b = 1 + spaces;
    let word_len = rest[b..]
        .find(|c: char| !(c.is_alphabetic() || c == '\'' || c == '-'))
        .unwrap_or(rest.len() - b);
    let word = &rest[b..b + word_len];
    let lower = word.to_lowercase();
    let capitalised = word.chars().next().is_some_and(char::is_uppercase)
        && word.chars().skip(1).all(char::is_lowercase);
    let known = super::census::is_female(&lower) || super::census::is_male(&lower);
    let calendar = crate::detect::rules::dates::is_month_or_weekday(&lower);
    (capitalised && word.chars().count() >= 2 && known && !calendar).then_some((b, b + word_len))
}

/// True when another match (by its `starts` and `ends`) is the neighbouring word of the
/// match `m`: only a space, comma, underscore, hyphen or full stop (at most three of them)
/// between them. The separators are ASCII, so three of them are three bytes.
fn beside(
    text: &str,
    m: (usize, usize),
    starts: &std::collections::HashSet<usize>,
    ends: &std::collections::HashSet<usize>,
) -> bool {
    let separator = |g: &str| {
        g.bytes()
            .all(|c| matches!(c, b' ' | b',' | b'_' | b'.' | b'-'))
    };
    (1..=3).any(|n| {
        let after = text
            .get(m.1..m.1 + n)
            .is_some_and(|g| separator(g) && starts.contains(&(m.1 + n)));
        let before =
            m.0.checked_sub(n)
                .and_then(|b| text.get(b..m.0))
                .is_some_and(|g| separator(g) && ends.contains(&(m.0 - n)));
        after || before
    })
}

/// A swept value's spellings: as found, in capitals, in title case and in lower case (the
/// last counts only beside another name, see [`Finder::mark`]).
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
    let mut v = vec![value.to_string(), upper, title, value.to_lowercase()];
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A found name written again in lower case is masked beside another of the note's
    /// names (a reversed name, a file or user name); alone it is read as a word.
    #[test]
    fn a_lower_case_name_is_swept_only_beside_another_name() {
        let text = "Rosalind Whitfield seen. whitfield rosalind in portal; file \
                    whitfield_rosalind.pdf. Mr Brown has brown stool. rosalind-whitfield.txt";
        let spans = vec![
            Span::new(0, 8, Label::FirstName, 0.9, Source::Model),
            Span::new(9, 18, Label::LastName, 0.9, Source::Model),
            Span::new(87, 92, Label::LastName, 0.9, Source::Model),
        ];
        let out = sweep(text, spans);
        let masked: Vec<&str> = out.iter().map(|s| &text[s.start..s.end]).collect();
        assert_eq!(
            masked,
            [
                "Rosalind",
                "Whitfield",
                "whitfield",
                "rosalind",
                "whitfield",
                "rosalind",
                "Brown",
                "rosalind",
                "whitfield"
            ]
        );
    }

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
    fn a_known_given_name_after_a_surname_and_its_comma_is_a_given_name() {
        let text = "Lee, Ann  4471920\nSmith, Jo\tx\nPark, May 3\nKim, Lipid clinic";
        let at = |w: &str| text.find(w).expect("in text");
        let spans: Vec<Span> = ["Lee", "Smith", "Park", "Kim"]
            .iter()
            .map(|w| Span::new(at(w), at(w) + w.len(), Label::LastName, 0.9, Source::Model))
            .collect();
        let given: Vec<&str> = sweep(text, spans)
            .iter()
            .filter(|s| s.label == Label::FirstName)
            .map(|s| &text[s.start..s.end])
            .collect();
        // `May 3` is a date, `Lipid` no name the census knows.
        assert_eq!(given, ["Ann", "Jo"]);
    }

    #[test]
    fn an_eponymous_term_is_not_swept_as_the_person_of_that_name() {
        let text = "Dr. Foley saw her. Foley catheter in place. Foley agreed.";
        let spans = vec![Span::new(4, 9, Label::LastName, 0.8, Source::Rule)];
        let starts: Vec<usize> = sweep(text, spans).iter().map(|s| s.start).collect();
        assert_eq!(starts, vec![4, 44]);
    }

    #[test]
    fn a_given_name_gets_its_surname_and_the_surname_is_swept() {
        // The model found `Alira` only; `Regalado` follows it and is then swept.
        let text = "Regalado sang. Sung by Alira Regalado in 2015.";
        let spans = vec![Span::new(23, 28, Label::FirstName, 0.9, Source::Model)];
        let got: Vec<(usize, usize, Label)> = sweep(text, spans)
            .iter()
            .map(|s| (s.start, s.end, s.label))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 8, Label::LastName),
                (23, 28, Label::FirstName),
                (29, 37, Label::LastName)
            ]
        );
    }

    #[test]
    fn a_given_name_found_by_the_sweep_gets_its_surname_too() {
        let text = "Troy was a huge Troy Hodneland fan.";
        let spans = vec![Span::new(0, 4, Label::FirstName, 0.9, Source::Model)];
        let got: Vec<(usize, usize)> = sweep(text, spans)
            .iter()
            .map(|s| (s.start, s.end))
            .collect();
        assert_eq!(got, vec![(0, 4), (16, 20), (21, 30)]);
    }

    #[test]
    fn a_name_found_in_one_text_of_a_document_is_masked_in_the_others() {
        let texts = [
            "Seen by Dr. Quimby today.",
            "QUIMBY called back; Quimbys is not.",
            "No name.",
        ];
        let spans = vec![
            vec![Span::new(12, 18, Label::LastName, 0.9, Source::Model)],
            vec![],
            vec![],
        ];
        let got: Vec<Vec<(usize, usize, Label)>> = across(&texts, spans)
            .iter()
            .map(|v| v.iter().map(|s| (s.start, s.end, s.label)).collect())
            .collect();
        assert_eq!(
            got,
            vec![
                vec![(12, 18, Label::LastName)],
                vec![(0, 6, Label::LastName)],
                vec![]
            ]
        );
    }

    #[test]
    fn a_lowercase_value_stays_where_it_was_found() {
        let text = "Abdomen soft. Abdomen soft, nontender.";
        let spans = vec![Span::new(8, 12, Label::LastName, 0.9, Source::Model)];
        assert_eq!(sweep(text, spans.clone()), spans);
        // A script without case is swept as before.
        let text = "आरव आया। आरव गया।";
        let spans = vec![Span::new(0, 3, Label::FirstName, 0.9, Source::Model)];
        let starts: Vec<usize> = sweep(text, spans).iter().map(|s| s.start).collect();
        assert_eq!(starts, vec![0, 9]);
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
