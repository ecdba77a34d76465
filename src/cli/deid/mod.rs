//! `phiguard deid PATHS… --method M --out DIR`: de-identifies files and folders in-process
//! (the same engine, guard and transforms as the service) with a progress bar; `-` reads
//! stdin and writes stdout. `.json` and `.ndjson` files are FHIR R4 (a resource, a Bundle,
//! bulk NDJSON) and go through [`crate::fhir`] under `--fhir-profile`, as
//! `/fhir/deidentify` does; a `.json` file that is not FHIR is named and not written.
//! The FHIR files of one run are one export: their ids and references are re-pointed
//! under one key for the run, so a reference still resolves across files.
//! With `--columns`, `.csv`, `.tsv` and `.jsonl` files go through [`crate::tables`]:
//! the named columns by kind, the rest copied, the file's shape kept.
//!
//! This module decides what each file is, runs it through the engine and the transforms,
//! and prints the summary. Where each output goes and how it is written safely (the plan
//! made before any write, the checks below `--out`, links, the temporary-file write, the
//! folders a run creates) belongs to [`output`], which this module calls.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};

use super::{init_logging, runtime, Failure};
use crate::deid::{DeidOptions, Deidentifier, Method, Policy};
use crate::engine::CallOptions;
use crate::guard::Deadline;
use crate::secrets::SecretStore;
use crate::settings::{Home, Settings};

mod output;

use output::{folders_below_out, plan, read_regular, CreatedDirs, Plan};
// `eval` writes its predictions as `deid` writes an output.
pub(super) use output::{io_reason, write_output};

pub(super) struct Args {
    pub(super) files: Vec<PathBuf>,
    pub(super) method: String,
    pub(super) out: Option<PathBuf>,
    pub(super) model: Option<String>,
    pub(super) policy: Option<String>,
    pub(super) date_shift_days: Option<i64>,
    pub(super) threshold: f64,
    pub(super) glob: Option<String>,
    pub(super) force: bool,
    pub(super) subject: Option<String>,
    pub(super) subject_from: Option<String>,
    pub(super) fhir_profile: Option<String>,
    pub(super) columns: Option<String>,
    pub(super) subject_column: Option<String>,
}

/// How an input is read: FHIR JSON or NDJSON by its extension, text otherwise.
fn fhir_format(path: &Path) -> Option<crate::fhir::Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "json" => Some(crate::fhir::Format::Json),
        "ndjson" => Some(crate::fhir::Format::Ndjson),
        _ => None,
    }
}

/// Where each input's subject comes from.
enum Subjects {
    /// No subject: per-file randomness, as OpenMed.
    None,
    /// One subject for every input.
    One(crate::deid::SubjectKey),
    /// The first group of a regex over each input's path.
    FromPath(regex::Regex),
}

impl Subjects {
    /// The subject key of `path`.
    ///
    /// # Errors
    /// A fixed reason when the pattern does not match the path (the file is not written).
    fn of(
        &self,
        key: &crate::deid::HashKey,
        path: &Path,
    ) -> Result<Option<crate::deid::SubjectKey>, String> {
        match self {
            Subjects::None => Ok(None),
            Subjects::One(k) => Ok(Some(k.clone())),
            Subjects::FromPath(re) => re
                .captures(&path.to_string_lossy())
                .and_then(|c| c.get(1))
                .filter(|m| !m.as_str().is_empty())
                .map(|m| Some(key.subject(m.as_str())))
                .ok_or_else(|| "--subject-from does not match this path".to_string()),
        }
    }
}

pub(super) fn method(name: &str) -> Result<Method, Failure> {
    Method::from_wire(name).ok_or_else(|| {
        Failure::usage("--method must be mask, remove, replace, hash or shift_dates")
    })
}

/// Entities transformed in one file, by wire label (for the summary).
type LabelCounts = BTreeMap<&'static str, usize>;

/// The count, among a table's [`LabelCounts`], of `date` cells emptied because they are
/// not dates: a line of its own in the summary, not an entity.
const DATES_EMPTIED: &str = "table_date_cells_emptied";

