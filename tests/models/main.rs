//! Black-box tests of the model store and downloader against a local hub-compatible server
//! (`tools/hub_fixture.py`, started per test on a free port): progress, resume after a cut
//! connection, checksum refusal, cancellation, tokens, import, remove and verify.
//!
//! Python 3 is required; the tests fail (they do not skip) when it is missing. Set
//! `PHIGUARD_PYTHON` to use another interpreter.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use phiguard::models::{
    CancellationToken, Catalog, Downloader, FileStatus, ModelError, ModelSource, Progress, Store,
};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const TINY: &str = "phiguard-test/tiny-bert";
const COMMIT: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c";

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture_dir() -> PathBuf {
    repo_root().join("tests/fixtures/hub/phiguard-test/tiny-bert")
}

fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture_dir().join(name)).expect("fixture file")
}

fn fixture_total() -> u64 {
    ["config.json", "tokenizer.json", "model.safetensors"]
        .iter()
        .map(|f| fixture_bytes(f).len() as u64)
        .sum()
}

fn catalog() -> Catalog {
    Catalog::load(Some(
        &repo_root().join("tests/fixtures/hub/catalog-extra.toml"),
    ))
    .expect("test catalog")
}

/// The test catalog with the fixture entry pinned to the fixture's commit and the sha256 and
/// size of each of its files.
fn pinned_catalog() -> Catalog {
    let text = std::fs::read_to_string(repo_root().join("tests/fixtures/hub/catalog-extra.toml"))
        .expect("test catalog");
    let mut text = text.replace("revision = \"main\"", &format!("revision = \"{COMMIT}\""));
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        let (sha256, size) =
            phiguard::models::manifest::sha256_file(&fixture_dir().join(f)).expect("hash");
        text.push_str(&format!(
            "\n[[model.pins]]\nfile = \"{f}\"\nsha256 = \"{sha256}\"\nsize = {size}\n"
        ));
    }
    Catalog::builtin()
        .and_then(|c| c.extended(&text))
        .expect("pinned test catalog")
}

/// Nothing of the model is in the store: not installed, no partial of its files.
fn nothing_installed(store: &Store) {
    assert!(store.get(TINY).is_none());
    assert!(store.installed().expect("list").is_empty());
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        assert!(
            !partial_file(store, f).exists(),
            "a partial of {f} was kept"
        );
    }
}

/// The fixture hub server, killed on drop.
struct Hub {
    child: Child,
    base: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Hub {
    fn start(args: &[&str]) -> Hub {
        let python = std::env::var("PHIGUARD_PYTHON").unwrap_or_else(|_| "python3".to_owned());
        let ok = Command::new(&python)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "the model download tests need Python 3 ({python} not found); install python3 \
             or set PHIGUARD_PYTHON"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("requests.jsonl");
        let mut child = Command::new(&python)
            .arg(repo_root().join("tools/hub_fixture.py"))
            .args(["--port", "0", "--log"])
            .arg(&log)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start tools/hub_fixture.py");
        let stdout = child.stdout.take().expect("fixture stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read fixture banner");
        let base = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("hub fixture did not start: {line:?}"))
            .to_owned();
        Hub {
            child,
            base,
            log,
            _dir: dir,
        }
    }

    /// Requests served so far (one JSON object per request).
    fn requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// GETs of model bytes (the CDN leg of the large file).
    fn blob_gets(&self) -> Vec<serde_json::Value> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r["method"] == "GET" && r["path"].as_str().is_some_and(|p| p.starts_with("/_cdn/"))
            })
            .collect()
    }

    fn downloader(&self) -> Downloader {
        Downloader::new(&self.base, None, catalog())
            .expect("downloader")
            .with_retry_backoff(Duration::ZERO)
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn new_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::with_bundled(dir.path().join("models"), None).expect("store");
    (dir, store)
}

fn recorder() -> (Arc<Mutex<Vec<Progress>>>, impl Fn(Progress) + Send + Sync) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    (seen, move |p| sink.lock().expect("progress lock").push(p))
}

