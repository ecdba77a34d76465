//! The request middleware: request context (id, access log, metrics, the no-store and
//! nosniff headers, and within it the trusted-Host and cross-site checks on Origin and
//! Content-Type, then auth), and the admission gate of model routes (body read first, then
//! readiness, rate limits, priority admission, drain accounting). The order they run in is
//! written down where the router is built (`router.rs`).

use std::sync::atomic::Ordering;

use std::time::{Duration, Instant};
use tracing::Instrument;

use axum::extract::{FromRequest, MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use super::error::{ApiError, ErrorCode};
use super::refusals;
use super::state::AppState;
use std::sync::Arc;

use crate::guard::{AdmissionPermit, GuardError, Priority};
use crate::secrets::Scope;
use crate::settings::{keys, Settings};

tokio::task_local! {
    /// The request being handled: its id, for error envelopes, and the code of the error
    /// it was answered with, for the access log.
    pub static REQUEST: RequestScope;
}

/// What [`REQUEST`] holds. The error code comes back through it rather than as a response
/// extension: the first extension of a response allocates its map, on every refusal.
pub struct RequestScope {
    /// The request id.
    pub id: Arc<str>,
    error: std::cell::Cell<&'static str>,
}

impl RequestScope {
    pub(super) fn new(id: Arc<str>) -> Self {
        Self {
            id,
            error: std::cell::Cell::new(""),
        }
    }

    /// Records the code of the error the request is answered with.
    pub fn set_error(&self, code: &'static str) {
        self.error.set(code);
    }
}

/// Who is calling, attached by [`context`]'s auth check. The token id is shared, not copied:
/// the access log, admission's rate-limit key and the handler each read it.
#[derive(Clone, Debug)]
pub struct Caller {
    /// Token id (`client`, `admin`, `tok_…`, or `anonymous` with auth off).
    pub token_id: Arc<str>,
    /// Scope.
    pub scope: Scope,
}

/// The outcome of [`gate`] for a request the door (`door.rs`) checked and then handed to the
/// router: [`context`] takes it instead of running the checks again. Only the door inserts
/// it; a request from the network arrives with no extensions.
#[derive(Clone, Debug)]
pub(super) struct Gated(pub(super) Option<Caller>);

/// The route template the request matched (`MatchedPath` holds an `Arc<str>`: a clone
/// allocates nothing), or `unknown`.
struct Route(Option<MatchedPath>);

impl Route {
    fn of(req: &Request) -> Self {
        Route(req.extensions().get::<MatchedPath>().cloned())
    }

    fn as_str(&self) -> &str {
        self.0.as_ref().map_or("unknown", MatchedPath::as_str)
    }
}

/// A caller's `X-Request-Id` is kept only when it has the shape of a generated id: a UUID
/// (`8-4-4-4-12` hex digits), a ULID (26 Crockford base-32 characters) or a W3C trace id
/// (32 hex digits). Anything else (a name, an MRN, free text) could carry PHI into every log
/// line and header, so it is replaced by a fresh UUID.
fn valid_request_id(v: &HeaderValue) -> Option<Arc<str>> {
    let s = v.to_str().ok()?;
    let hex = |part: &str| part.bytes().all(|b| b.is_ascii_hexdigit());
    let uuid =
        s.len() == 36 && s.split('-').map(str::len).eq([8, 4, 4, 4, 12]) && s.split('-').all(hex);
    let ulid = s.len() == 26
        && s.bytes().all(|b| {
            let b = b.to_ascii_uppercase();
            b.is_ascii_digit() || (b.is_ascii_uppercase() && !b"ILOU".contains(&b))
        });
    let trace = s.len() == 32 && hex(s);
    (uuid || ulid || trace).then(|| Arc::from(s))
}

/// A fresh request id: a v4 UUID, formatted on the stack and allocated once.
fn new_request_id() -> Arc<str> {
    let mut buf = uuid::Uuid::encode_buffer();
    Arc::from(&*uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buf))
}

/// Whether a response may be cached: only the fixed assets of `/docs` say so themselves.
/// Everything else (results carrying PHI, admin state) is `no-store`.
pub(super) fn set_safety_headers(headers: &mut HeaderMap) {
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    headers
        .entry(header::X_CONTENT_TYPE_OPTIONS)
        .or_insert(HeaderValue::from_static("nosniff"));
}

