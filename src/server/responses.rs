//! The response types of the OpenMed-compatible and operational routes, one struct per
//! answer, in OpenMed 3.1's shape and key order. Handlers build these; `/openapi.json`
//! documents the same types, so the document and the answers cannot drift apart.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::detect::{CharIndex, Source, Span};

/// Rounds a confidence to four decimals, as OpenMed reports it.
pub fn round4(x: f32) -> f64 {
    ((x as f64) * 10_000.0).round() / 10_000.0
}

/// What OpenMed says of every entity.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct EntityMetadata {
    /// Always true: offsets are code points of the (stripped) text.
    pub span_valid: bool,
    /// `/pii/extract`: every detector that found the entity (`ml`, `rule`; the model first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detector_sources: Option<Vec<&'static str>>,
    /// `/pii/extract`: the canonical label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canonical_label: Option<&'static str>,
}

impl EntityMetadata {
    const VALID: EntityMetadata = EntityMetadata {
        span_valid: true,
        detector_sources: None,
        canonical_label: None,
    };
}

/// One entity of `/pii/extract` and `/analyze` (OpenMed's `EntityPrediction`).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Entity {
    /// The entity text.
    pub text: String,
    /// The label: OpenMed's wire label on `/pii/extract`, the canonical one on `/analyze`.
    pub label: &'static str,
    /// Confidence, four decimals.
    pub confidence: f64,
    /// Code-point offset into the (stripped) text.
    pub start: usize,
    /// One past the last code point.
    pub end: usize,
    /// Span metadata.
    pub metadata: EntityMetadata,
}

impl Entity {
    /// A `/pii/extract` entity.
    pub fn extracted(idx: &CharIndex, text: &str, s: &Span) -> Self {
        Entity {
            text: idx.slice(text, s.start, s.end).to_string(),
            label: s.label.wire(),
            confidence: round4(s.score),
            start: s.start,
            end: s.end,
            metadata: EntityMetadata {
                span_valid: true,
                detector_sources: Some(s.found_by.wire()),
                canonical_label: Some(s.label.canonical()),
            },
        }
    }

    /// An `/analyze` entity (canonical label).
    pub fn analyzed(idx: &CharIndex, text: &str, s: &Span) -> Self {
        Entity {
            text: idx.slice(text, s.start, s.end).to_string(),
            label: s.label.canonical(),
            confidence: round4(s.score),
            start: s.start,
            end: s.end,
            metadata: EntityMetadata::VALID,
        }
    }
}

/// What a prediction says of how it was made.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PredictionMetadata {
    /// Whether sentences were detected (never on `/pii/extract`).
    pub sentence_detection: bool,
    /// `/pii/extract`: the language code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lang: Option<&'static str>,
    /// `/pii/extract`: answered by the rules alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<bool>,
    /// `/analyze`: the aggregation asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregation_strategy: Option<&'static str>,
}

/// `/pii/extract` and `/analyze` answer (OpenMed's `PredictionResult`).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PredictionResponse {
    /// The (stripped) text.
    pub text: String,
    /// Entities at or above the threshold.
    pub entities: Vec<Entity>,
    /// The installed model that answered.
    pub model_name: String,
    /// Naive local ISO-8601 with microseconds.
    pub timestamp: String,
    /// Seconds spent.
    pub processing_time: f64,
    /// How it was made.
    pub metadata: PredictionMetadata,
    /// `/pii/extract`: true when answered by the rule recognizers alone (`fallback=rules`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<bool>,
}

/// Entity metadata on `/pii/deidentify`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct SpanValid {
    /// Always true.
    pub span_valid: bool,
}

/// Where a de-identified entity came from.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Evidence {
    /// The label as detected.
    pub raw_label: &'static str,
    /// The request's language.
    pub language: &'static str,
    /// Span metadata.
    pub metadata: SpanValid,
    /// The installed model of the request.
    pub model_id: String,
    /// `rule` when a rule found it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detector: Option<&'static str>,
}

/// One entity of `/pii/deidentify` (OpenMed's `PIIEntity`).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PiiEntity {
    /// The entity text.
    pub text: String,
    /// OpenMed's wire label.
    pub label: &'static str,
    /// The same label.
    pub entity_type: &'static str,
    /// Code-point offset.
    pub start: usize,
    /// One past the last code point.
    pub end: usize,
    /// Confidence, four decimals.
    pub confidence: f64,
    /// What the entity became.
    pub redacted_text: String,
    /// The canonical label.
    pub canonical_label: &'static str,
    /// Every detector that found it (`ml`, `rule`; the model first).
    pub sources: Vec<&'static str>,
    /// Where it came from.
    pub evidence: Evidence,
    /// The request's threshold.
    pub threshold: f64,
    /// What was done (`mask`, `shift_dates`, `year_only`, …).
    pub action: &'static str,
    /// The replacement again (OpenMed's field).
    pub surrogate: String,
    /// Span metadata.
    pub metadata: SpanValid,
}

