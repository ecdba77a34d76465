//! Hostile-input harness: bounded property tests over everything that reads untrusted input
//! — request parsing (bytes and arbitrary JSON values), the rule recognizers (arbitrary
//! Unicode), the transforms (arbitrary spans, every method and policy) and the cutting of
//! a result into stream lines. Each property asserts "no panic" plus the invariant that
//! makes the output safe to use: offsets inside the text, replacements that rebuild the
//! output exactly, fragments that tile the input.
//!
//! Case counts are fixed (`CASES_*`) so the harness runs in about a minute in CI; raise
//! `PROPTEST_CASES` locally to search longer (it overrides every count).

use std::collections::BTreeSet;

use phiguard::deid::stream::{fragments, StreamConfig};
use phiguard::deid::{DeidOptions, Deidentifier, HashKey, Method, Policy};
use phiguard::detect::{CharIndex, Label, RuleRecognizer, Source, Sources, Span};
use phiguard::server::api::{
    AnalyzeRequest, DeidentifyRequest, DeidentifyStreamRequest, ExtractRequest,
    ExtractStreamRequest, UnloadRequest,
};
use phiguard::server::validate::{parse_map, parse_object, TextLimits};
use proptest::prelude::*;
use proptest::test_runner::Config;
use rand::SeedableRng;
use serde_json::{Map, Value};

const CASES_PARSE: u32 = 4000;
const CASES_RULES: u32 = 1000;
const CASES_DEID: u32 = 5000;
const CASES_STREAM: u32 = 1500;

/// A string no request value should ever be echoed as; it rides along in hostile bodies.
const CANARY: &str = "Zqx Canary Smith";

fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

const LIMITS: TextLimits = TextLimits {
    max_chars: 300,
    max_bytes: 600,
};

/// Every field name any route reads, plus some that none does.
const FIELDS: &[&str] = &[
    "text",
    "model_name",
    "confidence_threshold",
    "use_smart_merging",
    "lang",
    "normalize_accents",
    "keep_alive",
    "fallback",
    "chunk_size",
    "window_chars",
    "tokenizer_context_chars",
    "max_entity_chars",
    "include_text",
    "method",
    "keep_year",
    "shift_dates",
    "date_shift_days",
    "keep_mapping",
    "policy",
    "use_safety_sweep",
    "group_entities",
    "aggregation_strategy",
    "sentence_detection",
    "sentence_language",
    "sentence_clean",
    "use_fast_tokenizer",
    "all",
    "Zqx Canary Smith",
    "",
    "TEXT",
];

/// Unicode that stresses offsets: multi-byte letters, combining marks, emoji, controls,
/// lone-looking surrogate neighbours, RTL marks, zero-width joiners, odd whitespace.
fn hostile_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => proptest::char::range(' ', '~'),
        1 => Just('\u{0301}'),
        1 => Just('\u{200d}'),
        1 => Just('\u{202e}'),
        1 => Just('\u{00a0}'),
        1 => Just('\u{2028}'),
        1 => Just('\u{feff}'),
        1 => Just('\u{1f600}'),
        1 => Just('é'),
        1 => Just('\u{0}'),
        1 => Just('\n'),
        1 => Just('\u{10ffff}'),
        2 => any::<char>(),
    ]
}