/// What [`context`] needs besides the shared state: the request body limit
/// (`limits.max_request_bytes`, fixed at start) and the model routes, whose `POST`s pass
/// [`admission`].
#[derive(Clone)]
pub struct Front {
    /// The shared state.
    pub st: AppState,
    /// The request body limit in bytes.
    pub max_body: usize,
    /// The route templates of the model routes (`/pii/extract`, ...).
    pub model_routes: Arc<[String]>,
}

impl Front {
    /// The body rules in force under `settings` (the timeout is a live setting).
    pub(super) fn body_rules(&self, settings: &Settings) -> BodyRules {
        BodyRules {
            limit: self.max_body,
            timeout: Duration::from_secs_f64(settings.get(keys::SERVER_BODY_TIMEOUT_SECONDS)),
        }
    }
}

/// Request id (echoed when well-formed, else a fresh UUID), access log and request metrics,
/// and the `Cache-Control: no-store` / `X-Content-Type-Options: nosniff` headers on every
/// response that does not set its own; inside them the trusted-Host, cross-site and auth
/// checks, in that order. No log line carries a body, a path beyond its route template, or a
/// model name.
///
/// Auth is a check here rather than a layer of its own, and a model route's `POST` goes
/// through [`admission`] from here rather than from a route layer: each `from_fn` layer
/// clones the stack below it on every request, and the access log wants the caller anyway.
pub async fn context(State(front): State<Front>, mut req: Request, next: Next) -> Response {
    let st = &front.st;
    // One snapshot of the live settings for the request's own checks.
    let settings = st.settings();
    req.extensions_mut().insert(front.body_rules(&settings));
    let route = Route::of(&req);
    let route = route.as_str();
    let method = req.method().clone();
    let started = Instant::now();
    let (id, _inflight) = begin(st, req.headers(), route);
    // Every event of this request, in the guard and on the inference workers too, is logged
    // inside this span, so it carries the request id.
    let span = tracing::info_span!(target: "phiguard::request", "request", request_id = %id);
    // Once per request: a request the door passed on was checked there.
    let gate = match req.extensions_mut().remove::<Gated>() {
        Some(Gated(caller)) => Ok(caller),
        None => gate(st, &settings, &req, route, peer_of(&req)),
    };
    drop(settings);
    let caller = gate.as_ref().ok().cloned().flatten();
    // Decided once: the metrics count model routes apart, and their `POST`s pass admission.
    let model_route = front.model_routes.iter().any(|r| r == route);
    let admit = (model_route && req.method() == Method::POST).then(|| {
        let token = caller
            .as_ref()
            .map_or_else(|| Arc::from(""), |c| Arc::clone(&c.token_id));
        (st.clone(), token)
    });
    // An admin change goes ahead only where its audit record can be written: a hospital's
    // trail must not miss one (a settings change, a forced breaker and a new admin token
    // were applied unrecorded while the log could not be written).
    let audited =
        (changes_state(&method) && required_scope(route) == Some(Scope::Admin)).then(|| st.clone());
    let handled = async move {
        match gate {
            Ok(caller) => {
                if let Some(st) = audited {
                    let ready = tokio::task::spawn_blocking(move || st.audit.writable()).await;
                    if !matches!(ready, Ok(Ok(()))) {
                        tracing::error!(
                            "an admin change was refused: the audit log cannot be written"
                        );
                        return ApiError::Internal.into_response();
                    }
                }
                if let Some(caller) = caller {
                    req.extensions_mut().insert(caller);
                }
                match admit {
                    Some((st, token)) => admission(st, token, req, next).await,
                    None => next.run(req).await,
                }
            }
            Err(refused) => refused.into_response(),
        }
    };
    let scoped = REQUEST.scope(
        RequestScope::new(Arc::clone(&id)),
        handled.instrument(span.clone()),
    );
    tokio::pin!(scoped);
    let mut resp = (&mut scoped).await;
    let recorded = scoped.take_value().map_or("", |r| r.error.get());
    let _in_request = span.enter();
    let answered = Answered {
        id: &id,
        route,
        model_route,
        method: &method,
        started,
        caller: caller.as_ref().map_or("", |c| &*c.token_id),
        error: recorded,
        series: None,
    };
    answered.close(st, &mut resp);
    resp
}

