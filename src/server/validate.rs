//! Request parsing that never echoes request content, for the typed bodies of `api.rs`.
//!
//! Every request body is one struct that derives `Deserialize` (what is accepted),
//! `Serialize` and `ToSchema` (what `/openapi.json` says). serde's derive alone would not
//! do, for two reasons, and this module supplies what it lacks:
//! - **No echo.** serde_json's messages quote the offending value (`invalid type: string
//!   "John Smith", expected f64`), which would put patient text into an error body. Every
//!   field is read with one of the `deserialize_with` readers below, whose errors are
//!   tokens built by [`reject`] from fixed phrases and numbers; [`parse`] turns a token back
//!   into a problem and replaces any other error text with a fixed phrase.
//! - **Every problem at once.** serde stops at the first bad field; OpenMed (pydantic) lists
//!   them all. When a body does not deserialize, [`parse`] tries each sent field alone to
//!   find every bad one, then checks the rest without them (the cross-field rules and the
//!   live text limits, in [`Body::check`]).
//!
//! Problems come in the order pydantic gives them: by field, in declaration order, then
//! whole-body rules, then unknown fields (named only when they are plain identifiers).

use serde::de::{DeserializeOwned, Deserializer};
use serde::Deserialize;
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
    // A byte-order mark before the JSON is read past, as OpenMed's Python does (`json.loads`
    // decodes bytes that start with one as `utf-8-sig`); some Windows tools write one.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
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

/// A request body: a struct whose fields are all read by the readers of this module and
/// all have defaults (`#[serde(default)]`), so that any subset of its fields deserializes.
/// Unknown fields are reported by [`parse`] before serde sees the body, so
/// `deny_unknown_fields` only serves the schema (`additionalProperties: false`).
pub trait Body: DeserializeOwned {
    /// The rules serde cannot express: required text and its live limits, and rules that
    /// join fields (OpenMed's model validators). Fields that failed to parse are absent.
    fn check(&self, c: &mut Checks<'_>);
}

/// The marker that starts a reader's error token.
const TOKEN: char = '\u{1f}';

/// A reader's error: a problem of kind `kind` for the field being read (or the whole body
/// when `kind` is `value_error` and `body` is set), as a token [`parse`] decodes. Only
/// fixed phrases and numbers go into `message`.
pub fn reject<E: serde::de::Error>(kind: &'static str, message: impl std::fmt::Display) -> E {
    E::custom(format_args!("{TOKEN}{kind}{TOKEN}{message}"))
}

/// A whole-body problem raised while reading one field (OpenMed reports an unknown policy
/// on the body, as a model validator).
pub fn reject_body<E: serde::de::Error>(message: impl std::fmt::Display) -> E {
    E::custom(format_args!("{TOKEN}{TOKEN}{message}"))
}

/// Decodes a token; any other text (which could quote the value) becomes a fixed phrase.
fn decode(e: &serde_json::Error) -> (Option<&'static str>, String) {
    let text = e.to_string();
    let mut parts = text.splitn(3, TOKEN);
    match (parts.next(), parts.next(), parts.next()) {
        (Some(""), Some(""), Some(message)) => (None, message.to_string()),
        (Some(""), Some(kind), Some(message)) => (
            Some(
                KINDS
                    .iter()
                    .copied()
                    .find(|k| *k == kind)
                    .unwrap_or("value_error"),
            ),
            message.to_string(),
        ),
        _ => (Some("value_error"), "Input is not valid".to_string()),
    }
}

/// The problem kinds readers raise (pydantic's names).
const KINDS: &[&str] = &[
    "string_type",
    "bool_type",
    "float_type",
    "int_type",
    "greater_than_equal",
    "less_than_equal",
    "literal_error",
    "list_type",
    "value_error",
];

/// The field names of `T`, in declaration order, as serde's derive declares them.
///
/// Why by hand: the derive passes its field list to `Deserializer::deserialize_struct` and
/// exposes it nowhere else; a deserializer that only records that list is shorter than a
/// dependency (`serde_aux::serde_introspect` does the same).
pub fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    struct Names;
    #[derive(Debug)]
    struct Found(&'static [&'static str]);
    impl std::fmt::Display for Found {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("field names")
        }
    }
    impl std::error::Error for Found {}
    impl serde::de::Error for Found {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Found(&[])
        }
    }
    impl<'de> Deserializer<'de> for Names {
        type Error = Found;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Found> {
            Err(Found(&[]))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Found> {
            Err(Found(fields))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    match T::deserialize(Names) {
        Err(Found(fields)) => fields,
        Ok(_) => &[],
    }
}

/// What [`Body::check`] sees: the sent object, the live limits, and the problems so far.
pub struct Checks<'a> {
    map: &'a Map<String, Value>,
    limits: TextLimits,
    fields: &'static [&'static str],
    failed: Vec<&'a str>,
    /// Problems with their rank: field position, then whole-body rules, then unknown fields.
    problems: Vec<(usize, FieldProblem)>,
}

