//! This process's model downloads, in one table that `phiguard models pull` and the admin API
//! (`POST /admin/models/pull`, `DELETE /admin/models/pull/{id}`, `GET /admin/models`) share.
//!
//! # Why it exists
//! The loop around [`Downloader::pull`] used to be written twice: the CLI drove it with a
//! progress bar and a Ctrl-C token, the admin API kept its own map of running downloads
//! (state, bytes, percent, cancel token) and decided there what "already downloading",
//! "cancelled" and "failed" mean. [`DownloadManager`] owns those rules once:
//!
//! * one running pull per catalog id: a second one (by id or alias) is refused with
//!   [`StartError::AlreadyRunning`] before any traffic;
//! * the [`DownloadState`] of each pull, its progress and its cancel token, updated from the
//!   downloader's reports; [`DownloadManager::cancel`] stops it by id, and
//!   [`DownloadManager::snapshot`] lists every pull of this process, running or finished;
//! * when a pull counts as `cancelled` (it failed after a cancel was asked) or `failed`.
//!
//! What a front end does with a download is a [`DownloadObserver`]: the admin API publishes
//! `download` events and installs the model into the engine, the CLI draws a progress bar.
//! The observer's [`installed`](DownloadObserver::installed) runs before the table says
//! `done`, so whoever reads `done` can use the model.
//!
//! The table is per process; the store's download lock (`Store::lock_download`) still keeps
//! a second process from fetching the same model at the same time (that pull fails with
//! [`ModelError::Busy`]). Like the downloader, the manager knows a model only by its catalog
//! id (a name as typed is resolved first), and it logs nothing itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::download::{CancellationToken, Downloader, Progress};
use super::error::{ModelError, Result};
use super::store::{Installed, Store};

/// Where a download stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DownloadState {
    /// Fetching; `download` events report progress.
    Running,
    /// Installed.
    Done,
    /// Stopped by an error (logged, not shown).
    Failed,
    /// Stopped by `DELETE /admin/models/pull/{id}`.
    Cancelled,
}

/// One download as the dashboard shows it, in `GET /admin/models` and as a `download` event.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct DownloadInfo {
    /// Catalog id.
    pub id: String,
    /// Where it stands.
    pub state: DownloadState,
    /// Bytes fetched.
    pub bytes: u64,
    /// Bytes in all; 0 until known.
    pub total_bytes: u64,
    /// 0..100.
    pub percent: f64,
    /// The running pull's token, held in the manager's table only: snapshots and observers
    /// get `None`, so a listing cannot stop a download.
    #[serde(skip)]
    #[schema(ignore)]
    pub(crate) cancel: Option<CancellationToken>,
}

impl DownloadInfo {
    fn running(id: &str, cancel: CancellationToken) -> DownloadInfo {
        DownloadInfo {
            id: id.to_owned(),
            state: DownloadState::Running,
            bytes: 0,
            total_bytes: 0,
            percent: 0.0,
            cancel: Some(cancel),
        }
    }

    /// A copy without the cancel token, for snapshots and observers.
    fn public(&self) -> DownloadInfo {
        DownloadInfo {
            cancel: None,
            ..self.clone()
        }
    }

    fn record(&mut self, p: &Progress) {
        self.bytes = p.bytes;
        self.total_bytes = p.total_bytes;
        self.percent = if p.total_bytes > 0 {
            (p.bytes as f64 * 100.0 / p.total_bytes as f64).min(100.0)
        } else {
            0.0
        };
    }

    fn settle(&mut self, state: DownloadState) {
        self.state = state;
        if state == DownloadState::Done {
            self.percent = 100.0;
            self.bytes = self.total_bytes.max(self.bytes);
        }
        self.cancel = None;
    }
}

/// What a front end does with a download's changes. Every method has an empty default; each
/// is called outside the manager's lock, from the task that runs the pull.
pub trait DownloadObserver: Send + Sync + 'static {
    /// After each progress report has been recorded: `info` is the table's entry (state
    /// `running`), `file` the model file being fetched (empty on the final report).
    fn progress(&self, info: &DownloadInfo, file: &str) {
        let _ = (info, file);
    }

    /// Once, when the model is in the store, before the table says `done`: the place to make
    /// it usable.
    fn installed(&self, model: &Installed) {
        let _ = model;
    }

    /// Once, after the final state (`done`, `cancelled` or `failed`) has been recorded, with
    /// the pull's outcome.
    fn finished(&self, info: &DownloadInfo, outcome: &Result<Installed>) {
        let _ = (info, outcome);
    }
}

