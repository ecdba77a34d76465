//! Prometheus metrics: OpenMed's family names (so existing dashboards keep working) plus
//! phiguard's own. Label values come only from closed sets: route templates, status codes,
//! priorities, shed reasons, breaker states. Gauges that mirror guard and registry state are
//! recomputed at scrape time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus::core::Collector as _;
use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    Opts, Registry, TextEncoder,
};

use super::state::AppState;
use crate::guard::{BreakerState, Priority, ShedReason};

const BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Bounds of the model-route latency histogram behind the dashboard's p50/p99 chart: finer
/// than [`BUCKETS`] below a second, where model requests fall.
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3,
    0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Requests to the model routes (the admission group), apart from the per-route families:
/// the dashboard's rates and latency chart count the work users send, not `/health`
/// probes or its own admin calls. Which routes those are is the router's list, decided once
/// per request by the request context and passed to [`Metrics::observe`].
struct ModelTraffic {
    requests: AtomicU64,
    errors: AtomicU64,
    rate_limited: AtomicU64,
    latency: Histogram,
}

/// What [`Metrics::model_totals`] reads: counts since start.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelTotals {
    /// Model-route requests answered.
    pub requests: u64,
    /// Those answered 5xx.
    pub errors: u64,
    /// Those answered 429 (rate limits).
    pub rate_limited: u64,
    /// The latency histogram: `(upper bound in seconds, cumulative count)`, ascending; the
    /// last bound is `+Inf` and its count is every request.
    pub latency: Vec<(f64, u64)>,
}

/// A model route's request series for status `503`, resolved once: the door answers that
/// status by the thousand a second, and a labelled lookup (hashing the labels under the
/// family's lock) per answer was a measurable share of it.
#[derive(Clone)]
pub struct RouteSeries {
    /// The route template.
    pub route: &'static str,
    unavailable: IntCounter,
    duration: Histogram,
}

/// The metric families.
pub struct Metrics {
    model: ModelTraffic,
    registry: Registry,
    requests: IntCounterVec,
    duration: HistogramVec,
    /// Requests in flight.
    pub inflight: IntGauge,
    /// Failed authentications.
    pub auth_failures: IntCounter,
    /// Requests refused before their token was compared: their peer address had spent its
    /// failed authentications (`security.auth_failure_burst`).
    pub auth_refused: IntCounter,
    /// Answers from degraded mode.
    pub degraded: IntCounter,
    /// Client connections open now.
    pub connections_open: IntGauge,
    /// Connections refused at the cap (`server.max_connections`).
    pub connections_refused: IntCounter,
    /// The same two for the probe port (`server.probe_port`), apart: a kubelet's and a
    /// scraper's connections are not clients, and the main port's gauge is read against
    /// its own cap.
    pub probe_connections_open: IntGauge,
    /// Connections refused at the probe port's cap.
    pub probe_connections_refused: IntCounter,
    /// Streams abandoned because the client stopped reading (`server.send_timeout_seconds`).
    pub streams_abandoned: IntCounter,
}

fn must<T>(r: prometheus::Result<T>) -> T {
    // Metric construction only fails on invalid static names: a programming error.
    r.expect("static metric definition")
}

