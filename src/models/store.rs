//! The local model store: one folder per installed model under
//! `Home::models_dir()`, each with a manifest, plus the bundled model (found by
//! [`super::bundle`]).
//!
//! Layout (ids map to folder names by replacing `/` with `--`, which ids may not contain):
//!
//! ```text
//! <root>/OpenMed--OpenMed-PII-SuperClinical-Small-44M-v1/   an installed model + manifest
//! <root>/.partial/<folder>/                                  a download in progress
//! <root>/.partial/<folder>.lock                              held while it runs
//! <root>/.staging-*/  <root>/.trash-*/                       transient, never listed
//! ```
//!
//! Every change lands by one `rename` of a complete folder (manifest written last), so a
//! crash leaves either the old state or the new one, never a half-installed model. All
//! methods do blocking file I/O: from async code, call them inside `spawn_blocking`.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::catalog::{is_plain_file_name, is_valid_id, Catalog};
use super::error::{io, ModelError, ModelFileProblem, Result};
pub use super::manifest::ModelSource;
use super::manifest::{parse_sha256sums, sha256_file, Manifest, ManifestFile, SCHEMA};
use super::validate::{validate_dir, OPTIONAL_FILES, REQUIRED_FILES};

/// Id of the model that ships with phiguard.
pub const BUNDLED_ID: &str = "phiguard-deid";

/// Environment variable that points at the bundled model folder.
pub const BUNDLED_DIR_ENV: &str = "PHIGUARD_BUNDLED_MODEL_DIR";

/// Staging folders older than this are leftovers of a crash and are removed on open.
const STALE_STAGING: Duration = Duration::from_secs(3600);

/// A model that can be loaded now.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Installed {
    /// Model id.
    pub id: String,
    /// Folder with `config.json`, `tokenizer.json`, `model.safetensors`.
    pub dir: PathBuf,
    /// `model_type` of `config.json`.
    pub family: String,
    /// Total size of its files.
    pub size_bytes: u64,
    /// Entity types from `id2label` (BIO prefixes removed).
    pub labels: Vec<String>,
    /// SPDX licence id when known.
    pub license: Option<String>,
    /// Where it came from.
    pub source: ModelSource,
}

/// Outcome of re-hashing one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    /// Hash and size match.
    Ok,
    /// The content changed.
    Mismatch,
    /// The file is gone.
    Missing,
}

/// One file of a [`VerifyReport`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileCheck {
    /// File name.
    pub name: String,
    /// sha256 recorded at install time.
    pub expected_sha256: String,
    /// sha256 now (`None` if missing).
    pub actual_sha256: Option<String>,
    /// Verdict.
    pub status: FileStatus,
}

/// Result of [`Store::verify`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Model id.
    pub id: String,
    /// Each recorded file.
    pub files: Vec<FileCheck>,
}

impl VerifyReport {
    /// True when every file matches.
    pub fn ok(&self) -> bool {
        self.files.iter().all(|f| f.status == FileStatus::Ok)
    }
}

/// The model store.
#[derive(Clone, Debug)]
pub struct Store {
    root: PathBuf,
    bundled: Option<PathBuf>,
}

/// Folder name of an id (`org/name` → `org--name`).
pub(crate) fn folder_name(id: &str) -> Result<String> {
    if !is_valid_id(id) {
        return Err(ModelError::InvalidId);
    }
    Ok(id.replace('/', "--"))
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A unique suffix for transient folders.
fn unique_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos}", std::process::id())
}

