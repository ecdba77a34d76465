//! Downloads of catalog models from the Hugging Face Hub (or any server with its URL layout,
//! named by `HF_ENDPOINT`), resumable, checksum-verified, cancellable, with progress.
//!
//! # Why not the `hf-hub` crate
//! The design first pointed at `hf-hub`. Its tokio API downloads into its own cache layout
//! (`blobs/` + `snapshots/` symlinks) rather than into our store, does not verify the
//! sha256 the hub announces, and has no cancellation other than dropping the future
//! (which leaves no defined partial state). Each of those is a requirement here, so this
//! module speaks the hub protocol directly with `reqwest`; the protocol is small:
//!
//! * `HEAD {endpoint}/{repo}/resolve/{revision}/{file}`, without following redirects,
//!   answers `X-Repo-Commit`, and for large-file-storage files a 302 to the CDN carrying
//!   `X-Linked-Etag` (the file's sha256) and `X-Linked-Size`; small files answer 200 with
//!   `ETag` = the git blob sha1 and `Content-Length`.
//! * `GET` of the same URL (redirects followed, see below) with `Range: bytes=N-` resumes a
//!   cut download.
//!
//! # Why redirects are followed by hand
//! The hub answers a weights file with a redirect to its CDN, another host. reqwest's own
//! redirect policy (0.12) drops `Authorization` when the host or port changes, but not when
//! only the scheme does, and it follows a redirect from https to plain http. Both matter
//! here: the token is `HF_TOKEN`, and a downgrade lets anyone on the path swap the weights
//! (the hub's sha256 still catches that, but the token would already have travelled in the
//! clear on a same-host downgrade). So the client follows no redirects itself, and every hop
//! goes through [`next_hop`] and [`sends_token`]:
//!
//! * the token goes only to the endpoint's own origin (scheme, host and port); any hop to
//!   another origin is sent without it, and so is every later hop of that chain;
//! * a redirect from https to http is refused ([`ModelError::InsecureRedirect`]), as is any
//!   scheme other than http(s); at most [`MAX_REDIRECTS`] hops are followed.
//!
//! # What is checked, and against what
//! For a pinned catalog entry (see [`super::catalog`], "Pins") every request asks for the
//! pinned commit, a HEAD answer naming another commit, size or sha256 is refused before the
//! file is fetched ([`ModelError::PinMismatch`]), and the bytes must hash to the pin. For an
//! unpinned entry the hub's own answer is all there is: its sha256 (or git blob sha1) and
//! size are checked, the announced total may not exceed the entry's
//! [`CatalogEntry::max_download_bytes`] ([`ModelError::TooLarge`]), the manifest records the
//! model as unpinned, and a warning is logged; `models.require_pinned` refuses such pulls
//! before any traffic ([`ModelError::Unpinned`]). Either way a body is cut off the moment it
//! runs past the expected size: nothing beyond it is written ([`ModelError::SizeMismatch`]).
//!
//! # What happens on disk
//! Every file goes to `<store>/.partial/<folder>/<file>.partial` (with a `.etag` note of the
//! checksum it belongs to, so a partial from an older revision is discarded, not resumed).
//! A cut connection is resumed with `Range` from the bytes already on disk, up to a bounded
//! number of attempts. A complete file is hashed; on a mismatch it is deleted and the pull
//! fails. Verified files are renamed to their final name; when all are there the folder is
//! validated, given its manifest and renamed into the store in one step.
//!
//! Cancellation (the `CancellationToken`) stops within one network chunk and **keeps** the
//! partial files: the next `pull` of the same model resumes them. `Store::remove` discards
//! them.
//!
//! # Why nothing downloads unless a person asks
//! A download only starts from an explicit `pull` of a catalog entry (CLI, dashboard or
//! admin API); nothing at start-up or on a request path calls it. A name that is not in the
//! catalog is refused before any network traffic, and only the catalog id (never the name
//! as typed) appears in logs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{HeaderMap, AUTHORIZATION, CONTENT_LENGTH, CONTENT_RANGE, LOCATION, RANGE};
use reqwest::{StatusCode, Url};
use serde::Serialize;
use sha1::Sha1;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
pub use tokio_util::sync::CancellationToken;

use super::catalog::{is_plain_file_name, Catalog, CatalogEntry, FilePin};
use super::error::{io, EndpointError, ModelError, Result, TransportError};
use super::manifest::ManifestFile;
use super::store::{Installed, ModelSource, Store};

/// Default hub.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Redirects followed for one request before it fails.
const MAX_REDIRECTS: usize = 10;