impl Metrics {
    /// Registers every family.
    pub fn new() -> Self {
        let registry = Registry::new();
        let requests = must(IntCounterVec::new(
            Opts::new(
                "openmed_service_request_total",
                "HTTP requests by route and status",
            ),
            &["route", "status_code"],
        ));
        let duration = must(HistogramVec::new(
            HistogramOpts::new(
                "openmed_service_request_duration_seconds",
                "HTTP request duration by route",
            )
            .buckets(BUCKETS.to_vec()),
            &["route"],
        ));
        let inflight = must(IntGauge::new(
            "openmed_service_inflight_requests",
            "requests in flight",
        ));
        let auth_failures = must(IntCounter::new(
            "phiguard_auth_failures_total",
            "requests refused for invalid credentials",
        ));
        let auth_refused = must(IntCounter::new(
            "phiguard_auth_refused_total",
            "requests refused with 429 before their token was compared: too many failed authentications from their address",
        ));
        let degraded = must(IntCounter::new(
            "phiguard_degraded_responses_total",
            "answers from the rule recognizers while a model breaker was open",
        ));
        let connections_open = must(IntGauge::new(
            "phiguard_connections_open",
            "client connections open now",
        ));
        let connections_refused = must(IntCounter::new(
            "phiguard_connections_refused_total",
            "connections answered 503 and closed at the connection cap",
        ));
        let probe_connections_open = must(IntGauge::new(
            "phiguard_probe_connections_open",
            "connections open now on the probe port",
        ));
        let probe_connections_refused = must(IntCounter::new(
            "phiguard_probe_connections_refused_total",
            "connections answered 503 and closed at the probe port's connection cap",
        ));
        let streams_abandoned = must(IntCounter::new(
            "phiguard_streams_abandoned_total",
            "streaming responses given up because the client stopped reading",
        ));
        for c in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(connections_open.clone()),
            Box::new(connections_refused.clone()),
            Box::new(probe_connections_open.clone()),
            Box::new(probe_connections_refused.clone()),
            Box::new(streams_abandoned.clone()),
            Box::new(duration.clone()),
            Box::new(inflight.clone()),
            Box::new(auth_failures.clone()),
            Box::new(auth_refused.clone()),
            Box::new(degraded.clone()),
        ] {
            must(registry.register(c));
        }
        let latency = must(Histogram::with_opts(
            HistogramOpts::new(
                "phiguard_model_route_duration_seconds",
                "model-route request duration (dashboard only, not exported)",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
        ));
        Metrics {
            model: ModelTraffic {
                requests: AtomicU64::new(0),
                errors: AtomicU64::new(0),
                rate_limited: AtomicU64::new(0),
                latency,
            },
            registry,
            requests,
            duration,
            inflight,
            auth_failures,
            auth_refused,
            degraded,
            connections_open,
            connections_refused,
            probe_connections_open,
            probe_connections_refused,
            streams_abandoned,
        }
    }

    /// The registry, for families owned elsewhere (the cluster limiter's).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// One model route's series for its `503`s, looked up once (see [`RouteSeries`]).
    pub fn unavailable_series(&self, route: &'static str) -> RouteSeries {
        RouteSeries {
            route,
            unavailable: self.requests.with_label_values(&[route, "503"]),
            duration: self.duration.with_label_values(&[route]),
        }
    }

    /// Records one finished request; `model_route` says whether `route` is one of the model
    /// routes, which the dashboard's counts and latency chart take alone.
    pub fn observe(&self, route: &str, model_route: bool, status: u16, elapsed: Duration) {
        // `StatusCode::as_str` is a static string: no allocation per request for the label.
        let code = axum::http::StatusCode::from_u16(status).ok();
        let fallback;
        let label = match &code {
            Some(c) => c.as_str(),
            None => {
                fallback = status.to_string();
                &fallback
            }
        };
        self.requests.with_label_values(&[route, label]).inc();
        self.duration
            .with_label_values(&[route])
            .observe(elapsed.as_secs_f64());
        self.observe_model(model_route, status, elapsed);
    }

    /// [`observe`](Self::observe) for a `503` of `series`' model route, without looking its
    /// series up by label.
    pub fn observe_unavailable(&self, series: &RouteSeries, elapsed: Duration) {
        series.unavailable.inc();
        series.duration.observe(elapsed.as_secs_f64());
        self.observe_model(true, 503, elapsed);
    }

    /// The dashboard's model-route counts and latency.
    fn observe_model(&self, model_route: bool, status: u16, elapsed: Duration) {
        let m = &self.model;
        if model_route {
            m.requests.fetch_add(1, Ordering::Relaxed);
            if status >= 500 {
                m.errors.fetch_add(1, Ordering::Relaxed);
            } else if status == 429 {
                m.rate_limited.fetch_add(1, Ordering::Relaxed);
            }
            m.latency.observe(elapsed.as_secs_f64());
        }
    }

