//! Refusals in the access log: the first of a kind in each window in full, the rest counted.
//!
//! # Why
//! A refusal (`503`: a breaker open, the queue full, draining, not ready; `429`: over a rate
//! limit) costs the service almost nothing but its access line, and the clients that cause
//! one retry in loops: tens of thousands a second while a model is down. One `warn` line
//! each made the log the largest part of a refusal's cost (at the default log level the
//! fast-fail path reached about half of what it reached with logs off,
//! `docs/bench-peers.md`), and at some 400 bytes a line such a storm writes tens of
//! megabytes a second to the operator's disk. A retry storm must not become a full disk, and
//! a log that repeats one line fifty thousand times a second says no more than one line and
//! a count.
//!
//! # What is logged
//! Refusals are grouped by kind: method, route template, status, error code and the
//! caller's token id (nothing read from the request's body or path). The first refusal of a
//! kind logs its access line as every refusal did before (`warn` for a `503`, `info` for a
//! `429`), with its request id,
//! and opens a window of [`WINDOW`]. Later refusals of that kind inside the window log their
//! access line at `debug` only, and are counted. Once the window has passed, one line at
//! the same level, target `phiguard::access`, message `requests refused`, gives the kind, how many
//! were not logged at `warn` (`count`) and the seconds between the window's first and last
//! refusal (`seconds`). The next refusal of the kind, the server's periodic sweep (every few
//! seconds) or its shutdown writes that line, whichever comes first.
//!
//! Every refusal still has its line at `debug` (`RUST_LOG=info,phiguard::access=debug`),
//! and the request metrics count each one whatever the log level. Other answers, `401`
//! and `500` included, keep one line each: those are rare or wanted one by one.
//!
//! Time is passed in (`now`, the service's injected clock, the guard's), so the tests below
//! drive the windows without sleeping.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a kind's refusals are counted after its first one is logged in full.
pub const WINDOW: Duration = Duration::from_secs(10);

/// The most kinds counted at once. Kinds are few (routes × codes × tokens); past this many a
/// refusal of a new kind is logged in full, so nothing is lost, only not grouped.
const KINDS_MAX: usize = 256;

/// Whether an answer with this status is a refusal grouped here.
pub fn is_refusal(status: u16) -> bool {
    status == 503 || status == 429
}

/// A kind of refusal, as the access line names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kind {
    /// The method, as [`method_name`](super::middleware::method_name) names it (`OTHER`
    /// for one outside HTTP's own).
    pub method: &'static str,
    /// The route template (or `unknown`).
    pub route: String,
    /// The status.
    pub status: u16,
    /// The error code, `""` when none was recorded.
    pub error: &'static str,
    /// The caller's token id, `""` when none.
    pub token: String,
}

impl Kind {
    fn is(&self, method: &str, route: &str, status: u16, error: &str, token: &str) -> bool {
        self.status == status
            && self.error == error
            && self.route == route
            && self.method == method
            && self.token == token
    }
}

/// What the access line of one refusal should be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// At its status's level: the first of its kind in a window (or a kind past
    /// [`KINDS_MAX`]).
    Full,
    /// At `debug`: counted into its kind's window.
    Counted,
}

/// A closed window: `count` refusals of `kind` logged at `debug` only, over `seconds`.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// The kind.
    pub kind: Kind,
    /// Refusals logged at `debug` only.
    pub count: u64,
    /// From the window's first refusal to its last.
    pub seconds: f64,
}

impl Summary {
    /// Writes the `requests refused` line, at the level of the full line of its kind
    /// (`warn` for a `503`, `info` for a `429`).
    pub fn log(&self) {
        let Kind {
            method,
            route,
            status,
            error,
            token,
        } = &self.kind;
        macro_rules! summary {
            ($level:expr) => {
                tracing::event!(target: "phiguard::access", $level, method = *method, route = %route,
                    status, error, token = %token, count = self.count, seconds = self.seconds,
                    "requests refused")
            };
        }
        if *status >= 500 {
            summary!(tracing::Level::WARN);
        } else {
            summary!(tracing::Level::INFO);
        }
    }
}

/// One kind's open window.
struct Window {
    kind: Kind,
    opened: Instant,
    last: Instant,
    counted: u64,
}

impl Window {
    fn summary(&self) -> Option<Summary> {
        (self.counted > 0).then(|| Summary {
            kind: self.kind.clone(),
            count: self.counted,
            seconds: self.last.duration_since(self.opened).as_secs_f64(),
        })
    }
}

/// The open windows, one per kind. A short linear scan under a lock: kinds are few, and a
/// refusal holds the lock for a few comparisons.
#[derive(Default)]
pub struct RefusalLog {
    windows: Mutex<Vec<Window>>,
}