/// A request that began: its id, and the inflight gauge counted (but for `/metrics`) for
/// as long as the returned [`Inflight`] lives. What [`context`] and the door (`door.rs`) do
/// first with every request they answer.
pub(super) fn begin(st: &AppState, headers: &HeaderMap, route: &str) -> (Arc<str>, Inflight) {
    let gauge = (route != "/metrics").then(|| st.metrics.inflight.clone());
    if let Some(g) = &gauge {
        g.inc();
    }
    let id = headers
        .get("x-request-id")
        .and_then(valid_request_id)
        .unwrap_or_else(new_request_id);
    (id, Inflight(gauge))
}

/// A request counted in the inflight gauge, until dropped: when it is answered, and also
/// when its client goes first and the request's future is dropped unanswered (before, the
/// gauge kept such a request for ever: one more for every client that hung up).
pub(super) struct Inflight(Option<prometheus::IntGauge>);

impl Drop for Inflight {
    fn drop(&mut self) {
        if let Some(g) = &self.0 {
            g.dec();
        }
    }
}

/// What is known of a request once its answer is ready: the fields of its access log line
/// and its request metrics.
pub(super) struct Answered<'a> {
    /// The request id.
    pub id: &'a str,
    /// The route template (or `unknown`).
    pub route: &'a str,
    /// Whether the route is a model route.
    pub model_route: bool,
    /// The method.
    pub method: &'a Method,
    /// When [`begin`] ran.
    pub started: Instant,
    /// The caller's token id, `""` when none.
    pub caller: &'a str,
    /// The error code the answer recorded, `""` when none.
    pub error: &'static str,
    /// The route's `503` series when the caller holds them (the door).
    pub series: Option<&'a super::metrics::RouteSeries>,
}

impl Answered<'_> {
    /// Finishes the answer to a request [`begin`] counted: the request metrics, the
    /// `X-Request-Id` and safety headers, and the access log line.
    pub(super) fn close(self, st: &AppState, resp: &mut Response) {
        let Answered {
            id,
            route,
            model_route,
            method,
            started,
            caller,
            error,
            series,
        } = self;
        let elapsed = started.elapsed();
        let status = resp.status().as_u16();
        let method_name = method_name(method);
        if route != "/metrics" {
            match series {
                Some(series) if status == 503 && series.route == route => {
                    st.metrics.observe_unavailable(series, elapsed);
                }
                _ => st.metrics.observe(route, model_route, status, elapsed),
            }
        }
        if let Ok(v) = HeaderValue::from_str(id) {
            resp.headers_mut().insert("x-request-id", v);
        }
        set_safety_headers(resp.headers_mut());
        // An error answered outside the request's task (none today) still carries its code.
        let code = match error {
            "" => resp.extensions().get::<ErrorCode>().map_or("", |c| c.0),
            c => c,
        };
        // A refusal's line is in full only as the first of its kind in a while; the rest
        // are counted (`refusals.rs`).
        let counted = refusals::is_refusal(status) && {
            let now = st.clock.now();
            let (line, closed) = st
                .refusals
                .note(method_name, route, status, code, caller, now);
            if let Some(closed) = closed {
                closed.log();
            }
            line == refusals::Line::Counted
        };
        // The dashboard polls these every few seconds: at info they would fill the log it
        // shows.
        let polled = matches!(route, "/admin/logs" | "/admin/history") && status < 400;
        macro_rules! access {
            ($level:expr) => {
                tracing::event!(target: "phiguard::access", $level, request_id = %id, method = method_name,
                    route = %route, status, duration_ms = elapsed.as_secs_f64() * 1000.0, error = code,
                    token = %caller, "request")
            };
        }
        if counted || polled || method == Method::OPTIONS {
            access!(tracing::Level::DEBUG);
        } else if status >= 500 {
            access!(tracing::Level::WARN);
        } else {
            access!(tracing::Level::INFO);
        }
    }
}