/// An observer that does nothing.
impl DownloadObserver for () {}

/// Why [`DownloadManager::start`] refused a pull.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Returned when the name is neither an id nor an alias of the downloader's catalog.
    #[error("model is not in the catalog")]
    NotInCatalog,

    /// Returned when a pull of the same catalog id is running in this process.
    #[error("a download of this model is already running")]
    AlreadyRunning,
}

impl From<StartError> for ModelError {
    fn from(e: StartError) -> ModelError {
        match e {
            StartError::NotInCatalog => ModelError::NotInCatalog,
            StartError::AlreadyRunning => ModelError::Busy,
        }
    }
}

/// Why [`DownloadManager::cancel`] had nothing to stop.
#[derive(Debug, thiserror::Error)]
pub enum CancelError {
    /// Returned when no pull of that catalog id is running (never started, or finished).
    #[error("no download of this model is running")]
    NotRunning,
}

type Table = BTreeMap<String, DownloadInfo>;

/// The downloads of this process by catalog id; cheap to clone (clones share the table).
#[derive(Clone, Debug, Default)]
pub struct DownloadManager {
    table: Arc<Mutex<Table>>,
}

impl DownloadManager {
    /// An empty table.
    pub fn new() -> DownloadManager {
        DownloadManager::default()
    }

    /// Registers a pull of `name` (a catalog id or alias of `downloader`'s catalog) as
    /// `running` and returns it; nothing is fetched until [`Pull::run`]. A finished pull of
    /// the same id is replaced.
    ///
    /// # Errors
    /// [`StartError::NotInCatalog`], [`StartError::AlreadyRunning`].
    pub fn start(
        &self,
        downloader: &Downloader,
        store: &Store,
        name: &str,
        observer: impl DownloadObserver,
    ) -> std::result::Result<Pull, StartError> {
        let id = downloader
            .catalog()
            .resolve(name)
            .ok_or(StartError::NotInCatalog)?
            .to_owned();
        let cancel = CancellationToken::new();
        {
            let mut table = self.table.lock();
            if table
                .get(&id)
                .is_some_and(|e| e.state == DownloadState::Running)
            {
                return Err(StartError::AlreadyRunning);
            }
            table.insert(id.clone(), DownloadInfo::running(&id, cancel.clone()));
        }
        Ok(Pull {
            entry: Entry {
                table: Arc::clone(&self.table),
                id,
                settled: false,
            },
            downloader: downloader.clone(),
            store: store.clone(),
            cancel,
            observer: Box::new(observer),
        })
    }

    /// Asks the running pull of `id` (a catalog id) to stop; it ends `cancelled` within one
    /// network chunk and keeps its partial files for a resume.
    ///
    /// # Errors
    /// [`CancelError::NotRunning`].
    pub fn cancel(&self, id: &str) -> std::result::Result<(), CancelError> {
        let token = self.table.lock().get(id).and_then(|e| e.cancel.clone());
        let token = token.ok_or(CancelError::NotRunning)?;
        token.cancel();
        Ok(())
    }

    /// The pull of `id` (a catalog id), running or finished.
    pub fn get(&self, id: &str) -> Option<DownloadInfo> {
        self.table.lock().get(id).map(DownloadInfo::public)
    }

    /// Every pull of this process, running or finished, by id.
    pub fn snapshot(&self) -> Vec<DownloadInfo> {
        self.table
            .lock()
            .values()
            .map(DownloadInfo::public)
            .collect()
    }
}

/// A pull registered as `running` by [`DownloadManager::start`]. Dropped before it finishes
/// (never run, or its future dropped), it is recorded as `cancelled`.
#[must_use = "a pull fetches nothing until it is run"]
pub struct Pull {
    entry: Entry,
    downloader: Downloader,
    store: Store,
    cancel: CancellationToken,
    observer: Box<dyn DownloadObserver>,
}

impl std::fmt::Debug for Pull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pull")
            .field("id", &self.entry.id)
            .finish_non_exhaustive()
    }
}

impl Pull {
    /// The catalog id the name resolved to.
    pub fn id(&self) -> &str {
        &self.entry.id
    }

