//! The normalised view that recognizers read, and the way back to the submitted text.
//!
//! # Why a view
//!
//! The same identifier reaches the service in many spellings that look alike on screen:
//! fullwidth digits from CJK input methods (`１２３-４５-６７８９`), non-breaking hyphens and
//! soft hyphens from word processors, zero-width spaces pasted from web pages, ligatures
//! and non-breaking spaces. Patterns, context words and the tokenizer all expect the plain
//! forms, so an identifier written that way used to pass through untouched. Every
//! recognizer therefore reads a [`View`]: the text in NFKC, with zero-width characters
//! removed and Unicode hyphens folded to `-`. Spans found in the view are mapped back
//! ([`View::to_original`]) so that responses, masks and offsets always index the text the
//! client sent, never the view.
//!
//! # How offsets map back
//!
//! The text is cut into segments, each a starter (canonical combining class 0) with the
//! combining marks after it, and each segment is normalised on its own. Every code point
//! of the view remembers the segment it came from, so a view span maps to the range from
//! the start of its first segment to the end of its last. The cost of working per segment
//! is that compositions across two starters (Hangul conjoining jamo) are not made; nothing
//! a recognizer matches depends on them. ASCII text, and text that the view leaves as it
//! is, skip the map entirely.

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::UnicodeNormalization;

use super::Span;

/// Characters with no width that split identifiers invisibly: removed from the view.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200B}' // zero-width space
            | '\u{200C}' // zero-width non-joiner
            | '\u{200D}' // zero-width joiner
            | '\u{2060}' // word joiner
            | '\u{FEFF}' // zero-width no-break space (BOM)
            | '\u{00AD}' // soft hyphen
            | '\u{180E}' // Mongolian vowel separator
    )
}

/// Unicode hyphens (after NFKC) that stand for an ASCII hyphen inside identifiers. En and
/// em dashes are left alone (they separate ranges and clauses), except between the digit
/// groups of one number ([`chain_dashes`]).
fn fold(c: char) -> char {
    match c {
        '\u{2010}' | '\u{2012}' | '\u{2212}' | '\u{FE63}' => '-',
        c => c,
    }
}

/// The code-point indices of the en and em dashes that join three or more digit groups
/// (`617–555–0142`, `03–05–2024`, `123—45—6789`): such a chain is one number or one
/// date, never a range (`10–12 days`, `2019–2021` have one dash), so these dashes are read
/// as hyphens. Before, the whole date, and the last four digits of the phone, were kept.
fn chain_dashes(text: &str) -> Vec<usize> {
    let chars: Vec<char> = text.chars().collect();
    let dash = |c: char| matches!(c, '\u{2013}' | '\u{2014}');
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_numeric() {
            i += 1;
            continue;
        }
        // A chain: digits, then (dash, digits) repeated.
        let first = i;
        let mut dashes = Vec::new();
        while i < chars.len() && chars[i].is_numeric() {
            i += 1;
            if i + 1 < chars.len() && dash(chars[i]) && chars[i + 1].is_numeric() {
                dashes.push(i);
                i += 1;
            }
        }
        // One dash in a phone number after its area code, `(303) 555–0123`: three digits,
        // the dash, four digits, after a closing parenthesis.
        let after_area = |d: usize| {
            d - first == 3
                && i - d - 1 == 4
                && chars[..first]
                    .iter()
                    .rev()
                    .find(|c| **c != ' ')
                    .is_some_and(|c| *c == ')')
        };
        if dashes.len() >= 2 || (dashes.len() == 1 && after_area(dashes[0])) {
            out.extend(dashes);
        }
    }
    out
}