/// Text mixing hostile characters with PHI-shaped fragments the rules look for.
fn hostile_text(max: usize) -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        4 => proptest::collection::vec(hostile_char(), 0..12).prop_map(|v| v.into_iter().collect::<String>()),
        1 => Just("john.smith@example.com".to_string()),
        1 => Just("(555) 123-4567".to_string()),
        1 => Just("01/02/1980".to_string()),
        1 => Just("MRN 12345678".to_string()),
        1 => Just("123-45-6789".to_string()),
        1 => Just("192.168.0.1".to_string()),
        1 => Just("https://x.example/a?b=c".to_string()),
        1 => Just("March 3rd, 2024".to_string()),
        1 => Just("4111 1111 1111 1111".to_string()),
        1 => Just(" 12 Main Street ".to_string()),
    ];
    proptest::collection::vec(fragment, 0..max).prop_map(|v| v.concat())
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop_oneof![
            Just(0.0),
            Just(1.0),
            Just(-0.0),
            Just(1e300),
            Just(0.5),
            Just(5.0)
        ]
        .prop_map(Value::from),
        hostile_text(4).prop_map(Value::String),
        Just(Value::String(CANARY.to_string())),
        prop_oneof![
            Just("5m"),
            Just("1h30m"),
            Just("never"),
            Just("mask"),
            Just("shift_dates"),
            Just("en"),
            Just("EN"),
            Just("rules"),
            Just("hipaa_safe_harbor"),
            Just("gdpr"),
            Just("99999999999999999999h"),
            Just("1e400"),
            Just(""),
            Just("  "),
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(proptest::sample::select(FIELDS), inner, 0..4)
                .prop_map(|m| Value::Object(
                    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
        ]
    })
}