impl Checks<'_> {
    fn rank(&self, field: &str) -> usize {
        self.fields
            .iter()
            .position(|f| *f == field)
            .unwrap_or(self.fields.len())
    }

    fn field_problem(&mut self, name: &str, message: impl Into<String>, kind: &str) {
        let rank = self.rank(name);
        self.problems.push((
            rank,
            FieldProblem::new(format!("body.{name}"), message, kind),
        ));
    }

    /// A `value_error` on field `name` found by a rule that reads more than its type (it is
    /// left out if the field already failed to parse).
    pub fn field(&mut self, name: &'static str, message: impl Into<String>) {
        if !self.failed.contains(&name) {
            self.field_problem(name, message, "value_error");
        }
    }

    /// A whole-body problem (OpenMed's model validators).
    pub fn body(&mut self, message: impl Into<String>) {
        self.problems.push((
            self.fields.len(),
            FieldProblem::new("body", message, "value_error"),
        ));
    }

    /// True when `name` was sent with a value that parsed.
    pub fn sent(&self, name: &str) -> bool {
        self.map.get(name).is_some_and(|v| !v.is_null()) && !self.failed.contains(&name)
    }

    /// The required text field `name` (already stripped by [`text`]): present, not blank,
    /// within the live limits.
    pub fn text(&mut self, name: &'static str, text: &str) {
        if self.failed.contains(&name) {
            return;
        }
        if self.map.get(name).is_none_or(Value::is_null) {
            self.field_problem(name, "Field required", "missing");
        } else if text.is_empty() {
            self.field_problem(
                name,
                "Value error, Input text must not be blank",
                "value_error",
            );
        } else if text.len() > self.limits.max_bytes {
            let message = format!(
                "Value error, Input text too large; the limit is {} bytes. Reduce the input or increase the configured limit ({}).",
                self.limits.max_bytes,
                keys::LIMITS_MAX_TEXT_BYTES.env()
            );
            self.field_problem(name, message, "value_error");
        } else if text.chars().count() > self.limits.max_chars {
            let message = format!(
                "Value error, Input text too long; the limit is {} characters. Reduce the input or increase the configured limit ({}).",
                self.limits.max_chars,
                keys::LIMITS_MAX_TEXT_LENGTH.env()
            );
            self.field_problem(name, message, "value_error");
        }
    }

    /// A required string field that has no text limits (`id`, `gold`).
    /// A field that must be sent (and not `null`), whatever its value, the empty string
    /// included.
    pub fn present(&mut self, name: &'static str) {
        if !self.failed.contains(&name) && self.map.get(name).is_none_or(Value::is_null) {
            self.field_problem(name, "Field required", "missing");
        }
    }

    pub fn required(&mut self, name: &'static str, value: &str) {
        if !self.failed.contains(&name) && value.is_empty() {
            self.field_problem(name, "Field required", "missing");
        }
    }
}

/// Parses `body` as the typed body `T`.
///
/// # Errors
/// 422 `validation_error` listing every problem: malformed JSON, a field of the wrong type
/// or out of range, a rule of [`Body::check`], an unknown field.
pub fn parse<T: Body>(body: &[u8], limits: TextLimits) -> Result<T, ApiError> {
    parse_map(&parse_object(body)?, limits)
}

