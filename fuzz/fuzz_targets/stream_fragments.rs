//! The cutting of a result into stream lines: any text, any line sizes and any spans a
//! detector might return (overlapping, past the end). The fragments must tile the input
//! exactly, none empty, each span inside its fragment, and no span cut in two.
#![no_main]

use libfuzzer_sys::fuzz_target;
use phiguard::deid::stream::{fragments, StreamConfig};
use phiguard::detect::{merge, Label, Source, Span};

fuzz_target!(|data: &[u8]| {
    if data.len() < 7 {
        return;
    }
    let (head, rest) = data.split_at(7);
    let cfg = StreamConfig {
        window_chars: 64 + usize::from(head[0]) * 2,
        tokenizer_context_chars: usize::from(head[1]) % 200,
        max_entity_chars: 1 + usize::from(head[2]) % 200,
    };
    let text = String::from_utf8_lossy(rest).into_owned();
    let len = text.chars().count();
    // Up to two spans anywhere in (or past) the text, overlapping or not.
    let spans: Vec<Span> = [(head[3], head[4]), (head[5], head[6])]
        .iter()
        .filter(|&&(_, n)| n > 0)
        .map(|&(at, n)| {
            let start = usize::from(at) * 3;
            Span::new(
                start,
                start + usize::from(n),
                Label::FirstName,
                0.9,
                Source::Model,
            )
        })
        .collect();
    let mut joined = String::new();
    let mut next_offset = 0;
    let cuts: Vec<usize> = fragments(&text, spans.clone(), cfg)
        .into_iter()
        .map(|c| {
            assert_eq!(c.offset, next_offset, "fragments are not contiguous");
            let clen = c.text.chars().count();
            assert!(clen > 0, "an empty fragment");
            for s in &c.spans {
                assert!(s.start >= c.offset && s.start < s.end && s.end <= c.offset + clen);
            }
            joined.push_str(&c.text);
            next_offset += clen;
            next_offset
        })
        .collect();
    assert_eq!(joined, text, "fragments do not tile the input");
    // No cut falls strictly inside a span (as resolved, and clipped to the text).
    let clipped = spans
        .into_iter()
        .map(|mut s| {
            s.end = s.end.min(len);
            s
        })
        .collect();
    for s in merge::resolve(clipped) {
        assert!(
            !cuts.iter().any(|&c| c > s.start && c < s.end),
            "a span was cut"
        );
    }
});
