//! Retries: which errors are retried ([`Classify`]), how long to wait between attempts
//! ([`Backoff`] in three [`JitterMode`]s), and how many retries the whole service may spend
//! ([`RetryBudget`]).
//!
//! # Why jitter
//!
//! Callers that failed together retry together. Without jitter their retries arrive in
//! synchronised waves that hit a recovering backend at the same instant. `Additive` is
//! OpenMed's formula (small random spread on top of exponential growth, kept for drop-in
//! compatibility); `Full` and `Decorrelated` are the AWS Architecture Blog variants, which
//! spread retries over the whole interval and cut the total work when many callers collide.
//!
//! # Why budgets and not only max retries?
//!
//! A maximum attempt count is a guess, and it multiplies load exactly when the backend is
//! least able to take it: with 3 attempts, a backend that fails every call receives three
//! times the traffic, and any retrying caller upstream multiplies that again (a retry
//! storm). OpenMed retries every failed request up to 3 times, so under 50 % random
//! failures it sends 1.75 backend attempts per logical request. A budget, as in tower's
//! `retry::budget` and Finagle, bounds retries as a *share* of recent first attempts: every
//! first attempt deposits `ratio` of a token, every retry withdraws a whole one, and a
//! floor of `min_per_second` tokens per second keeps a quiet service able to retry at all.
//! With the defaults (20 %, 1 per second, 10 s window) the same 50 % failure run costs
//! about 1.2 attempts per request, and a hard outage adds at most 20 % on top of the
//! traffic the backend already sees. `max_attempts` remains as a per-request cap.
//!
//! Only infrastructure failures are retried (OpenMed: any exception that is not a
//! `ValueError`); a client error is returned at once and does not touch the budget.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::clock::Clock;
use super::error::{ensure, ensure_at_least, ConfigResult};

/// Decides whether an error is an infrastructure failure worth another attempt.
///
/// ```
/// use phiguard::guard::Classify;
///
/// enum BackendError { Overloaded, BadInput }
///
/// impl Classify for BackendError {
///     fn is_retryable(&self) -> bool {
///         matches!(self, BackendError::Overloaded)
///     }
/// }
/// assert!(BackendError::Overloaded.is_retryable());
/// assert!(!BackendError::BadInput.is_retryable());
/// ```
pub trait Classify {
    /// `true` for infrastructure failures (retried, counted by the breaker); `false` for
    /// client errors (returned at once, a success for the breaker).
    fn is_retryable(&self) -> bool;
}

/// How the random part of a backoff delay is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JitterMode {
    /// OpenMed: `min(initial·multⁱ, max) + U(0, jitter)`.
    #[default]
    Additive,
    /// AWS "full jitter": `U(0, min(max, initial·multⁱ))`.
    Full,
    /// AWS "decorrelated jitter": `min(max, U(initial, prev·3))`, `prev` starting at
    /// `initial`.
    Decorrelated,
}

/// Retry settings (OpenMed `OPENMED_SERVICE_RETRY_*` defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryConfig {
    /// Total attempts per logical request, at least 1 (1 = no retry).
    pub max_attempts: u32,
    /// Delay before the first retry (before jitter).
    pub backoff_initial: Duration,
    /// Exponential growth factor, at least 1.
    pub backoff_multiplier: f64,
    /// Cap on the exponential part of a delay.
    pub backoff_max: Duration,
    /// Width of the additive jitter (`Additive` mode only).
    pub jitter: Duration,
    /// How the random part is drawn.
    pub jitter_mode: JitterMode,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            backoff_initial: Duration::from_millis(50),
            backoff_multiplier: 2.0,
            backoff_max: Duration::from_secs(1),
            jitter: Duration::from_millis(10),
            jitter_mode: JitterMode::Additive,
        }
    }
}

impl RetryConfig {
    /// Checks every rule.
    ///
    /// # Errors
    ///
    /// Returns the first field that breaks its rule.
    pub fn validate(&self) -> ConfigResult {
        ensure(
            self.max_attempts >= 1,
            "retry.max_attempts",
            "must be at least 1",
        )?;
        ensure_at_least(
            self.backoff_multiplier,
            1.0,
            "retry.backoff_multiplier",
            "must be a finite number at least 1",
        )
    }
}

/// The delay sequence of one logical request. Create one per request; each
/// [`next_delay`](Self::next_delay) gives the wait before the next retry.
#[derive(Debug, Clone)]
pub struct Backoff {
    cfg: RetryConfig,
    retry: u32,
    prev: Duration,
}