impl PiiEntity {
    /// One transformed entity.
    pub fn new(
        r: &crate::deid::Replacement,
        threshold: f64,
        model_id: &str,
        lang: &'static str,
    ) -> Self {
        PiiEntity {
            text: r.original.clone(),
            label: r.span.label.wire(),
            entity_type: r.span.label.wire(),
            start: r.span.start,
            end: r.span.end,
            confidence: round4(r.span.score),
            redacted_text: r.replacement.clone(),
            canonical_label: r.span.label.canonical(),
            sources: r.span.found_by.wire(),
            evidence: Evidence {
                raw_label: r.span.label.wire(),
                language: lang,
                metadata: SpanValid { span_valid: true },
                model_id: model_id.to_string(),
                detector: (r.span.source == Source::Rule).then_some("rule"),
            },
            threshold,
            action: r.action.wire(),
            surrogate: r.replacement.clone(),
            metadata: SpanValid { span_valid: true },
        }
    }
}

/// The policy a de-identification applied.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct AppliedPolicy {
    /// Canonical name.
    pub name: &'static str,
    /// Version of the policy format.
    pub schema_version: u32,
    /// Whether the mapping is returned.
    pub keep_mapping: bool,
}

/// What a de-identification says of how it was made.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct DeidentifyMetadata {
    /// Answered by the rules alone.
    pub degraded: bool,
    /// The request's language.
    pub lang: &'static str,
    /// The policy applied, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<AppliedPolicy>,
    /// With `shift_dates`: the days dates moved by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date_shift_days: Option<i64>,
}

/// `/pii/deidentify` answer (OpenMed's `DeidentificationResult.to_dict()`).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct DeidentifyResponse {
    /// The (stripped) text.
    pub original_text: String,
    /// The text with every entity replaced.
    pub deidentified_text: String,
    /// What was replaced.
    pub pii_entities: Vec<PiiEntity>,
    /// The method applied.
    pub method: &'static str,
    /// Naive local ISO-8601 with microseconds.
    pub timestamp: String,
    /// How many entities were replaced.
    pub num_entities_redacted: usize,
    /// How it was made.
    pub metadata: DeidentifyMetadata,
    /// Always null over REST.
    pub audit_report: Option<Value>,
    /// The installed model that answered.
    pub model_name: String,
    /// Answered by the rules alone.
    pub degraded: bool,
    /// Replacement → original, only with `keep_mapping` (or a policy that keeps it).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "ordered_map"
    )]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub mapping: Option<Vec<(String, String)>>,
    /// With `seal_mapping`: the mapping sealed with this install's mapping key (only
    /// `POST /admin/reidentify` opens it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sealed_mapping: Option<String>,
}

/// Pairs as a JSON object, in their order (the order replacements were made).
fn ordered_map<S: serde::Serializer>(
    pairs: &Option<Vec<(String, String)>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let pairs = pairs.as_deref().unwrap_or_default();
    let mut m = s.serialize_map(Some(pairs.len()))?;
    for (k, v) in pairs {
        m.serialize_entry(k, v)?;
    }
    m.end()
}

/// `GET /health`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct HealthResponse {
    /// `ok`.
    pub status: &'static str,
    /// OpenMed's service name.
    pub service: &'static str,
    /// This build's version.
    pub version: &'static str,
    /// The timeout profile.
    pub profile: String,
}

/// `GET /livez`, `GET /readyz`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ProbeResponse {
    /// `ok` (livez) or `ready` (readyz).
    pub status: &'static str,
    /// OpenMed's service name.
    pub service: &'static str,
}

/// One resident model in `/models/loaded`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct LoadedModel {
    /// Model objects held (1).
    pub models: u64,
    /// Tokenizers held (1).
    pub tokenizers: u64,
    /// Pipelines held (0: there are none).
    pub pipelines: u64,
    /// Requests using it now.
    pub active_requests: usize,
    /// Seconds until it is unloaded when idle; null when it stays.
    pub keep_alive_seconds_remaining: Option<f64>,
    /// Always true in this list.
    pub resident: bool,
    /// Always false in this list.
    pub loading: bool,
    /// Memory it takes.
    pub footprint_bytes: u64,
    /// Memory being reserved (0).
    pub pending_footprint_bytes: u64,
    /// Seconds since a request last used it (phiguard's; the dashboard shows it).
    pub idle_seconds: f64,
}

/// The model policy of `/models/loaded`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ModelPolicy {
    /// Whether `models.served` is set.
    pub explicit: bool,
    /// Always empty.
    pub findings: Vec<String>,
}

