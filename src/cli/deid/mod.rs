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
//! # Why a plan before any write
//! The inputs are a researcher's originals, often the only copy. Every output path is
//! decided before the first file is read, and the run is refused, with nothing written,
//! when an output would be an input (an `--out` that is an input folder, a link to an
//! input), when two inputs would land on one output, or when an output exists and
//! `--force` was not given. Folders are read recursively and mirrored below `--out`;
//! a file named on the command line lands as `--out/<its name>`. A path that is missing or
//! unreadable, or that is neither a file nor a folder (a named pipe, a socket, a device:
//! never opened, so a pipe cannot block the run), is named and skipped, the rest still
//! run, and the exit code is 1.
//! Each output is written to a temporary name beside it and moved into place, so an
//! interrupted run never leaves a half-written file under an output name. The folders a
//! run creates (`--out` included) and leaves empty, because every file in them failed or
//! there was none, are removed at the end; a folder that was there before is kept.
//!
//! # Links
//! Links inside an input folder are followed: a linked file or folder is de-identified
//! like any other, under the link's own path below `--out`, and a file reached twice (by
//! its own path and through a link) is done once. A link whose target is missing, or a
//! loop, is named as failed (exit 1) rather than skipped in silence. An output name that
//! exists as a link, even a dangling one, is an existing output: refused without
//! `--force`, refused with it when the link leads to an input, and otherwise replaced by
//! the new file, never written through (the link's target is left as it is). Below `--out`
//! a link is never followed either: a folder on an output's path that is a link (even to
//! a folder) or not a folder fails that file, named with the output's path below `--out`,
//! so nothing is written outside `--out` (`--out` itself may be a link: the user named
//! it). Temporary files are made new, with random names, so a link at one is not followed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
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

/// One file to de-identify and where its output goes (relative to `--out`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Job {
    input: PathBuf,
    output: PathBuf,
}

/// Every output decided up front, and the paths that could not be read.
#[derive(Debug, Default)]
struct Plan {
    jobs: Vec<Job>,
    skipped: Vec<(PathBuf, String)>,
}

/// How many paths a refusal lists before "and N more".
const LIST_AT_MOST: usize = 5;

fn listing<T>(items: &[T], show: impl Fn(&T) -> String) -> String {
    let mut s: Vec<String> = items.iter().take(LIST_AT_MOST).map(show).collect();
    if items.len() > LIST_AT_MOST {
        s.push(format!("and {} more", items.len() - LIST_AT_MOST));
    }
    s.join("; ")
}

/// The key two outputs collide on: the path itself, case-folded where the usual file
/// systems ignore case.
fn collision_key(p: &Path) -> String {
    let s = p.to_string_lossy().into_owned();
    if cfg!(any(target_os = "macos", target_os = "windows")) {
        s.to_lowercase()
    } else {
        s
    }
}

pub(super) fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// Why a folder entry cannot be read: a link whose target is missing, a link loop, or the
/// I/O error.
fn walk_reason(e: &walkdir::Error) -> String {
    if e.loop_ancestor().is_some() {
        return "a link loop (it leads back to a folder above it)".into();
    }
    let dangling = e
        .path()
        .and_then(|p| p.symlink_metadata().ok())
        .is_some_and(|m| m.file_type().is_symlink());
    match e.io_error() {
        Some(io) if dangling && io.kind() == std::io::ErrorKind::NotFound => {
            "a link whose target is missing".into()
        }
        Some(io) => io_reason(io),
        None => "cannot be read".into(),
    }
}

/// Why an input that is neither a file nor a folder is not read: a named pipe would block
/// the run until a writer came, and a socket or a device is not a note. It is never
/// opened, only named as failed, like a path that cannot be read.
fn not_a_file(kind: std::fs::FileType) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let what = if kind.is_fifo() {
            "a named pipe"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_block_device() || kind.is_char_device() {
            "a device"
        } else {
            "neither a file nor a folder"
        };
        format!("not a regular file ({what})")
    }
    #[cfg(not(unix))]
    {
        let _ = kind;
        "not a regular file".into()
    }
}