/// The checks every request passes before its route runs, in this order: trusted Host,
/// cross-site, auth (see each). The [`Caller`] of a route that needs one.
/// `peer` is the connection's address, for the failed-authentication limit.
pub(super) fn gate<B>(
    st: &AppState,
    settings: &Settings,
    req: &axum::http::Request<B>,
    route: &str,
    peer: Option<std::net::IpAddr>,
) -> Result<Option<Caller>, ApiError> {
    trusted_host(settings, req)?;
    cross_site(st, settings, req)?;
    authorize(st, settings, req, route, peer)
}

/// Host patterns: exact names, or `*.domain` for subdomains (ASCII case-insensitive).
/// `*.domain` does not take `domain` itself, as OpenMed's (Starlette's) check does not: a
/// drop-in must not trust a host its admin did not list.
fn host_allowed(host: &str, trusted: &[String]) -> bool {
    let host = host.as_bytes();
    trusted.iter().any(|t| match t.strip_prefix("*.") {
        Some(suffix) => {
            let suffix = suffix.as_bytes();
            host.len() > suffix.len()
                && host[host.len() - suffix.len() - 1] == b'.'
                && host[host.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
        }
        None => host.eq_ignore_ascii_case(t.as_bytes()),
    })
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return match host.find(']') {
            Some(i) => &host[..=i],
            None => host,
        };
    }
    match host.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
}

/// 400 unless the Host header is trusted (DNS-rebinding protection for a loopback service).
///
/// Probes and `/metrics` are exempt: kubelets and Prometheus address pods by IP, and these
/// routes carry no patient data.
fn trusted_host<B>(settings: &Settings, req: &axum::http::Request<B>) -> Result<(), ApiError> {
    if matches!(
        req.uri().path(),
        "/health" | "/livez" | "/readyz" | "/metrics"
    ) {
        return Ok(());
    }
    let trusted = settings.get(keys::SECURITY_TRUSTED_HOSTS);
    if hosts_trusted(req.headers(), req.uri(), trusted) {
        Ok(())
    } else {
        Err(ApiError::BadRequest {
            message: "Invalid host header",
            reason: "Invalid host header",
        })
    }
}

/// Whether every name a request gives is in `trusted`: more than one `Host` header is
/// refused (RFC 9112 §3.2), and a target in absolute form (`POST http://name/...`) names its
/// host too, which a proxy in front would follow whatever `Host` says. Also asked by
/// `PUT /admin/settings` of a new `security.trusted_hosts`, so that a change cannot lock out
/// the request making it.
pub(super) fn hosts_trusted(
    headers: &axum::http::HeaderMap,
    uri: &axum::http::Uri,
    trusted: &[String],
) -> bool {
    let mut hosts = headers.get_all(header::HOST).iter();
    let from_header = match (hosts.next(), hosts.next()) {
        (_, Some(_)) => return false,
        (Some(h), None) => match h.to_str() {
            Ok(h) => Some(strip_port(h)),
            Err(_) => return false,
        },
        (None, None) => None,
    };
    let from_target = uri.host();
    if from_header.is_none() && from_target.is_none() {
        return false;
    }
    [from_header, from_target]
        .into_iter()
        .flatten()
        .all(|h| host_allowed(h, trusted))
}

/// The desktop dashboard's own origins (Tauri's webview on Linux/macOS and Windows), allowed
/// only when the server runs inside the desktop app.
pub(crate) const DESKTOP_ORIGINS: [&str; 3] = [
    "tauri://localhost",
    "http://tauri.localhost",
    "https://tauri.localhost",
];

/// Whether a browser `Origin` may call this server: the server's own origin (its authority is
/// the request's `Host`, which [`trusted_host`] has checked), a configured CORS origin, or,
/// in the desktop app, the webview's origins. `null` (sandboxed frames, files) never.
fn origin_allowed(origin: &str, host: Option<&str>, allowed: &[String], desktop: bool) -> bool {
    let origin = origin.trim_end_matches('/');
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    if let (Some(a), Some(h)) = (authority, host) {
        if a.eq_ignore_ascii_case(h) {
            return true;
        }
    }
    allowed
        .iter()
        .any(|o| o.trim_end_matches('/').eq_ignore_ascii_case(origin))
        || (desktop && DESKTOP_ORIGINS.contains(&origin))
}

