//! Request deadlines: a [`Deadline`] fixed when the request arrives, and [`with_deadline`],
//! which races a future against it on the injected sleeper.
//!
//! Why one absolute deadline instead of per-attempt timeouts: the retry loop, the bulkhead
//! wait and every attempt share it, so retries can never stretch a request past the time
//! the client was promised (OpenMed's profile `timeout`, answered with 504 `timeout`).
//! The timer is created only if the future is still pending after its first poll, so a
//! call that completes at once costs no timer and no allocation.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use thiserror::Error;

use super::clock::{Clock, Sleeper};

/// Roughly a century: the stand-in for "no deadline" that still fits in an `Instant`.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// When a request must be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    /// The instant after which the request has timed out.
    pub at: Instant,
    /// The configured timeout it was derived from (reported in the 504 details).
    pub timeout: Duration,
}

/// The deadline passed before the future completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("deadline elapsed")]
pub struct Elapsed {
    /// The timeout that elapsed.
    pub timeout: Duration,
}

impl Deadline {
    /// A deadline `timeout` after `now`. A timeout too large to represent is clamped to
    /// about a century.
    pub fn after(now: Instant, timeout: Duration) -> Self {
        let at = now
            .checked_add(timeout)
            .or_else(|| now.checked_add(FOREVER))
            .unwrap_or(now);
        Self { at, timeout }
    }

    /// A deadline that will not pass in practice (OpenMed: a timeout ≤ 0 disables it).
    pub fn unbounded(now: Instant) -> Self {
        Self::after(now, FOREVER)
    }

    /// Time left before the deadline, zero once it has passed.
    pub fn remaining(&self, clock: &dyn Clock) -> Duration {
        self.at.saturating_duration_since(clock.now())
    }

    /// Whether the deadline has passed.
    pub fn is_expired(&self, clock: &dyn Clock) -> bool {
        self.remaining(clock).is_zero()
    }
}

/// Runs `fut` until it completes or `deadline` passes, whichever is first.
///
/// A deadline that has already passed returns [`Elapsed`] without polling `fut`.
pub async fn with_deadline<F: Future>(
    clock: &dyn Clock,
    sleeper: &dyn Sleeper,
    deadline: &Deadline,
    fut: F,
) -> Result<F::Output, Elapsed> {
    if deadline.is_expired(clock) {
        return Err(Elapsed {
            timeout: deadline.timeout,
        });
    }
    race(clock, sleeper, deadline, fut).await
}

/// [`with_deadline`] for a caller that has just checked the deadline itself.
pub(crate) async fn race<F: Future>(
    clock: &dyn Clock,
    sleeper: &dyn Sleeper,
    deadline: &Deadline,
    fut: F,
) -> Result<F::Output, Elapsed> {
    let elapsed = Elapsed {
        timeout: deadline.timeout,
    };
    let mut fut = std::pin::pin!(fut);
    let mut timer: Option<Pin<Box<dyn Future<Output = ()> + Send>>> = None;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        let timer = timer.get_or_insert_with(|| sleeper.sleep(deadline.remaining(clock)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(elapsed)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::clock::testing::drive;
    use crate::guard::clock::ManualClock;

    #[test]
    fn remaining_counts_down_to_zero() {
        let clock = ManualClock::new();
        let d = Deadline::after(clock.now(), Duration::from_secs(2));
        assert_eq!(d.remaining(&clock), Duration::from_secs(2));
        clock.advance(Duration::from_millis(1500));
        assert_eq!(d.remaining(&clock), Duration::from_millis(500));
        clock.advance(Duration::from_secs(1));
        assert!(d.is_expired(&clock));
        assert_eq!(d.remaining(&clock), Duration::ZERO);
    }

    #[test]
    fn ready_future_wins_without_a_timer() {
        let clock = ManualClock::new();
        let d = Deadline::after(clock.now(), Duration::from_secs(1));
        let out = drive(&clock, with_deadline(&clock, &clock, &d, async { 7 }));
        assert_eq!(out, Ok(7));
        assert_eq!(clock.pending_sleeps(), 0);
    }

    #[test]
    fn slow_future_elapses_at_the_deadline() {
        let clock = ManualClock::new();
        let d = Deadline::after(clock.now(), Duration::from_secs(1));
        let slow = clock.sleep(Duration::from_secs(5));
        let out = drive(&clock, with_deadline(&clock, &clock, &d, slow));
        assert_eq!(
            out,
            Err(Elapsed {
                timeout: Duration::from_secs(1)
            })
        );
        assert_eq!(clock.elapsed(), Duration::from_secs(1));
    }

    #[test]
    fn expired_deadline_does_not_poll() {
        let clock = ManualClock::new();
        let d = Deadline::after(clock.now(), Duration::from_millis(10));
        clock.advance(Duration::from_millis(10));
        let out = drive(
            &clock,
            with_deadline(&clock, &clock, &d, async { panic!("must not be polled") }),
        );
        assert!(out.is_err());
    }

    #[test]
    fn huge_timeouts_are_clamped() {
        let now = Instant::now();
        let d = Deadline::after(now, Duration::MAX);
        assert!(d.at > now);
        assert!(Deadline::unbounded(now).at > now + Duration::from_secs(3600));
    }
}
