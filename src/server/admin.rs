//! The admin API under `/admin/` (admin scope): status, settings, breakers, tokens, faults,
//! models, the audit log and the dashboard's server-sent events. Handlers parse, call the
//! core and shape JSON; the logic lives in `settings`, `guard`, `secrets`, `engine` and
//! `models`. Every handler that changes something writes an audit record (`audit.rs`).
//!
//! Why typed answers: the server, the desktop shell and the dashboard all read `Status`. As
//! `json!` values re-read by string keys, a renamed or retyped field compiled everywhere and
//! showed up as an empty card or a tray that said "unknown". The structs here are the wire
//! format (serde, field order = key order), their schemas document the routes, and the
//! dashboard's `ui/types.js` is generated from those schemas (`ui_types.rs`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::api::{EvalRequest, TokenCreateRequest};
use super::audit::{self, Action, Actor};
use super::error::{ApiError, FieldProblem};
use super::middleware::Body;
use super::state::{AppState, Phase};
use super::validate::{parse, parse_object};
use crate::cluster::{ClusterMode, ClusterStats};
use crate::guard::{BreakerSnapshot, BreakerState, BreakerTransition};
use crate::secrets::TokenInfo;
use crate::settings::{keys, SettingSource, Value as SettingValue, TABLE};

/// Tray colour, computed once here so the tray, the dashboard and tests agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TrayState {
    /// Serving, every breaker closed.
    Green,
    /// A breaker half-open, degraded mode answering, or admission shedding.
    Amber,
    /// Stopped or draining, or a breaker open with no fallback.
    Red,
}

/// `GET /admin/status` and the `status` event: what the dashboard and the tray show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Status {
    /// `starting`, `serving`, `draining`.
    pub state: Phase,
    /// Bound address (empty before the listener is bound).
    pub address: String,
    /// Seconds since start.
    pub uptime_seconds: f64,
    /// Version.
    pub version: String,
    /// Tray colour.
    pub tray: TrayState,
    /// Degraded mode on by default.
    pub degraded_fallback: bool,
    /// One entry per model breaker.
    pub breakers: Vec<BreakerStatus>,
    /// Admission queue.
    pub admission: AdmissionStatus,
    /// Totals (the dashboard derives rates).
    pub totals: Totals,
    /// The cluster-wide limit: `null` when per process.
    #[schema(required = true)]
    pub cluster: Option<ClusterStatus>,
}

impl Status {
    /// The tray colour.
    pub fn tray(&self) -> TrayState {
        self.tray
    }
}

// The guard's `BreakerState`, mirrored here so that `guard` stays free of serde and schemas.
/// A breaker's state on the wire (`half_open`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BreakerStateName {
    /// Calls flow; failures are counted.
    Closed,
    /// Calls fail fast until `retry_after_seconds` pass.
    Open,
    /// A bounded number of probes decide between closed and open.
    HalfOpen,
    /// Turned off by an admin: every call flows, nothing is recorded.
    Disabled,
    /// Opened by an admin: every call fails fast until a reset.
    ForcedOpen,
}

impl From<BreakerState> for BreakerStateName {
    fn from(s: BreakerState) -> Self {
        match s {
            BreakerState::Closed => Self::Closed,
            BreakerState::Open => Self::Open,
            BreakerState::HalfOpen => Self::HalfOpen,
            BreakerState::Disabled => Self::Disabled,
            BreakerState::ForcedOpen => Self::ForcedOpen,
        }
    }
}

/// One model breaker, in `/admin/status` and as `POST /admin/breakers/{key}/{action}`'s answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BreakerStatus {
    /// The breaker's key: the model id.
    pub key: String,
    /// The model id (the same as `key`).
    pub model_id: String,
    /// Its state now (an elapsed open breaker shows as half-open).
    pub state: BreakerStateName,
    /// Consecutive failed logical requests in the closed state.
    pub consecutive_failures: u32,
    /// Whole seconds before a call can be admitted; 0 when calls flow now.
    pub retry_after_seconds: u64,
    /// Failure rate in percent over the window; `null` until it holds enough calls.
    #[schema(required = true)]
    pub failure_rate: Option<f64>,
}

