//! Outage scenarios with bounded concurrent clients against a real server on loopback, with
//! faults injected at the backend boundary (`fault-injection` builds only). The degraded-mode
//! scenarios are checks and always run. The two that measure (a 10 s full outage and its
//! recovery, attempts per request at 50 % failures) print the figures reported in the notes
//! and are `#[ignore]`d: run them with
//! `cargo test --release --features fault-injection --test outage -- --ignored --nocapture`.
#![cfg(feature = "fault-injection")]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use phiguard::server::Server;

mod common;

const TOKEN: &str = "outage-client";
const NOTE: &str = "Seen 03/04/2021, call 617-555-0142, MRN 88412345.";

async fn start(env: &[(&str, &str)]) -> (Server, tempfile::TempDir) {
    common::start_rules_server(TOKEN, "outage-admin", env).await
}

/// Runs `clients` loops sending de-identify requests until `stop`; counts 200s and others.
fn clients(
    base: String,
    clients: usize,
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    last_failure: Arc<parking_lot::Mutex<Option<Instant>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..clients)
        .map(|_| {
            let (base, stop, ok, failed, last) = (
                base.clone(),
                stop.clone(),
                ok.clone(),
                failed.clone(),
                last_failure.clone(),
            );
            tokio::spawn(async move {
                let http = reqwest::Client::builder()
                    .no_proxy()
                    .build()
                    .expect("client");
                while !stop.load(Ordering::Relaxed) {
                    let r = http
                        .post(format!("{base}/pii/deidentify"))
                        .bearer_auth(TOKEN)
                        .json(&serde_json::json!({"text": NOTE}))
                        .send()
                        .await;
                    match r.map(|r| r.status().as_u16()) {
                        Ok(200) => {
                            ok.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            failed.fetch_add(1, Ordering::Relaxed);
                            *last.lock() = Some(Instant::now());
                            // A well-behaved client backs off a little on 503.
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                }
            })
        })
        .collect()
}

#[ignore = "wall-clock figures, not a check: cargo test --release --features fault-injection --test outage -- --ignored --nocapture"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_outage_then_recovery() {
    let (server, _dir) = start(&[("PHIGUARD_BREAKER_RECOVERY_TIMEOUT_SECONDS", "2")]).await;
    let base = format!("http://{}", server.local_addr());
    let st = server.state().clone();
    let (stop, ok, failed) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let last_failure = Arc::new(parking_lot::Mutex::new(None));
    let handles = clients(
        base,
        8,
        stop.clone(),
        ok.clone(),
        failed.clone(),
        last_failure.clone(),
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = st.engine.guard().stats().attempts;
    let ok_before = ok.load(Ordering::Relaxed);
    st.engine.set_faults("infer=fail").expect("faults");
    tokio::time::sleep(Duration::from_secs(10)).await;
    let during = st.engine.guard().stats().attempts - before;
    let requests_during = failed.load(Ordering::Relaxed);
    st.engine.set_faults("infer=ok").expect("faults");
    let outage_ended = Instant::now();
    // Recovered = the last failure after the outage's end, once a full second has passed
    // with no failure at all (bounded).
    let recovered_at = loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let last = last_failure
            .lock()
            .unwrap_or(outage_ended)
            .max(outage_ended);
        if last.elapsed() >= Duration::from_secs(1) {
            break last;
        }
        assert!(
            outage_ended.elapsed() < Duration::from_secs(20),
            "no recovery within 20 s"
        );
    };
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.await;
    }
    let recovery = recovered_at
        .saturating_duration_since(outage_ended)
        .as_secs_f64();
    eprintln!(
        "FIGURES full outage: 10 s, 8 clients; {requests_during} requests refused during the outage, \
         {during} backend attempts during it; recovered {recovery:.2} s after its end (recovery timeout 2 s); \
         {} successes before, {} total",
        ok_before,
        ok.load(Ordering::Relaxed)
    );
    // The breaker must have cut the backend off: far fewer attempts than requests.
    assert!(
        during < requests_during / 4 + 50,
        "{during} attempts for {requests_during} refused requests"
    );
    assert!(recovery < 10.0);
    server.shutdown().await;
}

