//! Injected time and randomness: the [`Clock`], [`Sleeper`] and [`Jitter`] traits, their
//! real implementations, and the test doubles ([`ManualClock`], [`SeqJitter`],
//! [`FixedJitter`]) that the guard's own tests and the server's black-box tests share.
//!
//! Every timer in the guard (breaker recovery, bucket refill, budget window, queue wait,
//! backoff) reads the one injected clock, so a test moves time with
//! [`ManualClock::advance`] instead of sleeping, and a jitter sequence makes backoff exact.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::Rng;

/// A source of "now".
///
/// ```
/// use phiguard::guard::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let t0 = clock.now();
/// clock.advance(Duration::from_secs(30));
/// assert_eq!(clock.now() - t0, Duration::from_secs(30));
/// ```
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// Something that can wait; the guard never calls `tokio::time::sleep` directly.
pub trait Sleeper: Send + Sync + 'static {
    /// A future that completes once `d` has passed on this sleeper's clock.
    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// A source of uniform random numbers for backoff jitter.
pub trait Jitter: Send + Sync + 'static {
    /// A number uniform in `[0, 1)`.
    fn unit(&self) -> f64;
}

/// The operating system's monotonic clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// Sleeps on the tokio timer; needs a tokio runtime with time enabled.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(d))
    }
}

/// Uniform jitter from the thread-local generator of `rand`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RandJitter;

impl Jitter for RandJitter {
    fn unit(&self) -> f64 {
        rand::rng().random::<f64>()
    }
}

/// The same jitter value every time (clamped into `[0, 1)`).
#[derive(Debug, Clone, Copy)]
pub struct FixedJitter(pub f64);

impl Jitter for FixedJitter {
    fn unit(&self) -> f64 {
        clamp_unit(self.0)
    }
}

/// Jitter values taken in turn from a list, cycling (clamped into `[0, 1)`); an empty list
/// yields 0.
#[derive(Debug)]
pub struct SeqJitter {
    values: Vec<f64>,
    next: AtomicUsize,
}

impl SeqJitter {
    /// A cycling sequence of jitter values.
    pub fn new(values: Vec<f64>) -> Self {
        Self {
            values,
            next: AtomicUsize::new(0),
        }
    }
}

