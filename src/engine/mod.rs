//! The engine: model backends keyed by id, the worker pool, and the guarded call path that
//! sits between the HTTP handlers and the models.
//!
//! A detection request goes: resolve the requested model name (aliases, served set) →
//! guard (breaker → bulkhead → retry with budget, bounded by the deadline) → lease the
//! backend (loading it on first use) → worker pool (batching, panic isolation) → spans.
//! While a model's breaker is open, or after its call failed past the retries, and degraded
//! mode is allowed, the rules-only backend answers instead, marked degraded; nothing ever
//! leaves the device.

pub mod evaluate;
pub mod faults;
pub mod loader;
pub mod registry;
pub mod workers;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use crate::detect::{RecognizerError, Span};
use crate::guard::{Classify, Deadline, Guard, GuardError};
pub use faults::{FaultSpecError, Faults};
pub use registry::{LoadError, Loader, ModelSpec, Registry, RULES_ID};
pub use workers::{BatchConfig, PoolError, Texts, WorkerPool};

/// Why a detection did not produce spans. Mapped to HTTP in `server::error`.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Returned when the requested model is not served.
    #[error("model not served")]
    NotServed,
    /// Returned when the model could not be loaded (after retries).
    #[error("model load failed")]
    Load,
    /// Returned when the model call failed after retries, or panicked.
    #[error("inference failed")]
    Backend,
    /// Returned when the worker queue or the model's bulkhead is full.
    #[error("busy")]
    Busy {
        /// Suggested wait.
        retry_after: Duration,
    },
    /// Returned while the model's breaker rejects calls.
    #[error("circuit breaker open")]
    BreakerOpen {
        /// `open`, `half_open` or `forced_open`.
        state: &'static str,
        /// Whole seconds (≥ 1).
        retry_after_seconds: u64,
    },
    /// Returned when the deadline passed.
    #[error("deadline exceeded")]
    Timeout {
        /// The configured timeout.
        timeout: Duration,
    },
}

/// One attempt's failure, classified for the retry loop and the breaker.
#[derive(Debug)]
pub enum CallError {
    /// Infrastructure: retried and counted.
    Backend,
    /// Load failure: retried and counted.
    Load,
    /// The worker queue is full: not retried (retrying overload adds load).
    Full,
    /// The model is not installed any more: a client error.
    Unknown,
}

impl Classify for CallError {
    fn is_retryable(&self) -> bool {
        matches!(self, CallError::Backend | CallError::Load)
    }
}

/// Spans from one detection, and whether they came from degraded mode.
#[derive(Debug)]
pub struct Detection {
    /// Resolved, non-overlapping spans.
    pub spans: Vec<Span>,
    /// True when the rules answered because the model's breaker was open.
    pub degraded: bool,
    /// The installed model that really ran (`rules` in degraded mode).
    pub model_id: String,
}

/// Spans of each text of one multi-text detection ([`Engine::detect_each`]).
#[derive(Debug)]
pub struct Detections {
    /// Resolved, non-overlapping spans of each text, in the texts' order.
    pub spans: Vec<Vec<Span>>,
    /// True when the rules answered because the model's breaker was open.
    pub degraded: bool,
    /// The installed model that really ran (`rules` in degraded mode).
    pub model_id: String,
}

/// Why the default model (`models.default`) cannot serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultModelProblem {
    /// Returned when `models.default` names no installed model (nor an alias of one): it was
    /// changed to one, or its model was removed, while the service ran.
    NotInstalled,
    /// Returned when its last load failed and none has succeeded since (damaged files, a
    /// device gone).
    LoadFailed,
}

/// Per-call options.
#[derive(Clone, Debug)]
pub struct CallOptions {
    /// Request deadline.
    pub deadline: Deadline,
    /// Answer from the rules (degraded) while the model's breaker is open or after its
    /// call failed past the retries.
    pub fallback_rules: bool,
    /// Keep-alive for this model use (`Some(None)` = never unload).
    pub keep_alive: Option<Option<Duration>>,
    /// The request's own allow and deny lists, applied after the configured ones.
    pub terms: Option<Arc<crate::detect::Terms>>,
    /// Apply the configured lists (`deid.*_terms`): PHI detection does; `/analyze`, which
    /// serves any entity model (diseases, drugs), does not.
    pub configured_terms: bool,
}

/// Model name resolution: aliases and the served set.
#[derive(Clone, Debug, Default)]
pub struct Naming {
    /// Requested name → installed id (`default` means `default_model`).
    pub aliases: BTreeMap<String, String>,
    /// Explicit served set; empty means "installed ids and aliases".
    pub served: Vec<String>,
    /// The default model id.
    pub default_model: String,
}

