//! Where the bundled model comes from, so every distribution finds it offline.
//!
//! phiguard must serve from the first start with nothing downloaded, wherever the binary was
//! put: a cargo build in a checkout, `cargo install`, a distribution package, the container
//! image, the desktop bundle. [`locate`] tries, in order, and the first folder holding a
//! `config.json` wins:
//!
//! 1. `PHIGUARD_BUNDLED_MODEL_DIR` (an admin's explicit choice);
//! 2. a folder the host registered with [`use_dir`] (the desktop app: its Tauri resource
//!    folder);
//! 3. beside the executable: `models/phiguard-deid` (Windows bundles, a zip), `../share/phiguard/
//!    models/phiguard-deid` (FHS packages and the container image), `../lib/phiguard/models/phiguard-deid`
//!    (Linux desktop bundles), `../Resources/models/phiguard-deid` (a macOS `.app`),
//!    `../../models/phiguard-deid` (a cargo `target/<profile>` binary in a checkout);
//! 4. the copy embedded in the `phiguard` binary ([`embed`]), unpacked once into the store
//!    (`<store>/.bundled/<digest>/`) after checking every file against its `SHA256SUMS`;
//! 5. the source tree this crate was built from (library users: tests, the desktop shell in
//!    development).
//!
//! Why unpack rather than load from memory: the loader, the tokenizer and `models verify`
//! read files, and the weights are memory-mapped; one file-based path keeps one code path,
//! lets the page cache share the weights between processes, and costs one 37 MB write on the
//! first start of an installed binary. The embedded bytes are only touched while unpacking,
//! and are paged out after it, so they add nothing to resident memory afterwards.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use super::error::{io, ModelError, ModelFileProblem, Result};
use super::manifest::parse_sha256sums;
use super::store::{BUNDLED_DIR_ENV, BUNDLED_ID};

/// The bundled model's files compiled into a binary (see [`embedded_model!`]).
#[derive(Debug)]
pub struct Embedded {
    /// `(file name, bytes)`; must include `SHA256SUMS` naming every other file.
    pub files: &'static [(&'static str, &'static [u8])],
}

impl Embedded {
    fn file(&self, name: &str) -> Option<&'static [u8]> {
        self.files.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
    }
}

/// Embeds the bundled model folder `$dir` (a string literal or `concat!`) into the binary.
///
/// ```ignore
/// static MODEL: phiguard::models::bundle::Embedded =
///     phiguard::embedded_model!(concat!(env!("CARGO_MANIFEST_DIR"), "/models/phiguard-deid"));
/// ```
#[macro_export]
macro_rules! embedded_model {
    ($dir:expr) => {
        $crate::models::bundle::Embedded {
            files: &[
                ("config.json", include_bytes!(concat!($dir, "/config.json"))),
                (
                    "tokenizer.json",
                    include_bytes!(concat!($dir, "/tokenizer.json")),
                ),
                (
                    "model.safetensors",
                    include_bytes!(concat!($dir, "/model.safetensors")),
                ),
                ("SHA256SUMS", include_bytes!(concat!($dir, "/SHA256SUMS"))),
                ("LICENSE", include_bytes!(concat!($dir, "/LICENSE"))),
                ("NOTICE", include_bytes!(concat!($dir, "/NOTICE"))),
                ("README.md", include_bytes!(concat!($dir, "/README.md"))),
                (
                    "training.json",
                    include_bytes!(concat!($dir, "/training.json")),
                ),
            ],
        }
    };
}

/// The `SHA256SUMS` of the bundled model this build ships, compiled in: the reference its
/// files are checked against before every load (a copy of the sums beside the files could be
/// edited along with them).
pub(crate) const SHIPPED_SHA256SUMS: &str = include_str!("../../models/phiguard-deid/SHA256SUMS");

static EMBEDDED: OnceLock<&'static Embedded> = OnceLock::new();
static HOST_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Registers the copy of the bundled model compiled into this binary; call once, first
/// thing in `main`. Later calls are ignored.
pub fn embed(model: &'static Embedded) {
    let _ = EMBEDDED.set(model);
}

/// Registers the folder where the host application ships the bundled model (the desktop
/// app's resource folder). Later calls are ignored.
pub fn use_dir(dir: PathBuf) {
    let _ = HOST_DIR.set(dir);
}

/// The folders beside the executable where packages put the bundled model.
fn beside_exe() -> Vec<PathBuf> {
    let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    else {
        return Vec::new();
    };
    [
        "models/phiguard-deid",
        "../share/phiguard/models/phiguard-deid",
        "../lib/phiguard/models/phiguard-deid",
        "../Resources/models/phiguard-deid",
        "../../models/phiguard-deid",
    ]
    .iter()
    .map(|rel| exe_dir.join(rel))
    .collect()
}

fn has_model(dir: &Path) -> bool {
    dir.join("config.json").is_file()
}

