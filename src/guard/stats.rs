//! The guard's counters, for the server's `/metrics`.
//!
//! Plain relaxed atomics: they are bumped on the hot path of every call, so no lock and no
//! allocation. Every dimension is a closed enum ([`BreakerState`], [`Priority`],
//! [`ShedReason`], [`Scope`]), never a key or a model name, so no label can carry patient
//! data or grow without bound.

use std::sync::atomic::{AtomicU64, Ordering};

use super::admission::{Priority, ShedReason};
use super::breaker::BreakerState;
use super::rate::Scope;

/// Live counters; read them with [`GuardStats::snapshot`].
#[derive(Debug, Default)]
pub struct GuardStats {
    pub(crate) calls: AtomicU64,
    pub(crate) attempts: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) budget_exhausted: AtomicU64,
    pub(crate) transitions: [AtomicU64; BreakerState::COUNT],
    pub(crate) breaker_rejected: AtomicU64,
    pub(crate) shed: [[AtomicU64; ShedReason::COUNT]; Priority::COUNT],
    pub(crate) rate_limited: [AtomicU64; Scope::COUNT],
    pub(crate) bulkhead_rejected: AtomicU64,
    pub(crate) timeouts: AtomicU64,
}

/// A point-in-time copy of [`GuardStats`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Logical calls entering [`Guard::call`](super::Guard::call).
    pub calls: u64,
    /// Backend attempts (first attempts plus retries).
    pub attempts: u64,
    /// Retries (attempts after the first).
    pub retries: u64,
    /// Retries refused because the retry budget was empty.
    pub budget_exhausted: u64,
    /// Breaker transitions by target state, in [`BreakerState::ALL`] order.
    pub transitions: [u64; BreakerState::COUNT],
    /// Calls refused by a breaker.
    pub breaker_rejected: u64,
    /// Requests shed, by priority then reason, in [`Priority::ALL`] × [`ShedReason::ALL`] order.
    pub shed: [[u64; ShedReason::COUNT]; Priority::COUNT],
    /// Rate-limit refusals by scope, in [`Scope::ALL`] order.
    pub rate_limited: [u64; Scope::COUNT],
    /// Calls refused by a full bulkhead.
    pub bulkhead_rejected: u64,
    /// Calls that hit their deadline.
    pub timeouts: u64,
}

impl StatsSnapshot {
    /// Transitions into `state`.
    pub fn transitions_to(&self, state: BreakerState) -> u64 {
        self.transitions[state.index()]
    }

    /// Requests shed with this priority and reason.
    pub fn shed(&self, priority: Priority, reason: ShedReason) -> u64 {
        self.shed[priority.index()][reason.index()]
    }

    /// Rate-limit refusals in this scope.
    pub fn rate_limited(&self, scope: Scope) -> u64 {
        self.rate_limited[scope.index()]
    }
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

fn read(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

impl GuardStats {
    /// Copies every counter.
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            calls: read(&self.calls),
            attempts: read(&self.attempts),
            retries: read(&self.retries),
            budget_exhausted: read(&self.budget_exhausted),
            transitions: std::array::from_fn(|i| read(&self.transitions[i])),
            breaker_rejected: read(&self.breaker_rejected),
            shed: std::array::from_fn(|p| std::array::from_fn(|r| read(&self.shed[p][r]))),
            rate_limited: std::array::from_fn(|i| read(&self.rate_limited[i])),
            bulkhead_rejected: read(&self.bulkhead_rejected),
            timeouts: read(&self.timeouts),
        }
    }

    pub(crate) fn record_transition(&self, to: BreakerState) {
        bump(&self.transitions[to.index()]);
    }

    pub(crate) fn record_shed(&self, priority: Priority, reason: ShedReason) {
        bump(&self.shed[priority.index()][reason.index()]);
    }

    pub(crate) fn record_rate_limited(&self, scope: Scope) {
        bump(&self.rate_limited[scope.index()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_reads_each_dimension() {
        let s = GuardStats::default();
        bump(&s.calls);
        s.record_transition(BreakerState::Open);
        s.record_transition(BreakerState::Open);
        s.record_shed(Priority::Bulk, ShedReason::MaxWait);
        s.record_rate_limited(Scope::Token);
        let snap = s.snapshot();
        assert_eq!(snap.calls, 1);
        assert_eq!(snap.transitions_to(BreakerState::Open), 2);
        assert_eq!(snap.transitions_to(BreakerState::Closed), 0);
        assert_eq!(snap.shed(Priority::Bulk, ShedReason::MaxWait), 1);
        assert_eq!(snap.shed(Priority::Interactive, ShedReason::MaxWait), 0);
        assert_eq!(snap.rate_limited(Scope::Token), 1);
        assert_eq!(snap.rate_limited(Scope::Global), 0);
    }
}