/// Checks, just before a model is loaded, that the files the loader reads
/// (`config.json`, `tokenizer.json`, `model.safetensors`) are the ones recorded for it: the
/// sha256 and size in the manifest of a downloaded or imported model, or for the bundled
/// model (`id` [`BUNDLED_ID`]) the checksums compiled into this build.
///
/// # Why at every load
/// Installing verified the bytes once; a model is loaded much later, from files anyone with
/// write access to the store (or a failing disk) may have changed since. Hashing is cheap
/// next to loading (sha256 with the CPU's SHA instructions runs at about 1 GB/s: the 37 MB
/// bundled model took 34 ms in the load test, a 1.7 GB model would take under 2 s), and it
/// runs once per load, not per request. This catches
/// a changed weights file; it cannot catch someone who rewrites the manifest to match, since
/// the manifest is not signed (the bundled model's reference is in the binary, so for it
/// that is caught too).
///
/// # The weights it returns
/// `model.safetensors` is read whole and hashed in memory, and those very bytes are
/// returned for the loader to build the model from
/// ([`TokenClassifier::load_verified`](crate::inference::TokenClassifier::load_verified)):
/// the weights cannot change between the check and the load, no other weight file in the
/// folder is read, and the file is read once instead of twice (about 25 ms of the bundled
/// model's start-up). `config.json` and `tokenizer.json` are small and are read again by
/// the loader: a change in that window is outside what this guards.
///
/// # Errors
/// [`ModelError::Tampered`] naming the first file that differs or is missing,
/// [`ModelError::Unverified`] when the manifest records no checksum for a file the loader
/// reads, [`ModelError::Manifest`] / [`ModelError::Io`] when the manifest is unreadable.
pub fn verify_before_load(id: &str, dir: &Path) -> Result<VerifiedWeights> {
    let expected: Vec<(String, String, Option<u64>)> = if id == BUNDLED_ID {
        parse_sha256sums(super::bundle::SHIPPED_SHA256SUMS)?
            .into_iter()
            .map(|(hash, name)| (name, hash, None))
            .collect()
    } else {
        Manifest::read(dir)?
            .files
            .into_iter()
            .map(|f| (f.name, f.sha256, Some(f.size)))
            .collect()
    };
    let mut weights = None;
    for name in REQUIRED_FILES {
        let Some((_, want, size)) = expected.iter().find(|(n, _, _)| n == name) else {
            return Err(ModelError::Unverified {
                file: name.to_owned(),
            });
        };
        let tampered = || ModelError::Tampered {
            file: name.to_owned(),
        };
        let path = dir.join(name);
        if !path.is_file() {
            return Err(tampered());
        }
        let (got, got_size) = if name == WEIGHTS_FILE {
            let bytes = std::fs::read(&path).map_err(io("reading the weights to verify"))?;
            let hashed = (hex::encode(Sha256::digest(&bytes)), bytes.len() as u64);
            weights = Some(bytes);
            hashed
        } else {
            sha256_file(&path)?
        };
        if got != *want || size.is_some_and(|s| s != got_size) {
            return Err(tampered());
        }
    }
    // `REQUIRED_FILES` holds the weights file, so the loop read it or returned.
    Ok(VerifiedWeights(weights.unwrap_or_default()))
}

/// The weights file's name among [`REQUIRED_FILES`].
const WEIGHTS_FILE: &str = "model.safetensors";

/// The bytes of `model.safetensors` that [`verify_before_load`] hashed and found to match.
#[derive(Debug)]
pub struct VerifiedWeights(Vec<u8>);

impl VerifiedWeights {
    /// The verified bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

/// The files `import` may read from a folder.
fn import_candidates() -> impl Iterator<Item = &'static str> {
    REQUIRED_FILES
        .iter()
        .chain(OPTIONAL_FILES.iter())
        .copied()
        .chain(std::iter::once("SHA256SUMS"))
}

/// Refuses an import folder holding a candidate file that is a symbolic link, is not a
/// regular file, or resolves outside the folder; returns the folder's canonical path.
fn check_import_files(dir: &Path) -> Result<PathBuf> {
    let root = std::fs::canonicalize(dir).map_err(io("reading the folder to import"))?;
    for name in import_candidates() {
        let path = root.join(name);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io("reading the folder to import")(e)),
        };
        if meta.file_type().is_symlink() {
            return Err(ModelError::invalid(name, ModelFileProblem::SymbolicLink));
        }
        if !meta.is_file() {
            return Err(ModelError::invalid(name, ModelFileProblem::NotRegular));
        }
        let resolved = std::fs::canonicalize(&path).map_err(io("reading the folder to import"))?;
        if resolved.parent() != Some(root.as_path()) {
            return Err(ModelError::invalid(name, ModelFileProblem::OutsideFolder));
        }
    }
    Ok(root)
}

