//! The guard seen through HTTP: breaker cycle, the single half-open probe, retries and the
//! retry budget, admission hysteresis, bulkheads, deadlines and panics.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;

use crate::support::{envelope, expect_error, TestServer, CLIENT};

const NO_TIMEOUT: (&str, &str) = ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0");

#[tokio::test]
async fn breaker_full_cycle_and_retry_after() {
    let t = TestServer::start(&[NO_TIMEOUT]).await;
    t.script.failing.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        let (status, body, _) = envelope(
            t.drive(t.post("/pii/extract", json!({"text": "Zed"})))
                .await,
        )
        .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (500, Some("inference_error"))
        );
    }
    assert_eq!(
        t.script.calls.load(Ordering::SeqCst),
        9,
        "3 requests x 3 attempts"
    );
    let (body, headers) = expect_error(
        t.post("/pii/extract", json!({"text": "Zed"})).await,
        503,
        "circuit_breaker_open",
    )
    .await;
    assert_eq!(
        body["error"]["details"],
        json!({"state": "open", "retry_after_seconds": 30})
    );
    assert_eq!(headers["retry-after"], "30");
    assert_eq!(
        t.script.calls.load(Ordering::SeqCst),
        9,
        "open breaker fails fast"
    );
    t.clock.advance(Duration::from_millis(29_500));
    let (_, body, headers) = envelope(t.post("/pii/extract", json!({"text": "Zed"})).await).await;
    assert_eq!(
        headers["retry-after"], "1",
        "ceil of 0.5 s, at least 1: {body}"
    );
    t.clock.advance(Duration::from_secs(1));
    t.script.failing.store(false, Ordering::SeqCst);
    let ok = t.post("/pii/extract", json!({"text": "Zed"})).await;
    assert_eq!(ok.status(), 200);
    let status: serde_json::Value = t.admin_json("/admin/status").await;
    assert_eq!(status["breakers"][0]["state"], "closed");
    assert_eq!(status["tray"], "green");
    t.shutdown().await;
}

#[tokio::test]
async fn half_open_lets_exactly_one_probe_through_under_concurrency() {
    let t = TestServer::start(&[NO_TIMEOUT, ("PHIGUARD_RETRY_MAX_ATTEMPTS", "1")]).await;
    t.script.failing.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        t.post("/pii/extract", json!({"text": "Zed"})).await;
    }
    t.clock.advance(Duration::from_secs(31));
    t.script.failing.store(false, Ordering::SeqCst);
    t.script.block();
    let before = t.script.calls.load(Ordering::SeqCst);
    let probe = t.spawn_post("/pii/extract", json!({"text": "Zed"}));
    t.until("the probe to reach the backend", || {
        t.script.waiting.load(Ordering::SeqCst) == 1
    })
    .await;
    let others =
        futures::future::join_all((0..16).map(|_| t.post("/pii/extract", json!({"text": "Zed"}))))
            .await;
    for r in others {
        let (status, body, headers) = envelope(r).await;
        assert_eq!(status, 503);
        assert_eq!(body["error"]["details"]["state"], "half_open");
        assert_eq!(headers["retry-after"], "1");
    }
    assert_eq!(
        t.script.calls.load(Ordering::SeqCst) - before,
        1,
        "exactly one probe"
    );
    t.script.release();
    assert_eq!(probe.await.expect("join").status(), 200);
    t.shutdown().await;
}

#[tokio::test]
async fn retries_recover_and_client_errors_are_not_retried() {
    let t = TestServer::start(&[NO_TIMEOUT]).await;
    t.script.fail_next.store(2, Ordering::SeqCst);
    let r = t
        .drive(t.post("/pii/extract", json!({"text": "Zed"})))
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(t.script.calls.load(Ordering::SeqCst), 3);
    // A validation error never reaches the backend.
    let r = t.post("/pii/extract", json!({"text": ""})).await;
    assert_eq!(r.status(), 422);
    assert_eq!(t.script.calls.load(Ordering::SeqCst), 3);
    let metrics = t.metrics_text().await;
    assert!(metrics.contains("phiguard_retries_total 2"), "{metrics}");
    t.shutdown().await;
}