/// One progress report of a pull.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// Catalog id of the model.
    pub id: String,
    /// The file being fetched now.
    pub file: String,
    /// Bytes of the whole model on disk so far (resumed bytes included).
    pub bytes: u64,
    /// Size of the whole model, from the hub's answers.
    pub total_bytes: u64,
    /// True on the last report, once the model is installed.
    pub done: bool,
}

/// The checksum the hub announced for a file.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Checksum {
    /// sha256 of the content (large-file-storage files).
    Sha256(String),
    /// git blob sha1 (`sha1("blob <len>\0" + content)`, regular files).
    GitSha1(String),
}

impl Checksum {
    /// Parses an `ETag` / `X-Linked-Etag` value (`W/"…"` or `"…"`).
    fn parse(etag: &str) -> Option<Checksum> {
        let v = etag
            .trim()
            .trim_start_matches("W/")
            .trim_matches('"')
            .to_ascii_lowercase();
        if !v.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        match v.len() {
            64 => Some(Checksum::Sha256(v)),
            40 => Some(Checksum::GitSha1(v)),
            _ => None,
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Checksum::Sha256(s) | Checksum::GitSha1(s) => s,
        }
    }
}

/// What a HEAD told us about one file.
#[derive(Clone, Debug)]
struct FileMeta {
    name: String,
    size: u64,
    checksum: Checksum,
    commit: Option<String>,
    /// The catalog's sha256 for the file, when the entry is pinned.
    pinned_sha256: Option<String>,
}

/// Fetches catalog models into a [`Store`].
#[derive(Clone)]
pub struct Downloader {
    /// Follows no redirects: [`Downloader::send`] does, hop by hop.
    client: reqwest::Client,
    endpoint: String,
    /// The endpoint parsed, whose origin alone receives the token.
    origin: Url,
    token: Option<String>,
    catalog: Catalog,
    max_attempts: u32,
    retry_backoff: Duration,
    require_pinned: bool,
}

impl std::fmt::Debug for Downloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Downloader")
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("max_attempts", &self.max_attempts)
            .finish_non_exhaustive()
    }
}

