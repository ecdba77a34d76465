//! Shared helpers of the service tests: a real server on an ephemeral loopback port, with an
//! injected manual clock and scripted backends standing in for a model only where a fault
//! must be produced that the real model cannot produce.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use phiguard::detect::{BackendError, Label, Recognizer, RecognizerError, Source, Span};
use phiguard::guard::{FixedJitter, ManualClock};
use phiguard::server::{Server, StartOptions};

pub(crate) const CLIENT: &str = "client-token-for-tests";
pub(crate) const ADMIN: &str = "admin-token-for-tests";

/// What the scripted backend does on its next calls.
#[derive(Default)]
pub(crate) struct Script {
    /// Calls that reached the backend.
    pub(crate) calls: AtomicUsize,
    /// Fail every call while true.
    pub(crate) failing: AtomicBool,
    /// Fail the next N calls.
    pub(crate) fail_next: AtomicUsize,
    /// Panic on the next N calls.
    pub(crate) panic_next: AtomicUsize,
    /// `None`: calls pass; `Some(n)`: n more calls may pass, the rest wait.
    pub(crate) gate: parking_lot::Mutex<Option<usize>>,
    pub(crate) cv: parking_lot::Condvar,
    /// Calls currently waiting at the gate.
    pub(crate) waiting: AtomicUsize,
}

impl Script {
    /// Calls wait at the gate from now on.
    pub(crate) fn block(&self) {
        *self.gate.lock() = Some(0);
    }
    /// Lets one waiting (or future) call through.
    pub(crate) fn release_one(&self) {
        if let Some(n) = self.gate.lock().as_mut() {
            *n += 1;
        }
        self.cv.notify_all();
    }
    /// Opens the gate.
    pub(crate) fn release(&self) {
        *self.gate.lock() = None;
        self.cv.notify_all();
    }
}

/// A recognizer that finds the word "Zed" as a first name, and fails, panics or blocks as
/// scripted. It stands for a model backend in fault tests only.
pub(crate) struct Scripted(pub Arc<Script>);

impl Recognizer for Scripted {
    fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
        let s = &self.0;
        s.calls.fetch_add(1, Ordering::SeqCst);
        {
            let mut g = s.gate.lock();
            s.waiting.fetch_add(1, Ordering::SeqCst);
            loop {
                match g.as_mut() {
                    None => break,
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        break;
                    }
                    Some(_) => s.cv.wait(&mut g),
                }
            }
            s.waiting.fetch_sub(1, Ordering::SeqCst);
        }
        if s.panic_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            panic!("scripted panic");
        }
        if s.failing.load(Ordering::SeqCst)
            || s.fail_next
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            return Err(RecognizerError::Backend(BackendError::Injected));
        }
        Ok(texts
            .iter()
            .map(|t| {
                let chars: Vec<char> = t.chars().collect();
                let mut out = Vec::new();
                for i in 0..chars.len().saturating_sub(2) {
                    if chars[i] == 'Z' && chars[i + 1] == 'e' && chars[i + 2] == 'd' {
                        out.push(Span::new(i, i + 3, Label::FirstName, 0.99, Source::Model));
                    }
                }
                out
            })
            .collect())
    }
}

/// A server draining with one request in flight ([`TestServer::drain_with_one_in_flight`]).
pub(crate) struct Draining {
    /// The request held in flight.
    pub(crate) inflight: tokio::task::JoinHandle<reqwest::Response>,
    /// The shutdown, which resolves to the requests cut off at the drain's deadline.
    pub(crate) stopping: tokio::task::JoinHandle<usize>,
}

pub(crate) struct TestServer {
    pub(crate) server: Option<Server>,
    pub(crate) base: String,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) script: Arc<Script>,
    pub(crate) http: reqwest::Client,
    pub(crate) _dir: tempfile::TempDir,
}

