//! A mirror of Hugging Face's `config.json` for token-classification checkpoints.
//!
//! Fields are `#[serde(default)]` so that a config written by any `transformers`
//! version loads; each family then turns this mirror (and, where candle-transformers
//! has its own config type, the raw JSON) into its runtime config and checks the fields
//! it really needs. `model_type` chooses the [`Family`]; `id2label` names the classes.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{ConfigError, InferenceError, Result};

/// The model families this module can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// BERT (`model_type: bert`), our own fast forward.
    Bert,
    /// DistilBERT (`distilbert`).
    DistilBert,
    /// DeBERTa-v2 and v3 (`deberta-v2`).
    DebertaV2,
    /// ModernBERT (`modernbert`).
    ModernBert,
    /// XLM-RoBERTa and RoBERTa (`xlm-roberta`, `roberta`, `camembert`).
    XlmRoberta,
}

impl Family {
    /// Maps a `model_type` to its family.
    ///
    /// # Errors
    /// [`InferenceError::UnsupportedFamily`] for any other `model_type`.
    pub fn from_model_type(model_type: &str) -> Result<Family> {
        match model_type.to_ascii_lowercase().replace('_', "-").as_str() {
            "bert" => Ok(Family::Bert),
            "distilbert" => Ok(Family::DistilBert),
            "deberta-v2" => Ok(Family::DebertaV2),
            "modernbert" => Ok(Family::ModernBert),
            "xlm-roberta" | "roberta" | "camembert" => Ok(Family::XlmRoberta),
            other => Err(InferenceError::UnsupportedFamily(shown_model_type(other))),
        }
    }

    /// A stable lowercase name (for logs and metrics: a closed set).
    pub fn name(self) -> &'static str {
        match self {
            Family::Bert => "bert",
            Family::DistilBert => "distilbert",
            Family::DebertaV2 => "deberta-v2",
            Family::ModernBert => "modernbert",
            Family::XlmRoberta => "xlm-roberta",
        }
    }
}

/// A `model_type` as errors show it: the text itself when it is a name (at most 32 ASCII
/// letters, digits, `-` and `_`), else `(unprintable)`, so that an error never carries more
/// of a model file than a family name.
pub fn shown_model_type(model_type: &str) -> String {
    let is_name = !model_type.is_empty()
        && model_type.len() <= 32
        && model_type
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if is_name {
        model_type.to_owned()
    } else {
        "(unprintable)".to_owned()
    }
}

/// The fields of `config.json` that the families read.
#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
pub struct ModelConfig {
    /// `bert`, `distilbert`, `deberta-v2`, `modernbert`, `xlm-roberta`, `roberta`.
    pub model_type: String,
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Hidden size (DistilBERT calls it `dim`).
    pub hidden_size: usize,
    /// Number of layers (DistilBERT: `n_layers`).
    pub num_hidden_layers: usize,
    /// Number of attention heads (DistilBERT: `n_heads`).
    pub num_attention_heads: usize,
    /// Width of the feed-forward block (DistilBERT: `hidden_dim`).
    pub intermediate_size: usize,
    /// Activation of the feed-forward block (`gelu`, `gelu_new`, `relu`).
    pub hidden_act: String,
    /// Number of learned positions.
    pub max_position_embeddings: usize,
    /// Number of token types.
    pub type_vocab_size: usize,
    /// LayerNorm epsilon.
    pub layer_norm_eps: f64,
    /// ModernBERT's LayerNorm epsilon.
    pub norm_eps: Option<f64>,
    /// Padding token id (RoBERTa offsets positions by it).
    pub pad_token_id: Option<u32>,
    /// Only `absolute` is supported for BERT.
    pub position_embedding_type: String,
    /// DistilBERT's hidden size.
    pub dim: Option<usize>,
    /// DistilBERT's layer count.
    pub n_layers: Option<usize>,
    /// DistilBERT's head count.
    pub n_heads: Option<usize>,
    /// DistilBERT's feed-forward width.
    pub hidden_dim: Option<usize>,
    /// DistilBERT's activation.
    pub activation: Option<String>,
    /// ModernBERT: every n-th layer attends globally.
    pub global_attn_every_n_layers: Option<usize>,
    /// ModernBERT: RoPE theta of global layers.
    pub global_rope_theta: Option<f64>,
    /// ModernBERT: local attention window.
    pub local_attention: Option<usize>,
    /// ModernBERT: RoPE theta of local layers.
    pub local_rope_theta: Option<f64>,
    /// ModernBERT: activation of the classification head.
    pub classifier_activation: Option<String>,
    /// ModernBERT: whether the head's dense layer has a bias.
    pub classifier_bias: Option<bool>,
    /// ModernBERT: whether LayerNorms have a bias.
    pub norm_bias: Option<bool>,
    /// Class index (as a string key) to raw label (`B-GIVEN_NAME`).
    pub id2label: BTreeMap<String, String>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            model_type: String::new(),
            vocab_size: 0,
            hidden_size: 0,
            num_hidden_layers: 0,
            num_attention_heads: 0,
            intermediate_size: 0,
            hidden_act: "gelu".into(),
            max_position_embeddings: 512,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            norm_eps: None,
            pad_token_id: None,
            position_embedding_type: "absolute".into(),
            dim: None,
            n_layers: None,
            n_heads: None,
            hidden_dim: None,
            activation: None,
            global_attn_every_n_layers: None,
            global_rope_theta: None,
            local_attention: None,
            local_rope_theta: None,
            classifier_activation: None,
            classifier_bias: None,
            norm_bias: None,
            id2label: BTreeMap::new(),
        }
    }
}

