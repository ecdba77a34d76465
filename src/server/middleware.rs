//! The request middleware, one function each: request context (id, access log, metrics),
//! trusted Host, auth, and the admission gate of model routes (readiness, rate limits,
//! priority admission, drain accounting). The order they run in is written down where the
//! router is built (`router.rs`).

use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::extract::{FromRequest, MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use super::error::{ApiError, ErrorCode};
use super::state::AppState;
use std::sync::Arc;

use crate::guard::{AdmissionPermit, GuardError, Priority};
use crate::secrets::Scope;

tokio::task_local! {
    /// The request id of the request being handled, for error envelopes.
    pub static REQUEST_ID: String;
}

/// Who is calling, attached by [`auth`].
#[derive(Clone, Debug)]
pub struct Caller {
    /// Token id (`client`, `admin`, `tok_…`, or `anonymous` with auth off).
    pub token_id: String,
    /// Scope.
    pub scope: Scope,
}

/// The admission priority of a model request.
#[derive(Clone, Copy, Debug)]
pub struct RequestPriority(pub Priority);

fn route_of(req: &Request) -> String {
    req.extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn valid_request_id(v: &HeaderValue) -> Option<String> {
    let s = v.to_str().ok()?;
    let ok = !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
    ok.then(|| s.to_string())
}

/// Request id (echoed when well-formed, else a fresh UUID), access log and request metrics.
/// No log line carries a body, a path beyond its route template, or a model name.
pub async fn context(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get("x-request-id")
        .and_then(valid_request_id)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let route = route_of(&req);
    let method = req.method().clone();
    let started = Instant::now();
    let count = route != "/metrics";
    if count {
        st.metrics.inflight.inc();
    }
    let mut resp = REQUEST_ID.scope(id.clone(), next.run(req)).await;
    let elapsed = started.elapsed();
    if count {
        st.metrics.inflight.dec();
        st.metrics.observe(&route, resp.status().as_u16(), elapsed);
    }
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    let code = resp
        .extensions()
        .get::<ErrorCode>()
        .map(|c| c.0)
        .unwrap_or("");
    let caller = resp
        .extensions()
        .get::<Caller>()
        .map(|c| c.token_id.clone())
        .unwrap_or_default();
    let status = resp.status().as_u16();
    if status >= 500 {
        tracing::warn!(target: "phiguard::access", request_id = %id, method = %method, route = %route,
            status, duration_ms = elapsed.as_secs_f64() * 1000.0, error = code, token = %caller, "request");
    } else {
        tracing::info!(target: "phiguard::access", request_id = %id, method = %method, route = %route,
            status, duration_ms = elapsed.as_secs_f64() * 1000.0, error = code, token = %caller, "request");
    }
    resp
}

/// Host patterns: exact names, or `*.domain` for subdomains.
fn host_allowed(host: &str, trusted: &[String]) -> bool {
    let host = host.to_ascii_lowercase();
    trusted.iter().any(|t| {
        let t = t.to_ascii_lowercase();
        match t.strip_prefix("*.") {
            Some(suffix) => host.ends_with(&format!(".{suffix}")) || host == suffix,
            None => host == t,
        }
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
pub async fn trusted_host(State(st): State<AppState>, req: Request, next: Next) -> Response {
    if matches!(
        req.uri().path(),
        "/health" | "/livez" | "/readyz" | "/metrics"
    ) {
        return next.run(req).await;
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(strip_port)
        .or_else(|| req.uri().host());
    let settings = st.settings();
    match host {
        Some(h) if host_allowed(h, settings.list("security.trusted_hosts")) => next.run(req).await,
        _ => ApiError::BadRequest {
            message: "Invalid host header",
            reason: "Invalid host header",
        }
        .into_response(),
    }
}

/// The scope a route needs; `None` for open routes.
fn required_scope(route: &str) -> Option<Scope> {
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

fn presented_token(headers: &HeaderMap) -> Option<String> {
    if let Some(k) = headers.get("x-api-key").and_then(|v| v.to_str().ok()) {
        if !k.trim().is_empty() {
            return Some(k.trim().to_string());
        }
    }
    let auth = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, value) = auth.split_once(' ')?;
    let scheme = scheme.to_ascii_lowercase();
    if matches!(scheme.as_str(), "bearer" | "apikey" | "api-key") && !value.trim().is_empty() {
        Some(value.trim().to_string())
    } else {
        None
    }
}

/// Decodes `%XX` escapes of a query value (tokens are URL-safe, but clients may encode).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Bearer / X-API-Key check and scope; attaches [`Caller`]. A peer address that has spent
/// its failed authentications (`security.auth_failure_*`) gets 429 `rate_limited` before
/// its token is compared; a wrong token counts against it, a missing one does not.
pub async fn auth(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    let route = route_of(&req);
    // The dashboard's static files are open (the page asks for the admin token); nested
    // services carry no route template, so the path decides.
    let path = req.uri().path();
    if path == "/ui" || path.starts_with("/ui/") {
        return next.run(req).await;
    }
    let Some(needed) = required_scope(&route) else {
        return next.run(req).await;
    };
    let caller = if st.auth_off {
        Caller {
            token_id: "anonymous".into(),
            scope: Scope::Admin,
        }
    } else {
        let mut token = presented_token(req.headers());
        // EventSource cannot set headers: the dashboard's event stream may carry the token
        // in the query string.
        if token.is_none() && route == "/admin/events" {
            token = req.uri().query().and_then(|q| {
                q.split('&')
                    .find_map(|kv| kv.strip_prefix("token="))
                    .map(percent_decode)
            });
        }
        let Some(token) = token else {
            return ApiError::AuthRequired.into_response();
        };
        let peer = peer_of(&req);
        let limit = failure_config(&st);
        if let Some(ip) = peer {
            if let Err(wait) = st.failed_auth.check(ip, &limit) {
                st.metrics.auth_refused.inc();
                return ApiError::RateLimited {
                    retry_after: wait.as_secs_f64(),
                    key: "auth",
                }
                .into_response();
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
            return ApiError::InvalidCredentials.into_response();
        };
        Caller { token_id, scope }
    };
    if needed == Scope::Admin && caller.scope != Scope::Admin {
        return ApiError::Forbidden { required: "admin" }.into_response();
    }
    req.extensions_mut().insert(caller.clone());
    let mut resp = next.run(req).await;
    resp.extensions_mut().insert(caller);
    resp
}

/// The peer address of the connection (absent when the router is driven without a socket).
fn peer_of(req: &Request) -> Option<std::net::IpAddr> {
    req.extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip())
}

/// The failed-authentication limit in force, read live from the settings.
fn failure_config(st: &AppState) -> crate::guard::FailureConfig {
    let s = st.settings();
    crate::guard::FailureConfig {
        burst: u32::try_from(s.i64("security.auth_failure_burst")).unwrap_or(0),
        per_minute: s.f64("security.auth_failures_per_minute"),
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

/// The gate of model routes: not while draining, rate limits, then priority admission.
pub async fn admission(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
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
    let token = req
        .extensions()
        .get::<Caller>()
        .map(|c| c.token_id.clone())
        .unwrap_or_default();
    if let Err(e) = st.engine.guard.check_rate(&token) {
        return ApiError::from_guard(GuardError::<()>::RateLimited {
            retry_after: e.retry_after,
            scope: e.scope,
        })
        .into_response();
    }
    if let Some(cluster) = &st.cluster {
        if let Err(r) = cluster.try_admit(&token).await {
            return ApiError::RateLimited {
                retry_after: r.retry_after.as_secs_f64(),
                key: "cluster",
            }
            .into_response();
        }
    }
    let permit = match st.engine.guard.admit(priority).await {
        Ok(p) => p,
        Err(e) => return ApiError::from_guard(GuardError::<()>::Shed(e)).into_response(),
    };
    st.inflight.fetch_add(1, Ordering::SeqCst);
    let held = Arc::new(HeldAdmission {
        _permit: permit,
        st: st.clone(),
    });
    req.extensions_mut().insert(RequestPriority(priority));
    req.extensions_mut().insert(Arc::clone(&held));
    let resp = next.run(req).await;
    drop(held);
    resp
}

/// The request body limit in force, attached to every request by the router so that a 413
/// can name it.
#[derive(Clone, Copy, Debug)]
pub struct BodyLimit(pub usize);

/// The request body as bytes, with the body limit mapped to 413 `payload_too_large`.
pub struct Body(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if req.method() == Method::GET {
            return Ok(Body(Bytes::new()));
        }
        let limit = req.extensions().get::<BodyLimit>().map_or(0, |l| l.0);
        match Bytes::from_request(req, state).await {
            Ok(b) => Ok(Body(b)),
            Err(e) if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::PayloadTooLarge {
                    limit_bytes: limit as u64,
                })
            }
            Err(_) => Err(ApiError::BadRequest {
                message: "Request body could not be read",
                reason: "invalid_body",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ] {
            assert_eq!(host_allowed(strip_port(h), &trusted), ok, "{h}");
        }
    }
}
