//! DistilBERT for token classification: candle-transformers' encoder plus our head.
//!
//! Paper: Sanh et al., "DistilBERT, a distilled version of BERT"
//! (<https://arxiv.org/abs/1910.01108>); config mirrors transformers'
//! `configuration_distilbert.py`. The trap: candle's DistilBERT takes a mask that is
//! *true where attention is forbidden* (it fills those scores with -inf), the inverse
//! of the usual attention mask, so the 1/0 mask is inverted here.

use candle_core::{DType, Tensor};
use candle_nn::{linear, Linear, Module, VarBuilder};
use candle_transformers::models::distilbert::{Config as DistilConfig, DistilBertModel};

use super::{InferenceError, Result};

/// The runtime config: candle's, parsed from the raw `config.json`.
pub(crate) struct Config {
    inner: DistilConfig,
    num_labels: usize,
}

impl Config {
    /// # Errors
    /// [`InferenceError::Config`] when `config.json` lacks a DistilBERT field.
    pub(crate) fn from_raw(raw: &serde_json::Value, num_labels: usize) -> Result<Config> {
        let inner: DistilConfig = serde_json::from_value(raw.clone())
            .map_err(|e| InferenceError::Config(format!("distilbert: {e}")))?;
        Ok(Config { inner, num_labels })
    }
}

/// `DistilBertForTokenClassification`.
pub(crate) struct DistilBertForTokenClassification {
    model: DistilBertModel,
    classifier: Linear,
}

impl DistilBertForTokenClassification {
    /// # Errors
    /// [`InferenceError::Candle`] when a tensor is missing or misshapen.
    pub(crate) fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let model = DistilBertModel::load(vb.clone(), &cfg.inner)?;
        let classifier = linear(cfg.inner.dim, cfg.num_labels, vb.pp("classifier"))?;
        Ok(Self { model, classifier })
    }

    /// `ids`, `mask`: `[b, s]` u32 → logits `[b, s, labels]`.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (b, s) = mask.dims2()?;
        let forbidden = mask.eq(0u32)?.to_dtype(DType::U8)?.reshape((b, 1, 1, s))?;
        let hidden = self.model.forward(ids, &forbidden)?;
        Ok(self.classifier.forward(&hidden)?)
    }
}