impl From<&BreakerSnapshot> for BreakerStatus {
    fn from(b: &BreakerSnapshot) -> Self {
        BreakerStatus {
            key: b.key.clone(),
            model_id: b.key.clone(),
            state: b.state.into(),
            consecutive_failures: b.consecutive_failures,
            retry_after_seconds: b.retry_after_seconds,
            failure_rate: b.failure_rate,
        }
    }
}

/// The `breaker` event: a breaker changed state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct BreakerEvent {
    /// The breaker's key: the model id.
    pub key: String,
    /// The state it left.
    pub from: BreakerStateName,
    /// The state it entered.
    pub to: BreakerStateName,
}

impl From<&BreakerTransition> for BreakerEvent {
    fn from(t: &BreakerTransition) -> Self {
        BreakerEvent {
            key: t.key.to_string(),
            from: t.from.into(),
            to: t.to.into(),
        }
    }
}

/// The admission queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AdmissionStatus {
    /// Queued plus running, by priority.
    pub depth: QueueDepth,
    /// Whether the high-watermark hysteresis is shedding.
    pub shedding: bool,
    /// Shedding starts at this depth.
    pub high_watermark: u64,
    /// Shedding stops below this depth.
    pub low_watermark: u64,
}

/// Requests queued or running, by priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct QueueDepth {
    /// `interactive` priority.
    pub interactive: usize,
    /// `bulk` priority.
    pub bulk: usize,
}

/// Counters since start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Totals {
    /// Requests answered, every route.
    pub requests: u64,
    /// Requests answered with a 5xx, every route.
    pub errors: u64,
    /// Requests to the model routes (`/pii/*`, `/analyze`) answered: the work users send,
    /// without probes or admin calls.
    pub model_requests: u64,
    /// Of those, answered with a 5xx.
    pub model_errors: u64,
    /// Of those, answered 429 by a rate limit.
    pub rate_limited: u64,
    /// Requests shed by admission, every priority and reason.
    pub shed: u64,
    /// Backend retries.
    pub retries: u64,
    /// Backend attempts (first attempts plus retries).
    pub attempts: u64,
}

/// The cluster-wide admission limit of this replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ClusterStatus {
    /// `shared` (through Redis) or `local_fallback`.
    pub mode: ClusterMode,
    /// Counters since start.
    pub stats: ClusterStats,
}

/// Builds the status snapshot.
pub fn status(st: &AppState) -> Status {
    let guard = st.engine.guard();
    let snaps = guard.breakers();
    let adm = guard.admission_snapshot();
    let fallback = st.engine.fallback_default();
    let any = |f: &dyn Fn(BreakerState) -> bool| snaps.iter().any(|b| f(b.state));
    let open = any(&|s| matches!(s, BreakerState::Open | BreakerState::ForcedOpen));
    let half = any(&|s| s == BreakerState::HalfOpen);
    let phase = st.phase();
    let tray = if phase != Phase::Serving
        || (open && !fallback)
        || st.engine.default_model_problem().is_some()
    {
        TrayState::Red
    } else if half || open || adm.shedding {
        TrayState::Amber
    } else {
        TrayState::Green
    };
    let settings = st.settings();
    let stats = guard.stats();
    let (requests, errors) = st.metrics.requests_total();
    let model = st.metrics.model_totals();
    let shed: u64 = stats.shed.iter().flatten().sum();
    Status {
        state: phase,
        address: st.addr.get().map(|a| a.to_string()).unwrap_or_default(),
        uptime_seconds: st.uptime().as_secs_f64(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        tray,
        degraded_fallback: fallback,
        breakers: snaps.iter().map(BreakerStatus::from).collect(),
        admission: AdmissionStatus {
            depth: QueueDepth {
                interactive: adm.depth[0],
                bulk: adm.depth[1],
            },
            shedding: adm.shedding,
            high_watermark: settings.high_watermark(),
            low_watermark: settings.low_watermark(),
        },
        totals: Totals {
            requests,
            errors,
            model_requests: model.requests,
            model_errors: model.errors,
            rate_limited: model.rate_limited,
            shed,
            retries: stats.retries,
            attempts: stats.attempts,
        },
        cluster: st.cluster.as_ref().map(|c| ClusterStatus {
            mode: c.mode(),
            stats: c.stats(),
        }),
    }
}

/// `GET /admin/status`.
#[utoipa::path(get, path = "/admin/status", tag = "admin", security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "breakers, admission, cluster and totals (the dashboard's status)", body = Status)))]
pub async fn admin_status(State(st): State<AppState>) -> Response {
    axum::Json(status(&st)).into_response()
}

/// `GET /admin/settings` and `PUT /admin/settings`'s answer: every setting, in table order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SettingsList {
    /// One row per key of the settings table.
    pub settings: Vec<SettingInfo>,
}