/// The engine shared by every handler.
pub struct Engine {
    /// Installed and resident models.
    registry: Arc<Registry>,
    /// Inference worker threads.
    pool: WorkerPool,
    /// The resilience layer.
    guard: Arc<Guard>,
    /// Injected faults (empty unless built with `fault-injection`).
    faults: Arc<Faults>,
    naming: RwLock<Naming>,
    fallback_default: AtomicBool,
    /// The configured allow and deny lists, applied to every detection.
    terms: RwLock<Arc<crate::detect::Terms>>,
    /// Finds a model installed after start (`phiguard models import` or `pull` beside a
    /// running server) in the model store; `None` in engines without a store.
    discover: RwLock<Option<Discover>>,
}

/// Looks a model id up in the model store.
pub type Discover = Arc<dyn Fn(&str) -> Option<ModelSpec> + Send + Sync>;

impl Engine {
    /// Assembles an engine.
    pub fn new(
        registry: Arc<Registry>,
        pool: WorkerPool,
        guard: Arc<Guard>,
        faults: Arc<Faults>,
        naming: Naming,
    ) -> Self {
        Engine {
            registry,
            pool,
            guard,
            faults,
            naming: RwLock::new(naming),
            fallback_default: AtomicBool::new(false),
            terms: RwLock::new(Arc::default()),
            discover: RwLock::new(None),
        }
    }

    /// Sets how a model installed after start is found (see [`Engine::is_installed`]).
    pub fn set_discovery(&self, discover: Discover) {
        *self.discover.write() = Some(discover);
    }

    /// The resilience layer, for what reads its state (status, metrics) and the admission
    /// gate in front of the model routes.
    pub fn guard(&self) -> &Guard {
        &self.guard
    }

    /// Installed and resident models, for what reads their state (status, metrics,
    /// `/models/loaded`).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Replaces the guard's configuration (live settings).
    ///
    /// # Errors
    /// The guard's refusal of an inconsistent configuration.
    pub fn update_guard(
        &self,
        cfg: crate::guard::GuardConfig,
    ) -> Result<(), crate::guard::GuardConfigError> {
        self.guard.update_config(cfg)
    }

    /// Replaces the batching rules of the worker pool (live settings).
    pub fn set_batch(&self, cfg: BatchConfig) {
        self.pool.set_batch(cfg);
    }

    /// Most texts one worker runs in one model call (`admission.batch_max_size`).
    pub fn max_batch(&self) -> usize {
        self.pool.batch().max_batch
    }

    /// Inference worker threads.
    pub fn inference_threads(&self) -> usize {
        self.pool.threads()
    }

    /// Sets how many models stay resident and for how long an idle one stays (live settings).
    pub fn configure_residency(&self, max_resident: Option<usize>, keep_alive: Option<Duration>) {
        self.registry.configure(max_resident, keep_alive);
    }

    /// Replaces the per-label model thresholds (live settings).
    pub fn set_label_thresholds(&self, thresholds: crate::detect::LabelThresholds) {
        self.registry.set_label_thresholds(thresholds);
    }

    /// Registers a newly installed model.
    pub fn install(&self, spec: ModelSpec) {
        self.registry.add(spec);
    }

    /// Forgets a removed model (unloading it first).
    pub fn uninstall(&self, id: &str) {
        self.registry.remove(id);
    }

    /// Whether `id` is an installed model: registered, or found in the model store now and
    /// registered then. A model the command line installs while the server runs is served
    /// from its first request, as one pulled through the admin API is; before, it was
    /// listed as installed and refused (`model_not_served`) until a restart.
    pub fn is_installed(&self, id: &str) -> bool {
        if self.registry.contains(id) {
            return true;
        }
        let discover = self.discover.read().clone();
        match discover.and_then(|d| d(id)) {
            Some(spec) => {
                tracing::info!(model = %spec.id, "model installed since start found in the store");
                self.registry.add(spec);
                true
            }
            None => false,
        }
    }

    /// Unloads idle models past their keep-alive.
    pub fn expire_idle(&self) {
        self.registry.expire_idle();
    }

    /// Loads `id` now (preloading before readiness, or before a CLI command touches any
    /// file).
    ///
    /// # Errors
    /// Why it does not load: the loader's reason (file names and checks, never request
    /// content).
    pub async fn preload(&self, id: &str) -> Result<(), String> {
        match self.lease(id, None).await {
            Ok(_) => Ok(()),
            Err(CallError::Unknown) => Err("it is not installed".into()),
            Err(_) => Err(self
                .registry
                .load_failure(id)
                .unwrap_or_else(|| "it could not be loaded".into())),
        }
    }

