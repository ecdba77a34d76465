//! The door: a request for a model whose circuit breaker is open is refused here, in front
//! of the router, with the answer the handler would give it.
//!
//! # Why
//! While a model keeps failing, every request for it is answered `503 circuit_breaker_open`,
//! and clients that retry in a loop can send tens of thousands a second. Through the router
//! such a refusal cost about three times what HTTP alone costs (`docs/bench-peers.md`): the
//! router and its middleware, the request span, the body's JSON map, the typed request and
//! its validation, admission. The door does only what the answer depends on, so a refusal
//! leaves the cores to the work that can still be done.
//!
//! # What it does
//! It looks only at a `POST` to `/pii/extract`, `/pii/deidentify` or `/analyze` without an
//! `Origin` header (a browser's request gets its CORS headers from the router), and only
//! while some breaker may refuse ([`Guard::may_refuse`], one atomic load); everything else
//! goes straight to the router, untouched. For those, in the router's order:
//! 1. the trusted-Host, cross-site and auth checks of the request context, whose refusals
//!    are answered here as the context answers them;
//! 2. the body, read within the same limit and timeout (408 / 413 / 400);
//! 3. the body's `model_name` and `fallback` only, read by the same field readers as the
//!    typed request (every other field is skipped, not built), the model they resolve to,
//!    and that model's breaker, asked without taking a permit;
//! 4. when it refuses, the rate limits (per token, global, and the cluster's window), which
//!    come before the breaker in the router too: 429 over them, each refusal taking its
//!    token as it would there.
//!
//! When the breaker refuses and the request did not ask for degraded mode, the answer is
//! the handler's: the same `503` envelope and `Retry-After`, the same request id and safety
//! headers, request metrics, guard counters and access-log line. Otherwise (draining, a body
//! that is not a JSON object or whose two fields are malformed, a model not served, degraded
//! mode, a breaker that lets the call through) the request goes on to the router with the
//! body already read and the outcome of the checks of step 1 (`middleware::Gated`), which
//! the request context does not run again, and is answered there exactly as before.
//!
//! # What differs
//! A refused request skips admission (the priority queue: a refusal holds no slot) and
//! validation: a request whose model is refused is told `503` (retry later) even if its body
//! would fail validation. The guard's own order puts the breaker before the bulkhead and the
//! retries for the same reason: an answer that costs the model nothing should cost the
//! service little.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{ConnectInfo, Request};
use axum::http::{header, Method};
use axum::response::{IntoResponse, Response};
use axum::Router;
use bytes::Bytes;
use futures::future::{BoxFuture, Either};
use serde::Deserialize;
use tower::{Service, ServiceExt};

use super::api::Fallback;
use super::error::ApiError;
use super::metrics::RouteSeries;
use super::middleware::{self, Answered, Caller, Front, RequestScope, REQUEST};
use super::validate::read;

/// The model routes whose refusals the door answers: one JSON object each, naming the model
/// and the fallback at its top level. The streams and FHIR answer through the router.
const ROUTES: [&str; 3] = ["/pii/extract", "/pii/deidentify", "/analyze"];

/// The `Vary` of the router's CORS layer (`tower_http::cors`'s default list).
static VARY: axum::http::HeaderValue = axum::http::HeaderValue::from_static(
    "origin, access-control-request-method, access-control-request-headers",
);

/// The router behind the door (see the module's doc).
#[derive(Clone)]
pub(crate) struct Door {
    /// Shared: a watched request clones the door into its future (one count, not one per
    /// part of the state).
    shared: Arc<Shared>,
    router: Router,
    /// The connection's peer ([`Door::at`]): given to the router's requests as
    /// `ConnectInfo`, and to the door's own auth check without it (a request the door
    /// answers needs no extension map).
    peer: Option<SocketAddr>,
}

/// What every request the door answers reads.
struct Shared {
    front: Front,
    /// The `503` series of each of [`ROUTES`], in its order.
    series: [RouteSeries; ROUTES.len()],
}

impl Door {
    /// The door in front of `router`, which must be the application's (`router::app`).
    pub(super) fn new(front: Front, router: Router) -> Self {
        let series = ROUTES.map(|r| front.st.metrics.unavailable_series(r));
        Self {
            shared: Arc::new(Shared { front, series }),
            router,
            peer: None,
        }
    }

    /// The door of one connection from `peer`.
    pub(super) fn at(&self, peer: SocketAddr) -> Self {
        Self {
            peer: Some(peer),
            ..self.clone()
        }
    }

    /// The route of a request the door looks at, if it is one.
    fn watched(&self, req: &Request) -> Option<&'static str> {
        if req.method() != Method::POST || req.headers().contains_key(header::ORIGIN) {
            return None;
        }
        let path = req.uri().path();
        let route = ROUTES.into_iter().find(|r| *r == path)?;
        self.shared
            .front
            .st
            .engine
            .guard()
            .may_refuse()
            .then_some(route)
    }
}

impl<B> Service<axum::http::Request<B>> for Door
where
    B: axum::body::HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<
        <Router as Service<Request>>::Future,
        BoxFuture<'static, Result<Response, Infallible>>,
    >;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The router is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: axum::http::Request<B>) -> Self::Future {
        let req = req.map(axum::body::Body::new);
        match self.watched(&req) {
            None => Either::Left(self.router.call(self.with_peer(req))),
            Some(route) => {
                let door = self.clone();
                Either::Right(Box::pin(async move { Ok(door.answer(route, req).await) }))
            }
        }
    }
}

/// The token id of a caller, `""` when none (an open route, never a model route).
fn token_id(caller: Option<&Caller>) -> &str {
    caller.map_or("", |c| &c.token_id)
}

