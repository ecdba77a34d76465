//! Checks that a folder holds a usable token-classification model before it enters the
//! store: `config.json` (a supported `model_type` and an `id2label`), `tokenizer.json`
//! (a `tokenizers` JSON document) and `model.safetensors` (a well-formed safetensors header
//! whose tensors lie inside the file).
//!
//! Why check here and not only at load time: a broken import or a truncated download must
//! be refused when a person is watching (the CLI, the dashboard), not discovered later as a
//! model-load failure that trips a circuit breaker in production. These checks read only
//! the JSON files and the safetensors header, never the weights.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::error::{io, ModelError, ModelFileProblem as P, Result};

/// The three files every model folder must have.
pub const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Small files copied along on import when present.
pub(crate) const OPTIONAL_FILES: [&str; 8] = [
    "LICENSE",
    "LICENSE.txt",
    "LICENSE.md",
    "NOTICE",
    "README.md",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
];

/// `model_type` values phiguard has candle code for (DESIGN §7). DeBERTa-v3 checkpoints
/// declare `deberta-v2`.
pub const SUPPORTED_FAMILIES: [&str; 5] = [
    "bert",
    "distilbert",
    "deberta-v2",
    "modernbert",
    "xlm-roberta",
];

/// Largest safetensors header accepted (the format itself caps it at 100 MB).
const MAX_HEADER: u64 = 100_000_000;

/// What validation learned about a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelInfo {
    /// `model_type`.
    pub family: String,
    /// Entity types of `id2label`, BIO prefixes removed, `O` dropped, in label-id order.
    pub labels: Vec<String>,
}

/// Validates the three model files in `dir`.
///
/// # Errors
/// [`ModelError::InvalidModel`] naming the first bad file, [`ModelError::UnsupportedFamily`].
pub fn validate_dir(dir: &Path) -> Result<ModelInfo> {
    for name in REQUIRED_FILES {
        if !dir.join(name).is_file() {
            return Err(ModelError::invalid(name, P::Missing));
        }
    }
    let config = read_small(&dir.join("config.json"), "config.json")?;
    let info = check_config(&config)?;
    let tokenizer = read_small(&dir.join("tokenizer.json"), "tokenizer.json")?;
    check_tokenizer(&tokenizer)?;
    check_safetensors(&dir.join("model.safetensors"))?;
    Ok(info)
}

fn read_small(path: &Path, name: &str) -> Result<Vec<u8>> {
    let len = std::fs::metadata(path)
        .map_err(io("reading model files"))?
        .len();
    if len > 64 * 1024 * 1024 {
        return Err(ModelError::invalid(name, P::TooLarge));
    }
    std::fs::read(path).map_err(io("reading model files"))
}

/// Checks `config.json`: a supported `model_type` and a non-empty `id2label` whose keys are
/// the ids `0..n`.
///
/// # Errors
/// As [`validate_dir`].
pub fn check_config(bytes: &[u8]) -> Result<ModelInfo> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| ModelError::invalid("config.json", P::NotJson(e)))?;
    let family = v
        .get("model_type")
        .and_then(Value::as_str)
        .ok_or_else(|| ModelError::invalid("config.json", P::NoModelType))?;
    if !SUPPORTED_FAMILIES.contains(&family) {
        return Err(ModelError::UnsupportedFamily(
            crate::inference::config::shown_model_type(family),
        ));
    }
    let map = v
        .get("id2label")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| ModelError::invalid("config.json", P::NoId2Label))?;
    let mut by_id: Vec<(usize, &str)> = Vec::with_capacity(map.len());
    for (k, label) in map {
        let id: usize = k
            .parse()
            .map_err(|e| ModelError::invalid("config.json", P::Id2LabelKey(e)))?;
        let label = label
            .as_str()
            .ok_or_else(|| ModelError::invalid("config.json", P::Id2LabelValue))?;
        by_id.push((id, label));
    }
    by_id.sort_unstable_by_key(|(id, _)| *id);
    if by_id.iter().enumerate().any(|(i, (id, _))| i != *id) {
        return Err(ModelError::invalid("config.json", P::Id2LabelIds));
    }
    let mut labels: Vec<String> = Vec::new();
    for (_, raw) in by_id {
        let entity = strip_bio(raw).to_ascii_uppercase();
        if entity.is_empty() || entity == "O" {
            continue;
        }
        if !labels.contains(&entity) {
            labels.push(entity);
        }
    }
    Ok(ModelInfo {
        family: family.to_owned(),
        labels,
    })
}