/// Opens `path` for reading without following a symbolic link (`O_NOFOLLOW` on unix) and
/// checks that what was opened is a regular file. `name` is the file name errors carry.
fn open_regular(path: &Path, name: &str) -> Result<std::fs::File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW);
    }
    let f = match opts.open(path) {
        Ok(f) => f,
        // ELOOP: the last component is a symbolic link.
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ModelError::invalid(name, ModelFileProblem::SymbolicLink))
        }
        Err(e) => return Err(io("reading model files")(e)),
    };
    let meta = f.metadata().map_err(io("reading model files"))?;
    if !meta.is_file() {
        return Err(ModelError::invalid(name, ModelFileProblem::NotRegular));
    }
    Ok(f)
}

impl Store {
    /// Opens (creating if needed) the store at `root`, with the bundled model found by
    /// [`super::bundle::locate`] (which may unpack the embedded copy under `root`).
    ///
    /// # Errors
    /// [`ModelError::Io`] if the folder cannot be created.
    pub fn open(root: PathBuf) -> Result<Store> {
        let bundled = super::bundle::locate(&root);
        Store::with_bundled(root, bundled)
    }

    /// Opens the store with an explicit bundled folder (`None`: no bundled model).
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn with_bundled(root: PathBuf, bundled: Option<PathBuf>) -> Result<Store> {
        std::fs::create_dir_all(root.join(".partial")).map_err(io("creating the model store"))?;
        let store = Store { root, bundled };
        store.sweep_leftovers();
        Ok(store)
    }

    /// The store folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The bundled model folder, if one was found.
    pub fn bundled(&self) -> Option<&Path> {
        self.bundled.as_deref()
    }