fn partial_file(store: &Store, name: &str) -> PathBuf {
    store
        .root()
        .join(".partial/phiguard-test--tiny-bert")
        .join(format!("{name}.partial"))
}

#[tokio::test]
async fn pull_installs_with_progress_reaching_the_total() -> TestResult {
    let hub = Hub::start(&[]);
    let (_tmp, store) = new_store();
    let (seen, progress) = recorder();
    let m = hub
        .downloader()
        .pull(&store, TINY, progress, CancellationToken::new())
        .await?;

    assert_eq!(m.id, TINY);
    assert_eq!(m.source, ModelSource::Downloaded);
    assert_eq!(m.family, "bert");
    assert_eq!(m.labels, vec!["FIRST_NAME", "DATE"]);
    assert_eq!(m.license.as_deref(), Some("Apache-2.0"));
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        assert_eq!(std::fs::read(m.dir.join(f))?, fixture_bytes(f), "{f}");
    }
    let seen = seen.lock().expect("progress lock").clone();
    let last = seen.last().expect("progress reported");
    assert!(last.done);
    assert_eq!(last.total_bytes, fixture_total());
    assert_eq!(last.bytes, last.total_bytes);
    assert!(
        seen.windows(2).all(|w| w[0].bytes <= w[1].bytes),
        "progress went backwards"
    );
    assert_eq!(seen.iter().filter(|p| p.done).count(), 1);

    assert_eq!(store.manifest(TINY)?.revision.as_deref(), Some(COMMIT));
    assert!(store.verify(TINY)?.ok());
    assert_eq!(store.installed()?.len(), 1);
    assert!(!store
        .root()
        .join(".partial/phiguard-test--tiny-bert")
        .exists());
    // Pinned: after the first answer, files are fetched at the commit, not at `main`.
    let pinned = hub
        .requests()
        .iter()
        .filter(|r| {
            r["path"]
                .as_str()
                .is_some_and(|p| p.contains(&format!("/resolve/{COMMIT}/")))
        })
        .count();
    assert!(
        pinned >= 2,
        "later files were not fetched at the pinned commit"
    );

    // A second pull of an installed model is a no-op.
    let before = hub.requests().len();
    hub.downloader()
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await?;
    assert_eq!(hub.requests().len(), before);
    Ok(())
}

#[tokio::test]
async fn a_cut_connection_is_resumed_with_a_range_request() -> TestResult {
    let hub = Hub::start(&["--cut-after", "5000"]);
    let (_tmp, store) = new_store();
    hub.downloader()
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await?;
    assert!(store.verify(TINY)?.ok());

    let total = fixture_bytes("model.safetensors").len() as u64;
    let gets = hub.blob_gets();
    assert_eq!(gets.len(), 2, "{gets:?}");
    assert_eq!(gets[0]["sent"], 5000);
    assert_eq!(gets[1]["range"], "bytes=5000-");
    assert_eq!(gets[1]["status"], 206);
    let after_resume = gets[1]["sent"].as_u64().unwrap_or(u64::MAX);
    assert_eq!(after_resume, total - 5000);
    assert!(after_resume < total);
    Ok(())
}

#[tokio::test]
async fn a_failed_pull_leaves_a_partial_that_the_next_pull_resumes() -> TestResult {
    let hub = Hub::start(&["--cut-after", "5000"]);
    let (_tmp, store) = new_store();
    let once = hub.downloader().with_max_attempts(1);
    let err = once
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await
        .expect_err("the cut must fail a single-attempt pull");
    assert!(matches!(err, ModelError::Transport(_)), "{err}");
    assert_eq!(
        std::fs::metadata(partial_file(&store, "model.safetensors"))?.len(),
        5000
    );
    assert!(store.get(TINY).is_none());

    let (seen, progress) = recorder();
    once.pull(&store, TINY, progress, CancellationToken::new())
        .await?;
    let first_weights = seen
        .lock()
        .expect("progress lock")
        .iter()
        .find(|p| p.file == "model.safetensors")
        .cloned()
        .expect("progress for the weights");
    let before_weights =
        (fixture_bytes("config.json").len() + fixture_bytes("tokenizer.json").len()) as u64;
    assert_eq!(
        first_weights.bytes,
        before_weights + 5000,
        "progress did not start from the resumed bytes"
    );
    let gets = hub.blob_gets();
    assert_eq!(
        gets.last().map(|g| g["range"].clone()),
        Some("bytes=5000-".into())
    );
    assert!(store.verify(TINY)?.ok());
    Ok(())
}

