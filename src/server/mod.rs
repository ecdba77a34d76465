//! The HTTP service: the axum router, its one middleware stack, the handlers, the error
//! envelope, auth, metrics and the admin API; and [`Server`], which starts and drains it.
//!
//! Nothing here runs a model: handlers parse, call the engine (which goes through the
//! guard), and shape responses. Errors become HTTP in one place, `error.rs`.

pub mod admin;
pub mod api;
pub mod audit;
mod door;
pub mod error;
pub mod fhir;
pub mod front;
pub mod history;
mod listen;
pub mod logs;
pub mod metrics;
pub mod middleware;
pub mod models_api;
mod ndjson;
pub mod openapi;
pub mod ops;
pub mod pii;
pub mod refusals;
pub mod reidentify;
pub mod responses;
mod router;
pub mod state;
pub mod stream;
#[cfg(test)]
mod ui_types;
pub mod validate;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use admin::{BreakerStateName, BreakerStatus, Status, TrayState};
pub use error::ApiError;
pub use router::api_doc;
use router::app;
pub use state::{AppState, Phase};

use crate::deid::{HashKey, SealKey};
use crate::engine::{DefaultModelProblem, Loader};
use crate::guard::{Clock, Jitter, Sleeper, SystemClock};
use crate::runtime::{BuildError, EngineOptions};
use crate::secrets::{SecretStore, TokenRegistry};
use crate::settings::{keys, Home, Settings};

