//! The streaming carry buffer: any text, cut into any pieces, with any window settings and
//! any spans the detector might return. Its commits must tile the input exactly, each span
//! inside its commit, and it must always make progress.
#![no_main]

use libfuzzer_sys::fuzz_target;
use phiguard::deid::stream::{chunks_of, CarryBuffer, StreamConfig};
use phiguard::detect::{Label, Source, Span};

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let (head, rest) = data.split_at(6);
    let cfg = StreamConfig {
        window_chars: 64 + usize::from(head[0]) * 2,
        tokenizer_context_chars: usize::from(head[1]) % 200,
        max_entity_chars: 1 + usize::from(head[2]) % 200,
    };
    let chunk = 1 + usize::from(head[3]);
    let (span_at, span_len) = (usize::from(head[4]), usize::from(head[5]));
    let text = String::from_utf8_lossy(rest).into_owned();
    let len = text.chars().count();
    let mut buf = CarryBuffer::new(cfg);
    let mut pieces = chunks_of(&text, chunk);
    let mut joined = String::new();
    let mut next_offset = 0;
    let mut windows = 0usize;
    let mut finished = false;
    loop {
        if let Some(w) = buf.next_window() {
            windows += 1;
            assert!(windows <= 4 * len + 8, "no progress");
            let wlen = w.text.chars().count();
            assert!(w.offset + wlen <= len);
            // A span anywhere in (or past) the window, as a misbehaving detector might give.
            let start = span_at.min(wlen);
            let end = (start + span_len).min(wlen);
            let spans = if start < end {
                vec![Span::new(start, end, Label::FirstName, 0.9, Source::Model)]
            } else {
                Vec::new()
            };
            let commit = buf.commit(spans).expect("a window was pending");
            assert_eq!(commit.offset, next_offset, "commits are not contiguous");
            let clen = commit.text.chars().count();
            for s in &commit.spans {
                assert!(s.start >= commit.offset && s.start < s.end && s.end <= commit.offset + clen);
            }
            joined.push_str(&commit.text);
            next_offset += clen;
            continue;
        }
        if finished {
            break;
        }
        match pieces.next() {
            Some(p) => buf.push(p),
            None => {
                buf.finish();
                finished = true;
            }
        }
    }
    assert_eq!(joined, text, "commits do not tile the input");
    assert_eq!(buf.committed_chars(), len);
});