    /// Model-route counts since start.
    pub fn model_totals(&self) -> ModelTotals {
        let m = &self.model;
        let mut latency: Vec<(f64, u64)> = Vec::with_capacity(LATENCY_BUCKETS.len() + 1);
        let families = m.latency.collect();
        if let Some(h) = families
            .first()
            .and_then(|f| f.get_metric().first())
            .map(|m| m.get_histogram())
        {
            latency.extend(
                h.get_bucket()
                    .iter()
                    .map(|b| (b.upper_bound(), b.cumulative_count())),
            );
            latency.push((f64::INFINITY, h.get_sample_count()));
        }
        ModelTotals {
            requests: m.requests.load(Ordering::Relaxed),
            errors: m.errors.load(Ordering::Relaxed),
            rate_limited: m.rate_limited.load(Ordering::Relaxed),
            latency,
        }
    }

    /// Requests counted for a route and status (tests, dashboard rates).
    pub fn requests_total(&self) -> (u64, u64) {
        let mut all = 0;
        let mut errors = 0;
        for mf in self.registry.gather() {
            if mf.name() != "openmed_service_request_total" {
                continue;
            }
            for m in mf.get_metric() {
                let v = m.get_counter().get_value() as u64;
                all += v;
                let status = m
                    .get_label()
                    .iter()
                    .find(|l| l.name() == "status_code")
                    .map(|l| l.value().to_string())
                    .unwrap_or_default();
                if status.starts_with('5') {
                    errors += v;
                }
            }
        }
        (all, errors)
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn gauge(r: &Registry, name: &str, help: &str, v: f64) {
    let g = must(Gauge::new(name, help));
    g.set(v);
    let _ = r.register(Box::new(g));
}

fn counter_vec(r: &Registry, name: &str, help: &str, label: &str, rows: &[(&str, u64)]) {
    let c = must(IntCounterVec::new(Opts::new(name, help), &[label]));
    for (l, v) in rows {
        c.with_label_values(&[l]).inc_by(*v);
    }
    let _ = r.register(Box::new(c));
}

/// Renders the text exposition (Prometheus 0.0.4).
pub fn render(st: &AppState) -> String {
    let scrape = Registry::new();
    let guard = st.engine.guard();
    let counts = guard.breaker_state_counts();
    let stats = guard.stats();
    let adm = guard.admission_snapshot();
    let reg = st.engine.registry();
    let loaded = reg.loaded();
    gauge(
        &scrape,
        "openmed_service_orphaned_work",
        "work still running after its request timed out",
        0.0,
    );
    gauge(
        &scrape,
        "openmed_service_circuit_breaker_closed",
        "breakers closed",
        counts.closed as f64,
    );
    gauge(
        &scrape,
        "openmed_service_circuit_breaker_open",
        "breakers open",
        counts.open as f64,
    );
    gauge(
        &scrape,
        "openmed_service_circuit_breaker_half_open",
        "breakers half-open",
        counts.half_open as f64,
    );
    gauge(
        &scrape,
        "openmed_service_model_resident_total",
        "models resident",
        loaded.len() as f64,
    );
    gauge(
        &scrape,
        "openmed_service_model_resident_bytes",
        "estimated bytes of resident models",
        loaded.values().map(|l| l.footprint_bytes as f64).sum(),
    );
    gauge(
        &scrape,
        "openmed_service_model_pending_load_bytes",
        "bytes of models being loaded",
        0.0,
    );
    let loads = reg.loads.load(std::sync::atomic::Ordering::Relaxed);
    let evictions = reg.evictions.load(std::sync::atomic::Ordering::Relaxed);
    let simple = |name: &str, help: &str, v: u64| {
        let c = must(IntCounter::new(name, help));
        c.inc_by(v);
        let _ = scrape.register(Box::new(c));
    };
    simple("openmed_service_model_load_total", "model loads", loads);
    simple(
        "openmed_service_model_eviction_total",
        "model unloads by LRU or keep-alive",
        evictions,
    );
    simple(
        "openmed_service_model_rejection_total",
        "requests refused by a model breaker",
        stats.breaker_rejected,
    );
    let queue_depth = must(IntCounterVec::new(
        Opts::new(
            "openmed_service_admission_shed_total",
            "requests shed by admission",
        ),
        &["queue"],
    ));
    let mut shed_by_priority = Vec::new();
    for p in [Priority::Interactive, Priority::Bulk] {
        let n: u64 = [ShedReason::HighWatermark, ShedReason::MaxWait]
            .iter()
            .map(|r| stats.shed(p, *r))
            .sum();
        shed_by_priority.push((p.as_str(), n));
    }
    queue_depth
        .with_label_values(&["pii_extract"])
        .inc_by(shed_by_priority.iter().map(|(_, n)| n).sum());
    let _ = scrape.register(Box::new(queue_depth));
    let depth = must(prometheus::IntGaugeVec::new(
        Opts::new(
            "openmed_service_admission_queue_depth",
            "admitted requests queued or running",
        ),
        &["queue"],
    ));
    depth
        .with_label_values(&["pii_extract"])
        .set(adm.depth.iter().sum::<usize>() as i64);
    let _ = scrape.register(Box::new(depth));
    let shedding = must(prometheus::IntGaugeVec::new(
        Opts::new(
            "openmed_service_admission_queue_shedding",
            "1 while admission sheds",
        ),
        &["queue"],
    ));
    shedding
        .with_label_values(&["pii_extract"])
        .set(adm.shedding as i64);
    let _ = scrape.register(Box::new(shedding));
    let bq = must(prometheus::IntGaugeVec::new(
        Opts::new(
            "openmed_service_batch_queue_depth",
            "admitted requests by priority",
        ),
        &["priority"],
    ));
    bq.with_label_values(&["interactive"])
        .set(adm.depth[Priority::Interactive as usize] as i64);
    bq.with_label_values(&["bulk"])
        .set(adm.depth[Priority::Bulk as usize] as i64);
    let _ = scrape.register(Box::new(bq));
    counter_vec(
        &scrape,
        "openmed_service_batch_shed_total",
        "requests shed by priority",
        "priority",
        &shed_by_priority,
    );
    // phiguard's own families.
    simple(
        "phiguard_guard_calls_total",
        "logical model calls through the guard",
        stats.calls,
    );
    simple(
        "phiguard_backend_attempts_total",
        "backend attempts (first tries and retries)",
        stats.attempts,
    );
    simple("phiguard_retries_total", "retries made", stats.retries);
    simple(
        "phiguard_retry_budget_exhausted_total",
        "retries refused by the retry budget",
        stats.budget_exhausted,
    );
    simple(
        "phiguard_bulkhead_rejected_total",
        "calls refused by a full bulkhead",
        stats.bulkhead_rejected,
    );
    simple(
        "phiguard_timeouts_total",
        "calls that passed their deadline",
        stats.timeouts,
    );
    counter_vec(
        &scrape,
        "phiguard_breaker_transitions_total",
        "breaker state transitions by target state (an admin's force-open and disable too)",
        "to",
        &[
            BreakerState::Closed,
            BreakerState::Open,
            BreakerState::HalfOpen,
            BreakerState::ForcedOpen,
            BreakerState::Disabled,
        ]
        .iter()
        .map(|s| (s.as_str(), stats.transitions_to(*s)))
        .collect::<Vec<_>>(),
    );
    counter_vec(
        &scrape,
        "phiguard_rate_limited_total",
        "requests refused by a rate limit",
        "scope",
        &crate::guard::Scope::ALL
            .iter()
            .map(|s| (s.as_str(), stats.rate_limited(*s)))
            .collect::<Vec<_>>(),
    );
    let shed = must(IntCounterVec::new(
        Opts::new("phiguard_shed_total", "requests shed by admission"),
        &["priority", "reason"],
    ));
    for p in [Priority::Interactive, Priority::Bulk] {
        for r in [ShedReason::HighWatermark, ShedReason::MaxWait] {
            shed.with_label_values(&[p.as_str(), r.as_str()])
                .inc_by(stats.shed(p, r));
        }
    }
    let _ = scrape.register(Box::new(shed));
    let encoder = TextEncoder::new();
    let mut out = Vec::new();
    let mut families = st.metrics.registry.gather();
    families.extend(scrape.gather());
    let _ = encoder.encode(&families, &mut out);
    let micros = reg
        .load_seconds_micros
        .load(std::sync::atomic::Ordering::Relaxed);
    let mut text = String::from_utf8(out).unwrap_or_default();
    text.push_str(&format!(
        "# HELP openmed_service_model_load_duration_seconds model load time\n# TYPE openmed_service_model_load_duration_seconds summary\nopenmed_service_model_load_duration_seconds_count {loads}\nopenmed_service_model_load_duration_seconds_sum {}\n",
        micros as f64 / 1e6
    ));
    text
}