/// One setting as the dashboard edits it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SettingInfo {
    /// Dotted key, `group.name`.
    pub key: String,
    /// The part of `key` before the dot.
    pub group: String,
    /// The `PHIGUARD_*` environment variable.
    pub env: String,
    /// OpenMed's variable for the same setting; `null` when there is none.
    #[schema(required = true)]
    pub alias: Option<String>,
    /// `int`, `float`, `bool`, `enum`, `string` or `list`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The fixed choices of an enum; `null` for the other types.
    #[schema(required = true)]
    pub choices: Option<Vec<String>>,
    /// The default as its typed value; `null` when unset or secret.
    pub default: Value,
    /// The effective value; `null` when unset or secret.
    pub value: Value,
    /// Where the value came from.
    pub source: SettingSource,
    /// Set by the environment, or secret: the dashboard cannot change it.
    pub locked: bool,
    /// What a valid value looks like, in words.
    pub rule: String,
    /// What the setting does.
    pub description: String,
    /// Never shown, never written to `settings.toml`.
    pub secret: bool,
    /// Takes effect only after a restart.
    pub restart_required: bool,
}

fn settings_list(s: &crate::settings::Settings) -> SettingsList {
    let settings = TABLE
        .iter()
        .map(|d| {
            let value = if d.secret {
                Value::Null
            } else {
                serde_json::to_value(s.value(d.key)).unwrap_or(Value::Null)
            };
            let default = d.kind.parse(d.default).unwrap_or(SettingValue::Unset);
            SettingInfo {
                key: d.key.to_owned(),
                group: d.group().to_owned(),
                env: d.env.to_owned(),
                alias: d.alias.map(str::to_owned),
                kind: d.kind.type_name().to_owned(),
                choices: d
                    .kind
                    .choices()
                    .map(|c| c.iter().map(|w| (*w).to_owned()).collect()),
                default: if d.secret {
                    Value::Null
                } else {
                    serde_json::to_value(default).unwrap_or(Value::Null)
                },
                value,
                source: s.source(d.key),
                locked: s.source(d.key) == SettingSource::Env || d.secret,
                rule: d.kind.rule(),
                description: d.description.to_owned(),
                secret: d.secret,
                restart_required: d.restart,
            }
        })
        .collect();
    SettingsList { settings }
}

/// `GET /admin/settings`.
#[utoipa::path(get, path = "/admin/settings", tag = "admin", security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "every setting: key, env, type, choices, default, value, source, rule", body = SettingsList)))]
pub async fn admin_settings_get(State(st): State<AppState>) -> Response {
    axum::Json(settings_list(&st.settings())).into_response()
}

/// `PUT /admin/settings` — validate all, apply live, persist; 422 lists each bad field.
#[utoipa::path(put, path = "/admin/settings", tag = "admin", security(("bearer" = []), ("api_key" = [])), request_body(content = super::openapi::SettingsPatch, content_type = "application/json"), responses((status = 200, description = "the settings after the change", body = SettingsList)))]
pub async fn admin_settings_put(
    State(st): State<AppState>,
    actor: Actor,
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let before = st.settings();
    let outcome = settings_put(&st, &before, &body, (&headers, &uri));
    match &outcome {
        Ok(keys) => {
            let after = st.settings();
            // One record per key, old and new value (a secret one masked).
            for key in keys {
                let mut action = Action::new("settings.update");
                action.target(*key).change(
                    audit::setting_value(key, before.value(key)),
                    audit::setting_value(key, after.value(key)),
                );
                audit::record(&st, &actor, action, &Ok::<(), ApiError>(())).await;
            }
        }
        // Refused: nothing changed, and the submitted keys may be unknown names.
        Err(_) => audit::record(&st, &actor, Action::new("settings.update"), &outcome).await,
    }
    outcome.map(|_| axum::Json(settings_list(&st.settings())).into_response())
}

