//! The one place errors become HTTP: [`ApiError`] and its mapping to status, code, headers
//! and the envelope `{"error":{"code","message","details","request_id"}}`. Every code, its
//! status, headers and what the caller should do are listed in `docs/errors.md`; a test
//! below keeps that page and this enum in step.
//!
//! Messages are fixed strings chosen here; details carry numbers, field paths, setting names,
//! configured model ids and closed vocabularies only. Nothing in an error response is derived
//! from request text or from a requested model name. Where the user can act (a limit to
//! raise, a model to choose, a route to look up), the message says how.

use std::borrow::Cow;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::settings::key::{Float, Int, Items};
use crate::settings::{keys, Key};

/// One validation problem: where (`body.text`), what, and the kind (`value_error`, …).
#[derive(Clone, Debug, serde::Serialize)]
pub struct FieldProblem {
    /// Location, joined with `.`: `body.text`, `body.chunk_size`, `body` for whole-body rules.
    pub field: String,
    /// Human-readable message (never contains the submitted value).
    pub message: String,
    /// Machine-readable kind, as OpenMed/pydantic name it.
    #[serde(rename = "type")]
    pub kind: String,
}

impl FieldProblem {
    /// Builds a problem.
    pub fn new(field: impl Into<String>, message: impl Into<String>, kind: &str) -> Self {
        FieldProblem {
            field: field.into(),
            message: message.into(),
            kind: kind.to_string(),
        }
    }
}

