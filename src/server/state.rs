//! Shared state of the HTTP service: settings (live), the engine, tokens, secrets, metrics,
//! lifecycle flags, the dashboard event bus, the failed-authentication limit and the audit
//! log.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use tokio::sync::broadcast;

use super::error::ApiError;
use super::metrics::Metrics;
use crate::deid::{HashKey, SealKey};
use crate::engine::Engine;
use crate::guard::{Clock, FailureLimiter, SingleFlight};
use crate::secrets::TokenRegistry;
use crate::settings::keys;
use crate::settings::{Home, Settings};

/// Service lifecycle.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Preloading; `/readyz` answers 503.
    Starting,
    /// Serving.
    Serving,
    /// Draining after SIGTERM; new work gets 503 `not_ready`.
    Draining,
}

/// A dashboard event.
#[derive(Clone, Debug)]
pub struct Event {
    /// SSE event name: `status`, `breaker`, `download`.
    pub name: &'static str,
    /// JSON payload.
    pub data: serde_json::Value,
}

/// Everything handlers and middleware share.
pub struct Inner {
    /// Current settings.
    pub settings: RwLock<Arc<Settings>>,
    /// The engine.
    pub engine: Arc<Engine>,
    /// Tokens.
    pub tokens: Arc<TokenRegistry>,
    /// The per-install HMAC key for `hash`.
    pub hash_key: HashKey,
    /// The per-install key of sealed mappings (`seal_mapping`, `POST /admin/reidentify`).
    pub seal_key: SealKey,
    /// Metrics.
    pub metrics: Metrics,
    /// Time source shared with the guard.
    pub clock: Arc<dyn Clock>,
    /// Directories.
    pub home: Home,
    /// Dashboard events.
    pub events: broadcast::Sender<Event>,
    /// Where the server listens.
    pub addr: OnceLock<SocketAddr>,
    /// Process start.
    pub started: Instant,
    phase: RwLock<Phase>,
    /// Admission-route requests in flight (drain counts these).
    pub inflight: AtomicUsize,
    /// Fast flag for the shutdown gate.
    pub draining: AtomicBool,
    /// Auth disabled (`PHIGUARD_AUTH=off` on loopback).
    pub auth_off: bool,
    /// Hosted by the desktop app: its webview's origins are allowed (nowhere else).
    pub desktop: bool,
    /// The cluster-wide admission limit (when `PHIGUARD_REDIS_URL` is set).
    pub cluster: Option<crate::cluster::ClusterLimiter>,
    /// This process's model downloads (`POST /admin/models/pull` starts them).
    pub downloads: crate::models::DownloadManager,
    /// Single-flight of identical concurrent requests (when coalescing is on).
    pub coalesce: SingleFlight<[u8; 32], Result<(serde_json::Value, bool), ApiError>>,
    /// Failed authentications per peer address (`security.auth_failure_*`).
    pub failed_auth: FailureLimiter,
    /// The admin audit log.
    pub audit: super::audit::AuditLog,
    /// The dashboard's last fifteen minutes of model-route traffic.
    pub history: super::history::History,
    /// The access log's refusals grouped by kind (see [`super::refusals`]).
    pub refusals: super::refusals::RefusalLog,
}

/// Cheaply cloneable handle.
#[derive(Clone)]
pub struct AppState(pub Arc<Inner>);

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// Assembles the state.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        settings: Settings,
        engine: Arc<Engine>,
        tokens: Arc<TokenRegistry>,
        hash_key: HashKey,
        seal_key: SealKey,
        clock: Arc<dyn Clock>,
        home: Home,
        auth_off: bool,
        desktop: bool,
        cluster: Option<crate::cluster::ClusterLimiter>,
    ) -> Self {
        let (events, _) = broadcast::channel(256);
        let metrics = Metrics::new();
        if let Some(c) = &cluster {
            if let Err(e) = c.register_metrics(metrics.registry()) {
                tracing::warn!(error = %e, "cluster metrics not registered");
            }
        }
        let audit = super::audit::AuditLog::new(
            super::audit::audit_file(&home),
            settings.get(keys::SECURITY_AUDIT_MAX_BYTES).max(0) as u64,
        );
        let failed_auth = FailureLimiter::new(Arc::clone(&clock));
        AppState(Arc::new(Inner {
            settings: RwLock::new(Arc::new(settings)),
            engine,
            tokens,
            hash_key,
            seal_key,
            metrics,
            clock,
            home,
            events,
            addr: OnceLock::new(),
            started: Instant::now(),
            phase: RwLock::new(Phase::Starting),
            inflight: AtomicUsize::new(0),
            draining: AtomicBool::new(false),
            auth_off,
            desktop,
            cluster,
            coalesce: SingleFlight::new(),
            downloads: Default::default(),
            failed_auth,
            audit,
            history: super::history::History::new(),
            refusals: super::refusals::RefusalLog::default(),
        }))
    }

    /// A snapshot of the settings.
    pub fn settings(&self) -> Arc<Settings> {
        Arc::clone(&self.settings.read())
    }

    /// The lifecycle phase.
    pub fn phase(&self) -> Phase {
        *self.phase.read()
    }

    /// Moves to `p`.
    pub fn set_phase(&self, p: Phase) {
        *self.phase.write() = p;
        self.draining.store(p == Phase::Draining, Ordering::SeqCst);
    }

    /// Publishes a dashboard event (dropped when nobody listens).
    pub fn publish(&self, name: &'static str, data: serde_json::Value) {
        let _ = self.events.send(Event { name, data });
    }

    /// Seconds since start.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Resolves a requested model name (None = the default) to an installed id; a name that
    /// is not served is a 422 `model_not_served` listing the names that would work.
    ///
    /// # Errors
    /// [`ApiError::ModelNotServed`].
    pub fn resolve_model(&self, requested: Option<&str>) -> Result<String, ApiError> {
        let engine = &self.engine;
        engine.resolve(requested).map_err(|_| {
            let available = engine
                .served_names()
                .into_iter()
                .filter(|n| engine.resolve(Some(n)).is_ok())
                .collect();
            ApiError::ModelNotServed { available }
        })
    }
}