/// Validates, persists and applies a settings patch on top of `before`; the changed keys.
fn settings_put(
    st: &AppState,
    before: &crate::settings::Settings,
    body: &[u8],
    (headers, uri): (&axum::http::HeaderMap, &axum::http::Uri),
) -> Result<Vec<&'static str>, ApiError> {
    let map = parse_object(body)?;
    let changes: Vec<(String, String)> = map
        .iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                Value::Array(a) => a
                    .iter()
                    .map(|x| {
                        x.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| x.to_string())
                    })
                    .collect::<Vec<_>>()
                    .join(","),
                other => other.to_string(),
            };
            (k.clone(), text)
        })
        .collect();
    let mut next = before.clone();
    next.apply(&changes).map_err(|errs| {
        ApiError::Validation(
            errs.into_iter()
                .map(|e| FieldProblem::new(e.field, e.message, "value_error"))
                .collect(),
        )
    })?;
    // A default, alias or served name that names no installed model (the default would
    // refuse every request that names none, as `POST /admin/models/default` refuses it; the
    // others every request naming them, and the next start would stop), by the rule
    // `phiguard settings set` uses; the message names the entry's position, never the name.
    let installed = |id: &str| st.engine.is_installed(id);
    if let Some(r) = crate::settings::start::change_refusal(before, &next, &installed) {
        return Err(ApiError::Validation(vec![FieldProblem::new(
            r.key().to_string(),
            r.rule(),
            "value_error",
        )]));
    }
    // Trusted hosts that leave out the Host this request came by would lock the admin API
    // out (400 on every call, saved to the file): refused, the Host itself never echoed.
    let trusted = next.get(keys::SECURITY_TRUSTED_HOSTS);
    if trusted != before.get(keys::SECURITY_TRUSTED_HOSTS)
        && !super::middleware::hosts_trusted(headers, uri, trusted)
    {
        return Err(ApiError::Validation(vec![FieldProblem::new(
            keys::SECURITY_TRUSTED_HOSTS.name().to_string(),
            "would not trust the Host of this request, which would lock the admin API out; include it"
                .to_string(),
            "value_error",
        )]));
    }
    // Every key was found in the table by `apply`.
    let keys: Vec<&'static str> = changes
        .iter()
        .filter_map(|(k, _)| crate::settings::table::def(k).map(|d| d.key))
        .collect();
    next.persist(&keys).map_err(persist_error)?;
    crate::runtime::apply_live(&st.engine, &next);
    *st.settings.write() = std::sync::Arc::new(next);
    st.publish(
        "status",
        serde_json::to_value(status(st)).unwrap_or(Value::Null),
    );
    Ok(keys)
}

/// The answer to a change `settings.toml` could not take: `409` when the file does not
/// parse (the admin is editing it; nothing was changed, and it is not written over),
/// `500` when it could not be read or written.
pub(super) fn persist_error(e: crate::settings::SettingsError) -> ApiError {
    match e {
        crate::settings::SettingsError::File { .. } => {
            tracing::warn!("settings.toml does not parse; the change was not saved");
            ApiError::Conflict {
                message: "settings.toml does not parse (phiguard settings list names the line): fix the file first; nothing was changed",
            }
        }
        e => {
            tracing::error!(error = %e, "could not persist settings");
            ApiError::Internal
        }
    }
}

