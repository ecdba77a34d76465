//! `Narrative.div`: the text nodes of an XHTML fragment de-identified, the markup kept.
//!
//! The engine reads the text nodes as a reader sees them: entities decoded (`&quot;Jim&quot;`
//! reads `"Jim"`), nodes on either side of an inline tag (`<b>`, `<span>`) joined as they
//! render (so `Peter <b>Chalmers</b>` is one name), and a line break where a block starts
//! or ends (`<td>`, `<p>`, `<br/>`: a table's cells are separate fields, and a name in one
//! does not run into the heading of the next). Entities found there are cut at node
//! boundaries; each node is rewritten from its raw text, its replacements XML-escaped, so
//! everything not replaced stays byte for byte. Tags, attributes and comments are copied as
//! they are: narrative XHTML may not carry scripts or events, and attribute values are not
//! text a reader sees. Written here because the fragment only has to be split into tags and
//! text, not parsed into a tree.

use rand::Rng;

use crate::deid::Deidentifier;
use crate::detect::Span;

/// One text node: its raw byte range in the fragment, its decoded text, the raw byte range
/// of each decoded character, its first code point in the joined text, and whether a block
/// boundary comes before it.
struct Node {
    raw: (usize, usize),
    text: String,
    bytes: Vec<(usize, usize)>,
    at: usize,
    block: bool,
}

/// XHTML elements that start a new line of text where they open or close.
const BLOCKS: &[&str] = &[
    "address",
    "blockquote",
    "br",
    "caption",
    "dd",
    "div",
    "dl",
    "dt",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "li",
    "ol",
    "p",
    "pre",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
];

/// True when the tag `<…>` is a block element's start or end tag.
fn is_block(tag: &str) -> bool {
    let name: String = tag
        .trim_start_matches('<')
        .trim_start_matches('/')
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    BLOCKS.contains(&name.as_str())
}

/// The decoded form of an entity at the start of `s` (`&amp;`, `&#39;`, `&#x27;`) and its
/// length in bytes.
fn entity(s: &str) -> Option<(char, usize)> {
    let end = s.find(';').filter(|&e| e <= 10)?;
    let name = &s[1..end];
    let c = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        _ => {
            let code = if let Some(hex) = name.strip_prefix("#x").or(name.strip_prefix("#X")) {
                u32::from_str_radix(hex, 16).ok()?
            } else {
                name.strip_prefix('#')?.parse().ok()?
            };
            char::from_u32(code)?
        }
    };
    Some((c, end + 1))
}

/// The text nodes of `div`, decoded and placed in the joined text.
fn nodes(div: &str) -> Vec<Node> {
    let mut out: Vec<Node> = Vec::new();
    let mut pos = 0;
    let mut at = 0;
    let mut block = false;
    while pos < div.len() {
        if div[pos..].starts_with('<') {
            let close = if div[pos..].starts_with("<!--") {
                "-->"
            } else {
                ">"
            };
            let end = div[pos..]
                .find(close)
                .map_or(div.len(), |i| pos + i + close.len());
            block |= is_block(&div[pos..end]);
            pos = end;
            continue;
        }
        let end = div[pos..].find('<').map_or(div.len(), |i| pos + i);
        let (mut text, mut bytes) = (String::new(), Vec::new());
        let mut i = pos;
        while i < end {
            let rest = &div[i..end];
            let (c, len) = match rest.starts_with('&').then(|| entity(rest)).flatten() {
                Some(e) => e,
                None => {
                    let c = rest.chars().next().unwrap_or(' ');
                    (c, c.len_utf8())
                }
            };
            text.push(c);
            bytes.push((i, i + len));
            i += len;
        }
        let block_before = block && !out.is_empty();
        if let Some(prev) = out.last() {
            at = prev.at + prev.bytes.len() + usize::from(block_before);
        }
        out.push(Node {
            raw: (pos, end),
            text,
            bytes,
            at,
            block: block_before,
        });
        block = false;
        pos = end;
    }
    out
}

/// The text the engine reads.
pub(super) fn plain(div: &str) -> String {
    let mut out = String::new();
    for n in nodes(div) {
        if n.block {
            out.push('\n');
        }
        out.push_str(&n.text);
    }
    out
}