#[tokio::test]
async fn a_checksum_mismatch_is_refused_and_the_partial_deleted() -> TestResult {
    let hub = Hub::start(&["--wrong-checksum", "model.safetensors"]);
    let (_tmp, store) = new_store();
    let err = hub
        .downloader()
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await
        .expect_err("a wrong checksum must be refused");
    assert!(
        matches!(&err, ModelError::ChecksumMismatch { file } if file == "model.safetensors"),
        "{err}"
    );
    assert!(!partial_file(&store, "model.safetensors").exists());
    assert!(store.get(TINY).is_none());
    assert!(store.installed()?.is_empty());
    Ok(())
}

#[tokio::test]
async fn git_blob_etags_of_small_files_are_verified_too() -> TestResult {
    let hub = Hub::start(&["--wrong-checksum", "config.json"]);
    let (_tmp, store) = new_store();
    let err = hub
        .downloader()
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await
        .expect_err("a wrong git etag must be refused");
    assert!(
        matches!(&err, ModelError::ChecksumMismatch { file } if file == "config.json"),
        "{err}"
    );
    assert!(store.get(TINY).is_none());
    Ok(())
}

#[tokio::test]
async fn cancellation_stops_promptly_and_keeps_a_resumable_partial() -> TestResult {
    let slow = Hub::start(&["--throttle", "2000"]);
    let (_tmp, store) = new_store();
    let cancel = CancellationToken::new();
    let cancelled_at = Arc::new(Mutex::new(None::<Instant>));
    let (token, stamp) = (cancel.clone(), cancelled_at.clone());
    let err = slow
        .downloader()
        .pull(
            &store,
            TINY,
            move |p: Progress| {
                if p.file == "model.safetensors" && !token.is_cancelled() && p.bytes > 0 {
                    let before = fixture_total() - fixture_bytes("model.safetensors").len() as u64;
                    if p.bytes >= before + 500 {
                        *stamp.lock().expect("stamp lock") = Some(Instant::now());
                        token.cancel();
                    }
                }
            },
            cancel,
        )
        .await
        .expect_err("a cancelled pull must fail");
    assert!(matches!(err, ModelError::Cancelled), "{err}");
    let at = cancelled_at
        .lock()
        .expect("stamp lock")
        .expect("cancel was requested");
    // At 2000 B/s the rest of the file would take over 3 s: stopping well under that is
    // the cancellation, not the end of the download.
    let took = at.elapsed();
    assert!(
        took < Duration::from_millis(1500),
        "cancellation took {took:?}"
    );
    let kept = std::fs::metadata(partial_file(&store, "model.safetensors"))?.len();
    let size = fixture_bytes("model.safetensors").len() as u64;
    // Progress counts bytes received; the partial holds what was written before the cancel
    // (chunking differs between machines), so only "some, not all" is certain.
    assert!(kept > 0 && kept < size, "kept {kept} of {size} bytes");
    assert!(store.get(TINY).is_none());
    drop(slow);

    // The next pull, from a fresh server, resumes from the kept bytes.
    let hub = Hub::start(&[]);
    hub.downloader()
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await?;
    let gets = hub.blob_gets();
    assert_eq!(gets.len(), 1);
    assert_eq!(gets[0]["range"], format!("bytes={kept}-"));
    assert!(store.verify(TINY)?.ok());
    Ok(())
}