/// `POST /admin/breakers/{key}/{action}` with action `reset`, `force-open`, `disable`.
#[utoipa::path(post, path = "/admin/breakers/{key}/{action}", tag = "admin", security(("bearer" = []), ("api_key" = [])), params(("key" = String, Path, description = "an installed model id"), ("action" = String, Path, description = "`reset`, `force-open` or `disable`")), responses((status = 200, description = "the breaker after the action", body = BreakerStatus), (status = 404, description = "no such model or action (`not_found`)", body = super::error::ErrorEnvelope)))]
pub async fn admin_breaker_action(
    State(st): State<AppState>,
    actor: Actor,
    Path((key, action)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let name = match action.as_str() {
        "reset" => "breaker.reset",
        "force-open" => "breaker.force_open",
        "disable" => "breaker.disable",
        _ => "breaker.unknown_action",
    };
    let mut record = Action::new(name);
    let outcome = breaker_action(&st, &key, &action, &mut record);
    audit::record(&st, &actor, record, &outcome).await;
    outcome
}

fn breaker_action(
    st: &AppState,
    key: &str,
    action: &str,
    record: &mut Action,
) -> Result<Response, ApiError> {
    // Only keys of installed models: a request-derived name never reaches the guard.
    if !st.engine.is_installed(key) {
        return Err(ApiError::NoSuchResource);
    }
    record.target(key);
    let guard = st.engine.guard();
    let before = guard.breaker(key).snapshot().state;
    match action {
        "reset" => guard.reset_breaker(key),
        "force-open" => guard.force_open_breaker(key),
        "disable" => guard.disable_breaker(key),
        _ => return Err(ApiError::NotFound),
    }
    let snap = guard.breaker(key).snapshot();
    record.change(json!(before.as_str()), json!(snap.state.as_str()));
    st.publish(
        "status",
        serde_json::to_value(status(st)).unwrap_or(Value::Null),
    );
    Ok(axum::Json(BreakerStatus::from(&snap)).into_response())
}

/// `GET /admin/tokens`.
#[utoipa::path(get, path = "/admin/tokens", tag = "admin", security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "the primary client token (id `client`, `primary: true`) and the issued tokens: ids, labels, scopes, prefixes; never the secrets or their digests", body = TokenList)))]
pub async fn admin_tokens_list(State(st): State<AppState>) -> Response {
    // The background refresh runs every second; a listing shows changes made elsewhere now.
    let tokens = Arc::clone(&st.tokens);
    if let Ok(Err(e)) = tokio::task::spawn_blocking(move || tokens.refresh()).await {
        tracing::warn!(error = %e, "token registry refresh failed");
    }
    axum::Json(TokenList {
        tokens: st.tokens.list(),
    })
    .into_response()
}

/// `GET /admin/tokens`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TokenList {
    /// The primary client token first, then the issued ones.
    pub tokens: Vec<TokenInfo>,
}

/// `POST /admin/tokens` `{"label","scope"}` → 201 with the token (shown once).
#[utoipa::path(post, path = "/admin/tokens", tag = "admin", security(("bearer" = []), ("api_key" = [])), request_body(content = TokenCreateRequest, content_type = "application/json"), responses((status = 201, description = "the new token, its secret shown this once", body = crate::secrets::NewToken)))]
pub async fn admin_tokens_create(
    State(st): State<AppState>,
    actor: Actor,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let mut record = Action::new("token.create");
    let outcome = tokens_create(&st, &body, &mut record).await;
    audit::record(&st, &actor, record, &outcome).await;
    outcome
}

async fn tokens_create(
    st: &AppState,
    body: &[u8],
    record: &mut Action,
) -> Result<Response, ApiError> {
    let req: TokenCreateRequest = parse(body, super::pii::limits(st))?;
    let lifetime = req
        .expires_in_seconds
        .map(|s| Duration::from_secs(s.unsigned_abs()));
    let scope = req.scope;
    let tokens = Arc::clone(&st.tokens);
    let label = req.label.unwrap_or_default().trim().to_string();
    let t = tokio::task::spawn_blocking(move || tokens.create(&label, scope, lifetime))
        .await
        .map_err(|_| ApiError::Internal)?
        .map_err(|e| {
            tracing::error!(error = %e, "could not create a token");
            ApiError::Internal
        })?;
    record
        .target(t.id.clone())
        .details(json!({"label": t.label, "scope": t.scope, "expires_at": t.expires_at}));
    Ok((StatusCode::CREATED, axum::Json(t)).into_response())
}

/// `GET /admin/audit`: the latest audit records, newest first.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct AuditList {
    /// Newest first.
    pub entries: Vec<super::audit::AuditRecord>,
}

/// `DELETE /admin/tokens/{id}` → 204. Revoking `client`, the primary client token, replaces
/// it with a fresh one (which `phiguard token show` prints); the old one is refused at once.
#[utoipa::path(delete, path = "/admin/tokens/{id}", tag = "admin", security(("bearer" = []), ("api_key" = [])), params(("id" = String, Path, description = "token id; `client` is the primary client token, replaced by a fresh one when revoked")), responses((status = 204, description = "revoked"), (status = 404, description = "no such token", body = super::error::ErrorEnvelope), (status = 409, description = "the primary client token is set by PHIGUARD_AUTH_TOKEN and cannot be replaced here", body = super::error::ErrorEnvelope)))]
pub async fn admin_tokens_revoke(
    State(st): State<AppState>,
    actor: Actor,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let mut record = Action::new("token.revoke");
    let outcome = tokens_revoke(&st, id, &mut record).await;
    audit::record(&st, &actor, record, &outcome).await;
    outcome
}

