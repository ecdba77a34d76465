//! The wire types of the OpenMed-compatible endpoints: one struct per request body and per
//! response, with OpenMed 3.1's defaults and rules.
//!
//! Each request type is what a client sends and what the handler reads: it derives
//! `Deserialize` (through the PHI-free readers of [`super::validate`]), `Serialize` and
//! `ToSchema`, so `/openapi.json` documents the very type the server parses. Ranges appear
//! twice on a field, in the reader (`int_in::<_, 1, 32768>`) and in `#[schema]`, side by
//! side; a test below checks every documented bound and default against the parser.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

use super::validate::{read, Body, Checks, Choice, LANGS};
use crate::deid::{Method, Policy};

/// `{type: string, enum: NAMES}` as the schema of a [`Choice`].
macro_rules! choice_schema {
    ($t:ty) => {
        impl PartialSchema for $t {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(<$t as Choice>::NAMES.iter().copied()))
                    .into()
            }
        }
        impl ToSchema for $t {}
    };
}

/// Degraded-mode choice: `rules` answers from the rule recognizers while the model's
/// breaker is open; `none` fails fast.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// Answer from the rules.
    Rules,
    /// Fail fast (503).
    None,
}

impl Choice for Fallback {
    const NAMES: &'static [&'static str] = &["rules", "none"];
    fn from_index(i: usize) -> Self {
        [Fallback::Rules, Fallback::None][i]
    }
}
choice_schema!(Fallback);

/// Token aggregation of `/analyze` (accepted for OpenMed compatibility).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// OpenMed's default.
    #[default]
    Simple,
    /// First token's label.
    First,
    /// Averaged scores.
    Average,
    /// Highest score.
    Max,
}

impl Aggregation {
    /// The wire name.
    pub fn wire(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl Choice for Aggregation {
    const NAMES: &'static [&'static str] = &["simple", "first", "average", "max"];
    fn from_index(i: usize) -> Self {
        [Self::Simple, Self::First, Self::Average, Self::Max][i]
    }
}
choice_schema!(Aggregation);

impl Choice for Method {
    const NAMES: &'static [&'static str] = &Method::NAMES;
    fn from_index(i: usize) -> Self {
        Method::from_wire(Method::NAMES[i]).unwrap_or_default()
    }
}
choice_schema!(Method);

/// A language code from OpenMed's list (case-insensitive; `en` by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Lang(&'static str);

impl Lang {
    /// The code, lower case.
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl Default for Lang {
    fn default() -> Self {
        Lang("en")
    }
}

impl Choice for Lang {
    const NAMES: &'static [&'static str] = LANGS;
    fn from_index(i: usize) -> Self {
        Lang(LANGS[i])
    }
}
choice_schema!(Lang);

/// A de-identification policy (`hipaa_safe_harbor`, its aliases, …); an unknown name is a
/// whole-body problem, as OpenMed's model validator reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyName(pub Policy);

impl<'de> Deserialize<'de> for PolicyName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = read::string(d)?;
        Policy::parse(&name).map(PolicyName).map_err(|_| {
            super::validate::reject_body(format_args!(
                "Value error, unknown policy; valid policies: {}",
                Policy::valid_names().join(", ")
            ))
        })
    }
}

impl Serialize for PolicyName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name())
    }
}

impl PartialSchema for PolicyName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(Policy::valid_names()))
            .into()
    }
}
impl ToSchema for PolicyName {}

/// A subject key as sent (1 to 256 characters). It only keys surrogates and offsets:
/// `Debug` hides it, and no answer, log line or metric carries it.
#[derive(Clone, PartialEq, Eq)]
pub struct Subject(String);

/// The longest subject accepted, in characters.
pub const MAX_SUBJECT_CHARS: usize = 256;

impl Subject {
    /// The key string, for deriving the subject's key.
    pub fn key(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Subject(..)")
    }
}

impl<'de> Deserialize<'de> for Subject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = read::string(d)?;
        let n = s.chars().count();
        if (1..=MAX_SUBJECT_CHARS).contains(&n) {
            Ok(Subject(s))
        } else {
            Err(super::validate::reject(
                "value_error",
                format_args!("Value error, subject must be 1 to {MAX_SUBJECT_CHARS} characters"),
            ))
        }
    }
}

impl Serialize for Subject {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl PartialSchema for Subject {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(MAX_SUBJECT_CHARS))
            .write_only(Some(true))
            .into()
    }
}
impl ToSchema for Subject {}

