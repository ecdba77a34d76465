//! The model catalog, the local model store, imports and downloads.
//!
//! This module owns every model file phiguard has on disk and every byte it fetches:
//!
//! * [`Catalog`]: the models phiguard knows (`models/catalog.toml`, embedded), with family,
//!   size, labels, licence, revision and files. It is the allow-list for downloads.
//! * [`Store`]: the folder of installed models (`Home::models_dir()`), each with a
//!   manifest of sha256 checksums, plus the bundled model (phiguard-deid) found (or unpacked from
//!   the binary) by [`bundle`]. `import` copies a local folder in after validating it; `verify`
//!   re-hashes; `remove` deletes (never the bundled model). [`verify_before_load`] re-checks
//!   a model's files against its manifest (the bundled model: against the checksums built
//!   into phiguard) every time the engine loads it.
//! * [`Downloader`]: fetches a catalog model from the Hugging Face Hub or a mirror
//!   (`HF_ENDPOINT`, `HF_TOKEN`), with progress, resume of cut connections, checksum
//!   verification against the hub's sha256 and cancellation.
//! * [`DownloadManager`]: this process's downloads by catalog id (state, progress, cancel),
//!   one running pull per model; `phiguard models pull` and the admin API both start, cancel
//!   and list pulls through it, each with its own [`DownloadObserver`].
//! * [`cli`]: the `phiguard models …` sub-commands as plain functions.
//!
//! # Why downloads never run unless a person asks
//! phiguard handles patient text on a clinician's machine; its network behaviour must be
//! predictable and auditable. The bundled model makes the service work offline from the
//! first start, so nothing needs fetching to serve. A download is a deliberate act (the
//! `models pull` command, the dashboard's download button, `POST /admin/models/pull`):
//! no start-up path, request handler or fallback calls [`Downloader::pull`], a request for
//! a model that is not installed fails with `model_not_served` instead of fetching it, and
//! only catalog entries can be fetched at all. Nothing about a request (and no patient
//! text) is ever part of a download.

pub mod bundle;
pub mod catalog;
pub mod cli;
pub mod download;
pub mod error;
pub mod manager;
pub mod manifest;
pub mod store;
pub mod validate;

pub use catalog::{Catalog, CatalogEntry, Task, CATALOG_EXTRA_ENV};
pub use download::{CancellationToken, Downloader, Progress, DEFAULT_ENDPOINT};
pub use error::{
    CatalogProblem, EndpointError, ManifestError, ModelError, ModelFileProblem, Result,
    TransportError, UrlError,
};
pub use manager::{
    CancelError, DownloadInfo, DownloadManager, DownloadObserver, DownloadState, Pull, StartError,
};
pub use manifest::{Manifest, ManifestFile, ModelSource};
pub use store::{
    verify_before_load, FileCheck, FileStatus, Installed, Store, VerifiedWeights, VerifyReport,
    BUNDLED_DIR_ENV, BUNDLED_ID,
};
