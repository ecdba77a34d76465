//! The accuracy report: figures per label and overall, the leak rate, the slowest documents;
//! JSON through serde for the admin API, a plain-text table for the CLI.
//!
//! Figures carry their raw counts next to the ratios so a reader can tell 1.0 out of 3 spans
//! from 1.0 out of 3,000, and so reports of several runs can be added up later.

use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::GoldDoc;
use crate::detect::Label;

/// Precision, recall and F1 with the counts they came from.
///
/// `matched_gold` counts gold items found; `matched_predicted` counts predicted items that
/// are correct. For strict span and character figures the two are equal; for overlapping
/// span figures they can differ (matching is not one-to-one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Prf {
    /// Gold items (spans or code points).
    pub gold: usize,
    /// Predicted items.
    pub predicted: usize,
    /// Gold items matched by a prediction.
    pub matched_gold: usize,
    /// Predicted items matched by gold.
    pub matched_predicted: usize,
    /// `matched_predicted / predicted` (1.0 when nothing was predicted).
    pub precision: f64,
    /// `matched_gold / gold` (1.0 when there was nothing to find).
    pub recall: f64,
    /// Harmonic mean of precision and recall (0 when both are 0).
    pub f1: f64,
}

impl Prf {
    /// Builds the figures from counts.
    pub(crate) fn from_counts(
        gold: usize,
        predicted: usize,
        matched_gold: usize,
        matched_predicted: usize,
    ) -> Prf {
        let precision = ratio(matched_predicted, predicted);
        let recall = ratio(matched_gold, gold);
        let f1 = if precision + recall > 0.0 {
            2.0 * precision * recall / (precision + recall)
        } else {
            0.0
        };
        Prf {
            gold,
            predicted,
            matched_gold,
            matched_predicted,
            precision,
            recall,
            f1,
        }
    }
}

/// `num / den`, with `0/0 = 1` and the result clamped to [0, 1].
pub(crate) fn ratio(num: usize, den: usize) -> f64 {
    if den == 0 {
        1.0
    } else {
        (num as f64 / den as f64).clamp(0.0, 1.0)
    }
}

/// The four figures computed for one label or overall (see the module doc of `eval`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Metrics {
    /// Exact start, end and label.
    pub strict: Prf,
    /// Any overlap with the same label.
    pub overlap: Prf,
    /// Any overlap, labels ignored.
    pub overlap_any_label: Prf,
    /// Code points: per label for a label row, PHI vs not for the overall row.
    pub chars: Prf,
}

/// The figures of one canonical label.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LabelMetrics {
    /// The label.
    #[schema(value_type = String)]
    pub label: Label,
    /// Its span and character figures.
    #[serde(flatten)]
    pub metrics: Metrics,
    /// Share of this label's gold letters and digits still visible (see [`Leak`]).
    pub leak_rate: f64,
}

/// The figures of one foreign gold label (a name that no vocabulary knows; see
/// [`read_gold`](super::read_gold)). Predictions never carry such a label, so only the
/// label-agnostic figures mean something.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ForeignMetrics {
    /// The label as the gold file names it.
    pub label: String,
    /// Gold spans of this label.
    pub gold_spans: usize,
    /// Of those, the spans that some predicted span overlaps.
    pub found_any_label: usize,
    /// `found_any_label / gold_spans`.
    pub recall_any_label: f64,
    /// Share of this label's gold code points covered by some predicted span.
    pub char_recall: f64,
}

/// How the leak rate was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LeakBasis {
    /// From the de-identified texts: a gold word (a run of letters and digits of three or
    /// more code points, or the whole span when it has no such run) leaks when it still
    /// occurs in the output of its document, delimited by non-alphanumerics. Runs of one or
    /// two code points inside a span that also has longer words are not checked (`7` in
    /// `Flat 7, 106 Marlborough Gardens`), so this basis can under-count by those.
    RedactedOutput,
    /// From predicted coverage: a gold letter or digit leaks when no predicted span covers
    /// it.
    PredictedCoverage,
}