/// OpenMed's `keep_alive`: seconds (≥ 0), a duration string (`30s`, `5m`, `1h30m`, `500ms`,
/// `1d`, a numeric string), a no-expiry word (`never`, `off`, …), or empty for the server's
/// default. `None` inside is "no expiry".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeepAlive(pub Option<Duration>);

/// Reads `keep_alive`; an empty string is the server's default (`None`).
fn keep_alive<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<KeepAlive>, D::Error> {
    let parsed = match Value::deserialize(d)? {
        Value::Number(n) => n
            .as_f64()
            .and_then(crate::settings::value::keep_alive_seconds),
        Value::String(s) if s.trim().is_empty() => return Ok(None),
        Value::String(s) => crate::settings::value::parse_keep_alive(&s),
        _ => None,
    };
    // Beyond ten years is "no expiry" already; `try_from` keeps a panic impossible anyway.
    match parsed {
        Some(None) => Ok(Some(KeepAlive(None))),
        Some(Some(secs)) => Duration::try_from_secs_f64(secs)
            .map(|d| Some(KeepAlive(Some(d))))
            .map_err(|_| keep_alive_problem()),
        None => Err(keep_alive_problem()),
    }
}

fn keep_alive_problem<E: serde::de::Error>() -> E {
    super::validate::reject(
        "value_error",
        "Value error, keep_alive must be seconds >= 0 or a duration like 30s, 5m, 1h30m, never",
    )
}

impl Serialize for KeepAlive {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Some(d) => s.serialize_f64(d.as_secs_f64()),
            None => s.serialize_str("never"),
        }
    }
}

impl PartialSchema for KeepAlive {
    fn schema() -> RefOr<Schema> {
        // Documented a little narrower than parsed (at most a billion seconds or nine digits a
        // part); anything beyond ten years means no expiry.
        let seconds = ObjectBuilder::new()
            .schema_type(Type::Number)
            .minimum(Some(0.0))
            .maximum(Some(1e9));
        let text = ObjectBuilder::new().schema_type(Type::String).pattern(Some(
            r"^[ \t\n\r]*(|off|none|never|forever|infinite|infinity|[0-9]{1,9}(\.[0-9]{1,6})?|([0-9]{1,9}(\.[0-9]{1,6})?(ms|s|m|h|d)){1,4})[ \t\n\r]*$",
        ));
        OneOfBuilder::new().item(seconds).item(text).into()
    }
}
impl ToSchema for KeepAlive {}

/// The keep-alive a request asks for, as the engine takes it: `None` for the server's
/// default, `Some(None)` for no expiry.
pub fn keep_alive_option(k: Option<KeepAlive>) -> Option<Option<Duration>> {
    k.map(|k| k.0)
}

fn yes() -> bool {
    true
}
fn english() -> String {
    "en".into()
}
fn half() -> f64 {
    0.5
}
fn seven_tenths() -> f64 {
    0.7
}
fn chunk_1024() -> usize {
    1024
}
fn window_4096() -> usize {
    4096
}
fn context_128() -> usize {
    128
}
fn entity_512() -> usize {
    512
}

/// The fields `/pii/extract` and its stream share, followed by `$extra`.
macro_rules! extract_body {
    ($(#[$doc:meta])* $name:ident { $($extra:tt)* }) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Clinical text; surrounding whitespace is stripped and offsets refer to the
            /// stripped text.
            #[serde(default, deserialize_with = "read::text")]
            #[schema(min_length = 1, max_length = 1_000_000, pattern = r"\S")]
            #[schema(required = true)]
            pub text: String,
            /// Model id or alias; must be served (else 422 `model_not_served`).
            #[serde(default, deserialize_with = "read::opt_string", skip_serializing_if = "Option::is_none")]
            pub model_name: Option<String>,
            /// Minimum confidence.
            #[serde(default = "half", deserialize_with = "read::unit_interval")]
            #[schema(minimum = 0.0, maximum = 1.0, default = 0.5)]
            pub confidence_threshold: f64,
            /// Accepted for OpenMed compatibility (merging is always on).
            #[serde(default = "yes", deserialize_with = "read::boolean")]
            #[schema(default = true)]
            pub use_smart_merging: bool,
            /// Language code (OpenMed's list, case-insensitive).
            #[serde(default, deserialize_with = "read::choice")]
            #[schema(default = "en")]
            #[schema(inline)]
            pub lang: Lang,
            /// Accepted for OpenMed compatibility.
            #[serde(default, deserialize_with = "read::opt_boolean", skip_serializing_if = "Option::is_none")]
            pub normalize_accents: Option<bool>,
            /// How long the model stays loaded after this request.
            #[serde(default, deserialize_with = "keep_alive", skip_serializing_if = "Option::is_none")]
            #[schema(inline)]
            pub keep_alive: Option<KeepAlive>,
            /// `rules` answers from the rule recognizers while the model's breaker is open.
            #[serde(default, deserialize_with = "read::opt_choice", skip_serializing_if = "Option::is_none")]
            #[schema(inline)]
            pub fallback: Option<Fallback>,
            /// Terms never masked in this request (after `deid.allow_terms`): words,
            /// case-insensitive, or `/regex/`.
            #[serde(default, deserialize_with = "read::strings::<_, 256, 256>", skip_serializing_if = "Vec::is_empty")]
            #[schema(max_items = 256)]
            pub allow: Vec<String>,
            /// Terms always masked in this request (after `deid.deny_terms`); deny wins over
            /// allow.
            #[serde(default, deserialize_with = "read::strings::<_, 256, 256>", skip_serializing_if = "Vec::is_empty")]
            #[schema(max_items = 256)]
            pub deny: Vec<String>,
            $($extra)*
        }

        impl Body for $name {
            fn check(&self, c: &mut Checks<'_>) {
                c.text("text", &self.text);
                check_terms(c, &self.allow, &self.deny);
            }
        }

        impl $name {
            /// The request's own allow and deny lists (`None` when it sends neither).
            pub fn terms(&self) -> Option<std::sync::Arc<crate::detect::Terms>> {
                request_terms(&self.allow, &self.deny)
            }
        }
    };
}

