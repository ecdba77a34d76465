//! Operational routes: health, liveness, readiness, metrics, `/models/loaded`,
//! `/models/unload`, and the OpenAPI document.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::api::UnloadRequest;
use super::error::ApiError;
use super::middleware::Body;
use super::state::{AppState, Phase};
use super::validate::parse_object;
use crate::settings::keys;

/// OpenMed's service name, kept for client compatibility.
pub const SERVICE: &str = "openmed-rest";

/// `GET /health`.
#[utoipa::path(get, path = "/health", responses((status = 200, description = "service is up", body = super::openapi::HealthResponse)))]
pub async fn health(State(st): State<AppState>) -> Response {
    let s = st.settings();
    axum::Json(
        json!({"status": "ok", "service": SERVICE, "version": env!("CARGO_PKG_VERSION"),
        "profile": s.get(keys::TIMEOUTS_PROFILE)}),
    )
    .into_response()
}

/// `GET /livez`.
#[utoipa::path(get, path = "/livez", responses((status = 200, description = "process alive", body = super::openapi::ProbeResponse)))]
pub async fn livez() -> Response {
    axum::Json(json!({"status": "ok", "service": SERVICE})).into_response()
}

/// `GET /readyz`.
#[utoipa::path(get, path = "/readyz", responses((status = 200, description = "ready", body = super::openapi::ProbeResponse), (status = 503, description = "starting or draining (`not_ready`)", body = super::openapi::ErrorEnvelope)))]
pub async fn readyz(State(st): State<AppState>) -> Result<Response, ApiError> {
    match st.phase() {
        Phase::Serving => {
            Ok(axum::Json(json!({"status": "ready", "service": SERVICE})).into_response())
        }
        Phase::Starting => Err(ApiError::NotReady {
            message: "Service preload has not completed",
        }),
        Phase::Draining => Err(ApiError::NotReady {
            message: "Service is shutting down and not accepting new requests",
        }),
    }
}

/// `GET /metrics` (when `server.metrics_enabled`).
#[utoipa::path(get, path = "/metrics", responses((status = 200, description = "Prometheus text", body = String, content_type = "text/plain"), (status = 404, description = "metrics disabled", body = super::openapi::ErrorEnvelope)))]
pub async fn metrics(State(st): State<AppState>) -> Result<Response, ApiError> {
    if !st.settings().get(keys::SERVER_METRICS_ENABLED) {
        return Err(ApiError::NotFound);
    }
    Ok((
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        super::metrics::render(&st),
    )
        .into_response())
}

/// `GET /models/loaded`.
#[utoipa::path(get, path = "/models/loaded", security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "resident models", body = super::openapi::ModelsLoadedResponse)))]
pub async fn models_loaded(State(st): State<AppState>) -> Response {
    let s = st.settings();
    let reg = st.engine.registry();
    let loaded = reg.loaded();
    let models: serde_json::Map<String, serde_json::Value> = loaded
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                json!({"models": 1, "tokenizers": 1, "pipelines": 0, "active_requests": v.active_requests,
                       "keep_alive_seconds_remaining": v.keep_alive_seconds_remaining, "resident": true,
                       "loading": false, "footprint_bytes": v.footprint_bytes, "pending_footprint_bytes": 0}),
            )
        })
        .collect();
    axum::Json(json!({
        "default_keep_alive_seconds": s.get(keys::MODELS_KEEP_ALIVE),
        "max_resident_models": s.get(keys::MODELS_MAX_RESIDENT),
        "memory_budget_bytes": null,
        "resident_memory_bytes": loaded.values().map(|v| v.footprint_bytes).sum::<u64>(),
        "pending_memory_bytes": 0,
        "memory_admission_wait_seconds": 0.05,
        "warm_models": [],
        "models": models,
        "served_models": st.engine.served_names(),
        "default_model": st.engine.default_model(),
        "model_policy": {"explicit": !s.get(keys::MODELS_SERVED).is_empty(), "findings": []},
    }))
    .into_response()
}

/// `POST /models/unload`.
#[utoipa::path(post, path = "/models/unload", request_body = super::openapi::UnloadBody, security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "unload result", body = super::openapi::UnloadResponse)))]
pub async fn models_unload(
    State(st): State<AppState>,
    actor: super::audit::Actor,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let mut record = super::audit::Action::new("model.unload");
    let outcome = unload(&st, &body, &mut record);
    super::audit::record(&st, &actor, record, &outcome).await;
    outcome
}

fn unload(
    st: &AppState,
    body: &[u8],
    record: &mut super::audit::Action,
) -> Result<Response, ApiError> {
    let map = parse_object(body)?;
    let req = UnloadRequest::parse(&map)?;
    let reg = st.engine.registry();
    let id = match &req.model_name {
        Some(name) => Some(st.resolve_model(Some(name))?),
        None => None,
    };
    if req.all {
        record.target("all");
        let (n, busy) = reg.unload_all();
        return Ok(axum::Json(
            json!({"unloaded": n > 0, "released": {"models": n, "tokenizers": n, "pipelines": 0},
            "active_models": busy}),
        )
        .into_response());
    }
    let id = id.unwrap_or_default();
    if !id.is_empty() {
        record.target(id.clone());
    }
    let (unloaded, active) = reg.unload(&id);
    let n = usize::from(unloaded);
    Ok(axum::Json(
        json!({"unloaded": unloaded, "model_name": id, "active_requests": active, "loading": false,
        "released": {"models": n, "tokenizers": n, "pipelines": 0}}),
    )
    .into_response())
}