async fn tokens_revoke(
    st: &AppState,
    id: String,
    record: &mut Action,
) -> Result<Response, ApiError> {
    // Ids are only ever compared with the registry's; revoking the primary client token
    // replaces it (the store may be the keychain: off the async workers).
    let tokens = Arc::clone(&st.tokens);
    let revoked = id.clone();
    let outcome = tokio::task::spawn_blocking(move || tokens.revoke(&revoked))
        .await
        .map_err(|_| ApiError::Internal)?;
    match outcome {
        Ok(()) => {
            record.target(id);
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        Err(crate::secrets::SecretsError::NoSuchToken) => Err(ApiError::NoSuchResource),
        Err(crate::secrets::SecretsError::Pinned { .. }) => {
            record.target(crate::secrets::PRIMARY_CLIENT_ID);
            Err(ApiError::Conflict {
                message: "The primary client token is set by PHIGUARD_AUTH_TOKEN; change it there and restart",
            })
        }
        Err(e) => {
            tracing::error!(error = %e, "could not revoke a token");
            Err(ApiError::Internal)
        }
    }
}

/// `GET /admin/faults` (fault-injection builds).
pub async fn admin_faults_get(State(st): State<AppState>) -> Response {
    axum::Json(st.engine.faults()).into_response()
}

/// `PUT /admin/faults` `{"infer":"fail","load":"ok"}` (fault-injection builds).
pub async fn admin_faults_put(
    State(st): State<AppState>,
    actor: Actor,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let mut record = Action::new("faults.set");
    let outcome = faults_put(&st, &body, &mut record);
    audit::record(&st, &actor, record, &outcome).await;
    outcome
}

fn faults_put(st: &AppState, body: &[u8], record: &mut Action) -> Result<Response, ApiError> {
    let map = parse_object(body)?;
    let mut parts = Vec::new();
    for (k, v) in &map {
        let Some(mode) = v.as_str() else {
            return Err(ApiError::Validation(vec![FieldProblem::new(
                "body",
                "fault modes must be strings",
                "string_type",
            )]));
        };
        parts.push(format!("{k}={mode}"));
    }
    let before = serde_json::to_value(st.engine.faults()).unwrap_or(Value::Null);
    st.engine.set_faults(&parts.join(",")).map_err(|e| {
        ApiError::Validation(vec![FieldProblem::new(
            "body",
            e.to_string(),
            "value_error",
        )])
    })?;
    // The snapshots hold the fault points and modes only: closed vocabularies.
    let after = serde_json::to_value(st.engine.faults()).unwrap_or(Value::Null);
    record.change(before, after.clone());
    Ok(axum::Json(after).into_response())
}

/// The most records `GET /admin/audit` returns at once, and how many without `limit`.
const AUDIT_LIMIT_MAX: usize = 1000;
const AUDIT_LIMIT_DEFAULT: usize = 100;

/// `GET /admin/audit?limit=N`: the latest audit records, newest first.
#[utoipa::path(get, path = "/admin/audit", tag = "admin", security(("bearer" = []), ("api_key" = [])), params(("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "how many records, newest first (default 100)")), responses((status = 200, description = "the latest admin actions, newest first: time, actor (token id), peer, action, target, old/new values, result", body = AuditList), (status = 422, description = "`limit` is not an integer from 1 to 1000 (`validation_error`)", body = super::error::ErrorEnvelope)))]
pub async fn admin_audit(
    State(st): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let limit = audit_limit(query.as_deref())?;
    let entries = tokio::task::spawn_blocking(move || st.audit.latest(limit))
        .await
        .map_err(|_| ApiError::Internal)?
        .map_err(|e| {
            tracing::error!(error = %e, "could not read the audit log");
            ApiError::Internal
        })?;
    Ok(axum::Json(AuditList { entries }).into_response())
}

/// `limit` from the query string: absent → the default; else an integer in range.
fn audit_limit(query: Option<&str>) -> Result<usize, ApiError> {
    let raw = query
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("limit="));
    match raw {
        None => Ok(AUDIT_LIMIT_DEFAULT),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=AUDIT_LIMIT_MAX).contains(&n) => Ok(n),
            _ => Err(ApiError::Validation(vec![FieldProblem::new(
                "query.limit",
                format!("Input should be an integer from 1 to {AUDIT_LIMIT_MAX}"),
                "value_error",
            )])),
        },
    }
}

