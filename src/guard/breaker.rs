//! Circuit breakers, one per model key: [`CircuitBreaker`] (states after resilience4j),
//! and its RAII [`BreakerPermit`]; the lazy per-key registry is in
//! [`registry`](super::registry).
//!
//! # Why a breaker
//!
//! A model that keeps failing should cost the service nothing: without a breaker every
//! request still waits for the failing call, retries it, and ties up a worker. Once
//! `failure_threshold` logical requests in a row have failed (after their retries) the
//! breaker opens and callers get an immediate refusal with `Retry-After`, so clients back
//! off and the backend gets room to recover. After `recovery_timeout` it lets a bounded
//! number of probes through (half-open); their verdict closes or re-opens it, so recovery
//! traffic cannot become a second outage.
//!
//! The default behaviour is OpenMed's exactly (contract §3.1): consecutive failed logical
//! requests, one probe, `Retry-After = max(1, ceil(remaining))`, and a cancelled probe
//! releases its slot without a verdict. The failure-rate and slow-call windows of
//! resilience4j are opt-in extras (`sliding_window_size > 0`).
//!
//! Each verdict carries the *epoch* (transition count) its permit was issued in; a verdict
//! from an older epoch (a call that started before the breaker opened, or before an admin
//! reset) changes no state. All state sits behind one short `parking_lot` mutex per key;
//! the transition listener runs after the lock is released.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use thiserror::Error;

use super::clock::Clock;
use super::error::{ceil_secs_min1, ensure, ConfigResult};
use super::stats::GuardStats;

/// Breaker settings (OpenMed `OPENMED_SERVICE_CIRCUIT_BREAKER_*` defaults; windows off).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerConfig {
    /// Consecutive failed logical requests that open the breaker, at least 1.
    pub failure_threshold: u32,
    /// Time open before half-open.
    pub recovery_timeout: Duration,
    /// Probes admitted in half-open; all must succeed to close. At least 1.
    pub permitted_calls_in_half_open_state: u32,
    /// Calls in the failure-rate / slow-call window; 0 turns both windows off.
    pub sliding_window_size: u32,
    /// Calls recorded in the window before its rates are evaluated, at least 1.
    pub minimum_number_of_calls: u32,
    /// Failure rate in percent (0, 100] at or above which the breaker opens.
    pub failure_rate_threshold: f64,
    /// A call lasting at least this long is slow; `None` turns the slow-call rule off.
    pub slow_call_duration_threshold: Option<Duration>,
    /// Slow-call rate in percent (0, 100] at or above which the breaker opens.
    pub slow_call_rate_threshold: f64,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            failure_threshold: 3,
            recovery_timeout: Duration::from_secs(30),
            permitted_calls_in_half_open_state: 1,
            sliding_window_size: 0,
            minimum_number_of_calls: 10,
            failure_rate_threshold: 50.0,
            slow_call_duration_threshold: None,
            slow_call_rate_threshold: 100.0,
        }
    }
}

impl BreakerConfig {
    /// Checks every rule.
    ///
    /// # Errors
    ///
    /// Returns the first field that breaks its rule.
    pub fn validate(&self) -> ConfigResult {
        let pct = |v: f64| v.is_finite() && v > 0.0 && v <= 100.0;
        ensure(
            self.failure_threshold >= 1,
            "breaker.failure_threshold",
            "must be at least 1",
        )?;
        ensure(
            self.permitted_calls_in_half_open_state >= 1,
            "breaker.permitted_calls_in_half_open_state",
            "must be at least 1",
        )?;
        ensure(
            self.minimum_number_of_calls >= 1,
            "breaker.minimum_number_of_calls",
            "must be at least 1",
        )?;
        ensure(
            pct(self.failure_rate_threshold),
            "breaker.failure_rate_threshold",
            "must be a percentage in (0, 100]",
        )?;
        ensure(
            pct(self.slow_call_rate_threshold),
            "breaker.slow_call_rate_threshold",
            "must be a percentage in (0, 100]",
        )?;
        ensure(
            self.slow_call_duration_threshold.is_none() || self.sliding_window_size > 0,
            "breaker.slow_call_duration_threshold",
            "needs sliding_window_size above 0",
        )
    }
}

