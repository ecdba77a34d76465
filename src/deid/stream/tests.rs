//! Tests of the carry buffer, including the streaming-equals-single-shot property.

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

/// Drives the buffer over `text` in `chunk` pieces, returning every commit.
fn stream(text: &str, chunk: usize, cfg: StreamConfig) -> Vec<Commit> {
    let mut buf = CarryBuffer::new(cfg);
    let mut out = Vec::new();
    let drive = |buf: &mut CarryBuffer, out: &mut Vec<Commit>| {
        while let Some(w) = buf.next_window() {
            let spans = rules().find(w.text);
            out.extend(buf.commit(spans));
        }
    };
    for piece in chunks_of(text, chunk) {
        buf.push(piece);
        drive(&mut buf, &mut out);
    }
    buf.finish();
    drive(&mut buf, &mut out);
    out
}

fn small() -> StreamConfig {
    StreamConfig {
        window_chars: 256,
        tokenizer_context_chars: 96,
        max_entity_chars: 64,
    }
}

#[test]
fn chunks_split_on_code_points() {
    let text = "añb😀c";
    let parts: Vec<&str> = chunks_of(text, 2).collect();
    assert_eq!(parts, vec!["añ", "b😀", "c"]);
    assert_eq!(chunks_of("", 3).count(), 0);
    assert_eq!(chunks_of("abc", 0).count(), 3);
}

#[test]
fn nothing_is_emitted_before_the_window_fills() {
    let mut buf = CarryBuffer::new(small());
    buf.push("Call 555-123-4567 now");
    assert!(buf.next_window().is_none());
    buf.finish();
    let w = buf.next_window().map(|w| (w.offset, w.text.to_owned()));
    assert_eq!(w, Some((0, "Call 555-123-4567 now".to_owned())));
    let c = buf.commit(rules().find("Call 555-123-4567 now"));
    assert_eq!(c.map(|c| (c.offset, c.spans.len())), Some((0, 1)));
    assert!(buf.next_window().is_none());
}

#[test]
fn an_identifier_across_the_cut_is_not_split() {
    let filler = "word ".repeat(30);
    let text = format!("{filler}SSN 123-45-6789 and {filler}");
    for chunk in [1, 3, 17, 64, 1000] {
        let commits = stream(&text, chunk, small());
        let joined: String = commits.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(joined, text);
        let ssn = text.find("123-45-6789").map(|b| text[..b].chars().count());
        let hit = commits
            .iter()
            .flat_map(|c| &c.spans)
            .find(|s| Some(s.start) == ssn);
        assert_eq!(hit.map(|s| s.end - s.start), Some(11), "chunk {chunk}");
        for c in &commits {
            for s in &c.spans {
                assert!(s.start >= c.offset && s.end <= c.offset + c.text.chars().count());
            }
        }
    }
}

#[test]
fn tiny_window_still_progresses() {
    let cfg = StreamConfig {
        window_chars: 64,
        tokenizer_context_chars: 128,
        max_entity_chars: 512,
    };
    let text = "a ".repeat(2000);
    let joined: String = stream(&text, 100, cfg)
        .iter()
        .map(|c| c.text.as_str())
        .collect();
    assert_eq!(joined, text);
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

/// Configurations whose left context covers the rules' context reach plus one token
/// (the condition under which streaming must equal a single pass).
fn arb_config() -> impl Strategy<Value = StreamConfig> {
    (32usize..400, 72usize..=160, 40usize..=128).prop_map(|(w, c, e)| StreamConfig {
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
        chunk in 1usize..=64,
        m in arb_method(),
        seed in any::<u64>(),
        cfg in arb_config(),
    ) {
        let key = HashKey::from_bytes([3u8; 32]);
        let opts = DeidOptions { method: m, ..DeidOptions::default() };
        let single = Deidentifier::new(opts.clone(), &key, StdRng::seed_from_u64(seed))
            .apply(&text, &rules().find(&text));
        let mut deid = Deidentifier::new(opts, &key, StdRng::seed_from_u64(seed));
        let commits = stream(&text, chunk, cfg);
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
fn one_large_piece_equals_small_pieces() {
    let text = "MRN: 00123456, call 555-123-4567, DOB 01/02/1980. ".repeat(400);
    let a: Vec<Commit> = stream(&text, text.chars().count(), StreamConfig::default());
    let b: Vec<Commit> = stream(&text, 37, StreamConfig::default());
    let spans = |cs: &[Commit]| cs.iter().flat_map(|c| c.spans.clone()).collect::<Vec<_>>();
    assert_eq!(spans(&a), rules().find(&text));
    assert_eq!(spans(&b), rules().find(&text));
    assert!(a.len() > 5, "a long text is committed window by window");
}