impl Backoff {
    /// The sequence for one request.
    pub fn new(cfg: &RetryConfig) -> Self {
        Self {
            cfg: *cfg,
            retry: 0,
            prev: cfg.backoff_initial,
        }
    }

    /// The delay before retry number `i` (0-based), without jitter:
    /// `min(initial·multⁱ, max)`.
    pub fn exponential(cfg: &RetryConfig, i: u32) -> Duration {
        let initial = cfg.backoff_initial.as_secs_f64();
        let max = cfg.backoff_max.as_secs_f64();
        if initial == 0.0 {
            return Duration::ZERO;
        }
        let exp = i32::try_from(i).unwrap_or(i32::MAX);
        secs(initial * cfg.backoff_multiplier.powi(exp), max)
    }

    /// The next delay, given `unit` uniform in `[0, 1)`.
    pub fn next_delay(&mut self, unit: f64) -> Duration {
        let cfg = &self.cfg;
        let cap = cfg.backoff_max.as_secs_f64();
        let delay = match cfg.jitter_mode {
            JitterMode::Additive => {
                Self::exponential(cfg, self.retry) + cfg.jitter.mul_f64(unit.clamp(0.0, 1.0))
            }
            JitterMode::Full => Self::exponential(cfg, self.retry).mul_f64(unit.clamp(0.0, 1.0)),
            JitterMode::Decorrelated => {
                let lo = cfg.backoff_initial.as_secs_f64();
                let hi = (self.prev.as_secs_f64() * 3.0).max(lo);
                let d = secs(lo + (hi - lo) * unit.clamp(0.0, 1.0), cap);
                self.prev = d;
                d
            }
        };
        self.retry = self.retry.saturating_add(1);
        delay
    }
}

/// `min(v, cap)` seconds as a `Duration`; non-finite or negative values become the cap or 0.
fn secs(v: f64, cap: f64) -> Duration {
    let v = if v.is_nan() { cap } else { v.min(cap) };
    Duration::try_from_secs_f64(v.max(0.0)).unwrap_or(Duration::ZERO)
}

/// Retry budget settings (see the module doc for the why).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetConfig {
    /// How long a deposit counts, between 1 and 60 seconds.
    pub window: Duration,
    /// Retries allowed per first attempt in the window (0.2 = 20 %), between 0 and 10.
    pub ratio: f64,
    /// Retries allowed per second regardless of traffic (the floor), at least 0.
    pub min_per_second: f64,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        Self {
            window: Duration::from_secs(10),
            ratio: 0.2,
            min_per_second: 1.0,
        }
    }
}

impl BudgetConfig {
    /// Checks every rule.
    ///
    /// # Errors
    ///
    /// Returns the first field that breaks its rule.
    pub fn validate(&self) -> ConfigResult {
        ensure(
            self.window >= Duration::from_secs(1) && self.window <= Duration::from_secs(60),
            "budget.window",
            "must be between 1 and 60 seconds",
        )?;
        ensure(
            self.ratio.is_finite() && (0.0..=10.0).contains(&self.ratio),
            "budget.ratio",
            "must be between 0 and 10",
        )?;
        ensure_at_least(
            self.min_per_second,
            0.0,
            "budget.min_per_second",
            "must be a finite number at least 0",
        )
    }
}

/// Buckets in the sliding window ring.
const BUCKETS: usize = 10;

/// A sliding-window retry budget shared by every request of the service.
///
/// The window is a ring of [`BUCKETS`] buckets on the injected clock; a bucket older than
/// the window is cleared as time moves on. Balance = `min_per_second · window +
/// ratio · deposits − withdrawals`, over the buckets in the window; a retry needs at least
/// one whole token.
pub struct RetryBudget {
    clock: Arc<dyn Clock>,
    inner: Mutex<BudgetInner>,
}

struct BudgetInner {
    cfg: BudgetConfig,
    base: Instant,
    bucket_nanos: u128,
    head: u128,
    /// (deposits, withdrawals) per bucket.
    buckets: [(u64, u64); BUCKETS],
}

impl BudgetInner {
    fn new(cfg: BudgetConfig, now: Instant) -> Self {
        Self {
            cfg,
            base: now,
            bucket_nanos: (cfg.window.as_nanos() / BUCKETS as u128).max(1),
            head: 0,
            buckets: [(0, 0); BUCKETS],
        }
    }