/// `GET /models/loaded`.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ModelsLoadedResponse {
    /// `models.keep_alive`.
    pub default_keep_alive_seconds: Option<f64>,
    /// `models.max_resident`.
    pub max_resident_models: Option<i64>,
    /// Always null.
    pub memory_budget_bytes: Option<u64>,
    /// Memory the resident models take.
    pub resident_memory_bytes: u64,
    /// Always 0.
    pub pending_memory_bytes: u64,
    /// OpenMed's figure.
    pub memory_admission_wait_seconds: f64,
    /// Always empty.
    pub warm_models: Vec<String>,
    /// Resident models by id.
    pub models: BTreeMap<String, LoadedModel>,
    /// Names a request may use.
    pub served_models: Vec<String>,
    /// The default model.
    pub default_model: String,
    /// How the served list was chosen.
    pub model_policy: ModelPolicy,
}

/// What an unload released.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Released {
    /// Models released.
    pub models: usize,
    /// Tokenizers released.
    pub tokenizers: usize,
    /// Pipelines released (0).
    pub pipelines: usize,
}

impl Released {
    /// `n` models with their tokenizers.
    pub fn models(n: usize) -> Self {
        Released {
            models: n,
            tokenizers: n,
            pipelines: 0,
        }
    }
}

/// `POST /models/unload`: one model (`model_name`, `active_requests`, `loading`) or all
/// (`active_models`: each skipped busy model and its active requests).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct UnloadResponse {
    /// Whether anything was unloaded.
    pub unloaded: bool,
    /// One model: its id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// One model: requests still using it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_requests: Option<usize>,
    /// One model: always false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loading: Option<bool>,
    /// What was released.
    pub released: Released,
    /// All: each busy model skipped, with its active requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_models: Option<BTreeMap<String, usize>>,
}

/// The lines of `/pii/extract/stream` and `/pii/deidentify/stream`, in OpenMed's shapes. The
/// NDJSON writer sorts keys (as Python's `json.dumps(sort_keys=True)`), so field order here
/// is free.
pub mod stream {
    use serde::Serialize;

    /// A span of `/pii/extract/stream`.
    #[derive(Clone, Debug, Serialize)]
    pub struct EmittedSpan {
        /// Stable id: label and start.
        pub id: String,
        /// OpenMed's wire label.
        pub label: &'static str,
        /// Confidence, four decimals.
        pub score: f64,
        /// Code-point offsets.
        pub start: usize,
        /// One past the last code point.
        pub end: usize,
        /// UTF-8 offsets.
        pub byte_start: usize,
        /// One past the last byte.
        pub byte_end: usize,
        /// The span text, with `include_text` (the default).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub text: Option<String>,
        /// In the audit copy: the keyed hash of the text, never the text.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub text_hash: Option<String>,
    }

    /// The audit part of an `emit` line.
    #[derive(Clone, Debug, Serialize)]
    pub struct EmitAudit {
        /// The span's id.
        pub entity_id: String,
        /// The span with its text hashed.
        pub span: EmittedSpan,
        /// `emit`.
        #[serde(rename = "type")]
        pub kind: &'static str,
    }

    /// One committed entity of `/pii/extract/stream`.
    #[derive(Clone, Debug, Serialize)]
    pub struct Emit {
        /// The audit copy.
        pub audit: EmitAudit,
        /// The span's id.
        pub entity_id: String,
        /// The span.
        pub span: EmittedSpan,
        /// `emit`.
        #[serde(rename = "type")]
        pub kind: &'static str,
    }

    /// The audit part of a `final` line of `/pii/extract/stream`.
    #[derive(Clone, Debug, Serialize)]
    pub struct ExtractFinalAudit {
        /// `final`.
        #[serde(rename = "type")]
        pub kind: &'static str,
        /// The detection window.
        pub window_chars: usize,
    }

    /// The last line of `/pii/extract/stream`.
    #[derive(Clone, Debug, Serialize)]
    pub struct ExtractFinal {
        /// The audit part.
        pub audit: ExtractFinalAudit,
        /// Milliseconds spent.
        pub latency_ms: f64,
        /// `final`.
        #[serde(rename = "type")]
        pub kind: &'static str,
        /// The detection window.
        pub window_chars: usize,
        /// Every emitted span, when there were any.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub final_spans: Vec<EmittedSpan>,
        /// True when the rules alone answered.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub degraded: Option<bool>,
    }

    /// One redacted piece of `/pii/deidentify/stream`.
    #[derive(Clone, Debug, Serialize)]
    pub struct Chunk {
        /// 0, 1, …
        pub index: usize,
        /// The committed text, redacted.
        pub redacted_text: String,
        /// `chunk`.
        #[serde(rename = "type")]
        pub kind: &'static str,
    }

    /// The error of a stream that failed after its first line went out.
    #[derive(Clone, Debug, Serialize)]
    pub struct StreamErrorBody {
        /// `timeout` or `internal_error`.
        pub code: &'static str,
        /// Fixed text.
        pub message: String,
        /// `timeout_seconds` for a timeout.
        pub details: Option<serde_json::Value>,
    }

    /// The last line of a stream that failed after its first line went out.
    #[derive(Clone, Debug, Serialize)]
    pub struct StreamError {
        /// The error.
        pub error: StreamErrorBody,
        /// `error`.
        #[serde(rename = "type")]
        pub kind: &'static str,
    }
}
