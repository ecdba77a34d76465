//! The `phiguard` command line: clap definitions here, one file per sub-command.
//!
//! `main` maps errors to exit codes in one place: 0 success, 1 runtime failure, 2 usage or
//! configuration error (clap's own usage errors also exit 2).

mod deid;
mod eval_cmd;
mod models_cmd;
mod serve;
mod settings_cmd;
mod token;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::settings::keys;

/// The confidence threshold of `deid` and `eval`: the default of `/pii/deidentify`
/// (OpenMed's), so the CLI de-identifies and scores what the service does.
const DEID_THRESHOLD: f64 = 0.7;

/// Parses a confidence or a recall: a finite number from 0 to 1, the range
/// `confidence_threshold` has in the HTTP API (`server::validate::read::unit_interval`).
/// Anything else is a usage error: a threshold above 1 (or NaN) would keep no model span
/// and silently let the text through, a recall gate of NaN would pass anything.
fn unit_interval(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err("must be a number from 0 to 1".into()),
    }
}

/// `--date-shift-days`: the rule `/fhir/deidentify` applies ([`crate::deid::usable_shift_days`]).
/// Before, `0` was taken and every date came out as it went in, with exit 0.
fn shift_days(s: &str) -> Result<i64, String> {
    match s.trim().parse::<i64>() {
        Ok(v) if crate::deid::usable_shift_days(v) => Ok(v),
        _ => Err(format!(
            "must be a whole number of days from -{max} to {max}, not 0 (0 would leave every date as it was)",
            max = crate::deid::MAX_SHIFT_DAYS
        )),
    }
}