/// Why the server could not start. No message carries request data: the server has not
/// seen a request yet, and the host and address are configuration.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Returned when the address cannot be bound (in use, no permission).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Why the operating system refused it.
        #[source]
        source: std::io::Error,
    },
    /// Returned when the settings are ones the service does not start with: auth off on a
    /// public bind, a public bind without a client token, the same client and admin token,
    /// a placeholder token, or a model alias or served name that names no installed model
    /// (`PUT /admin/settings` refuses a change to them by the same rule).
    #[error(transparent)]
    Refused(#[from] crate::settings::start::StartRefusal),
    /// Returned when the stored hash key is not 64 hex characters.
    #[error("the stored hash key is corrupt; remove it to generate a new one")]
    CorruptHashKey(#[source] crate::deid::DeidError),
    /// Returned when the stored mapping key is not 64 hex characters.
    #[error("the stored mapping key is corrupt; sealed mappings made with it cannot be opened")]
    CorruptSealKey(#[source] crate::deid::SealError),
    /// Returned when the guard refuses the settings.
    #[error(transparent)]
    Guard(#[from] crate::guard::GuardConfigError),
    /// Returned when `PHIGUARD_FAULTS` does not parse.
    #[error(transparent)]
    Faults(#[from] crate::engine::FaultSpecError),
    /// Returned when `models.device` names a device that cannot be used.
    #[error(transparent)]
    Device(BuildError),
    /// Returned when the `cluster.*` settings are invalid.
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
    /// Returned when secrets or tokens cannot be read or created. The message says where
    /// they live: a read-only or missing home was reported as a bare `Read-only file system`.
    #[error("{0} (the secrets, tokens and state live in the home folder, PHIGUARD_HOME, which must be a writable folder even when every secret comes from the environment)")]
    Secrets(#[from] crate::secrets::SecretsError),
    /// Returned when `models.default` names no installed model (a typo, a model not pulled
    /// yet): every request that names no model would be refused as if the client had asked
    /// for a model not served. The bundled model's id is not refused: a build or package
    /// without its files still starts, not ready, and says so.
    #[error(
        "models.default ({by}) is {model}, which is not installed: set it to an installed model (phiguard models list) or install that one (phiguard models pull)"
    )]
    DefaultModelNotInstalled {
        /// Where the setting was set: its variable, `settings.toml` or `default`.
        by: String,
        /// The configured default model (configuration, never a request's).
        model: String,
    },
}

impl From<BuildError> for ServerError {
    fn from(e: BuildError) -> Self {
        match e {
            BuildError::Guard(e) => ServerError::Guard(e),
            BuildError::Faults(e) => ServerError::Faults(e),
            e @ BuildError::Device { .. } => ServerError::Device(e),
        }
    }
}

impl ServerError {
    /// True when the address is held by another process (the bind failed with
    /// [`std::io::ErrorKind::AddrInUse`]): the desktop shell says "port in use" for it.
    pub fn is_addr_in_use(&self) -> bool {
        matches!(self, ServerError::Bind { source, .. }
            if source.kind() == std::io::ErrorKind::AddrInUse)
    }
}

/// What tests and embedders may inject: the engine's parts (see
/// [`EngineOptions`](crate::runtime::EngineOptions)) and the server's own.
#[derive(Default)]
pub struct StartOptions {
    /// Time source for the guard (tests use `ManualClock`).
    pub clock: Option<Arc<dyn Clock>>,
    /// Sleeper for backoff and queue waits.
    pub sleeper: Option<Arc<dyn Sleeper>>,
    /// Jitter source.
    pub jitter: Option<Arc<dyn Jitter>>,
    /// Model loader (default: candle).
    pub loader: Option<Arc<dyn Loader>>,
    /// Recognizers registered as installed models (tests: scripted backends).
    pub extra_backends: Vec<(String, Arc<dyn crate::detect::Recognizer>)>,
    /// Keep secrets in the 0600 file even where a keychain answers (tests).
    pub file_secrets: bool,
    /// Hosted by the desktop app: the webview's origins (`tauri://localhost`, …) may call.
    pub desktop: bool,
}

/// A running server.
pub struct Server {
    state: AppState,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
    /// The probe port, when `server.probe_port` is set.
    probes: Option<Probes>,
    /// The token registry's background refresh; ends with the server.
    _token_refresh: AbortOnDrop,
}

/// Open connections at most on the probe port. A fixed number, not a setting: its clients
/// are a few kubelets and Prometheus servers, each with a connection or two, and the cap
/// bounds what a stray client there can hold.
const PROBE_MAX_CONNECTIONS: usize = 64;

/// The probe port's listener (`server.probe_port`), which stops after the main one.
struct Probes {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// Binds `host:port`, returning the listener and the address it got.
async fn bind(host: &str, port: u16) -> Result<(tokio::net::TcpListener, SocketAddr), ServerError> {
    let addr_text = format!("{host}:{port}");
    let listener = tokio::net::TcpListener::bind(&addr_text)
        .await
        .map_err(|source| ServerError::Bind {
            addr: addr_text.clone(),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServerError::Bind {
        addr: addr_text,
        source,
    })?;
    Ok((listener, addr))
}

/// A background task aborted when its owner is dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Server {
    /// Starts with the real clock, candle loader and installed models.
    ///
    /// # Errors
    /// See [`ServerError`].
    pub async fn start(settings: Settings, home: Home) -> Result<Server, ServerError> {
        Self::start_with(settings, home, StartOptions::default()).await
    }

    /// Starts with injected parts (tests, embedders).
    ///
    /// # Errors
    /// See [`ServerError`].
    pub async fn start_with(
        settings: Settings,
        home: Home,
        opts: StartOptions,
    ) -> Result<Server, ServerError> {
        let host = settings.get(keys::SERVER_HOST).to_string();
        let auth_off = settings.get(keys::SECURITY_AUTH) == "off";
        if let Some(refused) = crate::settings::start::refusal(&settings) {
            return Err(ServerError::Refused(refused));
        }
        let store = Arc::new(if opts.file_secrets {
            SecretStore::file_only(home.secrets_file())
        } else {
            SecretStore::open(home.secrets_file())
        });
        let tokens = Arc::new(TokenRegistry::open(
            Arc::clone(&store),
            crate::secrets::registry_file(&home),
            Some(settings.get(keys::SECURITY_AUTH_TOKEN).to_string()),
            Some(settings.get(keys::SECURITY_ADMIN_TOKEN).to_string()),
        )?);
        let hash_key =
            HashKey::from_hex(&store.key("hash-key", settings.get(keys::SECURITY_HASH_KEY))?)
                .map_err(ServerError::CorruptHashKey)?;
        let seal_key =
            SealKey::from_hex(&store.key("mapping-key", settings.get(keys::SECURITY_MAPPING_KEY))?)
                .map_err(ServerError::CorruptSealKey)?;
        let clock: Arc<dyn Clock> = opts.clock.clone().unwrap_or_else(|| Arc::new(SystemClock));
        let desktop = opts.desktop;
        let engine = crate::runtime::build_engine(
            &settings,
            &home,
            EngineOptions {
                clock: opts.clock,
                sleeper: opts.sleeper,
                jitter: opts.jitter,
                loader: opts.loader,
                extra_backends: opts.extra_backends,
            },
        )?;
        let default_model = engine.default_model();
        if engine.resolve(None).is_err() && default_model != crate::models::store::BUNDLED_ID {
            return Err(ServerError::DefaultModelNotInstalled {
                by: settings.source_name(keys::MODELS_DEFAULT.name()),
                model: default_model,
            });
        }
        // Aliases and the served set by the same rule: a name that maps to no installed
        // model would be advertised and refused on every request. The bundled model's id
        // is not refused, as for the default: a package without its files still starts.
        let installed =
            |id: &str| engine.is_installed(id) || id == crate::models::store::BUNDLED_ID;
        if let Some(refused) = crate::settings::start::models_refusal(&settings, &installed) {
            return Err(ServerError::Refused(refused));
        }
        let port = settings.get(keys::SERVER_PORT) as u16;
        let max_body = settings.get(keys::LIMITS_MAX_REQUEST_BYTES) as usize;
        let cluster = match settings.get(keys::CLUSTER_REDIS_URL) {
            "" => None,
            url => {
                let mut cfg = crate::cluster::ClusterConfig::new(
                    url,
                    settings.get(keys::CLUSTER_ADMISSIONS).unwrap_or(1) as u32,
                );
                cfg.key_prefix = settings.get(keys::CLUSTER_KEY_PREFIX).to_string();
                cfg.window = Duration::from_secs_f64(settings.get(keys::CLUSTER_WINDOW_SECONDS));
                cfg.replicas = settings.get(keys::CLUSTER_REPLICAS) as u32;
                if let Err(crate::cluster::ClusterError::InvalidConfig { field, rule }) =
                    cfg.validate()
                {
                    // The limiter names its own field; the admin set a setting.
                    let key = match field {
                        "key_prefix" => keys::CLUSTER_KEY_PREFIX.name(),
                        "admissions" => keys::CLUSTER_ADMISSIONS.name(),
                        "window" => keys::CLUSTER_WINDOW_SECONDS.name(),
                        "replicas" => keys::CLUSTER_REPLICAS.name(),
                        _ => keys::CLUSTER_REDIS_URL.name(),
                    };
                    return Err(ServerError::Refused(
                        crate::settings::start::StartRefusal::Cluster {
                            key,
                            by: settings.source_name(key),
                            rule,
                        },
                    ));
                }
                Some(crate::cluster::ClusterLimiter::new(cfg).await)
            }
        };
        let state = AppState::new(
            settings, engine, tokens, hash_key, seal_key, clock, home, auth_off, desktop, cluster,
        );
        crate::runtime::apply_live(&state.engine, &state.settings());
        {
            let st = state.clone();
            state.engine.guard().set_breaker_listener(Some(Arc::new(
                move |t: &crate::guard::BreakerTransition| {
                    st.publish(
                        "breaker",
                        serde_json::to_value(admin::BreakerEvent::from(t)).unwrap_or_default(),
                    );
                },
            )));
        }
        let (listener, addr) = bind(&host, port).await?;
        let probe_listener = match state.settings().get(keys::SERVER_PROBE_PORT) {
            Some(p) => Some(bind(&host, p as u16).await?),
            None => None,
        };
        let _ = state.addr.set(addr);
        let router = app(state.clone(), max_body);
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let limits = {
            let s = state.settings();
            listen::ConnLimits {
                max_connections: s.get(keys::SERVER_MAX_CONNECTIONS) as usize,
                header_timeout: Duration::from_secs_f64(s.get(keys::SERVER_HEADER_TIMEOUT_SECONDS)),
            }
        };
        let conn_metrics = listen::ConnMetrics {
            open: state.metrics.connections_open.clone(),
            refused: state.metrics.connections_refused.clone(),
        };
        let probes = probe_listener.map(|(listener, addr)| {
            let router = router::probes(state.clone(), max_body);
            let (stop, stop_rx) = oneshot::channel::<()>();
            let limits = listen::ConnLimits {
                max_connections: PROBE_MAX_CONNECTIONS,
                ..limits
            };
            let task = tokio::spawn(listen::serve(
                listener,
                move |peer| listen::with_connect_info(router.clone(), peer),
                limits,
                listen::ConnMetrics {
                    open: state.metrics.probe_connections_open.clone(),
                    refused: state.metrics.probe_connections_refused.clone(),
                },
                async move {
                    let _ = stop_rx.await;
                },
            ));
            Probes { addr, stop, task }
        });
        let task = tokio::spawn(listen::serve(
            listener,
            move |peer| router.at(peer),
            limits,
            conn_metrics,
            async move {
                let _ = stop_rx.await;
            },
        ));
        {
            let st = state.clone();
            tokio::spawn(async move {
                // One clock for all three: the keep-alive sweep, the dashboard's history
                // sample and the refusal log's closed windows share its five seconds.
                history::sample(&st);
                let mut reload = Reload::default();
                loop {
                    tokio::time::sleep(history::INTERVAL).await;
                    st.engine.expire_idle();
                    reload.tick(&st).await;
                    history::sample(&st);
                    for closed in st.refusals.sweep(st.clock.now()) {
                        closed.log();
                    }
                }
            });
        }
        // Tokens rotated or revoked by another process (the CLI) apply without a restart.
        let token_refresh = AbortOnDrop(crate::secrets::spawn_refresh(
            &state.tokens,
            crate::secrets::REFRESH_PERIOD,
        ));
        preload(&state).await;
        state.set_phase(Phase::Serving);
        match &probes {
            Some(p) => tracing::info!(address = %addr, probe_address = %p.addr, "phiguard serving"),
            None => tracing::info!(address = %addr, "phiguard serving"),
        }
        Ok(Server {
            state,
            stop: Some(stop_tx),
            task,
            probes,
            _token_refresh: token_refresh,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.state
            .addr
            .get()
            .copied()
            .unwrap_or_else(|| ([127, 0, 0, 1], 0).into())
    }

    /// The probe port's address, when `server.probe_port` is set.
    pub fn probe_addr(&self) -> Option<SocketAddr> {
        self.probes.as_ref().map(|p| p.addr)
    }

    /// The status snapshot (`GET /admin/status`).
    pub fn status(&self) -> Status {
        admin::status(&self.state)
    }

    /// The admin token in use now (a rotation applies within a second or so).
    pub fn admin_token(&self) -> String {
        self.state.tokens.admin_token()
    }

    /// The primary client token in use now (a rotation or revocation applies within a second
    /// or so).
    pub fn client_token(&self) -> String {
        self.state.tokens.client_token()
    }

    /// The shared state (tests, the desktop shell).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Graceful shutdown: readiness off and new model work refused (`503 not_ready`), then
    /// in-flight work drained for up to the drain setting, then the listener closed. Returns
    /// how many admitted requests were still in flight when the drain deadline passed (they
    /// are cut off); a warning says so with the count, never anything of the requests.
    pub async fn shutdown(mut self) -> usize {
        self.state.set_phase(Phase::Draining);
        let drain = Duration::from_secs_f64(
            self.state
                .settings()
                .get(keys::SERVER_SHUTDOWN_DRAIN_SECONDS),
        );
        let until = std::time::Instant::now() + drain;
        while self
            .state
            .inflight
            .load(std::sync::atomic::Ordering::SeqCst)
            > 0
            && std::time::Instant::now() < until
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let cut_off = self
            .state
            .inflight
            .load(std::sync::atomic::Ordering::SeqCst);
        if cut_off > 0 {
            tracing::warn!(
                requests = cut_off,
                drain_seconds = drain.as_secs_f64(),
                "drain deadline passed: in-flight requests cut off (raise server.shutdown_drain_seconds)"
            );
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let left =
            until.saturating_duration_since(std::time::Instant::now()) + Duration::from_millis(500);
        if tokio::time::timeout(left, &mut self.task).await.is_err() {
            self.task.abort();
        }
        // The probe port answered `/readyz` 503 through the drain; it closes last.
        if let Some(mut probes) = self.probes.take() {
            let _ = probes.stop.send(());
            if tokio::time::timeout(Duration::from_secs(1), &mut probes.task)
                .await
                .is_err()
            {
                probes.task.abort();
            }
        }
        for closed in self.state.refusals.close_all() {
            closed.log();
        }
        cut_off
    }
}

/// Tries the default model again while its last load failed (the files were damaged and
/// then restored, a device came back), so that a replica a balancer stopped sending work to
/// becomes ready without a request or a restart. The tries back off from one tick to
/// [`Reload::MAX_TICKS`] ticks apart: a load reads and checks the whole model file.
#[derive(Default)]
struct Reload {
    /// Ticks to wait before the next try.
    wait: u32,
    /// Ticks between the last two tries.
    every: u32,
}

impl Reload {
    /// At most this many ticks (of [`history::INTERVAL`]) between tries.
    const MAX_TICKS: u32 = 12;

    async fn tick(&mut self, st: &AppState) {
        if st.engine.default_model_problem() != Some(DefaultModelProblem::LoadFailed) {
            *self = Reload::default();
            return;
        }
        if self.wait > 0 {
            self.wait -= 1;
            return;
        }
        let Ok(id) = st.engine.resolve(None) else {
            return;
        };
        if st.engine.preload(&id).await.is_ok() {
            tracing::info!(model = %id, "the default model loaded; ready");
            *self = Reload::default();
        } else {
            self.every = (self.every * 2).clamp(1, Self::MAX_TICKS);
            self.wait = self.every - 1;
        }
    }
}

/// Loads the preload list and the default model before `/readyz` turns ready, so the first
/// request does not pay for a model load.
async fn preload(st: &AppState) {
    let settings = st.settings();
    let mut names: Vec<String> = settings.get(keys::MODELS_PRELOAD).to_vec();
    let default = st.engine.default_model();
    names.retain(|n| *n != default);
    for name in &names {
        // Names from the settings (configuration, never a request's): the log names them.
        let Ok(id) = st.engine.resolve(Some(name)) else {
            tracing::warn!(
                model = %name,
                "a model of models.preload is neither installed nor an alias; skipped (phiguard models list)"
            );
            continue;
        };
        if st.engine.preload(&id).await.is_err() {
            tracing::warn!(model = %id, "a model of models.preload failed to load");
        }
    }
    // The default model last: a request that names no model needs it, and `/readyz` says
    // whether it serves. Its id is configuration, never a request's.
    match st.engine.resolve(None) {
        Err(_) => tracing::warn!(
            model = %default,
            "the default model (models.default) is not installed; requests that name no model are refused and the service is not ready"
        ),
        Ok(id) => {
            if st.engine.preload(&id).await.is_err() {
                tracing::warn!(model = %id, "the default model failed to load; not ready until it loads");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bind_refused_for_a_held_address_is_addr_in_use() {
        let bind = |kind| ServerError::Bind {
            addr: "127.0.0.1:8080".into(),
            source: std::io::Error::from(kind),
        };
        assert!(bind(std::io::ErrorKind::AddrInUse).is_addr_in_use());
        assert!(!bind(std::io::ErrorKind::PermissionDenied).is_addr_in_use());
        let host = "0.0.0.0".to_string();
        let refused = crate::settings::start::StartRefusal::TokenRequired { host };
        assert!(!ServerError::Refused(refused).is_addr_in_use());
    }

    #[test]
    fn a_held_port_fails_the_bind_as_addr_in_use() -> Result<(), Box<dyn std::error::Error>> {
        let holder = std::net::TcpListener::bind("127.0.0.1:0")?;
        let addr = holder.local_addr()?.to_string();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        let source = rt
            .block_on(tokio::net::TcpListener::bind(&addr))
            .err()
            .ok_or("bound a held port")?;
        assert!(ServerError::Bind { addr, source }.is_addr_in_use());
        Ok(())
    }

    #[test]
    fn refusals_name_the_setting_and_keep_their_wording() {
        use crate::settings::start::StartRefusal;
        let host = || "0.0.0.0".to_string();
        let auth = "PHIGUARD_AUTH=off".to_string();
        assert_eq!(
            ServerError::Refused(StartRefusal::AuthOffOnPublicBind { auth, host: host() })
                .to_string(),
            "PHIGUARD_AUTH=off is refused on a non-loopback bind (0.0.0.0); bind 127.0.0.1 or turn auth on"
        );
        assert_eq!(
            ServerError::Refused(StartRefusal::TokenRequired { host: host() }).to_string(),
            "binding 0.0.0.0 needs an explicit client token: set PHIGUARD_AUTH_TOKEN (and PHIGUARD_ADMIN_TOKEN)"
        );
        let e = ServerError::Bind {
            addr: "127.0.0.1:1".into(),
            source: std::io::Error::other("boom"),
        };
        assert_eq!(e.to_string(), "cannot listen on 127.0.0.1:1: boom");
        assert!(std::error::Error::source(&e).is_some());
    }
}
