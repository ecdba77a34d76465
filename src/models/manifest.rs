//! The manifest each installed model carries (`phiguard-manifest.json`), and file hashing.
//!
//! The manifest is written last, inside the staging folder, just before the folder is
//! renamed into the store; a folder without a valid manifest is therefore never an
//! installed model, whatever else it holds. It records the sha256 of every file so that
//! `verify` can detect a changed byte later, and where the model came from.

use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::error::{io, ManifestError, ModelError, ModelFileProblem, Result};

/// File name of the manifest inside a model folder.
pub const MANIFEST_FILE: &str = "phiguard-manifest.json";

/// Schema version written by this build.
pub(crate) const SCHEMA: u32 = 1;

/// Where an installed model came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModelSource {
    /// Ships with phiguard (`models/phiguard-deid`); read-only.
    Bundled,
    /// Copied from a local folder by `import`.
    Imported,
    /// Fetched from the hub (or `HF_ENDPOINT`) by `pull`.
    Downloaded,
}

/// One file of a model and its checksum.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// Plain file name inside the model folder.
    pub name: String,
    /// Lowercase hex sha256 of the content.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
}

/// The record of one installed model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Schema version ([`SCHEMA`]).
    pub schema: u32,
    /// Model id (`OpenMed/…`, or the id given at import).
    pub id: String,
    /// `model_type` of `config.json`.
    pub family: String,
    /// Where it came from.
    pub source: ModelSource,
    /// Hub commit the files were fetched at (downloads only).
    #[serde(default)]
    pub revision: Option<String>,
    /// True when a download was checked against the catalog's pins (commit, sha256 and size
    /// of every file); false for unpinned downloads, imports and manifests from before pins.
    #[serde(default)]
    pub pinned: bool,
    /// SPDX licence id when known.
    #[serde(default)]
    pub license: Option<String>,
    /// Entity types from `id2label`, without BIO prefixes.
    pub labels: Vec<String>,
    /// Every file with its checksum.
    pub files: Vec<ManifestFile>,
    /// RFC 3339 time of installation.
    pub installed_at: String,
}

impl Manifest {
    /// Total size of the model's files.
    pub fn size_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// Reads and checks the manifest of a model folder.
    ///
    /// # Errors
    /// [`ModelError::Io`] if unreadable, [`ModelError::Manifest`] if malformed or from a newer
    /// schema.
    pub fn read(dir: &Path) -> Result<Manifest> {
        let bytes = std::fs::read(dir.join(MANIFEST_FILE)).map_err(io("reading a manifest"))?;
        Manifest::parse(&bytes)
    }

    /// Parses and checks manifest bytes.
    ///
    /// # Errors
    /// [`ModelError::Manifest`] if malformed, from a newer schema, or naming unsafe files.
    pub fn parse(bytes: &[u8]) -> Result<Manifest> {
        let bad = ModelError::Manifest;
        let m: Manifest =
            serde_json::from_slice(bytes).map_err(|e| bad(ManifestError::Parse(e)))?;
        if m.schema == 0 || m.schema > SCHEMA {
            return Err(bad(ManifestError::Schema));
        }
        if !super::catalog::is_valid_id(&m.id) {
            return Err(bad(ManifestError::InvalidId));
        }
        for f in &m.files {
            if !super::catalog::is_plain_file_name(&f.name) || f.name == MANIFEST_FILE {
                return Err(bad(ManifestError::UnsafeFileName));
            }
            if !is_sha256_hex(&f.sha256) {
                return Err(bad(ManifestError::MalformedChecksum));
            }
        }
        Ok(m)
    }

    /// Writes the manifest into `dir` (pretty JSON, fsynced).
    ///
    /// # Errors
    /// [`ModelError::Io`].
    pub fn write(&self, dir: &Path) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| ModelError::Manifest(ManifestError::Encode(e)))?;
        let path = dir.join(MANIFEST_FILE);
        let mut f = std::fs::File::create(&path).map_err(io("writing a manifest"))?;
        std::io::Write::write_all(&mut f, &bytes).map_err(io("writing a manifest"))?;
        f.sync_all().map_err(io("writing a manifest"))
    }
}

/// True for 64 lowercase hex digits.
pub(crate) fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Streams a file through sha256; returns (hex digest, size).
///
/// # Errors
/// [`ModelError::Io`].
pub fn sha256_file(path: &Path) -> Result<(String, u64)> {
    let mut f = std::fs::File::open(path).map_err(io("opening a file to hash"))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(io("hashing a file"))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok((hex::encode(hasher.finalize()), size))
}

