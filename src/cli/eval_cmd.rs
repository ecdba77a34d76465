//! `phiguard eval --gold FILE`: scores the engine (rules + model, as the service runs them)
//! against gold spans; exits 1 when `--min-recall` is not met. `--detectors model|rules`
//! scores one side of the merge alone (the same backend, without the guard).

use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};

use super::{init_logging, runtime, Failure};
use crate::detect::Detectors;
use crate::detect::Span;
use crate::eval::{read_gold, LabelMap};
use crate::settings::{Home, Settings};

pub(super) struct Args {
    pub(super) gold: PathBuf,
    pub(super) model: Option<String>,
    pub(super) method: String,
    pub(super) json: bool,
    pub(super) min_recall: Option<f64>,
    pub(super) label_map: Option<PathBuf>,
    pub(super) threshold: f64,
    pub(super) detectors: String,
    pub(super) predictions: Option<PathBuf>,
}

pub(super) fn run(args: Args) -> Result<(), Failure> {
    let home = Home::from_env();
    let settings = Settings::load(&home)?;
    init_logging(&settings);
    let map = match &args.label_map {
        Some(p) => Some(LabelMap::from_path(p).map_err(|e| Failure::usage(e.to_string()))?),
        None => None,
    };
    let docs = read_gold(&args.gold, map.as_ref()).map_err(|e| Failure::usage(e.to_string()))?;
    let method = super::deid::method(&args.method)?;
    let detectors = match args.detectors.as_str() {
        "both" => Detectors::Both,
        "model" => Detectors::Model,
        "rules" => Detectors::Rules,
        _ => return Err(Failure::usage("--detectors must be both, model or rules")),
    };
    let rt = runtime()?;
    let report = rt.block_on(async {
        let (engine, id) =
            super::engine_with_model(&settings, &home, args.model.as_deref()).await?;
        let bar = if args.json {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(docs.len() as u64)
        };
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} notes {elapsed_precise}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let (report, predicted) = crate::engine::evaluate::evaluate(
            &engine,
            &id,
            &docs,
            method,
            args.threshold as f32,
            detectors,
            || bar.inc(1),
        )
        .await
        .map_err(|e| Failure::runtime(format!("detection failed: {e}")))?;
        bar.finish_and_clear();
        if let Some(path) = &args.predictions {
            write_predictions(path, &predicted)?;
        }
        Ok::<_, Failure>(report)
    })?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| Failure::runtime(e.to_string()))?
        );
    } else {
        print!("{}", report.render_table());
    }
    if let Some(min) = args.min_recall {
        let got = report.overall_char_recall();
        if got < min {
            return Err(Failure::runtime(format!(
                "character recall {got:.4} is below --min-recall {min}"
            )));
        }
    }
    Ok(())
}

/// Writes one JSON line per document: its index and its predicted spans (offsets, labels,
/// scores and sources; never text).
fn write_predictions(path: &std::path::Path, predicted: &[Vec<Span>]) -> Result<(), Failure> {
    use std::io::Write as _;
    let io = |e: std::io::Error| Failure::runtime(format!("cannot write predictions: {e}"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    for (i, spans) in predicted.iter().enumerate() {
        let line = serde_json::json!({ "index": i, "spans": spans });
        writeln!(out, "{line}").map_err(io)?;
    }
    out.flush().map_err(io)
}