    /// Runs the download to its end, keeping the table and the observer informed.
    ///
    /// # Errors
    /// As [`Downloader::pull`].
    pub async fn run(self) -> Result<Installed> {
        let Pull {
            mut entry,
            downloader,
            store,
            cancel,
            observer,
        } = self;
        let observer = &*observer;
        let table = &entry.table;
        let id = entry.id.as_str();
        let result = downloader
            .pull(
                &store,
                id,
                |p| {
                    let info = table.lock().get_mut(id).map(|e| {
                        e.record(&p);
                        e.public()
                    });
                    if let Some(info) = info {
                        observer.progress(&info, &p.file);
                    }
                },
                cancel.clone(),
            )
            .await;
        let state = match &result {
            Ok(m) => {
                observer.installed(m);
                DownloadState::Done
            }
            Err(_) if cancel.is_cancelled() => DownloadState::Cancelled,
            Err(_) => DownloadState::Failed,
        };
        let info = entry.settle(state);
        if let Some(info) = info {
            observer.finished(&info, &result);
        }
        result
    }
}

/// A pull's row in the table, settled (`cancelled`) on drop if its pull never finished.
struct Entry {
    table: Arc<Mutex<Table>>,
    id: String,
    settled: bool,
}

impl Entry {
    fn settle(&mut self, state: DownloadState) -> Option<DownloadInfo> {
        self.settled = true;
        self.table.lock().get_mut(&self.id).map(|e| {
            e.settle(state);
            e.public()
        })
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        if !self.settled {
            self.settle(DownloadState::Cancelled);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader};
    use std::path::PathBuf;
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;

    use tokio::sync::watch;

    use super::*;
    use crate::models::Catalog;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    const TINY: &str = "phiguard-test/tiny-bert";

    fn repo_root() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
    }

    /// The built-in catalog plus the fixture model that `tools/hub_fixture.py` serves.
    fn catalog() -> Result<Catalog> {
        Catalog::load(Some(
            &repo_root().join("tests/fixtures/hub/catalog-extra.toml"),
        ))
    }

    /// `tools/hub_fixture.py` on a free loopback port, as `tests/models/` starts it; killed on
    /// drop. Python 3 is required: these tests fail, not skip, without it (`PHIGUARD_PYTHON`
    /// names another interpreter).
    struct Hub {
        child: Child,
        base: String,
    }

    impl Hub {
        fn start(args: &[&str]) -> Hub {
            let python = std::env::var("PHIGUARD_PYTHON").unwrap_or_else(|_| "python3".to_owned());
            let mut child = Command::new(&python)
                .arg(repo_root().join("tools/hub_fixture.py"))
                .args(["--port", "0"])
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap_or_else(|e| panic!("the download tests need Python 3 ({python}): {e}"));
            let mut line = String::new();
            if let Some(out) = child.stdout.take() {
                let _ = BufReader::new(out).read_line(&mut line);
            }
            let base = line
                .trim()
                .strip_prefix("listening on ")
                .unwrap_or_else(|| panic!("hub fixture did not start: {line:?}"))
                .to_owned();
            Hub { child, base }
        }

        fn downloader(&self) -> Result<Downloader> {
            Ok(Downloader::new(&self.base, None, catalog()?)?.with_retry_backoff(Duration::ZERO))
        }
    }

    impl Drop for Hub {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn new_store() -> Result<(tempfile::TempDir, Store)> {
        let dir = tempfile::tempdir().map_err(crate::models::error::io("tempdir"))?;
        let store = Store::with_bundled(dir.path().join("models"), None)?;
        Ok((dir, store))
    }

    /// The wire fields of a row.
    type Row = (DownloadState, u64, u64, f64);

    fn row(i: &DownloadInfo) -> Row {
        (i.state, i.bytes, i.total_bytes, i.percent)
    }

    /// What an observer was told, in order.
    #[derive(Clone, Debug, PartialEq)]
    enum Seen {
        Progress(Row),
        /// The model's id, and its state in the table at that moment.
        Installed(String, Option<DownloadState>),
        /// The final row, and whether the pull succeeded.
        Finished(Row, bool),
    }

    /// Records every call, and the bytes of the latest report for a test to wait on.
    struct Recorder {
        manager: DownloadManager,
        seen: Arc<Mutex<Vec<Seen>>>,
        bytes: watch::Sender<u64>,
    }

    type Record = Arc<Mutex<Vec<Seen>>>;

    fn recorder(manager: &DownloadManager) -> (Recorder, Record, watch::Receiver<u64>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (bytes, rx) = watch::channel(0);
        let r = Recorder {
            manager: manager.clone(),
            seen: Arc::clone(&seen),
            bytes,
        };
        (r, seen, rx)
    }

