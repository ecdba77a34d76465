//! The router and its one middleware stack.
//!
//! # Order
//! Requests pass the layers top to bottom (outermost first):
//! 0. the door (`door.rs`), in front of the router: while a model's breaker is open, a
//!    request for that model is refused there (after the Host, cross-site and auth checks
//!    and the body's read, as below), without the router, validation or admission;
//! 1. panic catcher — a panic anywhere becomes a 500 `internal_error` envelope;
//! 2. CORS — only the configured exact origins (and the webview's in the desktop app); it
//!    answers a browser's preflight (`OPTIONS` with `Origin` and
//!    `Access-Control-Request-Method`) itself and adds its headers to every other answer,
//!    refusals of the layers below included (so a page on an allowed origin can read a 401);
//!    any other `OPTIONS` skips it and is answered below like every method (`PreflightOnly`);
//! 3. request context — request id, access log, request metrics, and the body rules
//!    (`limits.max_request_bytes` and the read timeout, enforced where the body is read:
//!    `middleware::Body`, the one body extractor, 413 `payload_too_large` / 408); inside it,
//!    before anything below runs: trusted Host (400 `bad_request` for any other Host), then
//!    cross-site refusal (an `Origin` that is not this server or an allowed origin: 403
//!    `origin_not_allowed`; a state-changing body not declared JSON: 415), then auth (a peer
//!    over its failed-authentication limit first: 429, key `auth`; then token and scope:
//!    401 / 403);
//! 4. for a `POST` to a model route, still inside the request context: admission — the body
//!    read within its timeout (408), then draining (503 `not_ready`), rate limits (429),
//!    priority admission with watermarks (503 `backpressure`);
//! 5. the handler — validation (422), then the engine: breaker, bulkhead, deadline, retries.
//!
//! 1–3 are composed in this order in one `tower::ServiceBuilder` (outermost first).

use axum::extract::State;
use axum::http::{HeaderName, Method};
use axum::middleware::from_fn_with_state as mw;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::ApiError;
use super::state::AppState;
use super::{
    admin, fhir, front, history, logs, middleware, models_api, ops, pii, reidentify, stream,
};
use crate::settings::keys;

fn cors(st: &AppState) -> CorsLayer {
    let origins: Vec<axum::http::HeaderValue> = st
        .settings()
        .get(keys::SECURITY_CORS_ORIGINS)
        .iter()
        .map(|o| o.trim_end_matches('/'))
        .chain(
            st.desktop
                .then_some(middleware::DESKTOP_ORIGINS)
                .into_iter()
                .flatten(),
        )
        .filter_map(|o| o.parse().ok())
        .collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
        .allow_headers([
            axum::http::header::ACCEPT,
            axum::http::header::CONTENT_TYPE,
            axum::http::header::AUTHORIZATION,
            HeaderName::from_static("x-request-id"),
            HeaderName::from_static("x-api-key"),
            HeaderName::from_static("x-phiguard-priority"),
        ])
}

/// Whether `req` is a browser's CORS preflight: an `OPTIONS` with an `Origin` and an
/// `Access-Control-Request-Method` (the Fetch standard's definition).
fn is_preflight<B>(req: &axum::http::Request<B>) -> bool {
    req.method() == Method::OPTIONS
        && req.headers().contains_key(axum::http::header::ORIGIN)
        && req
            .headers()
            .contains_key(axum::http::header::ACCESS_CONTROL_REQUEST_METHOD)
}

/// The CORS layer for browsers' preflights and every method but `OPTIONS`; any other
/// `OPTIONS` skips it and meets the request context like every method (request id, safety
/// headers, Host and auth checks, then 404 or 405 with `Allow`). `tower_http::cors` takes
/// every `OPTIONS` for a preflight and answers it `200` itself, so without this an
/// `OPTIONS` to any path, with any `Host`, got an empty `200` with none of the headers
/// `docs/errors.md` promises on every response.
#[derive(Clone)]
struct PreflightOnly<S> {
    cors: tower_http::cors::Cors<S>,
    inner: S,
}

/// The future of a preflight's answer, with the safety headers added.
type PreflightFuture<F, E> = futures::future::Map<
    F,
    fn(Result<axum::response::Response, E>) -> Result<axum::response::Response, E>,
