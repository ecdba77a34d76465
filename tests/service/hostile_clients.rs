//! Hostile clients against the real server: stalled headers, bodies and readers, a connection
//! flood, cross-site requests a browser page could send, request ids that could carry PHI,
//! and the headers that keep results out of caches. Traffic stays on loopback, bounded in
//! count and time.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{expect_error, metric_value, Draining, TestServer, ADMIN, CLIENT};

/// A raw connection to the server.
async fn connect(t: &TestServer) -> TcpStream {
    let addr = t.base.trim_start_matches("http://");
    TcpStream::connect(addr).await.expect("connect")
}

/// Reads what the server sends until it closes the connection (bounded).
async fn read_until_closed(s: &mut TcpStream, within: Duration) -> Option<String> {
    let mut buf = Vec::new();
    match tokio::time::timeout(within, s.read_to_end(&mut buf)).await {
        Ok(_) => Some(String::from_utf8_lossy(&buf).into_owned()),
        Err(_) => None,
    }
}

/// The head of an authenticated upload to `/pii/extract` announcing `len` bytes of body.
fn upload_head(len: usize) -> String {
    format!(
        "POST /pii/extract HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {CLIENT}\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\r\n"
    )
}

#[tokio::test]
async fn stalled_uploads_hold_no_admission_and_get_408() {
    let t = TestServer::start(&[
        ("PHIGUARD_ADMISSION_CAPACITY", "1"),
        ("PHIGUARD_BODY_TIMEOUT_SECONDS", "1.5"),
    ])
    .await;
    // Twelve uploads that stall after a few bytes of a 1000-byte body.
    let mut stalled = Vec::new();
    for _ in 0..12 {
        let mut s = connect(&t).await;
        s.write_all(upload_head(1000).as_bytes())
            .await
            .expect("head");
        s.write_all(b"{\"text\": \"Ze").await.expect("some body");
        stalled.push(s);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // With admission capacity 1, a normal request still gets through.
    let ok = t
        .post("/pii/extract", json!({"text": "Zed was here"}))
        .await;
    assert_eq!(ok.status(), 200, "a stalled upload held admission");
    // Each stalled upload is answered 408 and closed once the body timeout passes.
    for mut s in stalled {
        let out = read_until_closed(&mut s, Duration::from_secs(10))
            .await
            .expect("the server kept a stalled upload open");
        assert!(out.starts_with("HTTP/1.1 408"), "{out}");
        assert!(out.contains("\"request_timeout\""), "{out}");
        assert!(out.contains("PHIGUARD_BODY_TIMEOUT_SECONDS"), "{out}");
    }
    t.shutdown().await;
}

#[tokio::test]
async fn a_connection_that_never_finishes_its_headers_is_closed() {
    let t = TestServer::start(&[("PHIGUARD_HEADER_TIMEOUT_SECONDS", "0.5")]).await;
    let mut s = connect(&t).await;
    s.write_all(b"POST /pii/extract HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        .await
        .expect("part of a head");
    assert!(
        read_until_closed(&mut s, Duration::from_secs(10))
            .await
            .is_some(),
        "the server kept a half-sent head open"
    );
    // An idle kept-alive connection is closed the same way.
    let mut idle = connect(&t).await;
    assert!(read_until_closed(&mut idle, Duration::from_secs(10))
        .await
        .is_some());
    t.shutdown().await;
}

#[tokio::test]
async fn a_half_sent_head_does_not_hold_the_stop() {
    let t = TestServer::start(&[("PHIGUARD_HEADER_TIMEOUT_SECONDS", "60")]).await;
    let mut s = connect(&t).await;
    s.write_all(b"POST /pii/extract HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        .await
        .expect("part of a head");
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Nothing is in flight, so the stop is the listener's alone: well under the 60 s the
    // header timeout would give the connection.
    tokio::time::timeout(Duration::from_secs(10), t.shutdown())
        .await
        .expect("the stop waited for a half-sent head");
    assert!(read_until_closed(&mut s, Duration::from_secs(5))
        .await
        .is_some());
}

#[tokio::test]
async fn connections_over_the_cap_are_answered_503() {
    let t = TestServer::start(&[("PHIGUARD_MAX_CONNECTIONS", "3")]).await;
    let held = [connect(&t).await, connect(&t).await, connect(&t).await];
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut extra = connect(&t).await;
    let out = read_until_closed(&mut extra, Duration::from_secs(5))
        .await
        .expect("refused connection closed");
    assert!(out.starts_with("HTTP/1.1 503"), "{out}");
    assert!(out.contains("\"service_busy\""), "{out}");
    let lower = out.to_ascii_lowercase();
    assert!(lower.contains("retry-after: 1"), "{out}");
    // The safety headers of every response (docs/errors.md), this one included.
    assert!(lower.contains("cache-control: no-store\r\n"), "{out}");
    assert!(
        lower.contains("x-content-type-options: nosniff\r\n"),
        "{out}"
    );
    drop(held);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ok = t.post("/pii/extract", json!({"text": "Zed"})).await;
    assert_eq!(ok.status(), 200);
    let metrics = t.metrics_text().await;
    assert!(
        metrics.contains("phiguard_connections_refused_total 1"),
        "{metrics}"
    );
    t.shutdown().await;
}

#[tokio::test]
async fn the_probe_port_answers_while_the_main_port_is_full_and_through_the_drain() {
    let t = TestServer::start(&[
        ("PHIGUARD_MAX_CONNECTIONS", "2"),
        ("PHIGUARD_PROBE_PORT", "0"),
    ])
    .await;
    let probes = t.server.as_ref().and_then(|s| s.probe_addr());
    let probe = |path: &str| format!("http://{}{path}", probes.expect("a probe port"));
    let held = [connect(&t).await, connect(&t).await];
    tokio::time::sleep(Duration::from_millis(200)).await;
    // At the cap the main port turns every new connection away, a kubelet's too.
    let mut kubelet = connect(&t).await;
    let refused = read_until_closed(&mut kubelet, Duration::from_secs(5))
        .await
        .expect("refused connection closed");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    for path in ["/livez", "/readyz", "/health", "/metrics"] {
        let r = t.http.get(probe(path)).send().await.expect("send");
        assert_eq!(r.status(), 200, "{path}");
        assert!(r.headers().contains_key("x-request-id"), "{path}");
        assert_eq!(r.headers()["x-content-type-options"], "nosniff", "{path}");
    }
    // Nothing else is served there, for any token.
    let work = t
        .http
        .post(probe("/pii/extract"))
        .bearer_auth(CLIENT)
        .json(&json!({"text": "Zed"}))
        .send()
        .await
        .expect("send");
    expect_error(work, 404, "bad_request").await;
    let admin = t
        .http
        .get(probe("/admin/status"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("send");
    expect_error(admin, 404, "bad_request").await;
    let anonymous = t
        .http
        .get(probe("/admin/status"))
        .send()
        .await
        .expect("send");
    assert_eq!(anonymous.status(), 401);
    // The probe port's connections are counted apart from the clients': the main port's
    // gauge holds the two held connections only, read against its cap of 2.
    let metrics = t.text_at(&probe("/metrics")).await;
    let value = |name: &str| metric_value(&metrics, name);
    assert_eq!(value("phiguard_connections_open"), Some(2.0), "{metrics}");
    assert_eq!(value("phiguard_connections_refused_total"), Some(1.0));
    assert!(
        value("phiguard_probe_connections_open") >= Some(1.0),
        "{metrics}"
    );
    assert_eq!(value("phiguard_probe_connections_refused_total"), Some(0.0));
    drop(held);
    // Through the drain the probe port says not ready, and alive.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut t = t;
    let Draining { inflight, stopping } = t.drain_with_one_in_flight().await;
    let ready = t.http.get(probe("/readyz")).send().await.expect("send");
    expect_error(ready, 503, "not_ready").await;
    let alive = t.http.get(probe("/livez")).send().await.expect("send");
    assert_eq!(alive.status(), 200);
    t.script.release();
    assert_eq!(inflight.await.expect("join").status(), 200);
    stopping.await.expect("shutdown completes");
    assert!(
        t.http.get(probe("/livez")).send().await.is_err(),
        "the probe port closed with the server"
    );
}

#[tokio::test]
async fn a_stream_whose_reader_stops_releases_its_admission() {
    let t = TestServer::start(&[
        ("PHIGUARD_ADMISSION_CAPACITY", "1"),
        ("PHIGUARD_SEND_TIMEOUT_SECONDS", "0.5"),
    ])
    .await;
    // A client with a small receive window that reads nothing after the request.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("rcvbuf");
    let addr = t.base.trim_start_matches("http://").parse().expect("addr");
    let mut s = socket.connect(addr).await.expect("connect");
    let text = "Zed ".repeat(20_000);
    let body = json!({"text": text, "include_text": true}).to_string();
    let head = format!(
        "POST /pii/extract/stream HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {CLIENT}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.expect("head");
    s.write_all(body.as_bytes()).await.expect("body");
    // The stream fills the socket and its channel, then is abandoned; admission frees up.
    let mut ok = false;
    for _ in 0..100 {
        let r = t.post("/pii/extract", json!({"text": "Zed"})).await;
        if r.status() == 200 {
            ok = true;
            break;
        }
        assert_eq!(r.status(), 503, "only admission may refuse meanwhile");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "a stalled stream reader kept its admission");
    let metrics = t.metrics_text().await;
    assert!(
        metrics.contains("phiguard_streams_abandoned_total 1"),
        "{metrics}"
    );
    drop(s);
    t.shutdown().await;
}

#[tokio::test]
async fn cross_site_requests_are_refused_with_auth_off_too() {
    let t = TestServer::start(&[("PHIGUARD_AUTH", "off")]).await;
    // A page on another site: a simple (no-preflight) POST with text/plain.
    let forged = t
        .http
        .post(t.url("/admin/breakers/scripted/open"))
        .header("origin", "http://evil.example")
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .expect("request");
    expect_error(forged, 403, "origin_not_allowed").await;
    // The same without an Origin (old browsers, forms from file:) is refused by its type.
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let r = t
            .http
            .post(t.url("/admin/tokens"))
            .header("content-type", ct)
            .body("{\"label\":\"x\"}")
            .send()
            .await
            .expect("request");
        expect_error(r, 415, "unsupported_media_type").await;
    }
    // An untyped body (a Blob with no type) too.
    let r = t
        .http
        .post(t.url("/pii/extract"))
        .body("{\"text\":\"Zed\"}")
        .send()
        .await
        .expect("request");
    expect_error(r, 415, "unsupported_media_type").await;
    // `Origin: null` (sandboxed frames) and the desktop webview's origin on a headless server.
    for origin in ["null", "tauri://localhost", "http://tauri.localhost"] {
        let r = t
            .http
            .post(t.url("/pii/extract"))
            .header("origin", origin)
            .json(&json!({"text": "Zed"}))
            .send()
            .await
            .expect("request");
        expect_error(r, 403, "origin_not_allowed").await;
    }
    // The server's own origin (the dashboard at /ui/) and clients without Origin pass.
    let own = format!("http://{}", t.base.trim_start_matches("http://"));
    let r = t
        .http
        .post(t.url("/pii/extract"))
        .header("origin", own)
        .json(&json!({"text": "Zed"}))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);
    let r = t
        .http
        .post(t.url("/pii/extract"))
        .json(&json!({"text": "Zed"}))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);
    // A body-less admin POST needs no type.
    let r = t
        .http
        .post(t.url("/admin/breakers/scripted/reset"))
        .send()
        .await
        .expect("request");
    assert_ne!(r.status(), 415);
    t.shutdown().await;
}

#[tokio::test]
async fn configured_origins_pass_and_others_do_not() {
    let t = TestServer::start(&[("PHIGUARD_CORS_ORIGINS", "http://ehr.example:3000")]).await;
    for (origin, status) in [
        ("http://ehr.example:3000", 200),
        ("http://ehr.example:3001", 403),
        ("https://ehr.example:3000", 403),
    ] {
        let r = t
            .http
            .post(t.url("/pii/extract"))
            .bearer_auth(CLIENT)
            .header("origin", origin)
            .json(&json!({"text": "Zed"}))
            .send()
            .await
            .expect("request");
        assert_eq!(r.status().as_u16(), status, "{origin}");
    }
    t.shutdown().await;
}

#[tokio::test]
async fn a_configured_origin_gets_its_preflight_and_cors_headers_on_errors_too() {
    let t = TestServer::start(&[("PHIGUARD_CORS_ORIGINS", "http://ehr.example:3000")]).await;
    let allowed = "http://ehr.example:3000";
    let acao = |r: &reqwest::Response| {
        r.headers()
            .get("access-control-allow-origin")
            .map(|v| v.to_str().unwrap_or("").to_string())
    };
    // The browser's preflight is answered before any authentication.
    let pre = t
        .http
        .request(reqwest::Method::OPTIONS, t.url("/pii/extract"))
        .header("origin", allowed)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type",
        )
        .send()
        .await
        .expect("preflight");
    assert!(pre.status().is_success(), "{}", pre.status());
    assert_eq!(acao(&pre).as_deref(), Some(allowed));
    // A refusal is readable by the page that sent it (it can tell a bad token from a dead server).
    let denied = t
        .http
        .post(t.url("/pii/extract"))
        .header("origin", allowed)
        .json(&json!({"text": "Zed"}))
        .send()
        .await
        .expect("request");
    assert_eq!(denied.status().as_u16(), 401);
    assert_eq!(acao(&denied).as_deref(), Some(allowed));
    // Another origin's preflight gets no grant, and its request is refused.
    let other = t.preflight("/pii/extract", "http://evil.example").await;
    assert_eq!(acao(&other), None);
    t.shutdown().await;
}

#[tokio::test]
async fn request_ids_that_could_carry_phi_are_replaced() {
    let t = TestServer::start(&[]).await;
    let uuid = "5b0c0b0e-2f7c-4d0e-9a55-3c1f2b0b7d41";
    let ulid = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    for (sent, kept) in [
        (uuid, true),
        (ulid, true),
        (trace, true),
        ("John-Smith", false),
        ("MRN-00482913", false),
        ("patient.jane.doe:1980", false),
    ] {
        let r = t
            .http
            .post(t.url("/pii/extract"))
            .bearer_auth(CLIENT)
            .header("x-request-id", sent)
            .json(&json!({"text": "Zed"}))
            .send()
            .await
            .expect("request");
        let got = r.headers()["x-request-id"]
            .to_str()
            .expect("ascii")
            .to_string();
        assert_eq!(got == sent, kept, "{sent} -> {got}");
        if !kept {
            assert_eq!(got.len(), 36, "a fresh UUID replaces {sent}");
        }
    }
    t.shutdown().await;
}

#[tokio::test]
async fn results_and_errors_are_not_cacheable_and_not_sniffed() {
    let t = TestServer::start(&[]).await;
    let ok = t
        .post("/pii/deidentify", json!({"text": "Zed", "method": "mask"}))
        .await;
    let bad = t.post("/pii/extract", json!({"text": 1})).await;
    let stream = t.post("/pii/extract/stream", json!({"text": "Zed"})).await;
    let admin = t.admin_get("/admin/status").await;
    for r in [&ok, &bad, &stream, &admin] {
        assert_eq!(r.headers()["cache-control"], "no-store", "{}", r.url());
        assert_eq!(
            r.headers()["x-content-type-options"],
            "nosniff",
            "{}",
            r.url()
        );
    }
    t.shutdown().await;
}

#[tokio::test]
async fn a_query_token_with_broken_escapes_is_an_invalid_token_not_a_panic() {
    let t = TestServer::start(&[]).await;
    for q in [
        "token=%a\u{e9}\u{e9}",
        "token=%\u{e9}",
        "token=%",
        "token=%zz%f0%9f",
    ] {
        let r = t
            .http
            .get(t.url(&format!("/admin/events?{q}")))
            .send()
            .await
            .expect("request");
        expect_error(r, 401, "invalid_credentials").await;
    }
    // Raw bytes after an escape, as the request line carries them (no client re-encoding).
    let mut s = connect(&t).await;
    s.write_all("GET /admin/events?token=%a\u{e9}\u{e9} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n".as_bytes())
        .await
        .expect("request line");
    let out = read_until_closed(&mut s, Duration::from_secs(10))
        .await
        .expect("answered");
    assert!(
        out.starts_with("HTTP/1.1 401") || out.starts_with("HTTP/1.1 400"),
        "{out}"
    );
    let r = t
        .http
        .get(t.url(&format!("/admin/events?token={ADMIN}")))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);
    t.shutdown().await;
}

#[tokio::test]
async fn an_unknown_settings_key_is_not_echoed() {
    let t = TestServer::start(&[]).await;
    let r = t
        .admin_put("/admin/settings", json!({"Zqx Canary Smith": "1"}))
        .await;
    let (body, _) = expect_error(r, 422, "validation_error").await;
    assert!(!body.to_string().contains("Canary"), "{body}");
    t.shutdown().await;
}

/// A bounded load test: while slow clients hold connections (heads dripped a byte at a time,
/// uploads stalled mid-body, stream readers that stopped), ordinary requests from several
/// concurrent clients are all answered, and the slow ones are closed by their timeouts.
#[tokio::test]
async fn ordinary_traffic_is_served_while_slow_clients_hold_connections() {
    let t = TestServer::start(&[
        ("PHIGUARD_ADMISSION_CAPACITY", "2"),
        ("PHIGUARD_HEADER_TIMEOUT_SECONDS", "2"),
        ("PHIGUARD_BODY_TIMEOUT_SECONDS", "2"),
        ("PHIGUARD_SEND_TIMEOUT_SECONDS", "1"),
    ])
    .await;
    let mut slow = Vec::new();
    // Thirty heads sent one byte every 100 ms: they never finish within the header timeout.
    for _ in 0..30 {
        let mut s = connect(&t).await;
        slow.push(tokio::spawn(async move {
            for b in upload_head(10).bytes() {
                if s.write_all(&[b]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }));
    }
    // Twelve uploads stalled mid-body.
    let mut stalled = Vec::new();
    for _ in 0..12 {
        let mut s = connect(&t).await;
        s.write_all(upload_head(500).as_bytes())
            .await
            .expect("head");
        s.write_all(b"{\"text\"").await.expect("some body");
        stalled.push(s);
    }
    // Two stream readers that never read.
    let text = "Zed ".repeat(20_000);
    let body = json!({"text": text, "include_text": true}).to_string();
    let mut readers = Vec::new();
    for _ in 0..2 {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_recv_buffer_size(4096).expect("rcvbuf");
        let addr = t.base.trim_start_matches("http://").parse().expect("addr");
        let mut s = socket.connect(addr).await.expect("connect");
        let head = format!(
            "POST /pii/extract/stream HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {CLIENT}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.expect("head");
        s.write_all(body.as_bytes()).await.expect("body");
        readers.push(s);
    }
    // Four clients, ten requests each, retrying only what admission sheds.
    let mut clients = Vec::new();
    for _ in 0..4 {
        let http = t.http.clone();
        let url = t.url("/pii/extract");
        clients.push(tokio::spawn(async move {
            let mut shed = 0;
            let mut ok = 0;
            while ok < 10 {
                let r = http
                    .post(&url)
                    .bearer_auth(CLIENT)
                    .json(&json!({"text": "Zed called"}))
                    .send()
                    .await
                    .expect("request");
                match r.status().as_u16() {
                    200 => ok += 1,
                    503 => {
                        shed += 1;
                        assert!(shed < 200, "shed for too long");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    other => panic!("unexpected status {other}"),
                }
            }
        }));
    }
    for c in clients {
        tokio::time::timeout(Duration::from_secs(60), c)
            .await
            .expect("ordinary clients were served in time")
            .expect("client task");
    }
    for mut s in stalled {
        let out = read_until_closed(&mut s, Duration::from_secs(10))
            .await
            .expect("a stalled upload was closed");
        assert!(out.starts_with("HTTP/1.1 408"), "{out}");
    }
    for h in slow {
        tokio::time::timeout(Duration::from_secs(10), h)
            .await
            .expect("dripped heads were cut off")
            .expect("drip task");
    }
    drop(readers);
    t.shutdown().await;
}

/// The status line of the answer to `head` (a whole request without a body), sent raw.
async fn status_of_raw(t: &TestServer, head: &str) -> String {
    let mut s = connect(t).await;
    s.write_all(head.as_bytes()).await.expect("request");
    let answer = read_until_closed(&mut s, Duration::from_secs(10))
        .await
        .expect("an answer within 10 s");
    answer.lines().next().unwrap_or_default().to_owned()
}

/// Every host a request names must be trusted. Two `Host` headers (a trusted one first)
/// and a target in absolute form naming another host were answered 200; they are 400 now,
/// while the ordinary and the trusted absolute forms still pass.
#[tokio::test]
async fn a_second_host_header_or_an_untrusted_absolute_target_is_refused() {
    let t = TestServer::start(&[]).await;
    let get = |target: &str, hosts: &[&str]| {
        let hosts: String = hosts.iter().map(|h| format!("host: {h}\r\n")).collect();
        format!(
            "GET {target} HTTP/1.1\r\n{hosts}authorization: Bearer {CLIENT}\r\nconnection: close\r\n\r\n"
        )
    };
    let port = t.base.rsplit(':').next().unwrap_or_default().to_owned();
    for (head, want) in [
        (get("/models/loaded", &["127.0.0.1"]), "200"),
        (
            get(
                &format!("http://127.0.0.1:{port}/models/loaded"),
                &["127.0.0.1"],
            ),
            "200",
        ),
        (
            get("/models/loaded", &["127.0.0.1", "evil.example.com"]),
            "400",
        ),
        (
            get("/models/loaded", &["evil.example.com", "127.0.0.1"]),
            "400",
        ),
        (
            get("http://evil.example.com/models/loaded", &["127.0.0.1"]),
            "400",
        ),
    ] {
        let status = status_of_raw(&t, &head).await;
        assert!(status.contains(want), "{head:?} -> {status}");
    }
    t.shutdown().await;
}

/// An `OPTIONS` that is not a browser's CORS preflight meets the request context like any
/// method: 405 with `Allow` on a known route, 404 on an unknown path, 400 for an untrusted
/// `Host`, 401 without a token, each an envelope with `X-Request-Id`, `no-store` and
/// `nosniff`. Before, every `OPTIONS` was answered an empty 200 without them (the CORS layer
/// took it for a preflight). A real preflight is still answered by CORS (its own test above).
#[tokio::test]
async fn an_options_request_that_is_not_a_preflight_is_answered_like_any_method() {
    let t = TestServer::start(&[]).await;
    let options = |path: &str| {
        t.http
            .request(reqwest::Method::OPTIONS, t.url(path))
            .bearer_auth(CLIENT)
    };
    for (req, status, reason) in [
        (options("/pii/extract"), 405, "Method Not Allowed"),
        (options("/no/such/path"), 404, "Not Found"),
        (options("/health"), 405, "Method Not Allowed"),
        (
            t.http
                .request(reqwest::Method::OPTIONS, t.url("/pii/extract")),
            401,
            "",
        ),
    ] {
        let r = req.send().await.expect("send");
        let url = r.url().to_string();
        let headers = r.headers().clone();
        assert_eq!(r.status().as_u16(), status, "{url}");
        assert!(headers.contains_key("x-request-id"), "{url}: {headers:?}");
        assert_eq!(headers["cache-control"], "no-store", "{url}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{url}");
        let body: serde_json::Value = r.json().await.expect("an envelope");
        assert_eq!(
            body["error"]["request_id"].as_str(),
            headers["x-request-id"].to_str().ok(),
            "{url}: {body}"
        );
        if !reason.is_empty() {
            assert_eq!(body["error"]["details"]["reason"], reason, "{url}: {body}");
        }
        if status == 405 {
            let allow = headers["allow"].to_str().unwrap_or_default();
            assert!(!allow.contains("OPTIONS"), "{url}: {allow}");
            assert!(
                allow.contains(if url.ends_with("/health") {
                    "GET"
                } else {
                    "POST"
                }),
                "{url}: {allow}"
            );
        }
    }
    let status = status_of_raw(
        &t,
        &format!(
            "OPTIONS /pii/extract HTTP/1.1\r\nhost: evil.example\r\nauthorization: Bearer {CLIENT}\r\nconnection: close\r\n\r\n"
        ),
    )
    .await;
    assert!(status.contains("400"), "{status}");
    // A browser's preflight is still CORS's to answer (no request id, no auth), with the
    // safety headers.
    let pre = t.preflight("/pii/extract", "http://evil.example").await;
    assert_eq!(pre.status(), 200);
    assert!(!pre.headers().contains_key("x-request-id"));
    assert_eq!(pre.headers()["x-content-type-options"], "nosniff");
    assert_eq!(pre.headers()["cache-control"], "no-store");
    t.shutdown().await;
}

/// What `docs/errors.md` ("Limits of the HTTP layer") says of requests HTTP/1.1 cannot frame:
/// hyper answers them with a bare status line and closes the connection, and nothing of them
/// reaches the service (no request id, no handler). Pinned so that the page stays true, and
/// so that a malformed `Content-Length` can never reach a body reader.
#[tokio::test]
async fn requests_that_cannot_be_framed_are_answered_by_the_http_layer() {
    let t = TestServer::start(&[]).await;
    let head = format!(
        "POST /pii/extract HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {CLIENT}\r\ncontent-type: application/json\r\n"
    );
    let many: String = (0..200).map(|i| format!("x-h: {i}\r\n")).collect();
    for (extra, status) in [
        ("content-length: -5\r\n".to_string(), "400"),
        ("content-length: abc\r\n".to_string(), "400"),
        (
            "content-length: 2\r\ncontent-length: 7\r\n".to_string(),
            "400",
        ),
        (format!("{many}content-length: 2\r\n"), "431"),
    ] {
        let mut s = connect(&t).await;
        s.write_all(format!("{head}{extra}\r\n{{}}").as_bytes())
            .await
            .expect("request");
        let out = read_until_closed(&mut s, Duration::from_secs(10))
            .await
            .expect("answered and closed");
        let lower = out.to_ascii_lowercase();
        assert!(out.starts_with(&format!("HTTP/1.1 {status}")), "{out}");
        assert!(lower.contains("content-length: 0\r\n"), "{out}");
        assert!(!lower.contains("x-request-id"), "{out}");
    }
    assert_eq!(t.script.calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    t.shutdown().await;
}