/// The method as the logs name it: one of the methods HTTP defines, or `OTHER`. A client may
/// send any token as a method (`curl -X Anything`), and nothing a request supplies reaches a
/// log line; the closed set also keeps the refusal kinds (`refusals.rs`) few.
pub(super) fn method_name(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "OTHER",
    }
}

/// Whether a method changes state (and so must not be sendable by another site's page).
fn changes_state(m: &Method) -> bool {
    matches!(
        *m,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

/// A body is acceptable when it is declared JSON (`application/json`, `application/*+json`,
/// any parameters), or when there is no body and no declared type. A page on another site can
/// send `text/plain`, form encodings or an untyped body without a preflight, never JSON.
fn json_or_empty(headers: &HeaderMap) -> bool {
    match headers.get(header::CONTENT_TYPE) {
        Some(v) => {
            let essence = v
                .to_str()
                .unwrap_or("")
                .split(';')
                .next()
                .unwrap_or("")
                .trim();
            // Compared without a lowercased copy: this runs on every request.
            let is = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
            let ends = |a: &str, suffix: &str| {
                a.len() >= suffix.len()
                    && a.is_char_boundary(a.len() - suffix.len())
                    && is(&a[a.len() - suffix.len()..], suffix)
            };
            // JSON lines too (`application/fhir+ndjson`, `application/x-ndjson`): like
            // JSON, no page can send them without a preflight.
            let sub = essence
                .split_once('/')
                .filter(|(kind, _)| is(kind, "application"))
                .map(|(_, sub)| sub);
            sub.is_some_and(|sub| {
                is(sub, "json")
                    || ends(sub, "+json")
                    || ends(sub, "+ndjson")
                    || is(sub, "x-ndjson")
                    || is(sub, "ndjson")
            })
        }
        None => {
            !headers.contains_key(header::TRANSFER_ENCODING)
                && headers
                    .get(header::CONTENT_LENGTH)
                    .is_none_or(|l| l.as_bytes() == b"0")
        }
    }
}

/// Refuses what a page on another site could make the user's browser send, with auth on or
/// off (with auth off on loopback, such a page could otherwise force breakers open or mint
/// tokens): a request whose `Origin` is not allowed (403 `origin_not_allowed`), and a
/// state-changing request whose body is not declared JSON (415 `unsupported_media_type`).
/// Requests without `Origin` (curl, SDKs, the desktop shell's own calls) pass the first check.
fn cross_site<B>(
    st: &AppState,
    settings: &Settings,
    req: &axum::http::Request<B>,
) -> Result<(), ApiError> {
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok());
        let ok = origin.to_str().is_ok_and(|o| {
            origin_allowed(
                o,
                host,
                settings.get(keys::SECURITY_CORS_ORIGINS),
                st.desktop,
            )
        });
        if !ok {
            return Err(ApiError::OriginNotAllowed);
        }
    }
    if changes_state(req.method()) && !json_or_empty(req.headers()) {
        return Err(ApiError::UnsupportedMediaType);
    }
    Ok(())
}

/// The scope a route needs; `None` for open routes.
pub(crate) fn required_scope(route: &str) -> Option<Scope> {
    if route.starts_with("/admin/") || route == "/admin" {
        return Some(Scope::Admin);
    }
    match route {
        "/health" | "/livez" | "/readyz" | "/metrics" | "/openapi.json" | "/" | "/docs" => None,
        r if r.starts_with("/docs/") => None,
        r if r.starts_with("/ui") => None,
        // Unknown paths need authentication too (401 precedes 404, as OpenMed's deny-by-default).
        _ => Some(Scope::Client),
    }
}

fn presented_token(headers: &HeaderMap) -> Option<&str> {
    if let Some(k) = headers.get("x-api-key").and_then(|v| v.to_str().ok()) {
        if !k.trim().is_empty() {
            return Some(k.trim());
        }
    }
    let auth = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, value) = auth.split_once(' ')?;
    let known = ["bearer", "apikey", "api-key"]
        .iter()
        .any(|s| scheme.eq_ignore_ascii_case(s));
    if known && !value.trim().is_empty() {
        Some(value.trim())
    } else {
        None
    }
}

