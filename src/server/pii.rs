//! Handlers of the model routes: `/pii/extract`, `/pii/deidentify`, `/analyze`. Each parses,
//! calls the engine through the guard, applies the transform and shapes OpenMed's response.

use std::sync::Arc;

use axum::extract::{Extension, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use super::api::{AnalyzeRequest, DeidentifyRequest, ExtractRequest};
use super::error::ApiError;
use super::middleware::{Body, Caller};
use super::state::AppState;
use super::validate::{parse_object, TextLimits};
use crate::deid::{DeidOptions, Deidentifier, Method, Policy};
use crate::detect::{CharIndex, Span};
use crate::engine::{CallOptions, Detection};
use crate::settings::keys;

/// Text limits from the live settings.
pub(crate) fn limits(st: &AppState) -> TextLimits {
    let s = st.settings();
    TextLimits {
        max_chars: s.get(keys::LIMITS_MAX_TEXT_LENGTH) as usize,
        max_bytes: s.get(keys::LIMITS_MAX_TEXT_BYTES) as usize,
    }
}

/// Call options for one request: deadline from the profile/override, fallback choice.
pub(crate) fn call_options(
    st: &AppState,
    fallback: Option<bool>,
    keep_alive: Option<Option<std::time::Duration>>,
) -> CallOptions {
    let settings = st.settings();
    let guard = st.engine.guard();
    let deadline = match settings.request_timeout() {
        Some(t) => guard.deadline(t),
        None => crate::guard::Deadline::unbounded(st.clock.now()),
    };
    CallOptions {
        deadline,
        fallback_rules: fallback.unwrap_or_else(|| st.engine.fallback_default()),
        keep_alive,
    }
}

/// Runs detection for `text` with the requested model (resolved, guarded).
pub(crate) async fn detect(
    st: &AppState,
    model_name: Option<&str>,
    text: &str,
    opts: &CallOptions,
) -> Result<Detection, ApiError> {
    let id = st.resolve_model(model_name)?;
    let det = st.engine.detect(&id, Arc::from(text), opts).await?;
    if det.degraded {
        st.metrics.degraded.inc();
    }
    Ok(det)
}

/// A per-request RNG that may cross `.await` points (`ThreadRng` may not).
pub(crate) fn request_rng() -> rand::rngs::StdRng {
    use rand::SeedableRng;
    rand::rngs::StdRng::from_os_rng()
}

/// OpenMed's timestamp: naive local ISO-8601 with microseconds.
pub(crate) fn timestamp() -> String {
    chrono::Local::now()
        .naive_local()
        .format("%Y-%m-%dT%H:%M:%S%.6f")
        .to_string()
}

fn entity_json(idx: &CharIndex, text: &str, s: &Span) -> Value {
    json!({
        "text": idx.slice(text, s.start, s.end),
        "label": s.label.wire(),
        "confidence": round4(s.score),
        "start": s.start,
        "end": s.end,
        "metadata": {"span_valid": true, "detector_sources": [s.source.wire()],
                     "canonical_label": s.label.canonical()},
    })
}

pub(crate) fn round4(x: f32) -> f64 {
    ((x as f64) * 10_000.0).round() / 10_000.0
}

fn finish(body: Value, degraded: bool) -> Response {
    let mut resp = (StatusCode::OK, axum::Json(body)).into_response();
    if degraded {
        resp.headers_mut()
            .insert("x-phiguard-degraded", HeaderValue::from_static("rules"));
    }
    resp
}

/// Coalesces identical concurrent requests when enabled (OpenMed's single-flight).
async fn maybe_coalesce<F, Fut>(
    st: &AppState,
    route: &str,
    map: &Map<String, Value>,
    f: F,
) -> Result<(Value, bool), ApiError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(Value, bool), ApiError>>,
{
    if !st.settings().get(keys::ADMISSION_COALESCING_ENABLED) {
        return f().await;
    }
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(route.as_bytes());
    h.update([0]);
    h.update(serde_json::to_vec(map).unwrap_or_default());
    let key: [u8; 32] = h.finalize().into();
    st.coalesce.run(key, f).await.0
}

/// `POST /pii/extract`.
#[utoipa::path(post, path = "/pii/extract", request_body = super::openapi::ExtractBody, security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "entities found", body = super::openapi::PredictionResponse)))]
pub async fn pii_extract(
    State(st): State<AppState>,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let map = parse_object(&body)?;
    let (req, _) = ExtractRequest::parse(&map, limits(&st))?;
    let (body, degraded) = maybe_coalesce(&st, "/pii/extract", &map, || async {
        let opts = call_options(&st, req.fallback, req.keep_alive);
        let started = std::time::Instant::now();
        let det = detect(&st, req.model_name.as_deref(), &req.text, &opts).await?;
        let idx = CharIndex::new(&req.text);
        let threshold = req.confidence_threshold as f32;
        let entities: Vec<Value> = det
            .spans
            .iter()
            .filter(|s| s.score >= threshold)
            .map(|s| entity_json(&idx, &req.text, s))
            .collect();
        let body = json!({
            "text": req.text,
            "entities": entities,
            "model_name": det.model_id,
            "timestamp": timestamp(),
            "processing_time": started.elapsed().as_secs_f64(),
            "metadata": {"sentence_detection": false, "lang": req.lang, "degraded": det.degraded},
            "degraded": det.degraded,
        });
        Ok((body, det.degraded))
    })
    .await?;
    Ok(finish(body, degraded))
}

/// `POST /analyze` (an entity extractor over the requested model).
#[utoipa::path(post, path = "/analyze", request_body = super::openapi::AnalyzeBody, security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "entities found", body = super::openapi::PredictionResponse)))]
pub async fn analyze(State(st): State<AppState>, Body(body): Body) -> Result<Response, ApiError> {
    let map = parse_object(&body)?;
    let req = AnalyzeRequest::parse(&map, limits(&st))?;
    let (body, degraded) = maybe_coalesce(&st, "/analyze", &map, || async {
        let opts = call_options(&st, Some(false), req.keep_alive);
        let started = std::time::Instant::now();
        let det = detect(&st, req.model_name.as_deref(), &req.text, &opts).await?;
        let idx = CharIndex::new(&req.text);
        let threshold = req.confidence_threshold as f32;
        let entities: Vec<Value> = det
            .spans
            .iter()
            .filter(|s| s.score >= threshold)
            .map(|s| {
                json!({"text": idx.slice(&req.text, s.start, s.end), "label": s.label.canonical(),
                       "confidence": round4(s.score), "start": s.start, "end": s.end,
                       "metadata": {"span_valid": true}})
            })
            .collect();
        let body = json!({
            "text": req.text, "entities": entities, "model_name": det.model_id,
            "timestamp": timestamp(), "processing_time": started.elapsed().as_secs_f64(),
            "metadata": {"sentence_detection": req.sentence_detection,
                         "aggregation_strategy": req.aggregation_strategy.as_deref().unwrap_or("simple")},
        });
        Ok((body, det.degraded))
    })
    .await?;
    Ok(finish(body, degraded))
}

/// Builds the transform options of a de-identification request.
pub(crate) fn deid_options(req: &DeidentifyRequest) -> DeidOptions {
    let method = Method::from_wire(&req.method).unwrap_or_default();
    DeidOptions {
        method,
        date_shift_days: req.date_shift_days,
        keep_year: req.keep_year,
        keep_mapping: req.keep_mapping,
        policy: req.policy.as_deref().and_then(|p| Policy::parse(p).ok()),
        reference_year: None,
    }
}

/// One transformed entity in OpenMed's `pii_entities` shape.
pub(crate) fn pii_entity_json(
    r: &crate::deid::Replacement,
    threshold: f64,
    model_id: &str,
    lang: &str,
) -> Value {
    let mut v = json!({
        "text": r.original,
        "label": r.span.label.wire(),
        "entity_type": r.span.label.wire(),
        "start": r.span.start,
        "end": r.span.end,
        "confidence": round4(r.span.score),
        "redacted_text": r.replacement,
        "canonical_label": r.span.label.canonical(),
        "sources": [r.span.source.wire()],
        "evidence": {"raw_label": r.span.label.wire(), "language": lang,
                     "metadata": {"span_valid": true}, "model_id": model_id},
        "threshold": threshold,
        "action": r.action.wire(),
        "surrogate": r.replacement,
        "metadata": {"span_valid": true},
    });
    if r.span.source == crate::detect::Source::Rule {
        v["evidence"]["detector"] = json!("rule");
    }
    v
}

/// `POST /pii/deidentify`.
#[utoipa::path(post, path = "/pii/deidentify", request_body = super::openapi::DeidentifyBody, security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "de-identified text", body = super::openapi::DeidentifyResponse)))]
pub async fn pii_deidentify(
    State(st): State<AppState>,
    Extension(_caller): Extension<Caller>,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let map = parse_object(&body)?;
    let (req, _) = DeidentifyRequest::parse(&map, limits(&st), false)?;
    let (body, degraded) = maybe_coalesce(&st, "/pii/deidentify", &map, || async {
        let opts = call_options(&st, req.fallback, req.keep_alive);
        let det = detect(&st, req.model_name.as_deref(), &req.text, &opts).await?;
        let threshold = req.confidence_threshold as f32;
        let spans: Vec<Span> = det
            .spans
            .into_iter()
            .filter(|s| s.score >= threshold)
            .collect();
        let dopts = deid_options(&req);
        let policy_name = dopts.policy.as_ref().map(|p| p.name());
        let mut deid = Deidentifier::new(dopts, &st.hash_key, request_rng());
        let out = deid.apply(&req.text, &spans);
        let entities: Vec<Value> = out
            .replacements
            .iter()
            .map(|r| pii_entity_json(r, req.confidence_threshold, &det.model_id, &req.lang))
            .collect();
        let mut metadata = json!({"degraded": det.degraded, "lang": req.lang});
        if let Some(p) = policy_name {
            metadata["policy"] =
                json!({"name": p, "schema_version": 1, "keep_mapping": deid.keeps_mapping()});
        }
        if req.method == "shift_dates" {
            metadata["date_shift_days"] = json!(deid.shift_days());
        }
        let mut body = json!({
            "original_text": req.text,
            "deidentified_text": out.text,
            "pii_entities": entities,
            "method": req.method,
            "timestamp": timestamp(),
            "num_entities_redacted": out.replacements.len(),
            "metadata": metadata,
            "audit_report": null,
            "model_name": det.model_id,
            "degraded": det.degraded,
        });
        if !out.mapping.is_empty() {
            let mut m = Map::new();
            for (rep, orig) in &out.mapping {
                m.insert(rep.clone(), json!(orig));
            }
            body["mapping"] = Value::Object(m);
        }
        Ok((body, det.degraded))
    })
    .await?;
    Ok(finish(body, degraded))
}