/// The entities of each of `texts` at `threshold` or above (see
/// [`crate::engine::Engine::detect_document`]).
async fn detect_each(
    engine: &crate::engine::Engine,
    id: &str,
    texts: &[crate::fhir::Text],
    threshold: f32,
) -> Result<Vec<Vec<crate::detect::Span>>, String> {
    let shared: crate::engine::Texts = texts.iter().map(|t| Arc::from(t.text.as_str())).collect();
    let labels: Vec<bool> = texts.iter().map(|t| t.label).collect();
    engine
        .detect_document(id, shared, &labels, &file_call(engine), threshold)
        .await
        .map(|det| det.spans)
        .map_err(|e| format!("detection failed: {e}"))
}

/// How the CLI calls the engine: no deadline (a file takes what it takes), the model
/// or nothing (no degraded answer), the configured allow and deny lists.
fn file_call(engine: &crate::engine::Engine) -> CallOptions {
    CallOptions {
        deadline: Deadline::unbounded(engine.guard().clock().now()),
        fallback_rules: false,
        keep_alive: None,
        terms: None,
        configured_terms: true,
    }
}

/// The entities of `text` at `threshold` or above.
async fn detect_one(
    engine: &crate::engine::Engine,
    id: &str,
    text: &str,
    threshold: f32,
) -> Result<Vec<crate::detect::Span>, String> {
    let det = engine
        .detect(id, Arc::from(text), &file_call(engine))
        .await
        .map_err(|e| format!("detection failed: {e}"))?;
    Ok(det
        .spans
        .into_iter()
        .filter(|s| s.passes(threshold))
        .collect())
}

/// Watches for SIGINT and SIGTERM: the first sets the flag, so that the run starts no
/// more files, lets those in flight finish (their outputs are written whole, through a
/// temporary name) and then removes the folders it made and left empty and prints its
/// summary; a second ends the process at once (exit 130). Without this the default action
/// killed the run where it stood, leaving the empty folders it had made and no summary.
fn interruption() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    tokio::spawn(async move {
        signal().await;
        flag.store(true, Ordering::SeqCst);
        eprintln!(
            "phiguard deid: interrupted; finishing the files in progress (again to stop at once)"
        );
        signal().await;
        std::process::exit(130);
    });
    stop
}

