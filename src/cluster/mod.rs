//! The cluster-wide admission limit: every replica of a scaled-out deployment draws from
//! one budget of `admissions` per `window` kept in Redis, and falls back to its own share
//! of that budget whenever Redis is unreachable or slow.
//!
//! # Why a sliding-window log?
//!
//! A fixed window (`INCR key:<second>`) admits a double burst at every boundary: `N` calls
//! at the end of one second and `N` more at the start of the next pass within a few
//! milliseconds of each other. A token bucket smooths that out but needs floating-point
//! state and per-call refill arithmetic that every replica must agree on. The sliding log
//! keeps one sorted-set member per admission, scored by its time; a call is admitted only
//! if fewer than `N` members are younger than `window`. That is exactly the promise made
//! to operators ("at most N in any W seconds") and it costs `N` small members per key.
//! Rejected calls are never recorded, so clients that retry too early cannot push the
//! window forward and lock themselves out.
//!
//! # Why Redis `TIME` inside one Lua script?
//!
//! The decision "trim old members, count, add" must be atomic across replicas, or two
//! replicas can both see `N - 1` and both admit. A Lua script runs without interleaving.
//! Reading the clock with `TIME` inside the script means every decision uses the Redis
//! server's clock: replica hosts whose clocks drift apart cannot stretch or shrink the
//! window. Members carry a random id so two admissions in the same microsecond stay two
//! members. Keys and members hold timestamps, random ids and token ids, never text.
//!
//! # Why fall back instead of failing or waiting?
//!
//! Redis is an optimisation of fairness across replicas, not a dependency of the product:
//! a replica must never hang on it, and must never become unlimited without it. Every
//! Redis call is bounded by tight connect and command timeouts. On a failure the replica
//! switches to an in-process sliding log with `admissions / replicas` per window (its fair
//! share), raises the `phiguard_cluster_limit_fallback` gauge and logs one line per
//! episode (rate-limited). It then probes Redis in the background after a back-off that
//! doubles per failed probe, so a dead Redis is not hammered by every request, and returns
//! to the shared limit as soon as a probe succeeds. Requests never wait for a probe.

mod config;
mod error;
mod local;
mod metrics;
mod script;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::time::Instant;

pub use config::ClusterConfig;
pub use error::{ClusterError, ClusterRejected, Result};

use local::LocalWindow;
use metrics::{ClusterMetrics, ADMITTED, MODE_LOCAL, MODE_SHARED, REJECTED};
use script::Decision;

/// At most one fallback warning (and one recovery line) per this interval.
const LOG_INTERVAL: Duration = Duration::from_secs(60);

/// Where admission decisions are made right now.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ClusterMode {
    /// Decisions are made in Redis, shared by every replica.
    Shared,
    /// Redis is unreachable or slow; this replica enforces its local share.
    LocalFallback,
}

/// Counters of one limiter since start (also exported as Prometheus series).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
pub struct ClusterStats {
    /// Calls admitted (shared or local).
    pub admitted: u64,
    /// Calls rejected (shared or local).
    pub rejected: u64,
    /// Times the limiter entered local fallback (including a start without Redis).
    pub fallbacks: u64,
    /// Redis calls that failed or timed out (admissions and probes; an unusable URL
    /// counts once).
    pub redis_errors: u64,
}

/// The cluster-wide admission limit of one replica. Cheap to clone; clones share state.
///
/// # Example
///
/// ```no_run
/// use std::time::Duration;
/// use phiguard::cluster::{ClusterConfig, ClusterLimiter, ClusterMode};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let cfg = ClusterConfig {
///     replicas: 2,
///     window: Duration::from_secs(1),
///     ..ClusterConfig::new("redis://phiguard-redis:6379/0", 200)
/// };
/// cfg.validate()?; // at start-up, with the other settings
/// let limiter = ClusterLimiter::new(cfg).await; // never fails; may start local
/// limiter.register_metrics(prometheus::default_registry())?;
///
/// match limiter.try_admit("token-id-7").await {
///     Ok(()) => { /* go on to the admission queue */ }
///     Err(rejected) => {
///         // 429 rate_limited with `Retry-After: rejected.retry_after_secs()`
///         let _ = rejected.retry_after_secs();
///     }
/// }
/// let degraded = limiter.mode() == ClusterMode::LocalFallback; // status flag
/// # let _ = degraded;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ClusterLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    cfg: ClusterConfig,
    key: String,
    window_us: u64,
    script: redis::Script,
    client: Option<redis::Client>,
    conn: Mutex<Option<ConnectionManager>>,
    shared: AtomicBool,
    probing: AtomicBool,
    health: Mutex<Health>,
    local: Mutex<LocalWindow>,
    metrics: ClusterMetrics,
}

