//! The dashboard's last fifteen minutes: every [`INTERVAL`], one [`Sample`] of the model
//! routes' traffic (requests, errors, shed and rate-limited per second, p50 and p99
//! latency) and of each breaker's state, kept in memory in a ring of [`CAPACITY`] samples
//! and served by `GET /admin/history`.
//!
//! Why the server keeps it rather than the page: a chart opened now shows the quarter of
//! an hour before it, and every open dashboard shows the same points. Nothing in a sample
//! comes from a request's content: counts, durations, breaker keys (model names an admin
//! configured) and states.
//!
//! The quantiles are read from a cumulative histogram the way Prometheus's
//! `histogram_quantile` reads one: the interval's counts are the difference of two
//! snapshots, and the quantile is interpolated linearly inside the bucket it falls in.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::admin::BreakerStateName;
use super::metrics::ModelTotals;
use super::state::AppState;

/// Time between samples.
pub const INTERVAL: Duration = Duration::from_secs(5);

/// Samples kept: fifteen minutes at [`INTERVAL`].
pub const CAPACITY: usize = 180;

/// One interval of model-route traffic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Sample {
    /// The end of the interval, Unix time in milliseconds.
    pub at_ms: u64,
    /// The interval's length in seconds.
    pub seconds: f64,
    /// Model-route requests answered per second.
    pub requests_per_second: f64,
    /// Of those, answered 5xx, per second.
    pub errors_per_second: f64,
    /// Requests shed by admission per second.
    pub shed_per_second: f64,
    /// Model-route requests answered 429 (rate limits) per second.
    pub rate_limited_per_second: f64,
    /// Median model-route latency over the interval in milliseconds; `null` when no request
    /// finished in it.
    #[schema(required = true)]
    pub p50_ms: Option<f64>,
    /// 99th-percentile latency in milliseconds; `null` when no request finished.
    #[schema(required = true)]
    pub p99_ms: Option<f64>,
    /// Each breaker's state at the end of the interval, by breaker key.
    pub breakers: BTreeMap<String, BreakerStateName>,
}

/// `GET /admin/history`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HistoryResponse {
    /// Seconds between samples.
    pub interval_seconds: f64,
    /// The most samples kept.
    pub capacity: usize,
    /// Oldest first.
    pub samples: Vec<Sample>,
}

/// The cumulative counts one sample is the difference of.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// Model-route counters and latency histogram.
    pub model: ModelTotals,
    /// Requests shed by admission.
    pub shed: u64,
}

#[derive(Default)]
struct Ring {
    /// The last snapshot and when it was taken (Unix ms).
    last: Option<(u64, Totals)>,
    samples: VecDeque<Sample>,
}