/// Every error the HTTP layer answers with.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ApiError {
    /// Returned when the body or a field is invalid: 422 `validation_error`.
    #[error("request validation failed")]
    Validation(Vec<FieldProblem>),
    /// Returned when the requested model is not served: 422 `model_not_served`.
    #[error("requested model is not served")]
    ModelNotServed {
        /// The ids a request may name instead (configured names, never the requested one).
        available: Vec<String>,
    },
    /// Returned for a bad Host header, bad priority header or bad arguments: 400 `bad_request`.
    #[error("bad request")]
    BadRequest {
        /// Fixed message.
        message: &'static str,
        /// Fixed reason.
        reason: &'static str,
    },
    /// Returned for an unknown route: 404.
    #[error("not found")]
    NotFound,
    /// Returned for a known route with another method: 405.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// Returned when no credentials were sent: 401 `authentication_required`.
    #[error("authentication required")]
    AuthRequired,
    /// Returned when credentials do not match: 401 `invalid_credentials`.
    #[error("invalid credentials")]
    InvalidCredentials,
    /// Returned when the token lacks the route's scope: 403 `forbidden`.
    #[error("forbidden")]
    Forbidden {
        /// The scope the route needs.
        required: &'static str,
    },
    /// Returned by the per-token, global or cluster rate limit, or while the caller's address
    /// has spent its failed authentications: 429 `rate_limited`.
    #[error("rate limited")]
    RateLimited {
        /// Seconds until a request would be admitted.
        retry_after: f64,
        /// `global`, `token`, `cluster`, or `auth` (too many failed authentications from
        /// the caller's address).
        key: &'static str,
    },
    /// Returned when the admission queue sheds: 503 `backpressure`.
    #[error("backpressure")]
    Backpressure {
        /// `interactive` or `bulk`.
        priority: &'static str,
        /// `high_watermark` or `max_wait`.
        reason: &'static str,
        /// Current depth.
        depth: u64,
        /// High watermark.
        capacity: u64,
        /// Low watermark.
        low_watermark: u64,
        /// Seconds to wait.
        retry_after: f64,
    },
    /// Returned when a model's bulkhead is full: 503 `service_busy`.
    #[error("service busy")]
    Busy {
        /// Seconds to wait.
        retry_after: f64,
    },
    /// Returned while a model's breaker is open or its probe is in flight: 503
    /// `circuit_breaker_open`.
    #[error("circuit breaker open")]
    BreakerOpen {
        /// `open` or `half_open`.
        state: &'static str,
        /// Whole seconds, at least 1.
        retry_after_seconds: u64,
    },
    /// Returned when the request deadline passed: 504 `timeout`.
    #[error("timeout")]
    Timeout {
        /// The configured timeout.
        timeout_seconds: f64,
    },
    /// Returned when the model failed after retries (or panicked): 500 `inference_error`.
    #[error("inference failed")]
    Inference,
    /// Returned when the model could not be loaded: 503 `model_load_error`.
    #[error("model load failed")]
    ModelLoad,
    /// Returned when the body exceeds a limit: 413 `payload_too_large`.
    #[error("payload too large")]
    PayloadTooLarge {
        /// The configured limit, in bytes.
        limit_bytes: u64,
    },
    /// Returned while starting or shutting down: 503 `not_ready`.
    #[error("not ready")]
    NotReady {
        /// Fixed message.
        message: &'static str,
    },
    /// Returned for an unexpected internal failure: 500 `internal_error`.
    #[error("internal error")]
    Internal,
    /// Returned by admin endpoints for a missing resource (breaker key, token id, model).
    #[error("resource not found")]
    NoSuchResource,
    /// Returned when a setting or admin request conflicts with the current state: 409.
    #[error("conflict")]
    Conflict {
        /// Fixed message.
        message: &'static str,
    },
    /// Returned when the request body did not arrive within `server.body_timeout_seconds`:
    /// 408 `request_timeout`.
    #[error("request body timeout")]
    RequestTimeout {
        /// The configured limit.
        timeout_seconds: f64,
    },
    /// Returned when a state-changing request carries a body that is not JSON: 415
    /// `unsupported_media_type` (a browser can send `text/plain` across sites without a
    /// preflight; JSON it cannot).
    #[error("unsupported media type")]
    UnsupportedMediaType,
    /// Returned when the browser's `Origin` is neither this server nor an allowed origin: 403
    /// `origin_not_allowed`.
    #[error("origin not allowed")]
    OriginNotAllowed,
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Validation(_) | ApiError::ModelNotServed { .. } => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::NotFound | ApiError::NoSuchResource => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::AuthRequired | ApiError::InvalidCredentials => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden { .. } | ApiError::OriginNotAllowed => StatusCode::FORBIDDEN,
            ApiError::RequestTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            // A model that does not load is unavailable, not broken mid-call: 503, as
            // OpenMed answers `model_load_error`, so a balancer tries another replica.
            ApiError::Backpressure { .. }
            | ApiError::Busy { .. }
            | ApiError::BreakerOpen { .. }
            | ApiError::ModelLoad
            | ApiError::NotReady { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            ApiError::Inference | ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
        }
    }

    /// The envelope's `code`: a closed vocabulary, also used as a metric label.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Validation(_) => "validation_error",
            ApiError::ModelNotServed { .. } => "model_not_served",
            ApiError::BadRequest { .. } | ApiError::NotFound | ApiError::MethodNotAllowed => {
                "bad_request"
            }
            ApiError::AuthRequired => "authentication_required",
            ApiError::InvalidCredentials => "invalid_credentials",
            ApiError::Forbidden { .. } => "forbidden",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::Backpressure { .. } => "backpressure",
            ApiError::Busy { .. } => "service_busy",
            ApiError::BreakerOpen { .. } => "circuit_breaker_open",
            ApiError::Timeout { .. } => "timeout",
            ApiError::Inference => "inference_error",
            ApiError::ModelLoad => "model_load_error",
            ApiError::PayloadTooLarge { .. } => "payload_too_large",
            ApiError::NotReady { .. } => "not_ready",
            ApiError::Internal => "internal_error",
            ApiError::NoSuchResource => "not_found",
            ApiError::Conflict { .. } => "conflict",
            ApiError::RequestTimeout { .. } => "request_timeout",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::OriginNotAllowed => "origin_not_allowed",
        }
    }

    /// The fixed message; only the few that carry a number or a list are built per error.
    fn message(&self) -> Cow<'static, str> {
        match self {
            ApiError::Validation(_) => "Request validation failed".into(),
            ApiError::ModelNotServed { available } if available.is_empty() => {
                "Requested model is not served".into()
            }
            ApiError::ModelNotServed { available } => {
                let shown = available.len().min(MODELS_IN_MESSAGE);
                let more = available.len() - shown;
                let mut m = format!(
                    "Requested model is not served; available: {}",
                    available[..shown].join(", ")
                );
                if more > 0 {
                    m.push_str(&format!(" (and {more} more, see details)"));
                }
                m.into()
            }
            ApiError::BadRequest { message, .. } => (*message).into(),
            ApiError::NotFound => {
                "Not Found: no route at this path; the API reference is at /docs".into()
            }
            ApiError::MethodNotAllowed => "Method Not Allowed".into(),
            ApiError::AuthRequired => "Authentication credentials were not provided".into(),
            ApiError::InvalidCredentials => "Authentication credentials are invalid".into(),
            ApiError::Forbidden { .. } => {
                "Authenticated principal does not have the required scope".into()
            }
            ApiError::RateLimited { .. } => "Request rate limit exceeded".into(),
            ApiError::Backpressure { priority, .. } => {
                format!("{priority} inference queue is saturated; retry later").into()
            }
            ApiError::Busy { .. } => "Service is busy; retry later".into(),
            ApiError::BreakerOpen { .. } => "Model backend is temporarily unavailable".into(),
            ApiError::Timeout { timeout_seconds } => {
                format!("Request exceeded configured timeout of {timeout_seconds} seconds").into()
            }
            ApiError::Inference => "Model inference failed".into(),
            ApiError::ModelLoad => "Model could not be loaded".into(),
            ApiError::PayloadTooLarge { limit_bytes } => format!(
                "Request body exceeds the configured limit of {limit_bytes} bytes; send a smaller body or raise {} (restart needed)",
                MAX_REQUEST_BYTES.env()
            )
            .into(),
            ApiError::NotReady { message } => (*message).into(),
            ApiError::Internal => "Internal server error".into(),
            ApiError::NoSuchResource => "Resource not found".into(),
            ApiError::Conflict { message } => (*message).into(),
            ApiError::RequestTimeout { timeout_seconds } => format!(
                "The request body did not arrive within {timeout_seconds} seconds; send it at once, or raise {}",
                BODY_TIMEOUT.env()
            )
            .into(),
            ApiError::UnsupportedMediaType => {
                "Send the body as JSON with Content-Type: application/json".into()
            }
            ApiError::OriginNotAllowed => format!(
                "Requests from this browser origin are refused; allow it with {}",
                CORS_ORIGINS.env()
            )
            .into(),
        }
    }

    fn details(&self) -> Value {
        match self {
            ApiError::Validation(problems) => json!(problems),
            ApiError::BadRequest { reason, .. } => json!({ "reason": reason }),
            ApiError::NotFound => json!({ "reason": "Not Found" }),
            ApiError::MethodNotAllowed => json!({ "reason": "Method Not Allowed" }),
            ApiError::Forbidden { required } => json!({ "required_scopes": [required] }),
            ApiError::RateLimited { retry_after, key } => {
                json!({ "retry_after_seconds": round3(*retry_after), "key": key })
            }
            ApiError::Backpressure {
                priority,
                reason,
                depth,
                capacity,
                low_watermark,
                retry_after,
            } => json!({
                "priority": priority, "queue": priority, "queue_depth": depth,
                "queue_capacity": capacity, "retry_after_seconds": round3(*retry_after),
                "reason": reason, "low_watermark": low_watermark,
            }),
            ApiError::Busy { retry_after } => {
                json!({ "retry_after_seconds": round3(*retry_after) })
            }
            ApiError::BreakerOpen {
                state,
                retry_after_seconds,
            } => json!({ "state": state, "retry_after_seconds": retry_after_seconds }),
            ApiError::Timeout { timeout_seconds } => json!({ "timeout_seconds": timeout_seconds }),
            ApiError::RequestTimeout { timeout_seconds } => json!({
                "timeout_seconds": timeout_seconds,
                "setting": BODY_TIMEOUT.env(),
                "key": BODY_TIMEOUT.name(),
            }),
            ApiError::UnsupportedMediaType => json!({ "accepted": ["application/json"] }),
            ApiError::OriginNotAllowed => json!({
                "setting": CORS_ORIGINS.env(),
                "key": CORS_ORIGINS.name(),
            }),
            ApiError::ModelNotServed { available } => json!({ "available_models": available }),
            ApiError::PayloadTooLarge { limit_bytes } => json!({
                "limit_bytes": limit_bytes,
                "setting": MAX_REQUEST_BYTES.env(),
                "key": MAX_REQUEST_BYTES.name(),
            }),
            _ => Value::Null,
        }
    }

    /// `Retry-After` in whole seconds (≥ 1), where the error has one.
    pub fn retry_after(&self) -> Option<u64> {
        let secs = match self {
            ApiError::RateLimited { retry_after, .. }
            | ApiError::Backpressure { retry_after, .. }
            | ApiError::Busy { retry_after } => *retry_after,
            ApiError::BreakerOpen {
                retry_after_seconds,
                ..
            } => *retry_after_seconds as f64,
            ApiError::NotReady { .. } | ApiError::ModelLoad => 1.0,
            _ => return None,
        };
        Some((secs.ceil() as u64).max(1))
    }

    /// The envelope body as JSON (request id filled in by the middleware).
    pub fn body(&self, request_id: Option<&str>) -> Value {
        serde_json::to_value(self.envelope(request_id)).unwrap_or(Value::Null)
    }

    /// The envelope of this error.
    pub fn envelope(&self, request_id: Option<&str>) -> ErrorEnvelope {
        let details = match self {
            ApiError::BreakerOpen {
                state,
                retry_after_seconds,
            } => Some(Details::Breaker {
                state,
                retry_after_seconds: *retry_after_seconds,
            }),
            _ => Some(self.details())
                .filter(|d| !d.is_null())
                .map(Details::Value),
        };
        ErrorEnvelope {
            error: ErrorBody {
                code: self.code(),
                message: self.message(),
                details,
                request_id: request_id.map(str::to_string),
            },
        }
    }
}