impl RefusalLog {
    /// Notes one refusal of the kind given at `now`: how to log its access line, and the
    /// summary of the kind's previous window if this refusal closed one.
    pub fn note(
        &self,
        method: &'static str,
        route: &str,
        status: u16,
        error: &'static str,
        token: &str,
        now: Instant,
    ) -> (Line, Option<Summary>) {
        let mut windows = self.windows.lock();
        match windows
            .iter_mut()
            .find(|w| w.kind.is(method, route, status, error, token))
        {
            Some(w) if now.saturating_duration_since(w.opened) < WINDOW => {
                w.counted += 1;
                w.last = now;
                (Line::Counted, None)
            }
            Some(w) => {
                let closed = w.summary();
                w.opened = now;
                w.last = now;
                w.counted = 0;
                (Line::Full, closed)
            }
            None => {
                if windows.len() < KINDS_MAX {
                    windows.push(Window {
                        kind: Kind {
                            method,
                            route: route.to_owned(),
                            status,
                            error,
                            token: token.to_owned(),
                        },
                        opened: now,
                        last: now,
                        counted: 0,
                    });
                }
                (Line::Full, None)
            }
        }
    }

    /// Closes the windows that have passed at `now`: their summaries (those that counted
    /// any refusal), oldest first.
    pub fn sweep(&self, now: Instant) -> Vec<Summary> {
        self.close(|w| now.saturating_duration_since(w.opened) >= WINDOW)
    }

    /// Closes every window (at shutdown): their summaries.
    pub fn close_all(&self) -> Vec<Summary> {
        self.close(|_| true)
    }

    fn close(&self, done: impl Fn(&Window) -> bool) -> Vec<Summary> {
        let mut windows = self.windows.lock();
        let mut out = Vec::new();
        windows.retain(|w| {
            if done(w) {
                out.extend(w.summary());
                false
            } else {
                true
            }
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CBO: &str = "circuit_breaker_open";

    fn note(log: &RefusalLog, status: u16, error: &'static str, at: Instant) -> Line {
        let (line, closed) = log.note("POST", "/pii/extract", status, error, "t1", at);
        assert_eq!(closed, None);
        line
    }

    #[test]
    fn the_first_refusal_of_a_kind_is_in_full_and_the_rest_of_its_window_counted() {
        let log = RefusalLog::default();
        let t0 = Instant::now();
        assert_eq!(note(&log, 503, CBO, t0), Line::Full);
        for i in 1..=4 {
            assert_eq!(
                note(&log, 503, CBO, t0 + Duration::from_secs(i)),
                Line::Counted
            );
        }
        // Another kind has its own window.
        assert_eq!(note(&log, 429, "rate_limited", t0), Line::Full);
        let (line, _) = log.note("POST", "/pii/extract", 503, CBO, "t2", t0);
        assert_eq!(line, Line::Full, "another caller is another kind");
        // Not yet passed: nothing to say.
        assert_eq!(log.sweep(t0 + WINDOW - Duration::from_millis(1)), vec![]);
        let closed = log.sweep(t0 + WINDOW);
        assert_eq!(
            closed.len(),
            1,
            "only the window that counted any: {closed:?}"
        );
        assert_eq!(closed[0].count, 4);
        assert_eq!(closed[0].seconds, 4.0);
        assert_eq!(closed[0].kind.error, CBO);
        assert_eq!(closed[0].kind.token, "t1");
        // The next refusal opens a new window.
        assert_eq!(note(&log, 503, CBO, t0 + WINDOW), Line::Full);
    }

    #[test]
    fn a_refusal_after_its_window_closes_it_and_opens_the_next() {
        let log = RefusalLog::default();
        let t0 = Instant::now();
        note(&log, 503, CBO, t0);
        note(&log, 503, CBO, t0 + Duration::from_secs(2));
        note(&log, 503, CBO, t0 + Duration::from_secs(3));
        let later = t0 + WINDOW + Duration::from_secs(5);
        let (line, closed) = log.note("POST", "/pii/extract", 503, CBO, "t1", later);
        assert_eq!(line, Line::Full);
        let closed = closed.expect("the first window's summary");
        assert_eq!((closed.count, closed.seconds), (2, 3.0));
        assert_eq!(
            note(&log, 503, CBO, later + Duration::from_secs(1)),
            Line::Counted
        );
        let all = log.close_all();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].count, 1);
        assert!(log.close_all().is_empty(), "closed windows are gone");
    }

    #[test]
    fn past_the_kinds_it_counts_every_new_kind_is_logged_in_full() {
        let log = RefusalLog::default();
        let t0 = Instant::now();
        for i in 0..KINDS_MAX {
            let token = format!("t{i}");
            let (line, _) = log.note("POST", "/pii/extract", 503, CBO, &token, t0);
            assert_eq!(line, Line::Full);
        }
        for _ in 0..3 {
            let (line, _) = log.note("POST", "/pii/extract", 503, CBO, "one-more", t0);
            assert_eq!(line, Line::Full);
        }
        assert_eq!(log.windows.lock().len(), KINDS_MAX);
    }

    #[test]
    fn only_503_and_429_are_grouped() {
        assert!(is_refusal(503) && is_refusal(429));
        for s in [200, 400, 401, 413, 422, 500, 502, 504] {
            assert!(!is_refusal(s), "{s}");
        }
    }
}