/// The value of a decimal digit of a script other than ASCII whose ten digits are
/// consecutive code points (Arabic-Indic, Devanagari, Bengali, Thai …): found by walking
/// back to the block's zero, which `char::to_digit` does not do. `None` for ASCII digits
/// and anything else.
///
/// Only decimal digits (general category Nd) count: other numerals that run in order, like
/// Ethiopic `፩`–`፼` (one to ten thousand, no zero), were read as digits from zero, so
/// `፲፬/፭/፲፱፻፹፰` became an ASCII number no rule knew and its date leaked.
pub(crate) fn decimal_value(c: char) -> Option<u32> {
    /// One decimal digit of any script: the standard library has no general category, and
    /// the regex crate's Unicode tables are current.
    static DECIMAL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        #[allow(clippy::expect_used)]
        regex::Regex::new(r"^\p{Nd}$").expect("a class compiles")
    });
    let decimal = |code: u32| {
        char::from_u32(code).is_some_and(|c| DECIMAL.is_match(c.encode_utf8(&mut [0; 4])))
    };
    let code = u32::from(c);
    if !c.is_numeric() || c.is_ascii_digit() || c.is_ascii() || !decimal(code) {
        return None;
    }
    (0..10).find(|&k| {
        let zero = code - k.min(code);
        zero > 0 && !decimal(zero - 1) && (0..10).all(|d| decimal(zero + d))
    })
}

/// `spans` (sorted, disjoint, code-point offsets of `text`) widened so that none starts on a
/// combining mark or ends just before one, resolving any overlap that creates.
fn whole_segments(text: &str, mut spans: Vec<Span>) -> Vec<Span> {
    if text.is_ascii() || spans.is_empty() {
        return spans;
    }
    let chars: Vec<char> = text.chars().collect();
    let mark = |i: usize| {
        chars.get(i).is_some_and(|&c| {
            canonical_combining_class(c) != 0 || unicode_normalization::char::is_combining_mark(c)
        })
    };
    let mut widened = false;
    for s in &mut spans {
        while s.start > 0 && mark(s.start) {
            s.start -= 1;
            widened = true;
        }
        while s.end < chars.len() && mark(s.end) {
            s.end += 1;
            widened = true;
        }
    }
    if widened {
        super::merge::resolve(spans)
    } else {
        spans
    }
}

/// A text as recognizers read it (see the module docs).
#[derive(Clone, Debug)]
pub struct View<'t> {
    original: &'t str,
    /// The normalised text; `None` when it equals the original.
    text: Option<String>,
    /// For each code point of `text`, the original code-point range of its segment.
    origin: Vec<(usize, usize)>,
}

impl<'t> View<'t> {
    /// Builds the view of `text`.
    pub fn new(text: &'t str) -> Self {
        let identity = View {
            original: text,
            text: None,
            origin: Vec::new(),
        };
        if text.is_ascii() {
            return identity;
        }
        let mut out = String::with_capacity(text.len());
        let mut origin = Vec::with_capacity(text.len());
        let mut changed = false;
        let mut segment = String::new();
        let mut seg_start = 0usize;
        let mut seg_len = 0usize;
        let chained = chain_dashes(text);
        let mut flush = |segment: &mut String, start: usize, len: usize| {
            if len == 0 {
                return;
            }
            let before = out.len();
            for c in segment.nfkc() {
                if is_invisible(c) {
                    continue;
                }
                let joins_digits = len == 1 && chained.binary_search(&start).is_ok();
                // Digits of other scripts (Arabic-Indic, Devanagari …) read as ASCII, as
                // NFKC reads full-width ones: an MRN in them was taken for a surname.
                let c = match decimal_value(c) {
                    Some(d) => char::from_digit(d, 10).unwrap_or(c),
                    None => c,
                };
                out.push(if joins_digits { '-' } else { fold(c) });
                origin.push((start, start + len));
            }
            if out[before..] != **segment {
                changed = true;
            }
            segment.clear();
        };
        for (i, c) in text.chars().enumerate() {
            if canonical_combining_class(c) == 0 {
                flush(&mut segment, seg_start, seg_len);
                seg_start = i;
                seg_len = 0;
            }
            segment.push(c);
            seg_len += 1;
        }
        flush(&mut segment, seg_start, seg_len);
        if !changed {
            return identity;
        }
        View {
            original: text,
            text: Some(out),
            origin,
        }
    }

