//! ModernBERT for token classification: candle-transformers' encoder plus our head.
//!
//! Paper: Warner et al., "Smarter, Better, Faster, Longer: A Modern Bidirectional
//! Encoder" (<https://arxiv.org/abs/2412.13663>); config mirrors transformers'
//! `configuration_modernbert.py`. The trap: candle-transformers keeps ModernBERT's
//! prediction head loader private (and its config reads `layer_norm_eps`, which
//! ModernBERT calls `norm_eps`), so the runtime config is built from our mirror and the
//! head (`head.dense` → activation → `head.norm` → `classifier`) is built here.

use candle_core::Tensor;
use candle_nn::{
    layer_norm, linear, linear_no_bias, Activation, LayerNorm, LayerNormConfig, Linear, Module,
    VarBuilder,
};
use candle_transformers::models::modernbert::{Config as MbConfig, ModernBert};

use super::config::{Family, ModelConfig};
use super::{ConfigError, Result};

/// The runtime config.
pub(crate) struct Config {
    inner: MbConfig,
    classifier_activation: Activation,
    classifier_bias: bool,
    norm_bias: bool,
    num_labels: usize,
}

fn need<T: Copy>(v: Option<T>, field: &'static str) -> Result<T> {
    Ok(v.ok_or(ConfigError::Missing {
        family: Family::ModernBert,
        field,
    })?)
}

impl Config {
    /// # Errors
    /// [`InferenceError::Config`](super::InferenceError::Config) when a ModernBERT field is missing
    /// or the head's activation is unknown.
    pub(crate) fn from_model_config(c: &ModelConfig, num_labels: usize) -> Result<Config> {
        let act = c
            .classifier_activation
            .clone()
            .unwrap_or_else(|| "gelu".into());
        let classifier_activation: Activation =
            serde_json::from_value(serde_json::Value::from(act))
                .map_err(ConfigError::ClassifierActivation)?;
        Ok(Config {
            inner: MbConfig {
                vocab_size: c.vocab_size,
                hidden_size: c.hidden_size,
                num_hidden_layers: c.num_hidden_layers,
                num_attention_heads: c.num_attention_heads,
                intermediate_size: c.intermediate_size,
                max_position_embeddings: c.max_position_embeddings,
                layer_norm_eps: c.norm_eps.unwrap_or(1e-5),
                pad_token_id: c.pad_token_id.unwrap_or(0),
                global_attn_every_n_layers: need(
                    c.global_attn_every_n_layers,
                    "global_attn_every_n_layers",
                )?,
                global_rope_theta: need(c.global_rope_theta, "global_rope_theta")?,
                local_attention: need(c.local_attention, "local_attention")?,
                local_rope_theta: need(c.local_rope_theta, "local_rope_theta")?,
                classifier_config: None,
            },
            classifier_activation,
            classifier_bias: c.classifier_bias.unwrap_or(false),
            norm_bias: c.norm_bias.unwrap_or(false),
            num_labels,
        })
    }
}

/// `ModernBertForTokenClassification`.
pub(crate) struct ModernBertForTokenClassification {
    model: ModernBert,
    dense: Linear,
    activation: Activation,
    norm: LayerNorm,
    classifier: Linear,
}

impl ModernBertForTokenClassification {
    /// # Errors
    /// [`InferenceError::Candle`](super::InferenceError::Candle) when a tensor is missing or
    /// misshapen.
    pub(crate) fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let h = cfg.inner.hidden_size;
        let model = ModernBert::load(vb.clone(), &cfg.inner)?;
        let head = vb.pp("head");
        let dense = if cfg.classifier_bias {
            linear(h, h, head.pp("dense"))?
        } else {
            linear_no_bias(h, h, head.pp("dense"))?
        };
        let norm_cfg = LayerNormConfig {
            eps: cfg.inner.layer_norm_eps,
            affine: true,
            remove_mean: true,
        };
        let norm = if cfg.norm_bias {
            layer_norm(h, norm_cfg, head.pp("norm"))?
        } else {
            LayerNorm::new_no_bias(head.pp("norm").get(h, "weight")?, cfg.inner.layer_norm_eps)
        };
        let classifier = linear(h, cfg.num_labels, vb.pp("classifier"))?;
        Ok(Self {
            model,
            dense,
            activation: cfg.classifier_activation,
            norm,
            classifier,
        })
    }

    /// `ids`, `mask`: `[b, s]` u32 → logits `[b, s, labels]`.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let hidden = self.model.forward(ids, mask)?;
        let x = self.activation.forward(&self.dense.forward(&hidden)?)?;
        Ok(self.classifier.forward(&self.norm.forward(&x)?)?)
    }
}