/// Checks a request's allow and deny lists compile; a bad one is a problem on its field,
/// named by position, never by content.
fn check_terms(c: &mut Checks<'_>, allow: &[String], deny: &[String]) {
    if let Err(e) = crate::detect::Terms::parse(allow, deny) {
        let field = match &e {
            crate::detect::TermsError::TooMany { list }
            | crate::detect::TermsError::Length { list, .. }
            | crate::detect::TermsError::Regex { list, .. } => *list,
        };
        c.field(field, format!("Value error, {e}"));
    }
}

/// A request's own lists, compiled (`None` when it sends neither). `check_terms` ran
/// first, so an error cannot happen here.
fn request_terms(
    allow: &[String],
    deny: &[String],
) -> Option<std::sync::Arc<crate::detect::Terms>> {
    if allow.is_empty() && deny.is_empty() {
        return None;
    }
    crate::detect::Terms::parse(allow, deny)
        .ok()
        .map(std::sync::Arc::new)
}

extract_body! {
    /// Body of `POST /pii/extract`. Unknown fields are rejected (422 `validation_error`).
    ExtractRequest {}
}

extract_body! {
    /// Body of `POST /pii/extract/stream`: the extract body plus OpenMed's streaming knobs.
    /// The stream reads the whole text before its first line (so that the sweep can mark a
    /// name found late where it occurs early); the knobs are checked as OpenMed checks
    /// them and size the lines, not detection.
    ExtractStreamRequest {
        /// Characters OpenMed feeds its buffer per step (no effect here).
        #[serde(default = "chunk_1024", deserialize_with = "read::count_in::<_, 1, 32768>")]
        #[schema(minimum = 1, maximum = 32768, default = 1024)]
        pub chunk_size: usize,
        /// OpenMed's detection window: here, with the two below, the size of a line.
        #[serde(default = "window_4096", deserialize_with = "read::count_in::<_, 64, 16_777_216>")]
        #[schema(minimum = 64, maximum = 16_777_216, default = 4096)]
        pub window_chars: usize,
        /// Left context kept for detection.
        #[serde(default = "context_128", deserialize_with = "read::count_in::<_, 0, 1_048_576>")]
        #[schema(minimum = 0, maximum = 1_048_576, default = 128)]
        pub tokenizer_context_chars: usize,
        /// Longest entity held back at a chunk edge.
        #[serde(default = "entity_512", deserialize_with = "read::count_in::<_, 1, 1_048_576>")]
        #[schema(minimum = 1, maximum = 1_048_576, default = 512)]
        pub max_entity_chars: usize,
        /// Include span text in events.
        #[serde(default = "yes", deserialize_with = "read::boolean")]
        #[schema(default = true)]
        pub include_text: bool,
    }
}

/// Streaming knobs of `POST /pii/extract/stream`.
#[derive(Clone, Copy, Debug)]
pub struct StreamOptions {
    /// Characters fed per step.
    pub chunk_size: usize,
    /// Detection window.
    pub window_chars: usize,
    /// Left context kept for detection.
    pub tokenizer_context_chars: usize,
    /// Longest entity held back at a chunk edge.
    pub max_entity_chars: usize,
    /// Include span text in events.
    pub include_text: bool,
}