/// `GET /admin/events`: server-sent events for the dashboard: `status` every second and on
/// every change (a [`Status`]), `breaker` on transitions (a [`BreakerEvent`]), `download` on
/// progress (a [`DownloadInfo`](super::models_api::DownloadInfo)).
#[utoipa::path(get, path = "/admin/events", tag = "admin", security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "server-sent events: `status` (a Status) every second and on change, `breaker` (a BreakerEvent) on transitions, `download` (a DownloadInfo) on progress", body = String, content_type = "text/event-stream")))]
pub async fn admin_events(
    State(st): State<AppState>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let rx = st.events.subscribe();
    let s = futures::stream::unfold((st, rx, true), |(st, mut rx, first)| async move {
        let ev = if first {
            status_event(&st)
        } else {
            tokio::select! {
                r = rx.recv() => match r {
                    Ok(e) => SseEvent::default().event(e.name).data(e.data.to_string()),
                    Err(_) => status_event(&st),
                },
                _ = tokio::time::sleep(Duration::from_secs(1)) => status_event(&st),
            }
        };
        Some((Ok(ev), (st, rx, false)))
    });
    Sse::new(s).keep_alive(KeepAlive::default())
}

fn status_event(st: &AppState) -> SseEvent {
    SseEvent::default()
        .event("status")
        .data(serde_json::to_string(&status(st)).unwrap_or_default())
}