/// [`parse`] over an already parsed object (the coalescing key hashes the object).
///
/// # Errors
/// As [`parse`].
pub fn parse_map<T: Body>(map: &Map<String, Value>, limits: TextLimits) -> Result<T, ApiError> {
    let fields = field_names::<T>();
    // Null is absent, as in OpenMed's Optional fields; unknown keys are reported below.
    let known: Map<String, Value> = map
        .iter()
        .filter(|(k, v)| !v.is_null() && fields.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut c = Checks {
        map,
        limits,
        fields,
        failed: Vec::new(),
        problems: Vec::new(),
    };
    // Read from the one copy of the known fields; the map is taken back only on an error.
    let known = Value::Object(known);
    let value = match T::deserialize(&known) {
        Ok(v) => Some(v),
        Err(_) => {
            let Value::Object(known) = known else {
                unreachable!("built as an object above")
            };
            // Find every bad field by reading each alone, then read the good ones together.
            let mut good = Map::new();
            for (k, v) in &known {
                let one = Value::Object(Map::from_iter([(k.clone(), v.clone())]));
                match T::deserialize(&one) {
                    Ok(_) => {
                        good.insert(k.clone(), v.clone());
                    }
                    Err(e) => {
                        let name = map.get_key_value(k).map_or("", |(k, _)| k.as_str());
                        c.failed.push(name);
                        match decode(&e) {
                            (Some(kind), message) => c.field_problem(k, message, kind),
                            (None, message) => c.body(message),
                        }
                    }
                }
            }
            T::deserialize(&Value::Object(good)).ok()
        }
    };
    match &value {
        Some(v) => v.check(&mut c),
        // Unreachable while every field has a default; never an answer without a problem.
        None => c.body("Input is not valid"),
    }
    let mut problems = c.problems;
    problems.extend(
        unknown_fields(map, fields)
            .into_iter()
            .map(|p| (fields.len() + 1, p)),
    );
    match value {
        Some(value) if problems.is_empty() => Ok(value),
        _ => {
            problems.sort_by_key(|(rank, _)| *rank);
            Err(ApiError::Validation(
                problems.into_iter().map(|(_, p)| p).collect(),
            ))
        }
    }
}

/// Problems for keys of `map` that are not `fields`. A key that is a plain identifier (at
/// most 64 characters) is named, as `body.<name>`; any other is only counted. Each message
/// lists the accepted fields.
fn unknown_fields(map: &Map<String, Value>, fields: &[&str]) -> Vec<FieldProblem> {
    let mut problems = Vec::new();
    if map.keys().all(|k| fields.contains(&k.as_str())) {
        return problems;
    }
    let accepted = fields.join(", ");
    let mut unnamed = 0usize;
    for key in map.keys().filter(|k| !fields.contains(&k.as_str())) {
        if plain_identifier(key) && problems.len() < NAMED_UNKNOWN_FIELDS {
            problems.push(FieldProblem::new(
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
        problems.push(FieldProblem::new(
            "body",
            format!(
                "Extra inputs are not permitted: the body has {what}; accepted fields: {accepted}"
            ),
            "extra_forbidden",
        ));
    }
    problems
}

/// Readers for `#[serde(deserialize_with = "…")]`: each accepts what OpenMed (pydantic,
/// lax mode) accepts and rejects with a fixed message. Nulls never reach them ([`parse`]
/// drops them), so the `opt_` readers only wrap a value in `Some`.
pub mod read {
    use super::*;

    fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    /// A string.
    pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        match value(d)? {
            Value::String(s) => Ok(s),
            _ => Err(reject("string_type", "Input should be a valid string")),
        }
    }

    /// An optional string.
    pub fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        string(d).map(Some)
    }

    /// Text, stripped of surrounding whitespace as OpenMed strips it (Python's
    /// `str.strip()`), so offsets refer to the same stripped text; its presence and limits
    /// are checked by [`Checks::text`].
    pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        string(d).map(|s| s.trim_matches(python_space).to_string())
    }

    /// Python's `str.isspace`: Unicode White_Space (Rust's `char::is_whitespace`) plus the
    /// four information separators U+001C–U+001F, which Python counts as space and Unicode
    /// does not. With `trim()` alone, a text edged with one kept it and every offset
    /// differed by one from what an OpenMed client computes against its own `strip()`.
    fn python_space(c: char) -> bool {
        c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
    }

    /// A boolean (JSON `true`/`false` only).
    pub fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        match value(d)? {
            Value::Bool(b) => Ok(b),
            _ => Err(reject("bool_type", "Input should be a valid boolean")),
        }
    }

    /// An optional boolean.
    pub fn opt_boolean<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
        boolean(d).map(Some)
    }

    /// A number from 0 to 1 (a confidence).
    pub fn unit_interval<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match value(d)? {
            Value::Number(n) => match n.as_f64() {
                Some(v) if v < 0.0 => Err(reject(
                    "greater_than_equal",
                    "Input should be greater than or equal to 0",
                )),
                Some(v) if v > 1.0 => Err(reject(
                    "less_than_equal",
                    "Input should be less than or equal to 1",
                )),
                Some(v) => Ok(v),
                None => Err(reject("float_type", "Input should be a valid number")),
            },
            _ => Err(reject("float_type", "Input should be a valid number")),
        }
    }

    /// An integer from `LO` to `HI`. As pydantic's lax mode (and JSON Schema's `integer`),
    /// `5.0` is the integer 5; a whole number beyond i64 is out of range rather than
    /// mistyped.
    pub fn int_in<'de, D: Deserializer<'de>, const LO: i64, const HI: i64>(
        d: D,
    ) -> Result<i64, D::Error> {
        let Value::Number(n) = value(d)? else {
            return Err(reject("int_type", "Input should be a valid integer"));
        };
        match n
            .as_i64()
            .map(|v| v.clamp(i64::MIN / 2, i64::MAX / 2) as f64)
            .or_else(|| n.as_f64().filter(|v| v.fract() == 0.0))
        {
            Some(v) if v < LO as f64 => Err(reject(
                "greater_than_equal",
                format_args!("Input should be greater than or equal to {LO}"),
            )),
            Some(v) if v > HI as f64 => Err(reject(
                "less_than_equal",
                format_args!("Input should be less than or equal to {HI}"),
            )),
            Some(v) => Ok(v as i64),
            None => Err(reject("int_type", "Input should be a valid integer")),
        }
    }

    /// An optional integer from `LO` to `HI`.
    pub fn opt_int_in<'de, D: Deserializer<'de>, const LO: i64, const HI: i64>(
        d: D,
    ) -> Result<Option<i64>, D::Error> {
        int_in::<D, LO, HI>(d).map(Some)
    }

    /// Days to shift dates by: a whole number within `deid::MAX_SHIFT_DAYS` of zero, and not
    /// zero, which would hand every date back as written under a method that promised to
    /// move them (OpenMed takes any integer; the CLI and `/fhir/deidentify` refuse 0 too).
    pub fn shift_days<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        const MAX: i64 = crate::deid::MAX_SHIFT_DAYS;
        // The bounds first, for their own error types; then the rule the CLI and
        // `/fhir/deidentify` apply, which leaves only 0 to refuse here.
        let days = int_in::<D, { -MAX }, MAX>(d)?;
        if crate::deid::usable_shift_days(days) {
            Ok(Some(days))
        } else {
            Err(reject(
                "value_error",
                "Value error, date_shift_days must not be 0: it would leave every date as written",
            ))
        }
    }

    /// A count from `LO` (≥ 0) to `HI`.
    pub fn count_in<'de, D: Deserializer<'de>, const LO: i64, const HI: i64>(
        d: D,
    ) -> Result<usize, D::Error> {
        int_in::<D, LO, HI>(d).map(|v| usize::try_from(v).unwrap_or(0))
    }

    /// A list of at most `MAX` strings, each 1 to `LEN` characters.
    pub fn strings<'de, D: Deserializer<'de>, const MAX: usize, const LEN: usize>(
        d: D,
    ) -> Result<Vec<String>, D::Error> {
        let Value::Array(items) = value(d)? else {
            return Err(reject("list_type", "Input should be a valid list"));
        };
        if items.len() > MAX {
            return Err(reject(
                "value_error",
                format_args!("Value error, at most {MAX} items"),
            ));
        }
        items
            .into_iter()
            .map(|v| match v {
                Value::String(s) if (1..=LEN).contains(&s.chars().count()) => Ok(s),
                Value::String(_) => Err(reject(
                    "value_error",
                    format_args!("Value error, each item must be 1 to {LEN} characters"),
                )),
                _ => Err(reject("string_type", "Input should be a list of strings")),
            })
            .collect()
    }

    /// One of `T`'s names, case-insensitive.
    pub fn choice<'de, D: Deserializer<'de>, T: Choice>(d: D) -> Result<T, D::Error> {
        let Value::String(s) = value(d)? else {
            return Err(reject("string_type", "Input should be a valid string"));
        };
        let lower = s.to_ascii_lowercase();
        T::NAMES
            .iter()
            .position(|c| *c == lower)
            .map(T::from_index)
            .ok_or_else(|| {
                reject(
                    "literal_error",
                    format_args!("Input should be one of: {}", T::NAMES.join(", ")),
                )
            })
    }

    /// An optional choice.
    pub fn opt_choice<'de, D: Deserializer<'de>, T: Choice>(d: D) -> Result<Option<T>, D::Error> {
        choice(d).map(Some)
    }
}