    /// Clears the buckets that fell out of the window and returns the current bucket.
    fn rotate(&mut self, now: Instant) -> usize {
        let tick = now.saturating_duration_since(self.base).as_nanos() / self.bucket_nanos;
        if tick > self.head {
            let stale = (tick - self.head).min(BUCKETS as u128);
            for k in 0..stale {
                let idx = ((tick - k) % BUCKETS as u128) as usize;
                self.buckets[idx] = (0, 0);
            }
            self.head = tick;
        }
        (self.head % BUCKETS as u128) as usize
    }

    fn balance(&self) -> f64 {
        let (dep, wd) = self
            .buckets
            .iter()
            .fold((0u64, 0u64), |(d, w), b| (d + b.0, w + b.1));
        self.cfg.min_per_second * self.cfg.window.as_secs_f64() + self.cfg.ratio * dep as f64
            - wd as f64
    }
}

impl RetryBudget {
    /// A full-floor budget starting now.
    pub fn new(cfg: BudgetConfig, clock: Arc<dyn Clock>) -> Self {
        let now = clock.now();
        Self {
            clock,
            inner: Mutex::new(BudgetInner::new(cfg, now)),
        }
    }

    /// Records a first attempt.
    pub fn deposit(&self) {
        self.deposit_at(self.clock.now());
    }

    /// Records a first attempt made at `now` (saves a clock read on the hot path).
    pub(crate) fn deposit_at(&self, now: Instant) {
        let mut g = self.inner.lock();
        let i = g.rotate(now);
        g.buckets[i].0 += 1;
    }

    /// Takes one retry token; `false` when the balance is below one (no retry).
    pub fn try_withdraw(&self) -> bool {
        let now = self.clock.now();
        let mut g = self.inner.lock();
        let i = g.rotate(now);
        if g.balance() >= 1.0 {
            g.buckets[i].1 += 1;
            true
        } else {
            false
        }
    }

    /// The current balance in retry tokens (may be fractional).
    pub fn balance(&self) -> f64 {
        let now = self.clock.now();
        let mut g = self.inner.lock();
        g.rotate(now);
        g.balance()
    }

    /// Applies new settings; a changed window restarts the accounting.
    pub fn update_config(&self, cfg: BudgetConfig) {
        let now = self.clock.now();
        let mut g = self.inner.lock();
        if g.cfg.window == cfg.window {
            g.cfg = cfg;
        } else {
            *g = BudgetInner::new(cfg, now);
        }
    }
}

