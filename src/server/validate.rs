//! Request parsing that never echoes request content.
//!
//! Why not serde's derive errors: serde_json's messages quote the offending value
//! (`invalid type: string "John Smith", expected f64`), which would put patient text into
//! an error body. Bodies are parsed into a JSON value and each field is checked here, so
//! every problem names the field and the rule, never the value.

use serde_json::{Map, Value};

use super::error::{ApiError, FieldProblem};
use crate::settings::keys;

/// Limits applied to `text`.
#[derive(Clone, Copy, Debug)]
pub struct TextLimits {
    /// Most code points.
    pub max_chars: usize,
    /// Most UTF-8 bytes.
    pub max_bytes: usize,
}

/// Parses a body into a JSON object.
///
/// # Errors
/// 422 for invalid UTF-8, malformed JSON or a non-object body. Positions are given as line
/// and column (in characters, 1-based), which an editor can jump to; no part of the body is
/// quoted.
pub fn parse_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let text = match std::str::from_utf8(body) {
        Ok(t) => t,
        Err(e) => {
            let (line, column) = position(&String::from_utf8_lossy(&body[..e.valid_up_to()]));
            return Err(ApiError::Validation(vec![FieldProblem::new(
                "body",
                format!(
                    "Body is not valid UTF-8: the first invalid byte is at line {line}, column {}",
                    column + 1
                ),
                "json_invalid",
            )]));
        }
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::Validation(vec![FieldProblem::new(
            "body",
            "Input should be a valid JSON object",
            "model_attributes_type",
        )])),
        Err(e) => Err(ApiError::Validation(vec![FieldProblem::new(
            "body",
            json_error_message(text, &e),
            "json_invalid",
        )])),
    }
}

/// The 1-based line of the end of `prefix` and the number of characters after its last
/// newline.
fn position(prefix: &str) -> (usize, usize) {
    let line = prefix.matches('\n').count() + 1;
    let column = prefix.rsplit('\n').next().map_or(0, |l| l.chars().count());
    (line, column)
}

/// serde_json's syntax messages, which are fixed strings. Only these are repeated to the
/// client: any other message (a custom or data error) could quote the body.
const JSON_SYNTAX_MESSAGES: &[&str] = &[
    "EOF while parsing a list",
    "EOF while parsing an object",
    "EOF while parsing a string",
    "EOF while parsing a value",
    "expected `:`",
    "expected `,` or `]`",
    "expected `,` or `}`",
    "expected ident",
    "expected value",
    "expected `\"`",
    "invalid escape",
    "invalid number",
    "number out of range",
    "invalid unicode code point",
    "control character (\\u0000-\\u001F) found while parsing a string",
    "key must be a string",
    "lone leading surrogate in hex escape",
    "trailing comma",
    "trailing characters",
    "unexpected end of hex escape",
    "recursion limit exceeded",
];

/// `JSON decode error at line L, column C: <what>`, the column counted in characters (serde
/// counts bytes) and `<what>` one of [`JSON_SYNTAX_MESSAGES`] or a generic phrase.
fn json_error_message(text: &str, e: &serde_json::Error) -> String {
    let line = e.line();
    // serde_json's column is the count of bytes of the line consumed, 0 before the first.
    let line_text = text.split('\n').nth(line.saturating_sub(1)).unwrap_or("");
    let mut byte_col = e.column().min(line_text.len());
    while !line_text.is_char_boundary(byte_col) {
        byte_col -= 1;
    }
    let column = line_text[..byte_col].chars().count().max(1);
    let full = e.to_string();
    let what = full
        .rsplit_once(" at line ")
        .map(|(w, _)| w)
        .filter(|w| JSON_SYNTAX_MESSAGES.contains(w))
        .unwrap_or("the body is not valid JSON");
    format!("JSON decode error at line {line}, column {column}: {what}")
}

