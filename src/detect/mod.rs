//! Recognizers: what finds PHI in text.
//!
//! Owns the span and label types ([`span`]), the rule recognizers (patterns, checksums,
//! context words), merging and overlap resolution, and the [`Recognizer`] trait that the
//! engine calls on its worker threads. Model-backed recognizers implement the same trait
//! in `inference`. Pure text in, spans out: no HTTP, no async, no candle.

pub mod cancel;
pub(crate) mod census;
pub mod context;
pub mod lend;
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
pub use span::{CharIndex, Label, Source, Sources, Span};
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

/// The service's rule layer built on a thread of its own, so that its cost at start-up
/// (compiling the pattern table's regexes and the context word lists: about 0.15 s of one
/// core, more than loading the bundled model) overlaps the model's load instead of coming
/// before it. The first call waits for the build if it has not finished; a build that
/// panicked panics that call, as building inline would have panicked the start.
///
/// A `LazyLock` rather than a join handle: whichever thread gets there first builds it and
/// any other waits on the same lock, so a failed `spawn` only means the first call builds.
pub struct DeferredRules(std::sync::Arc<std::sync::LazyLock<Layered>>);

impl DeferredRules {
    /// Starts building [`Layered::service_rules`] in the background.
    pub fn service_rules() -> Self {
        let rules = std::sync::Arc::new(std::sync::LazyLock::new(
            Layered::service_rules as fn() -> Layered,
        ));
        let building = std::sync::Arc::clone(&rules);
        let spawned = std::thread::Builder::new()
            .name("rules-build".into())
            .spawn(move || {
                std::sync::LazyLock::force(&building);
            });
        if spawned.is_err() {
            tracing::debug!("rule layer builds on first use: no thread for it");
        }
        DeferredRules(rules)
    }
}

impl Recognizer for DeferredRules {
    fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
        self.0.detect_batch(texts)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The rules built in the background find what the rules built inline find, from the
    /// first call on (which may wait for the build) and from several threads at once.
    #[test]
    fn deferred_rules_answer_as_the_inline_rules() -> Result<(), RecognizerError> {
        let text = "Seen by Dr. Maria Lopez on 03/14/2024, MRN 4455667, phone 617-555-0142.";
        let inline = Layered::service_rules().detect_batch(&[text])?;
        assert!(
            !inline[0].is_empty(),
            "the rules find something in the text"
        );
        let deferred = std::sync::Arc::new(DeferredRules::service_rules());
        let answers: Vec<_> = (0..4)
            .map(|_| {
                let d = std::sync::Arc::clone(&deferred);
                std::thread::spawn(move || d.detect_batch(&[text]).map(|v| format!("{v:?}")))
            })
            .collect();
        for a in answers {
            let got = a.join().expect("no panic")?;
            assert_eq!(got, format!("{inline:?}"));
        }
        Ok(())
    }
}