#[tokio::test]
async fn a_second_pull_of_the_same_model_is_refused_while_one_runs() -> TestResult {
    let slow = Hub::start(&["--throttle", "2000"]);
    let (_tmp, store) = new_store();
    let d = slow.downloader();
    let cancel = CancellationToken::new();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Mutex::new(Some(started_tx));
    let first = {
        let (d, store, cancel) = (d.clone(), store.clone(), cancel.clone());
        tokio::spawn(async move {
            d.pull(
                &store,
                TINY,
                move |_| {
                    if let Some(tx) = started_tx.lock().expect("lock").take() {
                        let _ = tx.send(());
                    }
                },
                cancel,
            )
            .await
        })
    };
    started_rx.await?;
    let second = d.pull(&store, TINY, |_| {}, CancellationToken::new()).await;
    assert!(matches!(second, Err(ModelError::Busy)), "{second:?}");
    cancel.cancel();
    assert!(matches!(first.await?, Err(ModelError::Cancelled)));
    Ok(())
}

#[tokio::test]
async fn the_token_is_sent_and_a_refusal_is_reported() -> TestResult {
    let hub = Hub::start(&["--token", "hf_test_token"]);
    let (_tmp, store) = new_store();
    let anonymous = hub
        .downloader()
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await;
    assert!(
        matches!(&anonymous, Err(ModelError::HubStatus { status: 401, .. })),
        "{anonymous:?}"
    );
    let with_token = Downloader::new(&hub.base, Some("hf_test_token".into()), catalog())?;
    with_token
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await?;
    assert!(store.get(TINY).is_some());
    // The token stays on the hub's host: the CDN leg is same-host here, so it is sent.
    assert!(hub.requests().iter().any(|r| r["auth"] == true));
    Ok(())
}

#[tokio::test]
async fn the_token_never_follows_a_redirect_to_another_host() -> TestResult {
    // Two loopback servers on different ports: the "hub" asks for the token and redirects,
    // the other one must never see it. reqwest's own policy would strip it on this host
    // change too; the downloader follows redirects itself, and this is the proof that it
    // does not resend the header (see the download module's docs for the downgrade rule).
    for how in ["--cdn", "--redirect-to"] {
        let other = Hub::start(&[]);
        let hub = Hub::start(&["--token", "hf_test_token", how, &other.base]);
        let (_tmp, store) = new_store();
        Downloader::new(&hub.base, Some("hf_test_token".into()), catalog())?
            .pull(&store, TINY, |_| {}, CancellationToken::new())
            .await?;
        assert!(store.verify(TINY)?.ok(), "{how}");

        let seen = other.requests();
        assert!(
            seen.iter()
                .any(|r| r["method"] == "GET" && r["status"] == 200),
            "{how}: the other host served nothing: {seen:?}"
        );
        assert!(
            seen.iter().all(|r| r["auth"] == false),
            "{how}: the token reached another host: {seen:?}"
        );
        let hub_seen = hub.requests();
        assert!(!hub_seen.is_empty() && hub_seen.iter().all(|r| r["auth"] == true));
    }
    Ok(())
}

#[tokio::test]
async fn a_pinned_pull_asks_for_the_commit_and_is_recorded_pinned() -> TestResult {
    let hub = Hub::start(&[]);
    let (_tmp, store) = new_store();
    Downloader::new(&hub.base, None, pinned_catalog())?
        .with_require_pinned(true)
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await?;
    let manifest = store.manifest(TINY)?;
    assert!(manifest.pinned);
    assert_eq!(manifest.revision.as_deref(), Some(COMMIT));
    let resolves: Vec<_> = hub
        .requests()
        .into_iter()
        .filter(|r| r["path"].as_str().is_some_and(|p| p.contains("/resolve/")))
        .collect();
    assert!(!resolves.is_empty());
    assert!(
        resolves.iter().all(|r| r["path"]
            .as_str()
            .is_some_and(|p| p.contains(&format!("/resolve/{COMMIT}/")))),
        "a file was asked for at a branch: {resolves:?}"
    );

    // Unpinned entries are pulled by default, recorded as such, and refused on request
    // before any traffic.
    let (_tmp, store) = new_store();
    hub.downloader()
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await?;
    assert!(!store.manifest(TINY)?.pinned);
    let (_tmp, store) = new_store();
    let before = hub.requests().len();
    let err = hub
        .downloader()
        .with_require_pinned(true)
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await
        .expect_err("unpinned entries are refused when pins are required");
    assert!(matches!(err, ModelError::Unpinned), "{err}");
    assert_eq!(hub.requests().len(), before);
    nothing_installed(&store);
    Ok(())
}

