//! Hardening of the front door: the per-peer limit on failed authentications, token expiry,
//! and the admin audit log with who did what, from where, and how it ended.

use std::net::IpAddr;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{envelope, expect_error, metric_value, TestServer, ADMIN, CLIENT};

/// A client whose connections come from `ip` (any 127.0.0.0/8 address is loopback on Linux).
fn client_from(ip: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .local_address(IpAddr::from(ip))
        .build()
        .expect("client")
}

async fn metric(t: &TestServer, name: &str) -> f64 {
    metric_value(&t.metrics_text().await, name)
        .unwrap_or_else(|| panic!("no {name} in the metrics"))
}

#[tokio::test]
async fn failed_authentications_are_limited_per_peer_address() {
    let t = TestServer::start(&[]).await;
    let models = t.url("/models/loaded");
    let get = |http: &reqwest::Client, token: &str| http.get(&models).bearer_auth(token).send();
    for i in 0..10 {
        let r = get(&t.http, "wrong-token").await.expect("send");
        expect_error(r, 401, "invalid_credentials").await;
        let _ = i;
    }
    // The eleventh wrong token, and then the right one: refused before any comparison.
    for token in ["wrong-token", CLIENT, ADMIN] {
        let r = get(&t.http, token).await.expect("send");
        let (body, headers) = expect_error(r, 429, "rate_limited").await;
        assert_eq!(body["error"]["details"]["key"], "auth");
        assert_eq!(
            headers.get("retry-after").and_then(|v| v.to_str().ok()),
            Some("6"),
            "one failure is forgiven every 6 s"
        );
        assert!(!body.to_string().contains(token), "the token is not echoed");
    }
    // A missing token is no failure and compares nothing: still 401.
    let r = t.http.get(&models).send().await.expect("send");
    expect_error(r, 401, "authentication_required").await;
    // Open routes stay open.
    assert_eq!(
        t.http
            .get(t.url("/health"))
            .send()
            .await
            .expect("send")
            .status(),
        200
    );
    // Another peer is not affected.
    let other = client_from([127, 0, 0, 2]);
    assert_eq!(get(&other, CLIENT).await.expect("send").status(), 200);
    assert_eq!(metric(&t, "phiguard_auth_failures_total").await, 10.0);
    assert_eq!(metric(&t, "phiguard_auth_refused_total").await, 3.0);

    // Six seconds later one failure is forgiven: the right token works again.
    t.clock.advance(Duration::from_secs(6));
    assert_eq!(get(&t.http, CLIENT).await.expect("send").status(), 200);
    t.shutdown().await;
}

#[tokio::test]
async fn the_limit_follows_the_settings_live() {
    let t = TestServer::start(&[]).await;
    let r = t
        .admin_put("/admin/settings", json!({"security.auth_failure_burst": 2}))
        .await;
    assert_eq!(r.status(), 200);
    let models = t.url("/models/loaded");
    for expected in [401, 401, 429] {
        let r = t
            .http
            .get(&models)
            .bearer_auth("nope")
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), expected);
    }
    t.shutdown().await;
}