/// Gold PHI still visible after de-identification.
///
/// Only letters and digits count ("gold PHI characters"): spaces and punctuation inside a
/// span identify no one, and counting them would let a prediction that trims a trailing
/// full stop look like a leak. The redacted-output basis can over-count when a surrogate or
/// an unrelated word coincides with a gold word (it errs on the side of reporting a leak)
/// and cannot see a leak that was rewritten, such as a date shifted by one day too few.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Leak {
    /// How it was measured.
    pub basis: LeakBasis,
    /// `leaked_chars / gold_chars` (0 when there is no gold PHI).
    pub rate: f64,
    /// Gold letters and digits still visible.
    pub leaked_chars: usize,
    /// Gold letters and digits in all.
    pub gold_chars: usize,
    /// Gold spans with at least one visible letter or digit.
    pub leaked_spans: usize,
    /// Gold spans in all.
    pub gold_spans: usize,
}

/// The time one document took, for the slowest-documents list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DocTiming {
    /// Document id from the gold file.
    pub id: String,
    /// Length in code points.
    pub chars: usize,
    /// Wall time in milliseconds.
    pub millis: f64,
}

/// The result of [`score`](super::score): serialises to JSON, renders as a table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Report {
    /// Documents scored.
    pub documents: usize,
    /// Code points scored.
    pub characters: usize,
    /// Micro-averaged figures over every label.
    pub overall: Metrics,
    /// Figures per canonical label that occurs in gold or predictions, in [`Label::ALL`]
    /// order.
    pub per_label: Vec<LabelMetrics>,
    /// Figures per foreign gold label, by name.
    #[serde(default)]
    pub foreign_labels: Vec<ForeignMetrics>,
    /// Gold PHI left visible.
    pub leak: Leak,
    /// The slowest documents, slowest first (empty unless timings were added).
    pub slowest: Vec<DocTiming>,
    /// Input problems the scorer worked around (fixed words and counts only).
    pub warnings: Vec<String>,
}

impl Report {
    /// Label-agnostic character recall: the share of gold PHI code points that some
    /// predicted span covered.
    pub fn overall_char_recall(&self) -> f64 {
        self.overall.chars.recall
    }

    /// The figures of one label, when it occurred.
    pub fn label(&self, label: Label) -> Option<&LabelMetrics> {
        self.per_label.iter().find(|m| m.label == label)
    }

    /// Adds the `n` slowest documents; `timings[i]` is the time `docs[i]` took (extra
    /// entries on either side are ignored).
    #[must_use]
    pub fn with_timings(mut self, docs: &[GoldDoc], timings: &[Duration], n: usize) -> Report {
        let mut all: Vec<DocTiming> = docs
            .iter()
            .zip(timings)
            .map(|(d, t)| DocTiming {
                id: d.id.clone(),
                chars: d.text.chars().count(),
                millis: t.as_secs_f64() * 1000.0,
            })
            .collect();
        all.sort_by(|a, b| b.millis.total_cmp(&a.millis));
        all.truncate(n);
        self.slowest = all;
        self
    }

