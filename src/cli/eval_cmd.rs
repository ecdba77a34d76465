//! `phiguard eval --gold FILE`: scores the engine (rules + model, as the service runs them)
//! against gold spans; exits 1 when `--min-recall` is not met. `--detectors model|rules`
//! scores one side of the merge alone (the same backend, without the guard).
//!
//! # Why a gate fails on an empty gold file
//! Recall over no gold span is 1.0 by convention, so a CI gate over a gold file that lost
//! its rows (a bad export, an empty file, every `gold_spans` empty) would pass for ever. A
//! gold file with no note is refused (exit 2), and `--min-recall` over one with no gold
//! span fails (exit 1), before the model loads.
//!
//! `--predictions` never replaces an input (the gold file or the label map, however it is
//! reached: a link, a hard link) and replaces an existing file only with `--force`; both
//! are checked before the model loads, so a refusal writes nothing.

use std::path::{Path, PathBuf};

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
    pub(super) force: bool,
}

/// Refuses (usage error) a `--predictions` path that is one of `inputs` (the same file,
/// through a link or a hard link too) or, without `force`, any existing file.
fn check_predictions(path: &Path, inputs: &[&Path], force: bool) -> Result<(), Failure> {
    for input in inputs {
        if same_file::is_same_file(path, input).unwrap_or(false) {
            return Err(Failure::usage(format!(
                "--predictions {} is the input {}: writing it would destroy it, so nothing \
                 was written; choose another file",
                path.display(),
                input.display()
            )));
        }
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Err(Failure::usage(format!(
            "--predictions {} is a folder",
            path.display()
        ))),
        Ok(_) if !force => Err(Failure::usage(format!(
            "--predictions {} already exists, so nothing was written; --force overwrites it",
            path.display()
        ))),
        _ => Ok(()),
    }
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
    if docs.is_empty() {
        return Err(Failure::usage(format!(
            "the gold file {} holds no notes",
            args.gold.display()
        )));
    }
    if args.min_recall.is_some() && docs.iter().all(|d| d.spans.is_empty()) {
        return Err(Failure::runtime(format!(
            "--min-recall is not met: the gold file {} holds no gold span, so there is \
             nothing to recall",
            args.gold.display()
        )));
    }
    if let Some(path) = &args.predictions {
        let mut inputs = vec![args.gold.as_path()];
        inputs.extend(args.label_map.as_deref());
        check_predictions(path, &inputs, args.force)?;
    }
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
            write_predictions(path, &predicted, args.force)?;
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
/// scores and sources; never text), as `deid` writes an output: through a temporary file,
/// without `force` never over a file that appeared since [`check_predictions`], with it
/// replacing a link rather than writing through it.
fn write_predictions(path: &Path, predicted: &[Vec<Span>], force: bool) -> Result<(), Failure> {
    let mut body = String::new();
    for (i, spans) in predicted.iter().enumerate() {
        let line = serde_json::json!({ "index": i, "spans": spans });
        body.push_str(&line.to_string());
        body.push('\n');
    }
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    folder
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| super::deid::write_output(path, body.as_bytes(), force))
        .map_err(|e| {
            Failure::runtime(format!(
                "cannot write predictions {}: {}",
                path.display(),
                super::deid::io_reason(&e)
            ))
        })
}
