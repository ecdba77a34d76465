//! The one error type of the model store, catalog and downloader.
//!
//! Messages never carry a model name that came from a request, a file path or a URL: the
//! same errors reach HTTP answers and logs, and a model name typed by a caller is treated
//! like request data. File names that appear here are the fixed names of model files
//! (`config.json`, `model.safetensors`), never user input.

use std::io;

/// Every way the `models` module can fail.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Returned when a model id does not match `[A-Za-z0-9_][A-Za-z0-9_.-]*` with at most one
    /// `/`, or contains `..` or `--`.
    #[error("invalid model id")]
    InvalidId,

    /// Returned when a model to download is not in the catalog.
    #[error("model is not in the catalog")]
    NotInCatalog,

    /// Returned when an operation needs a model that is not in the store.
    #[error("model is not installed")]
    NotInstalled,

    /// Returned when an import targets an id that the store already holds.
    #[error("a model with this id is already installed")]
    AlreadyInstalled,

    /// Returned when someone tries to remove, import over or download the bundled model.
    #[error("the bundled model is read-only")]
    BundledReadOnly,

    /// Returned when a second download of the same model starts while one is running.
    #[error("a download of this model is already running")]
    Busy,

    /// Returned when a folder to import, or a downloaded file, is not a usable model.
    #[error("invalid model file {file}: {reason}")]
    InvalidModel {
        /// The model file at fault (`config.json`, `tokenizer.json`, `model.safetensors`).
        file: String,
        /// What is wrong with it.
        reason: String,
    },

    /// Returned when `config.json` names a `model_type` phiguard has no candle code for.
    #[error("unsupported model family {0}")]
    UnsupportedFamily(String),

    /// Returned when the embedded catalog or a `PHIGUARD_CATALOG_EXTRA` file is malformed.
    #[error("invalid catalog: {0}")]
    Catalog(String),

    /// Returned when a manifest in the store cannot be read or parsed.
    #[error("invalid store manifest: {0}")]
    Manifest(String),

    /// Returned when `HF_ENDPOINT` is not an http(s) URL.
    #[error("invalid hub endpoint: {0}")]
    Endpoint(String),

    /// Returned when the connection to the hub fails (after the resume attempts).
    #[error("download failed: {0}")]
    Transport(String),

    /// Returned when the hub redirects a download from https to plain http (or to a scheme
    /// other than http(s)); the redirect is not followed.
    #[error("refused a redirect from https to plain http (or to another scheme)")]
    InsecureRedirect,

    /// Returned when a catalog entry pins no commit and digests and `models.require_pinned`
    /// is on; nothing was fetched.
    #[error("the catalog entry is not pinned (no commit and sha256 per file) and models.require_pinned is on")]
    Unpinned,

    /// Returned when the hub's answer for a file of a pinned entry names another commit, or
    /// another sha256 or size than the catalog pins; nothing of the file was kept.
    #[error("hub answer for {file} disagrees with the catalog pin ({field})")]
    PinMismatch {
        /// The model file at fault.
        file: String,
        /// What disagrees: `commit`, `sha256` or `size`.
        field: &'static str,
    },

    /// Returned when the hub announces more bytes for a model than its catalog entry allows
    /// ([`crate::models::CatalogEntry::max_download_bytes`]); nothing was fetched.
    #[error("the hub announced more bytes than the catalog allows for this model")]
    TooLarge,

    /// Returned when the hub answers a status other than success for a model file.
    #[error("hub answered {status} for {file}")]
    HubStatus {
        /// HTTP status code.
        status: u16,
        /// The model file requested.
        file: String,
    },

    /// Returned when the hub sends no usable checksum (`X-Linked-Etag` / `ETag`) for a file,
    /// so the download could not be verified.
    #[error("hub sent no checksum for {file}")]
    MissingChecksum {
        /// The model file requested.
        file: String,
    },

    /// Returned when a downloaded file does not hash to the hub's checksum; the partial file
    /// has been deleted.
    #[error("checksum mismatch for {file}; the partial download was deleted")]
    ChecksumMismatch {
        /// The model file at fault.
        file: String,
    },

    /// Returned when a downloaded file is longer or shorter than the hub announced.
    #[error("size mismatch for {file}")]
    SizeMismatch {
        /// The model file at fault.
        file: String,
    },

    /// Returned when a model file about to be loaded does not match the sha256 (or size)
    /// recorded for it at install time, or, for the bundled model, the checksums this build
    /// ships; the model is not loaded.
    #[error("model file {file} does not match its recorded sha256; refusing to load it")]
    Tampered {
        /// The model file at fault.
        file: String,
    },

    /// Returned when a downloaded or imported model's manifest records no checksum for a
    /// file the loader reads, so it cannot be verified before loading.
    #[error("no checksum is recorded for {file}; refusing to load it")]
    Unverified {
        /// The model file without a checksum.
        file: String,
    },

    /// Returned when a download was cancelled; the partial files are kept for a resume.
    #[error("download cancelled")]
    Cancelled,

    /// Returned when a filesystem operation fails.
    #[error("i/o error while {op}: {source}")]
    Io {
        /// What the store was doing.
        op: &'static str,
        /// The underlying error (its text carries no path).
        #[source]
        source: io::Error,
    },
}

/// Result of the `models` module.
pub type Result<T> = std::result::Result<T, ModelError>;

/// Wraps an I/O error with what was being done, for `map_err`.
pub(crate) fn io(op: &'static str) -> impl FnOnce(io::Error) -> ModelError {
    move |source| ModelError::Io { op, source }
}

impl ModelError {
    /// Builds an [`ModelError::InvalidModel`].
    pub(crate) fn invalid(file: &str, reason: impl Into<String>) -> Self {
        ModelError::InvalidModel {
            file: file.to_owned(),
            reason: reason.into(),
        }
    }

    /// True for errors worth a retry of the same download (cut connections, timeouts,
    /// server errors); false for refusals that a retry cannot fix.
    pub fn is_transient(&self) -> bool {
        match self {
            ModelError::Transport(_) => true,
            ModelError::HubStatus { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_lowercase_without_final_period() {
        let errors = [
            ModelError::InvalidId,
            ModelError::NotInCatalog,
            ModelError::ChecksumMismatch {
                file: "model.safetensors".into(),
            },
            ModelError::Cancelled,
            io("reading the manifest")(io::Error::other("boom")),
        ];
        for e in errors {
            let m = e.to_string();
            assert!(m.chars().next().is_some_and(|c| c.is_lowercase()), "{m}");
            assert!(!m.ends_with('.'), "{m}");
        }
    }

    #[test]
    fn only_transport_and_server_errors_are_transient() {
        assert!(ModelError::Transport("reset".into()).is_transient());
        let s = |status| ModelError::HubStatus {
            status,
            file: "config.json".into(),
        };
        assert!(s(503).is_transient());
        assert!(!s(404).is_transient());
        assert!(!ModelError::Cancelled.is_transient());
    }
}
