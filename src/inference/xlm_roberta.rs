//! XLM-RoBERTa and RoBERTa for token classification: candle-transformers' XLM-RoBERTa
//! encoder plus our head.
//!
//! Papers: Conneau et al., "Unsupervised Cross-lingual Representation Learning at
//! Scale" (<https://arxiv.org/abs/1911.02116>) and Liu et al., "RoBERTa"
//! (<https://arxiv.org/abs/1907.11692>); config mirrors transformers'
//! `configuration_xlm_roberta.py`. The trap: RoBERTa numbers positions from
//! `padding_idx + 1` and gives padding the position `padding_idx`; candle's BERT
//! embeddings would use `0..s`. Both model types therefore go through the XLM-RoBERTa
//! embeddings, which derive positions from the input ids.

use candle_core::Tensor;
use candle_nn::{linear, Linear, Module, VarBuilder};
use candle_transformers::models::xlm_roberta::{Config as XlmConfig, XLMRobertaModel};

use super::{ConfigError, Family, Result};

/// The runtime config: candle's, parsed from the raw `config.json`.
pub(crate) struct Config {
    inner: XlmConfig,
    num_labels: usize,
}

impl Config {
    /// # Errors
    /// [`InferenceError::Config`](super::InferenceError::Config) when `config.json` lacks an
    /// XLM-RoBERTa field.
    pub(crate) fn from_raw(raw: &serde_json::Value, num_labels: usize) -> Result<Config> {
        let mut raw = raw.clone();
        if let Some(obj) = raw.as_object_mut() {
            obj.entry("position_embedding_type")
                .or_insert_with(|| serde_json::Value::from("absolute"));
            obj.entry("pad_token_id")
                .or_insert_with(|| serde_json::Value::from(1));
        }
        let inner: XlmConfig =
            serde_json::from_value(raw).map_err(|source| ConfigError::Fields {
                family: Family::XlmRoberta,
                source,
            })?;
        Ok(Config { inner, num_labels })
    }
}

/// `XLMRobertaForTokenClassification` / `RobertaForTokenClassification`.
pub(crate) struct XlmRobertaForTokenClassification {
    model: XLMRobertaModel,
    classifier: Linear,
}

impl XlmRobertaForTokenClassification {
    /// # Errors
    /// [`InferenceError::Candle`](super::InferenceError::Candle) when a tensor is missing or
    /// misshapen.
    pub(crate) fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let model = XLMRobertaModel::new(&cfg.inner, vb.pp("roberta"))?;
        let classifier = linear(cfg.inner.hidden_size, cfg.num_labels, vb.pp("classifier"))?;
        Ok(Self { model, classifier })
    }

    /// `ids`, `mask`: `[b, s]` u32 → logits `[b, s, labels]`.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(ids, mask, &types, None, None, None)?;
        Ok(self.classifier.forward(&hidden)?)
    }
}