/// Where a breaker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Calls flow; failures are counted.
    Closed,
    /// Calls fail fast until the recovery timeout has passed.
    Open,
    /// A bounded number of probes decide between closed and open.
    HalfOpen,
    /// An admin turned the breaker off: every call flows, nothing is recorded.
    Disabled,
    /// An admin opened it: every call fails fast until a reset.
    ForcedOpen,
}

impl BreakerState {
    /// Number of states.
    pub const COUNT: usize = 5;
    /// Every state, in index order.
    pub const ALL: [BreakerState; Self::COUNT] = [
        Self::Closed,
        Self::Open,
        Self::HalfOpen,
        Self::Disabled,
        Self::ForcedOpen,
    ];

    /// The wire and label name (`half_open`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
            Self::Disabled => "disabled",
            Self::ForcedOpen => "forced_open",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// Closed or disabled: every call is let through without asking the clock.
    fn lets_calls_through(self) -> bool {
        matches!(self, BreakerState::Closed | BreakerState::Disabled)
    }
}

impl fmt::Display for BreakerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A breaker refused a call.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BreakerError {
    /// Returned when the breaker is open or forced open, or half-open with every probe slot
    /// taken.
    #[error("call not permitted while the circuit breaker is {state}")]
    CallNotPermitted {
        /// The refusing state.
        state: BreakerState,
        /// Whole seconds (at least one) before a retry can be admitted.
        retry_after: Duration,
    },
}

/// A state change, passed to the listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerTransition {
    /// The breaker's key (a configured model key).
    pub key: Arc<str>,
    /// The state left.
    pub from: BreakerState,
    /// The state entered.
    pub to: BreakerState,
}

/// Called after every transition, outside the breaker's lock.
pub type BreakerListener = Arc<dyn Fn(&BreakerTransition) + Send + Sync>;

/// What a dashboard or `/admin/status` shows for one breaker.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerSnapshot {
    /// The breaker's key.
    pub key: String,
    /// Its state now (an elapsed open breaker shows as half-open).
    pub state: BreakerState,
    /// Consecutive failed logical requests in the closed state.
    pub consecutive_failures: u32,
    /// Whole seconds before a call can be admitted; 0 when calls flow now.
    pub retry_after_seconds: u64,
    /// Failure rate in percent over the window, once it holds `minimum_number_of_calls`.
    pub failure_rate: Option<f64>,
}

/// Breaker-wide shared parts: the counters, the listener, and how many breakers may refuse.
#[derive(Default)]
pub(crate) struct BreakerHooks {
    pub(crate) stats: Arc<GuardStats>,
    pub(crate) listener: RwLock<Option<BreakerListener>>,
    /// Breakers that left closed or disabled, less those that came back: a hint that lets the
    /// server skip looking for a refusal while every breaker lets calls through. Transitions
    /// are counted after the lock is released, so two of one breaker may be counted in the
    /// other order and the count may be off for a moment; nothing may rely on it being exact.
    pub(crate) not_flowing: std::sync::atomic::AtomicIsize,
}

impl BreakerHooks {
    fn fire(&self, t: Option<BreakerTransition>) {
        if let Some(t) = t {
            use std::sync::atomic::Ordering::Relaxed;
            match (t.from.lets_calls_through(), t.to.lets_calls_through()) {
                (true, false) => _ = self.not_flowing.fetch_add(1, Relaxed),
                (false, true) => _ = self.not_flowing.fetch_sub(1, Relaxed),
                _ => {}
            }
            self.stats.record_transition(t.to);
            let listener = self.listener.read().clone();
            if let Some(l) = listener {
                l(&t);
            }
        }
    }
}

/// One circuit breaker.
pub struct CircuitBreaker {
    key: Arc<str>,
    clock: Arc<dyn Clock>,
    hooks: Arc<BreakerHooks>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Clone, Copy)]
struct Outcome {
    failed: bool,
    slow: bool,
}

/// What a permit reports.
#[derive(Clone, Copy)]
enum Verdict {
    /// The call ended, failed or not.
    Done { failed: bool },
    /// The request's deadline cut the call ([`BreakerPermit::on_timeout`]).
    TimedOut,
}

struct Inner {
    cfg: BreakerConfig,
    state: BreakerState,
    epoch: u64,
    consecutive_failures: u32,
    opened_at: Instant,
    half_open_in_flight: u32,
    half_open_successes: u32,
    window: VecDeque<Outcome>,
}

