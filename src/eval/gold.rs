//! Gold readers: OpenMed golden fixtures and phiguard corpus files, and the label map that
//! brings foreign label names onto [`Label`].
//!
//! A gold label is resolved in this order: the `--label-map` when one is given; phiguard's
//! own names ([`Label::parse`]); OpenMed's PII vocabulary ([`openmed_label`], so OpenMed's
//! fixtures need no map), where the labels that are not HIPAA Safe Harbor identifiers
//! (`GENDER`, `OCCUPATION`, `AMOUNT`, …) are counted and left unscored. Any other name is a
//! *foreign* label: never a refusal, it is kept as its own category ([`ForeignSpan`]),
//! counted as PHI in the overall figures, and named in a warning.
//!
//! Two span shapes are accepted because both circulate: phiguard's and OpenMed's fixtures
//! (`{"text", "gold_spans": [{"start", "end", "label"}]}`) and the begin/end shape of many
//! annotation exports (`{"text", "spans": [{"begin", "end", "label"}]}`). A file is either
//! JSON Lines (one document per line) or one JSON array of documents. Offsets are Unicode
//! code points. Gold files hold patient-like text, so every error names a line and a fixed
//! description and never the offending value: `serde_json`'s own messages can quote input
//! and are not used.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{EvalError, Result};
use crate::detect::Label;

/// One annotated PHI span of a gold document, in code-point offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GoldSpan {
    /// First code point.
    pub start: usize,
    /// One past the last code point.
    pub end: usize,
    /// Canonical label.
    pub label: Label,
}

/// A gold span whose label no vocabulary knows: scored as its own category.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ForeignSpan {
    /// First code point.
    pub start: usize,
    /// One past the last code point.
    pub end: usize,
    /// The label as the file names it (withheld when it does not look like a label).
    pub label: String,
}

/// One gold document: the text and its annotated spans, sorted by start.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GoldDoc {
    /// The document id from the file, or `line-N` when it has none.
    pub id: String,
    /// The note type when the file gives one (`discharge_summary`, …).
    pub note_type: Option<String>,
    /// The document text.
    pub text: String,
    /// Gold spans, sorted by `(start, end)`. Foreign spans are here too, as
    /// [`Label::Other`], so that the overall figures count them as PHI.
    pub spans: Vec<GoldSpan>,
    /// The spans with a foreign label, under their own names.
    #[serde(default)]
    pub foreign: Vec<ForeignSpan>,
    /// Spans of OpenMed labels that are not Safe Harbor identifiers, left unscored.
    #[serde(default)]
    pub not_scored: usize,
}

/// Maps foreign label names (`PATIENT`, `DOCTOR`, `HOSPITAL`, `B-NAME`) to canonical labels.
///
/// Keys match case-insensitively with `-` and spaces read as `_`. A value is a canonical or
/// wire label name, or `IGNORE` to drop spans of that label from the gold (for categories
/// that are not PHI in a given study, such as `PROFESSION`). Names that the map does not
/// hold fall back to [`Label::parse`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelMap {
    entries: HashMap<String, Option<Label>>,
}

