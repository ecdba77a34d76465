//! Bulkheads: at most `max_concurrent_calls` calls in flight per model key, with a short
//! bounded wait for a free slot (OpenMed `RATE_LIMIT_MAX_CONCURRENCY`,
//! `CONCURRENCY_WAIT_SECONDS`).
//!
//! # Why per key
//!
//! One slow model must not take every worker: a bulkhead (after the watertight
//! compartments of a ship) caps what each key can hold, so a stuck backend fills only its
//! own compartment and the other models keep serving. The wait is short on purpose: a
//! caller that cannot get a slot soon is better told `service_busy` than left queueing
//! behind a slow backend (the admission queue is the place to wait).
//!
//! Slots are `tokio::sync::Semaphore` permits (a lock-free fast path). A change of
//! `max_concurrent_calls` starts fresh semaphores; calls already in flight finish on the
//! old ones, so the new limit can be exceeded briefly during the change.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use parking_lot::RwLock;
use thiserror::Error;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::clock::Sleeper;

/// Bulkhead settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkheadConfig {
    /// In-flight calls per key; 0 turns bulkheads off.
    pub max_concurrent_calls: u32,
    /// Longest wait for a slot; 0 refuses at once when full.
    pub max_wait_duration: Duration,
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        Self {
            max_concurrent_calls: 0,
            max_wait_duration: Duration::from_millis(50),
        }
    }
}

/// The key's bulkhead stayed full for the whole wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("bulkhead full")]
pub struct BulkheadFull {
    /// When the caller may try again.
    pub retry_after: Duration,
}

/// A bulkhead slot (or nothing when bulkheads are off); dropping it frees the slot.
#[derive(Debug)]
pub struct BulkheadPermit {
    _slot: Option<OwnedSemaphorePermit>,
}

/// Bulkheads by key.
pub struct Bulkheads {
    sleeper: Arc<dyn Sleeper>,
    cfg: RwLock<BulkheadConfig>,
    map: RwLock<HashMap<Arc<str>, Arc<Semaphore>>>,
}

impl std::fmt::Debug for Bulkheads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bulkheads")
            .field("cfg", &*self.cfg.read())
            .finish_non_exhaustive()
    }
}

impl Bulkheads {
    /// No bulkheads created yet.
    pub fn new(cfg: BulkheadConfig, sleeper: Arc<dyn Sleeper>) -> Self {
        Self {
            sleeper,
            cfg: RwLock::new(cfg),
            map: RwLock::new(HashMap::new()),
        }
    }

    /// Takes a slot for `key`, waiting at most `min(max_wait_duration, cap())`; `cap` (the
    /// request's remaining time) is evaluated only if the bulkhead is full.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] when no slot freed up in time (retry after one second).
    pub async fn acquire(
        &self,
        key: &str,
        cap: impl FnOnce() -> Duration,
    ) -> Result<BulkheadPermit, BulkheadFull> {
        let cfg = *self.cfg.read();
        if cfg.max_concurrent_calls == 0 {
            return Ok(BulkheadPermit { _slot: None });
        }
        let sem = self.semaphore(key, cfg.max_concurrent_calls);
        if let Ok(p) = Arc::clone(&sem).try_acquire_owned() {
            return Ok(BulkheadPermit { _slot: Some(p) });
        }
        let full = BulkheadFull {
            retry_after: Duration::from_secs(1),
        };
        let wait = cfg.max_wait_duration.min(cap());
        if wait.is_zero() {
            return Err(full);
        }
        let mut acquire = std::pin::pin!(sem.acquire_owned());
        let mut timer = self.sleeper.sleep(wait);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(r) = acquire.as_mut().poll(cx) {
                // The semaphore is never closed; an error would mean it was, so refuse.
                return Poll::Ready(
                    r.map(|p| BulkheadPermit { _slot: Some(p) })
                        .map_err(|_| full),
                );
            }
            timer.as_mut().poll(cx).map(|()| Err(full))
        })
        .await
    }

    fn semaphore(&self, key: &str, limit: u32) -> Arc<Semaphore> {
        if let Some(s) = self.map.read().get(key) {
            return Arc::clone(s);
        }
        let mut map = self.map.write();
        let s = map
            .entry(Arc::from(key))
            .or_insert_with(|| Arc::new(Semaphore::new(limit as usize)));
        Arc::clone(s)
    }

    /// Calls in flight for `key`.
    pub fn in_flight(&self, key: &str) -> usize {
        let limit = self.cfg.read().max_concurrent_calls as usize;
        self.map
            .read()
            .get(key)
            .map_or(0, |s| limit.saturating_sub(s.available_permits()))
    }

    /// Applies new settings; a new limit starts fresh semaphores.
    pub fn update_config(&self, cfg: BulkheadConfig) {
        let mut cur = self.cfg.write();
        if cur.max_concurrent_calls != cfg.max_concurrent_calls {
            self.map.write().clear();
        }
        *cur = cfg;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::clock::testing::drive;
    use crate::guard::clock::ManualClock;
    use futures::FutureExt;

    fn bulkheads(max: u32, wait_ms: u64) -> (ManualClock, Bulkheads) {
        let clock = ManualClock::new();
        let cfg = BulkheadConfig {
            max_concurrent_calls: max,
            max_wait_duration: Duration::from_millis(wait_ms),
        };
        (clock.clone(), Bulkheads::new(cfg, Arc::new(clock)))
    }

    const LONG: Duration = Duration::from_secs(3600);

    #[test]
    fn off_when_zero() {
        let (clock, b) = bulkheads(0, 50);
        let held: Vec<_> = (0..100)
            .map(|_| drive(&clock, b.acquire("m", || LONG)).expect("no limit"))
            .collect();
        assert_eq!(held.len(), 100);
    }

    #[test]
    fn full_bulkhead_waits_then_refuses() {
        let (clock, b) = bulkheads(2, 50);
        let _a = drive(&clock, b.acquire("m", || LONG)).expect("slot 1");
        let _b = drive(&clock, b.acquire("m", || LONG)).expect("slot 2");
        assert_eq!(b.in_flight("m"), 2);
        let err = drive(&clock, b.acquire("m", || LONG)).unwrap_err();
        assert_eq!(err.retry_after, Duration::from_secs(1));
        assert_eq!(
            clock.elapsed(),
            Duration::from_millis(50),
            "waited the full wait"
        );
        // Another key has its own compartment.
        assert!(drive(&clock, b.acquire("other", || LONG)).is_ok());
        // The wait is capped by the caller (the request deadline).
        let t0 = clock.elapsed();
        assert!(drive(&clock, b.acquire("m", || Duration::from_millis(10))).is_err());
        assert_eq!(clock.elapsed() - t0, Duration::from_millis(10));
    }

    #[test]
    fn a_freed_slot_is_taken_by_a_waiter() {
        let (_clock, b) = bulkheads(1, 50);
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        let first = b
            .acquire("m", || LONG)
            .now_or_never()
            .expect("ready")
            .expect("slot");
        let mut second = Box::pin(b.acquire("m", || LONG));
        assert!(second.poll_unpin(&mut cx).is_pending());
        drop(first);
        match second.poll_unpin(&mut cx) {
            Poll::Ready(Ok(_)) => {}
            other => panic!("expected the freed slot, got {other:?}"),
        }
    }

    #[test]
    fn zero_wait_refuses_at_once() {
        let (clock, b) = bulkheads(1, 0);
        let _a = drive(&clock, b.acquire("m", || LONG)).expect("slot");
        assert!(drive(&clock, b.acquire("m", || LONG)).is_err());
        assert_eq!(clock.elapsed(), Duration::ZERO);
    }
}