/// A closed set of wire names (`method`, `fallback`, `lang`, …), read case-insensitively by
/// [`read::choice`]; its schema lists the names.
pub trait Choice: Sized {
    /// The accepted names, lower case.
    const NAMES: &'static [&'static str];
    /// The value named `NAMES[i]`.
    fn from_index(i: usize) -> Self;
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
    use serde::de::Error as _;

    const LIMITS: TextLimits = TextLimits {
        max_chars: 10,
        max_bytes: 40,
    };

    /// A body with one field of each reader.
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)] // read only through the parser's problems
    #[serde(deny_unknown_fields)]
    struct Sample {
        #[serde(default, deserialize_with = "read::text")]
        text: String,
        #[serde(default, deserialize_with = "read::opt_string")]
        model_name: Option<String>,
        #[serde(default, deserialize_with = "read::unit_interval")]
        confidence_threshold: f64,
        #[serde(default, deserialize_with = "read::opt_int_in::<_, -5, 10>")]
        a: Option<i64>,
        #[serde(default, deserialize_with = "read::opt_int_in::<_, -5, 10>")]
        b: Option<i64>,
        #[serde(default, deserialize_with = "read::opt_int_in::<_, -5, 10>")]
        c: Option<i64>,
        #[serde(default, deserialize_with = "read::opt_boolean")]
        flag: Option<bool>,
    }

    impl Body for Sample {
        fn check(&self, c: &mut Checks<'_>) {
            c.text("text", &self.text);
            if self.flag == Some(false) {
                c.body("Value error, flag=false is refused");
            }
        }
    }

    fn details(body: &str) -> Value {
        match parse::<Sample>(body.as_bytes(), LIMITS) {
            Ok(_) => Value::Null,
            Err(e) => e.body(None)["error"]["details"].clone(),
        }
    }

    fn fields_of(d: &Value) -> Vec<String> {
        d.as_array()
            .map(|a| a.iter().map(|p| p["field"].to_string()).collect())
            .unwrap_or_default()
    }

    /// Text is stripped as Python's `str.strip()` strips it, information separators
    /// included, so offsets agree with an OpenMed client's own stripped text.
    #[test]
    fn text_is_stripped_as_python_strips_it() {
        #[derive(Deserialize)]
        struct T {
            #[serde(deserialize_with = "read::text")]
            text: String,
        }
        for (raw, stripped) in [
            ("\u{1c}\u{1f} Zed\u{a0}\u{85}\u{1e}", "Zed"),
            ("\r\n\tZed Roe\u{3000}", "Zed Roe"),
            ("\u{200b}Zed", "\u{200b}Zed"),
        ] {
            let t: T = serde_json::from_value(serde_json::json!({ "text": raw })).expect("text");
            assert_eq!(t.text, stripped, "{raw:?}");
        }
    }

    #[test]
    fn field_names_are_the_declaration_order() {
        assert_eq!(
            field_names::<Sample>(),
            [
                "text",
                "model_name",
                "confidence_threshold",
                "a",
                "b",
                "c",
                "flag"
            ]
        );
    }

    #[test]
    fn every_problem_is_listed_in_field_order_and_none_echoes_a_value() {
        let d = details(
            r#"{"Zyx Canary": 1, "flag": false, "c": "Canary", "confidence_threshold": "John Smith", "text": 5}"#,
        );
        assert_eq!(
            fields_of(&d),
            [
                r#""body.text""#,
                r#""body.confidence_threshold""#,
                r#""body.c""#,
                r#""body""#,
                r#""body""#
            ],
            "{d}"
        );
        assert_eq!(d[0]["type"], "string_type");
        assert_eq!(d[1]["type"], "float_type");
        assert_eq!(d[2]["type"], "int_type");
        assert_eq!(d[3]["type"], "value_error");
        assert_eq!(d[4]["type"], "extra_forbidden");
        let json = d.to_string();
        assert!(!json.contains("John") && !json.contains("Canary"), "{json}");
    }

    #[test]
    fn null_is_absent_and_text_is_required() {
        let d = details(r#"{"text": null, "model_name": null}"#);
        assert_eq!(d[0]["field"], "body.text");
        assert_eq!(d[0]["type"], "missing");
        assert_eq!(d.as_array().map(Vec::len), Some(1), "{d}");
        let d = details(r#"{"text": "   "}"#);
        assert_eq!(d[0]["type"], "value_error");
    }

    #[test]
    fn text_is_stripped_and_limited() {
        let ok = parse::<Sample>(br#"{"text": "  abc  "}"#, LIMITS).expect("valid");
        assert_eq!(ok.text, "abc");
        assert!(parse::<Sample>(r#"{"text": "ééééééééééé"}"#.as_bytes(), LIMITS).is_err());
    }

    #[test]
    fn whole_floats_are_integers() {
        let ok = parse::<Sample>(br#"{"text": "x", "a": 5.0, "b": -3}"#, LIMITS).expect("valid");
        assert_eq!((ok.a, ok.b), (Some(5), Some(-3)));
        let d = details(r#"{"text": "x", "a": 5.5, "b": 1e30, "c": -6}"#);
        let types: Vec<&str> = d
            .as_array()
            .map(|a| a.iter().filter_map(|p| p["type"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(types, ["int_type", "less_than_equal", "greater_than_equal"]);
        assert_eq!(d[1]["message"], "Input should be less than or equal to 10");
    }

    #[test]
    fn other_error_text_never_reaches_the_client() {
        let e = serde_json::Error::custom("invalid type: string \"John Smith\"");
        assert_eq!(
            decode(&e),
            (Some("value_error"), "Input is not valid".to_string())
        );
        let e: serde_json::Error = reject("not_a_kind", "fixed");
        assert_eq!(decode(&e), (Some("value_error"), "fixed".to_string()));
    }

    #[test]
    fn bad_json_is_located_by_line_and_character_column() {
        let d = details("{\n  \"text\": \"ééé\" x\n}");
        assert_eq!(d[0]["field"], "body");
        assert_eq!(d[0]["type"], "json_invalid");
        let msg = d[0]["message"].as_str().unwrap_or("");
        // `x` is the 17th character of line 2 (serde_json counts 20 bytes).
        assert_eq!(
            msg,
            "JSON decode error at line 2, column 17: expected `,` or `}`"
        );
        let d = details("");
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
    fn a_byte_order_mark_before_the_json_is_read_past() {
        let map = parse_object("\u{feff}{\"text\": \"a\"}".as_bytes()).expect("parses");
        assert_eq!(map["text"], "a");
    }

    #[test]
    fn unknown_fields_are_named_only_when_plain_identifiers() {
        let d = details(r#"{"text": "a", "bogus_field": 1}"#);
        assert_eq!(d[0]["field"], "body.bogus_field");
        let msg = d[0]["message"].as_str().unwrap_or("");
        assert!(msg.contains("unknown field bogus_field"), "{msg}");
        assert!(msg.contains("accepted fields: text, model_name,"), "{msg}");
        let long = "a".repeat(65);
        for key in ["Zyx Canary", "9lives", "naïve", "a-b", long.as_str(), ""] {
            let d = details(&format!(r#"{{"text": "a", "{key}": 1}}"#));
            assert_eq!(d[0]["field"], "body", "{key}");
            let json = d.to_string();
            assert!(json.contains("an unknown field"), "{json}");
            if !key.is_empty() {
                assert!(!json.contains(key), "{key} echoed: {json}");
            }
        }
        assert!(plain_identifier(&"a".repeat(64)) && plain_identifier("_x9"));
        let d = details(r#"{"text": "a", "x y": 1, "z w": 2, "ok_name": 3}"#);
        let json = d.to_string();
        assert!(
            json.contains("body.ok_name") && json.contains("2 unknown fields"),
            "{json}"
        );
    }

    #[test]
    fn text_limits_name_their_settings() {
        let d = details(r#"{"text": "abcdefghijklmnop"}"#);
        let msg = d[0]["message"].as_str().unwrap_or("");
        assert!(
            msg.contains("10 characters") && msg.contains("PHIGUARD_MAX_TEXT_LENGTH"),
            "{msg}"
        );
        let d = details(&format!(r#"{{"text": "{}"}}"#, "é".repeat(21)));
        let msg = d[0]["message"].as_str().unwrap_or("");
        assert!(
            msg.contains("40 bytes") && msg.contains("PHIGUARD_MAX_TEXT_BYTES"),
            "{msg}"
        );
    }

    proptest! {
        #[test]
        fn parsing_arbitrary_bytes_never_panics(body in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Err(e) = parse::<Sample>(&body, LIMITS) {
                prop_assert_eq!(e.status().as_u16(), 422);
            }
        }
    }
}