impl std::fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryBudget")
            .field("cfg", &self.inner.lock().cfg)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::clock::ManualClock;
    use proptest::prelude::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn cfg(mode: JitterMode) -> RetryConfig {
        RetryConfig {
            jitter_mode: mode,
            ..RetryConfig::default()
        }
    }

    macro_rules! backoff_case {
        ($name:ident, $mode:expr, $unit:expr, [$($want:expr),*]) => {
            #[test]
            fn $name() {
                let mut b = Backoff::new(&cfg($mode));
                let got: Vec<f64> = (0..7).map(|_| b.next_delay($unit).as_secs_f64() * 1e3).collect();
                let want: Vec<f64> = vec![$($want as f64),*];
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() < 1e-3, "got {got:?}, want {want:?}");
                }
            }
        };
    }

    // OpenMed: 50, 100, 200, 400, 800, 1000 (cap), 1000, plus half of the 10 ms jitter.
    backoff_case!(
        additive_sequence,
        JitterMode::Additive,
        0.5,
        [55, 105, 205, 405, 805, 1005, 1005]
    );
    backoff_case!(
        additive_no_jitter,
        JitterMode::Additive,
        0.0,
        [50, 100, 200, 400, 800, 1000, 1000]
    );
    backoff_case!(
        full_sequence,
        JitterMode::Full,
        0.5,
        [25, 50, 100, 200, 400, 500, 500]
    );
    // Decorrelated with u = 0.5: next = 50 + (3·prev − 50) / 2, capped at 1000.
    backoff_case!(
        decorrelated_sequence,
        JitterMode::Decorrelated,
        0.5,
        [100, 175, 287.5, 456.25, 709.375, 1000, 1000]
    );
    backoff_case!(
        decorrelated_low_end,
        JitterMode::Decorrelated,
        0.0,
        [50, 50, 50, 50, 50, 50, 50]
    );

    #[test]
    fn validation_names_the_field() {
        let bad = RetryConfig {
            max_attempts: 0,
            ..RetryConfig::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "retry.max_attempts");
        let bad = RetryConfig {
            backoff_multiplier: 0.5,
            ..RetryConfig::default()
        };
        assert_eq!(
            bad.validate().unwrap_err().field,
            "retry.backoff_multiplier"
        );
        let bad = BudgetConfig {
            ratio: -1.0,
            ..BudgetConfig::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "budget.ratio");
        assert!(RetryConfig::default().validate().is_ok());
        assert!(BudgetConfig::default().validate().is_ok());
    }

    #[test]
    fn budget_allows_floor_plus_ratio_in_one_window() {
        let clock = ManualClock::new();
        let budget = RetryBudget::new(BudgetConfig::default(), Arc::new(clock.clone()));
        for _ in 0..100 {
            budget.deposit();
        }
        let granted = (0..1000).filter(|_| budget.try_withdraw()).count();
        // floor 1/s · 10 s + 20 % of 100.
        assert_eq!(granted, 30);
    }

    #[test]
    fn budget_refills_as_the_window_slides() {
        let clock = ManualClock::new();
        let budget = RetryBudget::new(
            BudgetConfig {
                min_per_second: 0.0,
                ..BudgetConfig::default()
            },
            Arc::new(clock.clone()),
        );
        assert!(!budget.try_withdraw(), "no floor, no deposits, no retry");
        for _ in 0..10 {
            budget.deposit();
        }
        assert!(budget.try_withdraw());
        assert!(budget.try_withdraw());
        assert!(!budget.try_withdraw());
        // The deposits and withdrawals age out together after a full window.
        clock.advance(Duration::from_secs(10));
        assert_eq!(budget.balance(), 0.0);
        for _ in 0..5 {
            budget.deposit();
        }
        assert!(budget.try_withdraw());
        assert!(!budget.try_withdraw());
    }

    #[test]
    fn budget_long_failure_run_caps_retries_at_ratio_plus_floor() {
        // One request every 10 ms for 60 s; each wants every retry it can get.
        let clock = ManualClock::new();
        let budget = RetryBudget::new(BudgetConfig::default(), Arc::new(clock.clone()));
        let (mut firsts, mut retries) = (0u64, 0u64);
        for _ in 0..6000 {
            budget.deposit();
            firsts += 1;
            for _ in 0..2 {
                if budget.try_withdraw() {
                    retries += 1;
                }
            }
            clock.advance(ms(10));
        }
        let per_request = (firsts + retries) as f64 / firsts as f64;
        // 20 % + 1/s floor over 100 requests/s = 0.21, plus one window of start-up slack.
        assert!(per_request <= 1.22, "attempts per request {per_request}");
        assert!(per_request >= 1.19, "budget too stingy: {per_request}");
    }

    proptest! {
        #[test]
        fn delays_stay_within_documented_bounds(
            initial_ms in 0u64..2_000,
            mult in 1.0f64..8.0,
            max_ms in 0u64..5_000,
            jitter_ms in 0u64..500,
            units in proptest::collection::vec(0.0f64..1.0, 1..20),
            mode in prop_oneof![Just(JitterMode::Additive), Just(JitterMode::Full), Just(JitterMode::Decorrelated)],
        ) {
            let c = RetryConfig {
                max_attempts: 3,
                backoff_initial: ms(initial_ms),
                backoff_multiplier: mult,
                backoff_max: ms(max_ms),
                jitter: ms(jitter_ms),
                jitter_mode: mode,
            };
            let mut b = Backoff::new(&c);
            let mut prev = c.backoff_initial;
            for (i, u) in units.into_iter().enumerate() {
                let d = b.next_delay(u);
                let exp = Backoff::exponential(&c, i as u32);
                prop_assert!(exp <= c.backoff_max);
                match mode {
                    JitterMode::Additive => {
                        prop_assert!(d >= exp);
                        prop_assert!(d <= exp + c.jitter);
                    }
                    JitterMode::Full => prop_assert!(d <= exp),
                    JitterMode::Decorrelated => {
                        prop_assert!(d <= c.backoff_max);
                        let lo = c.backoff_initial.min(c.backoff_max);
                        prop_assert!(d + Duration::from_nanos(1) >= lo, "{d:?} < {lo:?}");
                        let hi = (prev * 3).max(c.backoff_initial);
                        prop_assert!(d <= hi + Duration::from_nanos(1));
                        prev = d;
                    }
                }
            }
        }
    }
}
