//! The in-process sliding-window log used while Redis is unreachable: at most `cap`
//! admissions in any `window`, with the exact wait until a slot frees.
//!
//! It also records admissions granted through Redis (bounded to `cap` entries), so that a
//! replica that has just spent its share of the shared budget does not get a fresh local
//! share the moment Redis disappears. Memory is bounded by `cap` timestamps.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// A sliding-window log of admission instants.
#[derive(Debug)]
pub(crate) struct LocalWindow {
    cap: usize,
    window: Duration,
    log: VecDeque<Instant>,
}

impl LocalWindow {
    /// A window admitting at most `cap` (at least 1) calls per `window`.
    pub(crate) fn new(cap: u32, window: Duration) -> Self {
        let cap = usize::try_from(cap.max(1)).unwrap_or(usize::MAX);
        Self {
            cap,
            window,
            log: VecDeque::with_capacity(cap.min(4096)),
        }
    }

    /// Drops entries that have left the window: an admission at `t` counts while
    /// `now < t + window` (the same rule as the Redis script).
    fn evict(&mut self, now: Instant) {
        while let Some(&front) = self.log.front() {
            if front + self.window <= now {
                self.log.pop_front();
            } else {
                break;
            }
        }
    }

    /// Admits at `now` if fewer than `cap` admissions are in the window.
    ///
    /// Returns the wait until the oldest admission leaves the window when full;
    /// a rejection is not recorded, so it never extends the window.
    pub(crate) fn try_admit(&mut self, now: Instant) -> Result<(), Duration> {
        self.evict(now);
        if self.log.len() < self.cap {
            self.log.push_back(now);
            return Ok(());
        }
        let wait = self
            .log
            .front()
            .map(|&oldest| (oldest + self.window).saturating_duration_since(now))
            .unwrap_or(self.window);
        Err(wait.max(Duration::from_millis(1)))
    }

    /// Records an admission granted elsewhere (by Redis), keeping only the newest `cap`.
    pub(crate) fn record(&mut self, now: Instant) {
        self.evict(now);
        self.log.push_back(now);
        while self.log.len() > self.cap {
            self.log.pop_front();
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.log.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn admits_cap_then_rejects_until_oldest_leaves() {
        let w = Duration::from_secs(1);
        let mut l = LocalWindow::new(3, w);
        let t0 = Instant::now();
        assert!(l.try_admit(t0).is_ok());
        assert!(l.try_admit(t0 + Duration::from_millis(100)).is_ok());
        assert!(l.try_admit(t0 + Duration::from_millis(200)).is_ok());
        assert_eq!(
            l.try_admit(t0 + Duration::from_millis(300)),
            Err(Duration::from_millis(700))
        );
        // Exactly at t0 + window the first entry has left.
        assert!(l.try_admit(t0 + w).is_ok());
        assert_eq!(
            l.try_admit(t0 + w),
            Err(Duration::from_millis(100)),
            "second entry leaves at 1.1 s"
        );
    }

    #[test]
    fn rejections_do_not_extend_the_window() {
        let w = Duration::from_secs(1);
        let mut l = LocalWindow::new(1, w);
        let t0 = Instant::now();
        assert!(l.try_admit(t0).is_ok());
        for ms in (10..1000).step_by(10) {
            assert!(l.try_admit(t0 + Duration::from_millis(ms)).is_err());
        }
        assert!(l.try_admit(t0 + w).is_ok());
    }

    #[test]
    fn record_keeps_only_cap_newest() {
        let w = Duration::from_secs(1);
        let mut l = LocalWindow::new(2, w);
        let t0 = Instant::now();
        for ms in 0..10 {
            l.record(t0 + Duration::from_millis(ms));
        }
        assert_eq!(l.len(), 2);
        let r = l.try_admit(t0 + Duration::from_millis(10));
        assert_eq!(r, Err(Duration::from_millis(998)));
    }

    #[test]
    fn zero_cap_is_one() {
        let mut l = LocalWindow::new(0, Duration::from_secs(1));
        let t0 = Instant::now();
        assert!(l.try_admit(t0).is_ok());
        assert!(l.try_admit(t0).is_err());
    }

    proptest! {
        /// In no window of length `w` are more than `cap` calls admitted, whatever the
        /// arrival pattern and however records and attempts interleave.
        #[test]
        fn never_more_than_cap_in_any_window(
            cap in 1u32..8,
            window_ms in 1u64..500,
            steps in proptest::collection::vec((0u64..200, any::<bool>()), 1..300),
        ) {
            let w = Duration::from_millis(window_ms);
            let mut l = LocalWindow::new(cap, w);
            let t0 = Instant::now();
            let mut now = t0;
            let mut admitted: Vec<Instant> = Vec::new();
            for (dt, is_record) in steps {
                now += Duration::from_millis(dt);
                if is_record {
                    l.record(now);
                    admitted.push(now);
                } else if let Err(wait) = l.try_admit(now) {
                    prop_assert!(wait > Duration::ZERO && wait <= w);
                } else {
                    // Records (grants through Redis) count too: a local admission
                    // needs fewer than `cap` of all admissions in the window.
                    let in_window = admitted.iter().filter(|&&t| t + w > now).count();
                    prop_assert!(in_window < cap as usize,
                        "admitted with {} already in window (cap {})", in_window, cap);
                    admitted.push(now);
                }
            }
        }
    }
}
