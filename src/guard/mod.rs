//! The resilience guard: everything between an admitted request and a model call that
//! decides whether to call, how often, and for how long.
//!
//! Pure library: no HTTP, no axum, no candle. Time, sleeping and randomness are injected
//! ([`Clock`], [`Sleeper`], [`Jitter`]), so every behaviour is tested with a
//! [`ManualClock`] and no real sleep. The server maps [`GuardError`] to statuses (DESIGN §5).
//!
//! # Order
//!
//! The server calls the pieces in request-path order (DESIGN §3):
//!
//! 1. [`Guard::check_rate`]: per-token and global token buckets → 429 `rate_limited`.
//! 2. [`Guard::admit`]: the service-wide admission queue (priorities, watermarks, max queue
//!    wait) → 503 `backpressure`. The permit is held for the whole execution.
//! 3. [`Guard::call`], per model key, in this order:
//!    1. circuit breaker permission → 503 `circuit_breaker_open`;
//!    2. bulkhead slot → 503 `service_busy`;
//!    3. the retry loop: attempt, classify, backoff with jitter, retry budget, every
//!       attempt and wait bounded by the request [`Deadline`] → 504 `timeout`;
//!    4. one verdict to the breaker: failure only after the retries are exhausted; a
//!       client error counts as a success (OpenMed); a deadline that cuts an attempt is
//!       no failure (it bounds the client's wait, as OpenMed's timeout does) but a call
//!       for the slow-call rule ([`BreakerPermit::on_timeout`]).
//!
//! The breaker comes first so an open breaker costs no bulkhead slot and no attempt; the
//! bulkhead comes before the retries so a retrying request keeps its slot instead of
//! queueing again between attempts.
//!
//! # Cost
//!
//! The success path of `call` reads the clock once (deadline check and budget deposit),
//! takes three short uncontended locks (breaker permission, budget deposit, breaker
//! verdict), one read-locked map lookup and a few relaxed atomic counters; it allocates
//! nothing and creates no timer unless the backend future is still pending after its
//! first poll. `benches/guard.rs` measures it.

pub mod admission;
pub mod breaker;
pub mod bulkhead;
pub mod clock;
pub mod coalesce;
pub mod deadline;
pub mod error;
pub mod failures;
pub mod rate;
pub mod registry;
pub mod retry;
pub mod stats;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

pub use admission::{
    Admission, AdmissionConfig, AdmissionPermit, AdmissionSnapshot, Priority, Shed, ShedReason,
};
pub use breaker::{
    BreakerConfig, BreakerError, BreakerListener, BreakerPermit, BreakerSnapshot, BreakerState,
    BreakerTransition, CircuitBreaker,
};
pub use bulkhead::{BulkheadConfig, BulkheadFull, BulkheadPermit, Bulkheads};
pub use clock::{
    Clock, FixedJitter, Jitter, ManualClock, RandJitter, SeqJitter, Sleeper, SystemClock,
    TokioSleeper,
};
pub use coalesce::{Role, SingleFlight};
pub use deadline::{with_deadline, Deadline, Elapsed};
pub use error::{GuardConfigError, GuardError};
pub use failures::{FailureConfig, FailureLimiter};
pub use rate::{RateConfig, RateLimited, RateLimiter, Scope};
pub use registry::{BreakerRegistry, StateCounts};
pub use retry::{Backoff, BudgetConfig, Classify, JitterMode, RetryBudget, RetryConfig};
pub use stats::{GuardStats, StatsSnapshot};

use stats::bump;

/// Every guard setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GuardConfig {
    /// Attempts and backoff.
    pub retry: RetryConfig,
    /// The service-wide retry budget.
    pub budget: BudgetConfig,
    /// Per-key circuit breakers.
    pub breaker: BreakerConfig,
    /// Token buckets.
    pub rate: RateConfig,
    /// The admission queue.
    pub admission: AdmissionConfig,
    /// Per-key bulkheads.
    pub bulkhead: BulkheadConfig,
    /// `false` = one attempt and no breaker (OpenMed `RESILIENCE_ENABLED`).
    pub resilience_enabled: bool,
}