/// Removes a `B-`/`I-`/`E-`/`S-`/`L-`/`U-` (or `_`) tag prefix.
pub(crate) fn strip_bio(label: &str) -> &str {
    let b = label.as_bytes();
    if b.len() > 2
        && matches!(b[0], b'B' | b'I' | b'E' | b'S' | b'L' | b'U')
        && matches!(b[1], b'-' | b'_')
    {
        &label[2..]
    } else {
        label
    }
}

/// Checks `tokenizer.json`: a JSON object with a `model` object that has a `type` or a
/// `vocab` (what the `tokenizers` library needs to build a tokenizer).
///
/// # Errors
/// As [`validate_dir`].
pub fn check_tokenizer(bytes: &[u8]) -> Result<()> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| ModelError::invalid("tokenizer.json", P::NotJson(e)))?;
    let model = v
        .get("model")
        .and_then(Value::as_object)
        .ok_or_else(|| ModelError::invalid("tokenizer.json", P::NoModelSection))?;
    if !model.contains_key("type") && !model.contains_key("vocab") {
        return Err(ModelError::invalid("tokenizer.json", P::EmptyModelSection));
    }
    Ok(())
}

/// Checks a safetensors file: an 8-byte little-endian header length, a JSON header whose
/// tensors have a dtype, a shape and `data_offsets` inside the data section, with the byte
/// count matching the shape, and at least one tensor.
///
/// # Errors
/// As [`validate_dir`].
pub fn check_safetensors(path: &Path) -> Result<()> {
    let bad = |problem| ModelError::invalid("model.safetensors", problem);
    let mut f = std::fs::File::open(path).map_err(io("reading model files"))?;
    let total = f.metadata().map_err(io("reading model files"))?.len();
    let mut len = [0u8; 8];
    f.read_exact(&mut len)
        .map_err(|e| bad(P::TruncatedHeader(e)))?;
    let header_len = u64::from_le_bytes(len);
    if header_len == 0 || header_len > MAX_HEADER || header_len > total.saturating_sub(8) {
        return Err(bad(P::HeaderLength));
    }
    let mut header = vec![0u8; usize::try_from(header_len).map_err(|_| bad(P::HeaderLength))?];
    f.read_exact(&mut header)
        .map_err(|e| bad(P::TruncatedHeader(e)))?;
    check_safetensors_header(&header, total - 8 - header_len)
}

/// Checks a safetensors JSON header against the size of the data section.
pub fn check_safetensors_header(header: &[u8], data_len: u64) -> Result<()> {
    let bad = |problem| ModelError::invalid("model.safetensors", problem);
    let v: Value = serde_json::from_slice(header).map_err(|e| bad(P::HeaderNotJson(e)))?;
    let map = v.as_object().ok_or_else(|| bad(P::HeaderNotObject))?;
    let mut tensors = 0usize;
    let mut max_end = 0u64;
    for (name, t) in map {
        if name == "__metadata__" {
            continue;
        }
        tensors += 1;
        let width = t
            .get("dtype")
            .and_then(Value::as_str)
            .and_then(dtype_bits)
            .ok_or_else(|| bad(P::UnknownDtype))?;
        let shape = t
            .get("shape")
            .and_then(Value::as_array)
            .ok_or_else(|| bad(P::NoShape))?;
        let mut elements: u64 = 1;
        for d in shape {
            let d = d.as_u64().ok_or_else(|| bad(P::BadShape))?;
            elements = elements.checked_mul(d).ok_or_else(|| bad(P::BadShape))?;
        }
        let offsets = t
            .get("data_offsets")
            .and_then(Value::as_array)
            .filter(|a| a.len() == 2)
            .ok_or_else(|| bad(P::NoDataOffsets))?;
        let (begin, end) = match (offsets[0].as_u64(), offsets[1].as_u64()) {
            (Some(b), Some(e)) if b <= e => (b, e),
            _ => return Err(bad(P::BadDataOffsets)),
        };
        if end > data_len {
            return Err(bad(P::PastEnd));
        }
        let bits = elements
            .checked_mul(width)
            .ok_or_else(|| bad(P::BadShape))?;
        if bits.div_ceil(8) != end - begin {
            return Err(bad(P::ByteCount));
        }
        max_end = max_end.max(end);
    }
    if tensors == 0 {
        return Err(bad(P::NoTensors));
    }
    if max_end != data_len {
        return Err(bad(P::DataSize));
    }
    Ok(())
}

