//! Scoring the engine against gold documents: detection through the guarded call path
//! (the same one the service runs), the chosen transform for the leak rate, and timings;
//! shared by `phiguard eval` and `POST /admin/eval`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{CallOptions, Engine, EngineError};
use crate::deid::{DeidOptions, Deidentifier, HashKey, Method};
use crate::detect::Detectors;
use crate::detect::Span;
use crate::eval::{score, GoldDoc, Report};
use crate::guard::Deadline;

/// Detects, transforms and scores `docs` with the installed model `id`; returns the report
/// and the spans found per document. `Detectors::Both` goes through the guarded call path;
/// `Model` or `Rules` score one side of the merge alone (the same backend, no guard).
/// `on_doc` is called after each document (progress bars).
///
/// # Errors
/// The first detection failure.
pub async fn evaluate(
    engine: &Engine,
    id: &str,
    docs: &[GoldDoc],
    method: Method,
    threshold: f32,
    detectors: Detectors,
    mut on_doc: impl FnMut(),
) -> Result<(Report, Vec<Vec<Span>>), EngineError> {
    let key = HashKey::generate(&mut rand::rng());
    let mut predicted = Vec::with_capacity(docs.len());
    let mut redacted = Vec::with_capacity(docs.len());
    let mut timings: Vec<Duration> = Vec::with_capacity(docs.len());
    for doc in docs {
        let opts = CallOptions {
            deadline: Deadline::unbounded(engine.guard.clock().now()),
            fallback_rules: false,
            keep_alive: None,
            terms: None,
            configured_terms: true,
        };
        let started = Instant::now();
        let found: Vec<Span> = if detectors == Detectors::Both {
            engine
                .detect(id, Arc::from(doc.text.as_str()), &opts)
                .await?
                .spans
        } else {
            let registry = Arc::clone(&engine.registry);
            let (id, text) = (id.to_string(), doc.text.clone());
            tokio::task::spawn_blocking(move || {
                let lease = registry.lease(&id, None).map_err(|_| EngineError::Load)?;
                lease
                    .backend
                    .detect_with(&[text.as_str()], detectors)
                    .map_err(|_| EngineError::Backend)
            })
            .await
            .map_err(|_| EngineError::Backend)??
            .pop()
            .unwrap_or_default()
        };
        timings.push(started.elapsed());
        let spans: Vec<_> = found.into_iter().filter(|s| s.passes(threshold)).collect();
        let mut d = Deidentifier::new(
            DeidOptions {
                method,
                ..Default::default()
            },
            &key,
            rand::rng(),
        );
        redacted.push(d.apply(&doc.text, &spans).text);
        predicted.push(spans);
        on_doc();
    }
    let report = score(docs, &predicted, Some(&redacted)).with_timings(docs, &timings, 5);
    Ok((report, predicted))
}
