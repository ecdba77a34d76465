//! Readiness, graceful shutdown with drain, and the PHI canary.

use std::sync::atomic::Ordering;

use serde_json::json;

use crate::support::{expect_error, Draining, TestServer, ADMIN};

#[tokio::test]
async fn shutdown_refuses_new_work_and_drains_in_flight() {
    let t = TestServer::start(&[("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0")]).await;
    assert_eq!(
        t.http
            .get(t.url("/readyz"))
            .send()
            .await
            .expect("send")
            .status(),
        200
    );
    let mut t = t;
    let Draining { inflight, stopping } = t.drain_with_one_in_flight().await;
    let r = t.http.get(t.url("/readyz")).send().await.expect("send");
    assert_eq!(r.status(), 503);
    expect_error(
        t.post("/pii/extract", json!({"text": "Zed"})).await,
        503,
        "not_ready",
    )
    .await;
    assert_eq!(
        t.http
            .get(t.url("/livez"))
            .send()
            .await
            .expect("send")
            .status(),
        200
    );
    t.script.release();
    assert_eq!(
        inflight.await.expect("join").status(),
        200,
        "in-flight work finished"
    );
    stopping.await.expect("shutdown completes");
    assert!(
        t.http.get(t.url("/livez")).send().await.is_err(),
        "listener closed"
    );
}

/// A writer that keeps everything the server logs.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<parking_lot::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn canary_name_never_appears_in_logs_metrics_errors_or_headers() {
    let logs = Captured::default();
    let writer = logs.clone();
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .json()
        .try_init();
    let canary = "Quillon Vexmoradith";
    let t = TestServer::start(&[
        ("PHIGUARD_RETRY_MAX_ATTEMPTS", "2"),
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
    ])
    .await;
    let note =
        format!("Patient {canary} (MRN 4455667) seen 03/04/2021 by Dr Zed, phone 555-201-3344.");
    let mut seen_by_client = String::new();
    let mut record = |status: u16, headers: &reqwest::header::HeaderMap, body: &str| {
        for (k, v) in headers {
            seen_by_client.push_str(&format!("{k}: {}\n", v.to_str().unwrap_or("")));
        }
        if status != 200 {
            seen_by_client.push_str(body);
        }
    };
    let requests = vec![
        ("/pii/deidentify", json!({"text": note, "method": "hash"})),
        ("/pii/extract", json!({"text": note})),
        ("/pii/deidentify", json!({"text": note, "method": "bogus"})),
        (
            "/pii/deidentify",
            json!({"text": note, "model_name": canary}),
        ),
        ("/pii/deidentify", json!({"text": note, "policy": canary})),
        ("/pii/deidentify", json!({"text": note, canary: true})),
        (
            "/pii/deidentify",
            json!({"text": canary, "confidence_threshold": canary}),
        ),
        (
            "/analyze",
            json!({"text": note, "aggregation_strategy": canary}),
        ),
        (
            "/pii/deidentify/stream",
            json!({"text": note, "chunk_size": 7}),
        ),
        (
            "/pii/extract/stream",
            json!({"text": note, "chunk_size": 5, "include_text": false}),
        ),
    ];
    for (path, body) in &requests {
        let r = t.post(path, body.clone()).await;
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap_or_default();
        record(status, &headers, &text);
    }
    // Failure paths: backend failures, an open breaker, a panic.
    t.script.failing.store(true, Ordering::SeqCst);
    for _ in 0..4 {
        let r = t
            .drive(t.post("/pii/deidentify", json!({"text": note})))
            .await;
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap_or_default();
        record(status, &headers, &text);
    }
    let metrics = t.metrics_text().await;
    let status = t
        .admin_get("/admin/status")
        .await
        .text()
        .await
        .expect("text");
    let bad_auth = t
        .http
        .post(t.url("/pii/extract"))
        .bearer_auth(canary)
        .json(&json!({"text": note}))
        .send()
        .await
        .expect("send");
    record(
        bad_auth.status().as_u16(),
        &bad_auth.headers().clone(),
        &bad_auth.text().await.unwrap_or_default(),
    );
    let _ = ADMIN;
    t.shutdown().await;
    let logs = String::from_utf8(logs.0.lock().clone()).unwrap_or_default();
    assert!(
        !logs.is_empty(),
        "the server logged nothing; the check would be vacuous"
    );
    for part in ["Quillon", "Vexmoradith"] {
        assert!(!logs.contains(part), "canary in logs");
        assert!(!metrics.contains(part), "canary in metrics");
        assert!(!status.contains(part), "canary in admin status");
        assert!(
            !seen_by_client.contains(part),
            "canary in an error body or header: {seen_by_client}"
        );
    }
}

/// A drain that runs out of time says how many requests it cut off (before: nothing was
/// logged or returned, and a truncated drain looked like a clean one).
#[tokio::test]
async fn a_drain_past_its_deadline_counts_the_requests_cut_off() {
    let t = TestServer::start(&[
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
        ("PHIGUARD_SHUTDOWN_DRAIN_SECONDS", "0.2"),
    ])
    .await;
    t.script.block();
    let inflight = t.spawn_post("/pii/deidentify", json!({"text": "Zed"}));
    t.until("request in flight", || {
        t.script.waiting.load(Ordering::SeqCst) == 1
    })
    .await;
    let mut t = t;
    let server = t.server.take().expect("server");
    assert_eq!(server.shutdown().await, 1, "one request cut off");
    t.script.release();
    let _ = inflight.await;
}