    /// Every usable model: the bundled one first (source `Bundled`), then the store's
    /// models sorted by id. Folders without a valid manifest are skipped.
    ///
    /// # Errors
    /// [`ModelError::Io`] if the store folder cannot be listed.
    pub fn installed(&self) -> Result<Vec<Installed>> {
        let mut out: Vec<Installed> = self.bundled_installed().into_iter().collect();
        let mut stored = Vec::new();
        for entry in std::fs::read_dir(&self.root).map_err(io("listing the model store"))? {
            let entry = entry.map_err(io("listing the model store"))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') || !entry.path().is_dir() {
                continue;
            }
            match Manifest::read(&entry.path()) {
                Ok(m) if folder_name(&m.id).ok().as_deref() == Some(name) => {
                    stored.push(self.installed_of(m));
                }
                _ => tracing::warn!("skipping a model folder without a valid manifest"),
            }
        }
        stored.sort_by(|a, b| a.id.cmp(&b.id));
        out.extend(stored);
        Ok(out)
    }

    /// The installed model with this exact id (aliases are resolved by the catalog, not here).
    pub fn get(&self, id: &str) -> Option<Installed> {
        if id == BUNDLED_ID {
            return self.bundled_installed();
        }
        let dir = self.model_dir(id).ok()?;
        let m = Manifest::read(&dir).ok()?;
        (m.id == id).then(|| self.installed_of(m))
    }

    /// The manifest of an installed (non-bundled) model.
    ///
    /// # Errors
    /// [`ModelError::NotInstalled`], [`ModelError::Manifest`].
    pub fn manifest(&self, id: &str) -> Result<Manifest> {
        let dir = self.model_dir(id)?;
        if !dir.is_dir() {
            return Err(ModelError::NotInstalled);
        }
        Manifest::read(&dir)
    }

    /// Imports the model in `dir`: validates `config.json` (`model_type`, `id2label`),
    /// `tokenizer.json` and `model.safetensors`, checks a `SHA256SUMS` file if the folder has
    /// one, copies the model files (and licence/notice/readme files) into the store and
    /// writes a manifest with the sha256 of each. `id` defaults to the folder's name.
    ///
    /// Only regular files inside `dir` are read: a file that is a symbolic link, or that
    /// resolves outside the folder, is refused (naming the file, never its target or content),
    /// and files are opened with `O_NOFOLLOW` so a link swapped in after the check is refused
    /// too. An import must not become a way to copy, say, a key file from elsewhere on the
    /// machine into the store, where `models verify` and the admin API would describe it.
    ///
    /// # Errors
    /// [`ModelError::InvalidId`], [`ModelError::BundledReadOnly`],
    /// [`ModelError::AlreadyInstalled`], [`ModelError::InvalidModel`],
    /// [`ModelError::UnsupportedFamily`], [`ModelError::Io`].
    pub fn import(&self, dir: &Path, id: Option<&str>) -> Result<Installed> {
        let id = match id {
            Some(id) => id.to_owned(),
            None => dir
                .file_name()
                .and_then(|n| n.to_str())
                .ok_or(ModelError::InvalidId)?
                .to_owned(),
        };
        let target = self.check_new_id(&id)?;
        let dir = check_import_files(dir)?;
        let dir = dir.as_path();
        validate_dir(dir)?;
        let sums = match open_regular(&dir.join("SHA256SUMS"), "SHA256SUMS") {
            Ok(mut f) => {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut f, &mut text)
                    .map_err(io("reading SHA256SUMS"))?;
                parse_sha256sums(&text)?
            }
            Err(ModelError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Vec::new()
            }
            Err(e) => return Err(e),
        };

        let staging = self.root.join(format!(".staging-{}", unique_suffix()));
        let result = (|| {
            std::fs::create_dir(&staging).map_err(io("creating a staging folder"))?;
            let mut files = Vec::new();
            for name in REQUIRED_FILES.iter().chain(OPTIONAL_FILES.iter()) {
                let src = dir.join(name);
                if std::fs::symlink_metadata(&src).is_err() {
                    continue;
                }
                let dst = staging.join(name);
                let mut from = open_regular(&src, name)?;
                let mut to = std::fs::File::create_new(&dst).map_err(io("copying model files"))?;
                std::io::copy(&mut from, &mut to).map_err(io("copying model files"))?;
                to.sync_all().map_err(io("copying model files"))?;
                let (sha256, size) = sha256_file(&dst)?;
                if let Some((want, _)) = sums.iter().find(|(_, n)| n == name) {
                    if *want != sha256 {
                        return Err(ModelError::invalid(name, ModelFileProblem::SumsMismatch));
                    }
                }
                files.push(ManifestFile {
                    name: (*name).to_owned(),
                    sha256,
                    size,
                });
            }
            let license = Catalog::builtin()
                .ok()
                .and_then(|c| c.get(&id).map(|e| e.license.clone()));
            self.commit_dir(
                &id,
                &staging,
                &target,
                files,
                ModelSource::Imported,
                None,
                false,
                license,
            )
        })();
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&staging);
        }
        result
    }

    /// Removes an installed model (and any partial download of it). Refuses the bundled model.
    ///
    /// # Errors
    /// [`ModelError::BundledReadOnly`], [`ModelError::InvalidId`],
    /// [`ModelError::NotInstalled`] when there is neither a model nor a partial download,
    /// [`ModelError::Busy`] when a download of it is running, [`ModelError::Io`].
    pub fn remove(&self, id: &str) -> Result<()> {
        if id == BUNDLED_ID {
            return Err(ModelError::BundledReadOnly);
        }
        let dir = self.model_dir(id)?;
        let partial = self.partial_dir(id)?;
        let had_partial = partial.exists();
        if had_partial {
            let _lock = self.lock_download(id)?;
            std::fs::remove_dir_all(&partial).map_err(io("removing a partial download"))?;
        }
        if !dir.is_dir() {
            return if had_partial {
                Ok(())
            } else {
                Err(ModelError::NotInstalled)
            };
        }
        let trash = self.root.join(format!(".trash-{}", unique_suffix()));
        std::fs::rename(&dir, &trash).map_err(io("removing a model"))?;
        std::fs::remove_dir_all(&trash).map_err(io("removing a model"))
    }

    /// Re-hashes every file of a model and compares with its manifest (for the bundled model,
    /// with its `SHA256SUMS`).
    ///
    /// # Errors
    /// [`ModelError::NotInstalled`], [`ModelError::Manifest`], [`ModelError::Io`].
    pub fn verify(&self, id: &str) -> Result<VerifyReport> {
        let expected: Vec<(String, String, Option<u64>)> = if id == BUNDLED_ID {
            let dir = self.bundled.as_deref().ok_or(ModelError::NotInstalled)?;
            let text = std::fs::read_to_string(dir.join("SHA256SUMS"))
                .map_err(io("reading SHA256SUMS of the bundled model"))?;
            parse_sha256sums(&text)?
                .into_iter()
                .map(|(h, n)| (n, h, None))
                .collect()
        } else {
            self.manifest(id)?
                .files
                .into_iter()
                .map(|f| (f.name, f.sha256, Some(f.size)))
                .collect()
        };
        let dir = self.get(id).ok_or(ModelError::NotInstalled)?.dir;
        let mut files = Vec::with_capacity(expected.len());
        for (name, want, size) in expected {
            let path = dir.join(&name);
            let (actual, status) = if path.is_file() {
                let (got, got_size) = sha256_file(&path)?;
                let same = got == want && size.is_none_or(|s| s == got_size);
                (
                    Some(got),
                    if same {
                        FileStatus::Ok
                    } else {
                        FileStatus::Mismatch
                    },
                )
            } else {
                (None, FileStatus::Missing)
            };
            files.push(FileCheck {
                name,
                expected_sha256: want,
                actual_sha256: actual,
                status,
            });
        }
        Ok(VerifyReport {
            id: id.to_owned(),
            files,
        })
    }

    // -- crate-internal: used by the downloader ---------------------------------------------

    /// Folder of an installed model.
    pub(crate) fn model_dir(&self, id: &str) -> Result<PathBuf> {
        Ok(self.root.join(folder_name(id)?))
    }

    /// Folder of a download in progress.
    pub(crate) fn partial_dir(&self, id: &str) -> Result<PathBuf> {
        Ok(self.root.join(".partial").join(folder_name(id)?))
    }

    /// The lock file of a model's downloads.
    pub(crate) fn lock_path(&self, id: &str) -> Result<PathBuf> {
        Ok(self
            .root
            .join(".partial")
            .join(format!("{}.lock", folder_name(id)?)))
    }

    /// Takes the per-model download lock (an OS file lock, released on drop or crash).
    ///
    /// # Errors
    /// [`ModelError::Busy`] if another download of this model holds it.
    pub(crate) fn lock_download(&self, id: &str) -> Result<std::fs::File> {
        let path = self.lock_path(id)?;
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io("opening a download lock"))?;
        match f.try_lock() {
            Ok(()) => Ok(f),
            Err(std::fs::TryLockError::WouldBlock) => Err(ModelError::Busy),
            Err(std::fs::TryLockError::Error(e)) => Err(io("taking a download lock")(e)),
        }
    }

    /// Checks that `id` may be installed and returns its final folder.
    pub(crate) fn check_new_id(&self, id: &str) -> Result<PathBuf> {
        if id == BUNDLED_ID {
            return Err(ModelError::BundledReadOnly);
        }
        if id == crate::engine::RULES_ID || id == "default" {
            return Err(ModelError::ReservedId);
        }
        let target = self.model_dir(id)?;
        if target.exists() {
            return Err(ModelError::AlreadyInstalled);
        }
        Ok(target)
    }

    /// Validates the model in `staged`, writes its manifest and renames it to `target`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn commit_dir(
        &self,
        id: &str,
        staged: &Path,
        target: &Path,
        files: Vec<ManifestFile>,
        source: ModelSource,
        revision: Option<String>,
        pinned: bool,
        license: Option<String>,
    ) -> Result<Installed> {
        let info = validate_dir(staged)?;
        debug_assert!(files.iter().all(|f| is_plain_file_name(&f.name)));
        let manifest = Manifest {
            schema: SCHEMA,
            id: id.to_owned(),
            family: info.family,
            source,
            revision,
            pinned,
            license,
            labels: info.labels,
            files,
            installed_at: now_rfc3339(),
        };
        manifest.write(staged)?;
        if target.exists() {
            return Err(ModelError::AlreadyInstalled);
        }
        std::fs::rename(staged, target).map_err(io("moving a model into the store"))?;
        Ok(self.installed_of(manifest))
    }

    fn installed_of(&self, m: Manifest) -> Installed {
        let dir = self
            .root
            .join(folder_name(&m.id).unwrap_or_else(|_| m.id.clone()));
        Installed {
            size_bytes: m.size_bytes(),
            id: m.id,
            dir,
            family: m.family,
            labels: m.labels,
            license: m.license,
            source: m.source,
        }
    }

    fn bundled_installed(&self) -> Option<Installed> {
        let dir = self.bundled.as_ref()?;
        let config = std::fs::read(dir.join("config.json")).ok()?;
        let info = super::validate::check_config(&config).ok()?;
        let size_bytes = std::fs::read_dir(dir)
            .ok()?
            .filter_map(|e| e.ok()?.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum();
        let license = Catalog::builtin()
            .ok()
            .and_then(|c| c.bundled().map(|e| e.license.clone()));
        Some(Installed {
            id: BUNDLED_ID.to_owned(),
            dir: dir.clone(),
            family: info.family,
            size_bytes,
            labels: info.labels,
            license,
            source: ModelSource::Bundled,
        })
    }

    /// Removes `.trash-*` folders and `.staging-*` folders older than an hour.
    fn sweep_leftovers(&self) {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let stale = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > STALE_STAGING);
            if name.starts_with(".trash-") || (name.starts_with(".staging-") && stale) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hub/phiguard-test/tiny-bert")
    }

    fn store() -> Result<(tempfile::TempDir, Store)> {
        let tmp = tempfile::tempdir().map_err(io("tempdir"))?;
        let s = Store::with_bundled(tmp.path().join("models"), None)?;
        Ok((tmp, s))
    }

    #[test]
    fn folder_names_are_injective_and_safe() {
        assert_eq!(folder_name("a/b").ok().as_deref(), Some("a--b"));
        assert!(folder_name("a--b").is_err());
        assert!(folder_name("../x").is_err());
    }

    #[test]
    fn import_get_verify_remove() -> Result<()> {
        let (_tmp, s) = store()?;
        let m = s.import(&fixture(), Some("local/tiny"))?;
        assert_eq!(m.source, ModelSource::Imported);
        assert_eq!(m.family, "bert");
        assert_eq!(s.get("local/tiny").as_ref(), Some(&m));
        assert_eq!(s.installed()?, vec![m.clone()]);
        assert!(s.verify("local/tiny")?.ok());
        assert!(matches!(
            s.import(&fixture(), Some("local/tiny")),
            Err(ModelError::AlreadyInstalled)
        ));
        s.remove("local/tiny")?;
        assert!(s.get("local/tiny").is_none());
        assert!(matches!(
            s.remove("local/tiny"),
            Err(ModelError::NotInstalled)
        ));
        Ok(())
    }

    #[test]
    fn bundled_model_is_listed_and_read_only() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(io("tempdir"))?;
        let s = Store::with_bundled(tmp.path().join("models"), Some(fixture()))?;
        let all = s.installed()?;
        assert_eq!(all[0].id, BUNDLED_ID);
        assert_eq!(all[0].source, ModelSource::Bundled);
        assert!(matches!(
            s.remove(BUNDLED_ID),
            Err(ModelError::BundledReadOnly)
        ));
        assert!(matches!(
            s.import(&fixture(), Some(BUNDLED_ID)),
            Err(ModelError::BundledReadOnly)
        ));
        Ok(())
    }

    #[test]
    fn folders_without_a_manifest_are_not_models() -> Result<()> {
        let (_tmp, s) = store()?;
        std::fs::create_dir_all(s.root().join("junk--model")).map_err(io("mkdir"))?;
        std::fs::create_dir_all(s.root().join(".staging-1")).map_err(io("mkdir"))?;
        assert!(s.installed()?.is_empty());
        assert!(s.get("junk/model").is_none());
        Ok(())
    }

    #[cfg(unix)]
    #[test]
    fn import_opens_never_follow_a_link_swapped_in_after_the_check() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(io("tempdir"))?;
        let target = tmp.path().join("elsewhere");
        std::fs::write(&target, b"x").map_err(io("write"))?;
        let link = tmp.path().join("config.json");
        std::os::unix::fs::symlink(&target, &link).map_err(io("symlink"))?;
        assert!(matches!(
            open_regular(&link, "config.json"),
            Err(ModelError::InvalidModel { file, .. }) if file == "config.json"
        ));
        assert!(matches!(
            open_regular(tmp.path(), "config.json"),
            Err(ModelError::InvalidModel { .. })
        ));
        assert!(open_regular(&target, "elsewhere").is_ok());
        Ok(())
    }

    #[test]
    fn the_download_lock_is_exclusive() -> Result<()> {
        let (_tmp, s) = store()?;
        let held = s.lock_download("a/b")?;
        assert!(matches!(s.lock_download("a/b"), Err(ModelError::Busy)));
        drop(held);
        s.lock_download("a/b")?;
        Ok(())
    }
}