impl Downloader {
    /// A downloader for `endpoint` (`https://huggingface.co` or a mirror). The token is sent
    /// as `Authorization: Bearer` only over https or to a loopback host, and only to the
    /// endpoint's own origin (see "Why redirects are followed by hand").
    ///
    /// # Errors
    /// [`ModelError::Endpoint`] if `endpoint` is not an http(s) URL.
    pub fn new(endpoint: &str, token: Option<String>, catalog: Catalog) -> Result<Downloader> {
        let url = Url::parse(endpoint).map_err(not_a_url)?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(ModelError::Endpoint(EndpointError::NotHttp));
        }
        let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
        let token = token
            .filter(|t| !t.trim().is_empty())
            .filter(|_| url.scheme() == "https" || loopback);
        let agent = concat!("phiguard/", env!("CARGO_PKG_VERSION"));
        let client = reqwest::Client::builder()
            .user_agent(agent)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(30))
            .read_timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| ModelError::Endpoint(EndpointError::Client(e.without_url())))?;
        Ok(Downloader {
            client,
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            origin: url,
            token,
            catalog,
            max_attempts: 5,
            retry_backoff: Duration::from_millis(500),
            require_pinned: false,
        })
    }

    /// A downloader for `HF_ENDPOINT` (default [`DEFAULT_ENDPOINT`]) with `HF_TOKEN`.
    ///
    /// # Errors
    /// As [`Downloader::new`].
    pub fn from_env(catalog: Catalog) -> Result<Downloader> {
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|e| !e.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
        Downloader::new(&endpoint, std::env::var("HF_TOKEN").ok(), catalog)
    }

    /// Attempts per request before a transient failure is final (default 5, at least 1).
    pub fn with_max_attempts(mut self, attempts: u32) -> Downloader {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Pause before attempt `n` is `n × backoff` (default 500 ms).
    pub fn with_retry_backoff(mut self, backoff: Duration) -> Downloader {
        self.retry_backoff = backoff;
        self
    }

    /// Refuse entries without pins (`models.require_pinned`; default false: they are
    /// fetched, checked against the hub's own checksums, and recorded as unpinned).
    pub fn with_require_pinned(mut self, require: bool) -> Downloader {
        self.require_pinned = require;
        self
    }

    /// The catalog this downloader accepts names from.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The hub endpoint.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Downloads the catalog model named `id` (an id or alias) into `store` and returns it.
    /// A model already installed is returned as is (one `done` report). See the module doc
    /// for resume, verification and cancellation.
    ///
    /// # Errors
    /// [`ModelError::NotInCatalog`], [`ModelError::BundledReadOnly`],
    /// [`ModelError::BuildLocally`], [`ModelError::Busy`],
    /// [`ModelError::Cancelled`] (partials kept), [`ModelError::ChecksumMismatch`] (partial
    /// deleted), [`ModelError::Unpinned`], [`ModelError::PinMismatch`],
    /// [`ModelError::TooLarge`], [`ModelError::InsecureRedirect`], [`ModelError::HubStatus`], [`ModelError::Transport`] after the attempts,
    /// [`ModelError::InvalidModel`], [`ModelError::Io`].
    pub async fn pull(
        &self,
        store: &Store,
        id: &str,
        progress: impl Fn(Progress) + Send + Sync,
        cancel: CancellationToken,
    ) -> Result<Installed> {
        let entry = self
            .catalog
            .get(id)
            .ok_or(ModelError::NotInCatalog)?
            .clone();
        if entry.bundled {
            return Err(ModelError::BundledReadOnly);
        }
        if entry.build.is_some() {
            return Err(ModelError::BuildLocally);
        }
        if !entry.is_pinned() && self.require_pinned {
            return Err(ModelError::Unpinned);
        }
        let report = |file: &str, bytes: u64, total: u64, done: bool| {
            progress(Progress {
                id: entry.id.clone(),
                file: file.to_owned(),
                bytes,
                total_bytes: total,
                done,
            })
        };
        if let Some(m) = store.get(&entry.id) {
            report("", m.size_bytes, m.size_bytes, true);
            return Ok(m);
        }
        let lock = blocking({
            let (store, id) = (store.clone(), entry.id.clone());
            move || store.lock_download(&id)
        })
        .await?;
        if let Some(m) = store.get(&entry.id) {
            report("", m.size_bytes, m.size_bytes, true);
            return Ok(m);
        }
        tracing::info!(model = %entry.id, "model download started");
        let result = self.pull_locked(store, &entry, &report, &cancel).await;
        match &result {
            Ok(_) => {
                tracing::info!(model = %entry.id, "model download finished");
                if let Ok(lock_path) = store.lock_path(&entry.id) {
                    let _ = std::fs::remove_file(lock_path);
                }
            }
            Err(e) => tracing::warn!(model = %entry.id, error = %e, "model download stopped"),
        }
        drop(lock);
        result
    }

    async fn pull_locked(
        &self,
        store: &Store,
        entry: &CatalogEntry,
        report: &(impl Fn(&str, u64, u64, bool) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Installed> {
        let target = store.check_new_id(&entry.id)?;
        let partial = store.partial_dir(&entry.id)?;
        tokio::fs::create_dir_all(&partial)
            .await
            .map_err(io("creating the partial download folder"))?;

        // Learn sizes and checksums first, so progress has a total from the start. A pinned
        // entry's answers must agree with its pins; for an unpinned one the first answer's
        // commit pins the rest: files of one model never mix revisions.
        let pinned = entry.is_pinned();
        if !pinned {
            tracing::warn!(
                model = %entry.id,
                "catalog entry is unpinned; checked against the hub's own checksums only"
            );
        }
        let mut revision = entry.revision.clone();
        let mut metas = Vec::with_capacity(entry.files.len());
        for file in &entry.files {
            let mut meta = self
                .with_retries(cancel, file, || self.head(&entry.id, &revision, file))
                .await?;
            match entry.pin(file) {
                Some(pin) => {
                    check_pin(&meta, pin, &entry.revision)?;
                    meta.pinned_sha256 = Some(pin.sha256.clone());
                }
                None => {
                    if let Some(commit) = meta.commit.as_ref().filter(|c| is_plain_file_name(c)) {
                        revision = commit.clone();
                    }
                }
            }
            metas.push(meta);
        }
        let total = metas.iter().fold(0u64, |sum, m| sum.saturating_add(m.size));
        if total > entry.max_download_bytes() {
            return Err(ModelError::TooLarge);
        }
        let mut done_before = 0u64;
        let mut files = Vec::with_capacity(metas.len());
        for meta in &metas {
            let sha256 = self
                .fetch_file(&entry.id, &revision, meta, &partial, cancel, &|bytes| {
                    report(&meta.name, done_before + bytes, total, false)
                })
                .await?;
            done_before += meta.size;
            files.push(ManifestFile {
                name: meta.name.clone(),
                sha256,
                size: meta.size,
            });
        }
        let commit = metas.iter().find_map(|m| m.commit.clone());
        let installed = blocking({
            let (store, id, license) = (store.clone(), entry.id.clone(), entry.license.clone());
            move || {
                let r = store.commit_dir(
                    &id,
                    &partial,
                    &target,
                    files,
                    ModelSource::Downloaded,
                    commit,
                    pinned,
                    Some(license),
                );
                if matches!(
                    r,
                    Err(ModelError::InvalidModel { .. } | ModelError::UnsupportedFamily(_))
                ) {
                    // Verified bytes that are still not a model: keeping them helps no one.
                    let _ = std::fs::remove_dir_all(&partial);
                }
                r
            }
        })
        .await?;
        report("", total, total, true);
        Ok(installed)
    }

    /// Runs `op` until it succeeds, fails for good, or the attempts run out.
    async fn with_retries<T, F, Fut>(
        &self,
        cancel: &CancellationToken,
        file: &str,
        mut op: F,
    ) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let mut attempt = 1;
        loop {
            if cancel.is_cancelled() {
                return Err(ModelError::Cancelled);
            }
            // `op` watches the token itself: the body loop flushes the partial before it
            // returns `Cancelled`. Dropping it from a select here instead would leave a write
            // of the async file in flight, so the kept partial could still grow afterwards.
            let r = op().await;
            match r {
                Err(e) if e.is_transient() && attempt < self.max_attempts => {
                    tracing::warn!(file, attempt, error = %e, "model download interrupted; resuming");
                    let pause = self.retry_backoff.saturating_mul(attempt);
                    tokio::select! {
                        biased;
                        _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                        _ = tokio::time::sleep(pause) => {}
                    }
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn url(&self, repo: &str, revision: &str, file: &str) -> String {
        format!("{}/{repo}/resolve/{revision}/{file}", self.endpoint)
    }

    /// One request to `url`, without following redirects; the token is attached only when
    /// `authorized` and `url` is on the endpoint's origin.
    async fn send_once(
        &self,
        method: reqwest::Method,
        url: &Url,
        authorized: bool,
        range_from: Option<u64>,
    ) -> Result<reqwest::Response> {
        let mut req = self.client.request(method, url.clone());
        if let Some(t) = self.token.as_ref().filter(|_| authorized) {
            if sends_token(&self.origin, url) {
                req = req.header(AUTHORIZATION, format!("Bearer {t}"));
            }
        }
        if let Some(from) = range_from.filter(|n| *n > 0) {
            req = req.header(RANGE, format!("bytes={from}-"));
        }
        req.send().await.map_err(transport)
    }

    /// A GET that follows redirects by [`next_hop`]; once a hop leaves the endpoint's
    /// origin, no later hop carries the token.
    async fn get(&self, url: &str, range_from: Option<u64>) -> Result<reqwest::Response> {
        let mut url = Url::parse(url).map_err(not_a_url)?;
        let mut authorized = true;
        for _ in 0..=MAX_REDIRECTS {
            let resp = self
                .send_once(reqwest::Method::GET, &url, authorized, range_from)
                .await?;
            if !is_followed_redirect(resp.status()) {
                return Ok(resp);
            }
            let Some(location) = header(resp.headers(), LOCATION.as_str()) else {
                return Ok(resp);
            };
            url = next_hop(&url, &location)?;
            authorized &= sends_token(&self.origin, &url);
        }
        Err(ModelError::Transport(TransportError::TooManyRedirects))
    }

    /// HEAD of one file, following only redirects that do not carry the hub's headers.
    async fn head(&self, repo: &str, revision: &str, file: &str) -> Result<FileMeta> {
        let mut url = Url::parse(&self.url(repo, revision, file)).map_err(not_a_url)?;
        let mut commit = None;
        let mut authorized = true;
        for _ in 0..=MAX_REDIRECTS {
            let resp = self
                .send_once(reqwest::Method::HEAD, &url, authorized, None)
                .await?;
            let status = resp.status();
            let h = resp.headers();
            commit = commit.or_else(|| header(h, "x-repo-commit"));
            if status.is_redirection() {
                let linked = header(h, "x-linked-etag").and_then(|e| Checksum::parse(&e));
                let size = header(h, "x-linked-size").and_then(|s| s.parse().ok());
                if let (Some(checksum), Some(size)) = (linked, size) {
                    return Ok(FileMeta {
                        name: file.to_owned(),
                        size,
                        checksum,
                        commit,
                        pinned_sha256: None,
                    });
                }
                let next = header(h, LOCATION.as_str()).ok_or(ModelError::HubStatus {
                    status: status.as_u16(),
                    file: file.to_owned(),
                })?;
                url = next_hop(&url, &next)?;
                authorized &= sends_token(&self.origin, &url);
                continue;
            }
            if !status.is_success() {
                return Err(ModelError::HubStatus {
                    status: status.as_u16(),
                    file: file.to_owned(),
                });
            }
            let checksum = header(h, "x-linked-etag")
                .or_else(|| header(h, "etag"))
                .and_then(|e| Checksum::parse(&e))
                .ok_or_else(|| ModelError::MissingChecksum {
                    file: file.to_owned(),
                })?;
            let size = header(h, "x-linked-size")
                .or_else(|| header(h, CONTENT_LENGTH.as_str()))
                .and_then(|s| s.parse().ok())
                .ok_or(ModelError::Transport(TransportError::NoFileSize))?;
            return Ok(FileMeta {
                name: file.to_owned(),
                size,
                checksum,
                commit,
                pinned_sha256: None,
            });
        }
        Err(ModelError::Transport(TransportError::TooManyRedirects))
    }

    /// Fetches one file into the partial folder (resuming), verifies it and gives it its
    /// final name. Returns its sha256.
    async fn fetch_file(
        &self,
        repo: &str,
        revision: &str,
        meta: &FileMeta,
        partial: &Path,
        cancel: &CancellationToken,
        on_bytes: &(impl Fn(u64) + Send + Sync),
    ) -> Result<String> {
        let done = partial.join(&meta.name);
        let part = partial.join(format!("{}.partial", meta.name));
        let tag = partial.join(format!("{}.partial.etag", meta.name));

        // A file verified by an earlier, interrupted pull is kept if it still matches.
        if done.is_file() {
            let (sha256, sha1, size) = hash_file(done.clone()).await?;
            if meta.verifies(&sha256, &sha1, size) {
                on_bytes(size);
                return Ok(sha256);
            }
            remove(&done).await?;
        }
        // A partial of another version of the file is not resumable.
        let same_version = tokio::fs::read_to_string(&tag)
            .await
            .is_ok_and(|t| t.trim() == meta.checksum.as_str());
        if !same_version {
            remove(&part).await?;
            tokio::fs::write(&tag, meta.checksum.as_str())
                .await
                .map_err(io("writing a partial download note"))?;
        }

        let url = self.url(repo, revision, &meta.name);
        self.with_retries(cancel, &meta.name, || {
            self.fetch_range(&url, &part, meta, cancel, on_bytes)
        })
        .await?;

        let (sha256, sha1, size) = hash_file(part.clone()).await?;
        if !meta.verifies(&sha256, &sha1, size) {
            remove(&part).await?;
            remove(&tag).await?;
            return Err(if size != meta.size {
                ModelError::SizeMismatch {
                    file: meta.name.clone(),
                }
            } else {
                ModelError::ChecksumMismatch {
                    file: meta.name.clone(),
                }
            });
        }
        tokio::fs::rename(&part, &done)
            .await
            .map_err(io("moving a verified download"))?;
        remove(&tag).await?;
        Ok(sha256)
    }

    /// One GET from the bytes already in `part` to the end of the file.
    async fn fetch_range(
        &self,
        url: &str,
        part: &Path,
        meta: &FileMeta,
        cancel: &CancellationToken,
        on_bytes: &(impl Fn(u64) + Send + Sync),
    ) -> Result<()> {
        let mut have = match tokio::fs::metadata(part).await {
            Ok(m) => m.len(),
            Err(_) => 0,
        };
        if have > meta.size {
            remove(part).await?;
            have = 0;
        }
        on_bytes(have);
        if have == meta.size {
            return Ok(());
        }
        let resp = self.get(url, Some(have)).await?;
        let status = resp.status();
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(part)
            .await
            .map_err(io("opening a partial download"))?;
        match status {
            StatusCode::PARTIAL_CONTENT => {
                let start = header(resp.headers(), CONTENT_RANGE.as_str())
                    .and_then(|r| content_range_start(&r));
                if start != Some(have) {
                    return Err(ModelError::Transport(TransportError::WrongRange));
                }
            }
            StatusCode::OK => {
                // The server ignored the range: start over.
                file.set_len(0)
                    .await
                    .map_err(io("truncating a partial download"))?;
                have = 0;
                on_bytes(0);
            }
            StatusCode::RANGE_NOT_SATISFIABLE => {
                remove(part).await?;
                return Err(ModelError::Transport(TransportError::RangeNotSatisfiable));
            }
            s => {
                return Err(ModelError::HubStatus {
                    status: s.as_u16(),
                    file: meta.name.clone(),
                });
            }
        }
        let mut stream = resp.bytes_stream();
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    file.flush().await.map_err(io("writing a partial download"))?;
                    return Err(ModelError::Cancelled);
                }
                next = stream.next() => next,
            };
            match next {
                Some(Ok(chunk)) => {
                    have += chunk.len() as u64;
                    if have > meta.size {
                        file.flush()
                            .await
                            .map_err(io("writing a partial download"))?;
                        remove(part).await?;
                        return Err(ModelError::SizeMismatch {
                            file: meta.name.clone(),
                        });
                    }
                    file.write_all(&chunk)
                        .await
                        .map_err(io("writing a partial download"))?;
                    on_bytes(have);
                }
                Some(Err(e)) => {
                    file.flush()
                        .await
                        .map_err(io("writing a partial download"))?;
                    return Err(transport(e));
                }
                None => break,
            }
        }
        file.flush()
            .await
            .map_err(io("writing a partial download"))?;
        if have < meta.size {
            return Err(ModelError::Transport(TransportError::ClosedEarly));
        }
        Ok(())
    }
}

/// True for the redirect statuses a download follows (301, 302, 303, 307, 308).
fn is_followed_redirect(status: StatusCode) -> bool {
    matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
}

/// The URL a redirect from `from` to `location` leads to.
///
/// # Errors
/// [`ModelError::InsecureRedirect`] for a hop from https to http, or to any scheme other
/// than http(s); [`ModelError::Transport`] when `location` is not a URL.
fn next_hop(from: &Url, location: &str) -> Result<Url> {
    let next = from
        .join(location)
        .map_err(|e| ModelError::Transport(TransportError::BadRedirect(e)))?;
    match (from.scheme(), next.scheme()) {
        (_, "https") | ("http", "http") if next.host_str().is_some() => Ok(next),
        _ => Err(ModelError::InsecureRedirect),
    }
}

/// True when `url` is on the endpoint's origin (scheme, host and port), the only place the
/// token is sent.
fn sends_token(origin: &Url, url: &Url) -> bool {
    url.scheme() == origin.scheme()
        && url.host_str() == origin.host_str()
        && url.port_or_known_default() == origin.port_or_known_default()
}

/// A header as text.
fn header(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// Start offset of `Content-Range: bytes START-END/TOTAL`.
fn content_range_start(v: &str) -> Option<u64> {
    v.trim()
        .strip_prefix("bytes ")?
        .split('-')
        .next()?
        .trim()
        .parse()
        .ok()
}

/// A transport error, kept as the source without its URL (which names the model).
fn transport(e: reqwest::Error) -> ModelError {
    ModelError::Transport(TransportError::from_reqwest(e))
}

/// A URL that does not parse, as [`EndpointError::NotAUrl`].
fn not_a_url(e: super::error::UrlError) -> ModelError {
    ModelError::Endpoint(EndpointError::NotAUrl(e))
}

impl FileMeta {
    /// True when content of this sha256, git blob sha1 and size is the file the hub
    /// announced and, for a pinned entry, the file the catalog pins.
    fn verifies(&self, sha256: &str, git_sha1: &str, size: u64) -> bool {
        size == self.size
            && matches_checksum(&self.checksum, sha256, git_sha1)
            && self.pinned_sha256.as_deref().is_none_or(|p| p == sha256)
    }
}

/// Refuses a hub answer for a pinned file that names another commit, size or sha256 (a
/// git blob sha1 cannot be compared with a sha256: the bytes are checked after the fetch).
fn check_pin(meta: &FileMeta, pin: &FilePin, commit: &str) -> Result<()> {
    let mismatch = |field| ModelError::PinMismatch {
        file: meta.name.clone(),
        field,
    };
    if meta.commit.as_deref().is_some_and(|c| c != commit) {
        return Err(mismatch("commit"));
    }
    if meta.size != pin.size {
        return Err(mismatch("size"));
    }
    if matches!(&meta.checksum, Checksum::Sha256(h) if *h != pin.sha256) {
        return Err(mismatch("sha256"));
    }
    Ok(())
}

fn matches_checksum(want: &Checksum, sha256: &str, git_sha1: &str) -> bool {
    match want {
        Checksum::Sha256(h) => h == sha256,
        Checksum::GitSha1(h) => h == git_sha1,
    }
}

/// (sha256, git blob sha1, size) of a file, on the blocking pool.
async fn hash_file(path: PathBuf) -> Result<(String, String, u64)> {
    blocking(move || {
        use std::io::Read;
        let size = std::fs::metadata(&path)
            .map_err(io("hashing a download"))?
            .len();
        let mut f = std::fs::File::open(&path).map_err(io("hashing a download"))?;
        let mut sha256 = Sha256::new();
        let mut sha1 = Sha1::new();
        sha1.update(format!("blob {size}\0").as_bytes());
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = f.read(&mut buf).map_err(io("hashing a download"))?;
            if n == 0 {
                break;
            }
            sha256.update(&buf[..n]);
            sha1.update(&buf[..n]);
        }
        Ok((
            hex::encode(sha256.finalize()),
            hex::encode(sha1.finalize()),
            size,
        ))
    })
    .await
}

async fn remove(path: &Path) -> Result<()> {
    match tokio::fs::remove_file(path).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("removing a partial download")(e)),
    }
}

