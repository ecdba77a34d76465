//! The scorer: compares predicted spans (and optionally de-identified texts) with gold
//! documents and produces a [`Report`].
//!
//! Every document is reduced to one label bitmask per code point for gold and one for
//! predictions (a `u32`, one bit per [`Label`]), so character figures for every label and
//! overall come from one pass, overlapping spans need no special case, and the cost is
//! linear in the text. Span figures compare deduplicated `(start, end, label)` triples.

use std::collections::{BTreeMap, BTreeSet};

use super::report::{ratio, ForeignMetrics, LabelMetrics, Leak, LeakBasis, Metrics, Prf, Report};
use super::GoldDoc;
use crate::detect::{Label, Span};

const N_LABELS: usize = Label::ALL.len();

/// Raw counts for one label (or overall), added up over documents.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    gold: usize,
    pred: usize,
    strict_match: usize,
    ov_found: usize,
    ov_correct: usize,
    any_found: usize,
    any_correct: usize,
    char_gold: usize,
    char_pred: usize,
    char_match: usize,
    leak_gold: usize,
    leak_leaked: usize,
}

impl Tally {
    fn metrics(&self) -> Metrics {
        Metrics {
            strict: Prf::from_counts(self.gold, self.pred, self.strict_match, self.strict_match),
            overlap: Prf::from_counts(self.gold, self.pred, self.ov_found, self.ov_correct),
            overlap_any_label: Prf::from_counts(
                self.gold,
                self.pred,
                self.any_found,
                self.any_correct,
            ),
            chars: Prf::from_counts(
                self.char_gold,
                self.char_pred,
                self.char_match,
                self.char_match,
            ),
        }
    }
}

type Triple = (usize, usize, Label);

