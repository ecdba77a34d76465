//! The composition root: the one place that turns settings and a home into the parts every
//! front end runs on. `phiguard serve` and the desktop shell (through [`crate::server::Server`]),
//! `phiguard deid` and `phiguard eval` all build their engine here — the guard from the
//! `retry`/`breaker`/`limits`/`admission` settings, the fault injector, the registry of the
//! installed models over the rule recognizers, the inference worker pool — and settings
//! that change live reach a running engine through [`apply_live`]. The HTTP module adds only
//! what is HTTP's (listener, router, tokens, cluster limiter); nothing here knows a request.

use std::sync::Arc;
use std::time::Duration;

use crate::engine::{BatchConfig, Engine, Faults, Loader, ModelSpec, Naming, Registry, WorkerPool};
use crate::guard::{
    AdmissionConfig, BreakerConfig, BudgetConfig, BulkheadConfig, Clock, Guard, GuardConfig,
    Jitter, JitterMode, RandJitter, RateConfig, RetryConfig, Sleeper, SystemClock, TokioSleeper,
};
use crate::settings::key::Float;
use crate::settings::{keys, Home, Key, Settings};

/// Why an engine could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Returned when the guard refuses the settings.
    #[error(transparent)]
    Guard(#[from] crate::guard::GuardConfigError),
    /// Returned when `PHIGUARD_FAULTS` does not parse.
    #[error(transparent)]
    Faults(#[from] crate::engine::FaultSpecError),
    /// Returned when `models.device` names a device this build or machine cannot open.
    #[error("models.device (PHIGUARD_DEVICE) is {value}, which cannot be used here: {source}")]
    Device {
        /// The setting's value.
        value: String,
        /// Why the device did not open (boxed: candle's error is large, and this one is rare).
        source: Box<crate::inference::InferenceError>,
    },
}

/// What tests and embedders may inject into an engine; the defaults are the real parts.
#[derive(Default)]
pub struct EngineOptions {
    /// Time source for the guard (tests use `ManualClock`).
    pub clock: Option<Arc<dyn Clock>>,
    /// Sleeper for backoff and queue waits.
    pub sleeper: Option<Arc<dyn Sleeper>>,
    /// Jitter source.
    pub jitter: Option<Arc<dyn Jitter>>,
    /// Model loader (default: candle).
    pub loader: Option<Arc<dyn Loader>>,
    /// Recognizers registered as installed models (tests: scripted backends).
    pub extra_backends: Vec<(String, Arc<dyn crate::detect::Recognizer>)>,
}

/// Builds the guard configuration from settings.
pub fn guard_config(s: &Settings) -> GuardConfig {
    let secs = |k: Key<Float>| Duration::from_secs_f64(s.get(k));
    let jitter_mode = match s.get(keys::RETRY_JITTER_MODE) {
        "full" => JitterMode::Full,
        "decorrelated" => JitterMode::Decorrelated,
        _ => JitterMode::Additive,
    };
    let rate_threshold = s.get(keys::BREAKER_FAILURE_RATE_THRESHOLD);
    let slow = s.get(keys::BREAKER_SLOW_CALL_SECONDS);
    let mut cfg = GuardConfig::default();
    cfg.resilience_enabled = s.get(keys::RETRY_ENABLED);
    cfg.retry = RetryConfig {
        max_attempts: s.get(keys::RETRY_MAX_ATTEMPTS) as u32,
        backoff_initial: secs(keys::RETRY_BACKOFF_INITIAL_SECONDS),
        backoff_multiplier: s.get(keys::RETRY_BACKOFF_MULTIPLIER),
        backoff_max: secs(keys::RETRY_BACKOFF_MAX_SECONDS),
        jitter: secs(keys::RETRY_BACKOFF_JITTER_SECONDS),
        jitter_mode,
    };
    cfg.budget = BudgetConfig {
        window: secs(keys::RETRY_BUDGET_WINDOW_SECONDS),
        ratio: s.get(keys::RETRY_BUDGET_RATIO),
        min_per_second: s.get(keys::RETRY_BUDGET_MIN_PER_SECOND),
    };
    cfg.breaker = BreakerConfig {
        failure_threshold: s.get(keys::BREAKER_FAILURE_THRESHOLD) as u32,
        recovery_timeout: secs(keys::BREAKER_RECOVERY_TIMEOUT_SECONDS),
        permitted_calls_in_half_open_state: s.get(keys::BREAKER_HALF_OPEN_CALLS) as u32,
        failure_rate_threshold: if rate_threshold > 0.0 {
            rate_threshold
        } else {
            100.0
        },
        // The windows are opt-in: a size of 0 turns them off in the guard.
        sliding_window_size: if rate_threshold > 0.0 || slow > 0.0 {
            s.get(keys::BREAKER_SLIDING_WINDOW_SIZE) as u32
        } else {
            0
        },
        minimum_number_of_calls: s.get(keys::BREAKER_MINIMUM_CALLS) as u32,
        slow_call_duration_threshold: (slow > 0.0).then(|| Duration::from_secs_f64(slow)),
        slow_call_rate_threshold: s.get(keys::BREAKER_SLOW_CALL_RATE_THRESHOLD),
    };
    cfg.rate = RateConfig {
        global_rps: s.get(keys::LIMITS_RATE_LIMIT_RPS),
        global_burst: s.get(keys::LIMITS_RATE_LIMIT_BURST) as u32,
        per_token_rps: s.get(keys::LIMITS_TOKEN_RATE_LIMIT_RPS),
        per_token_burst: s.get(keys::LIMITS_TOKEN_RATE_LIMIT_BURST) as u32,
        ..cfg.rate
    };
    cfg.admission = AdmissionConfig {
        capacity: s.get(keys::ADMISSION_CAPACITY) as usize,
        high_watermark: s.high_watermark() as usize,
        low_watermark: s.low_watermark() as usize,
        max_queue_wait: Duration::from_secs_f64(s.get(keys::ADMISSION_MAX_QUEUE_WAIT_MS) / 1000.0),
    };
    cfg.bulkhead = BulkheadConfig {
        max_concurrent_calls: s.get(keys::LIMITS_MAX_CONCURRENCY) as u32,
        max_wait_duration: secs(keys::LIMITS_CONCURRENCY_WAIT_SECONDS),
    };
    cfg
}

pub(crate) fn naming(s: &Settings) -> Naming {
    Naming {
        aliases: s
            .get(keys::MODELS_ALIASES)
            .iter()
            .filter_map(|p| p.split_once('='))
            .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
            .collect(),
        served: s.get(keys::MODELS_SERVED).to_vec(),
        default_model: s.get(keys::MODELS_DEFAULT).to_string(),
    }
}

/// Applies the settings that change live (guard, batching, naming, residency, fallback,
/// label thresholds) to a running engine: after `PUT /admin/settings` and at start.
pub fn apply_live(engine: &Engine, s: &Settings) {
    if let Err(e) = engine.update_guard(guard_config(s)) {
        tracing::warn!(error = %e, "guard settings refused");
    }
    engine.set_batch(batch_config(s));
    engine.set_naming(naming(s));
    engine.set_fallback_default(s.get(keys::ADMISSION_DEGRADED_FALLBACK) == "rules");
    engine.configure_residency(
        s.get(keys::MODELS_MAX_RESIDENT).map(|v| v as usize),
        s.get(keys::MODELS_KEEP_ALIVE).map(Duration::from_secs_f64),
    );
    engine.set_label_thresholds(label_thresholds(s));
    // Settings validation already refused a bad list.
    match s.terms() {
        Ok(terms) => engine.set_terms(terms),
        Err(e) => tracing::warn!(error = %e, "deid.allow_terms / deid.deny_terms ignored"),
    }
}

/// `models.label_thresholds`; settings validation already refused a bad list.
fn label_thresholds(s: &Settings) -> crate::detect::LabelThresholds {
    crate::detect::LabelThresholds::parse(s.get(keys::MODELS_LABEL_THRESHOLDS)).unwrap_or_else(
        |e| {
            tracing::warn!(error = %e, "models.label_thresholds ignored");
            crate::detect::LabelThresholds::default()
        },
    )
}

fn batch_config(s: &Settings) -> BatchConfig {
    BatchConfig {
        max_batch: s.get(keys::ADMISSION_BATCH_MAX_SIZE) as usize,
        max_wait: Duration::from_secs_f64(s.get(keys::ADMISSION_BATCH_MAX_WAIT_MS) / 1000.0),
        wait: s.get(keys::ADMISSION_BATCHING_ENABLED),
    }
}

/// Builds the engine (guard, registry with the installed models, worker pool) from
/// settings; the server and `phiguard deid` share it.
///
/// # Errors
/// [`BuildError::Guard`] for settings the guard refuses, [`BuildError::Faults`] for a bad
/// `PHIGUARD_FAULTS`, [`BuildError::Device`] for a `models.device` that does not open.
pub fn build_engine(
    settings: &Settings,
    home: &Home,
    opts: EngineOptions,
) -> Result<Arc<Engine>, BuildError> {
    let clock: Arc<dyn Clock> = opts.clock.unwrap_or_else(|| Arc::new(SystemClock));
    let sleeper: Arc<dyn Sleeper> = opts.sleeper.unwrap_or_else(|| Arc::new(TokioSleeper));
    let jitter: Arc<dyn Jitter> = opts.jitter.unwrap_or_else(|| Arc::new(RandJitter));
    let guard = Arc::new(Guard::new(
        guard_config(settings),
        Arc::clone(&clock),
        sleeper,
        jitter,
    )?);
    let faults = Arc::new(Faults::default());
    if let Ok(spec) = std::env::var("PHIGUARD_FAULTS") {
        if Faults::ENABLED {
            faults.set_spec(&spec)?;
        } else if !spec.trim().is_empty() {
            tracing::warn!("PHIGUARD_FAULTS is ignored: this build has no fault injection");
        }
    }
    let rules: Arc<dyn crate::detect::Recognizer> =
        Arc::new(crate::detect::DeferredRules::service_rules());
    let loader = match opts.loader {
        Some(loader) => loader,
        None => crate::engine::loader::default_loader(settings).map_err(|source| {
            BuildError::Device {
                value: settings.get(keys::MODELS_DEVICE).to_string(),
                source: Box::new(source),
            }
        })?,
    };
    let mut specs: Vec<ModelSpec> = crate::engine::loader::installed_specs(home);
    for (id, _) in &opts.extra_backends {
        specs.push(ModelSpec {
            id: id.clone(),
            dir: Some(std::path::PathBuf::from(format!("scripted:{id}"))),
            footprint_bytes: 0,
        });
    }
    let loader: Arc<dyn Loader> = if opts.extra_backends.is_empty() {
        loader
    } else {
        Arc::new(crate::engine::loader::WithScripted {
            inner: loader,
            scripted: opts.extra_backends.into_iter().collect(),
        })
    };
    let registry = Arc::new(Registry::new(rules, loader, Arc::clone(&faults), specs));
    registry.set_label_thresholds(label_thresholds(settings));
    let threads = settings
        .get(keys::MODELS_INFERENCE_THREADS)
        .map(|v| v as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let pool = WorkerPool::new(threads, 1024, batch_config(settings), Arc::clone(&faults));
    let engine = Engine::new(registry, pool, Arc::clone(&guard), faults, naming(settings));
    let models_dir = home.models_dir();
    engine.set_discovery(Arc::new(move |id: &str| {
        let m = crate::models::Store::open(models_dir.clone())
            .ok()?
            .get(id)?;
        Some(ModelSpec {
            id: m.id,
            dir: Some(m.dir),
            footprint_bytes: m.size_bytes,
        })
    }));
    // Settings validation already refused a bad list.
    if let Ok(terms) = settings.terms() {
        engine.set_terms(terms);
    }
    Ok(Arc::new(engine))
}