/// The two fields of a model request's body the door's decision depends on, read by the
/// typed requests' own field readers; every other field is skipped without being built.
/// Unknown and duplicate fields, and every other rule, are the handler's to judge.
#[derive(Deserialize)]
struct Named {
    #[serde(default, deserialize_with = "read::opt_string")]
    model_name: Option<String>,
    #[serde(default, deserialize_with = "read::opt_choice")]
    fallback: Option<Fallback>,
}

/// What the door decided for a request whose body it read.
enum Verdict {
    /// Answer this (the body could not be read).
    Refuse(ApiError),
    /// The breaker of this model refuses: answer that, after the rate limits.
    Breaker(String, crate::guard::BreakerError),
    /// Let the router answer; the body is read.
    Pass(Bytes),
}

impl Door {
    /// Answers a watched request: here when refused, else through the router.
    async fn answer(self, route: &'static str, req: Request) -> Response {
        let started = Instant::now();
        let st = &self.shared.front.st;
        // Checked before anything is counted: a request that goes on is counted (and logged)
        // once, by the router's request context.
        let settings = st.settings();
        let peer = self.peer.map(|p| p.ip());
        let caller = match middleware::gate(st, &settings, &req, route, peer) {
            Ok(caller) => caller,
            Err(refused) => return self.refused(route, &req, started, None, refused),
        };
        if st.draining.load(Ordering::SeqCst) {
            return self.pass(req, None, caller).await;
        }
        let (parts, body) = req.into_parts();
        let rules = self.shared.front.body_rules(&settings);
        drop(settings);
        let verdict = match middleware::read_body_within(rules, body).await {
            Ok(bytes) => self.verdict(route, bytes),
            Err(e) => Verdict::Refuse(e),
        };
        let req = Request::from_parts(parts, axum::body::Body::empty());
        let refused = match verdict {
            Verdict::Pass(bytes) => return self.pass(req, Some(bytes), caller).await,
            Verdict::Refuse(e) => e,
            // The rate limits come before the breaker (as in the router): a caller over its
            // rate is told 429, and a refusal takes its token, as it would there.
            Verdict::Breaker(id, refused) => {
                match middleware::rate_limits(st, token_id(caller.as_ref())).await {
                    Err(limited) => limited,
                    Ok(()) => {
                        ApiError::from_guard(st.engine.guard().refused_call::<()>(&id, refused))
                    }
                }
            }
        };
        self.refused(
            route,
            &req,
            started,
            Some(token_id(caller.as_ref())),
            refused,
        )
    }

    /// The breaker's refusal of the model `body` names, if it refuses and the request did not
    /// ask for degraded mode.
    fn verdict(&self, route: &'static str, body: Bytes) -> Verdict {
        let st = &self.shared.front.st;
        let Ok(named) = serde_json::from_slice::<Named>(&body) else {
            return Verdict::Pass(body);
        };
        // `/analyze` never answers from the rules (as its handler).
        let fallback = match route {
            "/analyze" => Some(Fallback::None),
            _ => named.fallback,
        };
        let degraded =
            fallback.map_or_else(|| st.engine.fallback_default(), |f| f == Fallback::Rules);
        if degraded {
            return Verdict::Pass(body);
        }
        let Ok(id) = st.engine.resolve(named.model_name.as_deref()) else {
            return Verdict::Pass(body);
        };
        match st.engine.guard().refusal(&id) {
            Some(refused) => Verdict::Breaker(id, refused),
            None => Verdict::Pass(body),
        }
    }

    /// Hands a request to the router, with its body when the door read it and the outcome
    /// of the checks the door ran (`caller`), so that the request context does not run them
    /// a second time: once counted, a token revoked or expired while the body arrived would
    /// have been refused, and counted as a failed authentication, after it was accepted.
    async fn pass(self, req: Request, body: Option<Bytes>, caller: Option<Caller>) -> Response {
        let mut req = match body {
            Some(bytes) => req.map(|_| axum::body::Body::from(bytes)),
            None => req,
        };
        req.extensions_mut().insert(middleware::Gated(caller));
        let req = self.with_peer(req);
        self.router
            .oneshot(req)
            .await
            .unwrap_or_else(|e| match e {})
    }

    /// `req` with the connection's peer, as the router's auth check reads it.
    fn with_peer(&self, mut req: Request) -> Request {
        if let Some(peer) = self.peer {
            req.extensions_mut().insert(ConnectInfo(peer));
        }
        req
    }

    /// Answers `refused` as the request context would: envelope with the request id,
    /// metrics, headers and access log. `started` is when the door took the request, `caller`
    /// the token id once auth passed.
    fn refused(
        &self,
        route: &'static str,
        req: &Request,
        started: Instant,
        caller: Option<&str>,
        refused: ApiError,
    ) -> Response {
        let st = &self.shared.front.st;
        let (id, _inflight) = middleware::begin(st, req.headers(), route);
        let scope = RequestScope::new(Arc::clone(&id));
        let code = refused.code();
        let mut resp = REQUEST.sync_scope(scope, || refused.into_response());
        // What the router's CORS layer adds to every answer (the door sees no `Origin`, so
        // it is all that layer would add): caches keep answers per origin.
        resp.headers_mut().insert(header::VARY, VARY.clone());
        Answered {
            id: &id,
            route,
            model_route: true,
            method: req.method(),
            started,
            caller: caller.unwrap_or(""),
            error: code,
            series: self.shared.series.iter().find(|s| s.route == route),
        }
        .close(st, &mut resp);
        resp
    }
}
