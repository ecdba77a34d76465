//! Model backends keyed by id: which models exist, which are resident, loading on first use,
//! keep-alive, and least-recently-used unloading past the resident maximum (as OpenMed's warm
//! pool).
//!
//! Every served model is a [`Merged`] recognizer: an optional token classifier merged with
//! the rule recognizers (how, `detect::merged` says). The `rules` backend has no model and is
//! always resident.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};

use super::faults::Faults;
use crate::detect::merged::SharedThresholds;
use crate::detect::{LabelThresholds, Merged, Recognizer};

/// The id of the rules-only backend.
pub const RULES_ID: &str = "rules";

/// What is needed to load a model.
#[derive(Clone, Debug)]
pub struct ModelSpec {
    /// Installed model id.
    pub id: String,
    /// Folder with config.json, tokenizer.json and safetensors; `None` for rules only.
    pub dir: Option<PathBuf>,
    /// Estimated resident size.
    pub footprint_bytes: u64,
}

/// Why a [`Loader`] could not load a model. The registry logs it (`error = %e`) beside the
/// configured model id; no variant carries request data or a path.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Returned when the spec has no model folder to load.
    #[error("model has no folder")]
    NoFolder,
    /// Returned when the model's files fail their check against the recorded sha256 and
    /// size ([`crate::models::ModelError::Tampered`], `Unverified`) or its manifest cannot
    /// be read.
    #[error(transparent)]
    Files(#[from] crate::models::ModelError),
    /// Returned when the device cannot be opened or candle cannot build the model from its
    /// files (config, tokenizer, weights).
    #[error(transparent)]
    Inference(#[from] crate::inference::InferenceError),
}

/// Loads a model folder into a recognizer (candle in production; a fake in unit tests).
pub trait Loader: Send + Sync {
    /// Loads the model of `spec`.
    ///
    /// # Errors
    /// A [`LoadError`] (it carries no request data).
    fn load(&self, spec: &ModelSpec) -> Result<Arc<dyn Recognizer>, LoadError>;
}

struct Resident {
    backend: Arc<Merged>,
    last_used: Instant,
    active: Arc<AtomicUsize>,
    keep_alive: Option<Duration>,
    footprint_bytes: u64,
}

/// Why a backend is unavailable.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Returned when the id is not installed.
    #[error("model not installed")]
    Unknown,
    /// Returned when loading failed.
    #[error("model load failed")]
    Load,
}

/// A lease on a resident backend: counts as an active request until dropped.
pub struct Lease {
    /// The backend.
    pub backend: Arc<Merged>,
    active: Arc<AtomicUsize>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Snapshot of one model for `/models/loaded`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LoadedInfo {
    /// Active requests.
    pub active_requests: usize,
    /// Seconds until keep-alive unloads it, if it has a deadline.
    pub keep_alive_seconds_remaining: Option<f64>,
    /// Loaded now.
    pub resident: bool,
    /// Estimated bytes.
    pub footprint_bytes: u64,
    /// Seconds since a request last used it (or since it loaded).
    pub idle_seconds: f64,
}

/// The models this process knows and holds.
pub struct Registry {
    specs: RwLock<BTreeMap<String, ModelSpec>>,
    resident: Mutex<HashMap<String, Resident>>,
    /// One gate per model id, held while that model loads: requests that find it not yet
    /// resident wait for the one load instead of each loading a copy (a burst of first
    /// requests once held one transient copy per request: 380 MB peak for one model).
    loading: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Models whose last load failed (files damaged, device gone) and that have not loaded
    /// since, with the reason (file names and checks, never request content): readiness
    /// asks about the default model here, and the CLI says why it cannot start.
    failed: Mutex<HashMap<String, String>>,
    rules: Arc<dyn Recognizer>,
    loader: Arc<dyn Loader>,
    faults: Arc<Faults>,
    thresholds: SharedThresholds,
    max_resident: RwLock<Option<usize>>,
    default_keep_alive: RwLock<Option<Duration>>,
    /// Models loaded since start.
    pub loads: AtomicU64,
    /// Models unloaded by LRU or keep-alive since start.
    pub evictions: AtomicU64,
    /// Sum of load seconds (for the load-duration summary).
    pub load_seconds_micros: AtomicU64,
}

impl Registry {
    /// A registry with the rules backend and the given model specs.
    pub fn new(
        rules: Arc<dyn Recognizer>,
        loader: Arc<dyn Loader>,
        faults: Arc<Faults>,
        specs: Vec<ModelSpec>,
    ) -> Self {
        let mut map: BTreeMap<String, ModelSpec> =
            specs.into_iter().map(|s| (s.id.clone(), s)).collect();
        map.insert(
            RULES_ID.into(),
            ModelSpec {
                id: RULES_ID.into(),
                dir: None,
                footprint_bytes: 0,
            },
        );
        Registry {
            specs: RwLock::new(map),
            resident: Mutex::new(HashMap::new()),
            loading: Mutex::new(HashMap::new()),
            failed: Mutex::new(HashMap::new()),
            rules,
            loader,
            faults,
            thresholds: SharedThresholds::default(),
            max_resident: RwLock::new(None),
            default_keep_alive: RwLock::new(None),
            loads: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            load_seconds_micros: AtomicU64::new(0),
        }
    }

