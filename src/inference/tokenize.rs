//! Tokenization with code-point offsets, through the `tokenizers` crate.
//!
//! A text is encoded once without special tokens, without truncation and without
//! padding; windowing ([`super::window`]) cuts the token sequence and wraps each window
//! in the model's own special tokens, which are read from the tokenizer's post-processor
//! at load (`[CLS] … [SEP]` for BERT, `<s> … </s>` for RoBERTa). Offsets are Unicode
//! code points into the submitted text, whatever the normalizer did (lower-casing,
//! accent stripping, NFKC), so a span's `text[start:end]` is the original text.
//!
//! Before encoding, each symbol that is no letter, digit or punctuation (emoji and their
//! modifiers, format and control characters, private-use characters) and that the
//! vocabulary has no token for is read as a space: one character for one, so offsets are
//! unchanged. A WordPiece tokenizer makes a whole word with such a character one unknown
//! token, so a word glued to one (`😀Smith`) was a word the model could not read, and a
//! span ran over them (`03/04/2021📞617-555-0142` one date). A symbol the vocabulary
//! knows (`°` in `37.8 °C`) is encoded as it is, and so is ASCII text but its control
//! characters.

use std::borrow::Cow;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use tokenizers::Tokenizer;

use super::{InferenceError, Result, TokenizerError};

/// One text's tokens, specials excluded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Encoded {
    /// Token ids.
    pub ids: Vec<u32>,
    /// Code-point offsets into the text.
    pub offsets: Vec<(usize, usize)>,
    /// The pre-tokenizer's word of each token.
    pub word_ids: Vec<Option<u32>>,
}

impl Encoded {
    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when the text produced no token.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// A loaded tokenizer plus the special tokens that wrap every window.
#[derive(Clone)]
pub struct TextTokenizer {
    inner: Tokenizer,
    prefix: Vec<u32>,
    suffix: Vec<u32>,
    pad_id: u32,
}

impl TextTokenizer {
    /// Loads `tokenizer.json`.
    ///
    /// # Errors
    /// [`InferenceError::Tokenizer`] when the file cannot be parsed.
    pub fn from_file(path: &Path) -> Result<TextTokenizer> {
        let bytes = std::fs::read(path).map_err(|source| InferenceError::Io {
            file: "tokenizer.json",
            source,
        })?;
        Self::from_bytes(&bytes)
    }

    /// Parses the bytes of a `tokenizer.json`.
    ///
    /// # Errors
    /// [`InferenceError::Tokenizer`] when they cannot be parsed.
    pub fn from_bytes(bytes: &[u8]) -> Result<TextTokenizer> {
        let mut inner = Tokenizer::from_bytes(bytes)
            .map_err(|e| InferenceError::Tokenizer(TokenizerError::Load(e)))?;
        inner
            .with_truncation(None)
            .map_err(|e| InferenceError::Tokenizer(TokenizerError::Load(e)))?;
        inner.with_padding(None);
        // The specials around a probe word, read from the post-processor.
        let probe = inner
            .encode("a", true)
            .map_err(|e| InferenceError::Tokenizer(TokenizerError::Load(e)))?;
        let special = probe.get_special_tokens_mask();
        let ids = probe.get_ids();
        let first_content = special.iter().position(|&s| s == 0).unwrap_or(ids.len());
        let last_content = special
            .iter()
            .rposition(|&s| s == 0)
            .map_or(ids.len(), |i| i + 1);
        let prefix = ids[..first_content].to_vec();
        let suffix = ids[last_content..].to_vec();
        let pad_id = ["[PAD]", "<pad>", "<|padding|>"]
            .iter()
            .find_map(|t| inner.token_to_id(t))
            .unwrap_or(0);
        Ok(TextTokenizer {
            inner,
            prefix,
            suffix,
            pad_id,
        })
    }

    /// Encodes one text without special tokens.
    ///
    /// # Errors
    /// [`InferenceError::Tokenizer`] when the tokenizer fails (the message never
    /// contains the text).
    pub fn encode(&self, text: &str) -> Result<Encoded> {
        let enc = self
            .inner
            .encode_char_offsets(self.as_words(text).as_ref(), false)
            .map_err(|_| InferenceError::Tokenizer(TokenizerError::Encode))?;
        Ok(Encoded {
            ids: enc.get_ids().to_vec(),
            offsets: enc.get_offsets().to_vec(),
            word_ids: enc.get_word_ids().to_vec(),
        })
    }

    /// The tokens placed before each window.
    pub fn prefix(&self) -> &[u32] {
        &self.prefix
    }

    /// The tokens placed after each window.
    pub fn suffix(&self) -> &[u32] {
        &self.suffix
    }

    /// The padding id.
    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }

    /// Number of special tokens around each window.
    pub fn num_special(&self) -> usize {
        self.prefix.len() + self.suffix.len()
    }
}