impl TestServer {
    /// Starts a server with `env` on top of the test defaults.
    pub(crate) async fn start(env: &[(&str, &str)]) -> TestServer {
        let defaults = [
            ("PHIGUARD_AUTH_TOKEN", CLIENT),
            ("PHIGUARD_ADMIN_TOKEN", ADMIN),
            ("PHIGUARD_DEFAULT_MODEL", "scripted"),
            ("PHIGUARD_METRICS_ENABLED", "true"),
            ("PHIGUARD_RETRY_BACKOFF_JITTER_SECONDS", "0"),
            ("PHIGUARD_SHUTDOWN_DRAIN_SECONDS", "5"),
        ];
        let clock = Arc::new(ManualClock::new());
        let script = Arc::new(Script::default());
        let opts = StartOptions {
            clock: Some(clock.clone()),
            sleeper: Some(clock.clone()),
            jitter: Some(Arc::new(FixedJitter(0.0))),
            extra_backends: vec![(
                "scripted".to_string(),
                Arc::new(Scripted(script.clone())) as Arc<dyn Recognizer>,
            )],
            ..StartOptions::default()
        };
        let (server, dir) = crate::common::boot(&defaults, env, opts).await;
        let base = format!("http://{}", server.local_addr());
        TestServer {
            server: Some(server),
            base,
            clock,
            script,
            http: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("client"),
            _dir: dir,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// POST JSON with the client token.
    pub(crate) async fn post(&self, path: &str, body: serde_json::Value) -> reqwest::Response {
        self.http
            .post(self.url(path))
            .bearer_auth(CLIENT)
            .json(&body)
            .send()
            .await
            .expect("request")
    }

    /// POST JSON with the client token on a spawned task; resolves to the response.
    pub(crate) fn spawn_post(
        &self,
        path: &str,
        body: serde_json::Value,
    ) -> tokio::task::JoinHandle<reqwest::Response> {
        let http = self.http.clone();
        let url = self.url(path);
        tokio::spawn(async move {
            http.post(url)
                .bearer_auth(CLIENT)
                .json(&body)
                .send()
                .await
                .expect("request")
        })
    }

    /// POST JSON with the admin token.
    pub(crate) async fn admin_post(
        &self,
        path: &str,
        body: serde_json::Value,
    ) -> reqwest::Response {
        self.http
            .post(self.url(path))
            .bearer_auth(ADMIN)
            .json(&body)
            .send()
            .await
            .expect("request")
    }

    /// PUT JSON with the admin token.
    pub(crate) async fn admin_put(&self, path: &str, body: serde_json::Value) -> reqwest::Response {
        self.http
            .put(self.url(path))
            .bearer_auth(ADMIN)
            .json(&body)
            .send()
            .await
            .expect("request")
    }

    /// The Prometheus text of `/metrics` (open route; the test server enables it).
    pub(crate) async fn metrics_text(&self) -> String {
        self.text_at(&self.url("/metrics")).await
    }

    /// The body of a GET of `url` (any port), without a token.
    pub(crate) async fn text_at(&self, url: &str) -> String {
        self.http
            .get(url)
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text")
    }

    /// DELETE with the admin token.
    pub(crate) async fn admin_delete(&self, path: &str) -> reqwest::Response {
        self.http
            .delete(self.url(path))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("request")
    }

    /// A browser's CORS preflight of a POST to `path` from `origin`.
    pub(crate) async fn preflight(&self, path: &str, origin: &str) -> reqwest::Response {
        self.http
            .request(reqwest::Method::OPTIONS, self.url(path))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .send()
            .await
            .expect("preflight")
    }

    /// GET with the admin token.
    pub(crate) async fn admin_get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(self.url(path))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("request")
    }

    /// The JSON answer of `GET path` with the admin token (`/admin/status`,
    /// `/admin/settings`).
    pub(crate) async fn admin_json(&self, path: &str) -> serde_json::Value {
        self.admin_get(path).await.json().await.expect("json")
    }

    /// Runs `fut` while advancing the manual clock to each pending sleep (backoff, queue
    /// waits, deadlines), so guard timing is exercised without real sleeps.
    pub(crate) async fn drive<T>(&self, fut: impl std::future::Future<Output = T>) -> T {
        tokio::pin!(fut);
        loop {
            tokio::select! {
                out = &mut fut => return out,
                _ = tokio::time::sleep(Duration::from_millis(2)) => {
                    // Only short sleeps (backoff) are skipped; a request deadline is far away
                    // and must not be jumped to.
                    use phiguard::guard::Clock;
                    let near = self
                        .clock
                        .next_sleep_deadline()
                        .is_some_and(|d| d.saturating_duration_since(self.clock.now()) <= Duration::from_secs(5));
                    if near {
                        self.clock.advance_to_next_sleep();
                    }
                }
            }
        }
    }

    /// Waits (polling, bounded) until `cond` holds.
    pub(crate) async fn until(&self, what: &str, cond: impl Fn() -> bool) {
        for _ in 0..2500 {
            if cond() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        panic!("timed out waiting for {what}");
    }

    /// Holds one `/pii/deidentify` in flight (the script blocks it), starts the shutdown and
    /// waits until the server drains; the request and the shutdown, to be awaited after
    /// `script.release()`.
    pub(crate) async fn drain_with_one_in_flight(&mut self) -> Draining {
        self.script.block();
        let inflight = self.spawn_post("/pii/deidentify", serde_json::json!({"text": "Zed"}));
        self.until("request in flight", || {
            self.script.waiting.load(Ordering::SeqCst) == 1
        })
        .await;
        let server = self.server.take().expect("server");
        let state = server.state().clone();
        let stopping = tokio::spawn(server.shutdown());
        self.until("draining", || {
            state.phase() == phiguard::server::Phase::Draining
        })
        .await;
        Draining { inflight, stopping }
    }

    pub(crate) async fn shutdown(mut self) {
        self.script.release();
        if let Some(s) = self.server.take() {
            s.shutdown().await;
        }
    }
}

/// The row of setting `key` in an answer of `GET|PUT /admin/settings`.
pub(crate) fn setting_row(all: &serde_json::Value, key: &str) -> serde_json::Value {
    all["settings"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["key"] == key)
        .cloned()
        .expect("row")
}

/// Reads an error envelope and checks its shape.
/// [`envelope`], requiring this status and error code; returns the body and headers.
pub(crate) async fn expect_error(
    resp: reqwest::Response,
    status: u16,
    code: &str,
) -> (serde_json::Value, reqwest::header::HeaderMap) {
    let (got, body, headers) = envelope(resp).await;
    assert_eq!(
        (got, body["error"]["code"].as_str()),
        (status, Some(code)),
        "{body}"
    );
    (body, headers)
}

pub(crate) async fn envelope(
    resp: reqwest::Response,
) -> (u16, serde_json::Value, reqwest::header::HeaderMap) {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body: serde_json::Value = resp.json().await.expect("json body");
    let err = &body["error"];
    assert!(err["code"].is_string(), "envelope without code: {body}");
    assert!(
        err["message"].is_string(),
        "envelope without message: {body}"
    );
    assert!(
        err.get("details").is_some(),
        "envelope without details: {body}"
    );
    assert!(
        err["request_id"].is_string(),
        "envelope without request_id: {body}"
    );
    (status, body, headers)
}

/// The value of the unlabelled metric `name` in Prometheus text, if it is there.
pub(crate) fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}
