//! Sealed mappings: what a de-identification replaced, encrypted so that the caller can keep
//! it beside the de-identified text but cannot read it, and only an admin of this install
//! can use it to restore the original (`POST /admin/reidentify`).
//!
//! # What is sealed
//! Each replaced span as `(start, end, original)` in code points of the *de-identified*
//! text, and a digest of that text. Restoring the exact text that was sealed puts every
//! original back at its offsets, whatever the method (with `mask`, `[first_name]` can
//! stand for several names, and only the offsets tell them apart). A text that was edited
//! afterwards is restored by value instead: every replacement that stands for a single
//! original is swapped back wherever it appears, and the others are counted as
//! unresolved.
//!
//! # The key
//! A 256-bit key of its own (`mapping-key`, in the OS keychain beside the hash key; a
//! cluster shares it like the hash key), used with XChaCha20-Poly1305 and a random 192-bit
//! nonce per seal: a seal cannot be read or changed without the key, and a changed or
//! foreign seal is refused rather than restored wrongly. The key never leaves the server,
//! and the only route that opens a seal needs the admin scope.

use std::collections::BTreeMap;

use aho_corasick::{AhoCorasick, MatchKind};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What every sealed mapping starts with (and its format version).
pub const PREFIX: &str = "phiguard-sealed-v1:";

/// Bound into every seal as associated data, so a seal made for something else with the
/// same key would not open as a mapping.
const CONTEXT: &[u8] = b"phiguard sealed mapping v1";

/// Why a seal did not open. Says nothing about its content.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    /// Not `phiguard-sealed-v1:` followed by base64url, or too short to hold a nonce.
    #[error("not a sealed mapping")]
    Malformed,
    /// Made with another key, or changed since it was made.
    #[error("the sealed mapping was not made by this install, or was changed")]
    Forged,
}

/// One replaced span: code-point offsets into the de-identified text, what stands there,
/// and what stood there before.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedSpan {
    /// Start in the de-identified text (code points).
    pub start: usize,
    /// One past the end.
    pub end: usize,
    /// The replacement (the de-identified text between `start` and `end`).
    pub replacement: String,
    /// The original text.
    pub original: String,
}

#[derive(Serialize, Deserialize)]
struct Contents {
    /// SHA-256 of the de-identified text, hex.
    text: String,
    spans: Vec<SealedSpan>,
}

/// What a seal's plain text is padded to a multiple of, in bytes.
const PAD: usize = 256;

/// `plain` with spaces after it up to the next multiple of [`PAD`]: unpadded, a seal's
/// length told the length of the names and numbers in it, character by character (a seal
/// is kept beside the released text).
fn padded(mut plain: Vec<u8>) -> Vec<u8> {
    let len = plain.len().div_ceil(PAD).max(1) * PAD;
    plain.resize(len, b' ');
    plain
}

/// The sealing key.
#[derive(Clone)]
pub struct SealKey([u8; 32]);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(..)")
    }
}

/// What [`SealKey::restore`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restored {
    /// The text with the originals back.
    pub text: String,
    /// Replacements put back.
    pub restored: usize,
    /// Replacements left as they were: they stand for more than one original and the text
    /// is not the one that was sealed.
    pub unresolved: usize,
    /// The text was the one sealed: every span was restored at its offsets.
    pub exact: bool,
}