impl Inner {
    fn transition(
        &mut self,
        key: &Arc<str>,
        to: BreakerState,
        now: Instant,
    ) -> Option<BreakerTransition> {
        let from = self.state;
        self.state = to;
        self.epoch += 1;
        self.half_open_in_flight = 0;
        self.half_open_successes = 0;
        match to {
            BreakerState::Open | BreakerState::ForcedOpen => self.opened_at = now,
            BreakerState::Closed | BreakerState::Disabled => {
                self.consecutive_failures = 0;
                self.window.clear();
            }
            BreakerState::HalfOpen => {}
        }
        (from != to).then(|| BreakerTransition {
            key: Arc::clone(key),
            from,
            to,
        })
    }

    /// Moves an open breaker whose recovery timeout has passed to half-open.
    fn refresh(&mut self, key: &Arc<str>, now: Instant) -> Option<BreakerTransition> {
        let due = now.saturating_duration_since(self.opened_at) >= self.cfg.recovery_timeout;
        if self.state == BreakerState::Open && due {
            self.transition(key, BreakerState::HalfOpen, now)
        } else {
            None
        }
    }

    fn record(&mut self, outcome: Outcome) {
        let size = self.cfg.sliding_window_size as usize;
        if size == 0 {
            return;
        }
        while self.window.len() >= size {
            self.window.pop_front();
        }
        self.window.push_back(outcome);
    }

    /// (failure rate, slow rate) in percent, once the window holds enough calls.
    fn rates(&self) -> Option<(f64, f64)> {
        let n = self.window.len();
        if self.cfg.sliding_window_size == 0 || n < self.cfg.minimum_number_of_calls as usize {
            return None;
        }
        let failed = self.window.iter().filter(|o| o.failed).count();
        let slow = self.window.iter().filter(|o| o.slow).count();
        Some((
            100.0 * failed as f64 / n as f64,
            100.0 * slow as f64 / n as f64,
        ))
    }

    fn window_trips(&self) -> bool {
        self.rates().is_some_and(|(fail, slow)| {
            fail >= self.cfg.failure_rate_threshold
                || (self.cfg.slow_call_duration_threshold.is_some()
                    && slow >= self.cfg.slow_call_rate_threshold)
        })
    }

    fn retry_after(&self, now: Instant) -> Duration {
        let secs = match self.state {
            BreakerState::Open => {
                let remaining =
                    (self.opened_at + self.cfg.recovery_timeout).saturating_duration_since(now);
                ceil_secs_min1(remaining)
            }
            BreakerState::ForcedOpen => ceil_secs_min1(self.cfg.recovery_timeout),
            _ => 1,
        };
        Duration::from_secs(secs)
    }
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("state", &self.inner.lock().state)
            .finish_non_exhaustive()
    }
}

impl CircuitBreaker {
    /// A closed breaker.
    pub(crate) fn new(
        key: Arc<str>,
        cfg: BreakerConfig,
        clock: Arc<dyn Clock>,
        hooks: Arc<BreakerHooks>,
    ) -> Self {
        let now = clock.now();
        Self {
            key,
            clock,
            hooks,
            inner: Mutex::new(Inner {
                cfg,
                state: BreakerState::Closed,
                epoch: 0,
                consecutive_failures: 0,
                opened_at: now,
                half_open_in_flight: 0,
                half_open_successes: 0,
                window: VecDeque::new(),
            }),
        }
    }

    /// A standalone breaker with its own counters (tests, tools).
    pub fn standalone(key: &str, cfg: BreakerConfig, clock: Arc<dyn Clock>) -> Arc<Self> {
        Arc::new(Self::new(Arc::from(key), cfg, clock, Arc::default()))
    }

    /// Asks to make a call.
    ///
    /// # Errors
    ///
    /// [`BreakerError::CallNotPermitted`] when open (retry after the remaining recovery
    /// time, rounded up, at least 1 s), forced open, or half-open with every probe slot
    /// taken (retry after 1 s).
    pub fn try_acquire_permission(self: &Arc<Self>) -> Result<BreakerPermit, BreakerError> {
        let (res, now) = self.decide(true);
        res.map(|(probe, record, epoch)| BreakerPermit {
            breaker: Arc::clone(self),
            epoch,
            probe,
            record,
            started: now,
            settled: false,
        })
    }