impl LabelMap {
    /// Reads a label map: JSON when the file name ends in `.json`, TOML otherwise. Either is
    /// a flat table of strings (`PATIENT = "PERSON"`), optionally nested under `labels`.
    ///
    /// # Errors
    /// [`EvalError::Io`] when the file cannot be read, [`EvalError::LabelMap`] when it is not
    /// a table of strings, and [`EvalError::UnknownLabel`] (line 0) when a value is not a
    /// canonical label.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let raw = std::fs::read_to_string(path).map_err(|source| EvalError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if is_json {
            Self::from_json_str(&raw, path)
        } else {
            Self::from_toml_str(&raw, path)
        }
    }

    /// Parses a TOML label map; `origin` names it in errors.
    ///
    /// # Errors
    /// As [`LabelMap::from_path`].
    pub fn from_toml_str(raw: &str, origin: impl AsRef<Path>) -> Result<Self> {
        let origin = origin.as_ref().to_path_buf();
        let table: toml::Table = toml::from_str(raw).map_err(|e| EvalError::LabelMap {
            path: origin.clone(),
            what: format!("invalid TOML: {}", e.message()),
        })?;
        let json = serde_json::to_value(table).map_err(|_| EvalError::LabelMap {
            path: origin.clone(),
            what: "cannot convert TOML table".to_owned(),
        })?;
        Self::from_value(json, origin)
    }

    /// Parses a JSON label map; `origin` names it in errors.
    ///
    /// # Errors
    /// As [`LabelMap::from_path`].
    pub fn from_json_str(raw: &str, origin: impl AsRef<Path>) -> Result<Self> {
        let origin = origin.as_ref().to_path_buf();
        let value: Value = serde_json::from_str(raw).map_err(|e| EvalError::LabelMap {
            path: origin.clone(),
            what: format!("invalid JSON at line {} column {}", e.line(), e.column()),
        })?;
        Self::from_value(value, origin)
    }

    /// Builds a map from `(foreign, canonical)` pairs; `canonical` may be `IGNORE`.
    ///
    /// # Errors
    /// [`EvalError::UnknownLabel`] when a canonical name is not a [`Label`].
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self> {
        let mut entries = HashMap::new();
        for (foreign, canonical) in pairs {
            entries.insert(normalise(foreign), parse_target(canonical)?);
        }
        Ok(LabelMap { entries })
    }

    fn from_value(value: Value, origin: PathBuf) -> Result<Self> {
        let not_table = || EvalError::LabelMap {
            path: origin.clone(),
            what: "expected a table of label names to canonical labels".to_owned(),
        };
        let Value::Object(mut obj) = value else {
            return Err(not_table());
        };
        if obj.len() == 1 {
            if let Some(Value::Object(inner)) = obj.remove("labels") {
                obj = inner;
            }
        }
        let mut pairs = Vec::with_capacity(obj.len());
        for (k, v) in &obj {
            let Value::String(v) = v else {
                return Err(not_table());
            };
            pairs.push((k.as_str(), v.as_str()));
        }
        Self::from_pairs(pairs)
    }

    /// Resolves a label name: `Some(Some(label))` when mapped or canonical, `Some(None)`
    /// when mapped to `IGNORE`, `None` when unknown.
    pub fn resolve(&self, name: &str) -> Option<Option<Label>> {
        self.entries
            .get(&normalise(name))
            .copied()
            .or_else(|| Label::parse(name).map(Some))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn normalise(name: &str) -> String {
    name.trim().to_ascii_uppercase().replace(['-', ' '], "_")
}

fn parse_target(canonical: &str) -> Result<Option<Label>> {
    if normalise(canonical) == "IGNORE" {
        return Ok(None);
    }
    Label::parse(canonical)
        .map(Some)
        .ok_or_else(|| EvalError::UnknownLabel {
            line: 0,
            label: cut(canonical),
        })
}

/// OpenMed 3.1's PII vocabulary (the labels of its PII models and fixtures) on canonical
/// labels. `Some(None)` marks the labels that are not HIPAA Safe Harbor identifiers: a
/// title, a gender or a job title is not removed by Safe Harbor, so a miss is not a leak.
/// `None` for names outside the vocabulary.
pub fn openmed_label(name: &str) -> Option<Option<Label>> {
    let l = |l: Label| Some(Some(l));
    match normalise(name).as_str() {
        "BUILDING_NUMBER" | "ORDINAL_DIRECTION" => l(Label::StreetAddress),
        "GPS_COORDINATES" => l(Label::Location),
        "PIN" | "API_KEY" => l(Label::Password),
        "CVV" => l(Label::CreditCard),
        "IBAN" | "BIC" | "BITCOIN_ADDRESS" | "ETHEREUM_ADDRESS" | "LITECOIN_ADDRESS" => {
            l(Label::AccountNumber)
        }
        "MASKED_NUMBER" => l(Label::IdNum),
        "MAC_ADDRESS" | "IMEI" => l(Label::DeviceId),
        "VIN" | "VEHICLE_REGISTRATION" => l(Label::VehicleId),
        "USER_AGENT" => l(Label::Other),
        "PREFIX" | "CREDIT_CARD_ISSUER" | "AMOUNT" | "CURRENCY" | "GENDER" | "EYE_COLOR"
        | "HEIGHT" | "JOB_TITLE" | "JOB_DEPARTMENT" | "OCCUPATION" => Some(None),
        _ => None,
    }
}

/// A label name fit for an error message: label-like names (letters, digits, `_`, `-`,
/// spaces, at most 40) are shown; anything else may be misplaced text and is withheld.
fn cut(name: &str) -> String {
    let label_like = name.chars().count() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' '));
    if label_like {
        name.to_owned()
    } else {
        "<withheld: not label-like>".to_owned()
    }
}