/// The `token` parameter of a query string, percent-decoded (tokens are URL-safe, but
/// clients may encode them) by `form_urlencoded`, which takes any bytes without panicking.
pub fn query_token(query: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty())
}

/// Bearer / X-API-Key check and scope: the [`Caller`] of a route that needs one, `None` for
/// open routes. A peer address that has spent its failed authentications
/// (`security.auth_failure_*`) gets 429 `rate_limited` before its token is compared; a wrong
/// token counts against it, a missing one does not.
fn authorize<B>(
    st: &AppState,
    settings: &Settings,
    req: &axum::http::Request<B>,
    route: &str,
    peer: Option<std::net::IpAddr>,
) -> Result<Option<Caller>, ApiError> {
    // The dashboard's static files are open (the page asks for the admin token); nested
    // services carry no route template, so the path decides.
    let path = req.uri().path();
    if path == "/ui" || path.starts_with("/ui/") {
        return Ok(None);
    }
    let Some(needed) = required_scope(route) else {
        return Ok(None);
    };
    let caller = if st.auth_off {
        Caller {
            token_id: Arc::from("anonymous"),
            scope: Scope::Admin,
        }
    } else {
        let mut token = presented_token(req.headers()).map(std::borrow::Cow::Borrowed);
        // EventSource cannot set headers: the dashboard's event stream may carry the token
        // in the query string.
        if token.is_none() && route == "/admin/events" {
            token = req
                .uri()
                .query()
                .and_then(query_token)
                .map(std::borrow::Cow::Owned);
        }
        let Some(token) = token else {
            return Err(ApiError::AuthRequired);
        };
        let limit = failure_config(settings);
        if let Some(ip) = peer {
            if let Err(wait) = st.failed_auth.check(ip, &limit) {
                st.metrics.auth_refused.inc();
                return Err(ApiError::RateLimited {
                    retry_after: wait.as_secs_f64(),
                    key: "auth",
                });
            }
        }
        // Checked against the registry's snapshot in memory, no I/O: changes made by another
        // process (the CLI) arrive through the registry's background refresh.
        let Some((token_id, scope)) = st.tokens.authenticate(&token) else {
            st.metrics.auth_failures.inc();
            if peer.is_some_and(|ip| st.failed_auth.record_failure(ip, &limit)) {
                // Neither the address nor the token: only that the limit was reached.
                tracing::warn!(
                    "a peer address spent its failed authentications; its requests answer 429 until one is forgiven"
                );
            }
            return Err(ApiError::InvalidCredentials);
        };
        Caller { token_id, scope }
    };
    if needed == Scope::Admin && caller.scope != Scope::Admin {
        // A client token at an admin route (a re-identification tried, a setting or a token
        // changed) is an admin event too: recorded, with the route's template as its target
        // (never the request's own path).
        let refused = Err::<(), _>(ApiError::Forbidden { required: "admin" });
        let mut action = super::audit::Action::new("admin.refused");
        action.target(route);
        let actor = super::audit::Actor {
            token_id: caller.token_id.to_string(),
            peer,
        };
        if st.audit.refusal_due(&actor.token_id) {
            tokio::spawn(super::audit::record(st, &actor, action, &refused));
        }
        return Err(ApiError::Forbidden { required: "admin" });
    }
    Ok(Some(caller))
}

/// The peer address of the connection (absent when the router is driven without a socket).
fn peer_of(req: &Request) -> Option<std::net::IpAddr> {
    req.extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip())
}

/// The failed-authentication limit in force, read live from the settings.
fn failure_config(s: &Settings) -> crate::guard::FailureConfig {
    crate::guard::FailureConfig {
        burst: u32::try_from(s.get(keys::SECURITY_AUTH_FAILURE_BURST)).unwrap_or(0),
        per_minute: s.get(keys::SECURITY_AUTH_FAILURES_PER_MINUTE),
        ..crate::guard::FailureConfig::default()
    }
}