/// Reads an input planned as a regular file without blocking if a named pipe has taken its
/// name since the plan (`O_NONBLOCK` on unix, no effect on a regular file), and refuses
/// what the opened handle shows is not a regular file.
fn read_regular(path: &Path) -> Result<Vec<u8>, String> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let mut f = opts.open(path).map_err(|e| io_reason(&e))?;
    let meta = f.metadata().map_err(|e| io_reason(&e))?;
    if !meta.is_file() {
        return Err(not_a_file(meta.file_type()));
    }
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(|e| io_reason(&e))?;
    Ok(bytes)
}

/// Decides every output; refuses (usage error, nothing written) when an output would
/// overwrite an input, two inputs share an output, or an output exists without `force`.
fn plan(
    inputs: &[PathBuf],
    out: &Path,
    glob: Option<&globset::GlobMatcher>,
    force: bool,
) -> Result<Plan, Failure> {
    if out.exists() && !out.is_dir() {
        return Err(Failure::usage(format!(
            "--out {} exists and is not a folder",
            out.display()
        )));
    }
    let out_canon = out.canonicalize().ok();
    let mut plan = Plan::default();
    let mut seen_inputs: HashSet<PathBuf> = HashSet::new();
    for arg in inputs {
        let meta = match std::fs::metadata(arg) {
            Ok(m) => m,
            Err(e) => {
                plan.skipped.push((arg.clone(), io_reason(&e)));
                continue;
            }
        };
        if meta.is_dir() {
            let arg_canon = arg
                .canonicalize()
                .map_err(|e| Failure::runtime(format!("{}: {}", arg.display(), io_reason(&e))))?;
            if out_canon.as_ref() == Some(&arg_canon) {
                return Err(Failure::usage(format!(
                    "--out {} is the input folder {}: the outputs would overwrite the originals; choose another folder",
                    out.display(),
                    arg.display()
                )));
            }
            // Links are followed (walkdir names a loop as an error, as it names a link
            // whose target is missing).
            let walker = walkdir::WalkDir::new(arg)
                .follow_links(true)
                .sort_by_file_name()
                .into_iter();
            // An --out inside an input folder is not read back as input.
            let walker = walker.filter_entry(|e| {
                out_canon.is_none()
                    || !e.file_type().is_dir()
                    || e.path().canonicalize().ok() != out_canon
            });
            for entry in walker {
                let entry = match entry {
                    Ok(e) => e,
                    Err(e) => {
                        let path = e.path().unwrap_or(arg).to_path_buf();
                        plan.skipped.push((path, walk_reason(&e)));
                        continue;
                    }
                };
                if entry.file_type().is_dir() {
                    continue;
                }
                let rel = entry
                    .path()
                    .strip_prefix(arg)
                    .unwrap_or(entry.path())
                    .to_path_buf();
                if glob.is_some_and(|g| !g.is_match(&rel)) {
                    continue;
                }
                // A pipe, a socket or a device (or a link to one): named, never opened.
                if !entry.file_type().is_file() {
                    plan.skipped
                        .push((entry.path().to_path_buf(), not_a_file(entry.file_type())));
                    continue;
                }
                let canon = entry.path().canonicalize().unwrap_or(entry.path().into());
                if seen_inputs.insert(canon) {
                    plan.jobs.push(Job {
                        input: entry.path().to_path_buf(),
                        output: rel,
                    });
                }
            }
        } else if !meta.is_file() {
            plan.skipped
                .push((arg.clone(), not_a_file(meta.file_type())));
        } else {
            let canon = arg.canonicalize().unwrap_or(arg.clone());
            let Some(name) = arg.file_name() else {
                plan.skipped.push((arg.clone(), "not a file name".into()));
                continue;
            };
            if seen_inputs.insert(canon) {
                plan.jobs.push(Job {
                    input: arg.clone(),
                    output: PathBuf::from(name),
                });
            }
        }
    }

    let mut by_output: HashMap<String, &Job> = HashMap::new();
    let mut collisions: Vec<(&Job, &Job)> = Vec::new();
    for job in &plan.jobs {
        if let Some(first) = by_output.insert(collision_key(&job.output), job) {
            collisions.push((first, job));
        }
    }
    if !collisions.is_empty() {
        return Err(Failure::usage(format!(
            "two inputs would be written to the same output, so nothing was written: {}; \
             give their folder instead (outputs mirror the paths below it) or run them separately",
            listing(&collisions, |(a, b)| format!(
                "{} from {} and {}",
                a.output.display(),
                a.input.display(),
                b.input.display()
            ))
        )));
    }

    // An output below a link in --out would land outside it: named as failed, not written.
    if out.is_dir() {
        for job in std::mem::take(&mut plan.jobs) {
            match folders_below_out(out, &job.output, None) {
                Ok(()) => plan.jobs.push(job),
                Err(reason) => plan.skipped.push((job.input, reason)),
            }
        }
    }

    let mut existing: Vec<PathBuf> = Vec::new();
    for job in &plan.jobs {
        let dest = out.join(&job.output);
        // The name itself, not what it leads to: a dangling link exists as an output.
        if dest.symlink_metadata().is_err() {
            continue;
        }
        if dest
            .canonicalize()
            .is_ok_and(|canon| seen_inputs.contains(&canon))
        {
            return Err(Failure::usage(format!(
                "the output {} is an input: writing it would destroy the original, so nothing was written; choose another --out",
                dest.display()
            )));
        }
        existing.push(dest);
    }
    if !existing.is_empty() && !force {
        return Err(Failure::usage(format!(
            "{} output(s) already exist, so nothing was written: {}; --force overwrites them",
            existing.len(),
            listing(&existing, |p| p.display().to_string())
        )));
    }
    Ok(plan)
}