#[tokio::test]
async fn a_pinned_file_served_with_other_bytes_is_refused_and_nothing_installed() -> TestResult {
    // The server is consistent but wrong (it announces the checksum of the bytes it serves):
    // only the pin can tell. The weights' sha256 is announced, so they are refused before a
    // byte is fetched; a small file's git sha1 cannot be compared with a sha256, so its bytes
    // are fetched and refused against the pin.
    for file in ["model.safetensors", "tokenizer.json"] {
        let hub = Hub::start(&["--corrupt", file]);
        let (_tmp, store) = new_store();
        let err = Downloader::new(&hub.base, None, pinned_catalog())?
            .pull(&store, TINY, |_| {}, CancellationToken::new())
            .await
            .expect_err("bytes other than the pinned ones are refused");
        match file {
            "model.safetensors" => {
                assert!(
                    matches!(&err, ModelError::PinMismatch { file: f, field: "sha256" } if f == file),
                    "{err}"
                );
                assert!(hub.blob_gets().is_empty(), "the weights were fetched");
            }
            _ => assert!(
                matches!(&err, ModelError::ChecksumMismatch { file: f } if f == file),
                "{err}"
            ),
        }
        nothing_installed(&store);

        // Without the pin the same server is believed: this is what pins are for. (The
        // changed weights are still a well-formed model; the changed JSON would not be.)
        if file == "model.safetensors" {
            let m = hub
                .downloader()
                .pull(&store, TINY, |_| {}, CancellationToken::new())
                .await?;
            assert!(!store.manifest(TINY)?.pinned);
            assert_ne!(std::fs::read(m.dir.join(file))?, fixture_bytes(file));
        }
    }
    Ok(())
}

#[tokio::test]
async fn an_oversized_body_is_cut_off_and_refused() -> TestResult {
    // The hub announces the true size; the body then runs 64 MB past it.
    const PAD: u64 = 64 << 20;
    let size = fixture_bytes("model.safetensors").len() as u64;
    for pinned in [false, true] {
        let hub = Hub::start(&["--pad", &format!("model.safetensors={PAD}")]);
        let (_tmp, store) = new_store();
        let catalog = if pinned { pinned_catalog() } else { catalog() };
        let err = Downloader::new(&hub.base, None, catalog)?
            .with_retry_backoff(Duration::ZERO)
            .pull(&store, TINY, |_| {}, CancellationToken::new())
            .await
            .expect_err("a body longer than announced is refused");
        assert!(
            matches!(&err, ModelError::SizeMismatch { file } if file == "model.safetensors"),
            "{err}"
        );
        nothing_installed(&store);
        drop(store);
        // The server saw the connection close long before it had sent the padding (it logs
        // the request once its write fails, a moment after the client has gone).
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut gets = hub.blob_gets();
        while gets.is_empty() && Instant::now() < deadline {
            // An async pause: the client's connection task must run to close the socket.
            tokio::time::sleep(Duration::from_millis(20)).await;
            gets = hub.blob_gets();
        }
        assert_eq!(gets.len(), 1, "{gets:?}");
        let sent = gets[0]["sent"].as_u64().unwrap_or(u64::MAX);
        assert!(sent < size + PAD / 2, "sent {sent} of {}", size + PAD);
    }
    Ok(())
}