/// Bits per element of a safetensors dtype.
fn dtype_bits(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" | "F8_E8M0" => 8,
        "I16" | "U16" | "F16" | "BF16" => 16,
        "I32" | "U32" | "F32" => 32,
        "I64" | "U64" | "F64" => 64,
        "F4" => 4,
        "F6_E2M3" | "F6_E3M2" => 6,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn st_bytes(header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn config_labels_lose_their_bio_prefixes() -> Result<()> {
        let cfg = br#"{"model_type":"bert","id2label":{"0":"O","1":"B-GIVEN_NAME","2":"I-GIVEN_NAME","3":"S-date"}}"#;
        let info = check_config(cfg)?;
        assert_eq!(info.family, "bert");
        assert_eq!(info.labels, vec!["GIVEN_NAME", "DATE"]);
        Ok(())
    }

    #[test]
    fn config_refusals() {
        let cases: [&[u8]; 5] = [
            br#"{"id2label":{"0":"O"}}"#,
            br#"{"model_type":"gpt2","id2label":{"0":"O"}}"#,
            br#"{"model_type":"bert"}"#,
            br#"{"model_type":"bert","id2label":{"0":"O","2":"B-X"}}"#,
            b"not json",
        ];
        for c in cases {
            assert!(check_config(c).is_err());
        }
        assert!(matches!(
            check_config(br#"{"model_type":"gpt2","id2label":{"0":"O"}}"#),
            Err(ModelError::UnsupportedFamily(f)) if f == "gpt2"
        ));
    }

    #[test]
    fn a_config_that_is_not_json_keeps_the_parser_error_as_its_source() {
        let e = check_config(b"{\"model_type\": \"bert\",").err();
        assert!(
            matches!(
                &e,
                Some(ModelError::InvalidModel {
                    problem: P::NotJson(_),
                    ..
                })
            ),
            "{e:?}"
        );
        let shown = e.as_ref().map(ToString::to_string).unwrap_or_default();
        assert_eq!(shown, "invalid model file config.json: not valid JSON");
        let source = e.as_ref().and_then(std::error::Error::source);
        assert!(source
            .and_then(std::error::Error::source)
            .is_some_and(|s| s.is::<serde_json::Error>()));
    }

    #[test]
    fn tokenizer_needs_a_model_section() {
        assert!(check_tokenizer(br#"{"model":{"type":"WordPiece","vocab":{}}}"#).is_ok());
        assert!(check_tokenizer(br#"{"version":"1.0"}"#).is_err());
    }

    #[test]
    fn safetensors_header_checks() -> Result<()> {
        let dir = tempfile::tempdir().map_err(io("tempdir"))?;
        let p = dir.path().join("model.safetensors");
        let good = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"format":"pt"}}"#;
        std::fs::write(&p, st_bytes(good, &[0u8; 8])).map_err(io("write"))?;
        check_safetensors(&p)?;
        // Data cut short: the tensor lies past the end.
        std::fs::write(&p, st_bytes(good, &[0u8; 7])).map_err(io("write"))?;
        assert!(check_safetensors(&p).is_err());
        // Byte count disagrees with the shape.
        let wrong = r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#;
        std::fs::write(&p, st_bytes(wrong, &[0u8; 8])).map_err(io("write"))?;
        assert!(check_safetensors(&p).is_err());
        // Not safetensors at all.
        std::fs::write(&p, b"PK\x03\x04 a zip file").map_err(io("write"))?;
        assert!(check_safetensors(&p).is_err());
        Ok(())
    }

    #[test]
    fn the_hub_fixture_model_is_valid() -> Result<()> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/hub/phiguard-test/tiny-bert");
        let info = validate_dir(&dir)?;
        assert_eq!(info.family, "bert");
        assert_eq!(info.labels, vec!["FIRST_NAME", "DATE"]);
        Ok(())
    }

    proptest! {
        #[test]
        fn header_check_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), len in 0u64..1000) {
            let _ = check_safetensors_header(&bytes, len);
        }

        #[test]
        fn strip_bio_only_strips_tags(label in "[A-Z_-]{0,12}") {
            let s = strip_bio(&label);
            prop_assert!(label.ends_with(s));
            prop_assert!(label.len() - s.len() == 0 || label.len() - s.len() == 2);
        }
    }
}
