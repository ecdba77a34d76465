//! Rate limits: token buckets per key (one per API token) plus one global bucket, on the
//! injected clock.
//!
//! # Why token buckets, and why hand-rolled
//!
//! A token bucket allows short bursts up to `burst` while holding the long-run rate to
//! `rps`, and answers a refusal with an exact `Retry-After` (the time until one token has
//! refilled). We do not use `governor`: the guard needs the injected [`Clock`] that every
//! other part of it shares (so one `ManualClock::advance` moves breakers, budgets and
//! buckets together in tests), and OpenMed's exact semantics: the bucket starts full, and
//! a limiter is active only when both `rps > 0` and `burst > 0`.
//!
//! # Bounded keys
//!
//! A flood of distinct keys must not grow memory. The map holds at most `max_keys`
//! buckets. When a new key would exceed it, buckets that have refilled to full are
//! dropped first: a full bucket behaves exactly like a fresh one, so forgetting it changes
//! no decision. If every bucket is still draining, the one idle longest is dropped.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use thiserror::Error;

use super::clock::Clock;
use super::error::{ensure, ensure_at_least, ConfigResult};

/// Which bucket refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The service-wide bucket.
    Global,
    /// The caller's own (per token) bucket.
    Token,
}

impl Scope {
    /// Number of scopes.
    pub const COUNT: usize = 2;
    /// Every scope, in index order.
    pub const ALL: [Scope; Self::COUNT] = [Self::Global, Self::Token];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Global => "global",
            Self::Token => "token",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// A bucket was empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("rate limit exceeded")]
pub struct RateLimited {
    /// Time until one token is available again.
    pub retry_after: Duration,
    /// The bucket that refused.
    pub scope: Scope,
}

/// Rate-limit settings; a scope is active only if its rps and burst are both above 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateConfig {
    /// Per-token refill rate, tokens per second.
    pub per_token_rps: f64,
    /// Per-token bucket size.
    pub per_token_burst: u32,
    /// Global refill rate, tokens per second (OpenMed `RATE_LIMIT_RPS`).
    pub global_rps: f64,
    /// Global bucket size (OpenMed `RATE_LIMIT_BURST`).
    pub global_burst: u32,
    /// Most per-token buckets kept at once, at least 1.
    pub max_keys: usize,
}

impl Default for RateConfig {
    fn default() -> Self {
        Self {
            per_token_rps: 0.0,
            per_token_burst: 0,
            global_rps: 0.0,
            global_burst: 0,
            max_keys: 10_000,
        }
    }
}

impl RateConfig {
    /// Checks every rule.
    ///
    /// # Errors
    ///
    /// Returns the first field that breaks its rule.
    pub fn validate(&self) -> ConfigResult {
        ensure_at_least(
            self.per_token_rps,
            0.0,
            "rate.per_token_rps",
            "must be a finite number at least 0",
        )?;
        ensure_at_least(
            self.global_rps,
            0.0,
            "rate.global_rps",
            "must be a finite number at least 0",
        )?;
        ensure(self.max_keys >= 1, "rate.max_keys", "must be at least 1")
    }

    fn token_active(&self) -> bool {
        self.per_token_rps > 0.0 && self.per_token_burst > 0
    }

    fn global_active(&self) -> bool {
        self.global_rps > 0.0 && self.global_burst > 0
    }
}

/// One token bucket (shared with the failed-authentication limit in `failures.rs`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Bucket {
    pub(super) tokens: f64,
    pub(super) last: Instant,
}

impl Bucket {
    pub(super) fn full(burst: u32, now: Instant) -> Self {
        Self {
            tokens: f64::from(burst),
            last: now,
        }
    }

    pub(super) fn refill(&mut self, rps: f64, burst: u32, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + dt * rps).min(f64::from(burst));
        self.last = now;
    }

    /// Time until one token is there (zero if one is there now).
    pub(super) fn wait(&self, rps: f64) -> Duration {
        if self.tokens >= 1.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64((1.0 - self.tokens) / rps).unwrap_or(Duration::MAX)
        }
    }
}

struct RateInner {
    cfg: RateConfig,
    global: Bucket,
    keys: HashMap<String, Bucket>,
}

