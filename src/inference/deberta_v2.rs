//! DeBERTa-v2 / v3 for token classification: candle-transformers' encoder plus our head.
//!
//! Paper: He et al., "DeBERTaV3: Improving DeBERTa using ELECTRA-Style Pre-Training with
//! Gradient-Disentangled Embedding Sharing" (<https://arxiv.org/abs/2111.09543>); config
//! mirrors transformers' `configuration_deberta_v2.py`. The trap: candle's
//! `DebertaV2NERModel` builds its classifier without `classifier.bias`, so its logits
//! are off by the bias; the head is built here as a full linear layer.

use candle_core::Tensor;
use candle_nn::{linear, Linear, Module, VarBuilder};
use candle_transformers::models::debertav2::{Config as DebertaConfig, DebertaV2Model};

use super::{ConfigError, Family, Result};

/// The runtime config: candle's, parsed from the raw `config.json`.
pub(crate) struct Config {
    inner: DebertaConfig,
    num_labels: usize,
}

impl Config {
    /// # Errors
    /// [`InferenceError::Config`](super::InferenceError::Config) when `config.json` lacks a
    /// DeBERTa-v2 field.
    pub(crate) fn from_raw(raw: &serde_json::Value, num_labels: usize) -> Result<Config> {
        let inner: DebertaConfig =
            serde_json::from_value(raw.clone()).map_err(|source| ConfigError::Fields {
                family: Family::DebertaV2,
                source,
            })?;
        Ok(Config { inner, num_labels })
    }
}

/// `DebertaV2ForTokenClassification`.
pub(crate) struct DebertaV2ForTokenClassification {
    model: DebertaV2Model,
    classifier: Linear,
}

impl DebertaV2ForTokenClassification {
    /// # Errors
    /// [`InferenceError::Candle`](super::InferenceError::Candle) when a tensor is missing or
    /// misshapen.
    pub(crate) fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let model = DebertaV2Model::load(vb.pp("deberta"), &cfg.inner)?;
        let classifier = linear(cfg.inner.hidden_size, cfg.num_labels, vb.pp("classifier"))?;
        Ok(Self { model, classifier })
    }

    /// `ids`, `mask`: `[b, s]` u32 → logits `[b, s, labels]`.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let hidden = self.model.forward(ids, None, Some(mask.clone()))?;
        Ok(self.classifier.forward(&hidden)?)
    }
}
