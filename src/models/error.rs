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

    /// Returned when an import or a download would install a model under `rules` or
    /// `default`, the names requests use for the rule recognizers and the default model:
    /// it could never be reached by its name.
    #[error("rules and default are reserved names (the rule recognizers, the default model); choose another id with --id")]
    ReservedId,

    /// Returned when a pull names a catalog entry that is built on this machine (its
    /// `build` command, then `phiguard models import`), not downloaded.
    #[error(
        "this model is not downloaded: build it with the catalog's build command and import it"
    )]
    BuildLocally,

    /// Returned when a second download of the same model starts while one is running.
    #[error("a download of this model is already running")]
    Busy,

    /// Returned when a folder to import, or a downloaded file, is not a usable model.
    #[error("invalid model file {file}: {problem}")]
    InvalidModel {
        /// The model file at fault (`config.json`, `tokenizer.json`, `model.safetensors`,
        /// `SHA256SUMS`): a fixed file name, never a path.
        file: String,
        /// What is wrong with it.
        #[source]
        problem: ModelFileProblem,
    },

    /// Returned when `config.json` names a `model_type` phiguard has no candle code for.
    ///
    /// The family stays text: it is an open set read from a model's `config.json` (never
    /// from a request, never patient data), and the operator needs the name to know which
    /// family is missing. It is only ever a name: a value longer than 32 characters or
    /// with anything but ASCII letters, digits, `-` and `_` is replaced by `(unprintable)`
    /// ([`crate::inference::config::shown_model_type`]).
    #[error("unsupported model family {0}")]
    UnsupportedFamily(String),

    /// Returned when the embedded catalog or a `PHIGUARD_CATALOG_EXTRA` file is malformed.
    #[error("invalid catalog: {}{problem}", At(*line))]
    Catalog {
        /// The 1-based line of the catalog file at fault (the `[[model]]` entry for a
        /// problem of an entry); `None` when the TOML parser gave no position.
        line: Option<usize>,
        /// What is wrong.
        #[source]
        problem: CatalogProblem,
    },

    /// Returned when a manifest in the store cannot be read or parsed.
    #[error("invalid store manifest: {0}")]
    Manifest(#[source] ManifestError),

    /// Returned when `HF_ENDPOINT` is not an http(s) URL.
    #[error("invalid hub endpoint: {0}")]
    Endpoint(#[source] EndpointError),

    /// Returned when the connection to the hub fails (after the resume attempts).
    #[error("download failed: {0}")]
    Transport(#[source] TransportError),

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

/// The error of parsing a URL (`url::ParseError`, named through reqwest's `Url` so that the
/// crate needs no direct `url` dependency). Its text never quotes the URL.
pub type UrlError = <reqwest::Url as std::str::FromStr>::Err;

/// What is wrong with a model file ([`ModelError::InvalidModel`]). Sources are kept where a
/// parser or the file system gave one; no variant carries file content or a path.
#[derive(Debug, thiserror::Error)]
pub enum ModelFileProblem {
    /// Returned when a required model file is absent.
    #[error("missing")]
    Missing,
    /// Returned when a JSON model file is larger than the validator reads (64 MiB).
    #[error("too large")]
    TooLarge,
    /// Returned when `config.json` or `tokenizer.json` does not parse as JSON.
    #[error("not valid JSON")]
    NotJson(#[source] serde_json::Error),
    /// Returned when `config.json` has no string `model_type`.
    #[error("no model_type")]
    NoModelType,
    /// Returned when `config.json` has no non-empty `id2label` object.
    #[error("no id2label")]
    NoId2Label,
    /// Returned when a key of `id2label` is not an integer.
    #[error("id2label key is not an integer")]
    Id2LabelKey(#[source] std::num::ParseIntError),
    /// Returned when a value of `id2label` is not a string.
    #[error("id2label value is not a string")]
    Id2LabelValue,
    /// Returned when the ids of `id2label` are not exactly `0..n`.
    #[error("id2label ids are not 0..n")]
    Id2LabelIds,
    /// Returned when `tokenizer.json` has no `model` object.
    #[error("no model section")]
    NoModelSection,
    /// Returned when the `model` object of `tokenizer.json` has neither `type` nor `vocab`.
    #[error("model section has neither type nor vocab")]
    EmptyModelSection,
    /// Returned when `model.safetensors` ends inside its length prefix or header.
    #[error("truncated header")]
    TruncatedHeader(#[source] io::Error),
    /// Returned when the safetensors header length is zero, too large or past the file.
    #[error("bad header length")]
    HeaderLength,
    /// Returned when the safetensors header is not JSON.
    #[error("header is not JSON")]
    HeaderNotJson(#[source] serde_json::Error),
    /// Returned when the safetensors header is JSON but not an object.
    #[error("header is not an object")]
    HeaderNotObject,
    /// Returned when a tensor has a dtype the format does not define.
    #[error("unknown dtype")]
    UnknownDtype,
    /// Returned when a tensor has no `shape` array.
    #[error("no shape")]
    NoShape,
    /// Returned when a tensor's shape is not a list of sizes, or overflows.
    #[error("bad shape")]
    BadShape,
    /// Returned when a tensor has no two-element `data_offsets`.
    #[error("no data_offsets")]
    NoDataOffsets,
    /// Returned when a tensor's `data_offsets` are not an ordered pair of integers.
    #[error("bad data_offsets")]
    BadDataOffsets,
    /// Returned when a tensor's data ends past the end of the file.
    #[error("tensor data lies past the end of the file")]
    PastEnd,
    /// Returned when a tensor's byte count disagrees with its dtype and shape.
    #[error("tensor byte count does not match its shape")]
    ByteCount,
    /// Returned when the header declares no tensor.
    #[error("no tensors")]
    NoTensors,
    /// Returned when the data section is longer or shorter than the tensors need.
    #[error("data section size does not match the header")]
    DataSize,
    /// Returned when a file to import is a symbolic link.
    #[error("is a symbolic link; import copies regular files only")]
    SymbolicLink,
    /// Returned when a file to import is not a regular file (a folder, a device).
    #[error("is not a regular file")]
    NotRegular,
    /// Returned when a file to import resolves outside the folder being imported.
    #[error("resolves outside the folder")]
    OutsideFolder,
    /// Returned when a file does not hash to the sha256 its `SHA256SUMS` lists.
    #[error("does not match SHA256SUMS")]
    SumsMismatch,
    /// Returned when the embedded model ships no `SHA256SUMS`.
    #[error("the embedded model has none")]
    NoSums,
    /// Returned when the embedded `SHA256SUMS` is not UTF-8.
    #[error("not UTF-8")]
    NotUtf8(#[source] std::str::Utf8Error),
    /// Returned when a file listed in the embedded `SHA256SUMS` is not embedded.
    #[error("missing from the embedded model")]
    NotEmbedded,
    /// Returned when a line of `SHA256SUMS` is not `<sha256>  <plain file name>`.
    #[error("malformed line {line}")]
    MalformedLine {
        /// The 1-based line number.
        line: usize,
    },
}

/// What is wrong with a catalog file ([`ModelError::Catalog`]).
#[derive(Debug, thiserror::Error)]
pub enum CatalogProblem {
    /// Returned when the file is not TOML of the catalog's shape (a syntax error, an unknown
    /// field, a missing one, a value of the wrong type). The message is the parser's (it
    /// names the field and may quote a catalog value, never more); the source is the TOML
    /// error, stripped of its copy of the file.
    #[error("{}", .0.message())]
    Syntax(#[source] toml::de::Error),
    /// Returned when an entry's id is not a valid model id.
    #[error("invalid id")]
    InvalidId,
    /// Returned when an entry has an empty alias.
    #[error("empty alias")]
    EmptyAlias,
    /// Returned when an id or alias is already used, by this entry, an earlier one or the
    /// catalog being extended.
    #[error("id or alias defined twice")]
    Duplicate,
    /// Returned when `files` is empty or names something other than plain file names.
    #[error("files must be a non-empty list of plain file names")]
    Files,
    /// Returned when `files` lacks `config.json`, `tokenizer.json` or `model.safetensors`.
    #[error("files must include the three model files")]
    MissingModelFile,
    /// Returned when `labels` is empty or holds a name that is not UPPER_SNAKE.
    #[error("labels must be non-empty UPPER_SNAKE names")]
    Labels,
    /// Returned when `revision` is not a plain name.
    #[error("invalid revision")]
    Revision,
    /// Returned when the bundled entry has pins.
    #[error("the bundled model is checked by its SHA256SUMS, not pins")]
    PinnedBundle,
    /// Returned when a pinned entry's revision is not a 40-hex commit.
    #[error("pins need a 40-hex commit revision")]
    PinsNeedCommit,
    /// Returned when a pin names a file the entry does not fetch.
    #[error("a pin names a file the entry does not fetch")]
    PinUnknownFile,
    /// Returned when a pin's sha256 is not 64 lowercase hex digits.
    #[error("a pin's sha256 must be 64 lowercase hex digits")]
    PinSha256,
    /// Returned when the pins do not name every file of the entry exactly once.
    #[error("pins must name every file exactly once")]
    PinsIncomplete,
    /// Returned when `family` or `license` is empty.
    #[error("family and license are required")]
    FamilyLicense,
    /// Returned when the bundled entry's id has an `org/` part.
    #[error("the bundled model has a plain id")]
    BundledId,
    /// Returned when an entry with a `build` command is also bundled or pinned (it is built
    /// on the machine, neither shipped nor fetched).
    #[error("a model built locally is neither bundled nor pinned")]
    BuildNotFetched,
    /// Returned when a downloadable entry's id has no `org/` part.
    #[error("a downloadable model has an org/name id")]
    DownloadId,
    /// Returned when a second entry is marked bundled.
    #[error("more than one bundled model")]
    TwoBundled,
}

/// What is wrong with a store manifest ([`ModelError::Manifest`]).
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Returned when `manifest.json` does not parse as a manifest. The message names the
    /// category only; the source is serde_json's error, whose text may quote the manifest
    /// (a model id, a file name).
    #[error("not a manifest ({})", category(.0))]
    Parse(#[source] serde_json::Error),
    /// Returned when the manifest's schema is 0 or newer than this build reads.
    #[error("unknown schema version")]
    Schema,
    /// Returned when the manifest's id is not a valid model id.
    #[error("invalid id")]
    InvalidId,
    /// Returned when the manifest lists a file that is not a plain name, or itself.
    #[error("unsafe file name")]
    UnsafeFileName,
    /// Returned when a file's checksum is not 64 lowercase hex digits.
    #[error("malformed checksum")]
    MalformedChecksum,
    /// Returned when a manifest cannot be encoded for writing.
    #[error("cannot be encoded ({})", category(.0))]
    Encode(#[source] serde_json::Error),
}

/// `serde_json` error category as a static word (its message can quote input).
fn category(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Io => "i/o",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "unexpected data",
        serde_json::error::Category::Eof => "truncated",
    }
}

/// Why the hub endpoint cannot be used ([`ModelError::Endpoint`]).
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// Returned when the endpoint (or a URL built on it) does not parse as a URL.
    #[error("not a URL")]
    NotAUrl(#[source] UrlError),
    /// Returned when the endpoint is a URL but not http(s) with a host.
    #[error("must be an http or https URL")]
    NotHttp,
    /// Returned when the HTTP client cannot be built (its TLS set-up failed).
    #[error("cannot build an http client")]
    Client(#[source] reqwest::Error),
}

/// How talking to the hub failed ([`ModelError::Transport`]); every variant is worth a
/// retry ([`ModelError::is_transient`]). The reqwest errors kept as sources are stripped of
/// their URL (which names the model).
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// Returned when a request or a read of the body timed out.
    #[error("timed out")]
    Timeout(#[source] reqwest::Error),
    /// Returned when no connection to the hub could be made (DNS, TCP, TLS).
    #[error("could not connect to the hub")]
    Connect(#[source] reqwest::Error),
    /// Returned when the body stopped arriving or could not be decoded.
    #[error("connection interrupted")]
    Interrupted(#[source] reqwest::Error),
    /// Returned when a request failed in any other way.
    #[error("request failed")]
    Request(#[source] reqwest::Error),
    /// Returned when a request was redirected more than the downloader follows.
    #[error("too many redirects")]
    TooManyRedirects,
    /// Returned when a redirect's `Location` is not a URL.
    #[error("bad redirect")]
    BadRedirect(#[source] UrlError),
    /// Returned when the hub's answer to a HEAD has no size for the file.
    #[error("hub sent no file size")]
    NoFileSize,
    /// Returned when the hub answers a resumed request with another range than asked for.
    #[error("hub answered a different range")]
    WrongRange,
    /// Returned when the hub refuses the range of a resumed request; the partial file has
    /// been deleted, so the next attempt starts over.
    #[error("range not satisfiable; restarting")]
    RangeNotSatisfiable,
    /// Returned when the body ended before the announced size.
    #[error("connection closed early")]
    ClosedEarly,
}

impl TransportError {
    /// Classifies a reqwest error, dropping its URL.
    pub(crate) fn from_reqwest(e: reqwest::Error) -> Self {
        let e = e.without_url();
        if e.is_timeout() {
            TransportError::Timeout(e)
        } else if e.is_connect() {
            TransportError::Connect(e)
        } else if e.is_body() || e.is_decode() {
            TransportError::Interrupted(e)
        } else {
            TransportError::Request(e)
        }
    }
}

/// `line N: ` before a problem, or nothing when there is no position.
struct At(Option<usize>);

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(line) => write!(f, "line {line}: "),
            None => Ok(()),
        }
    }
}

/// Wraps an I/O error with what was being done, for `map_err`.
pub(crate) fn io(op: &'static str) -> impl FnOnce(io::Error) -> ModelError {
    move |source| ModelError::Io { op, source }
}

impl ModelError {
    /// Builds an [`ModelError::InvalidModel`].
    pub(crate) fn invalid(file: &str, problem: ModelFileProblem) -> Self {
        ModelError::InvalidModel {
            file: file.to_owned(),
            problem,
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
            ModelError::Transport(TransportError::ClosedEarly),
            ModelError::Endpoint(EndpointError::NotHttp),
            ModelError::Manifest(ManifestError::Schema),
            ModelError::invalid("config.json", ModelFileProblem::NoId2Label),
            ModelError::Catalog {
                line: Some(3),
                problem: CatalogProblem::Duplicate,
            },
        ];
        for e in errors {
            let m = e.to_string();
            assert!(m.chars().next().is_some_and(|c| c.is_lowercase()), "{m}");
            assert!(!m.ends_with('.'), "{m}");
        }
    }

    #[test]
    fn catalog_errors_show_their_line_when_there_is_one() {
        let at = |line| ModelError::Catalog {
            line,
            problem: CatalogProblem::TwoBundled,
        };
        assert_eq!(
            at(Some(12)).to_string(),
            "invalid catalog: line 12: more than one bundled model"
        );
        assert_eq!(
            at(None).to_string(),
            "invalid catalog: more than one bundled model"
        );
        assert!(std::error::Error::source(&at(None)).is_some());
    }

    #[test]
    fn only_transport_and_server_errors_are_transient() {
        assert!(ModelError::Transport(TransportError::ClosedEarly).is_transient());
        let s = |status| ModelError::HubStatus {
            status,
            file: "config.json".into(),
        };
        assert!(s(503).is_transient());
        assert!(!s(404).is_transient());
        assert!(!ModelError::Cancelled.is_transient());
    }
}
