//! The breaker registry: one [`CircuitBreaker`] per model key, created lazily on first
//! use with the current [`BreakerConfig`], plus the per-state counts behind the three
//! unlabelled breaker gauges.
//!
//! Why lazily and per key: OpenMed keeps one breaker per resolved model id, so one failing
//! model never fails the others, and a model that is never called costs nothing. Lookups
//! take a read lock and clone an `Arc` (no allocation); only the first call for a key takes
//! the write lock. Keys are configured model ids chosen by the server, never request text.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use super::breaker::{
    BreakerConfig, BreakerHooks, BreakerListener, BreakerSnapshot, BreakerState, CircuitBreaker,
};
use super::clock::Clock;
use super::stats::GuardStats;

/// Counts of breakers per gauge state (Disabled counts as closed, ForcedOpen as open).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateCounts {
    /// Closed or disabled.
    pub closed: u64,
    /// Open or forced open.
    pub open: u64,
    /// Half-open.
    pub half_open: u64,
}

/// Breakers by key, created on first use with the registry's current config.
pub struct BreakerRegistry {
    clock: Arc<dyn Clock>,
    hooks: Arc<BreakerHooks>,
    cfg: RwLock<BreakerConfig>,
    map: RwLock<HashMap<Arc<str>, Arc<CircuitBreaker>>>,
}

impl BreakerRegistry {
    /// An empty registry.
    pub(crate) fn new(cfg: BreakerConfig, clock: Arc<dyn Clock>, stats: Arc<GuardStats>) -> Self {
        Self {
            clock,
            hooks: Arc::new(BreakerHooks {
                stats,
                listener: RwLock::new(None),
                not_flowing: Default::default(),
            }),
            cfg: RwLock::new(cfg),
            map: RwLock::new(HashMap::new()),
        }
    }

    /// The breaker for `key`, created closed if it does not exist yet.
    pub fn get(&self, key: &str) -> Arc<CircuitBreaker> {
        if let Some(b) = self.map.read().get(key) {
            return Arc::clone(b);
        }
        let mut map = self.map.write();
        let cfg = *self.cfg.read();
        let b = map.entry(Arc::from(key)).or_insert_with_key(|k| {
            Arc::new(CircuitBreaker::new(
                Arc::clone(k),
                cfg,
                Arc::clone(&self.clock),
                Arc::clone(&self.hooks),
            ))
        });
        Arc::clone(b)
    }

    /// The breaker for `key` if one exists (a key never called has no breaker, and would
    /// permit).
    pub fn peek(&self, key: &str) -> Option<Arc<CircuitBreaker>> {
        self.map.read().get(key).cloned()
    }

    /// Whether some breaker may refuse calls now (one is open, forced open or half-open). A
    /// hint, exact except for a moment around a transition: see [`BreakerHooks`].
    pub fn may_refuse(&self) -> bool {
        self.hooks
            .not_flowing
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    }

    /// Sets (or clears) the transition listener.
    pub fn set_listener(&self, listener: Option<BreakerListener>) {
        *self.hooks.listener.write() = listener;
    }

    /// Applies new thresholds to future and existing breakers.
    pub fn update_config(&self, cfg: BreakerConfig) {
        *self.cfg.write() = cfg;
        for b in self.map.read().values() {
            b.update_config(cfg);
        }
    }

    /// Every breaker, sorted by key.
    pub fn snapshots(&self) -> Vec<BreakerSnapshot> {
        let breakers: Vec<Arc<CircuitBreaker>> = self.map.read().values().cloned().collect();
        let mut out: Vec<BreakerSnapshot> = breakers.iter().map(|b| b.snapshot()).collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }

    /// Breakers per gauge state, computed now.
    pub fn state_counts(&self) -> StateCounts {
        let mut c = StateCounts::default();
        for s in self.snapshots() {
            match s.state {
                BreakerState::Closed | BreakerState::Disabled => c.closed += 1,
                BreakerState::Open | BreakerState::ForcedOpen => c.open += 1,
                BreakerState::HalfOpen => c.half_open += 1,
            }
        }
        c
    }
}