impl ExtractStreamRequest {
    /// The request and its streaming knobs apart.
    pub fn split(self) -> (ExtractRequest, StreamOptions) {
        let opts = StreamOptions {
            chunk_size: self.chunk_size,
            window_chars: self.window_chars,
            tokenizer_context_chars: self.tokenizer_context_chars,
            max_entity_chars: self.max_entity_chars,
            include_text: self.include_text,
        };
        let req = ExtractRequest {
            text: self.text,
            model_name: self.model_name,
            confidence_threshold: self.confidence_threshold,
            use_smart_merging: self.use_smart_merging,
            lang: self.lang,
            normalize_accents: self.normalize_accents,
            keep_alive: self.keep_alive,
            fallback: self.fallback,
            allow: self.allow,
            deny: self.deny,
        };
        (req, opts)
    }
}

/// The fields `/pii/deidentify` and its stream share, followed by `$extra`.
macro_rules! deidentify_body {
    ($(#[$doc:meta])* $name:ident { $($extra:tt)* }) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Clinical text; surrounding whitespace is stripped.
            #[serde(default, deserialize_with = "read::text")]
            #[schema(min_length = 1, max_length = 1_000_000, pattern = r"\S")]
            #[schema(required = true)]
            pub text: String,
            /// De-identification method.
            #[serde(default, deserialize_with = "read::choice")]
            #[schema(default = "mask")]
            #[schema(inline)]
            pub method: Method,
            /// Model id or alias.
            #[serde(default, deserialize_with = "read::opt_string", skip_serializing_if = "Option::is_none")]
            pub model_name: Option<String>,
            /// Minimum confidence.
            #[serde(default = "seven_tenths", deserialize_with = "read::unit_interval")]
            #[schema(minimum = 0.0, maximum = 1.0, default = 0.7)]
            pub confidence_threshold: f64,
            /// With `shift_dates`, keep the source year.
            #[serde(default, deserialize_with = "read::boolean")]
            #[schema(default = false)]
            pub keep_year: bool,
            /// Deprecated alias: `true` forces `method=shift_dates`; `false` conflicts with it
            /// (422).
            #[serde(default, deserialize_with = "read::opt_boolean", skip_serializing_if = "Option::is_none")]
            pub shift_dates: Option<bool>,
            /// Days to shift dates by, not 0 (422: it would leave every date as written);
            /// only with `method=shift_dates` (else 422); random non-zero when absent.
            #[serde(default, deserialize_with = "read::shift_days", skip_serializing_if = "Option::is_none")]
            // utoipa takes a literal here; the test `schema_agrees_with_parser` holds it to the
            // parser's bounds above.
            #[schema(minimum = -36500, maximum = 36500)]
            pub date_shift_days: Option<i64>,
            /// Return `mapping` (replacement → original).
            #[serde(default, deserialize_with = "read::boolean")]
            #[schema(default = false)]
            pub keep_mapping: bool,
            /// Policy name, e.g. `hipaa_safe_harbor` (unknown → 422).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schema(inline)]
            pub policy: Option<PolicyName>,
            /// Accepted for OpenMed compatibility.
            #[serde(default = "yes", deserialize_with = "read::boolean")]
            #[schema(default = true)]
            pub use_smart_merging: bool,
            /// Language code.
            #[serde(default, deserialize_with = "read::choice")]
            #[schema(default = "en")]
            #[schema(inline)]
            pub lang: Lang,
            /// Accepted for OpenMed compatibility.
            #[serde(default, deserialize_with = "read::opt_boolean", skip_serializing_if = "Option::is_none")]
            pub normalize_accents: Option<bool>,
            /// Accepted for OpenMed compatibility (the rules always sweep).
            #[serde(default = "yes", deserialize_with = "read::boolean")]
            #[schema(default = true)]
            pub use_safety_sweep: bool,
            /// How long the model stays loaded after this request.
            #[serde(default, deserialize_with = "keep_alive", skip_serializing_if = "Option::is_none")]
            #[schema(inline)]
            pub keep_alive: Option<KeepAlive>,
            /// `rules` answers from the rule recognizers while the model's breaker is open.
            #[serde(default, deserialize_with = "read::opt_choice", skip_serializing_if = "Option::is_none")]
            #[schema(inline)]
            pub fallback: Option<Fallback>,
            /// The patient or study subject the text belongs to (any string the caller uses
            /// for one; a key, never stored, logged or echoed): `replace` then gives the same
            /// surrogate for the same value in every request, and `shift_dates` the subject's
            /// own offset (unless `date_shift_days` is set).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schema(inline)]
            pub subject: Option<Subject>,
            /// Terms never masked in this request (after `deid.allow_terms`): words,
            /// case-insensitive, or `/regex/`.
            #[serde(default, deserialize_with = "read::strings::<_, 256, 256>", skip_serializing_if = "Vec::is_empty")]
            #[schema(max_items = 256)]
            pub allow: Vec<String>,
            /// Terms always masked in this request (after `deid.deny_terms`); deny wins over
            /// allow.
            #[serde(default, deserialize_with = "read::strings::<_, 256, 256>", skip_serializing_if = "Vec::is_empty")]
            #[schema(max_items = 256)]
            pub deny: Vec<String>,
            $($extra)*
        }

        impl Body for $name {
            fn check(&self, c: &mut Checks<'_>) {
                c.text("text", &self.text);
                check_terms(c, &self.allow, &self.deny);
                if self.shift_dates == Some(false) && self.method == Method::ShiftDates {
                    c.body("Value error, shift_dates=false conflicts with method='shift_dates'");
                }
                let shifting = self.shift_dates == Some(true) || self.method == Method::ShiftDates;
                if self.date_shift_days.is_some() && !shifting {
                    c.body("Value error, date_shift_days requires method='shift_dates'");
                }
            }
        }

        impl $name {
            /// The request's own allow and deny lists (`None` when it sends neither).
            pub fn terms(&self) -> Option<std::sync::Arc<crate::detect::Terms>> {
                request_terms(&self.allow, &self.deny)
            }

            /// The method asked for: `shift_dates: true` forces `shift_dates`; `mask` by
            /// default.
            pub fn method(&self) -> Method {
                if self.shift_dates == Some(true) {
                    Method::ShiftDates
                } else {
                    self.method
                }
            }
        }
    };
}