    /// Why the default model cannot answer requests that name no model, if it cannot: the
    /// service is then not ready (`/readyz`).
    pub fn default_model_problem(&self) -> Option<DefaultModelProblem> {
        match self.resolve(None) {
            Err(_) => Some(DefaultModelProblem::NotInstalled),
            Ok(id) if self.registry.load_failed(&id) => Some(DefaultModelProblem::LoadFailed),
            Ok(_) => None,
        }
    }

    /// Leases model `id` from the registry, loading it on first use. Loading is short
    /// blocking I/O and parsing: `spawn_blocking` is the right pool for it.
    async fn lease(
        &self,
        id: &str,
        keep_alive: Option<Option<Duration>>,
    ) -> Result<registry::Lease, CallError> {
        let registry = Arc::clone(&self.registry);
        let id = id.to_string();
        tokio::task::spawn_blocking(move || registry.lease(&id, keep_alive))
            .await
            .map_err(|_| CallError::Load)?
            .map_err(|e| match e {
                registry::RegistryError::Unknown => CallError::Unknown,
                registry::RegistryError::Load => CallError::Load,
            })
    }

    /// Replaces the injected faults (`target=mode,…`; fault-injection builds only).
    ///
    /// # Errors
    /// [`FaultSpecError`] naming the bad part.
    pub fn set_faults(&self, spec: &str) -> Result<(), FaultSpecError> {
        self.faults.set_spec(spec)
    }

    /// The injected faults, rendered, for `GET /admin/faults`.
    pub fn faults(&self) -> BTreeMap<String, String> {
        self.faults.snapshot()
    }

    /// Replaces the naming rules (live settings).
    pub fn set_naming(&self, naming: Naming) {
        *self.naming.write() = naming;
    }

    /// Sets whether degraded mode is on by default (`PHIGUARD_DEGRADED_FALLBACK=rules`).
    pub fn set_fallback_default(&self, on: bool) {
        self.fallback_default.store(on, Ordering::Relaxed);
    }

    /// Degraded mode's default.
    pub fn fallback_default(&self) -> bool {
        self.fallback_default.load(Ordering::Relaxed)
    }

    /// The default model id.
    pub fn default_model(&self) -> String {
        self.naming.read().default_model.clone()
    }

    /// The names a request may use, sorted.
    pub fn served_names(&self) -> Vec<String> {
        let naming = self.naming.read();
        let mut names: Vec<String> = if naming.served.is_empty() {
            let mut n = self.registry.ids();
            n.extend(naming.aliases.keys().cloned());
            n
        } else {
            naming.served.clone()
        };
        names.sort();
        names.dedup();
        names
    }

    /// Resolves a requested model name (None = the default) to an installed id.
    ///
    /// # Errors
    /// [`EngineError::NotServed`] when the name is not served or resolves to nothing
    /// installed.
    pub fn resolve(&self, requested: Option<&str>) -> Result<String, EngineError> {
        self.resolve_in(&self.naming.read(), requested)
    }

    /// Whether the default model of `naming` (settings not applied yet) names an installed
    /// model: `PUT /admin/settings` refuses a default that would leave every request that
    /// names no model refused.
    pub fn default_resolves_in(&self, naming: &Naming) -> bool {
        self.resolve_in(naming, None).is_ok()
    }

    fn resolve_in(&self, naming: &Naming, requested: Option<&str>) -> Result<String, EngineError> {
        let name = requested.unwrap_or(naming.default_model.as_str());
        if requested.is_some()
            && !naming.served.is_empty()
            && !naming.served.iter().any(|s| s == name)
        {
            return Err(EngineError::NotServed);
        }
        let target = match naming.aliases.get(name) {
            Some(t) if t == "default" => naming.default_model.clone(),
            Some(t) => t.clone(),
            None => name.to_string(),
        };
        if self.is_installed(&target) {
            Ok(target)
        } else {
            Err(EngineError::NotServed)
        }
    }

    /// Detects spans in `text` with the installed model `id`, through the guard.
    ///
    /// # Errors
    /// See [`EngineError`].
    pub async fn detect(
        &self,
        id: &str,
        text: Arc<str>,
        opts: &CallOptions,
    ) -> Result<Detection, EngineError> {
        let det = self.detect_each(id, Arc::from([text]), &[], opts).await?;
        Ok(Detection {
            spans: det.spans.into_iter().next().unwrap_or_default(),
            degraded: det.degraded,
            model_id: det.model_id,
        })
    }