fn digest(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

impl SealKey {
    /// Wraps raw key bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> SealKey {
        SealKey(bytes)
    }

    /// Reads a key written by [`SealKey::to_hex`].
    ///
    /// # Errors
    /// When `hex` is not 64 hex digits.
    pub fn from_hex(text: &str) -> Result<SealKey, SealError> {
        let bytes = hex::decode(text.trim()).map_err(|_| SealError::Malformed)?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| SealError::Malformed)?;
        Ok(SealKey(bytes))
    }

    /// The key as 64 hex digits, to persist.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new((&self.0).into())
    }

    /// Seals the `spans` replaced in `deidentified`.
    pub fn seal<R: Rng + ?Sized>(
        &self,
        deidentified: &str,
        spans: Vec<SealedSpan>,
        rng: &mut R,
    ) -> String {
        let plain = serde_json::to_vec(&Contents {
            text: digest(deidentified),
            spans,
        })
        // A struct of strings and integers always serialises.
        .unwrap_or_default();
        let plain = padded(plain);
        let mut nonce = [0u8; 24];
        rng.fill(&mut nonce);
        let sealed = self
            .cipher()
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: &plain,
                    aad: CONTEXT,
                },
            )
            // Encryption fails only for messages over 256 GiB.
            .unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(out))
    }

    fn open(&self, sealed: &str) -> Result<Contents, SealError> {
        // The padding is JSON white space: `from_slice` reads past it (and seals made
        // before the padding open as they did).
        let body = sealed
            .trim()
            .strip_prefix(PREFIX)
            .ok_or(SealError::Malformed)?;
        let bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| SealError::Malformed)?;
        if bytes.len() < 24 + 16 {
            return Err(SealError::Malformed);
        }
        let (nonce, ct) = bytes.split_at(24);
        let plain = self
            .cipher()
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ct,
                    aad: CONTEXT,
                },
            )
            .map_err(|_| SealError::Forged)?;
        serde_json::from_slice(&plain).map_err(|_| SealError::Forged)
    }

    /// Puts the originals of `sealed` back into `text` (see the module docs).
    ///
    /// # Errors
    /// [`SealError`] when the seal is malformed, foreign or changed.
    pub fn restore(&self, text: &str, sealed: &str) -> Result<Restored, SealError> {
        let payload = self.open(sealed)?;
        let chars: Vec<char> = text.chars().collect();
        let in_bounds = payload
            .spans
            .iter()
            .all(|s| s.start <= s.end && s.end <= chars.len());
        if payload.text == digest(text) && in_bounds {
            let mut spans = payload.spans;
            spans.sort_by_key(|s| s.start);
            let mut out = String::with_capacity(text.len());
            let mut at = 0;
            let mut restored = 0;
            for s in &spans {
                if s.start < at {
                    continue;
                }
                out.extend(&chars[at..s.start]);
                out.push_str(&s.original);
                at = s.end;
                restored += 1;
            }
            out.extend(&chars[at..]);
            return Ok(Restored {
                text: out,
                restored,
                unresolved: spans.len() - restored,
                exact: true,
            });
        }
        Ok(by_value(text, &payload))
    }
}