/// Per-token and global token buckets.
pub struct RateLimiter {
    clock: Arc<dyn Clock>,
    /// Whether either limit is on (both are off by default): read without the lock, which
    /// every model request would otherwise take to learn that there is nothing to check.
    /// Written under the lock with the config.
    active: std::sync::atomic::AtomicBool,
    inner: Mutex<RateInner>,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = self.inner.lock();
        f.debug_struct("RateLimiter")
            .field("cfg", &g.cfg)
            .field("keys", &g.keys.len())
            .finish()
    }
}

impl RateLimiter {
    /// Limiters with full buckets.
    pub fn new(cfg: RateConfig, clock: Arc<dyn Clock>) -> Self {
        let now = clock.now();
        Self {
            clock,
            active: (cfg.token_active() || cfg.global_active()).into(),
            inner: Mutex::new(RateInner {
                cfg,
                global: Bucket::full(cfg.global_burst, now),
                keys: HashMap::new(),
            }),
        }
    }

    /// Takes one token from `key`'s bucket and one from the global bucket, or neither.
    ///
    /// # Errors
    ///
    /// [`RateLimited`] naming the bucket that is empty (the per-token one first) and the
    /// time until it has a token.
    pub fn check(&self, key: &str) -> Result<(), RateLimited> {
        if !self.active.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let now = self.clock.now();
        let mut g = self.inner.lock();
        let RateInner { cfg, global, keys } = &mut *g;
        let cfg = *cfg;
        if !cfg.token_active() && !cfg.global_active() {
            return Ok(());
        }
        if cfg.global_active() {
            global.refill(cfg.global_rps, cfg.global_burst, now);
        }
        let mut token_bucket = None;
        if cfg.token_active() {
            if !keys.contains_key(key) {
                make_room(keys, &cfg, now);
                keys.insert(key.to_owned(), Bucket::full(cfg.per_token_burst, now));
            }
            if let Some(b) = keys.get_mut(key) {
                b.refill(cfg.per_token_rps, cfg.per_token_burst, now);
                let wait = b.wait(cfg.per_token_rps);
                if !wait.is_zero() {
                    return Err(RateLimited {
                        retry_after: wait,
                        scope: Scope::Token,
                    });
                }
                token_bucket = Some(b);
            }
        }
        if cfg.global_active() {
            let wait = global.wait(cfg.global_rps);
            if !wait.is_zero() {
                return Err(RateLimited {
                    retry_after: wait,
                    scope: Scope::Global,
                });
            }
            global.tokens -= 1.0;
        }
        if let Some(b) = token_bucket {
            b.tokens -= 1.0;
        }
        Ok(())
    }

    /// Applies new settings; buckets keep their level, clamped to the new burst.
    pub fn update_config(&self, cfg: RateConfig) {
        let now = self.clock.now();
        let mut g = self.inner.lock();
        let old = g.cfg;
        g.global.refill(old.global_rps, old.global_burst, now);
        g.global.tokens = g.global.tokens.min(f64::from(cfg.global_burst));
        if !old.global_active() {
            g.global = Bucket::full(cfg.global_burst, now);
        }
        for b in g.keys.values_mut() {
            b.refill(old.per_token_rps, old.per_token_burst, now);
            b.tokens = b.tokens.min(f64::from(cfg.per_token_burst));
        }
        if !cfg.token_active() {
            g.keys.clear();
        }
        self.active.store(
            cfg.token_active() || cfg.global_active(),
            std::sync::atomic::Ordering::Relaxed,
        );
        g.cfg = cfg;
        while g.keys.len() > cfg.max_keys {
            let RateInner { keys, .. } = &mut *g;
            evict_oldest(keys);
        }
    }

    /// Number of per-token buckets held.
    pub fn tracked_keys(&self) -> usize {
        self.inner.lock().keys.len()
    }
}

/// Frees one slot when the map is at `max_keys`: full buckets first, else the oldest.
fn make_room(keys: &mut HashMap<String, Bucket>, cfg: &RateConfig, now: Instant) {
    if keys.len() < cfg.max_keys {
        return;
    }
    keys.retain(|_, b| {
        let mut b = *b;
        b.refill(cfg.per_token_rps, cfg.per_token_burst, now);
        b.tokens < f64::from(cfg.per_token_burst)
    });
    if keys.len() >= cfg.max_keys {
        evict_oldest(keys);
    }
}