/// A parsed config: the mirror, the family, the labels in class order and the raw JSON
/// (for families whose candle-transformers config reads more fields).
#[derive(Clone, Debug)]
pub struct LoadedConfig {
    /// The mirror.
    pub config: ModelConfig,
    /// The family named by `model_type`.
    pub family: Family,
    /// `labels[i]` is the raw label of class `i`.
    pub labels: Vec<String>,
    /// The whole `config.json`.
    pub raw: serde_json::Value,
}

impl LoadedConfig {
    /// Parses the text of a `config.json`.
    ///
    /// # Errors
    /// [`InferenceError::Config`] when the JSON is malformed or `id2label` is missing,
    /// empty or not a dense `0..n` map; [`InferenceError::UnsupportedFamily`] for an
    /// unknown `model_type`.
    pub fn parse(json: &str) -> Result<LoadedConfig> {
        let raw: serde_json::Value = serde_json::from_str(json).map_err(ConfigError::NotJson)?;
        let config: ModelConfig =
            serde_json::from_value(raw.clone()).map_err(ConfigError::FieldType)?;
        let family = Family::from_model_type(&config.model_type)?;
        let mut indexed = Vec::with_capacity(config.id2label.len());
        for (k, v) in &config.id2label {
            let i: usize = k.parse().map_err(ConfigError::Id2LabelKey)?;
            indexed.push((i, v.clone()));
        }
        indexed.sort();
        if indexed.is_empty() || indexed.iter().enumerate().any(|(pos, (i, _))| pos != *i) {
            return Err(ConfigError::Id2LabelGaps.into());
        }
        let labels = indexed.into_iter().map(|(_, v)| v).collect();
        Ok(LoadedConfig {
            config,
            family,
            labels,
            raw,
        })
    }

    /// The number of tokens (specials included) one forward pass may take.
    pub fn max_positions(&self) -> usize {
        let c = &self.config;
        match self.family {
            // RoBERTa positions start after the padding index.
            Family::XlmRoberta => c
                .max_position_embeddings
                .saturating_sub(c.pad_token_id.unwrap_or(1) as usize + 1),
            _ => c.max_position_embeddings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_labels_in_class_order_and_family() -> Result<()> {
        let json = r#"{"model_type":"bert","hidden_size":8,
            "id2label":{"0":"O","2":"I-X","1":"B-X","10":"B-Y","3":"I-Y","4":"a","5":"b","6":"c","7":"d","8":"e","9":"f"}}"#;
        let c = LoadedConfig::parse(json)?;
        assert_eq!(c.family, Family::Bert);
        assert_eq!(c.labels[0], "O");
        assert_eq!(c.labels[1], "B-X");
        assert_eq!(c.labels[10], "B-Y");
        assert_eq!(c.config.layer_norm_eps, 1e-12);
        Ok(())
    }

    #[test]
    fn rejects_gaps_unknown_families_and_bad_json() {
        assert!(
            LoadedConfig::parse(r#"{"model_type":"bert","id2label":{"0":"O","2":"B-X"}}"#).is_err()
        );
        assert!(LoadedConfig::parse(r#"{"model_type":"gpt2","id2label":{"0":"O"}}"#).is_err());
        assert!(LoadedConfig::parse("{").is_err());
        assert!(LoadedConfig::parse(r#"{"model_type":"bert"}"#).is_err());
    }

    #[test]
    fn config_errors_say_what_failed_and_keep_their_source() {
        let e = LoadedConfig::parse("{\n  \"model_type\": ").err();
        assert!(
            matches!(&e, Some(InferenceError::Config(ConfigError::NotJson(_)))),
            "{e:?}"
        );
        let shown = e.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(
            shown.starts_with("invalid config.json: not valid JSON (line 2"),
            "{shown}"
        );
        let source = e.as_ref().and_then(std::error::Error::source);
        assert!(source.and_then(std::error::Error::source).is_some());

        let e = LoadedConfig::parse(
            r#"{"model_type":"bert","hidden_size":"secret-value","id2label":{"0":"O"}}"#,
        )
        .err();
        assert!(
            matches!(&e, Some(InferenceError::Config(ConfigError::FieldType(_)))),
            "{e:?}"
        );
        let shown = e.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(!shown.contains("secret-value"), "{shown}");

        let e = LoadedConfig::parse(r#"{"model_type":"bert","id2label":{"x":"O"}}"#).err();
        assert!(matches!(
            e,
            Some(InferenceError::Config(ConfigError::Id2LabelKey(_)))
        ));
    }

    #[test]
    fn an_unsupported_model_type_is_shown_only_when_it_is_a_name() {
        let family = |t: &str| match Family::from_model_type(t) {
            Err(InferenceError::UnsupportedFamily(f)) => f,
            other => format!("{other:?}"),
        };
        assert_eq!(family("gpt2"), "gpt2");
        assert_eq!(family("Llama_Next"), "llama-next");
        assert_eq!(family("a b"), "(unprintable)");
        assert_eq!(family(&"x".repeat(33)), "(unprintable)");
        assert_eq!(family(""), "(unprintable)");
    }

    #[test]
    fn roberta_positions_skip_the_padding_offset() -> Result<()> {
        let c = LoadedConfig::parse(
            r#"{"model_type":"roberta","max_position_embeddings":514,"pad_token_id":1,"id2label":{"0":"O"}}"#,
        )?;
        assert_eq!(c.family, Family::XlmRoberta);
        assert_eq!(c.max_positions(), 512);
        Ok(())
    }
}