#[tokio::test]
async fn announced_sizes_beyond_the_catalog_are_refused_before_any_bytes() -> TestResult {
    let hub = Hub::start(&["--announce-size", "model.safetensors=100000000"]);
    let (_tmp, store) = new_store();
    // Unpinned: the catalog's 1 MB entry allows 1.5 MB + 16 MB, not 100 MB.
    let err = hub
        .downloader()
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await
        .expect_err("too large");
    assert!(matches!(err, ModelError::TooLarge), "{err}");
    // Pinned: any size other than the pin.
    let err = Downloader::new(&hub.base, None, pinned_catalog())?
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await
        .expect_err("not the pinned size");
    assert!(
        matches!(&err, ModelError::PinMismatch { field: "size", .. }),
        "{err}"
    );
    assert!(hub.blob_gets().is_empty());
    nothing_installed(&store);
    Ok(())
}

#[tokio::test]
async fn an_alias_resolves_to_its_catalog_id_and_unknown_names_are_refused() -> TestResult {
    let hub = Hub::start(&[]);
    let (_tmp, store) = new_store();
    let err = hub
        .downloader()
        .pull(
            &store,
            "phiguard-test/not-in-catalog",
            |_| {},
            CancellationToken::new(),
        )
        .await
        .expect_err("unknown names are refused");
    assert!(matches!(err, ModelError::NotInCatalog));
    assert!(
        hub.requests().is_empty(),
        "an unknown name reached the network"
    );
    Ok(())
}

#[test]
fn import_then_verify_detects_a_changed_byte_then_remove() -> TestResult {
    let (_tmp, store) = new_store();
    let m = store.import(&fixture_dir(), Some("local/tiny-bert"))?;
    assert_eq!(m.source, ModelSource::Imported);
    assert_eq!(
        store.get("local/tiny-bert").map(|i| i.size_bytes),
        Some(fixture_total())
    );
    assert!(store.verify("local/tiny-bert")?.ok());

    let weights = m.dir.join("model.safetensors");
    let mut bytes = std::fs::read(&weights)?;
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&weights, &bytes)?;
    let report = store.verify("local/tiny-bert")?;
    assert!(!report.ok());
    let bad: Vec<_> = report
        .files
        .iter()
        .filter(|f| f.status != FileStatus::Ok)
        .map(|f| (f.name.as_str(), f.status))
        .collect();
    assert_eq!(bad, vec![("model.safetensors", FileStatus::Mismatch)]);

    std::fs::remove_file(m.dir.join("tokenizer.json"))?;
    let report = store.verify("local/tiny-bert")?;
    assert!(report
        .files
        .iter()
        .any(|f| f.name == "tokenizer.json" && f.status == FileStatus::Missing));

    store.remove("local/tiny-bert")?;
    assert!(store.get("local/tiny-bert").is_none());
    assert!(store.installed()?.is_empty());
    assert!(matches!(
        store.remove("local/tiny-bert"),
        Err(ModelError::NotInstalled)
    ));
    assert!(matches!(
        store.remove("phiguard-deid"),
        Err(ModelError::BundledReadOnly)
    ));
    Ok(())
}

/// The loader builds the model from the weight bytes it verified: a weights file that was
/// never recorded, dropped into the installed folder afterwards, is not read (a loader
/// that read every `*.safetensors` of the folder failed on this one).
#[test]
fn an_unrecorded_weights_file_beside_the_model_is_not_loaded() -> TestResult {
    use phiguard::engine::loader::{default_loader, installed_specs};
    use phiguard::settings::{Home, Settings};

    let tmp = tempfile::tempdir()?;
    let home = Home::at(tmp.path());
    let store = Store::with_bundled(home.models_dir(), None)?;
    let m = store.import(&fixture_dir(), Some("local/tiny-bert"))?;
    std::fs::write(m.dir.join("extra.safetensors"), b"not a safetensors file")?;
    let spec = installed_specs(&home)
        .into_iter()
        .find(|s| s.id == "local/tiny-bert")
        .ok_or("local/tiny-bert is not listed")?;
    default_loader(&Settings::defaults())?
        .load(&spec)
        .map_err(|e| format!("load with an unrecorded file beside it: {e}"))?;
    Ok(())
}

