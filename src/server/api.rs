//! Request types of the OpenMed-compatible endpoints, with OpenMed 3.1's defaults and rules,
//! parsed with [`super::validate::Fields`]. The `ToSchema` derives feed
//! `/openapi.json`.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::error::ApiError;
use super::validate::{Fields, TextLimits, LANGS};

/// Degraded-mode choice carried by a request (`"fallback": "rules"`).
fn fallback(f: &mut Fields<'_>) -> Option<bool> {
    f.opt_choice("fallback", FALLBACKS).map(|c| c == "rules")
}

/// Values of `fallback`.
pub const FALLBACKS: &[&str] = &["rules", "none"];

/// Values of `aggregation_strategy` on `/analyze`.
pub const AGGREGATIONS: &[&str] = &["simple", "first", "average", "max"];

/// `POST /pii/extract`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ExtractRequest {
    /// Clinical text (stripped of surrounding whitespace; offsets refer to the stripped text).
    pub text: String,
    /// Model id or alias; default: the configured default model.
    pub model_name: Option<String>,
    /// Minimum confidence, 0..1 (default 0.5).
    pub confidence_threshold: f64,
    /// Accepted for OpenMed compatibility (merging is always on).
    pub use_smart_merging: bool,
    /// Language code (OpenMed's list).
    pub lang: String,
    /// Accepted for OpenMed compatibility.
    pub normalize_accents: Option<bool>,
    /// Keep-alive for the model: seconds, `30s`, `5m`, `never`.
    #[schema(value_type = Option<String>)]
    #[serde(skip)]
    pub keep_alive: Option<Option<Duration>>,
    /// `rules` answers from the rule recognizers while the model's breaker is open.
    #[schema(value_type = Option<String>)]
    #[serde(skip)]
    pub fallback: Option<bool>,
}

/// Streaming knobs of `POST /pii/extract/stream`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct StreamOptions {
    /// Characters fed per step, 1..32768 (default 1024).
    pub chunk_size: usize,
    /// Detection window, ≥ 64 (default 4096).
    pub window_chars: usize,
    /// Left context kept for detection, ≥ 0 (default 128).
    pub tokenizer_context_chars: usize,
    /// Longest entity held back at a chunk edge, ≥ 1 (default 512).
    pub max_entity_chars: usize,
    /// Include span text in events (default true).
    pub include_text: bool,
}

/// `POST /pii/deidentify`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct DeidentifyRequest {
    /// Clinical text.
    pub text: String,
    /// `mask` (default), `remove`, `replace`, `hash`, `shift_dates`.
    pub method: String,
    /// Model id or alias.
    pub model_name: Option<String>,
    /// Minimum confidence, 0..1 (default 0.7).
    pub confidence_threshold: f64,
    /// With `shift_dates`, keep the source year.
    pub keep_year: bool,
    /// Days to shift dates by (requires `shift_dates`); random non-zero when absent.
    pub date_shift_days: Option<i64>,
    /// Return `mapping` (replacement → original).
    pub keep_mapping: bool,
    /// Policy name, e.g. `hipaa_safe_harbor`.
    pub policy: Option<String>,
    /// Accepted for OpenMed compatibility.
    pub use_smart_merging: bool,
    /// Accepted for OpenMed compatibility (the rules always sweep).
    pub use_safety_sweep: bool,
    /// Language code.
    pub lang: String,
    /// Accepted for OpenMed compatibility.
    pub normalize_accents: Option<bool>,
    /// Keep-alive for the model.
    #[schema(value_type = Option<String>)]
    #[serde(skip)]
    pub keep_alive: Option<Option<Duration>>,
    /// `rules` answers from the rule recognizers while the model's breaker is open.
    #[schema(value_type = Option<String>)]
    #[serde(skip)]
    pub fallback: Option<bool>,
}