/// Local-first clinical de-identification service.
#[derive(Debug, Parser)]
#[command(name = "phiguard", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP service (headless).
    Serve {
        /// Address to bind (PHIGUARD_HOST).
        #[arg(long)]
        host: Option<String>,
        /// Port to bind, 0 for any free port (PHIGUARD_PORT).
        #[arg(long)]
        port: Option<u16>,
        /// Serve the dashboard at /ui/ (PHIGUARD_UI).
        #[arg(long)]
        ui: bool,
    },
    /// De-identify files and folders (or `-` for stdin → stdout) without a server.
    ///
    /// Folders are read recursively and mirrored below --out; a file lands as
    /// --out/<its name>. Links inside folders are followed (the output keeps the link's own
    /// path). Nothing is written when an output would overwrite an input or two inputs share
    /// an output, or when an output exists, a dangling link included (unless --force).
    /// Outputs are written only under --out: a link below it is never written through (the
    /// file whose output it would hold fails).
    /// Missing or unreadable paths, dangling links, link loops and named pipes, sockets and
    /// devices (never opened) are named and skipped; the exit code is then 1. A folder the
    /// run created (--out included) and left empty is removed.
    Deid {
        /// Input files and folders; `-` reads stdin and writes stdout, as plain text
        /// (--columns and --fhir-profile need files: they are refused with `-`).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// mask, remove, replace, hash or shift_dates (not with --policy, which sets the
        /// action for each kind of PHI itself).
        #[arg(long, default_value = "mask", conflicts_with = "policy")]
        method: String,
        /// Output folder (required unless the input is `-`, refused with it).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Model id or alias (default: the configured default model).
        #[arg(long)]
        model: Option<String>,
        /// Policy, e.g. hipaa_safe_harbor: the action for each kind of PHI (so not with
        /// --method).
        #[arg(long)]
        policy: Option<String>,
        /// Days to shift dates by (with --method shift_dates): not 0, at most 36500 either way.
        #[arg(long, value_parser = shift_days, allow_hyphen_values = true)]
        date_shift_days: Option<i64>,
        /// Minimum confidence of model spans, from 0 to 1 (the default of /pii/deidentify).
        #[arg(long, default_value_t = DEID_THRESHOLD, value_parser = unit_interval, allow_hyphen_values = true)]
        threshold: f64,
        /// Only files in the input folders whose path below the folder matches this glob
        /// (e.g. `*.txt`, `**/notes/*.md`); files named directly are always taken.
        #[arg(long)]
        glob: Option<String>,
        /// Overwrite outputs that already exist (never an input; a link there is replaced,
        /// not written through).
        #[arg(long)]
        force: bool,
        /// The patient or study subject of every input: `replace` gives the same surrogate
        /// for the same value in every file (and every run), and dates move by the
        /// subject's own offset (unless --date-shift-days is set).
        #[arg(long, conflicts_with = "subject_from")]
        subject: Option<String>,
        /// A regex with one group over each input's path that names its subject, e.g.
        /// `patients/([^/]+)/` for one folder per patient; a path it does not match fails.
        #[arg(long, value_name = "PATTERN")]
        subject_from: Option<String>,
        /// How `.json` and `.ndjson` inputs (FHIR R4 resources, Bundles, bulk NDJSON) are
        /// de-identified: hipaa_safe_harbor (default) or pseudonymize. --method and
        /// --policy apply to the other files.
        #[arg(long, value_name = "PROFILE")]
        fhir_profile: Option<String>,
        /// De-identify `.csv`, `.tsv` and `.jsonl` inputs by column: `NAME=KIND,…` with
        /// KIND text (through the engine), id (keyed pseudonym), date (shifted) or redact;
        /// other columns are copied. Without it those files are read as plain text. A name
        /// given twice is refused; a name the header repeats is handled in every place. A
        /// CSV/TSV row with more fields than the header fails the file (its line named).
        /// date reads ISO timestamps (time and zone kept), `20210304`, weekdays and month
        /// names, keeps a year alone, and empties a cell that is not a date (counted in the
        /// summary). In .jsonl a number or boolean is handled as its JSON text (written
        /// back as a string when changed), redact empties any value, and an array or object
        /// under text, id or date fails the file (line and column named); null stays null.
        #[arg(long, value_name = "SPEC")]
        columns: Option<String>,
        /// The column naming each row's subject (one date offset and one set of
        /// surrogates per subject, in every file); needs --columns.
        #[arg(long, value_name = "NAME", requires = "columns")]
        subject_column: Option<String>,
    },
    /// Score the engine against gold-annotated notes.
    Eval {
        /// Gold file: JSONL of {"text","gold_spans":[{start,end,label}]} or {"text","spans":[{begin,end,label}]}.
        #[arg(long)]
        gold: PathBuf,
        /// Model id or alias.
        #[arg(long)]
        model: Option<String>,
        /// Method used for the leak rate.
        #[arg(long, default_value = "mask")]
        method: String,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Exit 1 when overall character recall is below this (from 0 to 1), or when the
        /// gold file holds no gold span (nothing to recall).
        #[arg(long, value_parser = unit_interval, allow_hyphen_values = true)]
        min_recall: Option<f64>,
        /// Foreign label -> canonical label map (TOML or JSON). phiguard's and OpenMed's
        /// labels need none; a label no vocabulary knows is scored as its own category,
        /// with a warning.
        #[arg(long)]
        label_map: Option<PathBuf>,
        /// Minimum confidence of model spans, from 0 to 1 (as `deid` and /pii/deidentify).
        #[arg(long, default_value_t = DEID_THRESHOLD, value_parser = unit_interval, allow_hyphen_values = true)]
        threshold: f64,
        /// Which recognizers to score: the model alone, the rules alone, or both merged.
        #[arg(long, default_value = "both", value_parser = ["both", "model", "rules"])]
        detectors: String,
        /// Also write each document's predicted spans (JSON Lines: index, start, end, label,
        /// score, source; no text) for error analysis. Never the gold file or the label
        /// map; an existing file only with --force.
        #[arg(long)]
        predictions: Option<PathBuf>,
        /// Overwrite the --predictions file if it exists (never an input).
        #[arg(long)]
        force: bool,
    },
    /// Manage models: the catalog, downloads, imports.
    Models {
        #[command(subcommand)]
        action: ModelsAction,
    },
    /// Show, rotate, create or list API tokens.
    Token {
        #[command(subcommand)]
        action: TokenAction,
    },
    /// List, read or change settings (settings.toml; environment variables win).
    Settings {
        #[command(subcommand)]
        action: SettingsAction,
    },
}