/// An envelope's `details`. The refusal a failing model's callers get by the thousand a
/// second (`circuit_breaker_open`) is written straight from its two fields; every other
/// error builds a `Value` (a map, its keys and values allocated), which its rarity affords.
/// Both serialize alike: the same keys in the same order.
#[derive(Clone, Debug)]
pub enum Details {
    /// Any details.
    Value(Value),
    /// `{"state", "retry_after_seconds"}` of `circuit_breaker_open`.
    Breaker {
        /// `open` or `half_open`.
        state: &'static str,
        /// Whole seconds.
        retry_after_seconds: u64,
    },
}

impl serde::Serialize for Details {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Details::Value(v) => v.serialize(s),
            Details::Breaker {
                state,
                retry_after_seconds,
            } => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("state", state)?;
                m.serialize_entry("retry_after_seconds", retry_after_seconds)?;
                m.end()
            }
        }
    }
}

/// The error envelope every error response uses (DESIGN §5).
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorEnvelope {
    /// The error.
    pub error: ErrorBody,
}

/// The body of the envelope.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// Machine-readable code (`validation_error`, `circuit_breaker_open`, …).
    pub code: &'static str,
    /// Fixed human-readable message; never contains request content.
    #[schema(value_type = String)]
    pub message: Cow<'static, str>,
    /// Field problems, or numbers and closed-vocabulary values; null when none.
    #[schema(value_type = Option<serde_json::Value>)]
    pub details: Option<Details>,
    /// The request id (also the `X-Request-ID` header).
    pub request_id: Option<String>,
}