>;

impl<S> tower::Service<axum::extract::Request> for PreflightOnly<S>
where
    S: tower::Service<axum::extract::Request, Response = axum::response::Response> + Clone,
{
    type Response = axum::response::Response;
    type Error = S::Error;
    type Future = futures::future::Either<
        futures::future::Either<
            <tower_http::cors::Cors<S> as tower::Service<axum::extract::Request>>::Future,
            PreflightFuture<
                <tower_http::cors::Cors<S> as tower::Service<axum::extract::Request>>::Future,
                S::Error,
            >,
        >,
        S::Future,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        match self.cors.poll_ready(cx) {
            std::task::Poll::Ready(Ok(())) => self.inner.poll_ready(cx),
            other => other,
        }
    }

    fn call(&mut self, req: axum::extract::Request) -> Self::Future {
        use futures::future::Either::{Left, Right};
        if req.method() != Method::OPTIONS {
            Left(Left(self.cors.call(req)))
        } else if is_preflight(&req) {
            // A preflight's answer has no body, but gets the safety headers all the same.
            let safe: fn(_) -> _ = |r: Result<axum::response::Response, S::Error>| {
                r.map(|mut resp| {
                    middleware::set_safety_headers(resp.headers_mut());
                    resp
                })
            };
            Left(Right(futures::FutureExt::map(self.cors.call(req), safe)))
        } else {
            Right(self.inner.call(req))
        }
    }
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> axum::response::Response {
    tracing::error!("a request handler panicked");
    ApiError::Internal.into_response()
}

/// Every documented route, registered once: each handler's `#[utoipa::path]` gives both
/// its axum route and its OpenAPI operation, so the router and `/openapi.json` cannot
/// drift. Two groups, because the model routes' `POST`s pass admission.
struct Documented {
    model: OpenApiRouter<AppState>,
    rest: OpenApiRouter<AppState>,
}

fn documented() -> Documented {
    let model = OpenApiRouter::new()
        .routes(routes!(pii::analyze))
        .routes(routes!(pii::pii_extract))
        .routes(routes!(stream::pii_extract_stream))
        .routes(routes!(pii::pii_deidentify))
        .routes(routes!(fhir::fhir_deidentify))
        .routes(routes!(fhir::fhir_deidentify_operation))
        .routes(routes!(stream::pii_deidentify_stream));
    let rest = OpenApiRouter::new()
        .routes(routes!(front::index))
        .routes(routes!(front::docs))
        .routes(routes!(ops::health))
        .routes(routes!(ops::livez))
        .routes(routes!(ops::readyz))
        .routes(routes!(ops::metrics))
        .routes(routes!(ops::models_loaded))
        .routes(routes!(ops::models_unload))
        .routes(routes!(admin::admin_status))
        .routes(routes!(
            admin::admin_settings_get,
            admin::admin_settings_put
        ))
        .routes(routes!(admin::admin_breaker_action))
        .routes(routes!(
            admin::admin_tokens_list,
            admin::admin_tokens_create
        ))
        .routes(routes!(admin::admin_tokens_revoke))
        .routes(routes!(admin::admin_events))
        .routes(routes!(admin::admin_audit))
        .routes(routes!(history::admin_history))
        .routes(routes!(logs::admin_logs))
        .routes(routes!(reidentify::admin_reidentify))
        .routes(routes!(admin::admin_eval))
        .routes(routes!(models_api::admin_models))
        .routes(routes!(models_api::admin_models_pull))
        .routes(routes!(models_api::admin_models_cancel))
        .routes(routes!(models_api::admin_models_verify))
        .routes(routes!(models_api::admin_models_default))
        .routes(routes!(models_api::admin_models_delete));
    Documented { model, rest }
}

impl Documented {
    /// The routes with the model group behind `admission`, the finished document, and the
    /// model group's paths.
    fn split(
        self,
        admission: impl FnOnce(OpenApiRouter<AppState>) -> OpenApiRouter<AppState>,
    ) -> (Router<AppState>, utoipa::openapi::OpenApi, Vec<String>) {
        let model_paths: Vec<String> = self
            .model
            .get_openapi()
            .paths
            .paths
            .keys()
            .cloned()
            .collect();
        let (router, mut doc) = OpenApiRouter::with_openapi(super::openapi::ApiDoc::openapi())
            .merge(admission(self.model))
            .merge(self.rest)
            .split_for_parts();
        super::openapi::finish(&mut doc, &model_paths);
        (router, doc, model_paths)
    }
}