/// The ring of samples.
#[derive(Default)]
pub struct History {
    ring: Mutex<Ring>,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes a snapshot at `at_ms`: from the second one on, each call adds the sample of the
    /// time since the one before. A snapshot whose counts went down (they never do within
    /// a process) or whose time did not move only replaces the baseline.
    pub fn record(&self, at_ms: u64, now: Totals, breakers: BTreeMap<String, BreakerStateName>) {
        let mut ring = self.ring.lock();
        let sample = ring.last.as_ref().and_then(|(t0, before)| {
            let seconds = at_ms.checked_sub(*t0).filter(|&d| d > 0)? as f64 / 1000.0;
            let diff = |a: u64, b: u64| a.checked_sub(b);
            let requests = diff(now.model.requests, before.model.requests)?;
            let errors = diff(now.model.errors, before.model.errors)?;
            let limited = diff(now.model.rate_limited, before.model.rate_limited)?;
            let shed = diff(now.shed, before.shed)?;
            let ms = |q| quantile(q, &before.model.latency, &now.model.latency).map(|s| s * 1e3);
            Some(Sample {
                at_ms,
                seconds,
                requests_per_second: requests as f64 / seconds,
                errors_per_second: errors as f64 / seconds,
                shed_per_second: shed as f64 / seconds,
                rate_limited_per_second: limited as f64 / seconds,
                p50_ms: ms(0.5),
                p99_ms: ms(0.99),
                breakers,
            })
        });
        if let Some(s) = sample {
            if ring.samples.len() == CAPACITY {
                ring.samples.pop_front();
            }
            ring.samples.push_back(s);
        }
        ring.last = Some((at_ms, now));
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> Vec<Sample> {
        self.ring.lock().samples.iter().cloned().collect()
    }
}

/// The `q` quantile (0..1) in seconds of the observations between two snapshots of one
/// cumulative histogram (`(upper bound, cumulative count)`, ascending, `+Inf` last); `None`
/// when nothing was observed between them. Inside a bucket the value is interpolated
/// linearly from the bucket's lower bound (0 for the first); a quantile that falls in the
/// `+Inf` bucket is the highest finite bound, as `histogram_quantile` answers.
pub fn quantile(q: f64, before: &[(f64, u64)], now: &[(f64, u64)]) -> Option<f64> {
    if now.is_empty() || (!before.is_empty() && before.len() != now.len()) {
        return None;
    }
    let count_before = |i: usize| before.get(i).map_or(0, |b| b.1);
    let counts: Vec<(f64, u64)> = now
        .iter()
        .enumerate()
        .map(|(i, &(bound, c))| (bound, c.saturating_sub(count_before(i))))
        .collect();
    let total = counts.last()?.1;
    if total == 0 {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * total as f64;
    let mut lower = 0.0;
    let mut below = 0u64;
    for &(upper, cumulative) in &counts {
        if cumulative as f64 >= rank && cumulative > below {
            if upper.is_infinite() {
                return Some(lower);
            }
            let inside = (cumulative - below) as f64;
            return Some(lower + (upper - lower) * ((rank - below as f64) / inside));
        }
        if upper.is_finite() {
            lower = upper;
        }
        below = cumulative;
    }
    Some(lower)
}

/// Takes one snapshot of the service into `st.history` (called every [`INTERVAL`]).
pub fn sample(st: &AppState) {
    let guard = st.engine.guard();
    let shed: u64 = guard.stats().shed.iter().flatten().sum();
    let breakers = guard
        .breakers()
        .into_iter()
        .map(|b| (b.key, b.state.into()))
        .collect();
    let at_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    st.history.record(
        at_ms,
        Totals {
            model: st.metrics.model_totals(),
            shed,
        },
        breakers,
    );
}

/// `GET /admin/history`: the last fifteen minutes of model-route traffic and breaker
/// states, one sample every five seconds.
#[utoipa::path(get, path = "/admin/history", tag = "admin", security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "samples of model-route traffic and breaker states, oldest first (the dashboard's charts)", body = HistoryResponse)))]
pub async fn admin_history(State(st): State<AppState>) -> Response {
    axum::Json(HistoryResponse {
        interval_seconds: INTERVAL.as_secs_f64(),
        capacity: CAPACITY,
        samples: st.history.samples(),
    })
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(
        requests: u64,
        errors: u64,
        limited: u64,
        shed: u64,
        latency: &[(f64, u64)],
    ) -> Totals {
        Totals {
            model: ModelTotals {
                requests,
                errors,
                rate_limited: limited,
                latency: latency.to_vec(),
            },
            shed,
        }
    }

    const INF: f64 = f64::INFINITY;

    #[test]
    fn the_first_snapshot_is_a_baseline_and_the_next_gives_per_second_rates() {
        let h = History::new();
        h.record(
            1_000,
            totals(10, 1, 0, 2, &[(0.1, 10), (INF, 10)]),
            BTreeMap::new(),
        );
        assert!(h.samples().is_empty());
        let breakers = BTreeMap::from([("phiguard-deid".to_string(), BreakerStateName::Open)]);
        h.record(
            6_000,
            totals(60, 11, 5, 12, &[(0.1, 60), (INF, 60)]),
            breakers.clone(),
        );
        let s = h.samples();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].at_ms, 6_000);
        assert_eq!(s[0].seconds, 5.0);
        assert_eq!(s[0].requests_per_second, 10.0);
        assert_eq!(s[0].errors_per_second, 2.0);
        assert_eq!(s[0].rate_limited_per_second, 1.0);
        assert_eq!(s[0].shed_per_second, 2.0);
        assert_eq!(s[0].breakers, breakers);
        // 50 requests all under 100 ms: the median is interpolated to 50 ms.
        assert!((s[0].p50_ms.unwrap() - 50.0).abs() < 1e-9);
    }