/// One flaky:50 run; returns (requests, ok, guarded calls, backend attempts).
async fn flaky_run(env: &[(&str, &str)]) -> (u64, u64, u64, u64) {
    let (server, _dir) = start(env).await;
    let base = format!("http://{}", server.local_addr());
    let st = server.state().clone();
    st.engine.set_faults("infer=flaky:50").expect("faults");
    let (stop, ok, failed) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let last_failure = Arc::new(parking_lot::Mutex::new(None));
    let before = st.engine.guard().stats();
    let handles = clients(
        base,
        8,
        stop.clone(),
        ok.clone(),
        failed.clone(),
        last_failure,
    );
    let started = Instant::now();
    while ok.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed) < 3000
        && started.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.await;
    }
    let after = st.engine.guard().stats();
    server.shutdown().await;
    let ok = ok.load(Ordering::Relaxed);
    (
        ok + failed.load(Ordering::Relaxed),
        ok,
        after.calls - before.calls,
        after.attempts - before.attempts,
    )
}

#[ignore = "wall-clock figures, not a check: cargo test --release --features fault-injection --test outage -- --ignored --nocapture"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_of_the_calls_fail_attempts_per_request() {
    // Defaults: the consecutive-failure breaker sees the failures the budget did not retry.
    let (requests, ok, calls, attempts) = flaky_run(&[]).await;
    eprintln!(
        "FIGURES flaky:50, defaults: {requests} requests ({ok} ok), {calls} reached the guard's retry loop or breaker, \
         {attempts} backend attempts = {:.3} per request",
        attempts as f64 / requests.max(1) as f64
    );
    // The retry budget alone (breaker kept closed): backend attempts per logical request.
    let (requests, ok, calls, attempts) =
        flaky_run(&[("PHIGUARD_BREAKER_FAILURE_THRESHOLD", "10000")]).await;
    let per_request = attempts as f64 / calls.max(1) as f64;
    eprintln!(
        "FIGURES flaky:50, breaker held closed: {requests} requests ({ok} ok), {attempts} backend attempts = \
         {per_request:.3} attempts per request (goal <= 1.25; OpenMed's 3 attempts: 1.75)"
    );
    assert!(
        per_request <= 1.35,
        "retry budget not holding: {per_request}"
    );
}

// Degraded mode through a real model outage: the server serves the bundled model, the fault
// is injected at the backend boundary over HTTP (`PUT /admin/faults`), and everything is
// seen as a client and an admin see it. No timing is asserted: conditions are polled with a
// bounded number of requests.

const ADMIN: &str = "outage-admin";
const PHONE: &str = "617-555-0142";
const MRN: &str = "88412345";

/// A client of one server, with the tokens of [`start`].
struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    fn new(server: &Server) -> Api {
        Api {
            http: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("client"),
            base: format!("http://{}", server.local_addr()),
        }
    }

    async fn post(&self, path: &str, body: serde_json::Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .expect("request")
    }

    async fn faults(&self, body: serde_json::Value) {
        let r = self
            .http
            .put(format!("{}/admin/faults", self.base))
            .bearer_auth(ADMIN)
            .json(&body)
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 200, "PUT /admin/faults");
    }

    async fn status(&self) -> serde_json::Value {
        self.http
            .get(format!("{}/admin/status", self.base))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("request")
            .json()
            .await
            .expect("json")
    }

    /// The state of `key`'s breaker in `/admin/status` (`closed` when it has none yet).
    async fn breaker_state(&self, key: &str) -> String {
        let status = self.status().await;
        status["breakers"]
            .as_array()
            .and_then(|b| b.iter().find(|b| b["key"] == key))
            .and_then(|b| b["state"].as_str())
            .unwrap_or("closed")
            .to_string()
    }

    /// Backend attempts so far.
    async fn attempts(&self) -> u64 {
        self.status().await["totals"]["attempts"]
            .as_u64()
            .expect("totals.attempts")
    }
}

/// A server on the bundled model (the real one, not the rules) with `env` on top.
async fn start_model(env: &[(&str, &str)]) -> (Server, tempfile::TempDir) {
    let mut vars = vec![
        ("PHIGUARD_DEFAULT_MODEL", "phiguard-deid"),
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
    ];
    vars.extend_from_slice(env);
    start(&vars).await
}

fn note_body(fallback: Option<&str>) -> serde_json::Value {
    let mut body = serde_json::json!({ "text": NOTE });
    if let Some(f) = fallback {
        body["fallback"] = serde_json::json!(f);
    }
    body
}

/// Checks a degraded answer: 200, marked in the body and the header, the rules' spans.
async fn assert_degraded(r: reqwest::Response, what: &str) {
    let status = r.status();
    let header = r
        .headers()
        .get("x-phiguard-degraded")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(status, 200, "{what}: {body}");
    assert_eq!(header.as_deref(), Some("rules"), "{what}");
    assert_eq!(body["degraded"], true, "{what}: {body}");
    assert_eq!(body["model_name"], "rules", "{what}: {body}");
    if let Some(out) = body["deidentified_text"].as_str() {
        assert!(!out.contains(PHONE) && !out.contains(MRN), "{what}: {out}");
    } else {
        let found: Vec<&str> = body["entities"]
            .as_array()
            .expect("entities")
            .iter()
            .filter_map(|e| e["text"].as_str())
            .collect();
        assert!(
            found.contains(&PHONE) && found.contains(&MRN),
            "{what}: {found:?}"
        );
    }
}