#[derive(Debug, Subcommand)]
enum ModelsAction {
    /// The catalog and the installed models.
    List,
    /// Download a catalog model from the Hugging Face Hub (HF_ENDPOINT).
    Pull {
        /// Catalog id or alias.
        id: String,
    },
    /// Add a local model folder (safetensors + config.json + tokenizer.json).
    Import {
        /// The folder.
        dir: PathBuf,
        /// Id to install it under (default: the folder name).
        #[arg(long)]
        id: Option<String>,
    },
    /// Remove an installed model.
    Rm {
        /// Installed id.
        id: String,
    },
    /// Re-hash an installed model's files against its manifest.
    Verify {
        /// Installed id.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
enum TokenAction {
    /// Print the client token (or the admin token with --admin).
    Show {
        /// Print the admin token instead.
        #[arg(long)]
        admin: bool,
    },
    /// Replace the client token (or the admin token with --admin) and print the new one.
    ///
    /// Running services on this home (and the desktop app) accept the new token and refuse
    /// the old one within a few seconds, without a restart. A token set by
    /// PHIGUARD_AUTH_TOKEN / PHIGUARD_ADMIN_TOKEN is changed there instead.
    Rotate {
        /// Replace the admin token instead.
        #[arg(long)]
        admin: bool,
    },
    /// Create a labelled token and print it (it is shown this once).
    ///
    /// Running services on this home accept it within a few seconds. With --expires-in it
    /// is refused from then on (`invalid_credentials`) and listed as expired.
    Create {
        /// A name for people (at most 80 characters, no line breaks or other control characters).
        #[arg(long, default_value = "")]
        label: String,
        /// An admin token instead of a client (inference) one.
        #[arg(long)]
        admin: bool,
        /// Lifetime: `30d`, `12h`, `1h30m`, `90s`, or seconds (at most ten years); without
        /// it the token does not expire.
        #[arg(long, value_name = "DURATION")]
        expires_in: Option<String>,
    },
    /// List the tokens: id, scope, expiry and label (never the tokens themselves).
    List,
}

#[derive(Debug, Subcommand)]
enum SettingsAction {
    /// Every setting: effective value (automatic ones worked out), source, description and
    /// variables, wrapped to the terminal width ($COLUMNS, else 100).
    List {
        /// Print a JSON array of objects (key, env, alias, value, auto, source, default, type,
        /// rule, description, restart, secret) instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Print the settings reference as Markdown (docs/settings.md is this output).
    Docs,
    /// One setting's value.
    Get {
        /// Key, e.g. retry.max_attempts.
        key: String,
    },
    /// Change a setting in settings.toml.
    Set {
        /// Key, e.g. retry.max_attempts.
        key: String,
        /// Value in the same form as the environment variable.
        value: String,
    },
}

/// The engine of `deid` and `eval`, and the id of the model they run (`model`, else the
/// default), loaded before the command reads or writes any file: a model that does not load
/// (a damaged file, say) is one failure naming the model and the reason, not one "detection
/// failed" per input.
pub(crate) async fn engine_with_model(
    settings: &crate::settings::Settings,
    home: &crate::settings::Home,
    model: Option<&str>,
) -> Result<(std::sync::Arc<crate::engine::Engine>, String), Failure> {
    let engine = crate::runtime::build_engine(settings, home, Default::default())
        .map_err(|e| Failure::usage(e.to_string()))?;
    let id = engine
        .resolve(model)
        .map_err(|_| Failure::usage("the model is not installed (see `phiguard models list`)"))?;
    engine.preload(&id).await.map_err(|why| {
        Failure::runtime(format!(
            "the model {id} cannot be loaded: {why}; check it with `phiguard models verify \
             {id}`, or pull or import it again"
        ))
    })?;
    Ok((engine, id))
}

/// Appends the record of an admin action taken at the command line (`actor` `cli`, no
/// peer) to the home's audit log, as the admin API records its own: `ok`, or for a refusal
/// `refused` (usage) or `error`. A failure to write is a warning only: the action has
/// happened.
pub(crate) fn audit(
    home: &crate::settings::Home,
    action: crate::server::audit::Action,
    outcome: &Result<(), Failure>,
) {
    use crate::server::audit::{audit_file, AuditLog};
    let max = crate::settings::Settings::load(home)
        .map(|s| s.get(keys::SECURITY_AUDIT_MAX_BYTES).max(0) as u64)
        .unwrap_or(10 << 20);
    let result = match outcome {
        Ok(()) => "ok",
        Err(f) if f.code == 2 => "refused",
        Err(_) => "error",
    };
    let rec = action.into_record("cli", None, result);
    if AuditLog::new(audit_file(home), max).append(&rec).is_err() {
        eprintln!("phiguard: warning: could not write the audit log");
    }
}

/// A failure with its exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: 2,
            message: message.into(),
        }
    }