#[test]
fn a_tampered_weights_file_is_refused_at_load() -> TestResult {
    use phiguard::engine::loader::{default_loader, installed_specs};
    use phiguard::settings::{Home, Settings};

    let tmp = tempfile::tempdir()?;
    let home = Home::at(tmp.path());
    let store = Store::with_bundled(home.models_dir(), None)?;
    let m = store.import(&fixture_dir(), Some("local/tiny-bert"))?;
    let loader = default_loader(&Settings::defaults())?;
    let specs = installed_specs(&home);
    let spec = |id: &str| {
        specs
            .iter()
            .find(|s| s.id == id)
            .cloned()
            .ok_or_else(|| format!("{id} is not listed"))
    };
    let tiny = spec("local/tiny-bert")?;
    loader
        .load(&tiny)
        .map_err(|e| format!("untampered load: {e}"))?;

    let weights = m.dir.join("model.safetensors");
    let mut bytes = std::fs::read(&weights)?;
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&weights, &bytes)?;
    let err = match loader.load(&tiny) {
        Ok(_) => return Err("a tampered model was loaded".into()),
        Err(e) => e,
    };
    assert!(
        matches!(
            &err,
            phiguard::engine::LoadError::Files(phiguard::models::ModelError::Tampered { file })
                if file == "model.safetensors"
        ),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("model.safetensors") && text.contains("sha256"),
        "{text}"
    );
    // The same refusal through the registry, which the guard sees as a load failure.
    let registry = phiguard::engine::Registry::new(
        std::sync::Arc::new(phiguard::detect::Layered::service_rules()),
        loader.clone(),
        std::sync::Arc::new(phiguard::engine::Faults::default()),
        vec![tiny],
    );
    assert!(registry.lease("local/tiny-bert", None).is_err());

    // The bundled model (the checkout's, unpacked or shipped) is checked against the sums
    // built into phiguard; this measures what that costs per load.
    let bundled = spec("phiguard-deid")?;
    let started = Instant::now();
    phiguard::models::verify_before_load("phiguard-deid", bundled.dir.as_deref().ok_or("no dir")?)?;
    eprintln!("verifying the bundled model took {:?}", started.elapsed());
    Ok(())
}

fn copy_fixture(to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::copy(fixture_dir().join(f), to.join(f))?;
    }
    Ok(())
}

#[test]
fn import_refuses_broken_folders_and_leaves_nothing_behind() -> TestResult {
    let (tmp, store) = new_store();
    let src = tmp.path().join("src/my-model");

    copy_fixture(&src)?;
    std::fs::write(src.join("config.json"), br#"{"model_type":"bert"}"#)?;
    let err = store.import(&src, None).expect_err("no id2label");
    assert!(
        matches!(&err, ModelError::InvalidModel { file, .. } if file == "config.json"),
        "{err}"
    );

    copy_fixture(&src)?;
    let weights = std::fs::read(src.join("model.safetensors"))?;
    std::fs::write(
        src.join("model.safetensors"),
        &weights[..weights.len() - 10],
    )?;
    let err = store.import(&src, None).expect_err("truncated weights");
    assert!(
        matches!(&err, ModelError::InvalidModel { file, .. } if file == "model.safetensors"),
        "{err}"
    );

    copy_fixture(&src)?;
    std::fs::write(
        src.join("SHA256SUMS"),
        format!("{}  config.json\n", "0".repeat(64)),
    )?;
    let err = store.import(&src, None).expect_err("SHA256SUMS mismatch");
    assert!(
        matches!(&err, ModelError::InvalidModel { file, .. } if file == "config.json"),
        "{err}"
    );

    std::fs::remove_file(src.join("SHA256SUMS"))?;
    assert!(matches!(
        store.import(&src, Some("bad id")),
        Err(ModelError::InvalidId)
    ));

    let leftovers: Vec<_> = std::fs::read_dir(store.root())?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".partial")
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");

    // The folder name is the default id.
    let m = store.import(&src, None)?;
    assert_eq!(m.id, "my-model");
    Ok(())
}

