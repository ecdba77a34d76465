//! `phiguard eval --gold FILE`: scores the engine (rules + model, as the service runs them)
//! against gold spans; exits 1 when `--min-recall` is not met.

use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

use super::{init_logging, runtime, Failure};
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
    let rt = runtime()?;
    let report = rt.block_on(async {
        let engine = crate::server::build_engine(&settings, &home, Default::default())
            .map_err(|e| Failure::usage(e.to_string()))?;
        let id = engine.resolve(args.model.as_deref()).map_err(|_| {
            Failure::usage("the model is not installed (see `phiguard models list`)")
        })?;
        let bar = if args.json {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(docs.len() as u64)
        };
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} notes {elapsed_precise}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let report = crate::engine::evaluate::evaluate(
            &engine,
            &id,
            &docs,
            method,
            args.threshold as f32,
            || bar.inc(1),
        )
        .await
        .map_err(|e| Failure::runtime(format!("detection failed: {e}")))?;
        bar.finish_and_clear();
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