/// Scores predictions against gold.
///
/// `predicted[i]` are the spans found in `docs[i].text` (code-point offsets; any order;
/// spans past the end of the text are clipped). `redacted[i]`, when given, is the
/// de-identified output of `docs[i]` and switches the leak rate to
/// [`LeakBasis::RedactedOutput`]. Mismatched lengths never panic: a document without
/// predictions is scored as if nothing was found (which lowers recall, so it cannot hide a
/// leak), a document without a redacted text falls back to predicted coverage, and the
/// report carries a warning.
pub fn score(docs: &[GoldDoc], predicted: &[Vec<Span>], redacted: Option<&[String]>) -> Report {
    let mut warnings = Vec::new();
    if predicted.len() != docs.len() {
        warnings.push(format!(
            "{} prediction lists for {} documents; missing ones scored as empty",
            predicted.len(),
            docs.len()
        ));
    }
    if let Some(r) = redacted {
        if r.len() != docs.len() {
            warnings.push(format!(
                "{} de-identified texts for {} documents; the rest measured by coverage",
                r.len(),
                docs.len()
            ));
        }
    }
    let mut per = [Tally::default(); N_LABELS];
    let mut overall = Tally::default();
    let mut leaked_spans = 0usize;
    let mut gold_spans = 0usize;
    let mut characters = 0usize;
    let mut clipped = 0usize;
    let empty: Vec<Span> = Vec::new();
    // Foreign label → (gold spans, found, gold code points, covered code points).
    let mut foreign: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    let mut not_scored = 0usize;
    for (i, doc) in docs.iter().enumerate() {
        let chars: Vec<char> = doc.text.chars().collect();
        let n = chars.len();
        characters += n;
        let pred_spans = predicted.get(i).unwrap_or(&empty);
        let mut pred: BTreeSet<Triple> = BTreeSet::new();
        for s in pred_spans {
            let end = s.end.min(n);
            if end < s.end {
                clipped += 1;
            }
            if s.start < end {
                pred.insert((s.start, end, s.label));
            }
        }
        let gold: BTreeSet<Triple> = doc
            .spans
            .iter()
            .filter(|g| g.start < g.end && g.end <= n)
            .map(|g| (g.start, g.end, g.label))
            .collect();
        gold_spans += gold.len();
        tally_spans(&gold, &pred, &mut per, &mut overall);
        let gold_bits = bitmask(n, &gold);
        let pred_bits = bitmask(n, &pred);
        tally_chars(&gold_bits, &pred_bits, &mut per, &mut overall);
        not_scored += doc.not_scored;
        for f in doc.foreign.iter().filter(|f| f.start < f.end && f.end <= n) {
            let t = foreign.entry(f.label.as_str()).or_default();
            let covered = pred_bits[f.start..f.end]
                .iter()
                .filter(|b| **b != 0)
                .count();
            t[0] += 1;
            t[1] += usize::from(covered > 0);
            t[2] += f.end - f.start;
            t[3] += covered;
        }
        let leaked = match redacted.and_then(|r| r.get(i)) {
            Some(out) => leaked_in_output(&chars, &gold, out),
            None => gold_bits
                .iter()
                .zip(&pred_bits)
                .zip(&chars)
                .map(|((g, p), c)| *g != 0 && *p == 0 && c.is_alphanumeric())
                .collect(),
        };
        for (pos, c) in chars.iter().enumerate() {
            if gold_bits[pos] == 0 || !c.is_alphanumeric() {
                continue;
            }
            overall.leak_gold += 1;
            overall.leak_leaked += usize::from(leaked[pos]);
            for (l, t) in per.iter_mut().enumerate() {
                if gold_bits[pos] & (1 << l) != 0 {
                    t.leak_gold += 1;
                    t.leak_leaked += usize::from(leaked[pos]);
                }
            }
        }
        leaked_spans += gold
            .iter()
            .filter(|(s, e, _)| leaked[*s..*e].iter().any(|b| *b))
            .count();
    }
    if clipped > 0 {
        warnings.push(format!(
            "{clipped} predicted spans ran past the end of their text and were clipped"
        ));
    }
    if not_scored > 0 {
        warnings.push(format!(
            "{not_scored} gold spans of OpenMed labels that are not Safe Harbor identifiers \
             (titles, gender, occupation, amounts, …) were not scored"
        ));
    }
    for (label, t) in &foreign {
        warnings.push(format!(
            "gold label `{label}` is in no known vocabulary: {} spans scored as their own \
             category (and as OTHER); map it with --label-map to score it as a phiguard label",
            t[0]
        ));
    }
    let foreign_labels = foreign
        .into_iter()
        .map(|(label, t)| ForeignMetrics {
            label: label.to_owned(),
            gold_spans: t[0],
            found_any_label: t[1],
            recall_any_label: ratio(t[1], t[0]),
            char_recall: ratio(t[3], t[2]),
        })
        .collect();
    let per_label = Label::ALL
        .iter()
        .zip(per.iter())
        .filter(|(_, t)| t.gold + t.pred > 0)
        .map(|(label, t)| LabelMetrics {
            label: *label,
            metrics: t.metrics(),
            leak_rate: leak_ratio(t.leak_leaked, t.leak_gold),
        })
        .collect();
    let basis = if redacted.is_some() {
        LeakBasis::RedactedOutput
    } else {
        LeakBasis::PredictedCoverage
    };
    Report {
        documents: docs.len(),
        characters,
        overall: overall.metrics(),
        per_label,
        foreign_labels,
        leak: Leak {
            basis,
            rate: leak_ratio(overall.leak_leaked, overall.leak_gold),
            leaked_chars: overall.leak_leaked,
            gold_chars: overall.leak_gold,
            leaked_spans,
            gold_spans,
        },
        slowest: Vec::new(),
        warnings,
    }
}

/// Leak rate with `0/0 = 0` (no gold PHI, nothing leaked).
fn leak_ratio(leaked: usize, gold: usize) -> f64 {
    if gold == 0 {
        0.0
    } else {
        ratio(leaked, gold)
    }
}

fn tally_spans(
    gold: &BTreeSet<Triple>,
    pred: &BTreeSet<Triple>,
    per: &mut [Tally; N_LABELS],
    overall: &mut Tally,
) {
    let overlaps = |a: &Triple, b: &Triple| a.0 < b.1 && b.0 < a.1;
    for g in gold {
        let t = &mut per[g.2 as usize];
        let exact = pred.contains(g);
        let same = pred.iter().any(|p| p.2 == g.2 && overlaps(g, p));
        let any = pred.iter().any(|p| overlaps(g, p));
        for t in [&mut *t, &mut *overall] {
            t.gold += 1;
            t.strict_match += usize::from(exact);
            t.ov_found += usize::from(same);
            t.any_found += usize::from(any);
        }
    }
    for p in pred {
        let t = &mut per[p.2 as usize];
        let same = gold.iter().any(|g| g.2 == p.2 && overlaps(g, p));
        let any = gold.iter().any(|g| overlaps(g, p));
        for t in [&mut *t, &mut *overall] {
            t.pred += 1;
            t.ov_correct += usize::from(same);
            t.any_correct += usize::from(any);
        }
    }
}

