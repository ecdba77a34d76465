//! Handlers of the model routes: `/pii/extract`, `/pii/deidentify`, `/analyze`. Each parses,
//! calls the engine through the guard, applies the transform and shapes OpenMed's response.

use std::sync::Arc;

use axum::extract::{Extension, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};

use super::api::{keep_alive_option, AnalyzeRequest, DeidentifyRequest, ExtractRequest, Fallback};
use super::error::ApiError;
use super::middleware::{Body, Caller};
use super::responses::{
    AppliedPolicy, DeidentifyMetadata, DeidentifyResponse, Entity, PiiEntity, PredictionMetadata,
    PredictionResponse,
};
use super::state::AppState;
use super::validate::{parse_map, parse_object, TextLimits};
use crate::deid::{DeidOptions, Deidentifier, Method};
use crate::detect::{CharIndex, Span};
use crate::engine::{CallOptions, Detection, Detections, Texts};
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
    fallback: Option<Fallback>,
    keep_alive: Option<super::api::KeepAlive>,
) -> CallOptions {
    let settings = st.settings();
    let guard = st.engine.guard();
    let deadline = match settings.request_timeout() {
        Some(t) => guard.deadline(t),
        None => crate::guard::Deadline::unbounded(st.clock.now()),
    };
    CallOptions {
        deadline,
        fallback_rules: fallback
            .map_or_else(|| st.engine.fallback_default(), |f| f == Fallback::Rules),
        keep_alive: keep_alive_option(keep_alive),
        terms: None,
        configured_terms: true,
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

/// Runs detection over one document's free texts (`texts`) as one guarded call with the
/// requested model (resolved): see [`crate::engine::Engine::detect_document`].
pub(crate) async fn detect_document(
    st: &AppState,
    model_name: Option<&str>,
    texts: Texts,
    labels: &[bool],
    opts: &CallOptions,
    threshold: f32,
) -> Result<Detections, ApiError> {
    let id = st.resolve_model(model_name)?;
    let det = st
        .engine
        .detect_document(&id, texts, labels, opts, threshold)
        .await?;
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

/// A typed answer as the JSON the coalescer shares between identical requests.
fn to_body<T: Serialize>(answer: &T) -> Result<Value, ApiError> {
    serde_json::to_value(answer).map_err(|_| ApiError::Internal)
}

/// The answer of `/pii/extract` and `/analyze` around its entities.
fn prediction(
    text: &str,
    det: Detection,
    entities: Vec<Entity>,
    started: std::time::Instant,
    metadata: PredictionMetadata,
    degraded: Option<bool>,
) -> PredictionResponse {
    PredictionResponse {
        text: text.to_string(),
        entities,
        model_name: det.model_id,
        timestamp: timestamp(),
        processing_time: started.elapsed().as_secs_f64(),
        metadata,
        degraded,
    }
}

/// `POST /pii/extract`.
#[utoipa::path(post, path = "/pii/extract", request_body = ExtractRequest, security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "entities found", body = PredictionResponse)))]
pub async fn pii_extract(
    State(st): State<AppState>,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let map = parse_object(&body)?;
    let req: ExtractRequest = parse_map(&map, limits(&st))?;
    let (body, degraded) = maybe_coalesce(&st, "/pii/extract", &map, || async {
        let opts = CallOptions {
            terms: req.terms(),
            ..call_options(&st, req.fallback, req.keep_alive)
        };
        let started = std::time::Instant::now();
        let det = detect(&st, req.model_name.as_deref(), &req.text, &opts).await?;
        let idx = CharIndex::new(&req.text);
        let threshold = req.confidence_threshold as f32;
        let entities = det
            .spans
            .iter()
            .filter(|s| s.passes(threshold))
            .map(|s| Entity::extracted(&idx, &req.text, s))
            .collect();
        let metadata = PredictionMetadata {
            sentence_detection: false,
            lang: Some(req.lang.as_str()),
            degraded: Some(det.degraded),
            aggregation_strategy: None,
        };
        let degraded = det.degraded;
        let answer = prediction(&req.text, det, entities, started, metadata, Some(degraded));
        Ok((to_body(&answer)?, degraded))
    })
    .await?;
    Ok(finish(body, degraded))
}

/// `POST /analyze` (an entity extractor over the requested model).
#[utoipa::path(post, path = "/analyze", request_body = AnalyzeRequest, security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "entities found", body = PredictionResponse)))]
pub async fn analyze(State(st): State<AppState>, Body(body): Body) -> Result<Response, ApiError> {
    let map = parse_object(&body)?;
    let req: AnalyzeRequest = parse_map(&map, limits(&st))?;
    let (body, degraded) = maybe_coalesce(&st, "/analyze", &map, || async {
        let opts = CallOptions {
            configured_terms: false,
            ..call_options(&st, Some(Fallback::None), req.keep_alive)
        };
        let started = std::time::Instant::now();
        let det = detect(&st, req.model_name.as_deref(), &req.text, &opts).await?;
        let idx = CharIndex::new(&req.text);
        let threshold = req.confidence_threshold as f32;
        let entities = det
            .spans
            .iter()
            .filter(|s| s.passes(threshold))
            .map(|s| Entity::analyzed(&idx, &req.text, s))
            .collect();
        let metadata = PredictionMetadata {
            sentence_detection: req.sentence_detection,
            lang: None,
            degraded: None,
            aggregation_strategy: Some(req.aggregation_strategy.wire()),
        };
        let degraded = det.degraded;
        let answer = prediction(&req.text, det, entities, started, metadata, None);
        Ok((to_body(&answer)?, degraded))
    })
    .await?;
    Ok(finish(body, degraded))
}

/// Builds the transform options of a de-identification request.
pub(crate) fn deid_options(st: &AppState, req: &DeidentifyRequest) -> DeidOptions {
    DeidOptions {
        subject: req.subject.as_ref().map(|s| st.hash_key.subject(s.key())),
        method: req.method(),
        date_shift_days: req.date_shift_days,
        keep_year: req.keep_year,
        keep_mapping: req.keep_mapping || req.seal_mapping,
        policy: req.policy.as_ref().map(|p| p.0.clone()),
        reference_year: None,
        dates: None,
        shifted_years: false,
    }
}

/// `POST /pii/deidentify`.
#[utoipa::path(post, path = "/pii/deidentify", request_body = DeidentifyRequest, security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "de-identified text", body = DeidentifyResponse)))]
pub async fn pii_deidentify(
    State(st): State<AppState>,
    Extension(_caller): Extension<Caller>,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let map = parse_object(&body)?;
    let req: DeidentifyRequest = parse_map(&map, limits(&st))?;
    let (body, degraded) = maybe_coalesce(&st, "/pii/deidentify", &map, || async {
        let opts = CallOptions {
            terms: req.terms(),
            ..call_options(&st, req.fallback, req.keep_alive)
        };
        let det = detect(&st, req.model_name.as_deref(), &req.text, &opts).await?;
        let threshold = req.confidence_threshold as f32;
        let spans: Vec<Span> = det
            .spans
            .into_iter()
            .filter(|s| s.passes(threshold))
            .collect();
        let dopts = deid_options(&st, &req);
        let policy_name = dopts.policy.as_ref().map(|p| p.name());
        let mut deid = Deidentifier::new(dopts, &st.hash_key, request_rng());
        let out = deid.apply(&req.text, &spans);
        let method = req.method();
        let sealed_mapping = (req.seal_mapping && deid.keeps_mapping()).then(|| {
            st.seal_key
                .seal(&out.text, out.sealed_spans(), &mut request_rng())
        });
        let answer = DeidentifyResponse {
            original_text: req.text.clone(),
            deidentified_text: out.text,
            pii_entities: out
                .replacements
                .iter()
                .map(|r| {
                    PiiEntity::new(
                        r,
                        req.confidence_threshold,
                        &det.model_id,
                        req.lang.as_str(),
                    )
                })
                .collect(),
            method: method.wire(),
            timestamp: timestamp(),
            num_entities_redacted: out.replacements.len(),
            metadata: DeidentifyMetadata {
                degraded: det.degraded,
                lang: req.lang.as_str(),
                policy: policy_name.map(|name| AppliedPolicy {
                    name,
                    schema_version: 1,
                    keep_mapping: deid.keeps_mapping(),
                }),
                date_shift_days: (method == Method::ShiftDates).then(|| deid.shift_days()),
            },
            audit_report: None,
            model_name: det.model_id,
            degraded: det.degraded,
            mapping: (!out.mapping.is_empty() && sealed_mapping.is_none()).then_some(out.mapping),
            sealed_mapping,
        };
        Ok((to_body(&answer)?, det.degraded))
    })
    .await?;
    Ok(finish(body, degraded))
}