    /// The refusal [`try_acquire_permission`](Self::try_acquire_permission) would answer
    /// now, without taking a permit or a half-open probe slot; `None` when it would permit.
    /// For a caller that answers a refusal before doing the work a call needs (the server's
    /// door); a call that goes on must still ask for its permit.
    pub fn refusal(&self) -> Option<BreakerError> {
        self.decide(false).0.err()
    }

    /// What a call asking now is told: `(probe, record, epoch)` or the refusal, and the time
    /// read, if any. `take` reserves the half-open probe slot a permitted probe uses.
    #[allow(clippy::type_complexity)]
    fn decide(&self, take: bool) -> (Result<(bool, bool, u64), BreakerError>, Option<Instant>) {
        let (res, t, now) = {
            let mut g = self.inner.lock();
            // The clock is read only when the state or the slow-call rule needs it, which
            // keeps the closed-state fast path free of clock reads.
            let now = (!g.state.lets_calls_through()
                || g.cfg.slow_call_duration_threshold.is_some())
            .then(|| self.clock.now());
            let t = now.and_then(|now| g.refresh(&self.key, now));
            let res = match g.state {
                BreakerState::Closed => Ok((false, true)),
                BreakerState::Disabled => Ok((false, false)),
                BreakerState::HalfOpen
                    if g.half_open_in_flight + g.half_open_successes
                        < g.cfg.permitted_calls_in_half_open_state =>
                {
                    if take {
                        g.half_open_in_flight += 1;
                    }
                    Ok((true, true))
                }
                state => Err(BreakerError::CallNotPermitted {
                    state,
                    retry_after: g.retry_after(now.unwrap_or_else(|| self.clock.now())),
                }),
            };
            (res.map(|(probe, record)| (probe, record, g.epoch)), t, now)
        };
        self.hooks.fire(t);
        (res, now)
    }

    /// Applies a verdict (`Some((verdict, started))`) or a release (`None`) from a permit.
    /// The clock is read only for the slow-call rule or a transition.
    fn settle(&self, epoch: u64, probe: bool, verdict: Option<(Verdict, Option<Instant>)>) {
        let now = || self.clock.now();
        let t = {
            let mut g = self.inner.lock();
            if g.epoch != epoch {
                return;
            }
            let slow = |g: &Inner, started: Option<Instant>| {
                g.cfg
                    .slow_call_duration_threshold
                    .zip(started)
                    .is_some_and(|(thr, started)| now().saturating_duration_since(started) >= thr)
            };
            let (outcome, timed_out) = match verdict {
                None => (None, false),
                Some((Verdict::TimedOut, started)) => (
                    Some(Outcome {
                        failed: false,
                        slow: slow(&g, started),
                    }),
                    true,
                ),
                Some((Verdict::Done { failed }, started)) => (
                    Some(Outcome {
                        failed,
                        slow: slow(&g, started),
                    }),
                    false,
                ),
            };
            match (g.state, outcome) {
                // A deadline bounds the client's wait; it says nothing about the model
                // (see `on_timeout`): a probe cut by it frees its slot.
                (BreakerState::HalfOpen, _) if probe && timed_out => {
                    g.half_open_in_flight = g.half_open_in_flight.saturating_sub(1);
                    None
                }
                (BreakerState::Closed, Some(o)) if timed_out => {
                    g.record(o);
                    g.window_trips()
                        .then(|| g.transition(&self.key, BreakerState::Open, now()))
                        .flatten()
                }
                (BreakerState::HalfOpen, None) if probe => {
                    g.half_open_in_flight = g.half_open_in_flight.saturating_sub(1);
                    None
                }
                (BreakerState::HalfOpen, Some(o)) if !o.failed => {
                    g.half_open_in_flight = g.half_open_in_flight.saturating_sub(1);
                    g.half_open_successes += 1;
                    (g.half_open_successes >= g.cfg.permitted_calls_in_half_open_state)
                        .then(|| g.transition(&self.key, BreakerState::Closed, now()))
                        .flatten()
                }
                (BreakerState::HalfOpen, Some(_)) => {
                    g.transition(&self.key, BreakerState::Open, now())
                }
                (BreakerState::Closed, Some(o)) => {
                    g.record(o);
                    if o.failed {
                        g.consecutive_failures = g.consecutive_failures.saturating_add(1);
                    } else {
                        g.consecutive_failures = 0;
                    }
                    let trips =
                        g.consecutive_failures >= g.cfg.failure_threshold || g.window_trips();
                    trips
                        .then(|| g.transition(&self.key, BreakerState::Open, now()))
                        .flatten()
                }
                _ => None,
            }
        };
        self.hooks.fire(t);
    }