#[tokio::test]
async fn retry_budget_caps_attempts_during_an_outage() {
    let t = TestServer::start(&[
        NO_TIMEOUT,
        ("PHIGUARD_BREAKER_FAILURE_THRESHOLD", "10000"),
        ("PHIGUARD_RETRY_BUDGET_RATIO", "0.2"),
        ("PHIGUARD_RETRY_BUDGET_MIN_PER_SECOND", "0"),
    ])
    .await;
    t.script.failing.store(true, Ordering::SeqCst);
    let n = 60;
    for _ in 0..n {
        let r = t
            .drive(t.post("/pii/extract", json!({"text": "Zed"})))
            .await;
        assert_eq!(r.status(), 500);
    }
    let calls = t.script.calls.load(Ordering::SeqCst);
    // Without a budget this would be 3 x 60 = 180.
    assert!(
        calls <= n + n / 5 + 2,
        "budget exceeded: {calls} backend calls for {n} requests"
    );
    assert!(calls >= n);
    t.shutdown().await;
}

#[tokio::test]
async fn admission_sheds_at_high_watermark_until_low() {
    let t = TestServer::start(&[
        NO_TIMEOUT,
        ("PHIGUARD_ADMISSION_CAPACITY", "1"),
        ("PHIGUARD_BATCH_HIGH_WATERMARK", "3"),
        ("PHIGUARD_BATCH_LOW_WATERMARK", "1"),
        ("PHIGUARD_BATCH_MAX_QUEUE_WAIT_MS", "600000"),
    ])
    .await;
    t.script.block();
    let spawn = |t: &TestServer| t.spawn_post("/pii/extract", json!({"text": "Zed"}));
    let mut admitted = vec![spawn(&t)];
    t.until("first request running", || {
        t.script.waiting.load(Ordering::SeqCst) == 1
    })
    .await;
    admitted.push(spawn(&t));
    admitted.push(spawn(&t));
    t.until("depth 3", || {
        let s = phiguard::server::admin::status(t.server.as_ref().expect("server").state());
        s.admission.depth.interactive == 3
    })
    .await;
    let (body, headers) = expect_error(
        t.post("/pii/extract", json!({"text": "Zed"})).await,
        503,
        "backpressure",
    )
    .await;
    assert_eq!(body["error"]["details"]["reason"], "high_watermark");
    // As OpenMed reports it: the queue's capacity is the high watermark, not the one
    // execution slot.
    assert_eq!(body["error"]["details"]["queue_capacity"], 3);
    assert_eq!(body["error"]["details"]["queue_depth"], 3);
    assert!(headers.get("retry-after").is_some());
    // One finishes: depth 2, above the low watermark, so shedding continues (hysteresis).
    t.script.release_one();
    let first = admitted.remove(0).await.expect("join").status();
    assert_eq!(first, 200);
    t.until("second running", || {
        t.script.waiting.load(Ordering::SeqCst) == 1
    })
    .await;
    let (status, _, _) = envelope(t.post("/pii/extract", json!({"text": "Zed"})).await).await;
    assert_eq!(status, 503, "still shedding above the low watermark");
    // Another finishes: depth 1 = low watermark, shedding stops.
    t.script.release_one();
    assert_eq!(admitted.remove(0).await.expect("join").status(), 200);
    t.script.release();
    assert_eq!(admitted.remove(0).await.expect("join").status(), 200);
    assert_eq!(
        t.post("/pii/extract", json!({"text": "Zed"}))
            .await
            .status(),
        200
    );
    t.shutdown().await;
}