/// Reads a gold file (JSON Lines or a JSON array of documents).
///
/// # Errors
/// [`EvalError::Io`] when it cannot be read; otherwise as [`read_gold_str`].
pub fn read_gold(path: impl AsRef<Path>, label_map: Option<&LabelMap>) -> Result<Vec<GoldDoc>> {
    let path = path.as_ref();
    let raw = std::fs::read_to_string(path).map_err(|source| EvalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    read_gold_str(&raw, label_map)
}

/// Parses gold documents from a string (JSON Lines, or a JSON array when the first
/// non-blank character is `[`). Blank lines are skipped.
///
/// # Errors
/// [`EvalError::Malformed`] for invalid JSON or a wrong shape, [`EvalError::BadOffsets`],
/// [`EvalError::SpanTextMismatch`] and [`EvalError::UnknownLabel`], each naming the
/// 1-based line (or, for an array, the 1-based document index).
pub fn read_gold_str(raw: &str, label_map: Option<&LabelMap>) -> Result<Vec<GoldDoc>> {
    let raw = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    if raw.trim_start().starts_with('[') {
        let values: Vec<Value> = serde_json::from_str(raw).map_err(|e| json_error(e.line(), &e))?;
        return values
            .into_iter()
            .enumerate()
            .map(|(i, v)| parse_doc(v, i + 1, label_map))
            .collect();
    }
    let mut docs = Vec::new();
    for (i, line) in raw.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| json_error(i + 1, &e))?;
        docs.push(parse_doc(value, i + 1, label_map)?);
    }
    Ok(docs)
}

fn json_error(line: usize, e: &serde_json::Error) -> EvalError {
    // serde_json's Display can quote the input; keep only its category and column.
    EvalError::Malformed {
        line,
        what: format!(
            "invalid JSON ({:?} error at column {})",
            e.classify(),
            e.column()
        ),
    }
}

fn malformed(line: usize, what: &str) -> EvalError {
    EvalError::Malformed {
        line,
        what: what.to_owned(),
    }
}

fn parse_doc(value: Value, line: usize, label_map: Option<&LabelMap>) -> Result<GoldDoc> {
    let Value::Object(obj) = value else {
        return Err(malformed(line, "expected a JSON object per document"));
    };
    let Some(Value::String(text)) = obj.get("text") else {
        return Err(malformed(line, "missing string field `text`"));
    };
    let id = match obj.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => format!("line-{line}"),
    };
    let note_type = match obj.get("note_type") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    let raw_spans = ["gold_spans", "spans", "entities"]
        .iter()
        .find_map(|k| obj.get(*k))
        .ok_or_else(|| malformed(line, "missing array `gold_spans` or `spans`"))?;
    let Value::Array(raw_spans) = raw_spans else {
        return Err(malformed(line, "`gold_spans` / `spans` must be an array"));
    };
    let chars: Vec<char> = text.chars().collect();
    let mut spans = Vec::with_capacity(raw_spans.len());
    let mut foreign = Vec::new();
    let mut not_scored = 0;
    for (i, s) in raw_spans.iter().enumerate() {
        let Value::Object(s) = s else {
            return Err(malformed(line, "each span must be an object"));
        };
        match parse_span(s, line, i, &chars, label_map)? {
            Parsed::Known(span) => spans.push(span),
            Parsed::Ignored => {}
            Parsed::NotScored => not_scored += 1,
            Parsed::Foreign(f) => {
                spans.push(GoldSpan {
                    start: f.start,
                    end: f.end,
                    label: Label::Other,
                });
                foreign.push(f);
            }
        }
    }
    spans.sort_by_key(|s| (s.start, s.end, s.label));
    Ok(GoldDoc {
        id,
        note_type,
        text: text.clone(),
        spans,
        foreign,
        not_scored,
    })
}

/// What one gold span became.
enum Parsed {
    /// A span of a canonical label.
    Known(GoldSpan),
    /// Mapped to `IGNORE` by the label map.
    Ignored,
    /// An OpenMed label that is not a Safe Harbor identifier.
    NotScored,
    /// A label no vocabulary knows.
    Foreign(ForeignSpan),
}

