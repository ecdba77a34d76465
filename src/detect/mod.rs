//! Recognizers: what finds PHI in text.
//!
//! Owns the span and label types ([`span`]), the rule recognizers (patterns, checksums,
//! context words), merging and overlap resolution, and the [`Recognizer`] trait that the
//! engine calls on its worker threads. Model-backed recognizers implement the same trait
//! in `inference`. Pure text in, spans out: no HTTP, no async, no candle.

pub mod merge;
pub mod rules;
pub mod span;

pub use merge::resolve;
pub use rules::RuleRecognizer;
pub use span::{CharIndex, Label, Source, Span};

/// Why a recognizer call failed. Messages never contain request text.
#[derive(Debug, thiserror::Error)]
pub enum RecognizerError {
    /// Returned when the backend itself failed (a model error, a device error, an injected
    /// fault): retryable, and counted by the circuit breaker.
    #[error("recognizer backend failed: {0}")]
    Backend(String),
    /// Returned when the input cannot be processed by this recognizer (a client error):
    /// never retried, and counted as a success by the circuit breaker.
    #[error("input rejected by recognizer: {0}")]
    Input(String),
}

/// A synchronous recognizer. It runs on the engine's worker threads, never on the async
/// runtime, and must be callable from several threads at once.
pub trait Recognizer: Send + Sync {
    /// Finds spans in each text; `result[i]` holds the spans of `texts[i]`, in code-point
    /// offsets of `texts[i]`, sorted by start.
    ///
    /// # Errors
    /// [`RecognizerError::Backend`] when the backend fails, [`RecognizerError::Input`] when
    /// a text cannot be processed.
    fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError>;
}
