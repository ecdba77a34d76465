//! DistilBERT for token classification, run by our BERT forward.
//!
//! Paper: Sanh et al., "DistilBERT, a distilled version of BERT"
//! (<https://arxiv.org/abs/1910.01108>); config mirrors transformers'
//! `configuration_distilbert.py`.
//!
//! DistilBERT is BERT without token types and with other tensor names, so its weights
//! are renamed at load and run by [`super::bert`] (fused kernels included). Why not
//! candle-transformers' `DistilBertModel`: it computes `gelu` with the tanh
//! approximation where transformers uses erf (logits differ by ~1e-3 on the parity
//! fixture), and it takes an inverted attention mask (true = forbidden), an easy trap.

use std::collections::HashMap;

use candle_core::{DType, Tensor};
use candle_nn::VarBuilder;

use super::bert::{self, BertForTokenClassification};
use super::classifier::Precision;
use super::config::{Family, ModelConfig};
use super::{ConfigError, Result};

/// The runtime config: DistilBERT's fields as a BERT config.
pub(crate) struct Config {
    bert: bert::Config,
    dim: usize,
    layers: usize,
    hidden_dim: usize,
    vocab_size: usize,
    positions: usize,
    num_labels: usize,
}

impl Config {
    /// # Errors
    /// [`InferenceError::Config`](super::InferenceError::Config) when a DistilBERT size is missing
    /// or the activation is not `gelu`.
    pub(crate) fn from_model_config(c: &ModelConfig, num_labels: usize) -> Result<Config> {
        let need = |v: Option<usize>, f: &'static str| {
            v.ok_or(ConfigError::Missing {
                family: Family::DistilBert,
                field: f,
            })
        };
        let as_bert = ModelConfig {
            model_type: "bert".into(),
            hidden_size: need(c.dim, "dim")?,
            num_hidden_layers: need(c.n_layers, "n_layers")?,
            num_attention_heads: need(c.n_heads, "n_heads")?,
            intermediate_size: need(c.hidden_dim, "hidden_dim")?,
            hidden_act: c.activation.clone().unwrap_or_else(|| "gelu".into()),
            type_vocab_size: 1,
            layer_norm_eps: 1e-12,
            ..c.clone()
        };
        Ok(Config {
            bert: bert::Config::from_model_config(&as_bert, num_labels)?,
            dim: as_bert.hidden_size,
            layers: as_bert.num_hidden_layers,
            hidden_dim: as_bert.intermediate_size,
            vocab_size: c.vocab_size,
            positions: c.max_position_embeddings,
            num_labels,
        })
    }
}

/// `DistilBertForTokenClassification`.
pub(crate) struct DistilBertForTokenClassification {
    model: BertForTokenClassification,
}

impl DistilBertForTokenClassification {
    /// Renames the DistilBERT tensors to BERT's and loads them.
    ///
    /// # Errors
    /// [`InferenceError::Candle`](super::InferenceError::Candle) when a tensor is missing or
    /// misshapen.
    pub(crate) fn load(vb: VarBuilder, cfg: &Config, precision: Precision) -> Result<Self> {
        let body = if vb.contains_tensor("distilbert.embeddings.word_embeddings.weight") {
            vb.pp("distilbert")
        } else {
            vb.clone()
        };
        let (d, f) = (cfg.dim, cfg.hidden_dim);
        let mut map: HashMap<String, Tensor> = HashMap::new();
        let mut put = |to: String, t: Tensor| {
            map.insert(to, t);
        };
        let emb = body.pp("embeddings");
        put(
            "bert.embeddings.word_embeddings.weight".into(),
            emb.get((cfg.vocab_size, d), "word_embeddings.weight")?,
        );
        put(
            "bert.embeddings.position_embeddings.weight".into(),
            emb.get((cfg.positions, d), "position_embeddings.weight")?,
        );
        put(
            "bert.embeddings.token_type_embeddings.weight".into(),
            Tensor::zeros((1, d), DType::F32, vb.device())?,
        );
        put(
            "bert.embeddings.LayerNorm.weight".into(),
            emb.get(d, "LayerNorm.weight")?,
        );
        put(
            "bert.embeddings.LayerNorm.bias".into(),
            emb.get(d, "LayerNorm.bias")?,
        );
        for l in 0..cfg.layers {
            let src = body.pp(format!("transformer.layer.{l}"));
            let to = format!("bert.encoder.layer.{l}.");
            for (from, dst, out_dim, in_dim) in [
                ("attention.q_lin", "attention.self.query", d, d),
                ("attention.k_lin", "attention.self.key", d, d),
                ("attention.v_lin", "attention.self.value", d, d),
                ("attention.out_lin", "attention.output.dense", d, d),
                ("ffn.lin1", "intermediate.dense", f, d),
                ("ffn.lin2", "output.dense", d, f),
            ] {
                put(
                    format!("{to}{dst}.weight"),
                    src.pp(from).get((out_dim, in_dim), "weight")?,
                );
                put(
                    format!("{to}{dst}.bias"),
                    src.pp(from).get(out_dim, "bias")?,
                );
            }
            for (from, dst) in [
                ("sa_layer_norm", "attention.output.LayerNorm"),
                ("output_layer_norm", "output.LayerNorm"),
            ] {
                put(format!("{to}{dst}.weight"), src.pp(from).get(d, "weight")?);
                put(format!("{to}{dst}.bias"), src.pp(from).get(d, "bias")?);
            }
        }
        put(
            "classifier.weight".into(),
            vb.pp("classifier").get((cfg.num_labels, d), "weight")?,
        );
        put(
            "classifier.bias".into(),
            vb.pp("classifier").get(cfg.num_labels, "bias")?,
        );
        let renamed = VarBuilder::from_tensors(map, DType::F32, vb.device());
        Ok(Self {
            model: BertForTokenClassification::load(renamed, &cfg.bert, precision)?,
        })
    }

    /// `ids`, `mask`: `[b, s]` u32 → logits `[b, s, labels]`.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        self.model.forward(ids, mask)
    }
}