fn parse_span(
    s: &Map<String, Value>,
    line: usize,
    index: usize,
    chars: &[char],
    label_map: Option<&LabelMap>,
) -> Result<Parsed> {
    let offset = |keys: &[&str]| -> Result<usize> {
        let v = keys.iter().find_map(|k| s.get(*k));
        v.and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                malformed(
                    line,
                    "span needs non-negative integer `start` (or `begin`) and `end`",
                )
            })
    };
    let start = offset(&["start", "begin"])?;
    let end = offset(&["end"])?;
    let label_name = ["label", "entity_type", "type"]
        .iter()
        .find_map(|k| s.get(*k).and_then(Value::as_str))
        .ok_or_else(|| malformed(line, "span needs a string `label`"))?;
    if start >= end || end > chars.len() {
        return Err(EvalError::BadOffsets {
            line,
            span: index,
            start,
            end,
            len: chars.len(),
        });
    }
    if let Some(Value::String(surface)) = s.get("text") {
        if !chars[start..end].iter().copied().eq(surface.chars()) {
            return Err(EvalError::SpanTextMismatch { line, span: index });
        }
    }
    let mapped = match label_map {
        Some(map) => map.resolve(label_name),
        None => Label::parse(label_name).map(Some),
    };
    Ok(match mapped {
        Some(Some(label)) => Parsed::Known(GoldSpan { start, end, label }),
        Some(None) => Parsed::Ignored,
        None => match openmed_label(label_name) {
            Some(Some(label)) => Parsed::Known(GoldSpan { start, end, label }),
            Some(None) => Parsed::NotScored,
            None => Parsed::Foreign(ForeignSpan {
                start,
                end,
                label: cut(label_name),
            }),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn reads_both_span_shapes_and_skips_blank_lines() -> TestResult {
        let raw = concat!(
            r#"{"id":"a","text":"Zoë Ng 2024","gold_spans":[{"start":4,"end":6,"label":"LAST_NAME"},{"start":0,"end":3,"label":"first_name"}]}"#,
            "\n\n",
            r#"{"text":"call 555","spans":[{"begin":5,"end":8,"label":"PHONE_NUMBER"}]}"#,
            "\n"
        );
        let docs = read_gold_str(raw, None)?;
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].id, "a");
        assert_eq!(
            docs[0].spans,
            vec![
                GoldSpan {
                    start: 0,
                    end: 3,
                    label: Label::FirstName
                },
                GoldSpan {
                    start: 4,
                    end: 6,
                    label: Label::LastName
                },
            ]
        );
        assert_eq!(docs[1].id, "line-3");
        assert_eq!(docs[1].spans[0].label, Label::Phone);
        Ok(())
    }

    #[test]
    fn reads_a_json_array() -> TestResult {
        let raw = r#"[{"text":"x","gold_spans":[]},{"text":"ab","gold_spans":[{"start":0,"end":2,"label":"AGE","text":"ab"}]}]"#;
        let docs = read_gold_str(raw, None)?;
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].spans.len(), 1);
        Ok(())
    }

    #[test]
    fn errors_name_the_line_and_never_the_text() {
        let secret = "Jonathan Quartermaine";
        let cases = [
            format!("{{\"text\":\"{secret}\",\"gold_spans\":[{{\"start\":0,\"end\":99,\"label\":\"PERSON\"}}]}}"),
            format!("{{\"text\":\"{secret}\",\"gold_spans\":[{{\"start\":0,\"end\":3,\"label\":\"PERSON\",\"text\":\"Qua\"}}]}}"),
            format!("{{\"text\":\"{secret}\",\"gold_spans\":[{{\"start\":\"{secret}\",\"end\":3,\"label\":\"PERSON\"}}]}}"),
            format!("{{\"text\":\"{secret}\" \"gold_spans\":[]}}"),
            format!("{{\"text\":{secret}}}"),
            format!("{{\"text\":\"{secret}\"}}"),
        ];
        for case in cases {
            let raw = format!("{{\"text\":\"ok\",\"gold_spans\":[]}}\n{case}\n");
            let err = match read_gold_str(&raw, None) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("accepted a bad line"),
            };
            assert!(err.starts_with("line 2:"), "{err}");
            assert!(!err.contains("Quarter"), "{err}");
        }
    }

    #[test]
    fn openmed_labels_need_no_map_and_unknown_labels_are_kept() -> TestResult {
        let raw = concat!(
            r#"{"text":"IBAN DE29 7798, Mr Ada Li, female, nurse, ZZ 12","gold_spans":["#,
            r#"{"start":5,"end":14,"label":"IBAN"},{"start":16,"end":18,"label":"PREFIX"},"#,
            r#"{"start":19,"end":22,"label":"FIRST_NAME"},{"start":23,"end":25,"label":"LAST_NAME"},"#,
            r#"{"start":27,"end":33,"label":"GENDER"},{"start":35,"end":40,"label":"OCCUPATION"},"#,
            r#"{"start":42,"end":47,"label":"PATIENT_CODE"}]}"#,
            "\n",
            r#"{"text":"Jonathan Quartermaine","gold_spans":[{"start":0,"end":8,"label":"Jonathan Quartermaine, 12 Oak St"}]}"#,
        );
        let docs = read_gold_str(raw, None)?;
        let labels: Vec<Label> = docs[0].spans.iter().map(|s| s.label).collect();
        assert_eq!(
            labels,
            [
                Label::AccountNumber,
                Label::FirstName,
                Label::LastName,
                Label::Other
            ]
        );
        assert_eq!(docs[0].not_scored, 3);
        assert_eq!(
            docs[0].foreign,
            [ForeignSpan {
                start: 42,
                end: 47,
                label: "PATIENT_CODE".to_owned()
            }]
        );
        // A label that is not label-like may be misplaced text: its name is withheld.
        assert!(docs[1].foreign[0].label.starts_with("<withheld"));
        Ok(())
    }

    #[test]
    fn label_map_maps_ignores_and_falls_back() -> TestResult {
        let map = LabelMap::from_toml_str(
            "PATIENT = \"PERSON\"\nhospital = \"organization\"\nPROFESSION = \"IGNORE\"\n",
            "map.toml",
        )?;
        assert_eq!(map.resolve("patient"), Some(Some(Label::Person)));
        assert_eq!(map.resolve("HOSPITAL"), Some(Some(Label::Organization)));
        assert_eq!(map.resolve("profession"), Some(None));
        assert_eq!(map.resolve("DATE"), Some(Some(Label::Date)));
        assert_eq!(map.resolve("NOPE"), None);
        let raw = r#"{"text":"Dr Ada, nurse","spans":[{"begin":3,"end":6,"label":"PATIENT"},{"begin":8,"end":13,"label":"PROFESSION"}]}"#;
        let docs = read_gold_str(raw, Some(&map))?;
        assert_eq!(docs[0].spans.len(), 1);
        assert_eq!(docs[0].spans[0].label, Label::Person);
        Ok(())
    }

    #[test]
    fn label_map_reads_json_with_a_labels_table() -> TestResult {
        let map = LabelMap::from_json_str(r#"{"labels":{"DOCTOR":"PERSON"}}"#, "map.json")?;
        assert_eq!(map.len(), 1);
        assert_eq!(map.resolve("doctor"), Some(Some(Label::Person)));
        assert!(LabelMap::from_json_str(r#"{"DOCTOR":"MEDIC"}"#, "m.json").is_err());
        assert!(LabelMap::from_json_str(r#"{"DOCTOR":3}"#, "m.json").is_err());
        Ok(())
    }

    #[test]
    fn reads_the_committed_corpus_fixtures() -> TestResult {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus");
        let sample = read_gold(dir.join("sample.jsonl"), None)?;
        assert_eq!(sample.len(), 8);
        assert!(sample
            .iter()
            .all(|d| d.note_type.is_some() && !d.spans.is_empty()));
        let dev = read_gold(dir.join("dev.jsonl"), None)?;
        assert!(dev.len() >= 300);
        let perfect: Vec<Vec<crate::detect::Span>> = dev
            .iter()
            .map(|d| {
                d.spans
                    .iter()
                    .map(|g| {
                        crate::detect::Span::new(
                            g.start,
                            g.end,
                            g.label,
                            1.0,
                            crate::detect::Source::Rule,
                        )
                    })
                    .collect()
            })
            .collect();
        let report = super::super::score(&dev, &perfect, None);
        assert_eq!(report.overall.strict.f1, 1.0);
        assert_eq!(report.leak.leaked_chars, 0);
        Ok(())
    }

    #[test]
    fn read_gold_reports_a_missing_file() {
        let err = read_gold("no/such/gold.jsonl", None);
        assert!(matches!(err, Err(EvalError::Io { .. })));
    }
}