    /// Detects spans in each of `texts` with the installed model `id`, as one guarded call
    /// (one breaker decision, one queue slot, one deadline): the free texts of one document,
    /// a table's cells or a FHIR resource's strings. Each text is read on its own, exactly
    /// as if it had been sent alone, so one text's context never changes what is found in
    /// another; a name found in one and left in another is for the caller to sweep
    /// ([`crate::detect::sweep::across`]). A text `labels` marks (a concept's label of a
    /// few words) is read by the rules alone ([`Engine::rules_for_labels`]).
    ///
    /// # Errors
    /// See [`EngineError`].
    pub async fn detect_each(
        &self,
        id: &str,
        texts: Texts,
        labels: &[bool],
        opts: &CallOptions,
    ) -> Result<Detections, EngineError> {
        let key: Arc<str> = Arc::from(id);
        let result = self
            .guard
            .call(id, &opts.deadline, |_attempt| {
                let key = Arc::clone(&key);
                let texts = Arc::clone(&texts);
                let keep_alive = opts.keep_alive;
                async move { self.attempt(key, texts, keep_alive).await }
            })
            .await;
        let mut det = match result {
            Ok(spans) => Detections {
                spans,
                degraded: false,
                model_id: id.to_string(),
            },
            Err(e) if opts.fallback_rules && falls_back(&e) => {
                self.degraded(Arc::clone(&texts)).await?
            }
            Err(e) => return Err(map_guard_error(e)),
        };
        if !det.degraded && labels.iter().any(|l| *l) {
            self.rules_for_labels(&texts, labels, &mut det.spans)
                .await?;
        }
        let configured = match opts.configured_terms {
            true => Arc::clone(&self.terms.read()),
            false => Arc::default(),
        };
        let terms = match &opts.terms {
            Some(own) => Arc::new(configured.with(own)),
            None => configured,
        };
        if !terms.is_empty() {
            // Up to MAX_TERMS regex scans of each text: blocking work, off the runtime.
            let spans = std::mem::take(&mut det.spans);
            det.spans = tokio::task::spawn_blocking(move || {
                texts
                    .iter()
                    .zip(spans)
                    .map(|(text, spans)| terms.apply(text, spans))
                    .collect()
            })
            .await
            .map_err(|_| EngineError::Backend)?;
        }
        Ok(det)
    }

    /// The entities of one document's free texts (a table's cells, a FHIR resource's
    /// strings) at `threshold` or above: one guarded call ([`Engine::detect_each`]), no
    /// call when every text is blank, then a value found in one text is swept across the
    /// others ([`crate::detect::sweep::across`]). The CLI and the server both read
    /// documents through here, so they find the same entities. `labels[i]` marks a text
    /// that is a concept's label of a few words (a FHIR `CodeableConcept.text`): the rules
    /// alone read it (see [`Engine::detect_each`]), and the sweep may still mark a name
    /// found elsewhere.
    ///
    /// # Errors
    /// See [`EngineError`].
    pub async fn detect_document(
        &self,
        id: &str,
        texts: Texts,
        labels: &[bool],
        opts: &CallOptions,
        threshold: f32,
    ) -> Result<Detections, EngineError> {
        if texts.iter().all(|t| t.trim().is_empty()) {
            return Ok(Detections {
                spans: vec![Vec::new(); texts.len()],
                degraded: false,
                model_id: id.to_string(),
            });
        }
        let mut det = self
            .detect_each(id, Arc::clone(&texts), labels, opts)
            .await?;
        let kept = std::mem::take(&mut det.spans)
            .into_iter()
            .map(|spans| spans.into_iter().filter(|s| s.passes(threshold)).collect())
            .collect();
        let plain: Vec<&str> = texts.iter().map(|t| &**t).collect();
        det.spans = crate::detect::sweep::across(&plain, kept);
        Ok(det)
    }

    /// Replaces the configured allow and deny lists (`deid.allow_terms`, `deid.deny_terms`).
    pub fn set_terms(&self, terms: crate::detect::Terms) {
        *self.terms.write() = Arc::new(terms);
    }

    /// The spans of the texts `labels` marks (a concept's label of a few words) replaced by
    /// the rule recognizers' alone: the model reads a word alone out of any context
    /// (`Hives` a country, `Widowed` a first name), and rules that build on its spans
    /// would keep what it found.
    async fn rules_for_labels(
        &self,
        texts: &Texts,
        labels: &[bool],
        spans: &mut [Vec<Span>],
    ) -> Result<(), EngineError> {
        let at: Vec<usize> = (0..texts.len())
            .filter(|&i| labels.get(i).copied().unwrap_or(false))
            .collect();
        let only: Texts = at.iter().map(|&i| Arc::clone(&texts[i])).collect();
        let found = self.rules(only).await?;
        for (i, f) in at.into_iter().zip(found) {
            if let Some(slot) = spans.get_mut(i) {
                *slot = f;
            }
        }
        Ok(())
    }

