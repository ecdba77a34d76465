//! `Narrative.div`: the text nodes of an XHTML fragment de-identified, the markup kept
//! where it cannot carry PHI.
//!
//! The engine reads the text nodes as a reader sees them: entities decoded (`&quot;Jim&quot;`
//! reads `"Jim"`), nodes on either side of an inline tag (`<b>`, `<span>`) joined as they
//! render (so `Peter <b>Chalmers</b>` is one name), and a line break where a block starts
//! or ends (`<td>`, `<p>`, `<br/>`: a table's cells are separate fields, and a name in one
//! does not run into the heading of the next). Entities found there are cut at node
//! boundaries; each node is rewritten from its raw text, its replacements XML-escaped, so
//! everything not replaced stays byte for byte. Written here because the fragment only has
//! to be split into tags and text, not parsed into a tree.
//!
//! # Why the markup is cleaned first
//!
//! EHR-generated narratives put PHI outside the text nodes too: a `title` or `alt` a reader
//! sees on hover, a `mailto:` or `tel:` link, an image URL with the patient's name, an `id`
//! made of it, a comment. Before anything is read, [`sanitize`] removes comments,
//! processing instructions and CDATA sections, keeps only layout attributes
//! ([`KEPT_ATTRIBUTES`]) as they are, renames `id` and `name` values (`n1`, `n2`, … in order
//! of appearance) and the local links to them, keeps any other local reference (`#…`, a
//! contained resource), drops every other `href` (an `img` keeps `src="#"`, as XHTML
//! requires a `src`), and leaves `title` and `alt` in place: their values are read as text
//! nodes of their own (a line each), so they go through the engine as the text does.

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

/// Attributes kept as they are: layout only, never a value a person wrote.
const KEPT_ATTRIBUTES: &[&str] = &[
    "xmlns",
    "xml:lang",
    "lang",
    "dir",
    "class",
    "style",
    "colspan",
    "rowspan",
    "span",
    "scope",
    "align",
    "valign",
    "width",
    "height",
    "border",
    "cellpadding",
    "cellspacing",
    "start",
    "type",
];

/// Attributes whose values are read as text (a reader sees them).
const TEXT_ATTRIBUTES: &[&str] = &["title", "alt"];

/// One attribute of a tag: its name and, when quoted, its value's byte range in the tag.
struct Attr<'a> {
    name: &'a str,
    value: Option<(usize, usize)>,
}

/// The byte length of the markup at the start of `s` (`<…>`, `<!--…-->`), quotes in
/// attribute values respected; the rest of `s` when it is not closed.
fn markup_len(s: &str) -> usize {
    if s.starts_with("<!--") {
        return s.find("-->").map_or(s.len(), |i| i + 3);
    }
    if s.starts_with("<![CDATA[") {
        return s.find("]]>").map_or(s.len(), |i| i + 3);
    }
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return i + 1,
            _ => {}
        }
    }
    s.len()
}

/// The element name of a tag (`<p …>`, `</p>`).
fn tag_name(tag: &str) -> &str {
    let body = tag.trim_start_matches('<').trim_start_matches('/');
    let end = body
        .find(|c: char| c.is_whitespace() || c == '/' || c == '>')
        .unwrap_or(body.len());
    &body[..end]
}

/// The attributes of a start tag, in order.
fn attributes(tag: &str) -> Vec<Attr<'_>> {
    let mut out = Vec::new();
    let body_start = 1 + tag_name(tag).len();
    let b = tag.as_bytes();
    let mut i = body_start.min(tag.len());
    while i < tag.len() {
        while i < tag.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= tag.len() || b[i] == b'/' || b[i] == b'>' {
            break;
        }
        let name_start = i;
        while i < tag.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b'=' | b'/' | b'>') {
            i += 1;
        }
        let name = &tag[name_start..i];
        while i < tag.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = None;
        if i < tag.len() && b[i] == b'=' {
            i += 1;
            while i < tag.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < tag.len() && matches!(b[i], b'"' | b'\'') {
                let q = b[i];
                let v_start = i + 1;
                let v_end = tag[v_start..]
                    .bytes()
                    .position(|c| c == q)
                    .map_or(tag.len(), |p| v_start + p);
                value = Some((v_start, v_end));
                i = (v_end + 1).min(tag.len());
            } else {
                // An unquoted value (not XML): skipped, and the attribute dropped.
                while i < tag.len() && !b[i].is_ascii_whitespace() && b[i] != b'>' {
                    i += 1;
                }
            }
        }
        if name.is_empty() {
            i += 1;
            continue;
        }
        out.push(Attr { name, value });
    }
    out
}