/// `POST /analyze`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct AnalyzeRequest {
    /// Clinical text.
    pub text: String,
    /// Model id or alias.
    pub model_name: Option<String>,
    /// Minimum confidence, 0..1 (default 0).
    pub confidence_threshold: f64,
    /// Accepted for OpenMed compatibility.
    pub group_entities: bool,
    /// `simple`, `first`, `average`, `max`.
    pub aggregation_strategy: Option<String>,
    /// Accepted for OpenMed compatibility.
    pub sentence_detection: bool,
    /// Keep-alive for the model.
    #[schema(value_type = Option<String>)]
    #[serde(skip)]
    pub keep_alive: Option<Option<Duration>>,
}

/// `POST /models/unload`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct UnloadRequest {
    /// Model to unload.
    pub model_name: Option<String>,
    /// Unload every idle model.
    pub all: bool,
}

fn common_pii(f: &mut Fields<'_>) -> (bool, String, Option<bool>) {
    let smart = f.bool_or("use_smart_merging", true);
    let lang = f.opt_choice("lang", LANGS).unwrap_or("en").to_string();
    let accents = f.opt_bool("normalize_accents");
    (smart, lang, accents)
}

impl ExtractRequest {
    /// Parses and validates.
    ///
    /// # Errors
    /// 422 listing every problem.
    pub fn parse(
        map: &Map<String, Value>,
        limits: TextLimits,
    ) -> Result<(Self, Option<StreamOptions>), ApiError> {
        Self::parse_inner(map, limits, false)
    }

    /// Parses the streaming variant.
    ///
    /// # Errors
    /// 422 listing every problem.
    pub fn parse_stream(
        map: &Map<String, Value>,
        limits: TextLimits,
    ) -> Result<(Self, StreamOptions), ApiError> {
        let (r, s) = Self::parse_inner(map, limits, true)?;
        Ok((r, s.unwrap_or_else(StreamOptions::default_deid)))
    }

    fn parse_inner(
        map: &Map<String, Value>,
        limits: TextLimits,
        stream: bool,
    ) -> Result<(Self, Option<StreamOptions>), ApiError> {
        let mut f = Fields::new(map);
        let text = f.text("text", limits);
        let model_name = f.opt_str("model_name");
        let confidence_threshold = f.f64_in("confidence_threshold", 0.5, 0.0, 1.0);
        let (use_smart_merging, lang, normalize_accents) = common_pii(&mut f);
        let keep_alive = f.keep_alive();
        let fallback = fallback(&mut f);
        let opts = stream.then(|| StreamOptions {
            chunk_size: f.i64_in("chunk_size", 1024, 1, 32768) as usize,
            window_chars: f.i64_in("window_chars", 4096, 64, 1 << 24) as usize,
            tokenizer_context_chars: f.i64_in("tokenizer_context_chars", 128, 0, 1 << 20) as usize,
            max_entity_chars: f.i64_in("max_entity_chars", 512, 1, 1 << 20) as usize,
            include_text: f.bool_or("include_text", true),
        });
        f.finish()?;
        Ok((
            ExtractRequest {
                text,
                model_name,
                confidence_threshold,
                use_smart_merging,
                lang,
                normalize_accents,
                keep_alive,
                fallback,
            },
            opts,
        ))
    }
}

impl StreamOptions {
    /// The defaults used by `/pii/deidentify/stream` (only `chunk_size` is a field there).
    pub fn default_deid() -> Self {
        StreamOptions {
            chunk_size: 1024,
            window_chars: 4096,
            tokenizer_context_chars: 128,
            max_entity_chars: 512,
            include_text: true,
        }
    }
}

/// Methods accepted by `/pii/deidentify`.
pub const METHODS: &[&str] = &crate::deid::Method::NAMES;