impl Default for GuardConfig {
    fn default() -> Self {
        Self {
            retry: RetryConfig::default(),
            budget: BudgetConfig::default(),
            breaker: BreakerConfig::default(),
            rate: RateConfig::default(),
            admission: AdmissionConfig::default(),
            bulkhead: BulkheadConfig::default(),
            resilience_enabled: true,
        }
    }
}

impl GuardConfig {
    /// Checks every part.
    ///
    /// # Errors
    ///
    /// Returns the first field that breaks its rule.
    pub fn validate(&self) -> Result<(), GuardConfigError> {
        self.retry.validate()?;
        self.budget.validate()?;
        self.breaker.validate()?;
        self.rate.validate()?;
        self.admission.validate()
    }
}

/// The guard: one per service, shared by every request.
pub struct Guard {
    clock: Arc<dyn Clock>,
    sleeper: Arc<dyn Sleeper>,
    jitter: Arc<dyn Jitter>,
    cfg: RwLock<GuardConfig>,
    resilience_enabled: AtomicBool,
    budget: RetryBudget,
    breakers: BreakerRegistry,
    rate: RateLimiter,
    admission: Admission,
    bulkheads: Bulkheads,
    stats: Arc<GuardStats>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("cfg", &*self.cfg.read())
            .finish_non_exhaustive()
    }
}

impl Guard {
    /// A guard with validated settings.
    ///
    /// # Errors
    ///
    /// [`GuardConfigError`] naming the first bad field.
    pub fn new(
        cfg: GuardConfig,
        clock: Arc<dyn Clock>,
        sleeper: Arc<dyn Sleeper>,
        jitter: Arc<dyn Jitter>,
    ) -> Result<Self, GuardConfigError> {
        cfg.validate()?;
        let stats = Arc::new(GuardStats::default());
        Ok(Self {
            budget: RetryBudget::new(cfg.budget, Arc::clone(&clock)),
            breakers: BreakerRegistry::new(cfg.breaker, Arc::clone(&clock), Arc::clone(&stats)),
            rate: RateLimiter::new(cfg.rate, Arc::clone(&clock)),
            admission: Admission::new(cfg.admission, Arc::clone(&sleeper), Arc::clone(&stats)),
            bulkheads: Bulkheads::new(cfg.bulkhead, Arc::clone(&sleeper)),
            resilience_enabled: AtomicBool::new(cfg.resilience_enabled),
            cfg: RwLock::new(cfg),
            clock,
            sleeper,
            jitter,
            stats,
        })
    }

    /// A guard on the system clock, the tokio timer and the thread-local RNG.
    ///
    /// # Errors
    ///
    /// [`GuardConfigError`] naming the first bad field.
    pub fn system(cfg: GuardConfig) -> Result<Self, GuardConfigError> {
        Self::new(
            cfg,
            Arc::new(SystemClock),
            Arc::new(TokioSleeper),
            Arc::new(RandJitter),
        )
    }

    /// Applies new settings live; existing breakers take the new thresholds.
    ///
    /// # Errors
    ///
    /// [`GuardConfigError`] naming the first bad field; nothing is applied then.
    pub fn update_config(&self, cfg: GuardConfig) -> Result<(), GuardConfigError> {
        cfg.validate()?;
        self.budget.update_config(cfg.budget);
        self.breakers.update_config(cfg.breaker);
        self.rate.update_config(cfg.rate);
        self.admission.update_config(cfg.admission);
        self.bulkheads.update_config(cfg.bulkhead);
        self.resilience_enabled
            .store(cfg.resilience_enabled, Ordering::Relaxed);
        *self.cfg.write() = cfg;
        Ok(())
    }

    /// The settings in force.
    pub fn config(&self) -> GuardConfig {
        *self.cfg.read()
    }

    /// The injected clock (for building deadlines).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// A deadline `timeout` from now on the guard's clock.
    pub fn deadline(&self, timeout: Duration) -> Deadline {
        Deadline::after(self.clock.now(), timeout)
    }

    /// Takes a token for `key` (an API token id, never request text).
    ///
    /// # Errors
    ///
    /// [`RateLimited`] with the refusing scope and the time until a token refills.
    pub fn check_rate(&self, key: &str) -> Result<(), RateLimited> {
        self.rate
            .check(key)
            .inspect_err(|e| self.stats.record_rate_limited(e.scope))
    }