/// The fragment with what may carry PHI outside text and `title`/`alt` taken out (see the
/// module docs): the same markup otherwise, so the XHTML stays valid and keeps its shape.
pub(super) fn sanitize(div: &str) -> String {
    // `id` and `name` values, in order of appearance, become `n1`, `n2`, …
    let mut ids: Vec<String> = Vec::new();
    let mut pos = 0;
    while pos < div.len() {
        let rest = &div[pos..];
        if rest.starts_with('<') {
            let len = markup_len(rest);
            let tag = &rest[..len];
            if !tag.starts_with("<!") && !tag.starts_with("<?") && !tag.starts_with("</") {
                for a in attributes(tag) {
                    if matches!(a.name.to_ascii_lowercase().as_str(), "id" | "name") {
                        if let Some((s, e)) = a.value {
                            if !ids.iter().any(|i| i == &tag[s..e]) {
                                ids.push(tag[s..e].to_owned());
                            }
                        }
                    }
                }
            }
            pos += len;
        } else {
            pos += rest.find('<').unwrap_or(rest.len());
        }
    }
    let renamed = |v: &str| {
        ids.iter()
            .position(|i| i == v)
            .map(|k| format!("n{}", k + 1))
    };
    let mut out = String::with_capacity(div.len());
    let mut pos = 0;
    while pos < div.len() {
        let rest = &div[pos..];
        if !rest.starts_with('<') {
            let len = rest.find('<').unwrap_or(rest.len());
            out.push_str(&rest[..len]);
            pos += len;
            continue;
        }
        let len = markup_len(rest);
        let tag = &rest[..len];
        pos += len;
        // Comments, processing instructions, CDATA, and a tag never closed: gone.
        if tag.starts_with("<!") || tag.starts_with("<?") || !tag.ends_with('>') {
            continue;
        }
        let name = tag_name(tag);
        if tag.starts_with("</") {
            out.push_str("</");
            out.push_str(name);
            out.push('>');
            continue;
        }
        out.push('<');
        out.push_str(name);
        let mut has_src = false;
        for a in attributes(tag) {
            let Some((s, e)) = a.value else { continue };
            let raw = &tag[s..e];
            let lower = a.name.to_ascii_lowercase();
            let value = match lower.as_str() {
                n if KEPT_ATTRIBUTES.contains(&n) || TEXT_ATTRIBUTES.contains(&n) => {
                    Some(raw.to_owned())
                }
                "id" | "name" => renamed(raw),
                "href" | "src" => raw
                    .strip_prefix('#')
                    .map(|f| renamed(f).map_or_else(|| raw.to_owned(), |n| format!("#{n}"))),
                _ => None,
            };
            if let Some(v) = value {
                has_src |= lower == "src";
                let q = if v.contains('"') { '\'' } else { '"' };
                out.push(' ');
                out.push_str(a.name);
                out.push('=');
                out.push(q);
                out.push_str(&v);
                out.push(q);
            }
        }
        if name.eq_ignore_ascii_case("img") && !has_src {
            out.push_str(" src=\"#\"");
        }
        out.push_str(if tag.ends_with("/>") { "/>" } else { ">" });
    }
    out
}

/// The decoded text of `div[start..end]` and the raw byte range of each character.
fn decode(div: &str, start: usize, end: usize) -> (String, Vec<(usize, usize)>) {
    let (mut text, mut bytes) = (String::new(), Vec::new());
    let mut i = start;
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
    (text, bytes)
}

