//! One test per row of docs/errors.md: status, code, headers and the envelope.

use serde_json::json;

use crate::support::{envelope, expect_error, TestServer, ADMIN, CLIENT};

#[tokio::test]
async fn validation_errors_never_echo_and_list_fields() {
    let t = TestServer::start(&[
        ("PHIGUARD_MAX_TEXT_LENGTH", "50"),
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
    ])
    .await;
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{not json".to_vec(), "json_invalid"),
        (
            br#"{"text": "Zed Canary", "bogus_field": 1}"#.to_vec(),
            "extra_forbidden",
        ),
        (br#"{"text": 17}"#.to_vec(), "string_type"),
        (br#"{"text": "   "}"#.to_vec(), "value_error"),
        (
            format!(r#"{{"text": "{}"}}"#, "x".repeat(51)).into_bytes(),
            "value_error",
        ),
        (vec![b'{', b'"', 0xff, 0xfe, b'"', b'}'], "json_invalid"),
        (
            br#"{"text": "Zed Canary", "chunk_size": 999999999}"#.to_vec(),
            "less_than_equal",
        ),
        (br#"[1, 2]"#.to_vec(), "model_attributes_type"),
        (
            br#"{"text": "Zed Canary", "confidence_threshold": "Zed Canary"}"#.to_vec(),
            "float_type",
        ),
    ];
    for (body, kind) in cases {
        let resp = t
            .http
            .post(t.url("/pii/extract/stream"))
            .bearer_auth(CLIENT)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("send");
        let (status, body, _) = envelope(resp).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error"]["code"], "validation_error");
        let text = body.to_string();
        assert!(text.contains(kind), "{kind} missing in {text}");
        assert!(!text.contains("Canary"), "request text echoed: {text}");
    }
    t.shutdown().await;
}

/// Posts raw bytes to `path` with the client token; returns the 422's problems.
async fn problems(t: &TestServer, path: &str, body: impl Into<Vec<u8>>) -> serde_json::Value {
    let resp = t
        .http
        .post(t.url(path))
        .bearer_auth(CLIENT)
        .header("content-type", "application/json")
        .body(body.into())
        .send()
        .await
        .expect("send");
    let (body, _) = expect_error(resp, 422, "validation_error").await;
    body["error"]["details"].clone()
}

#[tokio::test]
async fn validation_errors_say_what_to_change() {
    let t = TestServer::start(&[
        ("PHIGUARD_MAX_TEXT_LENGTH", "50"),
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
    ])
    .await;
    // Text over the limit: the limit and the setting that raises it.
    let d = problems(
        &t,
        "/pii/extract",
        format!(r#"{{"text": "Zed Canary {}"}}"#, "x".repeat(60)),
    )
    .await;
    assert_eq!(d[0]["field"], "body.text");
    let msg = d[0]["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("50 characters") && msg.contains("PHIGUARD_MAX_TEXT_LENGTH"),
        "{msg}"
    );
    assert!(!d.to_string().contains("Canary"));

    // An unknown field with a plain name is named, with the accepted fields.
    let d = problems(&t, "/pii/deidentify", r#"{"text": "Zed", "methd": "mask"}"#).await;
    assert_eq!(d[0]["field"], "body.methd", "{d}");
    assert_eq!(d[0]["type"], "extra_forbidden");
    let msg = d[0]["message"].as_str().unwrap_or("");
    assert!(msg.contains("methd") && msg.contains("method"), "{msg}");

    // Any other name is never repeated: not a phrase, not a long name, not a non-ASCII one.
    let long = format!("Canary{}", "a".repeat(60));
    for key in ["Zed Canary", long.as_str(), "Canaryé", "Canary-1"] {
        let body = json!({"text": "Zed", key: 1}).to_string();
        let d = problems(&t, "/pii/extract", body).await;
        assert_eq!(d[0]["field"], "body", "{d}");
        assert!(
            d[0]["message"]
                .as_str()
                .unwrap_or("")
                .contains("an unknown field"),
            "{d}"
        );
        assert!(!d.to_string().contains("Canary"), "{key} echoed: {d}");
    }

    // A shift of 0 days would hand the dates back as written: refused on both routes, as
    // the CLI and /fhir/deidentify refuse it; 1 day and -1 go through.
    for path in ["/pii/deidentify", "/pii/deidentify/stream"] {
        let body = json!({"text": "Zed Canary seen 03/04/2021", "method": "shift_dates", "date_shift_days": 0});
        let d = problems(&t, path, body.to_string()).await;
        assert_eq!(d[0]["field"], "body.date_shift_days", "{path}: {d}");
        let msg = d[0]["message"].as_str().unwrap_or("");
        assert!(msg.contains("must not be 0"), "{path}: {msg}");
        assert!(!d.to_string().contains("Canary"), "{d}");
        for days in [1, -1] {
            let body = json!({"text": "Zed", "method": "shift_dates", "date_shift_days": days});
            assert_eq!(t.post(path, body).await.status(), 200, "{path} {days}");
        }
    }

    // Bad JSON: line and column, and nothing of the body.
    let d = problems(&t, "/pii/extract", "{\n  \"text\": \"Zed\",\n  Canary\n}").await;
    assert_eq!(d[0]["type"], "json_invalid");
    let msg = d[0]["message"].as_str().unwrap_or("");
    assert!(msg.contains("line 3, column 3"), "{msg}");
    assert!(!d.to_string().contains("Canary"), "{d}");
    t.shutdown().await;
}

#[tokio::test]
async fn unknown_model_is_not_served() {
    let t = TestServer::start(&[]).await;
    let resp = t
        .post(
            "/pii/extract",
            json!({"text": "hello Zed", "model_name": "nobody/Canary-Model"}),
        )
        .await;
    let (status, body, _) = envelope(resp).await;
    assert_eq!(status, 422);
    assert_eq!(body["error"]["code"], "model_not_served");
    assert!(!body.to_string().contains("Canary"));
    // The ids that would work are listed, in the message and in the details.
    let available = body["error"]["details"]["available_models"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(available.contains(&json!("scripted")), "{body}");
    let message = body["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("scripted"), "{message}");
    for id in &available {
        let id = id.as_str().unwrap_or("");
        let r = t
            .post(
                "/pii/extract",
                json!({"text": "hello Zed", "model_name": id}),
            )
            .await;
        assert_eq!(r.status(), 200, "listed model {id} is not served");
    }
    t.shutdown().await;
}

#[tokio::test]
async fn bad_host_auth_and_scope() {
    let t = TestServer::start(&[]).await;
    let resp = t
        .http
        .get(t.url("/models/loaded"))
        .header("host", "evil.example.com")
        .bearer_auth(CLIENT)
        .send()
        .await
        .expect("send");
    expect_error(resp, 400, "bad_request").await;

    let resp = t
        .http
        .post(t.url("/pii/extract"))
        .json(&json!({"text": "a"}))
        .send()
        .await
        .expect("send");
    let (_, headers) = expect_error(resp, 401, "authentication_required").await;
    assert!(headers.get("www-authenticate").is_some());

    let resp = t
        .http
        .post(t.url("/pii/extract"))
        .bearer_auth("wrong")
        .json(&json!({"text": "a"}))
        .send()
        .await
        .expect("send");
    let (_, headers) = expect_error(resp, 401, "invalid_credentials").await;
    assert!(headers["www-authenticate"]
        .to_str()
        .unwrap_or("")
        .contains("invalid_token"));

    let resp = t
        .http
        .get(t.url("/admin/status"))
        .header("x-api-key", CLIENT)
        .send()
        .await
        .expect("send");
    expect_error(resp, 403, "forbidden").await;

    let ok = t
        .http
        .get(t.url("/admin/status"))
        .header("x-api-key", ADMIN)
        .send()
        .await
        .expect("send");
    assert_eq!(ok.status(), 200);
    for open in ["/health", "/livez", "/readyz", "/metrics", "/openapi.json"] {
        let r = t.http.get(t.url(open)).send().await.expect("send");
        assert_eq!(r.status(), 200, "{open} must be open");
    }
    t.shutdown().await;
}

#[tokio::test]
async fn payload_too_large() {
    let t = TestServer::start(&[("PHIGUARD_MAX_REQUEST_BYTES", "1000")]).await;
    let resp = t
        .post("/pii/extract", json!({"text": "x".repeat(5000)}))
        .await;
    let (body, _) = expect_error(resp, 413, "payload_too_large").await;
    let message = body["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("1000 bytes") && message.contains("PHIGUARD_MAX_REQUEST_BYTES"),
        "{message}"
    );
    assert_eq!(body["error"]["details"]["limit_bytes"], 1000);
    assert_eq!(
        body["error"]["details"]["setting"],
        "PHIGUARD_MAX_REQUEST_BYTES"
    );
    t.shutdown().await;
}

#[tokio::test]
async fn rate_limited_with_retry_after() {
    let t = TestServer::start(&[
        ("PHIGUARD_TOKEN_RATE_LIMIT_RPS", "1"),
        ("PHIGUARD_TOKEN_RATE_LIMIT_BURST", "2"),
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
    ])
    .await;
    for _ in 0..2 {
        assert_eq!(
            t.post("/pii/extract", json!({"text": "Zed"}))
                .await
                .status(),
            200
        );
    }
    let (_, headers) = expect_error(
        t.post("/pii/extract", json!({"text": "Zed"})).await,
        429,
        "rate_limited",
    )
    .await;
    let ra: u64 = headers["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("int");
    assert!(ra >= 1);
    // The bucket refills on the injected clock, not on wall time.
    t.clock.advance(std::time::Duration::from_secs(1));
    assert_eq!(
        t.post("/pii/extract", json!({"text": "Zed"}))
            .await
            .status(),
        200
    );
    t.shutdown().await;
}

#[tokio::test]
async fn unknown_route_and_method() {
    let t = TestServer::start(&[]).await;
    // Any method on an unknown path: 404 with OpenMed's code (`bad_request`, reason
    // `Not Found`), pointing to the reference.
    for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let r = t
            .http
            .request(method.clone(), t.url("/nope/Canary"))
            .bearer_auth(CLIENT)
            .send()
            .await
            .expect("send");
        let (body, _) = expect_error(r, 404, "bad_request").await;
        assert_eq!(body["error"]["details"]["reason"], "Not Found", "{method}");
        let message = body["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("/docs"), "{method}: {message}");
        assert!(!body.to_string().contains("Canary"));
    }
    // Without a token, authentication comes first (OpenMed's deny-by-default).
    let r = t.http.get(t.url("/nope")).send().await.expect("send");
    expect_error(r, 401, "authentication_required").await;
    let r = t
        .http
        .get(t.url("/pii/extract"))
        .bearer_auth(CLIENT)
        .send()
        .await
        .expect("send");
    let (status, _, _) = envelope(r).await;
    assert_eq!(status, 405);
    t.shutdown().await;
}