    /// Waits (bounded) for an execution slot.
    ///
    /// # Errors
    ///
    /// [`Shed`] when over a watermark or after `max_queue_wait`.
    pub async fn admit(&self, priority: Priority) -> Result<AdmissionPermit, Shed> {
        self.admission.admit(priority).await
    }

    /// Runs `f` under the breaker and bulkhead of `key`, retrying infrastructure failures
    /// within the retry budget and the deadline. `f` receives the attempt number (1-based).
    ///
    /// # Errors
    ///
    /// See [`GuardError`]: `BreakerOpen`, `Busy`, `Timeout`, or `Failed` with the last
    /// error (after retries) or a client error (at once).
    pub async fn call<T, E, F, Fut>(
        &self,
        key: &str,
        deadline: &Deadline,
        mut f: F,
    ) -> Result<T, GuardError<E>>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Classify,
    {
        bump(&self.stats.calls);
        let enabled = self.resilience_enabled.load(Ordering::Relaxed);
        let permit = if enabled {
            match self.breakers.get(key).try_acquire_permission() {
                Ok(p) => Some(p),
                Err(refused) => return Err(self.breaker_refused(key, refused)),
            }
        } else {
            None
        };
        let _slot = match self
            .bulkheads
            .acquire(key, || deadline.remaining(&*self.clock))
            .await
        {
            Ok(slot) => slot,
            Err(full) => {
                bump(&self.stats.bulkhead_rejected);
                tracing::debug!(model = key, "bulkhead full");
                return Err(GuardError::Busy {
                    retry_after: full.retry_after,
                });
            }
        };
        let (outcome, reached_backend) = self.attempts(enabled, deadline, &mut f).await;
        if let Some(permit) = permit {
            match &outcome {
                // A deadline that passed before any attempt (in the queues) says nothing
                // about the backend: drop the permit without a verdict.
                _ if !reached_backend => drop(permit),
                Ok(_) => permit.on_success(),
                Err(GuardError::Failed(e)) if !e.is_retryable() => permit.on_success(),
                Err(GuardError::Timeout { .. }) => permit.on_timeout(),
                Err(_) => permit.on_failure(),
            }
        }
        outcome
    }

    /// The refusal [`call`](Self::call) would answer for `key` now because of its breaker,
    /// without taking a permit or a probe slot and without counting it; `None` when a call
    /// would go on (or with resilience off). For the server's door, which answers a request
    /// for a failing model without calling; it counts each refusal it answers with
    /// [`refused_call`](Self::refused_call). A request that goes on takes its permit in
    /// `call` as usual.
    pub fn refusal(&self, key: &str) -> Option<BreakerError> {
        if !self.resilience_enabled.load(Ordering::Relaxed) {
            return None;
        }
        self.breakers.peek(key)?.refusal()
    }

    /// Counts, and logs, a call to `key` that the caller answered with the breaker's
    /// `refused` ([`refusal`](Self::refusal)) instead of calling, as `call` counts its own.
    pub fn refused_call<E>(&self, key: &str, refused: BreakerError) -> GuardError<E> {
        bump(&self.stats.calls);
        self.breaker_refused(key, refused)
    }

    /// Counts and logs a breaker's refusal of a call to `key`.
    fn breaker_refused<E>(&self, key: &str, refused: BreakerError) -> GuardError<E> {
        let BreakerError::CallNotPermitted { state, retry_after } = refused;
        bump(&self.stats.breaker_rejected);
        tracing::debug!(
            model = key,
            state = state.as_str(),
            "breaker refused the call"
        );
        GuardError::BreakerOpen {
            state,
            retry_after_seconds: retry_after.as_secs(),
        }
    }

    /// Whether some model's breaker may refuse calls now: while none can, looking for a
    /// refusal before a call is wasted work. A hint (see [`BreakerRegistry::may_refuse`]).
    pub fn may_refuse(&self) -> bool {
        self.resilience_enabled.load(Ordering::Relaxed) && self.breakers.may_refuse()
    }

