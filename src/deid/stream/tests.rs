//! Tests of the fragments, including the streaming-equals-single-shot property.

use std::sync::OnceLock;

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::*;
use crate::deid::{DeidOptions, HashKey, Method};
use crate::detect::RuleRecognizer;

fn rules() -> &'static RuleRecognizer {
    static R: OnceLock<RuleRecognizer> = OnceLock::new();
    R.get_or_init(RuleRecognizer::new)
}

/// The rules' spans of `text`, cut into fragments.
fn stream(text: &str, cfg: StreamConfig) -> Vec<Commit> {
    fragments(text, rules().find(text), cfg)
}

fn small() -> StreamConfig {
    StreamConfig {
        window_chars: 256,
        tokenizer_context_chars: 96,
        max_entity_chars: 64,
    }
}

#[test]
fn a_short_text_is_one_fragment_and_an_empty_one_none() {
    let c = stream("Call 555-123-4567 now", small());
    assert_eq!(
        c.iter()
            .map(|c| (c.offset, c.text.as_str(), c.spans.len()))
            .collect::<Vec<_>>(),
        vec![(0, "Call 555-123-4567 now", 1)]
    );
    assert!(stream("", small()).is_empty());
}

#[test]
fn an_identifier_across_the_cut_is_not_split() {
    for pad in [0, 1, 7, 30, 55, 100] {
        let filler = "word ".repeat(pad);
        let text = format!("{filler}SSN 123-45-6789 and {filler}{filler}");
        let commits = stream(&text, small());
        let joined: String = commits.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(joined, text);
        let ssn = text.find("123-45-6789").map(|b| text[..b].chars().count());
        let hit = commits
            .iter()
            .flat_map(|c| &c.spans)
            .find(|s| Some(s.start) == ssn);
        assert_eq!(hit.map(|s| s.end - s.start), Some(11), "pad {pad}");
        for c in &commits {
            for s in &c.spans {
                assert!(s.start >= c.offset && s.end <= c.offset + c.text.chars().count());
            }
        }
    }
}

#[test]
fn a_span_longer_than_a_fragment_is_one_fragment_and_text_without_spaces_is_cut() {
    let text = format!("{} tail", "x".repeat(1000));
    let long = Span::new(
        0,
        1000,
        crate::detect::Label::Other,
        1.0,
        crate::detect::Source::Rule,
    );
    let cs = fragments(&text, vec![long], small());
    assert_eq!(cs[0].text.chars().count(), 1000);
    assert_eq!(cs[0].spans.len(), 1);
    let plain = "y".repeat(1000);
    let cs = fragments(&plain, Vec::new(), small());
    assert!(cs.len() > 1);
    assert_eq!(
        cs.iter().map(|c| c.text.as_str()).collect::<String>(),
        plain
    );
}

const PIECES: &[&str] = &[
    "John Smith",
    "DOB 01/02/1980",
    "seen 1/2/80",
    "on Jan 2, 1980",
    "2 January 1980",
    "March 2019",
    "call 555-123-4567",
    "Fax: 555-987-6543",
    "+44 20 7946 0958",
    "john.doe@mail.example.org",
    "https://portal.example.com/p?id=7",
    "192.168.10.254",
    "2001:db8::8a2e:370:7334",
    "SSN 123-45-6789",
    "SSN: 123456789",
    "MRN: 00123456",
    "Member ID: XYZ123456789",
    "Acct #: 44556677",
    "DEA AB1234563",
    "NPI 1234567893",
    "VIN 1M8GDM9AXKP042788",
    "S/N: PM1234567",
    "card 4111 1111 1111 1111",
    "Springfield, IL 62704",
    "123 Main St, Apt 4B",
    "P.O. Box 1234",
    "a 92-year-old man",
    "age 95",
    "97 y/o",
    "metoprolol 25 mg",
    "BP 120/80",
    "at 10:30",
    "Zoë Müller",
    "患者",
    "😀",
    "and",
    "the",
    "patient",
    "was",
    "ok.",
    "\n",
];

fn arb_text() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(PIECES);
    let sep = prop::sample::select(&[" ", ", ", "; ", "\n", " - "][..]);
    prop::collection::vec((piece, sep), 0..60)
        .prop_map(|v| v.into_iter().flat_map(|(p, s)| [p, s]).collect::<String>())
}

/// Any sizes, small ones included (many fragments, cuts near every span).
fn arb_config() -> impl Strategy<Value = StreamConfig> {
    (1usize..400, 0usize..=160, 0usize..=128).prop_map(|(w, c, e)| StreamConfig {
        window_chars: w,
        tokenizer_context_chars: c,
        max_entity_chars: e,
    })
}

fn arb_method() -> impl Strategy<Value = Method> {
    prop_oneof![
        Just(Method::Mask),
        Just(Method::Replace),
        Just(Method::Hash),
        Just(Method::ShiftDates)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn streaming_equals_single_shot(
        text in arb_text(),
        m in arb_method(),
        seed in any::<u64>(),
        cfg in arb_config(),
    ) {
        let key = HashKey::from_bytes([3u8; 32]);
        let opts = DeidOptions { method: m, ..DeidOptions::default() };
        let single = Deidentifier::new(opts.clone(), &key, StdRng::seed_from_u64(seed))
            .apply(&text, &rules().find(&text));
        let mut deid = Deidentifier::new(opts, &key, StdRng::seed_from_u64(seed));
        let commits = stream(&text, cfg);
        let mut joined = String::new();
        let chars: Vec<char> = text.chars().collect();
        let mut next = 0;
        for c in &commits {
            prop_assert_eq!(c.offset, next, "commits are contiguous");
            next += c.text.chars().count();
            for s in &c.spans {
                prop_assert!(s.start >= c.offset && s.end <= next && s.end <= chars.len());
            }
            joined.push_str(&c.redact(&mut deid).text);
        }
        prop_assert_eq!(next, chars.len());
        prop_assert_eq!(joined, single.text);
    }
}

#[test]
fn a_cut_never_falls_inside_a_timestamp_the_output_replaces_whole() {
    // No whitespace for a cut near the step: the cut falls at the step unless the date
    // span is widened to its whole timestamp first.
    let cfg = StreamConfig {
        window_chars: 64,
        tokenizer_context_chars: 0,
        max_entity_chars: 1,
    };
    let step = cfg.step_chars();
    let text = format!("{}2021-04-01T09:00:00Z", "x".repeat(step - 15));
    let date = Span::new(
        step - 15,
        step - 2,
        crate::detect::Label::Date,
        0.9,
        crate::detect::Source::Model,
    );
    let cs = fragments(&text, vec![date], cfg);
    let stamp = text.chars().count() - (step - 15);
    let hit = cs
        .iter()
        .flat_map(|c| &c.spans)
        .next()
        .map(|s| s.end - s.start);
    assert_eq!(hit, Some(stamp), "{cs:?}");
}

#[test]
fn a_long_text_is_cut_into_many_fragments_holding_every_span() {
    let text = "MRN: 00123456, call 555-123-4567, DOB 01/02/1980. ".repeat(400);
    let a = stream(&text, StreamConfig::default());
    let spans = a.iter().flat_map(|c| c.spans.clone()).collect::<Vec<_>>();
    assert_eq!(spans, crate::detect::merge::resolve(rules().find(&text)));
    assert!(a.len() > 5, "a long text is sent in several lines");
}