/// True for a plain identifier of at most 64 characters, the only unknown field names an
/// error repeats: anything else could be request text sent as a key.
fn plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// At most this many unknown fields are named one by one; the rest are counted.
const NAMED_UNKNOWN_FIELDS: usize = 20;

/// A JSON object being read field by field; unknown fields are reported at the end.
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    seen: Vec<&'static str>,
    problems: Vec<FieldProblem>,
}

impl<'a> Fields<'a> {
    /// Starts reading `map`.
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Fields {
            map,
            seen: Vec::new(),
            problems: Vec::new(),
        }
    }

    fn get(&mut self, name: &'static str) -> Option<&'a Value> {
        self.seen.push(name);
        self.map.get(name).filter(|v| !v.is_null())
    }

    fn problem(&mut self, name: &str, message: impl Into<String>, kind: &str) {
        self.problems
            .push(FieldProblem::new(format!("body.{name}"), message, kind));
    }

    /// Adds a whole-body problem (model validators).
    pub fn body_problem(&mut self, message: impl Into<String>) {
        self.problems
            .push(FieldProblem::new("body", message, "value_error"));
    }

    /// The required `text` field, stripped of surrounding whitespace and checked against the
    /// limits. Returns an empty string after recording a problem.
    pub fn text(&mut self, name: &'static str, limits: TextLimits) -> String {
        match self.get(name) {
            None => {
                self.problem(name, "Field required", "missing");
                String::new()
            }
            Some(Value::String(s)) => {
                let t = s.trim();
                if t.is_empty() {
                    self.problem(
                        name,
                        "Value error, Input text must not be blank",
                        "value_error",
                    );
                } else if t.len() > limits.max_bytes {
                    self.problem(
                        name,
                        format!(
                            "Value error, Input text too large; the limit is {} bytes. Reduce the input or increase the configured limit ({}).",
                            limits.max_bytes,
                            keys::LIMITS_MAX_TEXT_BYTES.env()
                        ),
                        "value_error",
                    );
                } else if t.chars().count() > limits.max_chars {
                    self.problem(
                        name,
                        format!(
                            "Value error, Input text too long; the limit is {} characters. Reduce the input or increase the configured limit ({}).",
                            limits.max_chars,
                            keys::LIMITS_MAX_TEXT_LENGTH.env()
                        ),
                        "value_error",
                    );
                }
                t.to_string()
            }
            Some(_) => {
                self.problem(name, "Input should be a valid string", "string_type");
                String::new()
            }
        }
    }

    /// An optional string.
    pub fn opt_str(&mut self, name: &'static str) -> Option<String> {
        match self.get(name) {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                self.problem(name, "Input should be a valid string", "string_type");
                None
            }
        }
    }

    /// An optional string from a fixed set (case-insensitive); `None` when absent.
    pub fn opt_choice(
        &mut self,
        name: &'static str,
        choices: &[&'static str],
    ) -> Option<&'static str> {
        let s = self.opt_str(name)?;
        let lower = s.to_ascii_lowercase();
        match choices.iter().find(|c| **c == lower) {
            Some(c) => Some(c),
            None => {
                self.problem(
                    name,
                    format!("Input should be one of: {}", choices.join(", ")),
                    "literal_error",
                );
                None
            }
        }
    }

    /// A boolean with a default.
    pub fn bool_or(&mut self, name: &'static str, default: bool) -> bool {
        self.opt_bool(name).unwrap_or(default)
    }

    /// An optional boolean.
    pub fn opt_bool(&mut self, name: &'static str) -> Option<bool> {
        match self.get(name) {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                self.problem(name, "Input should be a valid boolean", "bool_type");
                None
            }
        }
    }

    /// A number in `[min, max]` with a default.
    pub fn f64_in(&mut self, name: &'static str, default: f64, min: f64, max: f64) -> f64 {
        match self.get(name) {
            None => default,
            Some(Value::Number(n)) => match n.as_f64() {
                Some(v) if v < min => {
                    self.problem(
                        name,
                        format!("Input should be greater than or equal to {min}"),
                        "greater_than_equal",
                    );
                    default
                }
                Some(v) if v > max => {
                    self.problem(
                        name,
                        format!("Input should be less than or equal to {max}"),
                        "less_than_equal",
                    );
                    default
                }
                Some(v) => v,
                None => default,
            },
            Some(_) => {
                self.problem(name, "Input should be a valid number", "float_type");
                default
            }
        }
    }

    /// An optional integer in `[min, max]`.
    pub fn opt_i64_in(&mut self, name: &'static str, min: i64, max: i64) -> Option<i64> {
        match self.get(name) {
            None => None,
            // As pydantic's lax mode (and JSON Schema's `integer`), `5.0` is the integer 5; a
            // whole number beyond i64 is out of range rather than mistyped.
            Some(Value::Number(n)) => match n
                .as_i64()
                .map(|v| v.clamp(i64::MIN / 2, i64::MAX / 2) as f64)
                .or_else(|| n.as_f64().filter(|v| v.fract() == 0.0))
            {
                Some(v) if v < min as f64 => {
                    self.problem(
                        name,
                        format!("Input should be greater than or equal to {min}"),
                        "greater_than_equal",
                    );
                    None
                }
                Some(v) if v > max as f64 => {
                    self.problem(
                        name,
                        format!("Input should be less than or equal to {max}"),
                        "less_than_equal",
                    );
                    None
                }
                Some(v) => Some(v as i64),
                None => {
                    self.problem(name, "Input should be a valid integer", "int_type");
                    None
                }
            },
            Some(_) => {
                self.problem(name, "Input should be a valid integer", "int_type");
                None
            }
        }
    }

    /// An integer in `[min, max]` with a default.
    pub fn i64_in(&mut self, name: &'static str, default: i64, min: i64, max: i64) -> i64 {
        self.opt_i64_in(name, min, max).unwrap_or(default)
    }

    /// OpenMed's `keep_alive`: absent/null → `None` (server default); a number of seconds
    /// (finite, ≥ 0, not a boolean) or a duration string → `Some(Some(d))`; `never`-like →
    /// `Some(None)`.
    pub fn keep_alive(&mut self) -> Option<Option<std::time::Duration>> {
        let name = "keep_alive";
        let parsed = match self.get(name) {
            None => return None,
            Some(Value::Number(n)) => n
                .as_f64()
                .and_then(crate::settings::value::keep_alive_seconds),
            Some(Value::String(s)) if s.trim().is_empty() => return None,
            Some(Value::String(s)) => crate::settings::value::parse_keep_alive(s),
            Some(_) => None,
        };
        // Beyond ten years is "no expiry" already; `try_from` keeps a panic impossible anyway.
        let parsed = parsed.and_then(|v| match v {
            None => Some(None),
            Some(secs) => std::time::Duration::try_from_secs_f64(secs).ok().map(Some),
        });
        if parsed.is_none() {
            self.problem(
                name,
                "Value error, keep_alive must be seconds >= 0 or a duration like 30s, 5m, 1h30m, never",
                "value_error",
            );
        }
        parsed
    }

    /// Finishes: unknown fields become problems. A field whose name is a plain identifier
    /// (at most 64 characters) is named, as `body.<name>`; any other is only counted. Each
    /// message lists the accepted fields.
    ///
    /// # Errors
    /// 422 with every problem found.
    pub fn finish(mut self) -> Result<(), ApiError> {
        let mut accepted: Vec<&str> = Vec::new();
        for name in &self.seen {
            if !accepted.contains(name) {
                accepted.push(name);
            }
        }
        let accepted = accepted.join(", ");
        let mut unnamed = 0usize;
        let mut named = 0usize;
        let map = self.map;
        for key in map.keys() {
            if self.seen.contains(&key.as_str()) {
                continue;
            }
            if plain_identifier(key) && named < NAMED_UNKNOWN_FIELDS {
                named += 1;
                self.problems.push(FieldProblem::new(
                    format!("body.{key}"),
                    format!("Extra inputs are not permitted: unknown field {key}; accepted fields: {accepted}"),
                    "extra_forbidden",
                ));
            } else {
                unnamed += 1;
            }
        }
        if unnamed > 0 {
            let what = if unnamed == 1 {
                "an unknown field".to_string()
            } else {
                format!("{unnamed} unknown fields")
            };
            self.problems.push(FieldProblem::new(
                "body",
                format!("Extra inputs are not permitted: the body has {what}; accepted fields: {accepted}"),
                "extra_forbidden",
            ));
        }
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(ApiError::Validation(self.problems))
        }
    }
}

