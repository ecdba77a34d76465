//! The service-wide admission queue in front of execution capacity: at most `capacity`
//! requests execute, the rest wait in two priority queues for at most `max_queue_wait`,
//! and watermarks shed load before the queue grows past what can be served in time.
//!
//! # Why shed instead of queueing everything
//!
//! A request that waits longer than its client will is wasted work: by the time it runs,
//! the client has retried or gone. Shedding early with `503 backpressure` and a
//! `Retry-After` keeps latency bounded for the requests that are admitted and tells
//! clients to back off (TEI's `try_acquire_permit`, tower's `LoadShed`).
//!
//! # Rules
//!
//! * Depth = queued + running, over both priorities.
//! * Hysteresis: shedding starts when depth reaches `high_watermark` and stops only when
//!   depth falls to `low_watermark`, so the service does not flap at the boundary.
//!   While shedding, every new request is refused (`HighWatermark`).
//! * Bulk is shed earlier: a bulk request is also refused whenever depth is at or above
//!   `low_watermark`, leaving the band between the watermarks to interactive traffic.
//! * Interactive waiters are always served before bulk waiters; FIFO within a priority.
//! * A waiter that is not granted a slot within `max_queue_wait` is shed (`MaxWait`);
//!   with `max_queue_wait = 0` a request that cannot run at once is shed at once.
//!
//! The permit is RAII: dropping it hands the slot to the next waiter. A cancelled waiter
//! leaves the queue, and a slot granted to it at the same moment is passed on.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use parking_lot::Mutex;
use thiserror::Error;
use tokio::sync::oneshot;

use super::clock::Sleeper;
use super::error::{ceil_secs_min1, ensure, ConfigResult};
use super::stats::GuardStats;

/// Request priority (OpenMed `X-OpenMed-Priority`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Priority {
    /// A person is waiting: served first, shed last.
    #[default]
    Interactive,
    /// Background work: served after interactive, shed from the low watermark.
    Bulk,
}

impl Priority {
    /// Number of priorities.
    pub const COUNT: usize = 2;
    /// Every priority, in index order.
    pub const ALL: [Priority; Self::COUNT] = [Self::Interactive, Self::Bulk];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Interactive => "interactive",
            Self::Bulk => "bulk",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Why a request was shed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShedReason {
    /// Depth over the watermark rule for its priority.
    HighWatermark,
    /// Waited `max_queue_wait` without a slot.
    MaxWait,
}

impl ShedReason {
    /// Number of reasons.
    pub const COUNT: usize = 2;
    /// Every reason, in index order.
    pub const ALL: [ShedReason; Self::COUNT] = [Self::HighWatermark, Self::MaxWait];

    /// The label and details value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HighWatermark => "high_watermark",
            Self::MaxWait => "max_wait",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// The admission queue refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("{} request shed ({})", priority.as_str(), reason.as_str())]
pub struct Shed {
    /// Why.
    pub reason: ShedReason,
    /// The request's priority.
    pub priority: Priority,
    /// Depth (queued + running) when it was shed.
    pub depth: usize,
    /// The depth the queue holds before it sheds: the high watermark (OpenMed's
    /// `queue_capacity`, which is its `HIGH_WATERMARK`).
    pub queue_capacity: usize,
    /// Depth at which shedding stops.
    pub low_watermark: usize,
    /// When the caller may try again (whole seconds, at least one).
    pub retry_after: Duration,
}

/// Admission settings (OpenMed `BATCH_HIGH_WATERMARK`, `BATCH_LOW_WATERMARK`,
/// `BATCH_MAX_QUEUE_WAIT_MS`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdmissionConfig {
    /// Concurrent executions admitted, at least 1.
    pub capacity: usize,
    /// Depth at which shedding starts, at least 1.
    pub high_watermark: usize,
    /// Depth at which shedding stops; below `high_watermark`.
    pub low_watermark: usize,
    /// Longest a request waits for a slot.
    pub max_queue_wait: Duration,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        Self {
            capacity: 4,
            high_watermark: 256,
            low_watermark: 128,
            max_queue_wait: Duration::from_secs(1),
        }
    }
}