impl Jitter for SeqJitter {
    fn unit(&self) -> f64 {
        if self.values.is_empty() {
            return 0.0;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.values.len();
        clamp_unit(self.values[i])
    }
}

fn clamp_unit(v: f64) -> f64 {
    if v.is_finite() {
        v.clamp(0.0, 1.0 - f64::EPSILON)
    } else {
        0.0
    }
}

/// A clock that moves only when told, and a sleeper on that clock.
///
/// Clones share the same time. A sleep completes when [`advance`](Self::advance) moves the
/// clock to or past its deadline; `advance` wakes the sleeping tasks.
/// [`advance_to_next_sleep`](Self::advance_to_next_sleep) jumps to the earliest pending
/// deadline, which is how a single-threaded test drives a retry loop without real sleeps.
#[derive(Clone, Debug)]
pub struct ManualClock {
    shared: Arc<ManualShared>,
}

#[derive(Debug)]
struct ManualShared {
    base: Instant,
    state: Mutex<ManualState>,
}

#[derive(Debug, Default)]
struct ManualState {
    offset: Duration,
    next_id: u64,
    /// Pending sleeps by id: deadline and the last waker that polled it.
    sleeps: BTreeMap<u64, (Instant, Option<Waker>)>,
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl ManualClock {
    /// A clock standing at an arbitrary base instant.
    pub fn new() -> Self {
        Self {
            shared: Arc::new(ManualShared {
                base: Instant::now(),
                state: Mutex::new(ManualState::default()),
            }),
        }
    }

    /// Moves time forward by `d` and wakes every sleep whose deadline has been reached.
    pub fn advance(&self, d: Duration) {
        let wakers = {
            let mut st = self.shared.state.lock();
            st.offset += d;
            let now = self.shared.base + st.offset;
            let mut wakers = Vec::new();
            for (deadline, waker) in st.sleeps.values_mut() {
                if *deadline <= now {
                    if let Some(w) = waker.take() {
                        wakers.push(w);
                    }
                }
            }
            wakers
        };
        for w in wakers {
            w.wake();
        }
    }

    /// The earliest deadline among pending sleeps, if any.
    pub fn next_sleep_deadline(&self) -> Option<Instant> {
        let st = self.shared.state.lock();
        st.sleeps.values().map(|(d, _)| *d).min()
    }

    /// Number of sleeps created and not yet completed or dropped.
    pub fn pending_sleeps(&self) -> usize {
        self.shared.state.lock().sleeps.len()
    }

    /// Advances to the earliest pending sleep deadline (waking it) and returns how far the
    /// clock moved, or `None` when nothing is sleeping.
    pub fn advance_to_next_sleep(&self) -> Option<Duration> {
        let deadline = self.next_sleep_deadline()?;
        let step = deadline.saturating_duration_since(self.now());
        self.advance(step);
        Some(step)
    }

    /// Time elapsed since the base instant.
    pub fn elapsed(&self) -> Duration {
        self.shared.state.lock().offset
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.shared.base + self.shared.state.lock().offset
    }
}

impl Sleeper for ManualClock {
    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let mut st = self.shared.state.lock();
        let deadline = self.shared.base + st.offset + d;
        let id = st.next_id;
        st.next_id += 1;
        st.sleeps.insert(id, (deadline, None));
        Box::pin(ManualSleep {
            shared: Arc::clone(&self.shared),
            id,
            deadline,
        })
    }
}

struct ManualSleep {
    shared: Arc<ManualShared>,
    id: u64,
    deadline: Instant,
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut st = self.shared.state.lock();
        if self.shared.base + st.offset >= self.deadline {
            st.sleeps.remove(&self.id);
            return Poll::Ready(());
        }
        if let Some(entry) = st.sleeps.get_mut(&self.id) {
            entry.1 = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        self.shared.state.lock().sleeps.remove(&self.id);
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Drives a future on a [`ManualClock`] without real sleeps.

    use super::*;

    /// Polls `fut` to completion on the current thread; whenever it is pending, jumps the
    /// clock to the next sleep deadline.
    ///
    /// # Panics
    ///
    /// Panics when the future is pending and nothing is sleeping (it would hang).
    pub(crate) fn drive<F: Future>(clock: &ManualClock, fut: F) -> F::Output {
        let mut fut = std::pin::pin!(fut);
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return v;
            }
            assert!(
                clock.advance_to_next_sleep().is_some(),
                "future stalled with no pending sleep"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_sleep_completes_only_after_advance() {
        let clock = ManualClock::new();
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut s = clock.sleep(Duration::from_millis(50));
        assert!(s.as_mut().poll(&mut cx).is_pending());
        clock.advance(Duration::from_millis(49));
        assert!(s.as_mut().poll(&mut cx).is_pending());
        clock.advance(Duration::from_millis(1));
        assert!(s.as_mut().poll(&mut cx).is_ready());
        assert_eq!(clock.pending_sleeps(), 0);
    }

    #[test]
    fn dropped_sleep_is_forgotten() {
        let clock = ManualClock::new();
        let s = clock.sleep(Duration::from_secs(1));
        assert_eq!(clock.pending_sleeps(), 1);
        drop(s);
        assert_eq!(clock.pending_sleeps(), 0);
        assert_eq!(clock.advance_to_next_sleep(), None);
    }

    #[tokio::test]
    async fn advance_wakes_a_sleeping_task() {
        let clock = ManualClock::new();
        let c2 = clock.clone();
        let task = tokio::spawn(async move { c2.sleep(Duration::from_secs(5)).await });
        while clock.pending_sleeps() == 0 {
            tokio::task::yield_now().await;
        }
        // Let the task register its waker before advancing.
        tokio::task::yield_now().await;
        clock.advance(Duration::from_secs(5));
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("sleep woke")
            .expect("task ok");
    }

    #[test]
    fn jitters_stay_in_unit_interval() {
        let seq = SeqJitter::new(vec![0.0, 0.5, 1.0, -3.0, f64::NAN]);
        let got: Vec<f64> = (0..6).map(|_| seq.unit()).collect();
        assert_eq!(got[0], 0.0);
        assert_eq!(got[1], 0.5);
        assert!(got[2] < 1.0);
        assert_eq!(got[3], 0.0);
        assert_eq!(got[4], 0.0);
        assert_eq!(got[5], 0.0);
        for _ in 0..100 {
            let u = RandJitter.unit();
            assert!((0.0..1.0).contains(&u));
        }
        assert_eq!(FixedJitter(0.25).unit(), 0.25);
    }
}