    /// Live settings: the resident maximum and the default keep-alive. A changed default
    /// applies at once to the models already resident too (a later request's own
    /// `keep_alive` sets its model's again), so that `models.keep_alive` changed through the
    /// admin API unloads an idle model as it says, not only models loaded after the change.
    pub fn configure(&self, max_resident: Option<usize>, keep_alive: Option<Duration>) {
        *self.max_resident.write() = max_resident;
        let changed = {
            let mut default = self.default_keep_alive.write();
            let changed = *default != keep_alive;
            *default = keep_alive;
            changed
        };
        if changed {
            for r in self.resident.lock().values_mut() {
                r.keep_alive = keep_alive;
            }
        }
    }

    /// Live setting `models.label_thresholds`: replaces the per-label minimum confidence of
    /// model spans for every backend, resident or not.
    pub fn set_label_thresholds(&self, thresholds: LabelThresholds) {
        *self.thresholds.write() = thresholds;
    }

    /// Adds or replaces a model spec (after an import or a download).
    pub fn add(&self, spec: ModelSpec) {
        self.specs.write().insert(spec.id.clone(), spec);
    }

    /// Forgets a model (after it was removed from the store).
    pub fn remove(&self, id: &str) {
        self.specs.write().remove(id);
        self.resident.lock().remove(id);
        self.failed.lock().remove(id);
    }

    /// True when the last attempt to load `id` failed and no load has succeeded since.
    pub fn load_failed(&self, id: &str) -> bool {
        self.failed.lock().contains_key(id)
    }

    /// Why the last attempt to load `id` failed, when it did and no load has succeeded since.
    pub fn load_failure(&self, id: &str) -> Option<String> {
        self.failed.lock().get(id).cloned()
    }

    /// Installed ids.
    pub fn ids(&self) -> Vec<String> {
        self.specs.read().keys().cloned().collect()
    }

    /// True when `id` is installed.
    pub fn contains(&self, id: &str) -> bool {
        self.specs.read().contains_key(id)
    }

    /// The rules-only backend (degraded mode).
    pub fn rules_backend(&self) -> Arc<Merged> {
        Arc::new(Merged::new(
            None,
            Arc::clone(&self.rules),
            Arc::clone(&self.thresholds),
        ))
    }

    /// The backend for `id`, loading it if needed (blocking: call off the async runtime).
    /// `keep_alive` overrides the default for this use.
    ///
    /// # Errors
    /// [`RegistryError::Unknown`] or [`RegistryError::Load`].
    pub fn lease(
        &self,
        id: &str,
        keep_alive: Option<Option<Duration>>,
    ) -> Result<Lease, RegistryError> {
        let now = Instant::now();
        if let Some(lease) = self.resident_lease(id, keep_alive, now) {
            return Ok(lease);
        }
        let spec = self
            .specs
            .read()
            .get(id)
            .cloned()
            .ok_or(RegistryError::Unknown)?;
        // Single flight: one load per model at a time; whoever waited here finds it resident.
        let gate = Arc::clone(self.loading.lock().entry(spec.id.clone()).or_default());
        let _loading = gate.lock();
        if let Some(lease) = self.resident_lease(id, keep_alive, now) {
            return Ok(lease);
        }
        let started = Instant::now();
        let model = match &spec.dir {
            None => None,
            Some(_) => {
                let loaded = match self.faults.before_load() {
                    Ok(()) => self.loader.load(&spec).map_err(|e| {
                        tracing::error!(model = %spec.id, error = %e, "model load failed");
                        e.to_string()
                    }),
                    Err(e) => Err(e.to_string()),
                };
                let loaded = match loaded {
                    Ok(loaded) => loaded,
                    Err(why) => {
                        self.failed.lock().insert(spec.id.clone(), why);
                        return Err(RegistryError::Load);
                    }
                };
                self.failed.lock().remove(&spec.id);
                Some(loaded)
            }
        };
        self.loads.fetch_add(1, Ordering::Relaxed);
        self.load_seconds_micros
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        let backend = Arc::new(Merged::new(
            model,
            Arc::clone(&self.rules),
            Arc::clone(&self.thresholds),
        ));
        let active = Arc::new(AtomicUsize::new(1));
        let mut res = self.resident.lock();
        // Under the load gate nobody else can have made it resident meanwhile.
        res.insert(
            id.to_string(),
            Resident {
                backend: Arc::clone(&backend),
                last_used: now,
                active: Arc::clone(&active),
                keep_alive: keep_alive.unwrap_or(*self.default_keep_alive.read()),
                footprint_bytes: spec.footprint_bytes,
            },
        );
        let lease = Lease { backend, active };
        self.evict_over_limit(&mut res, Some(id));
        Ok(lease)
    }