impl AdmissionConfig {
    /// Checks every rule.
    ///
    /// # Errors
    ///
    /// Returns the first field that breaks its rule.
    pub fn validate(&self) -> ConfigResult {
        ensure(
            self.capacity >= 1,
            "admission.capacity",
            "must be at least 1",
        )?;
        ensure(
            self.high_watermark >= 1,
            "admission.high_watermark",
            "must be at least 1",
        )?;
        ensure(
            self.low_watermark < self.high_watermark,
            "admission.low_watermark",
            "must be below high_watermark",
        )
    }
}

/// Queue depths and the shedding flag, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AdmissionSnapshot {
    /// Queued + running, by priority ([`Priority::ALL`] order).
    pub depth: [usize; Priority::COUNT],
    /// Waiting, by priority.
    pub queued: [usize; Priority::COUNT],
    /// Executing, by priority.
    pub running: [usize; Priority::COUNT],
    /// Whether the high-watermark hysteresis is shedding.
    pub shedding: bool,
}

struct Waiter {
    id: u64,
    tx: oneshot::Sender<()>,
}

struct State {
    cfg: AdmissionConfig,
    running: [usize; Priority::COUNT],
    queues: [VecDeque<Waiter>; Priority::COUNT],
    shedding: bool,
    next_id: u64,
}

impl State {
    fn depth(&self) -> usize {
        self.running.iter().sum::<usize>() + self.queues.iter().map(VecDeque::len).sum::<usize>()
    }

    fn update_shedding(&mut self) {
        let depth = self.depth();
        if depth >= self.cfg.high_watermark {
            self.shedding = true;
        } else if depth <= self.cfg.low_watermark {
            self.shedding = false;
        }
    }

    /// Hands free slots to waiters, interactive first.
    fn grant(&mut self) {
        while self.running.iter().sum::<usize>() < self.cfg.capacity {
            let Some(p) = Priority::ALL
                .into_iter()
                .find(|p| !self.queues[p.index()].is_empty())
            else {
                break;
            };
            if let Some(w) = self.queues[p.index()].pop_front() {
                // A closed receiver belongs to a cancelled waiter whose guard is about to
                // find itself gone from the queue; it takes no slot.
                if w.tx.send(()).is_ok() {
                    self.running[p.index()] += 1;
                }
            }
        }
        self.update_shedding();
    }

    fn remove_waiter(&mut self, p: Priority, id: u64) -> bool {
        let q = &mut self.queues[p.index()];
        let before = q.len();
        q.retain(|w| w.id != id);
        let removed = q.len() != before;
        self.update_shedding();
        removed
    }

    fn shed(&self, reason: ShedReason, priority: Priority, depth: usize) -> Shed {
        Shed {
            reason,
            priority,
            depth,
            queue_capacity: self.cfg.high_watermark,
            low_watermark: self.cfg.low_watermark,
            retry_after: Duration::from_secs(ceil_secs_min1(self.cfg.max_queue_wait)),
        }
    }
}

struct Shared {
    state: Mutex<State>,
    stats: Arc<GuardStats>,
}

impl Shared {
    fn release(&self, p: Priority) {
        let mut st = self.state.lock();
        st.running[p.index()] = st.running[p.index()].saturating_sub(1);
        st.grant();
    }
}

/// The admission queue.
pub struct Admission {
    sleeper: Arc<dyn Sleeper>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("snapshot", &self.snapshot())
            .finish_non_exhaustive()
    }
}

/// One admitted execution; dropping it frees the slot for the next waiter.
#[must_use = "the slot is released when the permit is dropped"]
pub struct AdmissionPermit {
    shared: Arc<Shared>,
    priority: Priority,
}

impl std::fmt::Debug for AdmissionPermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionPermit")
            .field("priority", &self.priority)
            .finish()
    }
}

impl AdmissionPermit {
    /// The priority this slot was admitted with.
    pub fn priority(&self) -> Priority {
        self.priority
    }
}

impl Drop for AdmissionPermit {
    fn drop(&mut self) {
        self.shared.release(self.priority);
    }
}