/// Finds the bundled model folder, unpacking the embedded copy into `store_root` when no
/// shipped folder exists (see the module docs for the order). `None` when there is none:
/// the service then answers `model_not_served` until a model is installed.
pub fn locate(store_root: &Path) -> Option<PathBuf> {
    let explicit = std::env::var_os(BUNDLED_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let shipped = explicit
        .into_iter()
        .chain(HOST_DIR.get().cloned())
        .chain(beside_exe())
        .find(|d| has_model(d));
    if shipped.is_some() {
        return shipped;
    }
    if let Some(model) = EMBEDDED.get() {
        match unpack(model, store_root) {
            Ok(dir) => return Some(dir),
            Err(e) => tracing::warn!(error = %e, "cannot unpack the embedded bundled model"),
        }
    }
    let source = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models/",
        "phiguard-deid"
    ));
    has_model(&source).then_some(source)
}

/// Unpacks `model` under `<store_root>/.bundled/<digest of its SHA256SUMS>/` unless a complete
/// copy is already there; returns that folder. Every file is checked against `SHA256SUMS`
/// before the folder appears (one `rename`), and copies of other versions are removed.
///
/// # Errors
/// [`ModelError::InvalidModel`] when the embedded files do not match their checksums,
/// [`ModelError::Io`] when the store is not writable.
pub fn unpack(model: &Embedded, store_root: &Path) -> Result<PathBuf> {
    let sums = model
        .file("SHA256SUMS")
        .ok_or_else(|| ModelError::invalid("SHA256SUMS", ModelFileProblem::NoSums))?;
    let sums_text = std::str::from_utf8(sums)
        .map_err(|e| ModelError::invalid("SHA256SUMS", ModelFileProblem::NotUtf8(e)))?;
    let expected = parse_sha256sums(sums_text)?;
    let tag = hex::encode(&Sha256::digest(sums)[..6]);
    let parent = store_root.join(".bundled");
    let dir = parent.join(format!("{BUNDLED_ID}-{tag}"));
    let complete = |d: &Path| {
        model.files.iter().all(|(name, bytes)| {
            std::fs::metadata(d.join(name)).is_ok_and(|m| m.len() == bytes.len() as u64)
        })
    };
    if complete(&dir) {
        return Ok(dir);
    }
    for (want, name) in &expected {
        let bytes = model
            .file(name)
            .ok_or_else(|| ModelError::invalid(name, ModelFileProblem::NotEmbedded))?;
        if hex::encode(Sha256::digest(bytes)) != *want {
            return Err(ModelError::invalid(name, ModelFileProblem::SumsMismatch));
        }
    }
    std::fs::create_dir_all(&parent).map_err(io("creating the bundled model folder"))?;
    let staging = parent.join(format!(".staging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(io("creating the bundled model folder"))?;
    for (name, bytes) in model.files {
        std::fs::write(staging.join(name), bytes).map_err(io("unpacking the bundled model"))?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::rename(&staging, &dir) {
        let _ = std::fs::remove_dir_all(&staging);
        // Another process unpacking at the same moment won the rename: its copy is as good.
        if !complete(&dir) {
            return Err(ModelError::Io {
                op: "unpacking the bundled model",
                source: e,
            });
        }
    }
    if let Ok(entries) = std::fs::read_dir(&parent) {
        for old in entries.flatten() {
            if old.path() != dir && !old.file_name().to_string_lossy().starts_with(".staging") {
                let _ = std::fs::remove_dir_all(old.path());
            }
        }
    }
    tracing::info!("unpacked the embedded bundled model into the model store");
    for (_, bytes) in model.files {
        crate::memory::page_out(bytes);
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    static SMALL: Embedded = Embedded {
        files: &[
            ("config.json", b"{}"),
            (
                "SHA256SUMS",
                b"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a  config.json\n",
            ),
        ],
    };

    #[test]
    fn unpacks_once_and_reuses_the_copy() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(io("tempdir"))?;
        let dir = unpack(&SMALL, tmp.path())?;
        assert_eq!(
            std::fs::read(dir.join("config.json")).ok().as_deref(),
            Some(&b"{}"[..])
        );
        let again = unpack(&SMALL, tmp.path())?;
        assert_eq!(dir, again);
        // Nothing but the one copy is left behind.
        let left: Vec<_> = std::fs::read_dir(tmp.path().join(".bundled"))
            .map_err(io("list"))?
            .flatten()
            .collect();
        assert_eq!(left.len(), 1);
        Ok(())
    }

    #[test]
    fn a_file_that_does_not_match_its_checksum_is_refused() {
        static BAD: Embedded = Embedded {
            files: &[
                ("config.json", b"{\"x\":1}"),
                (
                    "SHA256SUMS",
                    b"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a  config.json\n",
                ),
            ],
        };
        let tmp = tempfile::tempdir().expect("tempdir");
        assert!(matches!(
            unpack(&BAD, tmp.path()),
            Err(ModelError::InvalidModel { .. })
        ));
        assert!(!tmp.path().join(".bundled").join("phiguard-deid").exists());
    }

    #[test]
    fn a_truncated_copy_is_replaced() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(io("tempdir"))?;
        let dir = unpack(&SMALL, tmp.path())?;
        std::fs::write(dir.join("config.json"), b"").map_err(io("truncate"))?;
        let dir = unpack(&SMALL, tmp.path())?;
        assert_eq!(
            std::fs::read(dir.join("config.json")).ok().as_deref(),
            Some(&b"{}"[..])
        );
        Ok(())
    }
}