    pub(crate) fn runtime(message: impl Into<String>) -> Self {
        Failure {
            code: 1,
            message: message.into(),
        }
    }

    /// A run stopped by SIGINT or SIGTERM after it cleaned up: exit 130, as a shell reports
    /// a process that Ctrl-C ended.
    pub(crate) fn interrupted(message: impl Into<String>) -> Self {
        Failure {
            code: 130,
            message: message.into(),
        }
    }
}

impl From<crate::settings::SettingsError> for Failure {
    fn from(e: crate::settings::SettingsError) -> Self {
        Failure::usage(e.to_string())
    }
}

/// Entry point used by `src/main.rs`.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let serve = matches!(cli.command, Command::Serve { .. });
    // Parallelism comes from the inference worker threads, each running whole batches with
    // single-threaded candle ops; set before any other thread exists.
    crate::inference::init_cpu_threads(1);
    let result = match cli.command {
        Command::Serve { host, port, ui } => serve::run(host, port, ui),
        Command::Deid {
            files,
            method,
            out,
            model,
            policy,
            date_shift_days,
            threshold,
            glob,
            force,
            subject,
            subject_from,
            fhir_profile,
            columns,
            subject_column,
        } => deid::run(deid::Args {
            files,
            method,
            out,
            model,
            policy,
            date_shift_days,
            threshold,
            glob,
            force,
            subject,
            subject_from,
            fhir_profile,
            columns,
            subject_column,
        }),
        Command::Eval {
            gold,
            model,
            method,
            json,
            min_recall,
            label_map,
            threshold,
            detectors,
            predictions,
            force,
        } => eval_cmd::run(eval_cmd::Args {
            gold,
            model,
            method,
            json,
            min_recall,
            label_map,
            threshold,
            detectors,
            predictions,
            force,
        }),
        Command::Models { action } => match action {
            ModelsAction::List => models_cmd::list(),
            ModelsAction::Pull { id } => models_cmd::pull(&id),
            ModelsAction::Import { dir, id } => models_cmd::import(&dir, id.as_deref()),
            ModelsAction::Rm { id } => models_cmd::rm(&id),
            ModelsAction::Verify { id } => models_cmd::verify(&id),
        },
        Command::Token { action } => match action {
            TokenAction::Show { admin } => token::show(admin),
            TokenAction::Rotate { admin } => token::rotate(admin),
            TokenAction::Create {
                label,
                admin,
                expires_in,
            } => token::create(&label, admin, expires_in.as_deref()),
            TokenAction::List => token::list(),
        },
        Command::Settings { action } => match action {
            SettingsAction::List { json } => settings_cmd::list(json),
            SettingsAction::Docs => settings_cmd::docs(),
            SettingsAction::Get { key } => settings_cmd::get(&key),
            SettingsAction::Set { key, value } => settings_cmd::set(&key, &value),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            // Start-up and configuration failures name settings, files and ports, never
            // request text.
            if serve && serve_logs_json() {
                if crate::logging::json_logs() {
                    tracing::error!(error = %f.message, exit_code = f.code, "phiguard stopped");
                } else {
                    eprintln!("{}", fatal_json(&f.message, f.code));
                }
            } else {
                eprintln!("phiguard: {}", f.message);
            }
            ExitCode::from(f.code)
        }
    }
}