    impl DownloadObserver for Recorder {
        fn progress(&self, info: &DownloadInfo, _file: &str) {
            assert!(
                info.cancel.is_none(),
                "an observer was given the cancel token"
            );
            self.seen.lock().push(Seen::Progress(row(info)));
            self.bytes.send_replace(info.bytes);
        }

        fn installed(&self, model: &Installed) {
            let state = self.manager.get(&model.id).map(|d| d.state);
            self.seen
                .lock()
                .push(Seen::Installed(model.id.clone(), state));
        }

        fn finished(&self, info: &DownloadInfo, outcome: &Result<Installed>) {
            assert!(
                info.cancel.is_none(),
                "an observer was given the cancel token"
            );
            self.seen
                .lock()
                .push(Seen::Finished(row(info), outcome.is_ok()));
        }
    }

    /// Waits (at most 30 s) until the pull has reported some bytes.
    async fn some_bytes(rx: &mut watch::Receiver<u64>) -> TestResult {
        tokio::time::timeout(Duration::from_secs(30), rx.wait_for(|b| *b > 0)).await??;
        Ok(())
    }

    #[tokio::test]
    async fn a_pull_runs_to_done_with_its_progress_in_the_table() -> TestResult {
        let hub = Hub::start(&[]);
        let (_tmp, store) = new_store()?;
        let manager = DownloadManager::new();
        let (observer, seen, _) = recorder(&manager);
        let pull = manager.start(&hub.downloader()?, &store, TINY, observer)?;
        assert_eq!(pull.id(), TINY);
        let listed = manager.snapshot();
        assert_eq!(listed.len(), 1);
        assert_eq!(row(&listed[0]), (DownloadState::Running, 0, 0, 0.0));
        assert!(listed[0].cancel.is_none(), "a snapshot carries no token");

        let m = pull.run().await?;
        assert_eq!(m.id, TINY);
        assert!(store.get(TINY).is_some());
        let done = manager.get(TINY).ok_or("no row")?;
        assert_eq!(done.state, DownloadState::Done);
        assert_eq!(done.percent, 100.0);
        assert!(
            done.total_bytes > 0 && done.bytes == done.total_bytes,
            "{done:?}"
        );

        let seen = seen.lock().clone();
        let n = seen.len();
        assert!(n >= 3, "{seen:?}");
        let mut last = 0;
        for s in &seen[..n - 2] {
            let Seen::Progress((DownloadState::Running, bytes, total, percent)) = *s else {
                panic!("not a running progress report: {s:?}");
            };
            assert!(bytes >= last && bytes <= total, "{seen:?}");
            assert!((0.0..=100.0).contains(&percent), "{seen:?}");
            last = bytes;
        }
        // The model is installed while the table still says running, then the final row.
        assert_eq!(
            seen[n - 2],
            Seen::Installed(TINY.into(), Some(DownloadState::Running))
        );
        assert_eq!(seen[n - 1], Seen::Finished(row(&done), true));
        assert!(matches!(manager.cancel(TINY), Err(CancelError::NotRunning)));
        Ok(())
    }

    #[tokio::test]
    async fn a_second_pull_of_a_running_model_is_refused_and_cancel_stops_it() -> TestResult {
        let slow = Hub::start(&["--throttle", "2000"]);
        let (_tmp, store) = new_store()?;
        let d = slow.downloader()?;
        let manager = DownloadManager::new();
        let (observer, seen, mut bytes) = recorder(&manager);
        let run = tokio::spawn(manager.start(&d, &store, TINY, observer)?.run());
        some_bytes(&mut bytes).await?;

        // Refused from a clone of the manager too: clones share the table.
        let again = manager.clone().start(&d, &store, TINY, ());
        assert!(
            matches!(again, Err(StartError::AlreadyRunning)),
            "{again:?}"
        );
        let running = manager.get(TINY).ok_or("no row")?;
        assert_eq!(running.state, DownloadState::Running);
        assert!(
            running.bytes > 0 && running.total_bytes > running.bytes,
            "{running:?}"
        );
        assert!(
            running.percent > 0.0 && running.percent < 100.0,
            "{running:?}"
        );

        manager.cancel(TINY)?;
        let outcome = tokio::time::timeout(Duration::from_secs(10), run).await??;
        assert!(matches!(outcome, Err(ModelError::Cancelled)), "{outcome:?}");
        let stopped = manager.get(TINY).ok_or("no row")?;
        assert_eq!(stopped.state, DownloadState::Cancelled);
        assert!(stopped.bytes > 0 && stopped.percent < 100.0, "{stopped:?}");
        assert_eq!(
            seen.lock().last(),
            Some(&Seen::Finished(row(&stopped), false))
        );
        assert!(matches!(manager.cancel(TINY), Err(CancelError::NotRunning)));
        assert!(store.get(TINY).is_none());
        drop(slow);

        // Once it stopped, the same model may be pulled again; its row is replaced.
        let hub = Hub::start(&[]);
        manager
            .start(&hub.downloader()?, &store, TINY, ())?
            .run()
            .await?;
        assert_eq!(
            manager.get(TINY).map(|d| d.state),
            Some(DownloadState::Done)
        );
        assert_eq!(manager.snapshot().len(), 1, "one row per catalog id");
        Ok(())
    }