/// Probe back-off and log rate limiting.
struct Health {
    next_probe_at: Instant,
    backoff: Duration,
    last_log_at: Option<Instant>,
    episode_logged: bool,
    suppressed: u64,
}

impl ClusterLimiter {
    /// Builds the limiter and tries Redis once (bounded by the connect and command
    /// timeouts). Never fails: without Redis it starts in [`ClusterMode::LocalFallback`]
    /// and probes again later. Values outside the rules of [`ClusterConfig::validate`] are
    /// clamped; an unparsable URL keeps the limiter local for good.
    pub async fn new(cfg: ClusterConfig) -> Self {
        let cfg = cfg.clamped();
        let client = redis::Client::open(cfg.redis_url.as_str()).ok();
        let now = Instant::now();
        let inner = Arc::new(Inner {
            key: cfg.key(),
            window_us: script::window_micros(cfg.window),
            script: script::admit_script(),
            client,
            conn: Mutex::new(None),
            // "Shared" until the first connect fails, so that a start without Redis
            // counts as a fallback episode (gauge, counter, log line).
            shared: AtomicBool::new(true),
            probing: AtomicBool::new(false),
            health: Mutex::new(Health {
                next_probe_at: now,
                backoff: cfg.probe_backoff_min,
                last_log_at: None,
                episode_logged: false,
                suppressed: 0,
            }),
            local: Mutex::new(LocalWindow::new(cfg.local_share(), cfg.window)),
            metrics: ClusterMetrics::new(),
            cfg,
        });
        match inner.connect().await {
            Ok(()) => {
                tracing::info!(
                    admissions = inner.cfg.admissions,
                    window_ms = u64::try_from(inner.cfg.window.as_millis()).unwrap_or(u64::MAX),
                    "cluster admission limit shared through redis"
                );
            }
            Err(e) => inner.enter_fallback(&e),
        }
        Self { inner }
    }

    /// Decides one admission to a model-backed route. `token_id` is the id of the
    /// caller's token (never its secret); it is stored beside the timestamp for operators.
    ///
    /// Waits for Redis at most `command_timeout`; in fallback it never waits for Redis.
    ///
    /// # Errors
    ///
    /// [`ClusterRejected`] with the time until a slot frees when the window is full.
    pub async fn try_admit(&self, token_id: &str) -> std::result::Result<(), ClusterRejected> {
        let inner = &self.inner;
        if inner.shared.load(Ordering::Acquire) {
            match inner.redis_admit(token_id).await {
                Ok(Decision::Admitted) => {
                    inner.local.lock().record(Instant::now());
                    inner.metrics.count(MODE_SHARED, ADMITTED);
                    return Ok(());
                }
                Ok(Decision::Full(retry_after)) => {
                    inner.metrics.count(MODE_SHARED, REJECTED);
                    return Err(ClusterRejected { retry_after });
                }
                Err(e) => inner.enter_fallback(&e),
            }
        } else {
            self.maybe_probe();
        }
        let decision = inner.local.lock().try_admit(Instant::now());
        match decision {
            Ok(()) => {
                inner.metrics.count(MODE_LOCAL, ADMITTED);
                Ok(())
            }
            Err(retry_after) => {
                inner.metrics.count(MODE_LOCAL, REJECTED);
                Err(ClusterRejected { retry_after })
            }
        }
    }

    /// Whether decisions are shared through Redis right now (the status flag).
    pub fn mode(&self) -> ClusterMode {
        if self.inner.shared.load(Ordering::Acquire) {
            ClusterMode::Shared
        } else {
            ClusterMode::LocalFallback
        }
    }

    /// Counters since start.
    pub fn stats(&self) -> ClusterStats {
        let m = &self.inner.metrics;
        ClusterStats {
            admitted: m.total(ADMITTED),
            rejected: m.total(REJECTED),
            fallbacks: m.fallbacks.get(),
            redis_errors: m.redis_errors.get(),
        }
    }

    /// The (clamped) configuration in use.
    pub fn config(&self) -> &ClusterConfig {
        &self.inner.cfg
    }

    /// Registers `phiguard_cluster_admissions_total{mode,outcome}`,
    /// `phiguard_cluster_limit_fallback`, `phiguard_cluster_fallbacks_total` and
    /// `phiguard_cluster_redis_errors_total` with `registry`.
    ///
    /// # Errors
    ///
    /// The registry's error when a series of the same name is already registered.
    pub fn register_metrics(&self, registry: &prometheus::Registry) -> prometheus::Result<()> {
        self.inner.metrics.register(registry)
    }