impl From<crate::engine::EngineError> for ApiError {
    fn from(e: crate::engine::EngineError) -> Self {
        use crate::engine::EngineError as E;
        match e {
            // Callers that can name the alternatives resolve through `AppState::resolve_model`;
            // this arm is the rare case of a model removed between resolve and call.
            E::NotServed => ApiError::ModelNotServed {
                available: Vec::new(),
            },
            E::Load => ApiError::ModelLoad,
            E::Backend => ApiError::Inference,
            E::Busy { retry_after } => ApiError::Busy {
                retry_after: retry_after.as_secs_f64(),
            },
            E::BreakerOpen {
                state,
                retry_after_seconds,
            } => ApiError::BreakerOpen {
                state,
                retry_after_seconds,
            },
            E::Timeout { timeout } => ApiError::Timeout {
                timeout_seconds: timeout.as_secs_f64(),
            },
        }
    }
}

impl ApiError {
    /// Maps a guard refusal (rate limit, shed, busy, breaker, timeout) to its HTTP error.
    pub fn from_guard<E>(e: crate::guard::GuardError<E>) -> Self {
        use crate::guard::GuardError as G;
        match e {
            G::RateLimited { retry_after, scope } => ApiError::RateLimited {
                retry_after: retry_after.as_secs_f64(),
                key: scope.as_str(),
            },
            G::Shed(s) => ApiError::Backpressure {
                priority: s.priority.as_str(),
                reason: s.reason.as_str(),
                depth: s.depth as u64,
                capacity: s.queue_capacity as u64,
                low_watermark: s.low_watermark as u64,
                retry_after: s.retry_after.as_secs_f64(),
            },
            G::Busy { retry_after } => ApiError::Busy {
                retry_after: retry_after.as_secs_f64(),
            },
            G::BreakerOpen {
                state,
                retry_after_seconds,
            } => ApiError::BreakerOpen {
                state: state.as_str(),
                retry_after_seconds,
            },
            G::Timeout { timeout } => ApiError::Timeout {
                timeout_seconds: timeout.as_secs_f64(),
            },
            G::Failed(_) => ApiError::Inference,
        }
    }
}