    #[tokio::test]
    async fn a_refused_checksum_ends_failed() -> TestResult {
        let hub = Hub::start(&["--wrong-checksum", "config.json"]);
        let (_tmp, store) = new_store()?;
        let manager = DownloadManager::new();
        let (observer, seen, _) = recorder(&manager);
        let outcome = manager
            .start(&hub.downloader()?, &store, TINY, observer)?
            .run()
            .await;
        assert!(
            matches!(&outcome, Err(ModelError::ChecksumMismatch { file }) if file == "config.json"),
            "{outcome:?}"
        );
        let failed = manager.get(TINY).ok_or("no row")?;
        assert_eq!(failed.state, DownloadState::Failed);
        let seen = seen.lock().clone();
        assert!(
            !seen.iter().any(|s| matches!(s, Seen::Installed(..))),
            "{seen:?}"
        );
        assert_eq!(seen.last(), Some(&Seen::Finished(row(&failed), false)));
        Ok(())
    }

    /// No network: what is decided before any traffic.
    #[tokio::test]
    async fn names_aliases_bundled_models_and_dropped_pulls() -> TestResult {
        let (_tmp, store) = new_store()?;
        // Port 9 (discard) on loopback: a request would fail; none is made.
        let d = Downloader::new("http://127.0.0.1:9", None, Catalog::builtin()?)?;
        let manager = DownloadManager::new();
        let unknown = manager.start(&d, &store, "evil/../../etc", ());
        assert!(
            matches!(unknown, Err(StartError::NotInCatalog)),
            "{unknown:?}"
        );
        assert!(
            manager.snapshot().is_empty(),
            "a refused name leaves no row"
        );
        assert!(matches!(
            manager.cancel("evil/../../etc"),
            Err(CancelError::NotRunning)
        ));
        // The CLI reports the refusals as the downloader's own errors.
        assert!(matches!(
            ModelError::from(StartError::NotInCatalog),
            ModelError::NotInCatalog
        ));
        assert!(matches!(
            ModelError::from(StartError::AlreadyRunning),
            ModelError::Busy
        ));

        // The bundled model is in the catalog but read-only: the pull starts and fails.
        let outcome = manager.start(&d, &store, "phiguard-deid", ())?.run().await;
        assert!(
            matches!(outcome, Err(ModelError::BundledReadOnly)),
            "{outcome:?}"
        );
        assert_eq!(
            manager.get("phiguard-deid").map(|d| d.state),
            Some(DownloadState::Failed)
        );

        // A row is keyed by catalog id: an alias of a running pull is the same pull.
        let entry = d
            .catalog()
            .entries()
            .iter()
            .find(|e| !e.bundled && !e.aliases.is_empty())
            .ok_or("no catalog entry with an alias")?;
        let pull = manager.start(&d, &store, &entry.aliases[0], ())?;
        assert_eq!(pull.id(), entry.id);
        let by_id = manager.start(&d, &store, &entry.id, ());
        assert!(
            matches!(by_id, Err(StartError::AlreadyRunning)),
            "{by_id:?}"
        );

        // A pull dropped before it ran is not left running, and can be started again.
        drop(pull);
        assert_eq!(
            manager.get(&entry.id).map(|d| d.state),
            Some(DownloadState::Cancelled)
        );
        let again = manager.start(&d, &store, &entry.id, ())?;
        assert_eq!(
            manager.get(&entry.id).map(|d| d.state),
            Some(DownloadState::Running)
        );
        manager.cancel(&entry.id)?;
        drop(again);
        let rows: Vec<Row> = manager.snapshot().iter().map(row).collect();
        assert_eq!(rows.len(), 2, "{rows:?}");
        Ok(())
    }
}