    /// Back to closed with clean counters (admin "reset").
    pub fn reset(&self) {
        self.force(BreakerState::Closed);
    }

    /// Open until a reset (admin "force-open").
    pub fn force_open(&self) {
        self.force(BreakerState::ForcedOpen);
    }

    /// Let every call through and record nothing, until a reset (admin "disable").
    pub fn disable(&self) {
        self.force(BreakerState::Disabled);
    }

    fn force(&self, to: BreakerState) {
        let now = self.clock.now();
        let t = self.inner.lock().transition(&self.key, to, now);
        self.hooks.fire(t);
    }

    /// Applies new thresholds; the window shrinks (oldest first) or turns off as needed.
    pub fn update_config(&self, cfg: BreakerConfig) {
        let mut g = self.inner.lock();
        g.cfg = cfg;
        let size = cfg.sliding_window_size as usize;
        while g.window.len() > size {
            g.window.pop_front();
        }
    }

    /// The current state (an elapsed open breaker moves to half-open first).
    pub fn state(&self) -> BreakerState {
        self.snapshot().state
    }

    /// The breaker as the dashboard shows it.
    pub fn snapshot(&self) -> BreakerSnapshot {
        let now = self.clock.now();
        let (snap, t) = {
            let mut g = self.inner.lock();
            let t = g.refresh(&self.key, now);
            let retry_after_seconds = match g.state {
                BreakerState::Open | BreakerState::ForcedOpen => g.retry_after(now).as_secs(),
                _ => 0,
            };
            let snap = BreakerSnapshot {
                key: self.key.to_string(),
                state: g.state,
                consecutive_failures: g.consecutive_failures,
                retry_after_seconds,
                failure_rate: g.rates().map(|(fail, _)| fail),
            };
            (snap, t)
        };
        self.hooks.fire(t);
        snap
    }
}

/// Permission for one call. Give the verdict with [`on_success`](Self::on_success) or
/// [`on_failure`](Self::on_failure); dropping it without one (a cancelled call) records
/// nothing and frees its half-open probe slot.
#[must_use = "a permit records nothing unless given a verdict"]
pub struct BreakerPermit {
    breaker: Arc<CircuitBreaker>,
    epoch: u64,
    probe: bool,
    record: bool,
    started: Option<Instant>,
    settled: bool,
}

impl fmt::Debug for BreakerPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerPermit")
            .field("probe", &self.probe)
            .finish_non_exhaustive()
    }
}

impl BreakerPermit {
    /// Whether this permit is a half-open probe.
    pub fn is_probe(&self) -> bool {
        self.probe
    }

    /// The call succeeded (or failed with a client error).
    pub fn on_success(self) {
        self.verdict(Verdict::Done { failed: false });
    }

    /// The call failed with an infrastructure error after its retries.
    pub fn on_failure(self) {
        self.verdict(Verdict::Done { failed: true });
    }

    /// The request's deadline cut the call. Not a failure: the deadline bounds how long
    /// the client waits, and a call outlives it under load (queued behind other work) or
    /// for a long input as readily as when the model is broken; as OpenMed's, one heavy
    /// client's timeouts must not open the breaker for everyone. It counts in the
    /// sliding window, where the slow-call rule (`breaker.slow_call_seconds`) judges it,
    /// and leaves the consecutive-failure count as it was; a half-open probe cut so frees
    /// its slot.
    pub fn on_timeout(self) {
        self.verdict(Verdict::TimedOut);
    }

    fn verdict(mut self, verdict: Verdict) {
        self.settled = true;
        if !self.record {
            return;
        }
        self.breaker
            .settle(self.epoch, self.probe, Some((verdict, self.started)));
    }
}

impl Drop for BreakerPermit {
    fn drop(&mut self) {
        if !self.settled && self.probe {
            self.breaker.settle(self.epoch, true, None);
        }
    }
}

#[cfg(test)]
#[path = "breaker_tests.rs"]
mod tests;