    /// The text recognizers read.
    pub fn text(&self) -> &str {
        self.text.as_deref().unwrap_or(self.original)
    }

    /// True when the view differs from the submitted text.
    pub fn is_changed(&self) -> bool {
        self.text.is_some()
    }

    /// Maps spans in view offsets to spans in offsets of the submitted text, resolving any
    /// overlap the mapping creates (two view code points from one segment). Spans past the
    /// end of the view are dropped. A mapped span always holds whole letters: a base with
    /// its combining marks (the vowel signs of Indic and Thai scripts). A model's span
    /// ended before `ಿ` in `ಶ್ರೀಮತಿ` where the tokenizer had dropped the mark, and the mask
    /// left it hanging after the placeholder.
    pub fn to_original(&self, spans: Vec<Span>) -> Vec<Span> {
        if self.text.is_none() {
            return whole_segments(self.original, spans);
        }
        let mapped = spans
            .into_iter()
            .filter(|s| s.start < s.end && s.end <= self.origin.len())
            .map(|mut s| {
                s.start = self.origin[s.start].0;
                s.end = self.origin[s.end - 1].1;
                s
            })
            .collect();
        // Segments end at every starter, and most Indic vowel signs are starters
        // (canonical combining class 0): they need the same widening.
        whole_segments(self.original, super::merge::resolve(mapped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::{Label, Source};
    use proptest::prelude::*;

    fn span(start: usize, end: usize) -> Span {
        Span::new(start, end, Label::Ssn, 0.9, Source::Rule)
    }

    fn chars(text: &str, s: &Span) -> String {
        text.chars().skip(s.start).take(s.end - s.start).collect()
    }

    #[test]
    fn ascii_and_already_normal_text_is_its_own_view() {
        for text in ["SSN 123-45-6789", "Zoë Brontë, Łódź", ""] {
            let v = View::new(text);
            assert!(!v.is_changed(), "{text}");
            assert_eq!(v.text(), text);
        }
    }

    #[test]
    fn fullwidth_digits_zero_width_and_hyphens_read_as_ascii() {
        let text = "SSN １２３\u{2011}４５\u{200B}-６７８９ ok";
        let v = View::new(text);
        assert_eq!(v.text(), "SSN 123-45-6789 ok");
        let found = v.to_original(vec![span(4, 15)]);
        assert_eq!(found.len(), 1);
        assert_eq!(
            chars(text, &found[0]),
            "１２３\u{2011}４５\u{200B}-６７８９"
        );
    }

    /// En and em dashes between three digit groups are one number's hyphens; one dash
    /// between two numbers is a range and stays.
    #[test]
    fn dashes_chaining_digit_groups_read_as_hyphens_and_ranges_stay() {
        let v = View::new("Phone 617\u{2013}555\u{2013}0142, seen 03\u{2014}05\u{2014}2024");
        assert_eq!(v.text(), "Phone 617-555-0142, seen 03-05-2024");
        let v = View::new("or (303) 555\u{2013}0123; MRN \u{0664}\u{0665}\u{0666}\u{0667}");
        assert_eq!(v.text(), "or (303) 555-0123; MRN 4567");
        for text in [
            "for 10\u{2013}12 days",
            "2019\u{2013}2021 \u{2013} 5",
            "a \u{2013} b",
        ] {
            let v = View::new(text);
            assert!(!v.is_changed(), "{text}");
        }
    }

    /// Decimal digits of every script read as ASCII, the last of a block too where other
    /// numerals follow it (Tamil `௯` before `௰`, ten); numerals without a zero do not
    /// (Ethiopic `፩`–`፼`, which were read as `0`–`9`).
    #[test]
    fn decimal_digits_read_as_ascii_and_other_numerals_stay() {
        assert_eq!(View::new("MRN ௧௨௯ ٤٥ ९").text(), "MRN 129 45 9");
        for c in ['௰', '፩', '፲', '፻', 'Ⅻ', '½'] {
            assert_eq!(decimal_value(c), None, "{c}");
        }
        let text = "ቀን፡ ፲፬/፭/፲፱፻፹፰።";
        assert!(!View::new(text).is_changed());
    }

    #[test]
    fn a_ligature_split_by_a_span_maps_to_the_whole_ligature() {
        // "ﬁ" is one code point and two in the view.
        let text = "Dr ﬁnn";
        let v = View::new(text);
        assert_eq!(v.text(), "Dr finn");
        let found = v.to_original(vec![span(4, 7)]);
        assert_eq!((found[0].start, found[0].end), (3, 6));
    }

    /// In a text the view leaves as it is, a span that stops before a vowel sign, or starts
    /// on one, takes the whole letter; ASCII and whole spans stay.
    #[test]
    fn spans_in_an_unchanged_text_take_whole_letters() {
        let text = "Patient ಶ್ರೀಮತಿ K. วันที่ ok";
        let v = View::new(text);
        assert!(!v.is_changed());
        let i = text.chars().position(|c| c == 'ಶ').unwrap_or(0);
        // `ಶ್ರೀಮತ` without its final `ಿ`; `ี่` of `วันที่` alone.
        let t = text.chars().position(|c| c == 'ว').unwrap_or(0);
        let found = v.to_original(vec![span(i, i + 6), span(t + 4, t + 5)]);
        let got: Vec<String> = found.iter().map(|s| chars(text, s)).collect();
        assert_eq!(got, ["ಶ್ರೀಮತಿ", "ที่"]);
        let whole = vec![span(0, 7), span(i, i + 7)];
        assert_eq!(v.to_original(whole.clone()), whole);
        // The same where the view differs (full-width letters): most Indic vowel signs
        // are segments of their own.
        let text = "ＭＲＮ ಶ್ರೀಮತಿ";
        let v = View::new(text);
        assert!(v.is_changed());
        let found = v.to_original(vec![span(4, 10)]);
        assert_eq!(chars(text, &found[0]), "ಶ್ರೀಮತಿ");
    }

    #[test]
    fn combining_marks_stay_with_their_base() {
        let text = "Jose\u{0301} ﹣ 1";
        let v = View::new(text);
        assert_eq!(v.text(), "José - 1");
        let found = v.to_original(vec![span(0, 4)]);
        assert_eq!(chars(text, &found[0]), "Jose\u{0301}");
    }

    proptest! {
        /// For any text and any view span, the mapped span indexes the submitted text, is
        /// not empty, and covers every original code point the view span came from.
        #[test]
        fn mapped_spans_index_the_submitted_text(
            text in "(\\PC|[０-９\u{200B}\u{2011}\u{00AD}\u{FB01}\u{0301}\u{1100}\u{1161}a-z0-9 -]){0,40}",
            cuts in proptest::collection::vec((0usize..64, 1usize..8), 0..6),
        ) {
            let v = View::new(&text);
            let n_view = v.text().chars().count();
            let n_orig = text.chars().count();
            let spans: Vec<Span> = cuts
                .iter()
                .filter_map(|&(a, len)| {
                    let a = a % (n_view + 1);
                    let b = (a + len).min(n_view);
                    (a < b).then(|| span(a, b))
                })
                .collect();
            // Recognizer output is resolved (sorted, disjoint) before it is mapped.
            let spans = crate::detect::resolve(spans);
            let mapped = v.to_original(spans.clone());
            for m in &mapped {
                prop_assert!(m.start < m.end && m.end <= n_orig);
            }
            for w in mapped.windows(2) {
                prop_assert!(w[0].end <= w[1].start);
            }
            // Every view code point inside a span maps into some mapped span.
            if v.is_changed() {
                for s in &spans {
                    for j in s.start..s.end {
                        let (a, b) = v.origin[j];
                        prop_assert!(mapped.iter().any(|m| m.start <= a && b <= m.end));
                    }
                }
            } else {
                prop_assert_eq!(v.text(), text.as_str());
            }
        }
    }
}