/// The model id a healthy request was answered by (the breaker's key).
async fn healthy_model(api: &Api) -> String {
    let r = api.post("/pii/extract", note_body(None)).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("x-phiguard-degraded").is_none());
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(body["degraded"], false, "{body}");
    body["model_name"].as_str().expect("model_name").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn degraded_fallback_rules_answers_through_a_model_outage() {
    let (server, _dir) = start_model(&[("PHIGUARD_DEGRADED_FALLBACK", "rules")]).await;
    let api = Api::new(&server);
    let key = healthy_model(&api).await;
    assert_ne!(key, "rules");
    api.faults(serde_json::json!({"infer": "fail"})).await;
    // Every failure after retries is answered from the rules, and counts for the breaker:
    // it opens after its threshold (3 by default; 20 bounds the loop).
    let mut sent = 0;
    while api.breaker_state(&key).await != "open" {
        sent += 1;
        assert!(
            sent <= 20,
            "the breaker did not open after {sent} failed requests"
        );
        assert_degraded(
            api.post("/pii/deidentify", note_body(None)).await,
            "a failed model call with degraded mode on",
        )
        .await;
    }
    assert!(sent >= 1);
    // While open: the rules answer without any backend attempt, on both routes.
    let attempts = api.attempts().await;
    assert_degraded(
        api.post("/pii/deidentify", note_body(None)).await,
        "deidentify while open",
    )
    .await;
    assert_degraded(
        api.post("/pii/extract", note_body(None)).await,
        "extract while open",
    )
    .await;
    // A stream cannot set the header after its first line: its final line is marked.
    let r = api.post("/pii/deidentify/stream", note_body(None)).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.expect("stream body");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("an NDJSON line"))
        .collect();
    let last = lines.last().expect("a final line");
    assert_eq!(
        (&last["type"], &last["degraded"]),
        (&serde_json::json!("final"), &serde_json::json!(true)),
        "{text}"
    );
    let redacted: String = lines
        .iter()
        .filter_map(|l| l["redacted_text"].as_str())
        .collect();
    assert!(
        !redacted.contains(PHONE) && !redacted.contains(MRN),
        "{redacted}"
    );
    assert_eq!(api.attempts().await, attempts, "an open breaker fails fast");
    // A request may still opt out of degraded mode: then it fails fast.
    let r = api.post("/pii/extract", note_body(Some("none"))).await;
    assert_eq!(r.status(), 503);
    assert!(r.headers().get("retry-after").is_some());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_request_fallback_with_degraded_mode_off() {
    let (server, _dir) = start_model(&[]).await;
    let api = Api::new(&server);
    let key = healthy_model(&api).await;
    api.faults(serde_json::json!({"infer": "fail"})).await;
    // The first failure, with the request's own fallback: answered from the rules, and still
    // a failure for the breaker.
    assert_degraded(
        api.post("/pii/deidentify", note_body(Some("rules"))).await,
        "a failed model call with fallback=rules",
    )
    .await;
    let status = api.status().await;
    let breaker = status["breakers"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["key"] == key.as_str()))
        .cloned()
        .expect("the model's breaker");
    assert_eq!(breaker["consecutive_failures"], 1, "{breaker}");
    // Without a fallback a failed model call is a 500, until the breaker opens.
    let mut sent = 0;
    while api.breaker_state(&key).await != "open" {
        sent += 1;
        assert!(
            sent <= 20,
            "the breaker did not open after {sent} failed requests"
        );
        let r = api.post("/pii/extract", note_body(None)).await;
        assert_eq!(r.status(), 500);
        let body: serde_json::Value = r.json().await.expect("json");
        assert_eq!(body["error"]["code"], "inference_error", "{body}");
    }
    // Open, fail closed: 503 circuit_breaker_open with Retry-After, no backend attempt.
    let attempts = api.attempts().await;
    let r = api.post("/pii/deidentify", note_body(None)).await;
    assert_eq!(r.status(), 503);
    let retry_after: u64 = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("a whole-second Retry-After");
    assert!(retry_after >= 1);
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "circuit_breaker_open", "{body}");
    assert_eq!(body["error"]["details"]["state"], "open", "{body}");
    // Open, with the request's fallback: the rules answer.
    assert_degraded(
        api.post("/pii/deidentify", note_body(Some("rules"))).await,
        "deidentify with fallback=rules while open",
    )
    .await;
    assert_degraded(
        api.post("/pii/extract", note_body(Some("rules"))).await,
        "extract with fallback=rules while open",
    )
    .await;
    assert_eq!(api.attempts().await, attempts, "an open breaker fails fast");
    // The model recovers: after a reset the model answers again, not degraded.
    api.faults(serde_json::json!({"infer": "ok"})).await;
    let r = api
        .http
        .post(format!("{}/admin/breakers/{key}/reset", api.base))
        .bearer_auth(ADMIN)
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect("request");
    assert!(r.status().is_success(), "reset: {}", r.status());
    assert_eq!(healthy_model(&api).await, key);
    server.shutdown().await;
}