#[tokio::test]
async fn a_token_with_an_expiry_is_refused_once_it_passes() {
    let t = TestServer::start(&[]).await;
    let create = |body: Value| {
        t.http
            .post(t.url("/admin/tokens"))
            .bearer_auth(ADMIN)
            .json(&body)
            .send()
    };
    let r = create(json!({"label": "nightly", "expires_in_seconds": 0}))
        .await
        .expect("send");
    let (body, _) = expect_error(r, 422, "validation_error").await;
    assert_eq!(
        body["error"]["details"][0]["field"],
        "body.expires_in_seconds"
    );

    let r = create(json!({"label": "nightly", "expires_in_seconds": 2}))
        .await
        .expect("send");
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.expect("json");
    let token = created["token"].as_str().expect("token").to_string();
    let id = created["id"].as_str().expect("id").to_string();
    let at = created["expires_at"]
        .as_str()
        .expect("expires_at")
        .to_string();
    let expiry = chrono::DateTime::parse_from_rfc3339(&at).expect("rfc3339");
    let listed = |list: &Value| {
        list["tokens"]
            .as_array()
            .expect("tokens")
            .iter()
            .find(|x| x["id"] == id.as_str())
            .cloned()
            .expect("listed")
    };
    let models = t.url("/models/loaded");
    assert_eq!(
        t.http
            .get(&models)
            .bearer_auth(&token)
            .send()
            .await
            .expect("send")
            .status(),
        200
    );
    let list: Value = t.admin_json("/admin/tokens").await;
    assert_eq!(listed(&list)["expires_at"], at.as_str());
    assert_eq!(listed(&list)["expired"], false);

    // The registry's expiry is wall-clock time: wait until it has passed.
    let left = (expiry.with_timezone(&chrono::Utc) - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    assert!(left <= Duration::from_secs(3), "at most 2 s, rounded up");
    tokio::time::sleep(left + Duration::from_millis(200)).await;
    let r = t
        .http
        .get(&models)
        .bearer_auth(&token)
        .send()
        .await
        .expect("send");
    expect_error(r, 401, "invalid_credentials").await;
    let list: Value = t.admin_json("/admin/tokens").await;
    assert_eq!(listed(&list)["expired"], true);
    t.shutdown().await;
}

/// An admin change that could not be recorded is not made: `500 internal_error` and
/// nothing changed, while reading stays possible (a settings change, a forced breaker and
/// a new admin token were applied unrecorded; found by an outside operations tester).
#[tokio::test]
async fn an_admin_change_is_refused_while_the_audit_log_cannot_be_written() {
    let t = TestServer::start(&[("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0")]).await;
    let path = t._dir.path().join("data/audit.jsonl");
    let _ = std::fs::remove_file(&path);
    std::fs::create_dir_all(&path).expect("a folder where the file goes");
    let r = t
        .admin_put("/admin/settings", json!({"retry.max_attempts": 5}))
        .await;
    expect_error(r, 500, "internal_error").await;
    let r = t
        .admin_post("/admin/breakers/scripted/force-open", json!({}))
        .await;
    expect_error(r, 500, "internal_error").await;
    let settings: Value = t.admin_json("/admin/settings").await;
    assert_eq!(
        crate::support::setting_row(&settings, "retry.max_attempts")["value"],
        3,
        "not applied"
    );
    let status: Value = t.admin_json("/admin/status").await;
    assert!(!status.to_string().contains("forced_open"), "{status}");
    // Writable again: the change goes ahead and is recorded.
    std::fs::remove_dir(&path).expect("remove the folder");
    let r = t
        .admin_put("/admin/settings", json!({"retry.max_attempts": 5}))
        .await;
    assert_eq!(r.status(), 200);
    let text = std::fs::read_to_string(&path).expect("audit file");
    assert!(text.contains("settings.update"), "{text}");
    t.shutdown().await;
}

#[tokio::test]
async fn admin_actions_are_audited_with_who_what_and_the_values() {
    let t = TestServer::start(&[("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0")]).await;
    let r = t
        .admin_put("/admin/settings", json!({"retry.max_attempts": 5}))
        .await;
    assert_eq!(r.status(), 200);
    let created: Value = t
        .http
        .post(t.url("/admin/tokens"))
        .bearer_auth(ADMIN)
        .json(&json!({"label": "ops laptop", "scope": "admin", "expires_in_seconds": 3600}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let token = created["token"].as_str().expect("token").to_string();
    let id = created["id"].as_str().expect("id").to_string();
    // The new admin token acts, and is named as the actor.
    let r = t
        .http
        .post(t.url("/admin/breakers/scripted/force-open"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let r = t.admin_delete(&format!("/admin/tokens/{id}")).await;
    assert_eq!(r.status(), 204);
    // A refused action on an unknown target is recorded without that target.
    let r = t.admin_delete("/admin/tokens/tok_not-a-token-Zed").await;
    assert_eq!(r.status(), 404);

    let audit: Value = t.admin_json("/admin/audit").await;
    let entries = audit["entries"].as_array().expect("entries");
    let actions: Vec<&str> = entries
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    assert_eq!(
        actions,
        [
            "token.revoke",
            "token.revoke",
            "breaker.force_open",
            "token.create",
            "settings.update"
        ],
        "newest first"
    );
    let [missing, revoke, breaker, create, setting] = &entries[..] else {
        panic!("five entries");
    };
    assert_eq!(missing["result"], "not_found");
    assert_eq!(missing["target"], Value::Null);
    assert_eq!(revoke["target"], id.as_str());
    assert_eq!(
        (revoke["actor"].as_str(), revoke["result"].as_str()),
        (Some("admin"), Some("ok"))
    );
    assert_eq!(breaker["actor"], id.as_str(), "the created token acted");
    assert_eq!(breaker["target"], "scripted");
    assert_eq!(
        (breaker["old"].as_str(), breaker["new"].as_str()),
        (Some("closed"), Some("forced_open"))
    );
    assert_eq!(create["target"], id.as_str());
    assert_eq!(create["details"]["label"], "ops laptop");
    assert_eq!(create["details"]["scope"], "admin");
    assert!(create["details"]["expires_at"].is_string());
    assert_eq!(setting["target"], "retry.max_attempts");
    assert_eq!(
        (setting["old"].as_i64(), setting["new"].as_i64()),
        (Some(3), Some(5))
    );
    for e in entries {
        assert_eq!(e["peer"], "127.0.0.1");
        let time = e["time"].as_str().expect("time");
        assert!(chrono::DateTime::parse_from_rfc3339(time).is_ok() && time.ends_with('Z'));
    }

    let one: Value = t.admin_json("/admin/audit?limit=1").await;
    assert_eq!(one["entries"].as_array().map(Vec::len), Some(1));
    let r = t.admin_get("/admin/audit?limit=0").await;
    expect_error(r, 422, "validation_error").await;
    // The client token at an admin route, twice below.
    let refused = || async {
        let r = t
            .http
            .get(t.url("/admin/audit"))
            .bearer_auth(CLIENT)
            .send()
            .await
            .expect("send");
        assert_eq!(envelope(r).await.0, 403);
    };
    refused().await;

    // The file: private, and never a token nor the unknown id the request named.
    let path = t._dir.path().join("data/audit.jsonl");
    // The client token's refused attempt is a record too (written off the request's path),
    // one a minute: a second refusal at once adds none, so a flood cannot rotate the trail
    // of admin actions away.
    refused().await;
    let read = || std::fs::read_to_string(&path).expect("audit file");
    t.until("the refusal is recorded", || read().lines().count() == 6)
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let text = read();
    assert_eq!(
        text.lines().count(),
        6,
        "one refusal record for two refusals"
    );
    let refused: Value = serde_json::from_str(text.lines().last().expect("a line")).expect("json");
    assert_eq!(
        (&refused["action"], &refused["target"], &refused["result"]),
        (
            &json!("admin.refused"),
            &json!("/admin/audit"),
            &json!("forbidden")
        )
    );
    assert!(!text.contains(&token) && !text.contains(ADMIN) && !text.contains("Zed"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    t.shutdown().await;
}

/// A request is authenticated once, when its headers arrive, whichever way it takes. The
/// door (which looks at model requests while a breaker is open) checked the token and, for a
/// request it passed on to the router, the router's request context checked it again after
/// the body had arrived: a token revoked meanwhile was answered 401 and counted as a failed
/// authentication of the caller's address, where the same request with no breaker open was
/// answered 200. Now the door hands its outcome on, and both ways answer alike.
#[tokio::test]
async fn a_request_the_door_passes_on_is_authenticated_once() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let t = TestServer::start(&[]).await;
    let body = json!({"text": "Zed", "fallback": "rules"}).to_string();
    // Twice: first through the router alone, then with a breaker open, through the door
    // (degraded mode lets it pass on to the router).
    for door in [false, true] {
        if door {
            let r = t
                .admin_post("/admin/breakers/scripted/force-open", json!({}))
                .await;
            assert!(r.status().is_success(), "{}", r.status());
        }
        let created: Value = t
            .admin_post("/admin/tokens", json!({"label": "ehr", "scope": "client"}))
            .await
            .json()
            .await
            .expect("json");
        let token = created["token"].as_str().expect("token");
        let id = created["id"].as_str().expect("id");
        let mut s = tokio::net::TcpStream::connect(t.base.trim_start_matches("http://"))
            .await
            .expect("connect");
        let head = format!(
            "POST /pii/extract HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.expect("head");
        // The head is read and checked; the body is awaited.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let r = t.admin_delete(&format!("/admin/tokens/{id}")).await;
        assert_eq!(r.status(), 204);
        s.write_all(body.as_bytes()).await.expect("body");
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut answer))
            .await
            .expect("an answer within 10 s")
            .expect("read");
        assert!(answer.starts_with("HTTP/1.1 200"), "door {door}: {answer}");
        assert_eq!(metric(&t, "phiguard_auth_failures_total").await, 0.0);
    }
    t.shutdown().await;
}
