//! On-device token classification with candle: the model families, device choice,
//! tokenization with code-point offsets, windowing of long texts and the aggregation of
//! token predictions into PHI spans.
//!
//! # Why our own BERT forward
//! BERT is the family of the bundled default (phiguard-deid, fine-tuned from Rampart) and the family most requests hit, so [`bert`]
//! is written for the CPU this service usually runs on: one fused QKV matmul with the
//! 1/√d scale folded into the query rows at load, an additive padding mask, and fused
//! element-wise kernels ([`phiguard_kernels`]: bias+GELU, bias+residual+LayerNorm, mask+softmax) that
//! replace five to seven passes over memory each. With [`Precision::Int8`] (the service's
//! default `models.precision`) the encoder's dense layers and attention's two products run
//! as int8 on CPUs with AVX-512 VNNI or AVX2 (there with 7-bit weights, K and V)
//! ([`phiguard_kernels::int8`]; the model alone and whole
//! `phiguard deid` beside onnxruntime in `docs/bench-peers.md`). The other families reuse candle-transformers' encoders with our
//! own classification heads.
//!
//! # Why parallelism across batches and not inside ops
//! Measured on two cores: candle's intra-op threading gives about 1.25×, two OS threads
//! that each run whole batches with single-threaded ops give 1.95×. [`TokenClassifier`]
//! is `Send + Sync` and one loaded model serves every worker thread; call
//! [`init_cpu_threads`] once at start-up, before any thread is spawned, so that candle's
//! matmuls stay on the calling thread. gemm's AVX-512 micro-kernels are enabled through
//! a direct `gemm` dependency with the `x86-v4` feature (root `Cargo.toml`).
//!
//! # Why windows are stitched at the token level
//! A text longer than the model's positions is cut into overlapping windows; every token
//! takes its prediction from the one window in which it sits furthest from an edge, and
//! aggregation runs once over the stitched sequence. An entity on a seam is therefore
//! decoded once, whole, and never duplicated.

pub mod aggregate;
mod bert;
mod classifier;
pub mod config;
mod deberta_v2;
pub mod device;
mod distilbert;
pub mod labels;
mod modernbert;
pub mod tokenize;
mod weights;
pub mod window;
mod xlm_roberta;

pub use aggregate::Strategy;
pub use classifier::{ClassifierOptions, Precision, TokenClassifier, TokenLogits};
pub use config::Family;
pub use device::{device_from_env, init_cpu_threads, parse_device, DeviceChoice};

/// Why loading or running a model failed. Messages name files by their role
/// (`config.json`), never by path, and never contain request text.
#[derive(Debug, thiserror::Error)]
pub enum InferenceError {
    /// Returned when a call stopped between passes because every caller of it had gone
    /// (a deadline, a disconnect: [`crate::detect::cancel`]); nobody reads the answer.
    #[error("cancelled: no caller waits for this call")]
    Cancelled,
    /// Returned when a model file cannot be read.
    #[error("cannot read {file}: {source}")]
    Io {
        /// The file's role in the model directory (`config.json`, `tokenizer.json`).
        file: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Returned when `config.json` is malformed or lacks a field the family needs.
    #[error("invalid config.json: {0}")]
    Config(#[from] ConfigError),
    /// Returned when `config.json` names a `model_type` no family here implements.
    ///
    /// The `model_type` stays text: it is an open set read from the model's own
    /// `config.json` (never from a request, never patient data), and the operator needs the
    /// name to know which family is missing. It is only ever a name:
    /// [`config::shown_model_type`] replaces anything longer than 32 characters, or with
    /// characters other than ASCII letters, digits, `-` and `_`, by `(unprintable)`.
    #[error("unsupported model_type {0:?}")]
    UnsupportedFamily(String),
    /// Returned when `tokenizer.json` cannot be loaded or a text cannot be tokenized.
    #[error("tokenizer failed: {0}")]
    Tokenizer(#[source] TokenizerError),
    /// Returned when the model directory has no `*.safetensors` file.
    #[error("no .safetensors weights in the model directory")]
    NoWeights,
    /// Returned when `PHIGUARD_DEVICE` is invalid or the device cannot be opened.
    #[error("device error: {0}")]
    Device(#[source] DeviceError),
    /// Returned when a tensor operation fails (shapes, dtypes, device memory).
    #[error("model error: {0}")]
    Candle(#[from] candle_core::Error),
}

/// What is wrong with a `config.json` ([`InferenceError::Config`]). The messages name the
/// field and the rule, never a value of the file; the serde errors kept as sources may quote
/// one (a model's own metadata, never request text).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Returned when the text is not JSON.
    #[error("not valid JSON (line {}, column {})", .0.line(), .0.column())]
    NotJson(#[source] serde_json::Error),
    /// Returned when a field read by every family has the wrong type.
    #[error("a field has the wrong type")]
    FieldType(#[source] serde_json::Error),
    /// Returned when a key of `id2label` is not an integer.
    #[error("id2label keys must be integers")]
    Id2LabelKey(#[source] std::num::ParseIntError),
    /// Returned when `id2label` is empty or its ids are not `0..n`.
    #[error("id2label must map 0..n without gaps")]
    Id2LabelGaps,
    /// Returned when a field the family needs is absent.
    #[error("{}: missing {field}", .family.name())]
    Missing {
        /// The family that needs it.
        family: Family,
        /// The field, as `config.json` names it.
        field: &'static str,
    },
    /// Returned when the family's own config type (candle-transformers') does not accept
    /// the file: a field it needs is absent or of the wrong type.
    #[error("{}: a field is missing or has the wrong type", .family.name())]
    Fields {
        /// The family.
        family: Family,
        /// serde_json's error, which names the field.
        #[source]
        source: serde_json::Error,
    },
    /// Returned when ModernBERT's `classifier_activation` names no activation candle has.
    #[error("modernbert: unsupported classifier_activation")]
    ClassifierActivation(#[source] serde_json::Error),
    /// Returned when a BERT size (hidden, heads, layers) is zero.
    #[error("bert sizes must be non-zero")]
    ZeroSize,
    /// Returned when the heads do not divide the hidden size.
    #[error("hidden_size must be a multiple of num_attention_heads")]
    HeadsDoNotDivide,
    /// Returned when BERT's `hidden_act` is not erf-GELU.
    #[error("bert supports hidden_act gelu only")]
    Activation,
    /// Returned when BERT's positions are not absolute.
    #[error("bert supports absolute position embeddings only")]
    PositionEmbedding,
}

/// How the tokenizer failed ([`InferenceError::Tokenizer`]).
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// Returned when `tokenizer.json` does not parse or cannot be configured (truncation off,
    /// the probe word that finds the special tokens); the source is the tokenizers crate's.
    #[error(transparent)]
    Load(tokenizers::Error),
    /// Returned when a request text cannot be encoded. The tokenizers crate's error is
    /// dropped on purpose: it may quote the text.
    #[error("encoding a text failed")]
    Encode,
}

/// Why no device could be used ([`InferenceError::Device`]).
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// Returned when `PHIGUARD_DEVICE` is not `auto`, `cpu`, `metal` or `cuda`.
    #[error("PHIGUARD_DEVICE must be one of auto, cpu, metal, cuda")]
    Unknown,
    /// Returned when `metal` or `cuda` was asked for and this build lacks the feature (or
    /// the machine the device).
    #[error("built without {0} support")]
    NotBuilt(&'static str),
    /// Returned when candle cannot open the device.
    #[error(transparent)]
    Open(candle_core::Error),
}

/// Result of the inference module.
pub type Result<T> = std::result::Result<T, InferenceError>;