impl TextTokenizer {
    /// `text` with each symbol that is no letter, digit, punctuation or white space, and
    /// that the vocabulary has no token for, a space (see the module docs); borrowed when
    /// there is none.
    fn as_words<'a>(&self, text: &'a str) -> Cow<'a, str> {
        SYMBOL.replace_all(text, |c: &regex::Captures<'_>| {
            let symbol = &c[0];
            if self.inner.token_to_id(symbol).is_some() {
                symbol.to_owned()
            } else {
                " ".to_owned()
            }
        })
    }
}

/// The characters [`TextTokenizer::as_words`] reads as spaces when the vocabulary lacks them.
static SYMBOL: LazyLock<Regex> = LazyLock::new(|| {
    // So: other symbols (emoji, ☺, ©, regional indicators); Sk outside ASCII (skin-tone
    // modifiers); Cf (zero-width space and joiner, BOM, bidi marks); Co private use; Cc
    // controls but tab and line ends; the variation selectors (Mn, but never a letter's).
    Regex::new(
        r"[\p{So}\p{Cf}\p{Co}\u{FE00}-\u{FE0F}\u{E0100}-\u{E01EF}[\p{Sk}--\x00-\x7F][\p{Cc}--[\t\n\r]]]",
    )
    .expect("a valid pattern")
});

#[cfg(test)]
/// A tiny BERT-style WordPiece tokenizer (lower-casing, accent stripping).
pub(crate) fn tiny_bert_tokenizer() -> Result<TextTokenizer> {
    let vocab = [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "zoe", "met", "jose", "in", "sao", "paulo",
        "on", "12", "/", "03", "-", "##s", "dr", ".", "muller", "😀", "a",
    ];
    let vocab_json: String = vocab
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{:?}:{i}", t))
        .collect::<Vec<_>>()
        .join(",");
    let json = format!(
        r###"{{"version":"1.0","truncation":null,"padding":null,"added_tokens":[
          {{"id":0,"content":"[PAD]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}},
          {{"id":1,"content":"[UNK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}},
          {{"id":2,"content":"[CLS]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}},
          {{"id":3,"content":"[SEP]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}}],
        "normalizer":{{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true}},
        "pre_tokenizer":{{"type":"BertPreTokenizer"}},
        "post_processor":{{"type":"TemplateProcessing",
          "single":[{{"SpecialToken":{{"id":"[CLS]","type_id":0}}}},{{"Sequence":{{"id":"A","type_id":0}}}},{{"SpecialToken":{{"id":"[SEP]","type_id":0}}}}],
          "pair":[{{"Sequence":{{"id":"A","type_id":0}}}}],
          "special_tokens":{{"[CLS]":{{"id":"[CLS]","ids":[2],"tokens":["[CLS]"]}},"[SEP]":{{"id":"[SEP]","ids":[3],"tokens":["[SEP]"]}}}}}},
        "decoder":null,
        "model":{{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":100,"vocab":{{{vocab_json}}}}}}}"###
    );
    TextTokenizer::from_bytes(json.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of each token of `enc`.
    fn pieces(text: &str, enc: &Encoded) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        enc.offsets
            .iter()
            .map(|&(s, e)| chars[s..e].iter().collect())
            .collect()
    }

    #[test]
    fn offsets_are_code_points_into_the_original_text() -> Result<()> {
        let tok = tiny_bert_tokenizer()?;
        assert_eq!(tok.prefix(), &[2]);
        assert_eq!(tok.suffix(), &[3]);
        let text = "Zoë met José in São Paulo on 12/03 😀 Dr. Müller";
        let enc = tok.encode(text)?;
        let pieces = pieces(text, &enc);
        assert_eq!(
            pieces,
            vec![
                "Zoë", "met", "José", "in", "São", "Paulo", "on", "12", "/", "03", "😀", "Dr", ".",
                "Müller"
            ]
        );
        // Words: "12/03" is three words for BERT's pre-tokenizer (punctuation splits).
        assert_eq!(enc.word_ids[7], Some(7));
        assert_eq!(enc.word_ids[8], Some(8));
        Ok(())
    }

    #[test]
    fn a_symbol_is_read_as_a_space_and_offsets_are_kept() -> Result<()> {
        let tok = tiny_bert_tokenizer()?;
        // `😀` is in the tiny vocabulary: kept; `❤` and the others are not.
        let text = "met\u{200b}❤Zoë❤\u{fe0f}\u{0}12 ^ 😀 a";
        assert_eq!(tok.as_words(text), "met  Zoë   12 ^ 😀 a");
        let pieces = pieces(text, &tok.encode(text)?);
        assert_eq!(pieces, vec!["met", "Zoë", "12", "^", "😀", "a"]);
        assert!(matches!(
            tok.as_words("Plain ASCII, 12/03."),
            Cow::Borrowed(_)
        ));
        Ok(())
    }

    #[test]
    fn subwords_share_a_word_id() -> Result<()> {
        let tok = tiny_bert_tokenizer()?;
        let enc = tok.encode("Zoes")?;
        assert_eq!(enc.ids, vec![5, 16]);
        assert_eq!(enc.offsets, vec![(0, 3), (3, 4)]);
        assert_eq!(enc.word_ids, vec![Some(0), Some(0)]);
        Ok(())
    }
}