/// The folders this run created: `--out` with its missing parents, then the folders below
/// it, each after its parent. Those still empty at the end (every file in them failed, or
/// there was none) are removed, so a run that writes nothing leaves no folder behind. A
/// folder that was there before the run is never among them.
#[derive(Debug, Default)]
struct CreatedDirs(std::sync::Mutex<Vec<PathBuf>>);

impl CreatedDirs {
    fn push(&self, dir: PathBuf) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(dir);
    }

    /// Creates `out` and its missing parents, recording those it creates.
    fn create_out(&self, out: &Path) -> std::io::Result<()> {
        let missing: Vec<PathBuf> = out
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && a.symlink_metadata().is_err())
            .map(Path::to_path_buf)
            .collect();
        std::fs::create_dir_all(out)?;
        for dir in missing.into_iter().rev() {
            self.push(dir);
        }
        Ok(())
    }

    /// Removes the recorded folders that are still empty, deepest first: `remove_dir`
    /// refuses a folder with anything in it, so nothing but an empty folder this run
    /// created can go.
    fn remove_empty(&self) {
        let dirs = std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for dir in dirs.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// What a name on an output's path below `--out` is.
enum Below {
    Folder,
    Missing,
    /// A symbolic link, whatever it leads to (a folder elsewhere, nothing).
    Link,
    /// A file, a pipe, anything but a folder.
    Other,
}

fn below(dir: &Path) -> std::io::Result<Below> {
    match dir.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => Ok(Below::Link),
        Ok(m) if m.is_dir() => Ok(Below::Folder),
        Ok(_) => Ok(Below::Other),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Below::Missing),
        Err(e) => Err(e),
    }
}

/// Checks the folders between `out` and the file `output` (relative to `out`), one name at
/// a time, without following a link: a link there would put the output outside `--out`,
/// over whatever the link leads to. With `created`, the missing folders are made (and
/// recorded); without it, the check stops at the first missing one. `out` itself is the
/// user's choice and may be a link.
///
/// Checked by name, then created or written by path: std has no `openat`, and
/// `unsafe_code` is denied, so a link that someone else swaps in between the check and
/// the write is not caught; a link that was there before, or made by mistake, is.
///
/// # Errors
/// A reason naming the output and the name below `--out` that is a link or not a folder
/// (the file is not written), or the I/O error.
fn folders_below_out(
    out: &Path,
    output: &Path,
    created: Option<&CreatedDirs>,
) -> Result<(), String> {
    let mut dir = out.to_path_buf();
    let mut rel = PathBuf::new();
    let cannot = |dir: &Path, e: std::io::Error| {
        format!("cannot create {}: {}", dir.display(), io_reason(&e))
    };
    for part in output.parent().into_iter().flat_map(Path::components) {
        dir.push(part);
        rel.push(part);
        let mut state = below(&dir).map_err(|e| cannot(&dir, e))?;
        if let Below::Missing = state {
            let Some(created) = created else {
                return Ok(());
            };
            // `create_dir` does not follow a link either: a dangling one "exists".
            state = match std::fs::create_dir(&dir) {
                Ok(()) => {
                    created.push(dir.clone());
                    Below::Folder
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    below(&dir).map_err(|e| cannot(&dir, e))?
                }
                Err(e) => return Err(cannot(&dir, e)),
            };
        }
        let what = match state {
            Below::Folder => continue,
            Below::Link => "is a link; outputs are written only under --out, never through a link",
            Below::Missing | Below::Other => "is not a folder",
        };
        return Err(format!(
            "the output {} was not written: {} below --out {what}",
            output.display(),
            rel.display()
        ));
    }
    Ok(())
}