    /// Renders the report as a plain-text table for terminals.
    pub fn render_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "documents: {}   characters: {}",
            self.documents, self.characters
        );
        let _ = writeln!(
            out,
            "{:<22} {:>6} {:>6} | {:^20} | {:^20} | {:>9} | {:^20} | {:>6}",
            "", "", "", "span strict", "span overlap", "any-label", "characters", ""
        );
        let _ = writeln!(
            out,
            "{:<22} {:>6} {:>6} | {:>6} {:>6} {:>6} | {:>6} {:>6} {:>6} | {:>9} | {:>6} {:>6} {:>6} | {:>6}",
            "label", "gold", "pred", "P", "R", "F1", "P", "R", "F1", "R", "P", "R", "F1", "leak"
        );
        let rule = "-".repeat(126);
        let _ = writeln!(out, "{rule}");
        for m in &self.per_label {
            row(&mut out, m.label.canonical(), &m.metrics, m.leak_rate);
        }
        let _ = writeln!(out, "{rule}");
        row(&mut out, "OVERALL", &self.overall, self.leak.rate);
        let basis = match self.leak.basis {
            LeakBasis::RedactedOutput => "measured on the de-identified output",
            LeakBasis::PredictedCoverage => "from predicted coverage",
        };
        let _ = writeln!(
            out,
            "\nleak rate {:.4} ({basis}): {} of {} gold letters/digits, {} of {} gold spans",
            self.leak.rate,
            self.leak.leaked_chars,
            self.leak.gold_chars,
            self.leak.leaked_spans,
            self.leak.gold_spans
        );
        let _ = writeln!(
            out,
            "overall character recall {:.4}",
            self.overall_char_recall()
        );
        if !self.foreign_labels.is_empty() {
            let _ = writeln!(
                out,
                "\nforeign gold labels (scored as their own categories):"
            );
            for f in &self.foreign_labels {
                let _ = writeln!(
                    out,
                    "  {:<30} {:>6} spans   any-label R {:.3}   char R {:.3}",
                    f.label, f.gold_spans, f.recall_any_label, f.char_recall
                );
            }
        }
        if !self.slowest.is_empty() {
            let _ = writeln!(out, "\nslowest documents:");
            for t in &self.slowest {
                let _ = writeln!(
                    out,
                    "  {:<24} {:>8} chars {:>10.2} ms",
                    t.id, t.chars, t.millis
                );
            }
        }
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
        out
    }
}

fn row(out: &mut String, name: &str, m: &Metrics, leak: f64) {
    let _ = writeln!(
        out,
        "{:<22} {:>6} {:>6} | {:>6.3} {:>6.3} {:>6.3} | {:>6.3} {:>6.3} {:>6.3} | {:>9.3} | {:>6.3} {:>6.3} {:>6.3} | {:>6.3}",
        name,
        m.strict.gold,
        m.strict.predicted,
        m.strict.precision,
        m.strict.recall,
        m.strict.f1,
        m.overlap.precision,
        m.overlap.recall,
        m.overlap.f1,
        m.overlap_any_label.recall,
        m.chars.precision,
        m.chars.recall,
        m.chars.f1,
        leak
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prf_from_counts_handles_empty_denominators() {
        let p = Prf::from_counts(0, 0, 0, 0);
        assert_eq!((p.precision, p.recall, p.f1), (1.0, 1.0, 1.0));
        let p = Prf::from_counts(4, 0, 0, 0);
        assert_eq!((p.precision, p.recall, p.f1), (1.0, 0.0, 0.0));
        let p = Prf::from_counts(0, 2, 0, 0);
        assert_eq!((p.precision, p.recall, p.f1), (0.0, 1.0, 0.0));
        let p = Prf::from_counts(4, 2, 1, 1);
        assert_eq!((p.precision, p.recall), (0.5, 0.25));
        assert!((p.f1 - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn timings_keep_the_n_slowest_first() {
        let doc = |id: &str| GoldDoc {
            id: id.to_owned(),
            note_type: None,
            text: "abc".to_owned(),
            spans: vec![],
            foreign: vec![],
            not_scored: 0,
        };
        let docs = [doc("a"), doc("b"), doc("c")];
        let timings = [
            Duration::from_millis(5),
            Duration::from_millis(50),
            Duration::from_millis(7),
        ];
        let report = Report {
            documents: 3,
            characters: 9,
            overall: Metrics::default(),
            per_label: vec![],
            leak: Leak {
                basis: LeakBasis::PredictedCoverage,
                rate: 0.0,
                leaked_chars: 0,
                gold_chars: 0,
                leaked_spans: 0,
                gold_spans: 0,
            },
            foreign_labels: vec![],
            slowest: vec![],
            warnings: vec![],
        }
        .with_timings(&docs, &timings, 2);
        let ids: Vec<&str> = report.slowest.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["b", "c"]);
        assert_eq!(report.slowest[0].chars, 3);
        assert!(report.render_table().contains("slowest documents"));
    }
}