/// The OpenAPI document of every documented route (as `/openapi.json` serves it before the
/// served model names are filled in).
pub fn api_doc() -> utoipa::openapi::OpenApi {
    documented().split(|model| model).1
}

/// Builds the application over `st`, the router behind the door; `max_body` is the request
/// body limit.
pub(super) fn app(st: AppState, max_body: usize) -> super::door::Door {
    // Admission runs inside `context`, for the `POST`s of the model routes (one layer fewer).
    let (mut router, doc, model_paths) = documented().split(|model| model);
    let model_routes: std::sync::Arc<[String]> = model_paths.into();
    let doc = std::sync::Arc::new(doc);
    if crate::engine::Faults::ENABLED {
        router = router.route(
            "/admin/faults",
            get(admin::admin_faults_get).put(admin::admin_faults_put),
        );
    }
    router = router.route("/docs/", get(front::docs)).route(
        "/openapi.json",
        get(move |state: State<AppState>| super::openapi::openapi_json(state, doc)),
    );
    for (path, _, _) in front::ASSETS {
        router = router.route(path, get(move || async move { front::asset(path) }));
    }
    if st.settings().get(keys::SERVER_UI) {
        let files = tower::ServiceBuilder::new()
            .layer(axum::middleware::from_fn(front::ui_slash))
            .service(tower_http::services::ServeDir::new(ui_dir()));
        router = router.nest_service("/ui", files);
    }
    // One `layer` call with the whole stack: axum boxes each `Router::layer` around every
    // route, and a `from_fn` layer clones its inner service on every request, so eight
    // separate calls cloned a chain of eight boxed services at each of eight levels (about
    // 40 % of a refused request's allocations). Composed here, the stack is boxed once and
    // its clones are of plain values. For the same reason the body rules and auth are part
    // of `context` rather than layers of their own, and CORS (whose lists a clone copies)
    // sits outside it.
    let front = middleware::Front {
        st: st.clone(),
        max_body,
        model_routes,
    };
    let stack = tower::ServiceBuilder::new()
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(tower::layer::layer_fn({
            let cors = cors(&st);
            move |inner: _| PreflightOnly {
                cors: tower::Layer::layer(&cors, Clone::clone(&inner)),
                inner,
            }
        }))
        .layer(mw(front.clone(), middleware::context));
    let router = router
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(stack)
        .with_state(st);
    super::door::Door::new(front, router)
}

/// The probe port's application (`server.probe_port`): `/livez`, `/readyz`, `/health` and
/// `/metrics`, by the same handlers behind the same request context as on the main port
/// (request id, access log, metrics, safety headers, Host and auth rules), and nothing else:
/// any other path is answered as an unknown path is on the main port (401 without a token,
/// then 404). No CORS and no door: no browser and no model request has business there.
pub(super) fn probes(st: AppState, max_body: usize) -> Router {
    let front = middleware::Front {
        st: st.clone(),
        max_body,
        model_routes: std::sync::Arc::from([]),
    };
    let stack = tower::ServiceBuilder::new()
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(mw(front, middleware::context));
    Router::new()
        .route("/livez", get(ops::livez))
        .route("/readyz", get(ops::readyz))
        .route("/health", get(ops::health))
        .route("/metrics", get(ops::metrics))
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(stack)
        .with_state(st)
}

/// Where the dashboard files are: `PHIGUARD_UI_DIR`, beside the executable, or the source
/// tree's `ui/`.
pub(crate) fn ui_dir() -> std::path::PathBuf {
    if let Some(d) = std::env::var_os("PHIGUARD_UI_DIR") {
        return d.into();
    }
    if let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|p| p.to_path_buf()))
    {
        for cand in [exe_dir.join("ui"), exe_dir.join("../share/phiguard/ui")] {
            if cand.join("index.html").exists() {
                return cand;
            }
        }
    }
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/ui"))
}