/// `POST /admin/eval` `{"gold": "<JSONL or JSON array>", "model_name"?, "method"?}`: the
/// `phiguard eval` report as JSON, for the dashboard. Gold errors name the line, never
/// the text.
#[utoipa::path(post, path = "/admin/eval", tag = "admin", security(("bearer" = []), ("api_key" = [])), request_body(content = EvalRequest, content_type = "application/json"), responses((status = 200, description = "the `phiguard eval` report", body = crate::eval::Report)))]
pub async fn admin_eval(
    State(st): State<AppState>,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let req: EvalRequest = parse(&body, super::pii::limits(&st))?;
    let docs = crate::eval::read_gold_str(&req.gold, None).map_err(|e| {
        ApiError::Validation(vec![FieldProblem::new(
            "body.gold",
            e.to_string(),
            "value_error",
        )])
    })?;
    let id = st.resolve_model(req.model_name.as_deref())?;
    let (report, _) = crate::engine::evaluate::evaluate(
        &st.engine,
        &id,
        &docs,
        req.method,
        req.confidence_threshold as f32,
        crate::detect::Detectors::Both,
        || {},
    )
    .await?;
    Ok(axum::Json(report).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cluster: Option<ClusterStatus>) -> Status {
        Status {
            state: Phase::Serving,
            address: "127.0.0.1:8080".into(),
            uptime_seconds: 12.5,
            version: "0.1.0".into(),
            tray: TrayState::Amber,
            degraded_fallback: true,
            breakers: vec![BreakerStatus::from(&BreakerSnapshot {
                key: "phiguard-deid".into(),
                state: BreakerState::HalfOpen,
                consecutive_failures: 3,
                retry_after_seconds: 0,
                failure_rate: Some(62.5),
            })],
            admission: AdmissionStatus {
                depth: QueueDepth {
                    interactive: 2,
                    bulk: 7,
                },
                shedding: false,
                high_watermark: 100,
                low_watermark: 50,
            },
            totals: Totals {
                requests: 40,
                errors: 4,
                model_requests: 30,
                model_errors: 3,
                rate_limited: 2,
                shed: 1,
                retries: 5,
                attempts: 45,
            },
            cluster,
        }
    }

    /// The wire format the dashboard and scripts have always read, key order included.
    #[test]
    fn status_serialises_to_the_documented_json() -> serde_json::Result<()> {
        let stats = ClusterStats {
            admitted: 9,
            rejected: 1,
            fallbacks: 0,
            redis_errors: 2,
        };
        let with = sample(Some(ClusterStatus {
            mode: ClusterMode::LocalFallback,
            stats,
        }));
        let want = json!({
            "state": "serving", "address": "127.0.0.1:8080", "uptime_seconds": 12.5,
            "version": "0.1.0", "tray": "amber", "degraded_fallback": true,
            "breakers": [{"key": "phiguard-deid", "model_id": "phiguard-deid", "state": "half_open",
                          "consecutive_failures": 3, "retry_after_seconds": 0, "failure_rate": 62.5}],
            "admission": {"depth": {"interactive": 2, "bulk": 7}, "shedding": false,
                          "high_watermark": 100, "low_watermark": 50},
            "totals": {"requests": 40, "errors": 4, "model_requests": 30, "model_errors": 3,
                       "rate_limited": 2, "shed": 1, "retries": 5, "attempts": 45},
            "cluster": {"mode": "local_fallback",
                        "stats": {"admitted": 9, "rejected": 1, "fallbacks": 0, "redis_errors": 2}},
        });
        assert_eq!(serde_json::to_string(&with)?, want.to_string());
        let without = serde_json::to_value(sample(None))?;
        assert_eq!(without["cluster"], Value::Null);
        Ok(())
    }

    #[test]
    fn status_reads_back() -> serde_json::Result<()> {
        let status = sample(None);
        let back: Status = serde_json::from_str(&serde_json::to_string(&status)?)?;
        assert_eq!(back, status);
        Ok(())
    }

    /// The rows as the handler built them with `json!` before `SettingInfo`.
    fn settings_json(s: &crate::settings::Settings) -> Value {
        let rows: Vec<Value> = TABLE
            .iter()
            .map(|d| {
                let value = if d.secret {
                    Value::Null
                } else {
                    serde_json::to_value(s.value(d.key)).unwrap_or(Value::Null)
                };
                let default = d.kind.parse(d.default).unwrap_or(SettingValue::Unset);
                json!({
                    "key": d.key, "group": d.group(), "env": d.env, "alias": d.alias,
                    "type": d.kind.type_name(), "choices": d.kind.choices(),
                    "default": if d.secret { Value::Null } else { serde_json::to_value(default).unwrap_or(Value::Null) },
                    "value": value, "source": s.source(d.key),
                    "locked": s.source(d.key) == SettingSource::Env || d.secret,
                    "rule": d.kind.rule(), "description": d.description, "secret": d.secret,
                    "restart_required": d.restart,
                })
            })
            .collect();
        json!({ "settings": rows })
    }

    #[test]
    fn settings_list_serialises_to_the_documented_json() -> Result<(), Box<dyn std::error::Error>> {
        let mut s = crate::settings::Settings::defaults();
        s.apply(&[
            ("server.port".into(), "9123".into()),
            ("models.default".into(), "phiguard-deid".into()),
        ])
        .map_err(|e| format!("{e:?}"))?;
        let list = settings_list(&s);
        assert!(list
            .settings
            .iter()
            .any(|r| r.source == SettingSource::File));
        assert!(list.settings.iter().any(|r| r.secret));
        assert!(list.settings.iter().any(|r| r.choices.is_some()));
        assert_eq!(serde_json::to_string(&list)?, settings_json(&s).to_string());
        let back: SettingsList = serde_json::from_str(&serde_json::to_string(&list)?)?;
        assert_eq!(back, list);
        Ok(())
    }

    /// The `breaker` event, against the `json!` the listener built before `BreakerEvent`.
    #[test]
    fn breaker_event_serialises_to_the_documented_json() -> serde_json::Result<()> {
        for (from, to) in [
            (BreakerState::Closed, BreakerState::Open),
            (BreakerState::Open, BreakerState::HalfOpen),
            (BreakerState::Disabled, BreakerState::ForcedOpen),
        ] {
            let t = BreakerTransition {
                key: Arc::from("phiguard-deid"),
                from,
                to,
            };
            let want =
                json!({"key": t.key.to_string(), "from": t.from.as_str(), "to": t.to.as_str()});
            assert_eq!(
                serde_json::to_string(&BreakerEvent::from(&t))?,
                want.to_string()
            );
        }
        Ok(())
    }

    #[test]
    fn breaker_state_names_are_the_guard_labels() {
        for state in BreakerState::ALL {
            let wire = serde_json::to_value(BreakerStateName::from(state)).ok();
            assert_eq!(wire, Some(json!(state.as_str())), "{state}");
        }
    }
}