/// Escapes what may not stand in XHTML text.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `div` with the entities of `spans` (code points of [`plain`]) replaced in its text
/// nodes; the number of replacements.
pub(super) fn deidentify<R: Rng>(
    div: &str,
    spans: &[Span],
    deid: &mut Deidentifier<R>,
) -> (String, usize) {
    let mut out = String::with_capacity(div.len());
    let mut copied = 0;
    let mut count = 0;
    for node in nodes(div) {
        let chars: Vec<char> = node.text.chars().collect();
        let (offset, len) = (node.at, chars.len());
        // Each entity's part inside this node, without the spaces a cut leaves at its ends.
        let local: Vec<Span> = spans
            .iter()
            .filter(|s| s.start < offset + len && s.end > offset)
            .filter_map(|s| {
                let mut l = s.clone();
                l.start = s.start.max(offset) - offset;
                l.end = s.end.min(offset + len) - offset;
                while l.start < l.end && chars[l.start].is_whitespace() {
                    l.start += 1;
                }
                while l.end > l.start && chars[l.end - 1].is_whitespace() {
                    l.end -= 1;
                }
                (l.start < l.end).then_some(l)
            })
            .collect();
        let done = deid.apply(&node.text, &local);
        let mut pos = node.raw.0;
        for r in &done.replacements {
            let (start, end) = (node.bytes[r.span.start].0, node.bytes[r.span.end - 1].1);
            out.push_str(&div[copied..pos]);
            out.push_str(&div[pos..start]);
            out.push_str(&escape(&r.replacement));
            pos = end;
            copied = end;
        }
        out.push_str(&div[copied..pos]);
        copied = pos;
        count += done.replacements.len();
    }
    out.push_str(&div[copied..]);
    (out, count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deid::{DeidOptions, HashKey};
    use crate::detect::{Label, Source};

    #[test]
    fn text_nodes_are_read_decoded_and_joined_as_a_reader_sees_them() {
        let div = r#"<div xmlns="http://www.w3.org/1999/xhtml"><!-- a <b> --><p>John <b>Smith</b> (&quot;Jo&quot;)</p><p>Next</p></div>"#;
        assert_eq!(plain(div), "John Smith (\"Jo\")\nNext");
        let table = "<table><tr><td>Name</td><td>Peter</td></tr><tr><td>Address</td></tr></table>";
        assert_eq!(plain(table), "Name\nPeter\nAddress");
    }

    #[test]
    fn an_entity_over_two_nodes_is_cut_and_the_rest_stays_byte_for_byte() {
        let div = "<div><p>Seen: John <b>Smith</b> &amp; &quot;Jo&quot;</p></div>";
        let text = plain(div);
        let at = |w: &str| text.find(w).unwrap_or(0);
        let spans = [
            Span::new(
                at("John"),
                at("Smith") + 5,
                Label::Person,
                1.0,
                Source::Rule,
            ),
            Span::new(
                at("Jo\""),
                at("Jo\"") + 2,
                Label::FirstName,
                1.0,
                Source::Rule,
            ),
        ];
        let mut deid = Deidentifier::new(
            DeidOptions::default(),
            &HashKey::from_bytes([1; 32]),
            rand::rng(),
        );
        let (out, n) = deidentify(div, &spans, &mut deid);
        assert_eq!(n, 3);
        assert_eq!(
            out,
            "<div><p>Seen: [person] <b>[person]</b> &amp; &quot;[first_name]&quot;</p></div>"
        );
    }

    #[test]
    fn odd_fragments_never_panic() {
        for div in [
            "",
            "<",
            "&",
            "&#xZZ;",
            "a<b",
            "<!--",
            "&amp",
            "é&#233;<p>ü</p>",
        ] {
            let text = plain(div);
            let n = text.chars().count();
            let spans = if n > 0 {
                vec![Span::new(0, n, Label::Other, 1.0, Source::Rule)]
            } else {
                Vec::new()
            };
            let mut deid = Deidentifier::new(
                DeidOptions::default(),
                &HashKey::from_bytes([1; 32]),
                rand::rng(),
            );
            let _ = deidentify(div, &spans, &mut deid);
        }
    }
}