fn evict_oldest(keys: &mut HashMap<String, Bucket>) {
    let oldest = keys
        .iter()
        .min_by_key(|(_, b)| b.last)
        .map(|(k, _)| k.clone());
    if let Some(k) = oldest {
        keys.remove(&k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::clock::ManualClock;

    fn limiter(cfg: RateConfig) -> (ManualClock, RateLimiter) {
        let clock = ManualClock::new();
        let l = RateLimiter::new(cfg, Arc::new(clock.clone()));
        (clock, l)
    }

    fn per_token(rps: f64, burst: u32) -> RateConfig {
        RateConfig {
            per_token_rps: rps,
            per_token_burst: burst,
            ..RateConfig::default()
        }
    }

    #[test]
    fn inactive_unless_rps_and_burst_are_positive() {
        for cfg in [per_token(0.0, 5), per_token(5.0, 0), RateConfig::default()] {
            let (_c, l) = limiter(cfg);
            assert!((0..1000).all(|_| l.check("t").is_ok()));
            assert_eq!(l.tracked_keys(), 0);
        }
    }

    #[test]
    fn bucket_starts_full_then_refills() {
        let (clock, l) = limiter(per_token(2.0, 3));
        assert!((0..3).all(|_| l.check("t").is_ok()));
        let e = l.check("t").unwrap_err();
        assert_eq!(e.scope, Scope::Token);
        assert_eq!(e.retry_after, Duration::from_millis(500));
        clock.advance(Duration::from_millis(200));
        assert_eq!(
            l.check("t").unwrap_err().retry_after,
            Duration::from_millis(300)
        );
        clock.advance(Duration::from_millis(300));
        assert!(l.check("t").is_ok());
        assert!(l.check("t").is_err());
        // Keys are independent.
        assert!(l.check("other").is_ok());
        // Refill never exceeds the burst.
        clock.advance(Duration::from_secs(100));
        assert!((0..3).all(|_| l.check("t").is_ok()));
        assert!(l.check("t").is_err());
    }

    #[test]
    fn global_bucket_limits_all_keys_and_refusals_take_nothing() {
        let cfg = RateConfig {
            per_token_rps: 1.0,
            per_token_burst: 2,
            global_rps: 1.0,
            global_burst: 3,
            ..RateConfig::default()
        };
        let (_clock, l) = limiter(cfg);
        assert!(l.check("a").is_ok());
        assert!(l.check("a").is_ok());
        assert_eq!(l.check("a").unwrap_err().scope, Scope::Token);
        assert!(l.check("b").is_ok());
        let e = l.check("c").unwrap_err();
        assert_eq!(e.scope, Scope::Global);
        assert_eq!(e.retry_after, Duration::from_secs(1));
        // "c" was refused by the global bucket: its own bucket is still full.
        let cfg_only_token = RateConfig {
            global_rps: 0.0,
            ..cfg
        };
        l.update_config(cfg_only_token);
        assert!(l.check("c").is_ok());
        assert!(l.check("c").is_ok());
        assert!(l.check("c").is_err());
    }

    #[test]
    fn key_flood_stays_bounded() {
        let cfg = RateConfig {
            max_keys: 100,
            ..per_token(1.0, 5)
        };
        let (clock, l) = limiter(cfg);
        for i in 0..10_000 {
            let _ = l.check(&format!("k{i}"));
            if i % 1000 == 0 {
                clock.advance(Duration::from_millis(1));
            }
        }
        assert!(l.tracked_keys() <= 100);
        // Still bounded when no bucket has refilled (nothing is idle): the oldest goes.
        for i in 0..200 {
            let _ = l.check(&format!("idle{i}"));
        }
        assert!(l.tracked_keys() <= 100);
    }

    #[test]
    fn validation_names_the_field() {
        let bad = RateConfig {
            global_rps: f64::INFINITY,
            ..RateConfig::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "rate.global_rps");
    }
}