/// A request object: known fields with arbitrary values, sometimes an unknown one.
fn request_object() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::btree_map(proptest::sample::select(FIELDS), json_value(), 0..10)
        .prop_map(|m| m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// Checks one parse outcome: a parsed text is stripped, non-blank and within the limits; an
/// error is a 422 whose body never carries a submitted value.
fn check_outcome<T>(
    result: Result<T, phiguard::server::ApiError>,
    text: impl Fn(&T) -> Option<&str>,
) {
    match result {
        Ok(v) => {
            if let Some(t) = text(&v) {
                assert!(!t.is_empty() && t.trim() == t, "text not stripped");
                assert!(t.chars().count() <= LIMITS.max_chars && t.len() <= LIMITS.max_bytes);
            }
        }
        Err(e) => {
            assert_eq!(e.status().as_u16(), 422);
            let body = e.body(Some("rid")).to_string();
            assert!(!body.contains("Canary"), "error echoes a value: {body}");
        }
    }
}

fn parse_every_route(map: &Map<String, Value>) {
    check_outcome(parse_map::<ExtractRequest>(map, LIMITS), |r| {
        Some(r.text.as_str())
    });
    check_outcome(parse_map::<ExtractStreamRequest>(map, LIMITS), |r| {
        assert!(
            (1..=32768).contains(&r.chunk_size) && r.window_chars >= 64 && r.max_entity_chars >= 1
        );
        Some(r.text.as_str())
    });
    check_outcome(parse_map::<DeidentifyRequest>(map, LIMITS), |r| {
        if r.date_shift_days.is_some() {
            assert_eq!(r.method(), Method::ShiftDates);
        }
        Some(r.text.as_str())
    });
    check_outcome(parse_map::<DeidentifyStreamRequest>(map, LIMITS), |r| {
        assert!((1..=32768).contains(&r.chunk_size));
        if r.date_shift_days.is_some() {
            assert_eq!(r.method(), Method::ShiftDates);
        }
        Some(r.text.as_str())
    });
    check_outcome(parse_map::<AnalyzeRequest>(map, LIMITS), |r| {
        Some(r.text.as_str())
    });
    check_outcome(parse_map::<UnloadRequest>(map, LIMITS), |r| {
        assert!(r.all || r.model_name.is_some());
        None
    });
}

proptest! {
    #![proptest_config(config(CASES_PARSE))]

    #[test]
    fn arbitrary_bytes_parse_or_fail_cleanly(body in proptest::collection::vec(any::<u8>(), 0..256)) {
        match parse_object(&body) {
            Ok(map) => parse_every_route(&map),
            Err(e) => prop_assert_eq!(e.status().as_u16(), 422),
        }
    }

    #[test]
    fn arbitrary_json_values_parse_or_fail_cleanly(value in json_value()) {
        let bytes = serde_json::to_vec(&value).expect("serialises");
        match parse_object(&bytes) {
            Ok(map) => parse_every_route(&map),
            Err(e) => {
                prop_assert!(!value.is_object());
                prop_assert!(!e.body(None).to_string().contains("Canary"));
            }
        }
    }

    #[test]
    fn arbitrary_request_objects_parse_or_fail_cleanly(map in request_object()) {
        parse_every_route(&map);
    }
}

proptest! {
    #![proptest_config(config(CASES_RULES))]

    #[test]
    fn rules_find_valid_spans_in_any_unicode(text in hostile_text(40)) {
        let spans = RuleRecognizer::new().find(&text);
        let len = text.chars().count();
        let mut last_end = 0;
        for s in &spans {
            prop_assert!(s.start < s.end && s.end <= len, "span outside the text");
            prop_assert!(s.start >= last_end, "spans overlap or are unsorted");
            prop_assert!((0.0..=1.0).contains(&s.score));
            last_end = s.end;
        }
    }
}

fn any_label() -> impl Strategy<Value = Label> {
    proptest::sample::select(Label::ALL.to_vec())
}

/// Spans over a text of `len` code points; mostly valid, a few past the end or empty.
fn spans_for(len: usize) -> impl Strategy<Value = Vec<Span>> {
    let bound = len + 3;
    proptest::collection::vec(
        (0..bound, 0..bound, any_label(), 0.0f32..=1.0, any::<bool>()),
        0..12,
    )
    .prop_map(|v| {
        v.into_iter()
            .map(|(a, b, label, score, rule)| Span {
                start: a.min(b),
                end: a.max(b),
                label,
                score,
                source: if rule { Source::Rule } else { Source::Model },
                found_by: Sources::of(if rule { Source::Rule } else { Source::Model }),
            })
            .collect()
    })
}

fn text_and_spans() -> impl Strategy<Value = (String, Vec<Span>)> {
    hostile_text(16).prop_flat_map(|t| {
        let n = t.chars().count();
        (Just(t), spans_for(n))
    })
}

fn any_method() -> impl Strategy<Value = Method> {
    prop_oneof![
        Just(Method::Mask),
        Just(Method::Remove),
        Just(Method::Replace),
        Just(Method::Hash),
        Just(Method::ShiftDates),
    ]
}

fn any_policy() -> impl Strategy<Value = Option<Policy>> {
    let names = Policy::valid_names();
    prop_oneof![
        1 => Just(None),
        3 => proptest::sample::select(names).prop_map(|n| Policy::parse(n).ok()),
    ]
}

fn deid_options() -> impl Strategy<Value = DeidOptions> {
    (
        any_method(),
        proptest::option::of(-36_500i64..=36_500),
        any::<bool>(),
        any::<bool>(),
        any_policy(),
        proptest::option::of("[a-z]{1,8}"),
    )
        .prop_map(
            |(method, date_shift_days, keep_year, keep_mapping, policy, subject)| DeidOptions {
                method,
                date_shift_days,
                keep_year,
                keep_mapping,
                policy,
                reference_year: None,
                subject: subject.map(|s| HashKey::from_bytes([7; 32]).subject(&s)),
                dates: None,
                shifted_years: keep_year && keep_mapping,
            },
        )
}

/// Rebuilds the output from the input and the replacements; it must equal the output text.
fn assert_replacements_rebuild(text: &str, offset: usize, out: &phiguard::deid::DeidOutput) {
    let idx = CharIndex::new(text);
    let len = idx.char_len();
    let mut rebuilt = String::new();
    let mut pos = 0;
    for r in &out.replacements {
        let (s, e) = (r.span.start - offset, r.span.end - offset);
        assert!(s < e && e <= len, "replacement outside the text");
        assert!(s >= pos, "replacements overlap or are unsorted");
        assert_eq!(
            idx.slice(text, s, e),
            r.original,
            "original is not the text at the span"
        );
        rebuilt.push_str(idx.slice(text, pos, s));
        rebuilt.push_str(&r.replacement);
        pos = e;
    }
    rebuilt.push_str(idx.slice(text, pos, len));
    assert_eq!(
        rebuilt, out.text,
        "output is not input with replacements applied"
    );
}

proptest! {
    #![proptest_config(config(CASES_DEID))]

    #[test]
    fn transforms_keep_every_replacement_inside_the_text(
        (text, spans) in text_and_spans(),
        opts in deid_options(),
        seed in any::<u64>(),
    ) {
        let key = HashKey::from_bytes([7u8; 32]);
        let keeps = opts.keep_mapping || opts.policy.as_ref().is_some_and(Policy::keep_mapping);
        let mut deid = Deidentifier::new(opts, &key, rand::rngs::StdRng::seed_from_u64(seed));
        let out = deid.apply(&text, &spans);
        assert_replacements_rebuild(&text, 0, &out);
        if keeps {
            let originals: BTreeSet<&str> = out.replacements.iter().map(|r| r.original.as_str()).collect();
            for (_, original) in &out.mapping {
                prop_assert!(originals.contains(original.as_str()));
            }
        } else {
            prop_assert!(out.mapping.is_empty());
        }
    }
}

/// A deterministic stand-in detector for the stream: spans derived from the text
/// (every run of ASCII digits, every '@'-word) plus arbitrary, possibly invalid, spans.
fn detect(window: &str, extra: &[(usize, usize)]) -> Vec<Span> {
    let mut out = Vec::new();
    let chars: Vec<char> = window.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            let j = (i..chars.len())
                .find(|&k| !chars[k].is_ascii_digit())
                .unwrap_or(chars.len());
            out.push(Span {
                start: i,
                end: j,
                label: Label::IdNum,
                score: 0.9,
                source: Source::Model,
                found_by: Sources::of(Source::Model),
            });
            i = j;
        } else {
            i += 1;
        }
    }
    for &(a, b) in extra {
        out.push(Span {
            start: a,
            end: b,
            label: Label::Person,
            score: 0.8,
            source: Source::Model,
            found_by: Sources::of(Source::Model),
        });
    }
    out
}