deidentify_body! {
    /// Body of `POST /pii/deidentify`.
    DeidentifyRequest {
        /// Return the mapping sealed instead of in clear: `sealed_mapping`, which only
        /// `POST /admin/reidentify` (admin token) can open, to restore the original later.
        /// Implies `keep_mapping`; `mapping` is then left out.
        #[serde(default, deserialize_with = "read::boolean")]
        #[schema(default = false)]
        pub seal_mapping: bool,
    }
}

deidentify_body! {
    /// Body of `POST /pii/deidentify/stream`: the de-identify body plus OpenMed's
    /// `chunk_size`, checked as OpenMed checks it; the stream reads the whole text before
    /// its first line, so it changes nothing.
    DeidentifyStreamRequest {
        /// Characters OpenMed feeds its buffer per step (no effect here).
        #[serde(default = "chunk_1024", deserialize_with = "read::count_in::<_, 1, 32768>")]
        #[schema(minimum = 1, maximum = 32768, default = 1024)]
        pub chunk_size: usize,
    }
}

impl DeidentifyStreamRequest {
    /// The request without OpenMed's `chunk_size`.
    pub fn into_request(self) -> DeidentifyRequest {
        DeidentifyRequest {
            text: self.text,
            method: self.method,
            model_name: self.model_name,
            confidence_threshold: self.confidence_threshold,
            keep_year: self.keep_year,
            shift_dates: self.shift_dates,
            date_shift_days: self.date_shift_days,
            keep_mapping: self.keep_mapping,
            policy: self.policy,
            use_smart_merging: self.use_smart_merging,
            lang: self.lang,
            normalize_accents: self.normalize_accents,
            use_safety_sweep: self.use_safety_sweep,
            keep_alive: self.keep_alive,
            fallback: self.fallback,
            subject: self.subject,
            allow: self.allow,
            deny: self.deny,
            // OpenMed's stream lines have no field for a seal.
            seal_mapping: false,
        }
    }
}

