//! Operational routes: health, liveness, readiness, metrics, `/models/loaded`,
//! `/models/unload`, and the OpenAPI document.

use super::api::UnloadRequest;
use super::error::ApiError;
use super::middleware::Body;
use super::responses::{
    HealthResponse, LoadedModel, ModelPolicy, ModelsLoadedResponse, ProbeResponse, Released,
    UnloadResponse,
};
use super::state::{AppState, Phase};
use super::validate::parse;
use crate::engine::DefaultModelProblem;
use crate::settings::keys;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// OpenMed's service name, kept for client compatibility.
pub const SERVICE: &str = "openmed-rest";

/// `GET /health`.
#[utoipa::path(get, path = "/health", responses((status = 200, description = "service is up", body = HealthResponse)))]
pub async fn health(State(st): State<AppState>) -> Response {
    let s = st.settings();
    axum::Json(HealthResponse {
        status: "ok",
        service: SERVICE,
        version: env!("CARGO_PKG_VERSION"),
        profile: s.get(keys::TIMEOUTS_PROFILE).to_string(),
    })
    .into_response()
}

/// `GET /livez`.
#[utoipa::path(get, path = "/livez", responses((status = 200, description = "process alive", body = ProbeResponse)))]
pub async fn livez() -> Response {
    axum::Json(ProbeResponse {
        status: "ok",
        service: SERVICE,
    })
    .into_response()
}

/// `GET /readyz`.
#[utoipa::path(get, path = "/readyz", responses((status = 200, description = "ready", body = ProbeResponse), (status = 503, description = "starting, draining, or the default model is not installed or does not load (`not_ready`)", body = super::error::ErrorEnvelope)))]
pub async fn readyz(State(st): State<AppState>) -> Result<Response, ApiError> {
    match st.phase() {
        // A replica whose default model is not installed or does not load answers every
        // request that names no model with an error; a load balancer should send the work
        // elsewhere until it serves again.
        Phase::Serving => match st.engine.default_model_problem() {
            Some(DefaultModelProblem::LoadFailed) => Err(ApiError::NotReady {
                message: "The default model could not be loaded; the service retries it",
            }),
            Some(DefaultModelProblem::NotInstalled) => Err(ApiError::NotReady {
                message: "The default model (models.default) is not installed; install it or set an installed model",
            }),
            None => Ok(axum::Json(ProbeResponse {
                status: "ready",
                service: SERVICE,
            })
            .into_response()),
        },
        Phase::Starting => Err(ApiError::NotReady {
            message: "Service preload has not completed",
        }),
        Phase::Draining => Err(ApiError::NotReady {
            message: "Service is shutting down and not accepting new requests",
        }),
    }
}

/// `GET /metrics` (when `server.metrics_enabled`).
#[utoipa::path(get, path = "/metrics", responses((status = 200, description = "Prometheus text", body = String, content_type = "text/plain"), (status = 404, description = "metrics disabled", body = super::error::ErrorEnvelope)))]
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
#[utoipa::path(get, path = "/models/loaded", security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "resident models", body = ModelsLoadedResponse)))]
pub async fn models_loaded(State(st): State<AppState>) -> Response {
    let s = st.settings();
    let reg = st.engine.registry();
    let loaded = reg.loaded();
    let models = loaded
        .iter()
        .map(|(k, v)| {
            let model = LoadedModel {
                models: 1,
                tokenizers: 1,
                pipelines: 0,
                active_requests: v.active_requests,
                keep_alive_seconds_remaining: v.keep_alive_seconds_remaining,
                resident: true,
                loading: false,
                footprint_bytes: v.footprint_bytes,
                pending_footprint_bytes: 0,
                idle_seconds: v.idle_seconds,
            };
            (k.clone(), model)
        })
        .collect();
    axum::Json(ModelsLoadedResponse {
        default_keep_alive_seconds: s.get(keys::MODELS_KEEP_ALIVE),
        max_resident_models: s.get(keys::MODELS_MAX_RESIDENT),
        memory_budget_bytes: None,
        resident_memory_bytes: loaded.values().map(|v| v.footprint_bytes).sum::<u64>(),
        pending_memory_bytes: 0,
        memory_admission_wait_seconds: 0.05,
        warm_models: Vec::new(),
        models,
        served_models: st.engine.served_names(),
        default_model: st.engine.default_model(),
        model_policy: ModelPolicy {
            explicit: !s.get(keys::MODELS_SERVED).is_empty(),
            findings: Vec::new(),
        },
    })
    .into_response()
}

/// `POST /models/unload`.
#[utoipa::path(post, path = "/models/unload", request_body = UnloadRequest, security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "unload result", body = UnloadResponse)))]
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
    let req: UnloadRequest = parse(body, super::pii::limits(st))?;
    let reg = st.engine.registry();
    let id = match &req.model_name {
        Some(name) => Some(st.resolve_model(Some(name))?),
        None => None,
    };
    if req.all {
        record.target("all");
        let (n, busy) = reg.unload_all();
        return Ok(axum::Json(UnloadResponse {
            unloaded: n > 0,
            model_name: None,
            active_requests: None,
            loading: None,
            released: Released::models(n),
            active_models: Some(busy),
        })
        .into_response());
    }
    let id = id.unwrap_or_default();
    if !id.is_empty() {
        record.target(id.clone());
    }
    let (unloaded, active) = reg.unload(&id);
    let n = usize::from(unloaded);
    Ok(axum::Json(UnloadResponse {
        unloaded,
        model_name: Some(id),
        active_requests: Some(active),
        loading: Some(false),
        released: Released::models(n),
        active_models: None,
    })
    .into_response())
}