fn bitmask(n: usize, spans: &BTreeSet<Triple>) -> Vec<u32> {
    let mut bits = vec![0u32; n];
    for (s, e, l) in spans {
        for b in &mut bits[*s..*e] {
            *b |= 1 << (*l as usize);
        }
    }
    bits
}

fn tally_chars(gold: &[u32], pred: &[u32], per: &mut [Tally; N_LABELS], overall: &mut Tally) {
    for (g, p) in gold.iter().zip(pred) {
        overall.char_gold += usize::from(*g != 0);
        overall.char_pred += usize::from(*p != 0);
        overall.char_match += usize::from(*g != 0 && *p != 0);
        let any = g | p;
        if any == 0 {
            continue;
        }
        for (l, t) in per.iter_mut().enumerate() {
            let bit = 1u32 << l;
            if any & bit != 0 {
                t.char_gold += usize::from(g & bit != 0);
                t.char_pred += usize::from(p & bit != 0);
                t.char_match += usize::from(g & p & bit != 0);
            }
        }
    }
}

/// Marks the gold code points whose word still occurs in the de-identified output.
///
/// A word is a run of letters and digits of at least three code points inside a gold span;
/// a span without such a run is checked whole. An occurrence counts only when it is not
/// glued to other letters or digits, so `Ng` does not leak through `Ngozi`.
fn leaked_in_output(chars: &[char], gold: &BTreeSet<Triple>, output: &str) -> Vec<bool> {
    let mut leaked = vec![false; chars.len()];
    for (s, e, _) in gold {
        let mut words: Vec<(usize, usize)> = Vec::new();
        let mut pos = *s;
        while pos < *e {
            if chars[pos].is_alphanumeric() {
                let start = pos;
                while pos < *e && chars[pos].is_alphanumeric() {
                    pos += 1;
                }
                if pos - start >= 3 {
                    words.push((start, pos));
                }
            } else {
                pos += 1;
            }
        }
        if words.is_empty() {
            let first = (*s..*e).find(|p| !chars[*p].is_whitespace());
            let last = (*s..*e).rev().find(|p| !chars[*p].is_whitespace());
            if let (Some(a), Some(b)) = (first, last) {
                words.push((a, b + 1));
            }
        }
        for (a, b) in words {
            let word: String = chars[a..b].iter().collect();
            if occurs_delimited(output, &word) {
                for l in &mut leaked[a..b] {
                    *l = true;
                }
            }
        }
    }
    leaked
}

fn occurs_delimited(haystack: &str, needle: &str) -> bool {
    let glued = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    haystack.match_indices(needle).any(|(at, m)| {
        let before = haystack[..at].chars().next_back();
        let after = haystack[at + m.len()..].chars().next();
        let starts_alnum = m.chars().next().is_some_and(char::is_alphanumeric);
        let ends_alnum = m.chars().next_back().is_some_and(char::is_alphanumeric);
        let glued_before = starts_alnum && glued(before);
        let glued_after = ends_alnum && glued(after);
        !glued_before && !glued_after
    })
}

#[cfg(test)]
mod tests {
    use super::super::GoldSpan;
    use super::*;
    use crate::detect::Source;
    use proptest::prelude::*;

    fn doc(text: &str, spans: &[(usize, usize, Label)]) -> GoldDoc {
        GoldDoc {
            id: "d".to_owned(),
            note_type: None,
            text: text.to_owned(),
            spans: spans
                .iter()
                .map(|(start, end, label)| GoldSpan {
                    start: *start,
                    end: *end,
                    label: *label,
                })
                .collect(),
            foreign: vec![],
            not_scored: 0,
        }
    }

