//! How installed models become recognizers: the candle loader, the list of installed model
//! specs (the bundled model and the model store), and a test hook that registers scripted
//! recognizers under model ids.
//!
//! The loader checks a model's files against their recorded sha256 before candle reads them
//! ([`crate::models::verify_before_load`]) and builds the model from the very weight bytes
//! that were hashed: a changed weights file is a load failure, which the registry reports
//! and the guard counts like any other, never a model that quietly answers differently.
//!
//! The device is opened once, when the loader is made (at start-up): an explicit `metal` or
//! `cuda` that this build or this machine cannot open stops start-up with that reason,
//! instead of every model load failing later behind a `ready` service.

use std::collections::HashMap;
use std::sync::Arc;

use super::registry::{LoadError, Loader, ModelSpec};
use crate::detect::Recognizer;
use crate::inference::{ClassifierOptions, Precision};
use crate::settings::keys;
use crate::settings::{Home, Settings};

/// Loads model folders with candle on the configured device and precision.
struct CandleLoader {
    device: candle_core::Device,
    precision: Precision,
}

impl Loader for CandleLoader {
    fn load(&self, spec: &ModelSpec) -> Result<Arc<dyn Recognizer>, LoadError> {
        let dir = spec.dir.as_ref().ok_or(LoadError::NoFolder)?;
        let weights = crate::models::verify_before_load(&spec.id, dir)?;
        let options = ClassifierOptions {
            precision: self.precision,
            ..ClassifierOptions::default()
        };
        let model =
            crate::inference::TokenClassifier::load_verified(dir, &self.device, options, weights)?;
        crate::memory::release_freed_heap();
        Ok(Arc::new(model))
    }
}

/// The production loader, for `models.device` and `models.precision`, on the device it
/// opens now.
///
/// # Errors
/// [`crate::inference::InferenceError::Device`] when `models.device` names a device this
/// build lacks or that does not open (`auto` falls back to the CPU instead).
pub fn default_loader(
    settings: &Settings,
) -> Result<Arc<dyn Loader>, crate::inference::InferenceError> {
    let device = crate::inference::parse_device(settings.get(keys::MODELS_DEVICE))?.open()?;
    Ok(Arc::new(CandleLoader {
        device,
        precision: match settings.get(keys::MODELS_PRECISION) {
            "int8" => Precision::Int8,
            _ => Precision::F32,
        },
    }))
}

/// Installed models: the bundled one and everything in the store.
pub fn installed_specs(home: &Home) -> Vec<ModelSpec> {
    let mut specs = Vec::new();
    match crate::models::Store::open(home.models_dir()).and_then(|s| s.installed()) {
        Ok(list) => {
            for m in list {
                specs.push(ModelSpec {
                    id: m.id,
                    dir: Some(m.dir),
                    footprint_bytes: m.size_bytes,
                });
            }
        }
        Err(e) => tracing::warn!(error = %e, "model store unreadable; serving the rules only"),
    }
    specs
}

/// Serves scripted recognizers for their ids and defers the rest (tests inject faults the
/// real model cannot produce this way).
pub struct WithScripted {
    /// The real loader.
    pub inner: Arc<dyn Loader>,
    /// Id → recognizer.
    pub scripted: HashMap<String, Arc<dyn Recognizer>>,
}

impl Loader for WithScripted {
    fn load(&self, spec: &ModelSpec) -> Result<Arc<dyn Recognizer>, LoadError> {
        match self.scripted.get(&spec.id) {
            Some(r) => Ok(Arc::clone(r)),
            None => self.inner.load(spec),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loader() -> CandleLoader {
        CandleLoader {
            device: candle_core::Device::Cpu,
            precision: Precision::F32,
        }
    }

    fn spec(dir: Option<std::path::PathBuf>) -> ModelSpec {
        ModelSpec {
            id: "acme/tiny".into(),
            dir,
            footprint_bytes: 0,
        }
    }

    #[test]
    fn a_spec_without_a_folder_is_refused() {
        assert!(matches!(
            loader().load(&spec(None)),
            Err(LoadError::NoFolder)
        ));
    }

    #[test]
    fn a_folder_without_a_manifest_fails_verification_before_candle_reads_it() -> std::io::Result<()>
    {
        let dir = tempfile::tempdir()?;
        let err = loader().load(&spec(Some(dir.path().to_path_buf())));
        assert!(matches!(err, Err(LoadError::Files(_))), "{:?}", err.err());
        Ok(())
    }
}
