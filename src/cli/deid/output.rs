//! Where the outputs of `phiguard deid` go, and how they are written: the plan that maps
//! every input file to a path below `--out` before anything is read, the checks that no
//! link and nothing but a folder lies between `--out` and an output, the folders a run
//! creates (and removes again when they stay empty), the write through a temporary file
//! and the move that does not overwrite, and the inputs skipped because they are not
//! regular files (named pipes, sockets, devices).
//!
//! These are the promises a run makes about the user's disk, whatever the files hold:
//! never write outside `--out`, never write over a user's file (an input, or an output
//! that exists when `--force` was not given), and never leave behind what the run did not
//! finish (a half-written file under an output name, an empty folder it made). Keeping
//! them in one module, apart from what a file becomes, lets them be read and tested on
//! their own. The arrows point one way: this module knows nothing of detection, tables or
//! FHIR; [`super`] decides what each file becomes and hands the bytes here, and `eval`
//! writes its predictions through [`write_output`] too.
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

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::cli::Failure;

/// One file to de-identify and where its output goes (relative to `--out`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Job {
    pub(super) input: PathBuf,
    pub(super) output: PathBuf,
}

/// Every output decided up front, and the paths that could not be read.
#[derive(Debug, Default)]
pub(super) struct Plan {
    pub(super) jobs: Vec<Job>,
    pub(super) skipped: Vec<(PathBuf, String)>,
    /// Files in the input folders that `--glob` left out (counted in the summary, so a
    /// `NOTE.TXT` that `*.txt` does not match is not left out in silence).
    pub(super) not_matched: usize,
    /// Paths that reach a file another path already reached (its own path and a link), with
    /// that first path: the file is done once, under the first path's output, and the
    /// summary says so (the second output was missing in silence).
    pub(super) twice: Vec<(PathBuf, PathBuf)>,
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

pub(in crate::cli) fn io_reason(e: &std::io::Error) -> String {
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
pub(super) fn read_regular(path: &Path) -> Result<Vec<u8>, String> {
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
pub(super) fn plan(
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
    let mut seen_inputs: HashMap<PathBuf, PathBuf> = HashMap::new();
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
                    plan.not_matched += 1;
                    continue;
                }
                // A pipe, a socket or a device (or a link to one): named, never opened.
                if !entry.file_type().is_file() {
                    plan.skipped
                        .push((entry.path().to_path_buf(), not_a_file(entry.file_type())));
                    continue;
                }
                let canon = entry.path().canonicalize().unwrap_or(entry.path().into());
                match seen_inputs.entry(canon) {
                    Entry::Vacant(v) => {
                        v.insert(entry.path().to_path_buf());
                        plan.jobs.push(Job {
                            input: entry.path().to_path_buf(),
                            output: rel,
                        });
                    }
                    Entry::Occupied(first) => plan
                        .twice
                        .push((entry.path().to_path_buf(), first.get().clone())),
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
            match seen_inputs.entry(canon) {
                Entry::Vacant(v) => {
                    v.insert(arg.clone());
                    plan.jobs.push(Job {
                        input: arg.clone(),
                        output: PathBuf::from(name),
                    });
                }
                Entry::Occupied(first) => plan.twice.push((arg.clone(), first.get().clone())),
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
            .is_ok_and(|canon| seen_inputs.contains_key(&canon))
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
pub(super) struct CreatedDirs(std::sync::Mutex<Vec<PathBuf>>);

impl CreatedDirs {
    fn push(&self, dir: PathBuf) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(dir);
    }

    /// Creates `out` and its missing parents, recording those it creates.
    pub(super) fn create_out(&self, out: &Path) -> std::io::Result<()> {
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
    pub(super) fn remove_empty(&self) {
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
pub(super) fn folders_below_out(
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
pub(in crate::cli) fn write_output(dest: &Path, body: &[u8], force: bool) -> std::io::Result<()> {
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
        assert_eq!(p.not_matched, 1, "b.csv, counted for the summary");
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