    fn spans(v: &[(usize, usize, Label)]) -> Vec<Span> {
        v.iter()
            .map(|(s, e, l)| Span::new(*s, *e, *l, 0.9, Source::Rule))
            .collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    // "Ana Lima seen 03/04/2021 age 45" (31 code points)
    //  Ana 0..3 FIRST_NAME, Lima 4..8 LAST_NAME, 03/04/2021 14..24 DATE, 45 29..31 AGE
    const TEXT: &str = "Ana Lima seen 03/04/2021 age 45";
    const GOLD: [(usize, usize, Label); 4] = [
        (0, 3, Label::FirstName),
        (4, 8, Label::LastName),
        (14, 24, Label::Date),
        (29, 31, Label::Age),
    ];

    #[test]
    fn hand_computed_figures() {
        let docs = [doc(TEXT, &GOLD)];
        // Predictions: Ana exact; "Ana Lima" as LAST_NAME (overlaps both, label-aware hits
        // Lima); date shortened to 14..19; "seen" falsely as CITY; age missed.
        let pred = vec![spans(&[
            (0, 3, Label::FirstName),
            (0, 8, Label::LastName),
            (14, 19, Label::Date),
            (9, 13, Label::City),
        ])];
        let r = score(&docs, &pred, None);
        // strict: 1 match of 4 gold and 4 predicted
        assert_eq!(r.overall.strict.matched_gold, 1);
        assert!(close(r.overall.strict.precision, 0.25));
        assert!(close(r.overall.strict.recall, 0.25));
        // overlap (same label): gold found = Ana, Lima, date = 3/4;
        // predicted correct = Ana, AnaLima(LAST overlaps Lima), date = 3/4
        assert!(close(r.overall.overlap.recall, 0.75));
        assert!(close(r.overall.overlap.precision, 0.75));
        // chars: gold = 3+4+10+2 = 19; predicted = union 0..8 (8) + 14..19 (5) + 9..13 (4) = 17
        // matched = 0..3 + 4..8 + 14..19 = 3+4+5 = 12
        assert_eq!(r.overall.chars.gold, 19);
        assert_eq!(r.overall.chars.predicted, 17);
        assert_eq!(r.overall.chars.matched_gold, 12);
        assert!(close(r.overall_char_recall(), 12.0 / 19.0));
        // leak by coverage: gold alnum = 3+4+8+2 = 17; uncovered alnum: date "/2021" -> 4
        // digits, age 2 -> 6
        assert_eq!(r.leak.basis, LeakBasis::PredictedCoverage);
        assert_eq!(r.leak.gold_chars, 17);
        assert_eq!(r.leak.leaked_chars, 6);
        assert_eq!(r.leak.leaked_spans, 2);
        // per label: LAST_NAME strict 0/1, chars gold 4, predicted 8, matched 4
        let last = r.label(Label::LastName).map(|m| m.metrics);
        let last = last.unwrap_or_default();
        assert_eq!(last.strict.matched_gold, 0);
        assert!(close(last.chars.precision, 0.5));
        assert!(close(last.chars.recall, 1.0));
        // CITY has only a false positive
        let city = r.label(Label::City).map(|m| m.metrics).unwrap_or_default();
        assert!(close(city.strict.precision, 0.0));
        assert!(close(city.strict.recall, 1.0));
        // AGE missed entirely, leak 1.0 for it
        let age = r.label(Label::Age);
        assert!(age.is_some_and(|a| close(a.leak_rate, 1.0) && a.metrics.strict.recall == 0.0));
        let table = r.render_table();
        assert!(table.contains("LAST_NAME") && table.contains("OVERALL"));
    }

    #[test]
    fn any_label_overlap_ignores_labels() {
        let docs = [doc(TEXT, &GOLD)];
        let pred = vec![spans(&[(0, 8, Label::Organization)])];
        let r = score(&docs, &pred, None);
        assert!(close(r.overall.overlap.recall, 0.0));
        assert!(close(r.overall.overlap_any_label.recall, 0.5));
        assert!(close(r.overall.overlap_any_label.precision, 1.0));
        let first = r
            .label(Label::FirstName)
            .map(|m| m.metrics)
            .unwrap_or_default();
        assert!(close(first.overlap_any_label.recall, 1.0));
    }

    #[test]
    fn leak_from_redacted_output() {
        let docs = [doc(TEXT, &GOLD)];
        // First name removed, surname kept, date partly kept, age kept inside "145"
        // (glued, so not a leak) -- then kept on its own.
        let out = vec!["[first_name] Lima seen [date]/2021 age 145".to_owned()];
        let r = score(&docs, &[vec![]], Some(&out));
        assert_eq!(r.leak.basis, LeakBasis::RedactedOutput);
        // Lima 4 + 2021 4 = 8 of 17
        assert_eq!(r.leak.leaked_chars, 8);
        assert_eq!(r.leak.leaked_spans, 2);
        let out = vec!["X Y seen Z age 45".to_owned()];
        let r = score(&docs, &[vec![]], Some(&out));
        assert_eq!(r.leak.leaked_chars, 2);
        assert!(close(r.leak.rate, 2.0 / 17.0));
    }

    #[test]
    fn length_mismatches_warn_and_clip() {
        let docs = [doc(TEXT, &GOLD), doc("abc", &[])];
        let pred = vec![spans(&[(0, 40, Label::Person)])];
        let r = score(&docs, &pred, None);
        assert_eq!(r.warnings.len(), 2);
        assert_eq!(r.documents, 2);
        assert_eq!(r.characters, 34);
        assert!(close(r.overall_char_recall(), 1.0));
    }

    #[test]
    fn report_round_trips_through_json() -> Result<(), serde_json::Error> {
        let docs = [doc(TEXT, &GOLD)];
        let r = score(&docs, &[spans(&GOLD)], None);
        let json = serde_json::to_string(&r)?;
        assert!(json.contains("\"FIRST_NAME\"") && json.contains("\"predicted_coverage\""));
        let back: Report = serde_json::from_str(&json)?;
        assert_eq!(back, r);
        Ok(())
    }

    fn arb_doc() -> impl Strategy<Value = (GoldDoc, Vec<Span>)> {
        let label = proptest::sample::select(Label::ALL.to_vec());
        (
            "[a-zA-Z0-9 é/-]{1,60}",
            proptest::collection::vec((0usize..60, 1usize..12, label.clone()), 0..6),
            proptest::collection::vec((0usize..80, 1usize..20, label), 0..6),
        )
            .prop_map(|(text, g, p)| {
                let n = text.chars().count();
                let g: Vec<(usize, usize, Label)> = g
                    .into_iter()
                    .filter(|(s, _, _)| *s < n)
                    .map(|(s, len, l)| (s, (s + len).min(n), l))
                    .collect();
                let p = p
                    .into_iter()
                    .map(|(s, len, l)| Span::new(s, s + len, l, 0.5, Source::Model))
                    .collect();
                (doc(&text, &g), p)
            })
    }

    fn all_figures(r: &Report) -> Vec<f64> {
        let mut v = vec![r.leak.rate];
        let mut push = |m: &Metrics| {
            for p in [m.strict, m.overlap, m.overlap_any_label, m.chars] {
                v.extend([p.precision, p.recall, p.f1]);
            }
        };
        push(&r.overall);
        for l in &r.per_label {
            push(&l.metrics);
        }
        v.extend(r.per_label.iter().map(|l| l.leak_rate));
        v
    }

    proptest! {
        #[test]
        fn figures_stay_in_unit_interval(docs in proptest::collection::vec(arb_doc(), 0..5)) {
            let (gold, pred): (Vec<GoldDoc>, Vec<Vec<Span>>) = docs.into_iter().unzip();
            let r = score(&gold, &pred, None);
            for f in all_figures(&r) {
                prop_assert!((0.0..=1.0).contains(&f), "figure {f}");
            }
            let out: Vec<String> = gold.iter().map(|d| d.text.clone()).collect();
            let r = score(&gold, &pred, Some(&out));
            for f in all_figures(&r) {
                prop_assert!((0.0..=1.0).contains(&f), "figure {f}");
            }
        }

        #[test]
        fn perfect_predictions_score_one(docs in proptest::collection::vec(arb_doc(), 0..5)) {
            let gold: Vec<GoldDoc> = docs.into_iter().map(|(d, _)| d).collect();
            let pred: Vec<Vec<Span>> = gold
                .iter()
                .map(|d| d.spans.iter().map(|g| Span::new(g.start, g.end, g.label, 1.0, Source::Rule)).collect())
                .collect();
            // Every letter and digit masked: nothing of the gold can survive.
            let masked: Vec<String> = gold
                .iter()
                .map(|d| d.text.chars().map(|c| if c.is_alphanumeric() { '#' } else { c }).collect())
                .collect();
            let r = score(&gold, &pred, None);
            let figures = all_figures(&r);
            prop_assert!(close(figures[0], 0.0));
            let (prf, leaks) = figures[1..].split_at(figures.len() - 1 - r.per_label.len());
            for f in prf {
                prop_assert!(close(*f, 1.0), "figure {f}");
            }
            for f in leaks {
                prop_assert!(close(*f, 0.0), "leak {f}");
            }
            let r = score(&gold, &pred, Some(&masked));
            prop_assert_eq!(r.leak.leaked_chars, 0);
            prop_assert!(close(r.overall_char_recall(), 1.0));
        }
    }
}
