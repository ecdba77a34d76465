//! Overlap resolution: many recognizers' spans in, one sorted, non-overlapping list out.
//!
//! # Why the union and not the best span
//!
//! In de-identification a missed character is a leak and an extra character is a cosmetic
//! loss, so resolution is *recall first*: spans that share a code point are fused into one
//! span covering their union (a model's `John Smith` and a rule's `Smith, John` become one
//! name span). Its score is the highest of its members' (a confidence threshold applied to
//! the merged list keeps a union whenever it would have kept any member alone), and its
//! label and [`Source`](super::Source) come from its best member: a specific label before
//! a generic one that it covers at least half of, then a rule span over a model span that
//! it covers, then the highest
//! score, then the longer span, then the earlier one. Spans that only touch
//! (`end == start`) stay separate, so adjacent entities keep their labels.
//!
//! # Why a specific label wins over a higher score
//!
//! Recall does not depend on the label, but the label is what a response shows and what
//! a mask token says. A context rule that read "MRN" before `4455667` knows more than a
//! model that scored the same digits 0.97 as a generic `ID_NUM`; the generic labels
//! (`ID_NUM`, `LOCATION`, `OTHER`) therefore name a cluster only when no member has a
//! specific one.

use std::cmp::Ordering;

#[cfg(test)]
use super::Sources;
use super::{Label, Source, Span};

/// Resolves overlaps: the result is sorted by start, non-overlapping, and covers every
/// code point that any input span covers. Empty spans (`start >= end`) are dropped.
pub fn resolve(mut spans: Vec<Span>) -> Vec<Span> {
    spans.retain(|s| s.start < s.end);
    spans.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    // The best member of the cluster being built, and its extent.
    let mut best: Option<Span> = None;
    for s in spans {
        match (out.last_mut(), &mut best) {
            (Some(cur), Some(b)) if s.start < cur.end => {
                cur.end = cur.end.max(s.end);
                // The strongest member's score, whichever member names the span: the
                // confidence threshold applied after the merge must not drop a rule's
                // span because a weaker model span with a more specific label joined it.
                let score = cur.score.max(s.score);
                cur.found_by = cur.found_by.with(s.found_by);
                if better(&s, b) {
                    cur.label = s.label;
                    cur.source = s.source;
                    *b = s;
                }
                cur.score = score;
            }
            _ => {
                best = Some(s.clone());
                out.push(s);
            }
        }
    }
    out
}

/// True for labels that say less than a specific one on the same text.
fn generic(label: Label) -> bool {
    matches!(label, Label::IdNum | Label::Location | Label::Other)
}

/// True when `outer` covers every code point of `inner`.
fn covers(outer: &Span, inner: &Span) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

/// True when the `specific` span covers at least half of the `generic` one: only then does
/// its label say more about the same text. A name the model found inside a passport's
/// machine-readable lines does not make the whole block a first name.
fn names_most_of(specific: &Span, generic: &Span) -> bool {
    let shared = specific
        .end
        .min(generic.end)
        .saturating_sub(specific.start.max(generic.start));
    2 * shared >= generic.len()
}