    /// Degraded mode: the rule recognizers alone, outside the backend boundary (they do not
    /// share the model's fault), marked degraded.
    async fn degraded(&self, texts: Texts) -> Result<Detections, EngineError> {
        Ok(Detections {
            spans: self.rules(texts).await?,
            degraded: true,
            model_id: RULES_ID.to_string(),
        })
    }

    /// The rule recognizers alone over `texts`, on the worker pool.
    async fn rules(&self, texts: Texts) -> Result<Vec<Vec<Span>>, EngineError> {
        self.pool
            .run_fallback(Arc::from(RULES_ID), self.registry.rules_backend(), texts)
            .await
            .map_err(|e| match e {
                PoolError::Full => EngineError::Busy {
                    retry_after: Duration::from_secs(1),
                },
                _ => EngineError::Backend,
            })
    }

    async fn attempt(
        &self,
        key: Arc<str>,
        texts: Texts,
        keep_alive: Option<Option<Duration>>,
    ) -> Result<Vec<Vec<Span>>, CallError> {
        let lease = self.lease(&key, keep_alive).await?;
        let backend = Arc::clone(&lease.backend) as Arc<dyn crate::detect::Recognizer>;
        let out = self.run_spread(key, backend, texts).await;
        drop(lease);
        out.map_err(|e| match e {
            PoolError::Full => CallError::Full,
            PoolError::Stopped | PoolError::Recognizer(RecognizerError::Backend(_)) => {
                CallError::Backend
            }
            PoolError::Recognizer(RecognizerError::Input(_)) => CallError::Unknown,
        })
    }

    /// Runs a document's texts as pool jobs of at most `max_batch` texts, at most one a
    /// worker at a time, so a table or a FHIR Bundle is spread over every core (and
    /// batched with other requests' notes) as a folder of notes is, without taking more
    /// than its share of the queue. The answers keep the texts' order; the first failure
    /// fails the call.
    async fn run_spread(
        &self,
        key: Arc<str>,
        backend: Arc<dyn crate::detect::Recognizer>,
        texts: Texts,
    ) -> Result<Vec<Vec<Span>>, PoolError> {
        use futures::StreamExt as _;
        let chunk = self.pool.batch().max_batch.max(1);
        if texts.len() <= chunk {
            return self.pool.run_each(key, backend, texts).await;
        }
        let parts: Vec<Texts> = texts.chunks(chunk).map(Texts::from).collect();
        let mut answers = futures::stream::iter(parts)
            .map(|part| {
                self.pool
                    .run_each(Arc::clone(&key), Arc::clone(&backend), part)
            })
            .buffered(self.pool.threads());
        let mut out = Vec::with_capacity(texts.len());
        while let Some(answer) = answers.next().await {
            out.extend(answer?);
        }
        Ok(out)
    }
}

/// Whether a guard outcome may be answered from the rules when the caller allows degraded
/// mode: the breaker refused the call, or the model failed after its retries (the guard has
/// already counted that failure for the breaker). Client errors, overload (a full queue or
/// bulkhead: the rules would queue on the same workers) and a passed deadline keep their
/// own answers.
fn falls_back(e: &GuardError<CallError>) -> bool {
    matches!(
        e,
        GuardError::BreakerOpen { .. }
            | GuardError::Failed(CallError::Backend)
            | GuardError::Failed(CallError::Load)
    )
}

fn map_guard_error(e: GuardError<CallError>) -> EngineError {
    match e {
        GuardError::Failed(CallError::Load) => EngineError::Load,
        GuardError::Failed(CallError::Backend) => EngineError::Backend,
        GuardError::Failed(CallError::Unknown) => EngineError::NotServed,
        GuardError::Failed(CallError::Full) => EngineError::Busy {
            retry_after: Duration::from_secs(1),
        },
        GuardError::Busy { retry_after } => EngineError::Busy { retry_after },
        GuardError::BreakerOpen {
            state,
            retry_after_seconds,
        } => EngineError::BreakerOpen {
            state: state.as_str(),
            retry_after_seconds,
        },
        GuardError::Timeout { timeout } => EngineError::Timeout { timeout },
        // Rate limits and admission are checked before the engine is called.
        _ => EngineError::Busy {
            retry_after: Duration::from_secs(1),
        },
    }
}