    /// The retry loop. Also says whether any attempt was made.
    async fn attempts<T, E, F, Fut>(
        &self,
        enabled: bool,
        deadline: &Deadline,
        f: &mut F,
    ) -> (Result<T, GuardError<E>>, bool)
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Classify,
    {
        let retry = self.cfg.read().retry;
        let max_attempts = if enabled { retry.max_attempts } else { 1 };
        let now = self.clock.now();
        if now >= deadline.at {
            return (Err(self.timed_out(deadline.timeout)), false);
        }
        if max_attempts > 1 {
            self.budget.deposit_at(now);
        }
        (
            self.retry_loop(retry, max_attempts, deadline, f).await,
            true,
        )
    }

    async fn retry_loop<T, E, F, Fut>(
        &self,
        retry: RetryConfig,
        max_attempts: u32,
        deadline: &Deadline,
        f: &mut F,
    ) -> Result<T, GuardError<E>>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Classify,
    {
        let mut backoff = Backoff::new(&retry);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            bump(&self.stats.attempts);
            if attempt > 1 {
                bump(&self.stats.retries);
            }
            // The first attempt was checked against the deadline above; later ones are
            // checked before their backoff wait.
            let result =
                match deadline::race(&*self.clock, &*self.sleeper, deadline, f(attempt)).await {
                    Ok(r) => r,
                    Err(Elapsed { timeout }) => return Err(self.timed_out(timeout)),
                };
            let err = match result {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            if !err.is_retryable() {
                return Err(GuardError::Failed(err));
            }
            if attempt >= max_attempts {
                tracing::warn!(attempts = attempt, "model call failed after its retries");
                return Err(GuardError::Failed(err));
            }
            let delay = backoff.next_delay(self.jitter.unit());
            let remaining = deadline.remaining(&*self.clock);
            // The deadline left no time to retry: the attempt's failure is the verdict.
            if delay >= remaining {
                // The wait would end after the deadline: stop with what we have.
                return Err(GuardError::Failed(err));
            }
            if !self.budget.try_withdraw() {
                bump(&self.stats.budget_exhausted);
                tracing::warn!(
                    attempts = attempt,
                    "model call failed; the retry budget is spent"
                );
                return Err(GuardError::Failed(err));
            }
            tracing::info!(
                attempt,
                backoff_ms = delay.as_secs_f64() * 1000.0,
                "model call failed; retrying"
            );
            if !delay.is_zero() {
                self.sleeper.sleep(delay).await;
            }
        }
    }

    fn timed_out<E>(&self, timeout: Duration) -> GuardError<E> {
        bump(&self.stats.timeouts);
        tracing::debug!(
            timeout_seconds = timeout.as_secs_f64(),
            "request deadline passed"
        );
        GuardError::Timeout { timeout }
    }

    /// The breaker for `key` (created closed if new).
    pub fn breaker(&self, key: &str) -> Arc<CircuitBreaker> {
        self.breakers.get(key)
    }

    /// Admin: close `key`'s breaker with clean counters.
    pub fn reset_breaker(&self, key: &str) {
        self.breakers.get(key).reset();
    }

    /// Admin: hold `key`'s breaker open until a reset.
    pub fn force_open_breaker(&self, key: &str) {
        self.breakers.get(key).force_open();
    }

    /// Admin: let every call for `key` through, recording nothing, until a reset.
    pub fn disable_breaker(&self, key: &str) {
        self.breakers.get(key).disable();
    }

    /// Every breaker, sorted by key.
    pub fn breakers(&self) -> Vec<BreakerSnapshot> {
        self.breakers.snapshots()
    }

    /// Breakers per gauge state (closed / open / half-open), computed now.
    pub fn breaker_state_counts(&self) -> StateCounts {
        self.breakers.state_counts()
    }

    /// Sets (or clears) the listener called after every breaker transition.
    pub fn set_breaker_listener(&self, listener: Option<BreakerListener>) {
        self.breakers.set_listener(listener);
    }

    /// Admission depths and the shedding flag.
    pub fn admission_snapshot(&self) -> AdmissionSnapshot {
        self.admission.snapshot()
    }

    /// Copies every counter.
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