/// Runs short blocking file work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| io("running a file task")(std::io::Error::other("task failed")))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn etags_parse_as_the_hub_sends_them() {
        let sha = "b779505cf106d0fc79ae3c5283f98084201e79b69a6e2a63b47e7673a9e730ea";
        assert_eq!(
            Checksum::parse(&format!("\"{sha}\"")),
            Some(Checksum::Sha256(sha.into()))
        );
        let git = "d7d3fc2d916d36c75435394311e3fd1d9648abef";
        assert_eq!(
            Checksum::parse(&format!("W/\"{git}\"")),
            Some(Checksum::GitSha1(git.into()))
        );
        assert_eq!(Checksum::parse("\"abc\""), None);
        assert_eq!(Checksum::parse("\"zz\""), None);
    }

    #[test]
    fn content_range_start_parses() {
        assert_eq!(content_range_start("bytes 100-7523/7524"), Some(100));
        assert_eq!(content_range_start("bytes */7524"), None);
    }

    #[tokio::test]
    async fn git_blob_sha1_matches_git() -> Result<()> {
        let dir = tempfile::tempdir().map_err(io("tempdir"))?;
        let p = dir.path().join("f");
        std::fs::write(&p, b"hello\n").map_err(io("write"))?;
        let (_, sha1, size) = hash_file(p).await?;
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(sha1, "ce013625030ba8dba906f756967f9e9ca394464a");
        assert_eq!(size, 6);
        Ok(())
    }

    #[test]
    fn endpoints_and_token_policy() -> Result<()> {
        let c = Catalog::builtin()?;
        assert!(matches!(
            Downloader::new("ftp://x", None, c.clone()),
            Err(ModelError::Endpoint(EndpointError::NotHttp))
        ));
        let not_a_url = Downloader::new("not a url", None, c.clone()).err();
        assert!(matches!(
            &not_a_url,
            Some(ModelError::Endpoint(EndpointError::NotAUrl(_)))
        ));
        let source = not_a_url.as_ref().and_then(std::error::Error::source);
        assert!(source.and_then(std::error::Error::source).is_some());
        let d = Downloader::new("http://mirror.example/", Some("secret".into()), c.clone())?;
        assert!(d.token.is_none(), "a token must not travel over plain http");
        assert_eq!(d.endpoint(), "http://mirror.example");
        let d = Downloader::new("http://127.0.0.1:9", Some("secret".into()), c)?;
        assert!(d.token.is_some());
        assert!(!format!("{d:?}").contains("secret"));
        Ok(())
    }

    #[test]
    fn redirects_never_downgrade_to_plain_http() -> Result<()> {
        let https = Url::parse("https://hub.example/org/m/resolve/main/model.safetensors")
            .map_err(|_| ModelError::InvalidId)?;
        let http = Url::parse("http://127.0.0.1:8080/org/m/resolve/main/config.json")
            .map_err(|_| ModelError::InvalidId)?;
        let ok = |from: &Url, to: &str| next_hop(from, to).map(|u| u.to_string());
        assert_eq!(
            ok(&https, "https://cdn.example/blob?x=1")?,
            "https://cdn.example/blob?x=1"
        );
        assert_eq!(ok(&https, "/_cdn/abc")?, "https://hub.example/_cdn/abc");
        assert_eq!(ok(&http, "/_cdn/abc")?, "http://127.0.0.1:8080/_cdn/abc");
        assert_eq!(ok(&http, "https://cdn.example/b")?, "https://cdn.example/b");
        for bad in [
            "http://cdn.example/blob",
            "http://hub.example/org/m/resolve/main/model.safetensors",
            "http://cdn.example:443/blob",
        ] {
            let r = next_hop(&https, bad);
            assert!(
                matches!(r, Err(ModelError::InsecureRedirect)),
                "{bad}: {r:?}"
            );
        }
        for bad in ["file:///etc/passwd", "ftp://cdn.example/x", "data:,x"] {
            assert!(matches!(
                next_hop(&http, bad),
                Err(ModelError::InsecureRedirect)
            ));
        }
        assert!(!ModelError::InsecureRedirect.is_transient());
        Ok(())
    }

    #[test]
    fn the_token_goes_only_to_the_endpoint_origin() -> Result<()> {
        let u = |s: &str| Url::parse(s).map_err(|_| ModelError::InvalidId);
        let origin = u("https://hub.example")?;
        assert!(sends_token(
            &origin,
            &u("https://hub.example/a/b/resolve/main/x")?
        ));
        assert!(sends_token(&origin, &u("https://hub.example:443/x")?));
        for other in [
            "https://cdn.hub.example/x",
            "http://hub.example/x",
            "https://hub.example:8443/x",
            "https://hub.example.evil.example/x",
        ] {
            assert!(!sends_token(&origin, &u(other)?), "{other}");
        }
        Ok(())
    }

    #[tokio::test]
    async fn a_refused_connection_keeps_the_reqwest_error_without_its_url() -> Result<()> {
        // A port that was just free: the connection is refused.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(io("binding a free port"))?
            .port();
        let d = Downloader::new(
            &format!("http://127.0.0.1:{port}"),
            None,
            Catalog::builtin()?,
        )?;
        let e = match d
            .head("secret-org/secret-model", "main", "config.json")
            .await
        {
            Err(e) => e,
            Ok(meta) => panic!("a refused connection answered {meta:?}"),
        };
        assert!(e.is_transient());
        assert!(
            matches!(&e, ModelError::Transport(TransportError::Connect(_))),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "download failed: could not connect to the hub"
        );
        let transport = std::error::Error::source(&e);
        let reqwest = transport.and_then(std::error::Error::source);
        assert!(reqwest.is_some_and(|r| r.is::<reqwest::Error>()));
        let mut chain = Vec::new();
        let mut next: Option<&dyn std::error::Error> = Some(&e);
        while let Some(err) = next {
            chain.push(err.to_string());
            next = err.source();
        }
        let chain = chain.join(": ");
        assert!(
            !chain.contains("secret-model") && !chain.contains("127.0.0.1"),
            "{chain}"
        );
        Ok(())
    }

    #[test]
    fn a_redirect_that_is_no_url_keeps_the_parse_error() -> Result<()> {
        let from = Url::parse("https://hub.example/x").map_err(|_| ModelError::InvalidId)?;
        let e = match next_hop(&from, "https://") {
            Err(e) => e,
            Ok(u) => panic!("followed to {u}"),
        };
        assert!(matches!(
            &e,
            ModelError::Transport(TransportError::BadRedirect(_))
        ));
        assert!(std::error::Error::source(&e)
            .and_then(std::error::Error::source)
            .is_some());
        Ok(())
    }

    #[tokio::test]
    async fn names_outside_the_catalog_never_reach_the_network() -> Result<()> {
        let dir = tempfile::tempdir().map_err(io("tempdir"))?;
        let store = Store::with_bundled(dir.path().join("m"), None)?;
        // Port 9 (discard) on loopback: any request would fail with a transport error.
        let d = Downloader::new("http://127.0.0.1:9", None, Catalog::builtin()?)?;
        let r = d
            .pull(&store, "evil/../../etc", |_| {}, CancellationToken::new())
            .await;
        assert!(matches!(r, Err(ModelError::NotInCatalog)));
        let r = d
            .pull(&store, "phiguard-deid", |_| {}, CancellationToken::new())
            .await;
        assert!(matches!(r, Err(ModelError::BundledReadOnly)));
        // Rampart is built on the machine (its catalog `build`), never fetched.
        let r = d
            .pull(&store, "rampart", |_| {}, CancellationToken::new())
            .await;
        assert!(matches!(r, Err(ModelError::BuildLocally)));
        Ok(())
    }

    proptest! {
        #[test]
        fn etag_parse_never_panics(s in "\\PC{0,80}") {
            let _ = Checksum::parse(&s);
        }
    }
}
