//! A model merged with the rule recognizers, the one recognizer the service runs per model.
//!
//! The merge is recall first: model spans are filtered (per-label thresholds, protected
//! terms), then unioned with the rule spans ([`super::resolve`]), then the safety sweep marks
//! every other occurrence of a name found once ([`super::sweep`]). All of it runs on the
//! normalised view of each text ([`super::normalize`]), and the spans are mapped back to the
//! submitted text's offsets last. The engine only chooses which model; how spans combine is
//! decided here, beside the recognizers.

use std::sync::Arc;

use parking_lot::RwLock;

use super::normalize::View;
use super::{LabelThresholds, Recognizer, RecognizerError, Span};

/// Which recognizers a detection runs (`phiguard eval --detectors`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Detectors {
    /// The model and the rules, merged (what the service runs).
    #[default]
    Both,
    /// The model alone (its spans still pass the thresholds and protected terms).
    Model,
    /// The rules alone.
    Rules,
}

/// The model-span filters shared by every backend; live settings replace them.
pub type SharedThresholds = Arc<RwLock<LabelThresholds>>;

/// A model merged with the rule recognizers: what every served model id answers with, and
/// the unit the guard protects.
pub struct Merged {
    model: Option<Arc<dyn Recognizer>>,
    rules: Arc<dyn Recognizer>,
    thresholds: SharedThresholds,
}

impl Merged {
    /// The rules alone (no model), with no thresholds.
    pub fn rules_only(rules: Arc<dyn Recognizer>) -> Self {
        Merged::new(None, rules, SharedThresholds::default())
    }

    /// A model (or none) merged with `rules`; `thresholds` filter the model's spans and may
    /// be replaced while it serves.
    pub fn new(
        model: Option<Arc<dyn Recognizer>>,
        rules: Arc<dyn Recognizer>,
        thresholds: SharedThresholds,
    ) -> Self {
        Merged {
            model,
            rules,
            thresholds,
        }
    }

    /// Runs the chosen recognizers and merges their spans (see the module docs).
    ///
    /// # Errors
    /// What the recognizers return.
    pub fn detect_with(
        &self,
        texts: &[&str],
        detectors: Detectors,
    ) -> Result<Vec<Vec<Span>>, RecognizerError> {
        // Every recognizer reads the normalised view; spans go back to the submitted text's
        // offsets at the end (see `detect::normalize`).
        let views: Vec<View<'_>> = texts.iter().map(|t| View::new(t)).collect();
        let texts: Vec<&str> = views.iter().map(View::text).collect();
        let texts = texts.as_slice();
        let mut found: Vec<Vec<Span>> = if detectors == Detectors::Model {
            vec![Vec::new(); texts.len()]
        } else {
            let mut found = self.rules.detect_batch(texts)?;
            for (spans, text) in found.iter_mut().zip(texts) {
                super::protected::clean_rule_spans(text, spans);
            }
            found
        };
        if let (Some(model), false) = (&self.model, detectors == Detectors::Rules) {
            let spans = model.detect_batch(texts)?;
            let thresholds = self.thresholds.read().clone();
            for ((r, mut m), text) in found.iter_mut().zip(spans).zip(texts) {
                thresholds.retain(&mut m);
                super::protected::drop_protected(text, &mut m);
                r.extend(m);
            }
        }
        Ok(found
            .into_iter()
            .zip(&views)
            .map(|(spans, view)| {
                let spans = super::sweep::sweep(view.text(), super::resolve(spans));
                view.to_original(spans)
            })
            .collect())
    }
}

impl Recognizer for Merged {
    fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
        self.detect_with(texts, Detectors::Both)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::{Label, Source};

    /// A recognizer that returns the same spans for every text (a test double for a model).
    struct Fixed(Vec<Span>);

    impl Recognizer for Fixed {
        fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
            Ok(texts.iter().map(|_| self.0.clone()).collect())
        }
    }

    fn backend(thresholds: &[&str]) -> Result<Merged, crate::detect::thresholds::ThresholdError> {
        // "Hodgkin lymphoma; Mrs. Davis; Davis; MRN 4455667"
        let model = Fixed(vec![
            Span::new(0, 7, Label::LastName, 0.9, Source::Model),
            Span::new(23, 28, Label::LastName, 0.4, Source::Model),
            Span::new(41, 48, Label::IdNum, 0.99, Source::Model),
        ]);
        Ok(Merged::new(
            Some(Arc::new(model)),
            Arc::new(crate::detect::Layered::service_rules()),
            Arc::new(RwLock::new(LabelThresholds::parse(thresholds)?)),
        ))
    }

    const TEXT: &str = "Hodgkin lymphoma; Mrs. Davis; Davis; MRN 4455667";

    fn found(b: &Merged, d: Detectors) -> Vec<(usize, usize, Label)> {
        b.detect_with(&[TEXT], d)
            .unwrap_or_default()
            .concat()
            .into_iter()
            .map(|s| (s.start, s.end, s.label))
            .collect()
    }

    #[test]
    fn merged_spans_drop_protected_terms_sweep_names_and_prefer_context_labels(
    ) -> Result<(), crate::detect::thresholds::ThresholdError> {
        let b = backend(&[])?;
        let both = found(&b, Detectors::Both);
        assert!(
            !both.iter().any(|s| s.0 == 0),
            "Hodgkin is protected: {both:?}"
        );
        assert!(both.contains(&(23, 28, Label::LastName)), "{both:?}");
        assert!(both.contains(&(30, 35, Label::LastName)), "swept: {both:?}");
        assert!(
            both.contains(&(41, 48, Label::MedicalRecordNumber)),
            "{both:?}"
        );
        Ok(())
    }

    #[test]
    fn detectors_choose_the_side_and_thresholds_filter_model_spans(
    ) -> Result<(), crate::detect::thresholds::ThresholdError> {
        let b = backend(&["LAST_NAME=0.5"])?;
        let model = found(&b, Detectors::Model);
        assert_eq!(
            model,
            vec![(41, 48, Label::IdNum)],
            "the 0.4 surname is below its threshold"
        );
        let rules = found(&b, Detectors::Rules);
        assert!(rules.iter().all(|s| s.2 != Label::IdNum), "{rules:?}");
        assert!(
            rules.contains(&(41, 48, Label::MedicalRecordNumber)),
            "{rules:?}"
        );
        Ok(())
    }
}