/// OpenMed's `lang` values.
pub const LANGS: &[&str] = &[
    "am", "as", "bn", "en", "fr", "de", "it", "es", "nl", "hi", "gu", "kn", "ml", "mr", "ne", "or",
    "pl", "pa", "ta", "te", "ur", "pt", "ar", "fa", "he", "ja", "tr", "id", "th", "ko", "ro", "ru",
    "sv", "da", "no", "sw", "zu", "xh", "zh", "uk", "cs", "el", "vi",
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LIMITS: TextLimits = TextLimits {
        max_chars: 10,
        max_bytes: 40,
    };

    #[test]
    fn problems_never_echo_values() {
        let body = br#"{"text": 5, "confidence_threshold": "John Smith", "Zyx Canary": 1}"#;
        let map = parse_object(body).expect("object");
        let mut f = Fields::new(&map);
        f.text("text", LIMITS);
        f.f64_in("confidence_threshold", 0.5, 0.0, 1.0);
        let err = f.finish().expect_err("invalid");
        let json = err.body(None).to_string();
        assert!(!json.contains("John"), "{json}");
        assert!(!json.contains("Canary"), "{json}");
        assert!(json.contains("body.text"));
    }

    #[test]
    fn text_is_stripped_and_limited() {
        let map = parse_object(br#"{"text": "  abc  "}"#).expect("object");
        let mut f = Fields::new(&map);
        assert_eq!(f.text("text", LIMITS), "abc");
        assert!(f.finish().is_ok());
        let map = parse_object(r#"{"text": "ééééééééééé"}"#.as_bytes()).expect("object");
        let mut f = Fields::new(&map);
        f.text("text", LIMITS);
        assert!(f.finish().is_err());
    }

    #[test]
    fn whole_floats_are_integers() {
        let map = parse_object(br#"{"a": 5.0, "b": 5.5, "c": 1e30, "d": -3}"#).expect("object");
        let mut f = Fields::new(&map);
        assert_eq!(f.opt_i64_in("a", 0, 10), Some(5));
        assert_eq!(f.opt_i64_in("b", 0, 10), None);
        assert_eq!(f.opt_i64_in("c", 0, 10), None);
        assert_eq!(f.opt_i64_in("d", -5, 10), Some(-3));
        let err = f.finish().expect_err("b and c are invalid");
        let json = err.body(None).to_string();
        assert!(
            json.contains("int_type") && json.contains("less_than_equal"),
            "{json}"
        );
    }

    #[test]
    fn huge_keep_alive_means_no_expiry_not_a_panic() {
        for body in [
            r#"{"keep_alive": 1e300}"#,
            r#"{"keep_alive": "7551470510804378606506604955807h"}"#,
            r#"{"keep_alive": "1e300"}"#,
        ] {
            let map = parse_object(body.as_bytes()).expect("object");
            let mut f = Fields::new(&map);
            assert_eq!(f.keep_alive(), Some(None), "{body}");
            assert!(f.finish().is_ok(), "{body}");
        }
        for body in [r#"{"keep_alive": -1}"#, r#"{"keep_alive": "-5m"}"#] {
            let map = parse_object(body.as_bytes()).expect("object");
            let mut f = Fields::new(&map);
            assert_eq!(f.keep_alive(), None);
            assert!(f.finish().is_err(), "{body}");
        }
    }

    fn problems(body: &str) -> Value {
        let map = match parse_object(body.as_bytes()) {
            Ok(m) => m,
            Err(e) => return e.body(None)["error"]["details"].clone(),
        };
        let mut f = Fields::new(&map);
        f.text("text", LIMITS);
        f.opt_str("model_name");
        match f.finish() {
            Ok(()) => Value::Null,
            Err(e) => e.body(None)["error"]["details"].clone(),
        }
    }

    #[test]
    fn bad_json_is_located_by_line_and_character_column() {
        let d = problems("{\n  \"text\": \"ééé\" x\n}");
        assert_eq!(d[0]["field"], "body");
        assert_eq!(d[0]["type"], "json_invalid");
        let msg = d[0]["message"].as_str().unwrap_or("");
        // `x` is the 17th character of line 2 (serde_json counts 20 bytes).
        assert_eq!(
            msg,
            "JSON decode error at line 2, column 17: expected `,` or `}`"
        );
        let d = problems("");
        assert_eq!(
            d[0]["message"],
            "JSON decode error at line 1, column 1: EOF while parsing a value"
        );
        let map = parse_object(b"{\"a\":\n\"\xc3\xa9\xff\"}").expect_err("not utf-8");
        let msg = map.body(None)["error"]["details"][0]["message"].clone();
        assert_eq!(
            msg,
            "Body is not valid UTF-8: the first invalid byte is at line 2, column 3"
        );
    }

    #[test]
    fn unknown_fields_are_named_only_when_plain_identifiers() {
        let d = problems(r#"{"text": "a", "bogus_field": 1}"#);
        assert_eq!(d[0]["field"], "body.bogus_field");
        let msg = d[0]["message"].as_str().unwrap_or("");
        assert!(msg.contains("unknown field bogus_field"), "{msg}");
        assert!(msg.contains("accepted fields: text, model_name"), "{msg}");
        let long = "a".repeat(65);
        for key in ["Zyx Canary", "9lives", "naïve", "a-b", long.as_str(), ""] {
            let d = problems(&format!(r#"{{"text": "a", "{key}": 1}}"#));
            assert_eq!(d[0]["field"], "body", "{key}");
            let json = d.to_string();
            assert!(json.contains("an unknown field"), "{json}");
            if !key.is_empty() {
                assert!(!json.contains(key), "{key} echoed: {json}");
            }
        }
        assert!(plain_identifier(&"a".repeat(64)) && plain_identifier("_x9"));
        let d = problems(r#"{"text": "a", "x y": 1, "z w": 2, "ok_name": 3}"#);
        let json = d.to_string();
        assert!(
            json.contains("body.ok_name") && json.contains("2 unknown fields"),
            "{json}"
        );
    }

    #[test]
    fn text_limits_name_their_settings() {
        let d = problems(r#"{"text": "abcdefghijklmnop"}"#);
        let msg = d[0]["message"].as_str().unwrap_or("");
        assert!(
            msg.contains("10 characters") && msg.contains("PHIGUARD_MAX_TEXT_LENGTH"),
            "{msg}"
        );
        let d = problems(&format!(r#"{{"text": "{}"}}"#, "é".repeat(21)));
        let msg = d[0]["message"].as_str().unwrap_or("");
        assert!(
            msg.contains("40 bytes") && msg.contains("PHIGUARD_MAX_TEXT_BYTES"),
            "{msg}"
        );
    }

    proptest! {
        #[test]
        fn parsing_arbitrary_bytes_never_panics(body in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(map) = parse_object(&body) {
                let mut f = Fields::new(&map);
                f.text("text", LIMITS);
                f.keep_alive();
                f.opt_i64_in("chunk_size", 1, 32768);
                let _ = f.finish();
            }
        }
    }
}