/// Whether `serve`'s fatal error is a JSON log line: the service logs JSON by default, and a
/// headless service's log pipeline parses JSON, so its last words must be JSON too (a port
/// in use or a bad setting was a plain `phiguard: …` line it dropped). Once logging runs,
/// its format decides; before (a setting that does not parse stops start-up before
/// logging can start), the log format's variable does, JSON where it is unset. The other
/// commands talk to a person at a terminal and stay plain.
fn serve_logs_json() -> bool {
    if crate::logging::json_logs() {
        return true;
    }
    if tracing::dispatcher::has_been_set() {
        return false;
    }
    let env = keys::SERVER_LOG_FORMAT;
    std::iter::once(env.env())
        .chain(env.def().alias)
        .find_map(|v| std::env::var(v).ok().filter(|v| !v.is_empty()))
        .is_none_or(|v| v.trim().eq_ignore_ascii_case("json"))
}

/// A fatal error as one line in the shape of the JSON logs, for when they have not started.
fn fatal_json(message: &str, code: u8) -> String {
    serde_json::json!({
        "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "level": "ERROR",
        "fields": {"message": "phiguard stopped", "error": message, "exit_code": code},
        "target": "phiguard::cli",
    })
    .to_string()
}

/// Sets up logging from the settings (JSON or plain, level) on stderr. Logs never carry
/// request text: third-party crates are capped at `warn` whatever the level or `RUST_LOG`
/// (see [`crate::logging`]); plain lines are coloured only on a terminal.
pub(crate) fn init_logging(s: &crate::settings::Settings) {
    let rust_log = std::env::var("RUST_LOG").ok();
    let cfg = crate::logging::LogConfig {
        level: s.get(keys::SERVER_LOG_LEVEL),
        rust_log: rust_log.as_deref(),
        json: s.get(keys::SERVER_LOG_FORMAT) == "json",
        ansi: crate::logging::stderr_is_a_colour_terminal(),
    };
    crate::logging::init(&cfg, std::io::stderr);
}

/// The async runtime for sub-commands that need one.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("cannot start the runtime: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_interval_takes_finite_numbers_from_0_to_1_only() {
        for ok in ["0", "1", "0.7", " 0.5 ", "1e-3", "-0"] {
            assert!(unit_interval(ok).is_ok(), "{ok}");
        }
        for bad in [
            "1.5", "-1", "-0.01", "nan", "NaN", "inf", "-inf", "", "x", "2",
        ] {
            assert!(unit_interval(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn shift_days_takes_non_zero_whole_days_within_a_century() {
        for (ok, v) in [
            ("1", 1),
            ("-1", -1),
            (" 10 ", 10),
            ("36500", 36_500),
            ("-36500", -36_500),
        ] {
            assert_eq!(shift_days(ok), Ok(v), "{ok}");
        }
        for bad in [
            "0",
            "-0",
            "36501",
            "-36501",
            "1.5",
            "",
            "x",
            "99999999999999999999",
            "-9223372036854775808",
            "9223372036854775807",
        ] {
            let err = shift_days(bad).expect_err(bad);
            assert!(err.contains("not 0"), "{bad}: {err}");
        }
    }
}