/// Body of `POST /analyze`.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeRequest {
    /// Clinical text.
    #[serde(default, deserialize_with = "read::text")]
    #[schema(min_length = 1, max_length = 1_000_000, pattern = r"\S")]
    #[schema(required = true)]
    pub text: String,
    /// Model id or alias (OpenMed's default is `disease_detection_superclinical`).
    #[serde(
        default,
        deserialize_with = "read::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub model_name: Option<String>,
    /// Minimum confidence.
    #[serde(default, deserialize_with = "read::unit_interval")]
    #[schema(minimum = 0.0, maximum = 1.0, default = 0.0)]
    pub confidence_threshold: f64,
    /// Accepted for OpenMed compatibility.
    #[serde(default, deserialize_with = "read::boolean")]
    #[schema(default = false)]
    pub group_entities: bool,
    /// Token aggregation.
    #[serde(default, deserialize_with = "read::choice")]
    #[schema(default = "simple")]
    #[schema(inline)]
    pub aggregation_strategy: Aggregation,
    /// Accepted for OpenMed compatibility.
    #[serde(default = "yes", deserialize_with = "read::boolean")]
    #[schema(default = true)]
    pub sentence_detection: bool,
    /// Accepted for OpenMed compatibility.
    #[serde(default = "english", deserialize_with = "read::string")]
    #[schema(default = "en")]
    pub sentence_language: String,
    /// Accepted for OpenMed compatibility.
    #[serde(default, deserialize_with = "read::boolean")]
    #[schema(default = false)]
    pub sentence_clean: bool,
    /// Accepted for OpenMed compatibility.
    #[serde(default = "yes", deserialize_with = "read::boolean")]
    #[schema(default = true)]
    pub use_fast_tokenizer: bool,
    /// How long the model stays loaded after this request.
    #[serde(
        default,
        deserialize_with = "keep_alive",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(inline)]
    pub keep_alive: Option<KeepAlive>,
}

impl Body for AnalyzeRequest {
    fn check(&self, c: &mut Checks<'_>) {
        c.text("text", &self.text);
    }
}

/// Body of `POST /models/unload`: `model_name` is required unless `all` is true.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UnloadRequest {
    /// Model to unload (must be served).
    #[serde(
        default,
        deserialize_with = "read::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub model_name: Option<String>,
    /// Unload every idle model.
    #[serde(default, deserialize_with = "read::boolean")]
    #[schema(default = false)]
    pub all: bool,
}

impl Body for UnloadRequest {
    fn check(&self, c: &mut Checks<'_>) {
        if !self.all && self.model_name.is_none() && !c.sent("model_name") {
            c.body("Value error, model_name is required unless all=true");
        }
    }
}

impl Choice for crate::secrets::Scope {
    const NAMES: &'static [&'static str] = &["client", "admin"];
    fn from_index(i: usize) -> Self {
        [Self::Client, Self::Admin][i]
    }
}

/// The longest token lifetime accepted: ten years.
pub const MAX_TOKEN_LIFETIME_SECONDS: i64 = 10 * 365 * 86_400;

fn client_scope() -> crate::secrets::Scope {
    crate::secrets::Scope::Client
}

/// Body of `POST /admin/reidentify`.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReidentifyRequest {
    /// The de-identified text (as `/pii/deidentify` returned it, or edited since). Read
    /// as sent: not trimmed (a `remove` at the start of a note leaves a leading space that
    /// the seal's offsets count) and not held to the text limits, which a de-identified
    /// text may pass when its original did not (a mask is longer than what it replaces);
    /// the body limit still bounds it.
    #[serde(default, deserialize_with = "read::string")]
    #[schema(required = true)]
    pub text: String,
    /// The `sealed_mapping` the same answer carried.
    #[serde(default, deserialize_with = "read::string")]
    #[schema(min_length = 1)]
    #[schema(required = true)]
    pub sealed_mapping: String,
}

impl Body for ReidentifyRequest {
    fn check(&self, c: &mut Checks<'_>) {
        c.present("text");
        c.required("sealed_mapping", &self.sealed_mapping);
    }
}

/// Body of `POST /admin/tokens`.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenCreateRequest {
    /// A name for people (at most 80 characters, no control characters).
    #[serde(
        default,
        deserialize_with = "read::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(max_length = 80)]
    pub label: Option<String>,
    /// `client` (inference routes, the default) or `admin`.
    #[serde(default = "client_scope", deserialize_with = "read::choice")]
    #[schema(default = "client")]
    #[schema(inline)]
    pub scope: crate::secrets::Scope,
    /// Seconds until the token expires (at most ten years); omitted or `null`: it does not
    /// expire. An expired token is refused as `invalid_credentials`.
    #[serde(
        default,
        deserialize_with = "read::opt_int_in::<_, 1, 315_360_000>",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(minimum = 1, maximum = 315_360_000)]
    pub expires_in_seconds: Option<i64>,
}

impl Body for TokenCreateRequest {
    fn check(&self, c: &mut Checks<'_>) {
        if let Some(problem) = self
            .label
            .as_deref()
            .and_then(|l| crate::secrets::label_problem(l.trim()))
        {
            c.body(problem);
        }
    }
}