    /// Starts a background probe of Redis if the back-off has passed and no probe runs.
    fn maybe_probe(&self) {
        let inner = &self.inner;
        if inner.client.is_none() || Instant::now() < inner.health.lock().next_probe_at {
            return;
        }
        if inner
            .probing
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let inner = Arc::clone(inner);
        tokio::spawn(async move {
            let _reset = ProbeGuard(&inner.probing);
            match inner.connect().await {
                Ok(()) => inner.leave_fallback(),
                Err(e) => inner.probe_failed(&e),
            }
        });
    }
}

impl std::fmt::Debug for ClusterLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterLimiter")
            .field("config", &self.inner.cfg)
            .field("mode", &self.mode())
            .field("stats", &self.stats())
            .finish()
    }
}

/// Clears the "probe in flight" flag however the probe task ends.
struct ProbeGuard<'a>(&'a AtomicBool);

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Inner {
    /// Connects (reusing a live connection) and runs the script as a dry run (limit 0,
    /// which loads it if needed and records nothing), all within the connect and command
    /// timeouts. Success means an admission call would work too.
    async fn connect(&self) -> Result<()> {
        let client = self.client.clone().ok_or(ClusterError::NoClient)?;
        let existing = self.conn.lock().clone();
        let mut conn = match existing {
            Some(conn) => conn,
            None => {
                // No retries inside the manager: our own probe back-off paces reconnects.
                let manager_cfg = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(self.cfg.connect_timeout))
                    .set_response_timeout(Some(self.cfg.command_timeout))
                    .set_number_of_retries(0);
                let bound = self.cfg.connect_timeout + self.cfg.command_timeout;
                tokio::time::timeout(
                    bound,
                    ConnectionManager::new_with_config(client, manager_cfg),
                )
                .await
                .map_err(|_| ClusterError::Timeout)??
            }
        };
        let mut dry_run = self.script.prepare_invoke();
        dry_run.key(&self.key).arg(self.window_us).arg(0u32).arg("");
        let _: (i64, i64) =
            tokio::time::timeout(self.cfg.command_timeout, dry_run.invoke_async(&mut conn))
                .await
                .map_err(|_| ClusterError::Timeout)??;
        *self.conn.lock() = Some(conn);
        Ok(())
    }

    /// One run of the admission script, bounded by the command timeout.
    async fn redis_admit(&self, token_id: &str) -> Result<Decision> {
        let conn = self.conn.lock().clone();
        let mut conn = conn.ok_or(ClusterError::Redis {
            class: "not_connected",
        })?;
        let mut invocation = self.script.prepare_invoke();
        invocation
            .key(&self.key)
            .arg(self.window_us)
            .arg(self.cfg.admissions)
            .arg(script::member_suffix(token_id));
        let reply: (i64, i64) =
            tokio::time::timeout(self.cfg.command_timeout, invocation.invoke_async(&mut conn))
                .await
                .map_err(|_| ClusterError::Timeout)??;
        Ok(script::decide(reply))
    }

    /// Records a failed Redis call and, on the first failure of an episode, switches to
    /// the local share, raises the gauge and logs (rate-limited).
    fn enter_fallback(&self, e: &ClusterError) {
        self.metrics.redis_errors.inc();
        *self.conn.lock() = None;
        if !self.shared.swap(false, Ordering::AcqRel) {
            return;
        }
        self.metrics.fallbacks.inc();
        self.metrics.fallback.set(1);
        let now = Instant::now();
        let mut h = self.health.lock();
        h.backoff = self.cfg.probe_backoff_min;
        h.next_probe_at = now + h.backoff;
        h.episode_logged = h.last_log_at.is_none_or(|t| now >= t + LOG_INTERVAL);
        if h.episode_logged {
            h.last_log_at = Some(now);
            let suppressed = std::mem::take(&mut h.suppressed);
            drop(h);
            tracing::warn!(
                error = e.class(),
                local_share = self.cfg.local_share(),
                suppressed_episodes = suppressed,
                "redis unavailable; cluster admission limit falls back to this replica's share"
            );
        } else {
            h.suppressed += 1;
        }
    }

    /// A probe failed: double the back-off (up to the maximum) and stay local.
    fn probe_failed(&self, e: &ClusterError) {
        self.metrics.redis_errors.inc();
        *self.conn.lock() = None;
        let mut h = self.health.lock();
        h.backoff = (h.backoff * 2).min(self.cfg.probe_backoff_max);
        h.next_probe_at = Instant::now() + h.backoff;
        tracing::debug!(
            error = e.class(),
            "redis probe failed; cluster admission limit stays local"
        );
    }

    /// A probe succeeded: decisions are shared again.
    fn leave_fallback(&self) {
        let logged = {
            let mut h = self.health.lock();
            h.backoff = self.cfg.probe_backoff_min;
            std::mem::take(&mut h.episode_logged)
        };
        self.metrics.fallback.set(0);
        self.shared.store(true, Ordering::Release);
        if logged {
            tracing::info!("redis answers again; cluster admission limit is shared");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loopback port with nothing listening on it.
    fn closed_port() -> std::io::Result<u16> {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        Ok(l.local_addr()?.port())
    }

    fn cfg(url: String, admissions: u32, replicas: u32) -> ClusterConfig {
        ClusterConfig {
            replicas,
            window: Duration::from_secs(1),
            ..ClusterConfig::new(url, admissions)
        }
    }

    #[tokio::test]
    async fn starts_in_fallback_without_redis_and_enforces_the_share() -> std::io::Result<()> {
        let port = closed_port()?;
        let l = ClusterLimiter::new(cfg(format!("redis://127.0.0.1:{port}"), 10, 2)).await;
        assert_eq!(l.mode(), ClusterMode::LocalFallback);
        let mut admitted = 0;
        for _ in 0..20 {
            if l.try_admit("t1").await.is_ok() {
                admitted += 1;
            }
        }
        assert_eq!(admitted, 5, "share is admissions / replicas");
        let s = l.stats();
        assert_eq!((s.admitted, s.rejected, s.fallbacks), (5, 15, 1));
        assert!(s.redis_errors >= 1);
        Ok(())
    }

    #[tokio::test]
    async fn unparsable_url_stays_local_and_never_probes() {
        let l = ClusterLimiter::new(cfg("http://nope".into(), 3, 1)).await;
        assert_eq!(l.mode(), ClusterMode::LocalFallback);
        for _ in 0..5 {
            let _ = l.try_admit("t").await;
        }
        assert!(!l.inner.probing.load(Ordering::Acquire));
        assert_eq!(l.stats().admitted, 3);
        assert_eq!(l.stats().redis_errors, 1);
    }

    #[tokio::test]
    async fn probes_are_paced_by_the_backoff() -> std::io::Result<()> {
        let port = closed_port()?;
        let mut c = cfg(format!("redis://127.0.0.1:{port}"), 1000, 1);
        c.probe_backoff_min = Duration::from_secs(3600);
        c.probe_backoff_max = Duration::from_secs(3600);
        let l = ClusterLimiter::new(c).await;
        for _ in 0..50 {
            let _ = l.try_admit("t").await;
        }
        tokio::task::yield_now().await;
        // One failed connect at start, no probe while the back-off runs.
        assert_eq!(l.stats().redis_errors, 1);
        Ok(())
    }

    #[tokio::test]
    async fn retry_after_in_fallback_is_the_wait_for_the_oldest() -> std::io::Result<()> {
        let port = closed_port()?;
        let l = ClusterLimiter::new(cfg(format!("redis://127.0.0.1:{port}"), 1, 1)).await;
        assert!(l.try_admit("t").await.is_ok());
        match l.try_admit("t").await {
            Err(r) => {
                assert!(r.retry_after <= Duration::from_secs(1));
                assert!(r.retry_after > Duration::from_millis(500));
                assert_eq!(r.retry_after_secs(), 1);
            }
            Ok(()) => panic!("second call must be rejected"),
        }
        Ok(())
    }

    /// Handlers and spawned tasks need these futures and the limiter to be `Send`.
    #[test]
    fn futures_and_limiter_are_send_and_sync() {
        fn send<T: Send>(_: &T) {}
        fn send_sync<T: Send + Sync>() {}
        send_sync::<ClusterLimiter>();
        let new = ClusterLimiter::new(ClusterConfig::default());
        send(&new);
        drop(new);
        let admit = |l: ClusterLimiter| async move { l.try_admit("t").await };
        let _ = |l: ClusterLimiter| send(&admit(l));
    }

    #[test]
    fn mode_serialises_snake_case() -> serde_json::Result<()> {
        assert_eq!(
            serde_json::to_string(&ClusterMode::LocalFallback)?,
            "\"local_fallback\""
        );
        Ok(())
    }
}
