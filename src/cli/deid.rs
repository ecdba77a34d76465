//! `phiguard deid FILES… --method M --out DIR`: de-identifies many files in-process (the
//! same engine, guard and transforms as the service) with a progress bar; `-` reads stdin
//! and writes stdout.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};

use super::{init_logging, runtime, Failure};
use crate::deid::{DeidOptions, Deidentifier, Method, Policy};
use crate::engine::CallOptions;
use crate::guard::Deadline;
use crate::secrets::SecretStore;
use crate::settings::{Home, Settings};

pub(super) struct Args {
    pub(super) files: Vec<PathBuf>,
    pub(super) method: String,
    pub(super) out: Option<PathBuf>,
    pub(super) model: Option<String>,
    pub(super) policy: Option<String>,
    pub(super) date_shift_days: Option<i64>,
    pub(super) threshold: f64,
}

pub(super) fn method(name: &str) -> Result<Method, Failure> {
    Method::from_wire(name).ok_or_else(|| {
        Failure::usage("--method must be mask, remove, replace, hash or shift_dates")
    })
}

pub(super) fn run(args: Args) -> Result<(), Failure> {
    let method = method(&args.method)?;
    let policy = match &args.policy {
        Some(p) => Some(Policy::parse(p).map_err(|e| Failure::usage(e.to_string()))?),
        None => None,
    };
    let stdin_mode = args.files.len() == 1 && args.files[0].as_os_str() == "-";
    if !stdin_mode && args.out.is_none() {
        return Err(Failure::usage(
            "--out DIR is required unless the input is -",
        ));
    }
    if args.files.iter().any(|f| f.as_os_str() == "-") && !stdin_mode {
        return Err(Failure::usage("- must be the only input"));
    }
    let home = Home::from_env();
    let settings = Settings::load(&home)?;
    init_logging(&settings);
    let store = SecretStore::open(home.secrets_file());
    let key_hex = store
        .get_or_create("hash-key", || hex::encode(rand::random::<[u8; 32]>()))
        .map_err(|e| Failure::runtime(e.to_string()))?;
    let key = crate::deid::HashKey::from_hex(&key_hex)
        .map_err(|_| Failure::runtime("the stored hash key is corrupt"))?;
    let opts = DeidOptions {
        method,
        date_shift_days: args.date_shift_days,
        keep_year: false,
        keep_mapping: false,
        policy,
    };
    let rt = runtime()?;
    rt.block_on(async move {
        let engine = crate::server::build_engine(&settings, &home, Default::default())
            .map_err(|e| Failure::usage(e.to_string()))?;
        let id = engine.resolve(args.model.as_deref()).map_err(|_| {
            Failure::usage("the model is not installed (see `phiguard models list`)")
        })?;
        let call = |text: String| {
            let engine = Arc::clone(&engine);
            let id = id.clone();
            let opts = opts.clone();
            let key = key.clone();
            let threshold = args.threshold as f32;
            async move {
                let copts = CallOptions {
                    deadline: Deadline::unbounded(engine.guard.clock().now()),
                    fallback_rules: false,
                    keep_alive: None,
                };
                let det = engine
                    .detect(&id, Arc::from(text.as_str()), &copts)
                    .await
                    .map_err(|e| Failure::runtime(format!("detection failed: {e}")))?;
                let spans: Vec<_> = det
                    .spans
                    .into_iter()
                    .filter(|s| s.score >= threshold)
                    .collect();
                let mut d = Deidentifier::new(opts, &key, rand::rng());
                Ok::<String, Failure>(d.apply(&text, &spans).text)
            }
        };
        if stdin_mode {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|_| Failure::usage("stdin is not valid UTF-8 text"))?;
            let out = call(text).await?;
            std::io::stdout()
                .write_all(out.as_bytes())
                .map_err(|e| Failure::runtime(e.to_string()))?;
            return Ok(());
        }
        let out_dir = args.out.clone().unwrap_or_default();
        std::fs::create_dir_all(&out_dir)
            .map_err(|e| Failure::runtime(format!("cannot create {}: {e}", out_dir.display())))?;
        let bar = ProgressBar::new(args.files.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} files {elapsed_precise} eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let parallel = engine.pool.threads().max(1) * 2;
        let results: Vec<Result<(), Failure>> = futures::stream::iter(args.files.clone())
            .map(|path| {
                let out_dir = out_dir.clone();
                let call = &call;
                let bar = bar.clone();
                async move {
                    let text = std::fs::read_to_string(&path)
                        .map_err(|e| Failure::runtime(format!("{}: {e}", path.display())))?;
                    let out = call(text).await?;
                    let name = path
                        .file_name()
                        .map(PathBuf::from)
                        .unwrap_or_else(|| "out.txt".into());
                    std::fs::write(out_dir.join(name), out)
                        .map_err(|e| Failure::runtime(format!("{}: {e}", path.display())))?;
                    bar.inc(1);
                    Ok(())
                }
            })
            .buffer_unordered(parallel)
            .collect()
            .await;
        bar.finish();
        let failed: Vec<&Failure> = results.iter().filter_map(|r| r.as_ref().err()).collect();
        if let Some(f) = failed.first() {
            return Err(Failure::runtime(format!(
                "{} of {} files failed; first: {}",
                failed.len(),
                results.len(),
                f.message
            )));
        }
        Ok(())
    })
}