impl DeidentifyRequest {
    /// Parses and validates (with `chunk_size` when `stream`).
    ///
    /// # Errors
    /// 422 listing every problem.
    pub fn parse(
        map: &Map<String, Value>,
        limits: TextLimits,
        stream: bool,
    ) -> Result<(Self, Option<usize>), ApiError> {
        let mut f = Fields::new(map);
        let text = f.text("text", limits);
        let method_raw = f.opt_choice("method", METHODS);
        let model_name = f.opt_str("model_name");
        let confidence_threshold = f.f64_in("confidence_threshold", 0.7, 0.0, 1.0);
        let keep_year = f.bool_or("keep_year", false);
        let shift_dates = f.opt_bool("shift_dates");
        let date_shift_days = f.opt_i64_in("date_shift_days", -36_500, 36_500);
        let keep_mapping = f.bool_or("keep_mapping", false);
        let policy = f.opt_str("policy");
        let (use_smart_merging, lang, normalize_accents) = common_pii(&mut f);
        let use_safety_sweep = f.bool_or("use_safety_sweep", true);
        let keep_alive = f.keep_alive();
        let fallback = fallback(&mut f);
        let chunk_size = stream.then(|| f.i64_in("chunk_size", 1024, 1, 32768) as usize);
        let mut method = method_raw.unwrap_or("mask").to_string();
        match (shift_dates, method.as_str()) {
            (Some(true), _) => method = "shift_dates".into(),
            (Some(false), "shift_dates") => {
                f.body_problem("Value error, shift_dates=false conflicts with method='shift_dates'")
            }
            _ => {}
        }
        if date_shift_days.is_some() && method != "shift_dates" {
            f.body_problem("Value error, date_shift_days requires method='shift_dates'");
        }
        if let Some(p) = &policy {
            if crate::deid::Policy::parse(p).is_err() {
                f.body_problem(format!(
                    "Value error, unknown policy; valid policies: {}",
                    crate::deid::Policy::valid_names().join(", ")
                ));
            }
        }
        f.finish()?;
        Ok((
            DeidentifyRequest {
                text,
                method,
                model_name,
                confidence_threshold,
                keep_year,
                date_shift_days,
                keep_mapping,
                policy,
                use_smart_merging,
                use_safety_sweep,
                lang,
                normalize_accents,
                keep_alive,
                fallback,
            },
            chunk_size,
        ))
    }
}

impl AnalyzeRequest {
    /// Parses and validates.
    ///
    /// # Errors
    /// 422 listing every problem.
    pub fn parse(map: &Map<String, Value>, limits: TextLimits) -> Result<Self, ApiError> {
        let mut f = Fields::new(map);
        let text = f.text("text", limits);
        let model_name = f.opt_str("model_name");
        let confidence_threshold = f.f64_in("confidence_threshold", 0.0, 0.0, 1.0);
        let group_entities = f.bool_or("group_entities", false);
        let aggregation_strategy = f
            .opt_choice("aggregation_strategy", AGGREGATIONS)
            .map(str::to_string);
        let sentence_detection = f.bool_or("sentence_detection", true);
        let _ = f.opt_str("sentence_language");
        let _ = f.opt_bool("sentence_clean");
        let _ = f.opt_bool("use_fast_tokenizer");
        let keep_alive = f.keep_alive();
        f.finish()?;
        Ok(AnalyzeRequest {
            text,
            model_name,
            confidence_threshold,
            group_entities,
            aggregation_strategy,
            sentence_detection,
            keep_alive,
        })
    }
}

impl UnloadRequest {
    /// Parses and validates.
    ///
    /// # Errors
    /// 422 listing every problem.
    pub fn parse(map: &Map<String, Value>) -> Result<Self, ApiError> {
        let mut f = Fields::new(map);
        let model_name = f.opt_str("model_name");
        let all = f.bool_or("all", false);
        if !all && model_name.is_none() {
            f.body_problem("Value error, model_name is required unless all=true");
        }
        f.finish()?;
        Ok(UnloadRequest { model_name, all })
    }
}