/// How many model ids a `model_not_served` message lists (details carry them all).
const MODELS_IN_MESSAGE: usize = 20;

/// The settings key of the request body limit.
pub(crate) const MAX_REQUEST_BYTES: Key<Int> = keys::LIMITS_MAX_REQUEST_BYTES;
/// The settings key of the body read timeout.
const BODY_TIMEOUT: Key<Float> = keys::SERVER_BODY_TIMEOUT_SECONDS;
/// The settings key of the allowed browser origins.
const CORS_ORIGINS: Key<Items> = keys::SECURITY_CORS_ORIGINS;

fn round3(x: f64) -> f64 {
    (x * 1000.0).ceil() / 1000.0
}

/// The error code attached to a response made outside a request's task, for the access log
/// (inside one it is recorded in `middleware::REQUEST`).
#[derive(Clone, Copy, Debug)]
pub struct ErrorCode(pub &'static str);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        // Serialized straight from the typed envelope (not through a `Value`): one buffer.
        let scoped = super::middleware::REQUEST.try_with(|r| {
            r.set_error(self.code());
            self.envelope(Some(&r.id))
        });
        let in_request = scoped.is_ok();
        let envelope = scoped.unwrap_or_else(|_| self.envelope(None));
        // Written into one buffer sized for a typical envelope (axum's `Json` starts at 128
        // bytes and grows twice for most); serializing this struct cannot fail.
        let mut body = Vec::with_capacity(256);
        let _ = serde_json::to_writer(&mut body, &envelope);
        let mut resp = Response::new(axum::body::Body::from(body));
        *resp.status_mut() = status;
        let headers = resp.headers_mut();
        // Room for what this and the request context add (type, Retry-After, the
        // request id, caching, sniffing, CORS's Vary, the auth challenge): one allocation.
        headers.reserve(8);
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = self.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        match self {
            ApiError::AuthRequired => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer, ApiKey"),
                );
            }
            ApiError::InvalidCredentials => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer error=\"invalid_token\", ApiKey"),
                );
            }
            ApiError::Forbidden { required } => {
                if let Ok(v) = HeaderValue::from_str(&format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{required}\""
                )) {
                    headers.insert(header::WWW_AUTHENTICATE, v);
                }
            }
            _ => {}
        }
        if !in_request {
            resp.extensions_mut().insert(ErrorCode(self.code()));
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_breaker_details_serialize_as_their_value_form() {
        for (state, secs) in [("open", 30), ("half_open", 1), ("open", u64::MAX)] {
            let e = ApiError::BreakerOpen {
                state,
                retry_after_seconds: secs,
            };
            let typed = serde_json::to_string(&e.envelope(Some("id"))).expect("typed");
            let mut as_value = e.envelope(Some("id"));
            as_value.error.details = Some(Details::Value(e.details()));
            let value = serde_json::to_string(&as_value).expect("value");
            assert_eq!(typed, value);
            assert!(typed.contains(&format!(
                r#""details":{{"state":"{state}","retry_after_seconds":{secs}}}"#
            )));
        }
    }

    #[test]
    fn every_design_row_maps_to_its_status_and_code() {
        let rows: Vec<(ApiError, u16, &str, Option<u64>)> = vec![
            (ApiError::Validation(vec![]), 422, "validation_error", None),
            (
                ApiError::ModelNotServed { available: vec![] },
                422,
                "model_not_served",
                None,
            ),
            (ApiError::AuthRequired, 401, "authentication_required", None),
            (
                ApiError::InvalidCredentials,
                401,
                "invalid_credentials",
                None,
            ),
            (
                ApiError::Forbidden {
                    required: "pii:write",
                },
                403,
                "forbidden",
                None,
            ),
            (
                ApiError::RateLimited {
                    retry_after: 0.2,
                    key: "global",
                },
                429,
                "rate_limited",
                Some(1),
            ),
            (
                ApiError::Busy { retry_after: 2.5 },
                503,
                "service_busy",
                Some(3),
            ),
            (
                ApiError::BreakerOpen {
                    state: "open",
                    retry_after_seconds: 29,
                },
                503,
                "circuit_breaker_open",
                Some(29),
            ),
            (
                ApiError::Timeout {
                    timeout_seconds: 60.0,
                },
                504,
                "timeout",
                None,
            ),
            (ApiError::Inference, 500, "inference_error", None),
            (
                ApiError::PayloadTooLarge { limit_bytes: 10 },
                413,
                "payload_too_large",
                None,
            ),
        ];
        for (err, status, code, retry) in rows {
            assert_eq!(err.status().as_u16(), status);
            assert_eq!(err.code(), code);
            assert_eq!(err.retry_after(), retry);
        }
    }

    #[test]
    fn actionable_messages_name_the_limit_setting_and_the_alternatives() {
        let body = ApiError::PayloadTooLarge { limit_bytes: 1000 }.body(None);
        let msg = body["error"]["message"].as_str().unwrap_or("");
        assert!(msg.contains("1000 bytes") && msg.contains("PHIGUARD_MAX_REQUEST_BYTES"));
        assert_eq!(body["error"]["details"]["limit_bytes"], 1000);
        assert_eq!(
            body["error"]["details"]["setting"],
            "PHIGUARD_MAX_REQUEST_BYTES"
        );

        let many: Vec<String> = (0..25).map(|i| format!("m{i}")).collect();
        let body = ApiError::ModelNotServed {
            available: many.clone(),
        }
        .body(None);
        let msg = body["error"]["message"].as_str().unwrap_or("");
        assert!(
            msg.contains("m0, m1") && msg.contains("and 5 more"),
            "{msg}"
        );
        assert!(!msg.contains("m24"), "{msg}");
        assert_eq!(body["error"]["details"]["available_models"], json!(many));
        let body = ApiError::ModelNotServed { available: vec![] }.body(None);
        assert_eq!(body["error"]["message"], "Requested model is not served");
    }

    /// One value of every variant. The match has no wildcard arm, so a new variant does not
    /// compile until it is listed here too, and then `docs/errors.md` must name its code.
    fn one_of_each() -> Vec<ApiError> {
        let all = vec![
            ApiError::Validation(vec![]),
            ApiError::ModelNotServed { available: vec![] },
            ApiError::BadRequest {
                message: "m",
                reason: "r",
            },
            ApiError::NotFound,
            ApiError::MethodNotAllowed,
            ApiError::AuthRequired,
            ApiError::InvalidCredentials,
            ApiError::Forbidden { required: "admin" },
            ApiError::RateLimited {
                retry_after: 1.0,
                key: "token",
            },
            ApiError::Backpressure {
                priority: "bulk",
                reason: "high_watermark",
                depth: 1,
                capacity: 1,
                low_watermark: 0,
                retry_after: 1.0,
            },
            ApiError::Busy { retry_after: 1.0 },
            ApiError::BreakerOpen {
                state: "open",
                retry_after_seconds: 1,
            },
            ApiError::Timeout {
                timeout_seconds: 1.0,
            },
            ApiError::Inference,
            ApiError::ModelLoad,
            ApiError::PayloadTooLarge { limit_bytes: 1 },
            ApiError::NotReady { message: "m" },
            ApiError::Internal,
            ApiError::NoSuchResource,
            ApiError::Conflict { message: "m" },
            ApiError::RequestTimeout {
                timeout_seconds: 1.0,
            },
            ApiError::UnsupportedMediaType,
            ApiError::OriginNotAllowed,
        ];
        let mut seen = std::collections::HashSet::new();
        for e in &all {
            let name = match e {
                ApiError::Validation(_) => "Validation",
                ApiError::ModelNotServed { .. } => "ModelNotServed",
                ApiError::BadRequest { .. } => "BadRequest",
                ApiError::NotFound => "NotFound",
                ApiError::MethodNotAllowed => "MethodNotAllowed",
                ApiError::AuthRequired => "AuthRequired",
                ApiError::InvalidCredentials => "InvalidCredentials",
                ApiError::Forbidden { .. } => "Forbidden",
                ApiError::RateLimited { .. } => "RateLimited",
                ApiError::Backpressure { .. } => "Backpressure",
                ApiError::Busy { .. } => "Busy",
                ApiError::BreakerOpen { .. } => "BreakerOpen",
                ApiError::Timeout { .. } => "Timeout",
                ApiError::Inference => "Inference",
                ApiError::ModelLoad => "ModelLoad",
                ApiError::PayloadTooLarge { .. } => "PayloadTooLarge",
                ApiError::NotReady { .. } => "NotReady",
                ApiError::Internal => "Internal",
                ApiError::NoSuchResource => "NoSuchResource",
                ApiError::Conflict { .. } => "Conflict",
                ApiError::RequestTimeout { .. } => "RequestTimeout",
                ApiError::UnsupportedMediaType => "UnsupportedMediaType",
                ApiError::OriginNotAllowed => "OriginNotAllowed",
            };
            assert!(seen.insert(name), "{name} listed twice");
        }
        all
    }

    /// The `| status | code |` rows of the codes table in `docs/errors.md`.
    fn documented_pairs(doc: &str) -> std::collections::BTreeSet<(u16, String)> {
        doc.lines()
            .filter_map(|line| {
                let mut cells = line.split('|').map(str::trim).skip(1);
                let status = cells.next()?.parse::<u16>().ok()?;
                let code = cells.next()?.strip_prefix('`')?.strip_suffix('`')?;
                Some((status, code.to_string()))
            })
            .collect()
    }

    #[test]
    fn docs_errors_md_lists_every_code_with_its_status_and_headers() {
        let doc = include_str!("../../docs/errors.md");
        let documented = documented_pairs(doc);
        let mut in_code = std::collections::BTreeSet::new();
        for e in one_of_each() {
            let pair = (e.status().as_u16(), e.code().to_string());
            assert!(
                documented.contains(&pair),
                "docs/errors.md has no row `| {} | `{}` |`: document the code of {e:?}",
                pair.0,
                pair.1
            );
            if e.retry_after().is_some() {
                let row = doc
                    .lines()
                    .find(|l| l.starts_with(&format!("| {} | `{}` |", pair.0, pair.1)))
                    .unwrap_or_default();
                assert!(row.contains("Retry-After"), "{}: say Retry-After", pair.1);
            }
            in_code.insert(pair);
        }
        let stale: Vec<_> = documented.difference(&in_code).collect();
        assert!(
            stale.is_empty(),
            "docs/errors.md lists status/code pairs that the code never answers: {stale:?}"
        );
    }
}