#[cfg(unix)]
#[test]
fn import_refuses_files_that_are_symlinks_out_of_the_folder() -> TestResult {
    let (tmp, store) = new_store();
    let src = tmp.path().join("src/linked");
    copy_fixture(&src)?;
    let outside = tmp.path().join("outside-secret.txt");
    std::fs::write(&outside, "hf_not_for_the_store")?;

    // An optional file (copied along) and a model file, each a link to a file elsewhere.
    for name in ["LICENSE", "tokenizer.json"] {
        let link = src.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&outside, &link)?;
        let err = store.import(&src, None).expect_err("a symlink is refused");
        assert!(
            matches!(&err, ModelError::InvalidModel { file, .. } if file == name),
            "{err}"
        );
        let msg = err.to_string();
        assert!(msg.contains("symbolic link"), "{msg}");
        assert!(
            !msg.contains("outside-secret") && !msg.contains("hf_not_for_the_store"),
            "the error names the link's target or content: {msg}"
        );
        std::fs::remove_file(&link)?;
        copy_fixture(&src)?;
    }
    assert!(store.installed()?.is_empty());
    let leftovers: Vec<_> = std::fs::read_dir(store.root())?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".partial")
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");

    // The folder itself may be reached through a link: only its files must be regular.
    let via = tmp.path().join("via-link");
    std::os::unix::fs::symlink(&src, &via)?;
    let m = store.import(&via, Some("local/linked"))?;
    assert!(store.verify(&m.id)?.ok());
    Ok(())
}

#[tokio::test]
async fn a_partial_of_another_file_version_is_discarded_not_resumed() -> TestResult {
    let hub = Hub::start(&[]);
    let (_tmp, store) = new_store();
    let part = partial_file(&store, "model.safetensors");
    std::fs::create_dir_all(part.parent().expect("partial folder"))?;
    std::fs::write(&part, vec![0xAB; 100])?;
    std::fs::write(part.with_extension("partial.etag"), "0".repeat(64))?;

    hub.downloader()
        .pull(&store, TINY, |_| {}, CancellationToken::new())
        .await?;
    let gets = hub.blob_gets();
    assert_eq!(gets.len(), 1);
    assert!(
        gets[0]["range"].is_null(),
        "a stale partial was resumed: {gets:?}"
    );
    assert!(store.verify(TINY)?.ok());
    Ok(())
}

#[test]
fn the_bundled_model_when_shipped_is_listed_and_verifies() -> TestResult {
    // The store's view of the checkout's `models/phiguard-deid`, wherever `bundle::locate` finds it.
    let tmp = tempfile::tempdir()?;
    let dir = phiguard::models::bundle::locate(tmp.path()).ok_or("no bundled model")?;
    let store = Store::with_bundled(tmp.path().join("models"), Some(dir))?;
    let all = store.installed()?;
    assert_eq!(all[0].id, "phiguard-deid");
    assert_eq!(all[0].source, ModelSource::Bundled);
    assert_eq!(all[0].family, "bert");
    assert_eq!(all[0].license.as_deref(), Some("CC-BY-4.0"));
    assert!(store.verify("phiguard-deid")?.ok());
    Ok(())
}

#[tokio::test]
async fn cli_functions_pull_list_verify_and_remove() -> TestResult {
    use phiguard::models::cli;
    let hub = Hub::start(&[]);
    let (_tmp, store) = new_store();
    let d = hub.downloader();
    let m = cli::pull(&d, &store, TINY, false).await?;
    assert_eq!(m.id, TINY);
    let table = cli::list(&store, d.catalog())?;
    let row = table
        .lines()
        .find(|l| l.starts_with(TINY))
        .unwrap_or_default()
        .to_owned();
    assert!(
        row.contains("installed") && row.contains("11.6 kB"),
        "{table}"
    );
    let (report, ok) = cli::verify(&store, TINY)?;
    assert!(ok, "{report}");
    assert_eq!(cli::rm(&store, TINY)?, format!("removed {TINY}"));
    assert!(cli::list(&store, d.catalog())?
        .lines()
        .any(|l| l.starts_with(TINY) && l.contains("available")));
    Ok(())
}