/// The text nodes of a [`sanitize`]d `div`, decoded and placed in the joined text; a
/// `title` or `alt` value is a node of its own on a line of its own.
fn nodes(div: &str) -> Vec<Node> {
    let mut out: Vec<Node> = Vec::new();
    let mut pos = 0;
    let mut block = false;
    let push = |out: &mut Vec<Node>, raw: (usize, usize), block: bool| {
        let (text, bytes) = decode(div, raw.0, raw.1);
        let block_before = block && !out.is_empty();
        let at = out.last().map_or(0, |prev: &Node| {
            prev.at + prev.bytes.len() + usize::from(block_before)
        });
        out.push(Node {
            raw,
            text,
            bytes,
            at,
            block: block_before,
        });
    };
    while pos < div.len() {
        if div[pos..].starts_with('<') {
            let end = pos + markup_len(&div[pos..]);
            let tag = &div[pos..end];
            block |= is_block(tag);
            if !tag.starts_with("<!") && !tag.starts_with("</") {
                for a in attributes(tag) {
                    if let Some((s, e)) = a.value {
                        if TEXT_ATTRIBUTES.contains(&a.name.to_ascii_lowercase().as_str()) {
                            push(&mut out, (pos + s, pos + e), true);
                            block = true;
                        }
                    }
                }
            }
            pos = end;
            continue;
        }
        let end = div[pos..].find('<').map_or(div.len(), |i| pos + i);
        push(&mut out, (pos, end), block);
        block = false;
        pos = end;
    }
    out
}

/// The text the engine reads.
pub(super) fn plain(div: &str) -> String {
    let div = sanitize(div);
    let mut out = String::new();
    for n in nodes(&div) {
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
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// `div` [`sanitize`]d, with the entities of `spans` (code points of [`plain`]) replaced in
/// its text nodes; the number of replacements.
pub(super) fn deidentify<R: Rng>(
    div: &str,
    spans: &[Span],
    deid: &mut Deidentifier<R>,
) -> (String, usize) {
    let clean = sanitize(div);
    let div = clean.as_str();
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
    fn attributes_and_comments_carry_no_phi_out() {
        let div = concat!(
            r##"<div xmlns="http://www.w3.org/1999/xhtml"><p title="Arthur Quibblesworth" class="c">Seen</p>"##,
            r##"<a href="mailto:arthur.quibblesworth@example.com">mail</a> <a href="tel:+16175550142">call</a>"##,
            r##"<img src="http://h.example.org/Quibblesworth.png" alt="Photo of Arthur Quibblesworth"/>"##,
            r##"<span id="Quibblesworth-a1" onclick="x">x</span><a href="#Quibblesworth-a1">back</a>"##,
            r##"<img src="#bin1" alt=""/><!-- Arthur Quibblesworth MRN 4455667 --><![CDATA[MRN 4455667]]></div>"##
        );
        let text = plain(div);
        assert_eq!(
            text,
            "Arthur Quibblesworth\nSeen\nmail call\nPhoto of Arthur Quibblesworth\nxback\n"
        );
        let at = text.find("Arthur").unwrap_or(0);
        let second = text.rfind("Arthur").unwrap_or(0);
        let spans = [
            Span::new(at, at + 20, Label::Person, 1.0, Source::Rule),
            Span::new(second, second + 20, Label::Person, 1.0, Source::Rule),
        ];
        let mut deid = Deidentifier::new(
            DeidOptions::default(),
            &HashKey::from_bytes([1; 32]),
            rand::rng(),
        );
        let (out, n) = deidentify(div, &spans, &mut deid);
        assert_eq!(n, 2);
        assert_eq!(
            out,
            concat!(
                r##"<div xmlns="http://www.w3.org/1999/xhtml"><p title="[person]" class="c">Seen</p>"##,
                r##"<a>mail</a> <a>call</a>"##,
                r##"<img alt="Photo of [person]" src="#"/>"##,
                r##"<span id="n1">x</span><a href="#n1">back</a>"##,
                r##"<img src="#bin1" alt=""/></div>"##
            )
        );
        for phi in ["Quibblesworth", "4455667", "6175550142"] {
            assert!(!out.contains(phi), "{phi} in {out}");
        }
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