/// True when `a` should name a cluster instead of `b`.
fn better(a: &Span, b: &Span) -> bool {
    match (generic(a.label), generic(b.label)) {
        (false, true) if names_most_of(a, b) => return true,
        (true, false) if names_most_of(b, a) => return false,
        _ => {}
    }
    // A rule read the context of the text it covers ("Fax:", "MRN"): on the same or a
    // wider extent its label beats a model's, whatever the model's score.
    match (a.source, b.source) {
        (Source::Rule, Source::Model) if covers(a, b) => return true,
        (Source::Model, Source::Rule) if covers(b, a) => return false,
        _ => {}
    }
    match a.score.total_cmp(&b.score) {
        Ordering::Greater => true,
        Ordering::Less => false,
        Ordering::Equal => a.len() > b.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sp(start: usize, end: usize, label: Label, score: f32, source: Source) -> Span {
        Span::new(start, end, label, score, source)
    }

    /// `s` as a merge of a model's and a rule's spans.
    fn by_both(mut s: Span) -> Span {
        s.found_by = Sources::of(Source::Model).with(Sources::of(Source::Rule));
        s
    }

    #[test]
    fn union_extent_label_from_higher_score() {
        let out = resolve(vec![
            sp(0, 5, Label::FirstName, 0.6, Source::Model),
            sp(3, 10, Label::Person, 0.9, Source::Rule),
        ]);
        assert_eq!(
            out,
            vec![by_both(sp(0, 10, Label::Person, 0.9, Source::Rule))]
        );
    }

    #[test]
    fn a_weaker_specific_label_names_the_union_but_keeps_the_stronger_score() {
        // A rule's generic identifier at 0.9 and a model's account number at 0.4 on part of
        // it: the label says account number, and a 0.7 threshold still keeps the span.
        let out = resolve(vec![
            sp(4, 16, Label::IdNum, 0.9, Source::Rule),
            sp(4, 10, Label::AccountNumber, 0.4, Source::Model),
        ]);
        assert_eq!(
            out,
            vec![by_both(sp(4, 16, Label::AccountNumber, 0.9, Source::Model))]
        );
    }

    #[test]
    fn a_generic_rule_span_keeps_its_label_over_a_name_found_in_a_small_part_of_it() {
        // A passport's two machine-readable lines (an identifier with its check digit) and
        // the surname the model found in them: the block is an ID_NUM, not a first name.
        let out = resolve(vec![
            sp(10, 99, Label::IdNum, 0.95, Source::Rule),
            sp(15, 23, Label::FirstName, 0.98, Source::Model),
            sp(25, 29, Label::LastName, 0.97, Source::Model),
        ]);
        assert_eq!(
            out,
            vec![by_both(sp(10, 99, Label::IdNum, 0.98, Source::Rule))]
        );
    }

    #[test]
    fn ties_go_to_the_longer_span() {
        let out = resolve(vec![
            sp(2, 4, Label::Date, 0.8, Source::Rule),
            sp(0, 8, Label::DateOfBirth, 0.8, Source::Model),
        ]);
        assert_eq!(
            out,
            vec![by_both(sp(0, 8, Label::DateOfBirth, 0.8, Source::Model))]
        );
    }

    #[test]
    fn a_specific_rule_label_beats_a_generic_model_label() {
        let out = resolve(vec![
            sp(4, 11, Label::IdNum, 0.97, Source::Model),
            sp(4, 11, Label::MedicalRecordNumber, 0.8, Source::Rule),
        ]);
        assert_eq!(
            out,
            // The label is the rule's; the score the stronger member's.
            vec![by_both(sp(
                4,
                11,
                Label::MedicalRecordNumber,
                0.97,
                Source::Rule
            ))]
        );
    }

    #[test]
    fn a_covering_rule_names_the_cluster_over_a_higher_scoring_model() {
        let out = resolve(vec![
            sp(0, 12, Label::Phone, 0.99, Source::Model),
            sp(0, 12, Label::Fax, 0.82, Source::Rule),
        ]);
        assert_eq!(
            out,
            vec![by_both(sp(0, 12, Label::Fax, 0.99, Source::Rule))]
        );
    }

    #[test]
    fn touching_spans_stay_apart_and_chains_fuse() {
        let out = resolve(vec![
            sp(0, 3, Label::FirstName, 0.9, Source::Model),
            sp(3, 6, Label::LastName, 0.9, Source::Model),
            sp(10, 14, Label::Phone, 0.5, Source::Rule),
            sp(13, 18, Label::Phone, 0.7, Source::Rule),
            sp(17, 20, Label::Fax, 0.6, Source::Rule),
        ]);
        assert_eq!(
            out,
            vec![
                sp(0, 3, Label::FirstName, 0.9, Source::Model),
                sp(3, 6, Label::LastName, 0.9, Source::Model),
                sp(10, 20, Label::Phone, 0.7, Source::Rule),
            ]
        );
    }

    #[test]
    fn a_merged_span_lists_every_detector_that_found_part_of_it() {
        let out = resolve(vec![
            sp(0, 5, Label::FirstName, 0.99, Source::Model),
            sp(0, 5, Label::FirstName, 0.82, Source::Rule),
            sp(10, 14, Label::Date, 0.9, Source::Rule),
        ]);
        assert_eq!(out.len(), 2);
        // The rule names the first (it covers the model's span); both found it.
        assert_eq!(out[0].source, Source::Rule);
        assert_eq!(out[0].found_by.wire(), vec!["ml", "rule"]);
        assert_eq!(out[1].found_by.wire(), vec!["rule"]);
    }

    fn arb_span() -> impl Strategy<Value = Span> {
        (
            0usize..200,
            1usize..30,
            0usize..Label::ALL.len(),
            0u8..=100,
            any::<bool>(),
        )
            .prop_map(|(start, len, l, score, model)| {
                let source = if model { Source::Model } else { Source::Rule };
                Span::new(
                    start,
                    start + len,
                    Label::ALL[l],
                    f32::from(score) / 100.0,
                    source,
                )
            })
    }

    proptest! {
        #[test]
        fn resolve_is_sorted_disjoint_and_covering(spans in prop::collection::vec(arb_span(), 0..40)) {
            let out = resolve(spans.clone());
            for w in out.windows(2) {
                prop_assert!(w[0].end <= w[1].start, "overlap or unsorted: {:?}", w);
            }
            for s in &spans {
                for p in s.start..s.end {
                    prop_assert!(out.iter().any(|o| o.start <= p && p < o.end), "lost code point {}", p);
                }
            }
            for o in &out {
                // Every output span is made of input spans: its ends are input ends.
                prop_assert!(spans.iter().any(|s| s.start == o.start));
                prop_assert!(spans.iter().any(|s| s.end == o.end));
                // Its label is a member's; its score the highest of the members inside it.
                prop_assert!(spans.iter().any(|s| s.label == o.label && o.start <= s.start && s.end <= o.end));
                let top = spans
                    .iter()
                    .filter(|s| o.start <= s.start && s.end <= o.end)
                    .map(|s| s.score)
                    .fold(f32::MIN, f32::max);
                prop_assert_eq!(o.score, top);
                // Every member's detector is listed, and no other.
                let members = spans
                    .iter()
                    .filter(|s| o.start <= s.start && s.end <= o.end)
                    .fold(Sources::default(), |acc, s| acc.with(s.found_by));
                prop_assert_eq!(o.found_by, members);
            }
        }
    }
}