    /// A lease on `id` when it is resident (marking it used now).
    fn resident_lease(
        &self,
        id: &str,
        keep_alive: Option<Option<Duration>>,
        now: Instant,
    ) -> Option<Lease> {
        let mut res = self.resident.lock();
        let r = res.get_mut(id)?;
        r.last_used = now;
        if let Some(k) = keep_alive {
            r.keep_alive = k;
        }
        r.active.fetch_add(1, Ordering::SeqCst);
        Some(Lease {
            backend: Arc::clone(&r.backend),
            active: Arc::clone(&r.active),
        })
    }

    fn evict_over_limit(&self, res: &mut HashMap<String, Resident>, keep: Option<&str>) {
        let Some(max) = *self.max_resident.read() else {
            return;
        };
        while res.len() > max {
            let victim = res
                .iter()
                .filter(|(k, r)| Some(k.as_str()) != keep && r.active.load(Ordering::SeqCst) == 0)
                .min_by_key(|(_, r)| r.last_used)
                .map(|(k, _)| k.clone());
            match victim {
                Some(k) => {
                    res.remove(&k);
                    self.evictions.fetch_add(1, Ordering::Relaxed);
                }
                None => break,
            }
        }
    }

    /// Unloads idle models whose keep-alive has expired (called periodically).
    pub fn expire_idle(&self) {
        let now = Instant::now();
        let mut res = self.resident.lock();
        let before = res.len();
        res.retain(|_, r| {
            let idle = r.active.load(Ordering::SeqCst) == 0;
            let expired = r
                .keep_alive
                .is_some_and(|k| now.duration_since(r.last_used) >= k);
            !(idle && expired)
        });
        self.evictions
            .fetch_add((before - res.len()) as u64, Ordering::Relaxed);
    }

    /// Unloads `id` unless it is busy; returns `(unloaded, active_requests)`.
    pub fn unload(&self, id: &str) -> (bool, usize) {
        let mut res = self.resident.lock();
        match res.get(id) {
            Some(r) => {
                let active = r.active.load(Ordering::SeqCst);
                if active == 0 {
                    res.remove(id);
                    (true, 0)
                } else {
                    (false, active)
                }
            }
            None => (false, 0),
        }
    }

    /// Unloads every idle model; returns `(count unloaded, busy id → active count)`.
    pub fn unload_all(&self) -> (usize, BTreeMap<String, usize>) {
        let mut res = self.resident.lock();
        let mut busy = BTreeMap::new();
        let before = res.len();
        res.retain(|k, r| {
            let active = r.active.load(Ordering::SeqCst);
            if active > 0 {
                busy.insert(k.clone(), active);
            }
            active > 0
        });
        (before - res.len(), busy)
    }

    /// Resident models with their state.
    pub fn loaded(&self) -> BTreeMap<String, LoadedInfo> {
        let now = Instant::now();
        self.resident
            .lock()
            .iter()
            .map(|(k, r)| {
                let remaining = r.keep_alive.map(|k| {
                    k.saturating_sub(now.duration_since(r.last_used))
                        .as_secs_f64()
                });
                (
                    k.clone(),
                    LoadedInfo {
                        active_requests: r.active.load(Ordering::SeqCst),
                        keep_alive_seconds_remaining: remaining,
                        resident: true,
                        footprint_bytes: r.footprint_bytes,
                        idle_seconds: now.duration_since(r.last_used).as_secs_f64(),
                    },
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::{RecognizerError, Span};
    use std::sync::Barrier;

    struct Nothing;
    impl Recognizer for Nothing {
        fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
            Ok(vec![Vec::new(); texts.len()])
        }
    }

    /// Counts loads and takes a while, so that concurrent first uses overlap.
    struct SlowLoader(AtomicUsize);
    impl Loader for SlowLoader {
        fn load(&self, _: &ModelSpec) -> Result<Arc<dyn Recognizer>, LoadError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(50));
            Ok(Arc::new(Nothing))
        }
    }

    #[test]
    fn concurrent_first_uses_load_the_model_once() {
        let loader = Arc::new(SlowLoader(AtomicUsize::new(0)));
        let reg = Arc::new(Registry::new(
            Arc::new(Nothing),
            Arc::clone(&loader) as Arc<dyn Loader>,
            Arc::new(Faults::default()),
            vec![ModelSpec {
                id: "m".into(),
                dir: Some(PathBuf::from("m")),
                footprint_bytes: 1,
            }],
        ));
        let start = Arc::new(Barrier::new(8));
        let leases: Vec<_> = (0..8)
            .map(|_| {
                let (reg, start) = (Arc::clone(&reg), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    reg.lease("m", None).ok()
                })
            })
            .collect();
        let leases: Vec<Option<Lease>> = leases
            .into_iter()
            .map(|t| t.join().ok().flatten())
            .collect();
        assert!(leases.iter().all(Option::is_some));
        assert_eq!(loader.0.load(Ordering::SeqCst), 1);
        assert_eq!(reg.loads.load(Ordering::Relaxed), 1);
        assert_eq!(reg.loaded()["m"].active_requests, 8);
    }
}