/// Body of `POST /admin/models/pull`, `/admin/models/verify` and `/admin/models/default`.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelIdRequest {
    /// A catalog id or alias (pull), or an installed model id.
    #[serde(default, deserialize_with = "read::string")]
    #[schema(min_length = 1)]
    #[schema(required = true)]
    pub id: String,
}

impl Body for ModelIdRequest {
    fn check(&self, c: &mut Checks<'_>) {
        c.required("id", &self.id);
    }
}

/// Body of `POST /admin/eval`.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalRequest {
    /// Gold documents as JSONL (or a JSON array), `phiguard eval`'s format.
    #[serde(default, deserialize_with = "read::string")]
    #[schema(required = true)]
    pub gold: String,
    /// Model id or alias (default: `models.default`).
    #[serde(
        default,
        deserialize_with = "read::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub model_name: Option<String>,
    /// De-identification method scored for leaks.
    #[serde(default, deserialize_with = "read::choice")]
    #[schema(default = "mask")]
    #[schema(inline)]
    pub method: Method,
    /// Minimum confidence.
    #[serde(default = "half", deserialize_with = "read::unit_interval")]
    #[schema(minimum = 0.0, maximum = 1.0, default = 0.5)]
    pub confidence_threshold: f64,
}

impl Body for EvalRequest {
    fn check(&self, c: &mut Checks<'_>) {
        if self.gold.trim().is_empty() {
            c.body("gold must hold JSONL gold documents");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::validate::{parse_map, TextLimits};
    use serde_json::{json, Map};

    const LIMITS: TextLimits = TextLimits {
        max_chars: 1000,
        max_bytes: 4000,
    };

    fn parses<T: Body>(body: &Value) -> Result<T, Value> {
        let map: Map<String, Value> = body.as_object().cloned().unwrap_or_default();
        parse_map::<T>(&map, LIMITS).map_err(|e| e.body(None))
    }

    /// What the schema of `T` documents is what the parser does: every default is the value
    /// an absent field takes, every bound is accepted and one step past it refused, every
    /// listed choice is accepted and another refused.
    fn schema_agrees_with_parser<T: Body + ToSchema + Serialize>(base: Value) {
        let name = T::name();
        let schema = serde_json::to_value(T::schema()).expect("schema");
        let parsed = parses::<T>(&base).unwrap_or_else(|e| panic!("{name}: base refused: {e}"));
        let filled = serde_json::to_value(&parsed).expect("serialises");
        let with = |field: &str, v: Value| {
            let mut b = base.clone();
            b[field] = v;
            if field == "date_shift_days" {
                b["method"] = json!("shift_dates");
            }
            b
        };
        let props = schema["properties"].as_object().expect("properties");
        let mut fields = crate::server::validate::field_names::<T>().to_vec();
        fields.sort_unstable();
        assert_eq!(
            props.keys().map(String::as_str).collect::<Vec<_>>(),
            fields,
            "{name}: documented fields"
        );
        for (field, p) in props {
            if let Some(default) = p.get("default").filter(|_| base.get(field).is_none()) {
                assert_eq!(&filled[field], default, "{name}.{field}: default");
            }
            let integer = p["type"] == "integer" || p["type"].get(0) == Some(&json!("integer"));
            let step = if integer { 1.0 } else { 0.01 };
            for (key, outside) in [("minimum", -step), ("maximum", step)] {
                let Some(bound) = p.get(key).and_then(Value::as_f64) else {
                    continue;
                };
                let at = if integer {
                    json!(bound as i64)
                } else {
                    json!(bound)
                };
                let past = if integer {
                    json!((bound + outside) as i64)
                } else {
                    json!(bound + outside)
                };
                assert!(
                    parses::<T>(&with(field, at)).is_ok(),
                    "{name}.{field}: {key} refused"
                );
                assert!(
                    parses::<T>(&with(field, past)).is_err(),
                    "{name}.{field}: past {key} accepted"
                );
            }
            // A choice is `{enum}`, or inside `oneOf` when nullable or defaulted.
            let inner = p["oneOf"].as_array().into_iter().flatten();
            let choices = std::iter::once(p)
                .chain(inner)
                .find_map(|s| s["enum"].as_array());
            if let Some(choices) = choices {
                for c in choices.iter().filter(|c| !c.is_null()) {
                    let body = with(field, c.clone());
                    assert!(parses::<T>(&body).is_ok(), "{name}.{field}: {c} refused");
                }
                assert!(parses::<T>(&with(field, json!("zz-not-a-choice"))).is_err());
            }
        }
    }

    #[test]
    fn every_request_schema_agrees_with_its_parser() {
        let text = json!({"text": "x"});
        schema_agrees_with_parser::<ExtractRequest>(text.clone());
        schema_agrees_with_parser::<ExtractStreamRequest>(text.clone());
        schema_agrees_with_parser::<DeidentifyRequest>(text.clone());
        schema_agrees_with_parser::<DeidentifyStreamRequest>(text.clone());
        schema_agrees_with_parser::<AnalyzeRequest>(text);
        schema_agrees_with_parser::<UnloadRequest>(json!({"all": true}));
        schema_agrees_with_parser::<TokenCreateRequest>(json!({}));
        schema_agrees_with_parser::<ModelIdRequest>(json!({"id": "x"}));
        schema_agrees_with_parser::<EvalRequest>(json!({"gold": "x"}));
        schema_agrees_with_parser::<ReidentifyRequest>(
            json!({"text": "[first_name] seen", "sealed_mapping": "phiguard-sealed-v1:x"}),
        );
    }

    #[test]
    fn shift_dates_rules_are_whole_body_problems() {
        let d =
            parses::<DeidentifyRequest>(&json!({"text": "x", "shift_dates": true})).expect("valid");
        assert_eq!(d.method(), Method::ShiftDates);
        for body in [
            json!({"text": "x", "shift_dates": false, "method": "shift_dates"}),
            json!({"text": "x", "date_shift_days": 3}),
            json!({"text": "x", "policy": "no_such_policy"}),
        ] {
            let e = parses::<DeidentifyRequest>(&body).expect_err("refused");
            assert_eq!(e["error"]["details"][0]["field"], "body", "{body}");
        }
        let d = parses::<DeidentifyRequest>(&json!({"text": "x", "policy": "HIPAA-Safe-Harbor"}))
            .expect("an alias");
        assert_eq!(d.policy.map(|p| p.0.name()), Some("hipaa_safe_harbor"));
    }

    /// A shift of 0 days is refused on the field, whatever its spelling (`0`, `-0`, `0.0`).
    #[test]
    fn a_date_shift_of_0_is_refused() {
        for zero in [json!(0), json!(-0), json!(0.0)] {
            let body = json!({"text": "x", "method": "shift_dates", "date_shift_days": zero});
            let e = parses::<DeidentifyRequest>(&body).expect_err("refused");
            assert_eq!(e["error"]["details"][0]["field"], "body.date_shift_days");
            assert_eq!(e["error"]["details"][0]["type"], "value_error");
            let e = parses::<DeidentifyStreamRequest>(&body).expect_err("refused");
            assert_eq!(e["error"]["details"][0]["field"], "body.date_shift_days");
        }
        let body = json!({"text": "x", "method": "shift_dates", "date_shift_days": -1});
        let d = parses::<DeidentifyRequest>(&body).expect("valid");
        assert_eq!(d.date_shift_days, Some(-1));
    }

    #[test]
    fn huge_keep_alive_means_no_expiry_not_a_panic() {
        for ka in [
            json!(1e300),
            json!("7551470510804378606506604955807h"),
            json!("1e300"),
            json!("never"),
        ] {
            let r =
                parses::<ExtractRequest>(&json!({"text": "x", "keep_alive": ka})).expect("valid");
            assert_eq!(r.keep_alive, Some(KeepAlive(None)), "{ka}");
        }
        let r =
            parses::<ExtractRequest>(&json!({"text": "x", "keep_alive": "1m30s"})).expect("valid");
        assert_eq!(r.keep_alive, Some(KeepAlive(Some(Duration::from_secs(90)))));
        let r = parses::<ExtractRequest>(&json!({"text": "x", "keep_alive": " "})).expect("valid");
        assert_eq!(r.keep_alive, None);
        for ka in [json!(-1), json!("-5m"), json!(true)] {
            let e = parses::<ExtractRequest>(&json!({"text": "x", "keep_alive": ka}))
                .expect_err("refused");
            assert_eq!(e["error"]["details"][0]["field"], "body.keep_alive");
        }
    }

    #[test]
    fn choices_are_case_insensitive() {
        let r = parses::<DeidentifyRequest>(
            &json!({"text": "x", "method": "REPLACE", "lang": "FR", "fallback": "Rules"}),
        )
        .expect("valid");
        assert_eq!(
            (r.method, r.lang.as_str(), r.fallback),
            (Method::Replace, "fr", Some(Fallback::Rules))
        );
    }
}
