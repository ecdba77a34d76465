//! Prometheus series of the cluster-wide admission limit. They are the source of truth for
//! [`ClusterStats`](super::ClusterStats) too, so the status API and `/metrics` never
//! disagree. Labels are fixed strings (mode, outcome), never request data.

use prometheus::{IntCounter, IntCounterVec, IntGauge, Opts, Registry};

/// `mode` label values.
pub(crate) const MODE_SHARED: &str = "shared";
pub(crate) const MODE_LOCAL: &str = "local";
/// `outcome` label values.
pub(crate) const ADMITTED: &str = "admitted";
pub(crate) const REJECTED: &str = "rejected";

/// The series owned by one limiter.
#[derive(Clone)]
pub(crate) struct ClusterMetrics {
    pub(crate) admissions: IntCounterVec,
    pub(crate) fallback: IntGauge,
    pub(crate) fallbacks: IntCounter,
    pub(crate) redis_errors: IntCounter,
}

impl ClusterMetrics {
    pub(crate) fn new() -> Self {
        // Names and labels are constants, so construction fails only on a programming
        // error; `expect` here runs once, at start-up.
        let admissions = IntCounterVec::new(
            Opts::new(
                "phiguard_cluster_admissions_total",
                "Decisions of the cluster-wide admission limit by mode (shared through redis or local fallback) and outcome",
            ),
            &["mode", "outcome"],
        )
        .expect("constant metric definition");
        let fallback = IntGauge::new(
            "phiguard_cluster_limit_fallback",
            "1 while this replica enforces its local share because redis is unreachable",
        )
        .expect("constant metric definition");
        let fallbacks = IntCounter::new(
            "phiguard_cluster_fallbacks_total",
            "Times this replica fell back from the shared redis limit to its local share",
        )
        .expect("constant metric definition");
        let redis_errors = IntCounter::new(
            "phiguard_cluster_redis_errors_total",
            "Redis calls of the cluster limit that failed or timed out",
        )
        .expect("constant metric definition");
        for mode in [MODE_SHARED, MODE_LOCAL] {
            for outcome in [ADMITTED, REJECTED] {
                admissions.with_label_values(&[mode, outcome]);
            }
        }
        Self {
            admissions,
            fallback,
            fallbacks,
            redis_errors,
        }
    }

    pub(crate) fn count(&self, mode: &str, outcome: &str) {
        self.admissions.with_label_values(&[mode, outcome]).inc();
    }

    pub(crate) fn total(&self, outcome: &str) -> u64 {
        [MODE_SHARED, MODE_LOCAL]
            .iter()
            .map(|m| self.admissions.with_label_values(&[m, outcome]).get())
            .sum()
    }

    pub(crate) fn register(&self, registry: &Registry) -> prometheus::Result<()> {
        registry.register(Box::new(self.admissions.clone()))?;
        registry.register(Box::new(self.fallback.clone()))?;
        registry.register(Box::new(self.fallbacks.clone()))?;
        registry.register(Box::new(self.redis_errors.clone()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_and_totals() -> prometheus::Result<()> {
        let m = ClusterMetrics::new();
        let r = Registry::new();
        m.register(&r)?;
        m.count(MODE_SHARED, ADMITTED);
        m.count(MODE_LOCAL, ADMITTED);
        m.count(MODE_LOCAL, REJECTED);
        assert_eq!(m.total(ADMITTED), 2);
        assert_eq!(m.total(REJECTED), 1);
        let names: Vec<String> = r.gather().iter().map(|f| f.name().to_owned()).collect();
        assert!(names.contains(&"phiguard_cluster_limit_fallback".to_owned()));
        assert!(names.contains(&"phiguard_cluster_admissions_total".to_owned()));
        Ok(())
    }
}