/// Writes `body` to `dest`, in a folder that exists, through a temporary file beside it,
/// so a reader never sees half a file; without `force`, an output that appeared since the
/// plan is not replaced. With `force`, a link at `dest` is replaced by the file, never
/// written through. The temporary file is made new (`O_EXCL`, a random name, by
/// `tempfile`): a link already at that name is never followed.
pub(super) fn write_output(dest: &Path, body: &[u8], force: bool) -> std::io::Result<()> {
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".phiguard.tmp");
    // The mode a plain new file gets (the umask applies), not tempfile's private 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(body)?;
    // Without force, persisting fails when the name exists: no race with a new file.
    let moved = if force {
        tmp.persist(dest)
    } else {
        tmp.persist_noclobber(dest)
    };
    // On failure the temporary file is dropped, and removed with it.
    moved.map(drop).map_err(|e| e.error)
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
    engine
        .detect_document(id, shared, &file_call(engine), threshold)
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
        .filter(|s| s.score >= threshold)
        .collect())
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
            if re.captures_len() < 2 {
                return Err(Failure::usage(
                    "--subject-from needs one group, e.g. 'patients/([^/]+)/'",
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
                    .map(|text| crate::fhir::Text { text })
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
        let bar = ProgressBar::new(plan.jobs.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} files {elapsed_precise} eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        // Enough files in flight for every worker to fill a batch: the worker pool runs the
        // queued texts of one model as one packed pass (see `engine::workers`).
        let parallel = engine.inference_threads().max(1) * engine.max_batch().max(2);
        let force = args.force;
        let results: Vec<(PathBuf, Result<LabelCounts, String>)> =
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
                    async move {
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
                        (job.input, result)
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
        for (input, r) in results {
            match r {
                Ok(mut done) => {
                    written += 1;
                    if let Some(n) = done.remove(DATES_EMPTIED) {
                        emptied.push((input, n));
                    }
                    for (label, n) in done {
                        *entities.entry(label).or_insert(0) += n;
                    }
                }
                Err(reason) => failed.push((input, reason)),
            }
        }
        failed.sort();
        let mut summary = format!(
            "phiguard deid: {written} file(s) written to {} in {:.1} s, {} failed\n",
            out_dir.display(),
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
        eprint!("{summary}");
        if failed.is_empty() {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path, body: &str) {
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, body).expect("write");
    }

    #[test]
    fn folders_are_mirrored_and_files_land_by_name() {
        let t = tempfile::tempdir().expect("tempdir");
        touch(&t.path().join("in/a.txt"), "x");
        touch(&t.path().join("in/sub/b.txt"), "x");
        touch(&t.path().join("c.txt"), "x");
        let p = plan(
            &[t.path().join("in"), t.path().join("c.txt")],
            &t.path().join("out"),
            None,
            false,
        )
        .expect("plan");
        let outs: Vec<_> = p.jobs.iter().map(|j| j.output.clone()).collect();
        assert_eq!(
            outs,
            [PathBuf::from("a.txt"), "sub/b.txt".into(), "c.txt".into()]
        );
    }

    #[test]
    fn an_output_folder_equal_to_an_input_folder_is_refused() {
        let t = tempfile::tempdir().expect("tempdir");
        touch(&t.path().join("in/a.txt"), "x");
        let e = plan(&[t.path().join("in")], &t.path().join("in"), None, true).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message.contains("overwrite the originals"),
            "{}",
            e.message
        );
    }

    #[test]
    fn an_output_that_is_an_input_is_refused_even_with_force() {
        let t = tempfile::tempdir().expect("tempdir");
        touch(&t.path().join("in/a.txt"), "x");
        // Output folder is the parent of the file given directly: out/a.txt is the input.
        let e = plan(
            &[t.path().join("in/a.txt")],
            &t.path().join("in"),
            None,
            true,
        )
        .unwrap_err();
        assert!(e.message.contains("is an input"), "{}", e.message);
    }

    #[cfg(unix)]
    #[test]
    fn an_output_that_links_to_an_input_is_refused_even_with_force() {
        let t = tempfile::tempdir().expect("tempdir");
        touch(&t.path().join("in/a.txt"), "x");
        std::fs::create_dir_all(t.path().join("out")).expect("mkdir");
        std::os::unix::fs::symlink(t.path().join("in/a.txt"), t.path().join("out/a.txt"))
            .expect("symlink");
        let e = plan(&[t.path().join("in")], &t.path().join("out"), None, true).unwrap_err();
        assert!(e.message.contains("is an input"), "{}", e.message);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_reached_through_a_link_is_planned_once_under_its_first_name() {
        let t = tempfile::tempdir().expect("tempdir");
        touch(&t.path().join("in/a.txt"), "x");
        touch(&t.path().join("ext/sub/b.txt"), "x");
        std::os::unix::fs::symlink("a.txt", t.path().join("in/again.txt")).expect("symlink");
        std::os::unix::fs::symlink("../ext/sub", t.path().join("in/linked")).expect("symlink");
        let p = plan(&[t.path().join("in")], &t.path().join("out"), None, false).expect("plan");
        let outs: Vec<_> = p.jobs.iter().map(|j| j.output.clone()).collect();
        assert_eq!(outs, [PathBuf::from("a.txt"), "linked/b.txt".into()]);
        assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    }

    #[test]
    fn two_inputs_with_one_output_name_are_refused() {
        let t = tempfile::tempdir().expect("tempdir");
        touch(&t.path().join("a/x.txt"), "x");
        touch(&t.path().join("b/x.txt"), "x");
        let e = plan(
            &[t.path().join("a/x.txt"), t.path().join("b/x.txt")],
            &t.path().join("out"),
            None,
            false,
        )
        .unwrap_err();
        assert!(e.message.contains("same output"), "{}", e.message);
    }

    #[test]
    fn existing_outputs_need_force_and_missing_inputs_are_named() {
        let t = tempfile::tempdir().expect("tempdir");
        touch(&t.path().join("in/a.txt"), "x");
        touch(&t.path().join("out/a.txt"), "old");
        let args = [t.path().join("in"), t.path().join("nope.txt")];
        let e = plan(&args, &t.path().join("out"), None, false).unwrap_err();
        assert!(e.message.contains("--force"), "{}", e.message);
        let p = plan(&args, &t.path().join("out"), None, true).expect("forced");
        assert_eq!(p.jobs.len(), 1);
        assert_eq!(p.skipped.len(), 1);
        assert_eq!(p.skipped[0].1, "no such file or folder");
    }

    #[test]
    fn the_glob_filters_folder_contents_and_out_inside_an_input_is_not_read() {
        let t = tempfile::tempdir().expect("tempdir");
        touch(&t.path().join("in/a.txt"), "x");
        touch(&t.path().join("in/b.csv"), "x");
        touch(&t.path().join("in/deid/old.txt"), "x");
        let g = globset::Glob::new("*.txt").expect("glob").compile_matcher();
        let p = plan(
            &[t.path().join("in")],
            &t.path().join("in/deid"),
            Some(&g),
            false,
        )
        .expect("plan");
        let outs: Vec<_> = p.jobs.iter().map(|j| j.output.clone()).collect();
        assert_eq!(outs, [PathBuf::from("a.txt")]);
    }

    /// A named pipe given on the command line is named as skipped, never a job (reading it
    /// would block until a writer came).
    #[cfg(unix)]
    #[test]
    fn a_named_pipe_given_by_name_is_skipped_not_planned() {
        let t = tempfile::tempdir().expect("tempdir");
        let pipe = t.path().join("pipe.txt");
        let made = std::process::Command::new("mkfifo")
            .arg(&pipe)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        let p = plan(
            std::slice::from_ref(&pipe),
            &t.path().join("out"),
            None,
            false,
        )
        .expect("plan");
        assert!(p.jobs.is_empty(), "{:?}", p.jobs);
        assert_eq!(
            p.skipped,
            [(
                pipe.clone(),
                "not a regular file (a named pipe)".to_string()
            )]
        );
        assert_eq!(
            read_regular(&pipe),
            Err("not a regular file (a named pipe)".to_string())
        );
    }

    #[test]
    fn only_the_empty_folders_a_run_created_are_removed() {
        let t = tempfile::tempdir().expect("tempdir");
        let out = t.path().join("new/out");
        touch(&t.path().join("old/keep.txt"), "x");
        let created = CreatedDirs::default();
        created.create_out(&out).expect("out");
        folders_below_out(&out, Path::new("a/empty/x.txt"), Some(&created)).expect("below");
        folders_below_out(&out, Path::new("a/full/x.txt"), Some(&created)).expect("below");
        folders_below_out(&out, Path::new("a/full/x.txt"), Some(&created)).expect("again");
        touch(&out.join("a/full/x.txt"), "x");
        created.remove_empty();
        assert!(!out.join("a/empty").exists());
        assert!(out.join("a/full/x.txt").is_file());

        // Nothing written: --out and the parent the run made go, a folder there before stays.
        std::fs::create_dir(t.path().join("old/inner")).expect("mkdir");
        for out in [t.path().join("gone/out"), t.path().join("old/inner")] {
            let created = CreatedDirs::default();
            created.create_out(&out).expect("out");
            folders_below_out(&out, Path::new("a/b/x.txt"), Some(&created)).expect("below");
            created.remove_empty();
        }
        assert!(!t.path().join("gone").exists());
        assert!(t.path().join("old/inner").is_dir());
        assert!(!t.path().join("old/inner/a").exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_or_a_file_between_out_and_an_output_is_refused() {
        let t = tempfile::tempdir().expect("tempdir");
        let out = t.path().join("out");
        std::fs::create_dir_all(out.join("real")).expect("mkdir");
        std::fs::create_dir_all(t.path().join("elsewhere")).expect("mkdir");
        std::os::unix::fs::symlink("../elsewhere", out.join("real/sub")).expect("symlink");
        std::os::unix::fs::symlink("../missing", out.join("dangling")).expect("symlink");
        touch(&out.join("file"), "x");
        let created = CreatedDirs::default();
        for (output, name, what) in [
            ("real/sub/new/a.txt", "real/sub", "is a link"),
            ("dangling/a.txt", "dangling", "is a link"),
            ("file/a.txt", "file", "is not a folder"),
        ] {
            for with in [None, Some(&created)] {
                let e = folders_below_out(&out, Path::new(output), with).unwrap_err();
                assert!(
                    e.starts_with(&format!(
                        "the output {output} was not written: {name} below --out {what}"
                    )),
                    "{e}"
                );
            }
        }
        assert!(!t.path().join("elsewhere/new").exists());
        assert!(!t.path().join("missing").exists());
        folders_below_out(&out, Path::new("real/new/a.txt"), Some(&created)).expect("folders");
        assert!(out.join("real/new").is_dir());
    }

    /// The temporary file is made new: a link at a temporary name is never written through.
    /// Before, the name was `.<name>.phiguard-<pid>.tmp` and `std::fs::write` followed a link
    /// there.
    #[cfg(unix)]
    #[test]
    fn write_output_never_writes_through_a_link_at_a_temporary_name() {
        let t = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(t.path().join("o")).expect("mkdir");
        touch(&t.path().join("victim.txt"), "keep me");
        let old_tmp = format!("o/.a.txt.phiguard-{}.tmp", std::process::id());
        std::os::unix::fs::symlink("../victim.txt", t.path().join(old_tmp)).expect("symlink");
        write_output(&t.path().join("o/a.txt"), b"new", false).expect("write");
        assert_eq!(
            std::fs::read_to_string(t.path().join("victim.txt")).expect("read"),
            "keep me"
        );
        assert_eq!(
            std::fs::read(t.path().join("o/a.txt")).expect("read"),
            b"new"
        );
    }

    #[test]
    fn write_output_does_not_clobber_without_force() {
        let t = tempfile::tempdir().expect("tempdir");
        let dest = t.path().join("o/a.txt");
        std::fs::create_dir(t.path().join("o")).expect("mkdir");
        write_output(&dest, b"one", false).expect("first");
        assert!(write_output(&dest, b"two", false).is_err());
        assert_eq!(std::fs::read(&dest).expect("read"), b"one");
        write_output(&dest, b"three", true).expect("forced");
        assert_eq!(std::fs::read(&dest).expect("read"), b"three");
        // No temporary file is left behind.
        assert_eq!(
            std::fs::read_dir(t.path().join("o")).expect("ls").count(),
            1
        );
    }
}