/// Parses a `sha256sum`-style `SHA256SUMS` file: `<hex>  <name>` (or `<hex> *<name>`) per
/// line; blank lines and `#` comments are skipped.
///
/// # Errors
/// [`ModelError::InvalidModel`] for a malformed line.
pub fn parse_sha256sums(text: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let malformed = || {
            ModelError::invalid(
                "SHA256SUMS",
                ModelFileProblem::MalformedLine { line: i + 1 },
            )
        };
        let (hash, name) = line.split_once(char::is_whitespace).ok_or_else(malformed)?;
        let name = name.trim_start().trim_start_matches('*');
        let hash = hash.to_ascii_lowercase();
        if !is_sha256_hex(&hash) || !super::catalog::is_plain_file_name(name) {
            return Err(malformed());
        }
        out.push((hash, name.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Manifest {
        Manifest {
            schema: SCHEMA,
            id: "phiguard-test/tiny-bert".into(),
            family: "bert".into(),
            source: ModelSource::Downloaded,
            revision: Some("0f1e2d3c".into()),
            pinned: false,
            license: Some("Apache-2.0".into()),
            labels: vec!["FIRST_NAME".into()],
            files: vec![ManifestFile {
                name: "config.json".into(),
                sha256: "a".repeat(64),
                size: 12,
            }],
            installed_at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn manifest_round_trips_through_a_folder() -> Result<()> {
        let dir = tempfile::tempdir().map_err(io("tempdir"))?;
        let m = sample();
        m.write(dir.path())?;
        assert_eq!(Manifest::read(dir.path())?, m);
        assert_eq!(m.size_bytes(), 12);
        Ok(())
    }

    #[test]
    fn manifest_rejects_unsafe_content() -> Result<()> {
        let encode = |m: &Manifest| {
            serde_json::to_vec(m).map_err(|e| ModelError::Manifest(ManifestError::Encode(e)))
        };
        let mut m = sample();
        m.files[0].name = "../etc/passwd".into();
        assert!(matches!(
            Manifest::parse(&encode(&m)?),
            Err(ModelError::Manifest(ManifestError::UnsafeFileName))
        ));
        let mut m = sample();
        m.schema = SCHEMA + 1;
        assert!(matches!(
            Manifest::parse(&encode(&m)?),
            Err(ModelError::Manifest(ManifestError::Schema))
        ));
        let mut m = sample();
        m.files[0].sha256 = "XYZ".into();
        assert!(matches!(
            Manifest::parse(&encode(&m)?),
            Err(ModelError::Manifest(ManifestError::MalformedChecksum))
        ));
        assert!(Manifest::parse(b"{not json").is_err());
        Ok(())
    }

    #[test]
    fn a_malformed_manifest_keeps_the_json_error_as_its_source_and_quotes_nothing() {
        let mut m = serde_json::to_value(sample()).unwrap_or_default();
        m["schema"] = serde_json::Value::from("phiguard-test/secret-name");
        let bytes = m.to_string().into_bytes();
        let e = Manifest::parse(&bytes).expect_err("a string schema");
        assert!(
            matches!(&e, ModelError::Manifest(ManifestError::Parse(_))),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "invalid store manifest: not a manifest (unexpected data)"
        );
        let source = std::error::Error::source(&e).and_then(std::error::Error::source);
        assert!(source.is_some_and(|s| s.is::<serde_json::Error>()));
    }

    #[test]
    fn sha256_of_a_known_file() -> Result<()> {
        let dir = tempfile::tempdir().map_err(io("tempdir"))?;
        let p = dir.path().join("x");
        std::fs::write(&p, b"abc").map_err(io("write"))?;
        let (hash, size) = sha256_file(&p)?;
        assert_eq!(
            hash,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(size, 3);
        Ok(())
    }

    #[test]
    fn sha256sums_parsing() -> Result<()> {
        let h = "b".repeat(64);
        let text = format!("# comment\n{h}  model.safetensors\n\n{h} *config.json\n");
        let parsed = parse_sha256sums(&text)?;
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[1], (h.clone(), "config.json".to_owned()));
        assert!(parse_sha256sums(&format!("{h}  ../x")).is_err());
        assert!(parse_sha256sums("zz  config.json").is_err());
        let r = parse_sha256sums(&format!("# comment\n{h}  config.json\n\nzz  vocab.txt\n"));
        assert!(
            matches!(
                &r,
                Err(ModelError::InvalidModel {
                    problem: ModelFileProblem::MalformedLine { line: 4 },
                    ..
                })
            ),
            "{r:?}"
        );
        let shown = r.err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(shown, "invalid model file SHA256SUMS: malformed line 4");
        Ok(())
    }

    proptest! {
        #[test]
        fn manifest_parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = Manifest::parse(&bytes);
        }

        #[test]
        fn sha256sums_parse_never_panics(text in "\\PC{0,200}") {
            let _ = parse_sha256sums(&text);
        }
    }
}
