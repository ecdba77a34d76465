//! Recognizers: what finds PHI in text.
//!
//! Owns the span and label types ([`span`]), the rule recognizers (patterns, checksums,
//! context words), merging and overlap resolution, and the [`Recognizer`] trait that the
//! engine calls on its worker threads. Model-backed recognizers implement the same trait
//! in `inference`. Pure text in, spans out: no HTTP, no async, no candle.

pub mod context;
pub mod merge;
pub mod merged;
pub mod normalize;
pub mod protected;
pub mod rules;
pub mod span;
pub mod sweep;
pub mod terms;
pub mod thresholds;

pub use context::ContextRecognizer;
pub use merge::resolve;
pub use merged::{Detectors, Merged};
pub use rules::RuleRecognizer;
pub use span::{CharIndex, Label, Source, Span};
pub use terms::{Terms, TermsError};
pub use thresholds::LabelThresholds;

/// Why a recognizer call failed. Messages never contain request text.
#[derive(Debug, thiserror::Error)]
pub enum RecognizerError {
    /// Returned when the backend itself failed (a model error, a device error, an injected
    /// fault): retryable, and counted by the circuit breaker.
    #[error("recognizer backend failed: {0}")]
    Backend(#[source] BackendError),
    /// Returned when the input cannot be processed by this recognizer (a client error):
    /// never retried, and counted as a success by the circuit breaker. The source is the
    /// recognizer's own error (in `inference`, a tokenizer failure), free of request text.
    #[error("input rejected by recognizer: {0}")]
    Input(#[source] BoxError),
}

/// A recognizer's own error, boxed: `detect` names no model runtime (no candle here), so a
/// model-backed recognizer hands its typed error over in a box that can be downcast.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// How a recognizer's backend failed ([`RecognizerError::Backend`]).
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// Returned when the model runtime failed (tensor shapes, dtypes, device memory); the
    /// source is the runtime's typed error (in `inference`, an `InferenceError`).
    #[error(transparent)]
    Model(BoxError),
    /// Returned when the model call panicked; the worker caught it and survives.
    #[error("panic in model call")]
    Panicked,
    /// Returned when a recognizer answered a different number of span lists than texts.
    #[error("recognizer returned a wrong count")]
    WrongCount,
    /// Returned when a fault was injected at the backend boundary (`PHIGUARD_FAULTS`,
    /// `PUT /admin/faults`, or a scripted test backend).
    #[error("injected fault")]
    Injected,
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

/// Several recognizers run as one: their spans are concatenated and resolved. The service's
/// rule layer is the pattern table ([`RuleRecognizer`]) with the context heuristics
/// ([`ContextRecognizer`]) beside it.
pub struct Layered(pub Vec<std::sync::Arc<dyn Recognizer>>);

impl Layered {
    /// The service's rule layer: patterns and context heuristics.
    pub fn service_rules() -> Self {
        Layered(vec![
            std::sync::Arc::new(RuleRecognizer::new()),
            std::sync::Arc::new(ContextRecognizer::new()),
        ])
    }
}

impl Recognizer for Layered {
    fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
        let mut out: Vec<Vec<Span>> = vec![Vec::new(); texts.len()];
        for r in &self.0 {
            for (acc, spans) in out.iter_mut().zip(r.detect_batch(texts)?) {
                acc.extend(spans);
            }
        }
        Ok(out.into_iter().map(resolve).collect())
    }
}