/// Removes a cancelled waiter from its queue, or passes on a slot granted to it.
struct WaitGuard<'a> {
    shared: &'a Arc<Shared>,
    priority: Priority,
    id: u64,
    rx: oneshot::Receiver<()>,
    done: bool,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut st = self.shared.state.lock();
        if !st.remove_waiter(self.priority, self.id) && self.rx.try_recv().is_ok() {
            st.running[self.priority.index()] = st.running[self.priority.index()].saturating_sub(1);
            st.grant();
        }
    }
}

impl Admission {
    /// An empty queue.
    pub fn new(cfg: AdmissionConfig, sleeper: Arc<dyn Sleeper>, stats: Arc<GuardStats>) -> Self {
        Self {
            sleeper,
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    cfg,
                    running: [0; Priority::COUNT],
                    queues: [VecDeque::new(), VecDeque::new()],
                    shedding: false,
                    next_id: 0,
                }),
                stats,
            }),
        }
    }

    /// Waits (bounded) for an execution slot.
    ///
    /// # Errors
    ///
    /// [`Shed`] with reason `HighWatermark` (see the module rules) or `MaxWait`.
    pub async fn admit(&self, priority: Priority) -> Result<AdmissionPermit, Shed> {
        let (id, rx, wait) = {
            let mut st = self.shared.state.lock();
            st.update_shedding();
            let depth = st.depth();
            let over = st.shedding || (priority == Priority::Bulk && depth >= st.cfg.low_watermark);
            if over {
                return Err(self.refuse(&st, ShedReason::HighWatermark, priority, depth));
            }
            let ahead = match priority {
                Priority::Interactive => st.queues[Priority::Interactive.index()].len(),
                Priority::Bulk => st.queues.iter().map(VecDeque::len).sum(),
            };
            if ahead == 0 && st.running.iter().sum::<usize>() < st.cfg.capacity {
                st.running[priority.index()] += 1;
                st.update_shedding();
                return Ok(self.permit(priority));
            }
            if st.cfg.max_queue_wait.is_zero() {
                return Err(self.refuse(&st, ShedReason::MaxWait, priority, depth));
            }
            let id = st.next_id;
            st.next_id += 1;
            let (tx, rx) = oneshot::channel();
            st.queues[priority.index()].push_back(Waiter { id, tx });
            st.update_shedding();
            (id, rx, st.cfg.max_queue_wait)
        };
        let mut guard = WaitGuard {
            shared: &self.shared,
            priority,
            id,
            rx,
            done: false,
        };
        let mut timer = self.sleeper.sleep(wait);
        let granted = std::future::poll_fn(|cx| {
            if std::pin::Pin::new(&mut guard.rx).poll(cx).is_ready() {
                return Poll::Ready(true);
            }
            timer.as_mut().poll(cx).map(|()| false)
        })
        .await;
        guard.done = true;
        if granted {
            return Ok(self.permit(priority));
        }
        let mut st = self.shared.state.lock();
        if st.remove_waiter(priority, id) {
            let depth = st.depth();
            return Err(self.refuse(&st, ShedReason::MaxWait, priority, depth));
        }
        // Granted at the same instant the wait ran out: the slot is ours.
        drop(st);
        Ok(self.permit(priority))
    }

    fn permit(&self, priority: Priority) -> AdmissionPermit {
        AdmissionPermit {
            shared: Arc::clone(&self.shared),
            priority,
        }
    }

    fn refuse(&self, st: &State, reason: ShedReason, priority: Priority, depth: usize) -> Shed {
        self.shared.stats.record_shed(priority, reason);
        st.shed(reason, priority, depth)
    }

    /// Depths and the shedding flag now.
    pub fn snapshot(&self) -> AdmissionSnapshot {
        let st = self.shared.state.lock();
        let queued = std::array::from_fn(|i| st.queues[i].len());
        AdmissionSnapshot {
            depth: std::array::from_fn(|i| st.queues[i].len() + st.running[i]),
            queued,
            running: st.running,
            shedding: st.shedding,
        }
    }

    /// Applies new settings; a larger capacity admits waiters at once.
    pub fn update_config(&self, cfg: AdmissionConfig) {
        let mut st = self.shared.state.lock();
        st.cfg = cfg;
        st.grant();
    }
}

#[cfg(test)]
#[path = "admission_tests.rs"]
mod tests;