// The door (`src/server/door.rs`): while a model's breaker is open, its refusals are answered
// in front of the router. Each must be the answer the router gives, and everything the door
// does not decide must reach the router as before.

/// Fails the backend and sends requests until the rules' breaker opens (20 at most).
async fn open_rules_breaker(api: &Api) {
    api.faults(serde_json::json!({"infer": "fail"})).await;
    let mut sent = 0;
    while api.breaker_state("rules").await != "open" {
        sent += 1;
        assert!(sent <= 20, "the breaker did not open after {sent} requests");
        api.post("/pii/deidentify", note_body(None)).await;
    }
}

/// The value of the Prometheus sample `name{labels}` in `/metrics` (0 when absent).
async fn sample(api: &Api, name: &str, labels: &str) -> f64 {
    let text = api
        .http
        .get(format!("{}/metrics", api.base))
        .send()
        .await
        .expect("request")
        .text()
        .await
        .expect("text");
    assert!(text.contains(name), "no {name} in /metrics");
    let series = format!("{name}{labels} ");
    text.lines()
        .find_map(|l| l.strip_prefix(series.as_str()))
        .map_or(0.0, |v| v.trim().parse().expect("a number"))
}

/// The headers of an answer by name, without the per-request ones and CORS's own.
fn shape(r: &reqwest::Response) -> Vec<String> {
    let mut names: Vec<String> = r
        .headers()
        .keys()
        .map(|k| k.as_str().to_string())
        .filter(|k| k != "date" && !k.starts_with("access-control-"))
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_door_refuses_as_the_router_does_and_passes_everything_else() {
    let (server, _dir) = start(&[("PHIGUARD_METRICS_ENABLED", "true")]).await;
    let api = Api::new(&server);
    let own_origin = api.base.clone();
    open_rules_breaker(&api).await;
    let attempts = api.attempts().await;
    let before = sample(
        &api,
        "openmed_service_request_total",
        r#"{route="/pii/deidentify",status_code="503"}"#,
    )
    .await;

    // The same refusal by the door (no Origin) and by the router (a browser on the server's
    // own origin, which the door leaves to the router for its CORS headers).
    let id = "0b9c3c4e-1f2a-4d3b-9e8f-7a6b5c4d3e2f";
    let door = api
        .http
        .post(format!("{}/pii/deidentify", api.base))
        .bearer_auth(TOKEN)
        .header("x-request-id", id)
        .json(&note_body(None))
        .send()
        .await
        .expect("request");
    let router = api
        .http
        .post(format!("{}/pii/deidentify", api.base))
        .bearer_auth(TOKEN)
        .header("origin", own_origin.as_str())
        .header("x-request-id", id)
        .json(&note_body(None))
        .send()
        .await
        .expect("request");
    assert_eq!(
        (door.status().as_u16(), router.status().as_u16()),
        (503, 503)
    );
    assert_eq!(shape(&door), shape(&router));
    for h in [
        "content-type",
        "cache-control",
        "x-content-type-options",
        "vary",
        "x-request-id",
    ] {
        assert_eq!(door.headers().get(h), router.headers().get(h), "{h}");
    }
    let retry = |r: &reqwest::Response| -> u64 {
        r.headers()["retry-after"]
            .to_str()
            .expect("ascii")
            .parse()
            .expect("whole seconds")
    };
    assert!((1..=30).contains(&retry(&door)) && retry(&door).abs_diff(retry(&router)) <= 1);
    let door: serde_json::Value = door.json().await.expect("json");
    let router: serde_json::Value = router.json().await.expect("json");
    assert_eq!(door["error"]["code"], "circuit_breaker_open", "{door}");
    assert_eq!(door["error"]["request_id"], id, "{door}");
    assert_eq!(door["error"]["message"], router["error"]["message"]);
    assert_eq!(
        door["error"]["details"]["state"],
        router["error"]["details"]["state"]
    );
    // Counted as the router counts it, and no backend attempt.
    let after = sample(
        &api,
        "openmed_service_request_total",
        r#"{route="/pii/deidentify",status_code="503"}"#,
    )
    .await;
    assert_eq!(after - before, 2.0);
    assert_eq!(api.attempts().await, attempts, "an open breaker fails fast");

    // The checks before it, answered by the door as the request context answers them; a
    // wrong token counts once against its address, not twice.
    let failures = sample(&api, "phiguard_auth_failures_total", "").await;
    let post = |token: Option<&str>, host: Option<&str>, body: serde_json::Value| {
        let mut r = api
            .http
            .post(format!("{}/pii/extract", api.base))
            .body(body.to_string())
            .header("content-type", "application/json");
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        if let Some(h) = host {
            r = r.header("host", h);
        }
        r.send()
    };
    let r = post(None, None, note_body(None)).await.expect("request");
    assert_eq!(r.status(), 401);
    assert!(r.headers().get("www-authenticate").is_some());
    let r = post(Some("not-the-token"), None, note_body(None))
        .await
        .expect("request");
    assert_eq!(r.status(), 401);
    assert_eq!(
        sample(&api, "phiguard_auth_failures_total", "").await - failures,
        1.0
    );
    let r = post(Some(TOKEN), Some("evil.example"), note_body(None))
        .await
        .expect("request");
    assert_eq!(r.status(), 400);
    let r = post(
        Some(TOKEN),
        None,
        serde_json::json!({"text": NOTE, "model_name": 7}),
    )
    .await
    .expect("request");
    assert_eq!(
        r.status(),
        422,
        "a malformed model_name is the router's to judge"
    );

    // What the door does not decide reaches the router, body and all.
    let r = api
        .http
        .post(format!("{}/pii/extract", api.base))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body("{\"text\": ")
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 422, "not JSON");
    let r = api
        .post(
            "/pii/extract",
            serde_json::json!({"text": NOTE, "model_name": "no-such-model"}),
        )
        .await;
    assert_eq!(r.status(), 422);
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "model_not_served", "{body}");
    assert_degraded(
        api.post("/pii/deidentify", note_body(Some("rules"))).await,
        "fallback=rules at the door",
    )
    .await;
    let r = api.post("/analyze", note_body(None)).await;
    assert_eq!(r.status(), 503, "/analyze is refused at the door too");
    assert_eq!(api.attempts().await, attempts);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_door_leaves_the_half_open_probe_to_the_call() {
    let (server, _dir) = start(&[("PHIGUARD_BREAKER_RECOVERY_TIMEOUT_SECONDS", "1")]).await;
    let api = Api::new(&server);
    open_rules_breaker(&api).await;
    let r = api.post("/pii/deidentify", note_body(None)).await;
    assert_eq!(r.status(), 503);
    api.faults(serde_json::json!({"infer": "ok"})).await;
    // Once the recovery time has passed, the first request is the probe: the door must not
    // have taken its slot, so it reaches the model, succeeds and closes the breaker.
    let mut waited = 0;
    let status = loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        waited += 1;
        let r = api.post("/pii/deidentify", note_body(None)).await;
        if r.status() != 503 || waited >= 40 {
            break r.status();
        }
    };
    assert_eq!(status, 200, "the probe after the recovery time");
    assert_eq!(api.breaker_state("rules").await, "closed");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_door_keeps_the_rate_limits_before_the_breaker() {
    // A burst of 6 per token, refilled too slowly to matter: the requests that open the
    // breaker take 3 of them.
    let (server, _dir) = start(&[
        ("PHIGUARD_TOKEN_RATE_LIMIT_RPS", "0.001"),
        ("PHIGUARD_TOKEN_RATE_LIMIT_BURST", "6"),
    ])
    .await;
    let api = Api::new(&server);
    open_rules_breaker(&api).await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let r = api.post("/pii/deidentify", note_body(None)).await;
        let status = r.status().as_u16();
        let body: serde_json::Value = r.json().await.expect("json");
        let want = if status == 429 {
            "rate_limited"
        } else {
            "circuit_breaker_open"
        };
        assert_eq!(body["error"]["code"], want, "{body}");
        statuses.push(status);
    }
    assert_eq!(
        statuses,
        [503, 503, 503, 429, 429, 429],
        "each refusal took a token"
    );
    server.shutdown().await;
}