#[tokio::test]
async fn bulkhead_full_is_service_busy() {
    let t = TestServer::start(&[
        NO_TIMEOUT,
        ("PHIGUARD_MAX_CONCURRENCY", "1"),
        ("PHIGUARD_CONCURRENCY_WAIT_SECONDS", "0"),
    ])
    .await;
    t.script.block();
    let first = t.spawn_post("/pii/extract", json!({"text": "Zed"}));
    t.until("first in flight", || {
        t.script.waiting.load(Ordering::SeqCst) == 1
    })
    .await;
    let (_, headers) = expect_error(
        t.post("/pii/extract", json!({"text": "Zed"})).await,
        503,
        "service_busy",
    )
    .await;
    assert!(headers.get("retry-after").is_some());
    t.script.release();
    assert_eq!(first.await.expect("join").status(), 200);
    t.shutdown().await;
}

#[tokio::test]
async fn deadline_gives_504_with_the_timeout() {
    let t = TestServer::start(&[("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "5")]).await;
    t.script.block();
    let req = t.spawn_post("/pii/deidentify", json!({"text": "Zed"}));
    t.until("call in flight", || {
        t.script.waiting.load(Ordering::SeqCst) == 1
    })
    .await;
    t.clock.advance(Duration::from_secs(6));
    let (body, _) = expect_error(req.await.expect("join"), 504, "timeout").await;
    assert_eq!(body["error"]["details"]["timeout_seconds"], 5.0);
    t.shutdown().await;
}

/// Requests cut by their deadline do not open the breaker: the deadline bounds the
/// client's wait (as OpenMed's timeout does), and a burst of load or one client's long
/// notes outlive it as readily as a broken model. Before, three `504`s opened the breaker
/// and every client got `503 circuit_breaker_open` for 30 s while `/readyz` said ready
/// (found by an outside operator).
#[tokio::test]
async fn deadlines_that_pass_do_not_open_the_breaker() {
    let t = TestServer::start(&[("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "5")]).await;
    for _ in 0..4 {
        t.script.block();
        let req = t.spawn_post("/pii/deidentify", json!({"text": "Zed"}));
        t.until("call in flight", || {
            t.script.waiting.load(Ordering::SeqCst) == 1
        })
        .await;
        t.clock.advance(Duration::from_secs(6));
        expect_error(req.await.expect("join"), 504, "timeout").await;
        t.script.release();
        t.until("call finished", || {
            t.script.waiting.load(Ordering::SeqCst) == 0
        })
        .await;
    }
    let r = t.post("/pii/deidentify", json!({"text": "Zed"})).await;
    assert_eq!(r.status(), 200);
    let status: serde_json::Value = t.admin_json("/admin/status").await;
    let breaker = &status["breakers"][0];
    assert_eq!(breaker["state"], "closed", "{status}");
    assert_eq!(breaker["consecutive_failures"], 0, "{status}");
    t.shutdown().await;
}

#[tokio::test]
async fn a_panicking_model_call_is_a_500_and_the_server_keeps_serving() {
    let t = TestServer::start(&[NO_TIMEOUT, ("PHIGUARD_RETRY_MAX_ATTEMPTS", "1")]).await;
    t.script.panic_next.store(1, Ordering::SeqCst);
    expect_error(
        t.post("/pii/extract", json!({"text": "Zed"})).await,
        500,
        "inference_error",
    )
    .await;
    assert_eq!(
        t.post("/pii/extract", json!({"text": "Zed"}))
            .await
            .status(),
        200
    );
    t.shutdown().await;
}

#[tokio::test]
async fn degraded_mode_answers_from_rules_while_open() {
    let t = TestServer::start(&[NO_TIMEOUT, ("PHIGUARD_RETRY_MAX_ATTEMPTS", "1")]).await;
    t.script.failing.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        t.post("/pii/deidentify", json!({"text": "Zed"})).await;
    }
    let text = "Zed called 555-123-4567 on 03/04/2021.";
    let r = t.post("/pii/deidentify", json!({"text": text})).await;
    assert_eq!(r.status(), 503, "fail closed by default");
    let r = t
        .post(
            "/pii/deidentify",
            json!({"text": text, "fallback": "rules"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-phiguard-degraded"], "rules");
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(body["degraded"], true);
    let out = body["deidentified_text"].as_str().unwrap_or_default();
    assert!(
        !out.contains("555-123-4567") && !out.contains("03/04/2021"),
        "{out}"
    );
    // The streams say so in their headers too, as the single-shot route does.
    for path in STREAMS {
        let r = t
            .post(path, json!({"text": text, "fallback": "rules"}))
            .await;
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.headers()["x-phiguard-degraded"], "rules", "{path}");
        let body = r.text().await.expect("body");
        let last: serde_json::Value =
            serde_json::from_str(body.lines().last().unwrap_or("")).expect("final line");
        assert_eq!(last["degraded"], true, "{path}: {body}");
    }
    t.shutdown().await;
}

#[cfg(feature = "fault-injection")]
#[tokio::test]
async fn a_failing_model_load_is_model_load_error() {
    let t = TestServer::start(&[NO_TIMEOUT, ("PHIGUARD_RETRY_MAX_ATTEMPTS", "2")]).await;
    let st = t.server.as_ref().expect("server").state().clone();
    st.engine.registry().unload("scripted");
    st.engine.set_faults("load=fail").expect("faults");
    let (status, body, _) = envelope(
        t.drive(t.post("/pii/extract", json!({"text": "Zed"})))
            .await,
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("model_load_error"))
    );
    let faults: serde_json::Value = t.admin_json("/admin/faults").await;
    assert_eq!(faults["load"], "fail");
    st.engine.set_faults("load=ok").expect("faults");
    assert_eq!(
        t.post("/pii/extract", json!({"text": "Zed"}))
            .await
            .status(),
        200
    );
    t.shutdown().await;
}

#[tokio::test]
async fn coalescing_shares_one_model_call_among_identical_requests() {
    let t = TestServer::start(&[NO_TIMEOUT, ("PHIGUARD_COALESCING_ENABLED", "true")]).await;
    t.script.block();
    let requests: Vec<_> = (0..4)
        .map(|_| t.spawn_post("/pii/deidentify", json!({"text": "Zed was here"})))
        .collect();
    t.until("the leader at the backend", || {
        t.script.waiting.load(Ordering::SeqCst) == 1
    })
    .await;
    // The three others join the leader's flight before it is released.
    let st = t.server.as_ref().expect("server").state().clone();
    t.until("three followers", || st.coalesce.followers() == 3)
        .await;
    t.script.release();
    let mut stamps = Vec::new();
    for r in requests {
        let r = r.await.expect("join");
        assert_eq!(r.status(), 200);
        let body: serde_json::Value = r.json().await.expect("json");
        stamps.push(body["timestamp"].clone());
    }
    assert_eq!(
        t.script.calls.load(Ordering::SeqCst),
        1,
        "one model call for four requests"
    );
    assert!(stamps.windows(2).all(|w| w[0] == w[1]), "one shared result");
    t.shutdown().await;
}

const STREAMS: [&str; 2] = ["/pii/extract/stream", "/pii/deidentify/stream"];

/// A stream that fails before its first line (an open breaker, a passed deadline) is
/// answered as the other routes answer that failure: an error envelope with its status and
/// `Retry-After`, not a `200` whose body is empty or one error line.
#[tokio::test]
async fn a_stream_that_fails_before_its_first_line_is_an_error_response() {
    let t = TestServer::start(&[("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "5")]).await;
    // The deadline passes while the first window is in the model.
    for path in STREAMS {
        t.script.block();
        let req = t.spawn_post(path, json!({"text": "Zed Canary"}));
        t.until("call in flight", || {
            t.script.waiting.load(Ordering::SeqCst) == 1
        })
        .await;
        t.clock.advance(Duration::from_secs(6));
        let (body, _) = expect_error(req.await.expect("join"), 504, "timeout").await;
        assert_eq!(body["error"]["details"]["timeout_seconds"], 5.0, "{path}");
        t.script.release();
        t.until("call finished", || {
            t.script.waiting.load(Ordering::SeqCst) == 0
        })
        .await;
    }
    // The breaker is open.
    let r = t
        .admin_post("/admin/breakers/scripted/force-open", json!({}))
        .await;
    assert_eq!(r.status(), 200);
    for path in STREAMS {
        let (body, headers) = expect_error(
            t.post(path, json!({"text": "Zed Canary"})).await,
            503,
            "circuit_breaker_open",
        )
        .await;
        assert!(headers.get("retry-after").is_some(), "{path}: {body}");
        assert!(!body.to_string().contains("Canary"), "{body}");
    }
    t.shutdown().await;
}

/// A stream reads the whole text before its first line (so that a name found late is
/// masked early too), so a model that fails on any of a long text's windows, or a deadline
/// that passes while they are read, is the error response of the single-shot routes:
/// nothing of the text goes out, and never a `200` that ends in an error line.
#[tokio::test]
async fn a_stream_whose_model_fails_on_any_window_sends_nothing_of_the_text() {
    let t = TestServer::start(&[
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "5"),
        ("PHIGUARD_RETRY_MAX_ATTEMPTS", "1"),
    ])
    .await;
    // Many windows, each with an entity.
    let text = "Zed was seen today. ".repeat(800);
    for (path, deadline) in [
        (STREAMS[0], false),
        (STREAMS[1], false),
        (STREAMS[0], true),
        (STREAMS[1], true),
    ] {
        t.script.block();
        let req = t.spawn_post(path, json!({"text": text}));
        t.until("a window in the model", || {
            t.script.waiting.load(Ordering::SeqCst) >= 1
        })
        .await;
        if deadline {
            t.clock.advance(Duration::from_secs(6));
        } else {
            t.script.failing.store(true, Ordering::SeqCst);
            t.script.release();
        }
        let (status, code) = if deadline {
            (504, "timeout")
        } else {
            (500, "inference_error")
        };
        let (body, _) = expect_error(req.await.expect("join"), status, code).await;
        assert!(!body.to_string().contains("Zed"), "{path}: {body}");
        t.script.failing.store(false, Ordering::SeqCst);
        t.script.release();
        t.until("calls finished", || {
            t.script.waiting.load(Ordering::SeqCst) == 0
        })
        .await;
        // The breaker counts failures: each case starts with it closed.
        let r = t
            .admin_post("/admin/breakers/scripted/reset", json!({}))
            .await;
        assert_eq!(r.status(), 200);
    }
    t.shutdown().await;
}

/// A client that hangs up while its model call runs leaves the inflight gauge as it found
/// it. Before, the gauge counted such a request for ever: one more for every client that
/// went (found by an outside security reviewer; a hostile client could push it up at
/// will and mislead alerting or autoscaling).
#[tokio::test]
async fn a_client_that_hangs_up_is_no_longer_counted_in_flight() {
    use tokio::io::AsyncWriteExt as _;
    let t = TestServer::start(&[NO_TIMEOUT]).await;
    let inflight = |text: &str| -> i64 {
        text.lines()
            .find_map(|l| l.strip_prefix("openmed_service_inflight_requests "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(-1)
    };
    assert_eq!(inflight(&t.metrics_text().await), 0);
    t.script.block();
    let body = r#"{"text":"Zed"}"#;
    let addr = t.base.trim_start_matches("http://").to_owned();
    let mut sock = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let req = format!(
        "POST /pii/extract HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {CLIENT}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    sock.write_all(req.as_bytes()).await.expect("send");
    t.until("call in flight", || {
        t.script.waiting.load(Ordering::SeqCst) == 1
    })
    .await;
    drop(sock);
    let mut now = -1;
    for _ in 0..100 {
        now = inflight(&t.metrics_text().await);
        if now == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(now, 0, "the request of the client that went is not counted");
    t.script.release();
    t.shutdown().await;
}