    #[test]
    fn an_idle_interval_has_no_latency_and_zero_rates() {
        let h = History::new();
        let t = totals(5, 0, 0, 0, &[(0.1, 5), (INF, 5)]);
        h.record(0, t.clone(), BTreeMap::new());
        h.record(5_000, t, BTreeMap::new());
        let s = &h.samples()[0];
        assert_eq!(s.requests_per_second, 0.0);
        assert_eq!(s.p50_ms, None);
        assert_eq!(s.p99_ms, None);
    }

    #[test]
    fn a_clock_that_did_not_move_or_counts_that_fell_only_reset_the_baseline() {
        let h = History::new();
        h.record(5_000, totals(5, 0, 0, 0, &[]), BTreeMap::new());
        h.record(5_000, totals(9, 0, 0, 0, &[]), BTreeMap::new());
        h.record(10_000, totals(1, 0, 0, 0, &[]), BTreeMap::new());
        assert!(h.samples().is_empty());
        h.record(15_000, totals(11, 0, 0, 0, &[]), BTreeMap::new());
        assert_eq!(h.samples()[0].requests_per_second, 2.0);
    }

    #[test]
    fn the_ring_keeps_the_last_capacity_samples() {
        let h = History::new();
        for i in 0..(CAPACITY as u64 + 10) {
            h.record(i * 5_000, totals(i, 0, 0, 0, &[]), BTreeMap::new());
        }
        let s = h.samples();
        assert_eq!(s.len(), CAPACITY);
        assert_eq!(s.last().unwrap().at_ms, (CAPACITY as u64 + 9) * 5_000);
        assert_eq!(s[0].at_ms, 10 * 5_000);
    }

    #[test]
    fn quantiles_interpolate_inside_the_bucket_as_histogram_quantile_does() {
        // Interval: 90 requests ≤ 10 ms, 9 in (10, 100] ms, 1 above 1 s.
        let before = [(0.01, 0), (0.1, 0), (1.0, 0), (INF, 0)];
        let now = [(0.01, 90), (0.1, 99), (1.0, 99), (INF, 100)];
        let p50 = quantile(0.5, &before, &now).unwrap();
        assert!((p50 - 0.01 * 50.0 / 90.0).abs() < 1e-12);
        let p99 = quantile(0.99, &before, &now).unwrap();
        assert!((p99 - 0.1).abs() < 1e-12, "{p99}");
        // In the +Inf bucket: the highest finite bound.
        assert_eq!(quantile(1.0, &before, &now), Some(1.0));
        // Only the interval counts, not what came before it.
        let later = [(0.01, 90), (0.1, 99), (1.0, 109), (INF, 110)];
        let p50 = quantile(0.5, &now, &later).unwrap();
        assert!(p50 > 0.1 && p50 <= 1.0, "{p50}");
        assert_eq!(quantile(0.5, &now, &now), None);
        assert_eq!(quantile(0.5, &[], &[]), None);
    }

    #[test]
    fn the_metrics_count_model_routes_only() {
        let m = super::super::metrics::Metrics::new();
        m.observe("/health", false, 200, Duration::from_millis(1));
        m.observe("/admin/status", false, 200, Duration::from_millis(1));
        m.observe("/pii/deidentify", true, 200, Duration::from_millis(40));
        m.observe("/pii/deidentify", true, 503, Duration::from_millis(2));
        m.observe("/pii/deidentify", true, 429, Duration::from_millis(1));
        let t = m.model_totals();
        assert_eq!((t.requests, t.errors, t.rate_limited), (3, 1, 1));
        assert_eq!(t.latency.last(), Some(&(f64::INFINITY, 3)));
        let p50 = quantile(0.5, &[], &t.latency).unwrap();
        assert!((0.001..=0.003).contains(&p50), "{p50}");
    }
}