fn stream_config() -> impl Strategy<Value = StreamConfig> {
    (64usize..600, 0usize..200, 1usize..200).prop_map(|(w, c, m)| StreamConfig {
        window_chars: w,
        tokenizer_context_chars: c,
        max_entity_chars: m,
    })
}

proptest! {
    #![proptest_config(config(CASES_STREAM))]

    #[test]
    fn stream_fragments_tile_the_input(
        text in hostile_text(60),
        cfg in stream_config(),
        extra in proptest::collection::vec((0usize..700, 0usize..700), 0..4),
        method in any_method(),
    ) {
        let len = text.chars().count();
        let key = HashKey::from_bytes([3u8; 32]);
        let opts = DeidOptions { method, date_shift_days: Some(5), ..DeidOptions::default() };
        let mut deid = Deidentifier::new(opts, &key, rand::rngs::StdRng::seed_from_u64(1));
        let mut joined = String::new();
        let mut next_offset = 0;
        for commit in fragments(&text, detect(&text, &extra), cfg) {
            prop_assert_eq!(commit.offset, next_offset, "fragments are not contiguous");
            let clen = commit.text.chars().count();
            prop_assert!(clen > 0, "an empty fragment");
            for s in &commit.spans {
                prop_assert!(s.start >= commit.offset && s.start < s.end && s.end <= commit.offset + clen);
            }
            let out = commit.redact(&mut deid);
            assert_replacements_rebuild(&commit.text, commit.offset, &out);
            joined.push_str(&commit.text);
            next_offset += clen;
        }
        prop_assert_eq!(&joined, &text, "fragments do not tile the input");
        prop_assert_eq!(next_offset, len);
    }
}