/// The next SIGINT (Ctrl-C) or, on Unix, SIGTERM; never, when neither can be watched.
async fn signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
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
    if stdin_mode && args.out.is_some() {
        return Err(Failure::usage(
            "--out is not used with -: the result of - goes to standard output",
        ));
    }
    if args.files.iter().any(|f| f.as_os_str() == "-") && !stdin_mode {
        return Err(Failure::usage("- must be the only input"));
    }
    // A file's kind comes from its extension, which stdin has not: refused rather than
    // read as plain text, which would ignore the option and merge the table's cells.
    if stdin_mode {
        for (given, option) in [
            (args.columns.is_some(), "--columns"),
            (args.fhir_profile.is_some(), "--fhir-profile"),
        ] {
            if given {
                return Err(Failure::usage(format!(
                    "{option} needs input files (the extension tells the format), not -: \
                     stdin is read as plain text"
                )));
            }
        }
    }
    let glob = match &args.glob {
        Some(g) => Some(
            globset::Glob::new(g)
                .map_err(|e| Failure::usage(format!("--glob: {e}")))?
                .compile_matcher(),
        ),
        None => None,
    };
    let out_dir = args.out.clone().unwrap_or_default();
    // The plan comes before the model loads: a refusal costs nothing and writes nothing.
    let plan = if stdin_mode {
        Plan::default()
    } else {
        plan(&args.files, &out_dir, glob.as_ref(), args.force)?
    };
    let home = Home::from_env();
    let settings = Settings::load(&home)?;
    init_logging(&settings);
    let store = SecretStore::open(home.secrets_file());
    let key_hex = store
        .key(
            "hash-key",
            settings.get(crate::settings::keys::SECURITY_HASH_KEY),
        )
        .map_err(|e| Failure::runtime(e.to_string()))?;
    let key = crate::deid::HashKey::from_hex(&key_hex)
        .map_err(|_| Failure::runtime("the stored hash key is corrupt"))?;
    let subjects = match (&args.subject, &args.subject_from) {
        (Some(s), _) if s.is_empty() => return Err(Failure::usage("--subject must not be empty")),
        (Some(s), _) => Subjects::One(key.subject(s)),
        (None, Some(p)) => {
            let re = regex::Regex::new(p)
                .map_err(|_| Failure::usage("--subject-from is not a valid regex"))?;
            // Two groups were taken as the first: `(patients)/(p\d+)/` gave every patient
            // the subject `patients`, one date offset and one set of surrogates for all.
            if re.captures_len() != 2 {
                return Err(Failure::usage(
                    "--subject-from needs exactly one group, e.g. 'patients/([^/]+)/' (write others as (?:…))",
                ));
            }
            Subjects::FromPath(re)
        }
        (None, None) => Subjects::None,
    };
    if stdin_mode && matches!(subjects, Subjects::FromPath(_)) {
        return Err(Failure::usage("--subject-from needs input paths, not -"));
    }
    let fhir_profile = match &args.fhir_profile {
        Some(name) => Some(crate::fhir::Profile::parse(name).ok_or_else(|| {
            Failure::usage(format!(
                "--fhir-profile must be one of: {}",
                crate::fhir::Profile::NAMES.join(", ")
            ))
        })?),
        None => None,
    };
    let fhir_profile = settings
        .fhir_profile(fhir_profile)
        .map_err(|e| Failure::usage(format!("fhir.actions: {e}")))?;
    let columns = match &args.columns {
        Some(spec) => {
            Some(crate::tables::Columns::parse(spec).map_err(|e| Failure::usage(e.to_string()))?)
        }
        None => None,
    };
    let opts = DeidOptions {
        method,
        date_shift_days: args.date_shift_days,
        keep_year: false,
        keep_mapping: false,
        policy,
        reference_year: None,
        subject: None,
        dates: None,
        shifted_years: false,
    };
    let rt = runtime()?;
    rt.block_on(async move {
        let started = Instant::now();
        let (engine, id) =
            super::engine_with_model(&settings, &home, args.model.as_deref()).await?;
        let call = |text: String, subject: Option<crate::deid::SubjectKey>| {
            let engine = Arc::clone(&engine);
            let id = id.clone();
            let opts = DeidOptions {
                subject,
                ..opts.clone()
            };
            let key = key.clone();
            let threshold = args.threshold as f32;
            async move {
                let spans = detect_one(&engine, &id, &text, threshold).await?;
                let mut d = Deidentifier::new(opts, &key, rand::rng());
                let out = d.apply(&text, &spans);
                let mut entities = BTreeMap::new();
                for r in &out.replacements {
                    *entities.entry(r.span.label.wire()).or_insert(0) += 1;
                }
                Ok::<(String, LabelCounts), String>((out.text, entities))
            }
        };
        // The FHIR files of a run are one export (a bulk export is a folder of NDJSON files,
        // one per resource type): their ids are re-pointed under one key, drawn for the run
        // and never written, so a reference in one file resolves to a resource of another.
        // Offsets and surrogates agree too: they derive from the patient's id under the
        // per-install key.
        let fhir_id_key = crate::fhir::IdKey::random();
        // A FHIR document: its free text in one engine call, its structure by the profile.
        let call_fhir = |text: String,
                         subject: Option<crate::deid::SubjectKey>,
                         format: crate::fhir::Format| {
            let engine = Arc::clone(&engine);
            let id = id.clone();
            let key = key.clone();
            let threshold = args.threshold as f32;
            let options = crate::fhir::Options {
                profile: fhir_profile.clone(),
                subject,
                date_shift_days: args.date_shift_days,
                reference_year: None,
                id_key: Some(fhir_id_key.clone()),
            };
            async move {
                let mut doc =
                    crate::fhir::Document::parse(&text, format, crate::fhir::Limits::default())
                        .map_err(|e| e.to_string())?;
                let texts = doc.texts(&options.profile);
                let spans = detect_each(&engine, &id, &texts, threshold).await?;
                let stats = doc.deidentify(&texts, &spans, &key, &options);
                let mut done = LabelCounts::new();
                done.insert("fhir_text_entities", stats.text_entities);
                done.insert("fhir_elements", stats.elements);
                Ok::<(String, LabelCounts), String>((doc.write(), done))
            }
        };
        // A table by column: its text cells in one engine call, the rest by kind.
        let call_table = |text: String,
                          subject: Option<crate::deid::SubjectKey>,
                          format: crate::tables::Format,
                          columns: crate::tables::Columns| {
            let engine = Arc::clone(&engine);
            let id = id.clone();
            let key = key.clone();
            let threshold = args.threshold as f32;
            let opts = opts.clone();
            let subject_column = args.subject_column.clone();
            async move {
                let mut table =
                    crate::tables::Table::read(&text, format, &columns, subject_column.as_deref())
                        .map_err(|e| e.to_string())?;
                let texts: Vec<crate::fhir::Text> = table
                    .texts()
                    .into_iter()
                    .map(|text| crate::fhir::Text { text, label: false })
                    .collect();
                let spans = detect_each(&engine, &id, &texts, threshold).await?;
                let changed = table.deidentify(&spans, &key, &opts, subject);
                let mut done = LabelCounts::new();
                done.insert("table_cells_changed", changed);
                if table.dates_emptied() > 0 {
                    done.insert(DATES_EMPTIED, table.dates_emptied());
                }
                Ok::<(String, LabelCounts), String>((
                    table.write().map_err(|e| e.to_string())?,
                    done,
                ))
            }
        };
        if stdin_mode {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|_| Failure::usage("stdin is not valid UTF-8 text"))?;
            let subject = subjects.of(&key, Path::new("-")).map_err(Failure::usage)?;
            let (out, _) = call(text, subject).await.map_err(Failure::runtime)?;
            std::io::stdout()
                .write_all(out.as_bytes())
                .map_err(|e| Failure::runtime(e.to_string()))?;
            return Ok(());
        }
        let created = CreatedDirs::default();
        created.create_out(&out_dir).map_err(|e| {
            Failure::runtime(format!(
                "cannot create {}: {}",
                out_dir.display(),
                io_reason(&e)
            ))
        })?;
        // A table read as text may lose its shape (a row id masked as an age, a JSON line
        // no longer JSON): documented, and said here where it happens, without names.
        if columns.is_none() {
            let tables = plan
                .jobs
                .iter()
                .filter_map(|j| j.input.extension()?.to_str())
                .filter(|ext| crate::tables::Format::of_extension(ext).is_some())
                .count();
            if tables > 0 {
                eprintln!(
                    "phiguard deid: {tables} table file(s) (.csv, .tsv, .jsonl) read as plain text, so their structure may change; --columns NAME=KIND,... keeps it (phiguard deid --help)"
                );
            }
        }
        let bar = ProgressBar::new(plan.jobs.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} files {elapsed_precise} eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let stop = interruption();
        // Enough files in flight for every worker to fill a batch: the worker pool runs the
        // queued texts of one model as one packed pass (see `engine::workers`).
        let parallel = engine.inference_threads().max(1) * engine.max_batch().max(2);
        let force = args.force;
        // `None`: not started, the run was interrupted first.
        let results: Vec<(PathBuf, Option<Result<LabelCounts, String>>)> =
            futures::stream::iter(plan.jobs.clone())
                .map(|job| {
                    let dest = out_dir.join(&job.output);
                    let call = &call;
                    let call_fhir = &call_fhir;
                    let call_table = &call_table;
                    let columns = &columns;
                    let subjects = &subjects;
                    let key = &key;
                    let created = &created;
                    let out_dir = &out_dir;
                    let bar = bar.clone();
                    let stop = &stop;
                    async move {
                        // After SIGINT/SIGTERM no file is started; those in flight finish.
                        if stop.load(Ordering::SeqCst) {
                            return (job.input, None);
                        }
                        let result = async {
                            let subject = subjects.of(key, &job.input)?;
                            let bytes = read_regular(&job.input)?;
                            let text = String::from_utf8(bytes)
                                .map_err(|_| "not UTF-8 text".to_string())?;
                            let table = columns.as_ref().and_then(|c| {
                                let ext = job.input.extension()?.to_str()?;
                                Some((crate::tables::Format::of_extension(ext)?, c.clone()))
                            });
                            let (out, done) = match (table, fhir_format(&job.input)) {
                                (Some((format, c)), _) => {
                                    call_table(text, subject, format, c).await?
                                }
                                (None, Some(format)) => call_fhir(text, subject, format).await?,
                                (None, None) => call(text, subject).await?,
                            };
                            let cannot_write = |e: std::io::Error| {
                                format!("cannot write {}: {}", dest.display(), io_reason(&e))
                            };
                            folders_below_out(out_dir, &job.output, Some(created))?;
                            write_output(&dest, out.as_bytes(), force).map_err(cannot_write)?;
                            Ok(done)
                        }
                        .await;
                        bar.inc(1);
                        (job.input, Some(result))
                    }
                })
                .buffer_unordered(parallel)
                .collect()
                .await;
        bar.finish_and_clear();
        created.remove_empty();

        let mut entities: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut written = 0usize;
        let mut failed: Vec<(PathBuf, String)> = plan.skipped;
        let mut emptied: Vec<(PathBuf, usize)> = Vec::new();
        let mut not_started = 0usize;
        for (input, r) in results {
            match r {
                None => not_started += 1,
                Some(Ok(mut done)) => {
                    written += 1;
                    if let Some(n) = done.remove(DATES_EMPTIED) {
                        emptied.push((input, n));
                    }
                    for (label, n) in done {
                        *entities.entry(label).or_insert(0) += n;
                    }
                }
                Some(Err(reason)) => failed.push((input, reason)),
            }
        }
        failed.sort();
        // With nothing written, the output folder the run made is gone again: say so rather
        // than name a folder that does not exist.
        let whereto = if written == 0 && !out_dir.exists() {
            format!("(no output folder left at {})", out_dir.display())
        } else {
            format!("to {}", out_dir.display())
        };
        let mut summary = format!(
            "phiguard deid: {written} file(s) written {whereto} in {:.1} s, {} failed\n",
            started.elapsed().as_secs_f64(),
            failed.len()
        );
        let total: usize = entities.values().sum();
        summary.push_str(&format!("entities: {total}"));
        for (label, n) in &entities {
            summary.push_str(&format!(", {label} {n}"));
        }
        summary.push('\n');
        emptied.sort();
        for (path, n) in &emptied {
            summary.push_str(&format!(
                "emptied: {}: {n} date cell(s) that are not dates\n",
                path.display()
            ));
        }
        for (path, reason) in &failed {
            summary.push_str(&format!("failed: {}: {reason}\n", path.display()));
        }
        for (again, first) in &plan.twice {
            summary.push_str(&format!(
                "done once: {} is the same file as {} (a link): written once, under the latter's name\n",
                again.display(),
                first.display()
            ));
        }
        if plan.not_matched > 0 {
            summary.push_str(&format!(
                "not matched: {} file(s) in the input folders do not match --glob (which tells case apart)\n",
                plan.not_matched
            ));
        }
        let interrupted = stop.load(Ordering::SeqCst);
        if interrupted {
            summary.push_str(&format!(
                "interrupted: {not_started} file(s) not started; every file written is whole\n"
            ));
        }
        eprint!("{summary}");
        if interrupted {
            Err(Failure::interrupted("interrupted by a signal"))
        } else if failed.is_empty() {
            Ok(())
        } else {
            Err(Failure::runtime(format!(
                "{} of {} file(s) failed (listed above)",
                failed.len(),
                written + failed.len()
            )))
        }
    })
}