/// OpenMed's priority header values (`X-OpenMed-Priority`, and ours `X-Phiguard-Priority`).
fn parse_priority(headers: &HeaderMap) -> Result<Priority, ApiError> {
    let raw = headers
        .get("x-phiguard-priority")
        .or_else(|| headers.get("x-openmed-priority"));
    let Some(raw) = raw else {
        return Ok(Priority::Interactive);
    };
    let v = raw
        .to_str()
        .unwrap_or("?")
        .trim()
        .to_ascii_lowercase()
        .replace('_', "-");
    match v.as_str() {
        "" | "interactive" | "high" | "latency" | "realtime" | "real-time" | "foreground"
        | "normal" => Ok(Priority::Interactive),
        "bulk" | "batch" | "background" | "low" => Ok(Priority::Bulk),
        _ => Err(ApiError::BadRequest {
            message: "Unsupported request priority; expected one of: interactive, bulk",
            reason: "invalid_priority",
        }),
    }
}

/// An admitted request's admission permit and drain slot. Streams keep a clone of the `Arc`
/// so both are released only when the stream ends.
pub struct HeldAdmission {
    _permit: AdmissionPermit,
    st: AppState,
}

impl Drop for HeldAdmission {
    fn drop(&mut self) {
        self.st.inflight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The gate of model routes, run by [`context`] for their `POST`s with the caller's token id
/// (`""` without auth): the body is read first (within the body timeout, holding nothing),
/// then: not while draining, rate limits, then priority admission. A client that stalls
/// mid-upload therefore never holds an admission slot.
pub async fn admission(st: AppState, token: Arc<str>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    match read_body(&parts, body).await {
        // Kept aside for the handler's `Body` extractor, which takes it without a second
        // read (or a second timer).
        Ok(bytes) => parts.extensions.insert(ReadBody(bytes)),
        Err(e) => return e.into_response(),
    };
    let mut req = Request::from_parts(parts, axum::body::Body::empty());
    if st.draining.load(Ordering::SeqCst) {
        return ApiError::NotReady {
            message: "Service is shutting down and not accepting new requests",
        }
        .into_response();
    }
    let priority = match parse_priority(req.headers()) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = rate_limits(&st, &token).await {
        return e.into_response();
    }
    let permit = match st.engine.guard().admit(priority).await {
        Ok(p) => p,
        Err(e) => return ApiError::from_guard(GuardError::<()>::Shed(e)).into_response(),
    };
    st.inflight.fetch_add(1, Ordering::SeqCst);
    let held = Arc::new(HeldAdmission {
        _permit: permit,
        st: st.clone(),
    });
    req.extensions_mut().insert(Arc::clone(&held));
    let resp = next.run(req).await;
    drop(held);
    resp
}

/// The rate limits of a model request from the caller with token id `token` (`""` without
/// auth): the per-token and global buckets, then the cluster-wide window when one is
/// configured → 429 `rate_limited`. Each takes its token from the request it lets through.
pub(super) async fn rate_limits(st: &AppState, token: &str) -> Result<(), ApiError> {
    if let Err(e) = st.engine.guard().check_rate(token) {
        return Err(ApiError::from_guard(GuardError::<()>::RateLimited {
            retry_after: e.retry_after,
            scope: e.scope,
        }));
    }
    if let Some(cluster) = &st.cluster {
        if let Err(r) = cluster.try_admit(token).await {
            return Err(ApiError::RateLimited {
                retry_after: r.retry_after.as_secs_f64(),
                key: "cluster",
            });
        }
    }
    Ok(())
}

/// The body rules in force, attached to every request by [`context`]: the size limit
/// (`limits.max_request_bytes`, so that a 413 can name it) and the read timeout
/// (`server.body_timeout_seconds`, from the live settings).
#[derive(Clone, Copy, Debug)]
pub struct BodyRules {
    /// Bytes at most.
    pub limit: usize,
    /// Time allowed to read the whole body.
    pub timeout: Duration,
}

/// The request body as bytes, read within the body timeout (408 `request_timeout`), with the
/// body limit mapped to 413 `payload_too_large`.
pub struct Body(pub Bytes);

/// A body [`admission`] has already read (within its limit and timeout).
#[derive(Clone)]
struct ReadBody(Bytes);

/// Reads `body` whole, within the limit and timeout that `parts` carries.
async fn read_body(
    parts: &axum::http::request::Parts,
    body: axum::body::Body,
) -> Result<Bytes, ApiError> {
    // The router attaches the rules to every request; a request without them (a router built
    // some other way) gets axum's own default limit of 2 MiB and 30 s.
    let rules = parts
        .extensions
        .get::<BodyRules>()
        .copied()
        .unwrap_or(BodyRules {
            limit: 2 * 1024 * 1024,
            timeout: Duration::from_secs(30),
        });
    read_body_within(rules, body).await
}

/// Reads `body` whole within `rules`: 408 `request_timeout` past the timeout, 413
/// `payload_too_large` over the limit, 400 when the body breaks off.
pub(super) async fn read_body_within(
    BodyRules { limit, timeout }: BodyRules,
    body: axum::body::Body,
) -> Result<Bytes, ApiError> {
    let Ok(read) = tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await else {
        return Err(ApiError::RequestTimeout {
            timeout_seconds: timeout.as_secs_f64(),
        });
    };
    read.map_err(|e| {
        if e.into_inner().is::<http_body_util::LengthLimitError>() {
            ApiError::PayloadTooLarge {
                limit_bytes: limit as u64,
            }
        } else {
            ApiError::BadRequest {
                message: "Request body could not be read",
                reason: "invalid_body",
            }
        }
    })
}

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        if req.method() == Method::GET {
            return Ok(Body(Bytes::new()));
        }
        let (mut parts, body) = req.into_parts();
        if let Some(ReadBody(bytes)) = parts.extensions.remove::<ReadBody>() {
            return Ok(Body(bytes));
        }
        read_body(&parts, body).await.map(Body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_outside_http_s_own_is_logged_as_other() {
        for m in [
            "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE",
        ] {
            let method = Method::from_bytes(m.as_bytes()).expect("method");
            assert_eq!(method_name(&method), m);
        }
        for m in ["ZebulonQuartermaine", "PROPFIND", "get"] {
            let method = Method::from_bytes(m.as_bytes()).expect("method");
            assert_eq!(method_name(&method), "OTHER", "{m}");
        }
    }

    #[test]
    fn hosts_and_ports() {
        let trusted: Vec<String> = ["localhost", "127.0.0.1", "[::1]", "*.example.org"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for (h, ok) in [
            ("localhost:8080", true),
            ("127.0.0.1", true),
            ("[::1]:80", true),
            ("a.example.org", true),
            ("evil.com", false),
            ("example.org.evil.com", false),
            ("A.Example.ORG", true),
            ("example.org", false),
            ("xexample.org", false),
            ("LOCALHOST", true),
            ("localhost.evil", false),
            ("é.example.org", true),
            ("", false),
        ] {
            assert_eq!(host_allowed(strip_port(h), &trusted), ok, "{h}");
        }
    }

    #[test]
    fn only_json_bodies_or_no_body_pass() {
        let typed = |t: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, t.parse().expect("header"));
            json_or_empty(&h)
        };
        for (t, ok) in [
            ("application/json", true),
            ("Application/JSON; charset=utf-8", true),
            ("application/fhir+json", true),
            ("application/FHIR+JSON;fhirVersion=4.0", true),
            ("application/fhir+ndjson", true),
            ("application/x-ndjson", true),
            ("text/plain", false),
            ("text/json", false),
            ("application/x-www-form-urlencoded", false),
            ("multipart/form-data; boundary=x", false),
            ("application/jsonx", false),
            ("json", false),
            ("", false),
        ] {
            assert_eq!(typed(t), ok, "{t:?}");
        }
        let mut h = HeaderMap::new();
        assert!(json_or_empty(&h), "no body, no type");
        h.insert(header::CONTENT_LENGTH, "0".parse().expect("header"));
        assert!(json_or_empty(&h), "an empty body");
        h.insert(header::CONTENT_LENGTH, "5".parse().expect("header"));
        assert!(!json_or_empty(&h), "an untyped body");
        let mut chunked = HeaderMap::new();
        chunked.insert(
            header::TRANSFER_ENCODING,
            "chunked".parse().expect("header"),
        );
        assert!(!json_or_empty(&chunked), "an untyped chunked body");
    }
}