/// Restores by value: each replacement that stands for one original is swapped back
/// wherever it appears, in one left-to-right pass that prefers the longest replacement at a
/// position (so a restored original is never read again, and `[first_name]` inside a longer
/// replacement is not swapped early); occurrences of the others are counted as unresolved.
fn by_value(text: &str, payload: &Contents) -> Restored {
    let mut originals: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for s in payload.spans.iter().filter(|s| !s.replacement.is_empty()) {
        let list = originals.entry(s.replacement.as_str()).or_default();
        if !list.contains(&s.original.as_str()) {
            list.push(&s.original);
        }
    }
    let patterns: Vec<&str> = originals.keys().copied().collect();
    let Ok(ac) = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(&patterns)
    else {
        return Restored {
            text: text.to_owned(),
            restored: 0,
            unresolved: 0,
            exact: false,
        };
    };
    let mut out = String::with_capacity(text.len());
    let (mut restored, mut unresolved, mut at) = (0, 0, 0);
    for m in ac.find_iter(text) {
        out.push_str(&text[at..m.start()]);
        let rep = patterns[m.pattern().as_usize()];
        match originals[rep].as_slice() {
            [one] => {
                out.push_str(one);
                restored += 1;
            }
            _ => {
                out.push_str(rep);
                unresolved += 1;
            }
        }
        at = m.end();
    }
    out.push_str(&text[at..]);
    Restored {
        text: out,
        restored,
        unresolved,
        exact: false,
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    use super::*;

    fn key(b: u8) -> SealKey {
        SealKey::from_bytes([b; 32])
    }

    fn span(text: &str, replacement: &str, original: &str, nth: usize) -> SealedSpan {
        let byte = text
            .match_indices(replacement)
            .nth(nth)
            .map(|(i, _)| i)
            .unwrap_or(0);
        let start = text[..byte].chars().count();
        SealedSpan {
            start,
            end: start + replacement.chars().count(),
            replacement: replacement.into(),
            original: original.into(),
        }
    }

    const MASKED: &str = "[first_name] saw [first_name] on [date]; café [first_name].";

    fn masked_spans() -> Vec<SealedSpan> {
        vec![
            span(MASKED, "[first_name]", "Ann", 0),
            span(MASKED, "[first_name]", "Bob", 1),
            span(MASKED, "[date]", "2024-03-01", 0),
            span(MASKED, "[first_name]", "Zoë", 2),
        ]
    }

    #[test]
    fn the_sealed_text_is_restored_exactly_even_when_placeholders_repeat() {
        let k = key(1);
        let sealed = k.seal(MASKED, masked_spans(), &mut StdRng::seed_from_u64(1));
        assert!(sealed.starts_with(PREFIX));
        assert!(!sealed.contains("Ann") && !sealed.contains("2024"));
        let r = k.restore(MASKED, &sealed).expect("opens");
        assert_eq!(r.text, "Ann saw Bob on 2024-03-01; café Zoë.");
        assert_eq!((r.restored, r.unresolved, r.exact), (4, 0, true));
    }

    #[test]
    fn an_edited_text_is_restored_by_value_and_ambiguous_placeholders_are_counted() {
        let k = key(1);
        let sealed = k.seal(MASKED, masked_spans(), &mut StdRng::seed_from_u64(2));
        let edited = "Summary: [first_name] was seen on [date].";
        let r = k.restore(edited, &sealed).expect("opens");
        assert_eq!(r.text, "Summary: [first_name] was seen on 2024-03-01.");
        assert_eq!((r.restored, r.unresolved, r.exact), (1, 1, false));
    }

    #[test]
    fn surrogates_are_swapped_back_in_one_pass_longest_first() {
        let text = "Jamal Chen met Jamal; Jamal Chen left.";
        let spans = vec![
            span(text, "Jamal Chen", "John Smith", 0),
            span(text, "Jamal", "Mary", 1),
        ];
        let k = key(3);
        let sealed = k.seal(text, spans, &mut StdRng::seed_from_u64(3));
        let r = k
            .restore(&format!("{text} (edited)"), &sealed)
            .expect("opens");
        assert_eq!(r.text, "John Smith met Mary; John Smith left. (edited)");
        assert_eq!((r.restored, r.unresolved), (3, 0));
    }

    #[test]
    fn a_foreign_changed_or_malformed_seal_is_refused() {
        let sealed = key(1).seal(MASKED, masked_spans(), &mut StdRng::seed_from_u64(4));
        assert_eq!(key(2).restore(MASKED, &sealed), Err(SealError::Forged));
        let mut bytes = sealed.clone().into_bytes();
        let last = bytes.len() - 3;
        bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(bytes).expect("ascii");
        assert_eq!(key(1).restore(MASKED, &changed), Err(SealError::Forged));
        assert_eq!(key(1).restore(MASKED, "nope"), Err(SealError::Malformed));
        assert_eq!(key(1).restore(MASKED, PREFIX), Err(SealError::Malformed));
        assert_eq!(
            key(1).restore(MASKED, &format!("{PREFIX}!!")),
            Err(SealError::Malformed)
        );
    }

    #[test]
    fn two_seals_of_the_same_mapping_differ() {
        let k = key(1);
        let a = k.seal(MASKED, masked_spans(), &mut StdRng::seed_from_u64(5));
        let b = k.seal(MASKED, masked_spans(), &mut StdRng::seed_from_u64(6));
        assert_ne!(a, b);
    }

    #[test]
    fn keys_never_print() {
        assert_eq!(format!("{:?}", key(9)), "SealKey(..)");
        assert_eq!(
            SealKey::from_hex(&key(9).to_hex()).map(|k| k.0),
            Ok([9; 32])
        );
    }

    #[test]
    fn a_seal_does_not_tell_the_length_of_what_it_holds() {
        let key = SealKey::from_bytes([7u8; 32]);
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let seal = |name: &str, rng: &mut rand::rngs::StdRng| {
            let spans = vec![SealedSpan {
                start: 0,
                end: 12,
                replacement: "[first_name]".into(),
                original: name.into(),
            }];
            key.seal("[first_name] seen", spans, rng)
        };
        let short = seal("Yu", &mut rng);
        let long = seal("Featherstonehaughworthington", &mut rng);
        assert_eq!(short.len(), long.len());
        assert_eq!(
            key.open(&long)
                .map(|c| c.spans[0].original.clone())
                .ok()
                .as_deref(),
            Some("Featherstonehaughworthington")
        );
    }
}
