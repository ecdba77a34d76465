//! The admin API: live settings, tokens, breaker actions, evaluation.

use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use crate::support::{envelope, setting_row, TestServer, ADMIN, CLIENT};

#[tokio::test]
async fn settings_apply_live_persist_and_refuse_bad_values() {
    let t = TestServer::start(&[
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
        ("PHIGUARD_BREAKER_HALF_OPEN_CALLS", "1"),
    ])
    .await;
    let put = |body: Value| {
        t.http
            .put(t.url("/admin/settings"))
            .bearer_auth(ADMIN)
            .json(&body)
            .send()
    };
    let r = put(json!({"retry.max_attempts": 5})).await.expect("send");
    assert_eq!(r.status(), 200);
    let all: Value = t.admin_json("/admin/settings").await;
    let row = setting_row(&all, "retry.max_attempts");
    assert_eq!(row["value"], 5);
    assert_eq!(row["source"], "file");
    assert_eq!(row["env"], "PHIGUARD_RETRY_MAX_ATTEMPTS");
    assert_eq!(row["alias"], "OPENMED_SERVICE_RETRY_MAX_ATTEMPTS");
    // Behaviour follows: a failing backend is now tried 5 times.
    t.script.failing.store(true, Ordering::SeqCst);
    let r = t
        .drive(t.post("/pii/extract", json!({"text": "Zed"})))
        .await;
    assert_eq!(r.status(), 500);
    assert_eq!(t.script.calls.load(Ordering::SeqCst), 5);
    // Invalid values are refused with the rule; nothing is applied.
    let (status, body, _) = envelope(
        put(json!({"retry.max_attempts": 0, "breaker.failure_threshold": 9}))
            .await
            .expect("send"),
    )
    .await;
    assert_eq!(status, 422);
    let details = body["error"]["details"].as_array().expect("details");
    assert_eq!(details[0]["field"], "retry.max_attempts");
    assert!(details[0]["message"]
        .as_str()
        .unwrap_or("")
        .contains("integer from 1"));
    let (status, body, _) = envelope(
        put(json!({"breaker.half_open_calls": 2}))
            .await
            .expect("send"),
    )
    .await;
    assert_eq!(status, 422, "set by the environment: locked");
    assert!(body
        .to_string()
        .contains("PHIGUARD_BREAKER_HALF_OPEN_CALLS"));
    let file =
        std::fs::read_to_string(t._dir.path().join("config/settings.toml")).expect("persisted");
    assert!(file.contains("max_attempts = 5"), "{file}");
    t.shutdown().await;
}

#[tokio::test]
async fn created_tokens_work_until_revoked() {
    let t = TestServer::start(&[]).await;
    let r = t
        .http
        .post(t.url("/admin/tokens"))
        .bearer_auth(ADMIN)
        .json(&json!({"label": "ehr", "scope": "client"}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 201);
    let created: Value = r.json().await.expect("json");
    let token = created["token"].as_str().expect("token").to_string();
    let ok = t
        .http
        .get(t.url("/models/loaded"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("send");
    assert_eq!(ok.status(), 200);
    let list: Value = t.admin_json("/admin/tokens").await;
    assert!(
        !list.to_string().contains(&token),
        "listing must not show the token"
    );
    let id = created["id"].as_str().expect("id");
    let r = t.admin_delete(&format!("/admin/tokens/{id}")).await;
    assert_eq!(r.status(), 204);
    let (status, body, _) = envelope(
        t.http
            .get(t.url("/models/loaded"))
            .bearer_auth(&token)
            .send()
            .await
            .expect("send"),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (401, Some("invalid_credentials"))
    );
    let _ = CLIENT;
    t.shutdown().await;
}

#[tokio::test]
async fn breaker_admin_actions() {
    let t = TestServer::start(&[("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0")]).await;
    let action = |a: &str| {
        t.http
            .post(t.url(&format!("/admin/breakers/scripted/{a}")))
            .bearer_auth(ADMIN)
            .send()
    };
    let r: Value = action("force-open")
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(r["state"], "forced_open");
    let (status, _, _) = envelope(t.post("/pii/extract", json!({"text": "Zed"})).await).await;
    assert_eq!(status, 503);
    let status: Value = t.admin_json("/admin/status").await;
    assert_eq!(status["tray"], "red");
    let r: Value = action("reset")
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(r["state"], "closed");
    assert_eq!(
        t.post("/pii/extract", json!({"text": "Zed"}))
            .await
            .status(),
        200
    );
    // An admin's force-open is a transition like any other, and so is a disable.
    let r: Value = action("disable")
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(r["state"], "disabled");
    let metrics = t.metrics_text().await;
    for to in ["forced_open", "disabled"] {
        let line = format!("phiguard_breaker_transitions_total{{to=\"{to}\"}} 1");
        assert!(
            metrics.lines().any(|l| l == line),
            "{line} not in:\n{metrics}"
        );
    }
    let r = t
        .http
        .post(t.url("/admin/breakers/not-a-model/reset"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 404);
    t.shutdown().await;
}

#[tokio::test]
async fn eval_report_from_the_admin_api() {
    let t = TestServer::start(&[
        ("PHIGUARD_DEFAULT_MODEL", "rules"),
        ("PHIGUARD_REQUEST_TIMEOUT_SECONDS", "0"),
    ])
    .await;
    let text = "Call 617-555-0142 on 03/14/2021.";
    let gold = json!({"text": text, "gold_spans": [{"start": 5, "end": 17, "label": "PHONE"}, {"start": 21, "end": 31, "label": "DATE"}]});
    let r = t
        .http
        .post(t.url("/admin/eval"))
        .bearer_auth(ADMIN)
        .json(&json!({"gold": gold.to_string()}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let report: Value = r.json().await.expect("json");
    assert_eq!(report["documents"], 1);
    let (status, body, _) = envelope(
        t.http
            .post(t.url("/admin/eval"))
            .bearer_auth(ADMIN)
            .json(&json!({"gold": "{not json Zed"}))
            .send()
            .await
            .expect("send"),
    )
    .await;
    assert_eq!(status, 422);
    assert!(!body.to_string().contains("Zed"));
    t.shutdown().await;
}

/// `PUT /admin/settings` refuses (422, nothing saved) a change that the next start would
/// refuse by the same rule: here a public bind without an explicit client token (before,
/// it was saved and the next `phiguard serve` exited 2).
#[tokio::test]
async fn a_change_the_next_start_would_refuse_is_refused() {
    let t = TestServer::start(&[("PHIGUARD_AUTH_TOKEN", ""), ("PHIGUARD_ADMIN_TOKEN", "")]).await;
    let admin = t.server.as_ref().expect("server").admin_token();
    let r = t
        .http
        .put(t.url("/admin/settings"))
        .bearer_auth(&admin)
        .json(&json!({"server.host": "0.0.0.0"}))
        .send()
        .await
        .expect("send");
    let (status, body, _) = envelope(r).await;
    assert_eq!(status, 422, "{body}");
    let detail = &body["error"]["details"][0];
    assert_eq!(detail["field"], "server.host", "{body}");
    assert!(
        detail["message"]
            .as_str()
            .is_some_and(|m| m.contains("PHIGUARD_AUTH_TOKEN")),
        "{body}"
    );
    let file =
        std::fs::read_to_string(t._dir.path().join("config/settings.toml")).unwrap_or_default();
    assert!(!file.contains("0.0.0.0"), "{file}");
    t.shutdown().await;
}

/// A `security.trusted_hosts` that leaves out the Host of the request making the change is
/// refused (before: 200, saved, and every later admin call answered 400).
#[tokio::test]
async fn trusted_hosts_that_lock_out_the_caller_are_refused() {
    let t = TestServer::start(&[]).await;
    let (status, body, _) = envelope(
        t.admin_put(
            "/admin/settings",
            json!({"security.trusted_hosts": "example.org"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["error"]["details"][0]["field"], "security.trusted_hosts",
        "{body}"
    );
    assert_eq!(t.admin_get("/admin/status").await.status(), 200);
    let r = t
        .admin_put(
            "/admin/settings",
            json!({"security.trusted_hosts": "example.org,127.0.0.1"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(t.admin_get("/admin/status").await.status(), 200);
    t.shutdown().await;
}

/// The model behind `models.default` cannot be removed: 409 naming the setting (before, it
/// was removed and the next start stopped on a default that names no installed model).
#[tokio::test]
async fn the_default_model_cannot_be_removed() {
    let t = TestServer::start(&[]).await;
    let r = t.admin_delete("/admin/models/scripted").await;
    let (status, body, _) = envelope(r).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("conflict")),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("models.default")),
        "{body}"
    );
    let ready = t.http.get(t.url("/readyz")).send().await.expect("send");
    assert_eq!(ready.status(), 200);
    t.shutdown().await;
}

/// `models.keep_alive` changed live applies to a model already resident (before, it kept
/// the keep-alive of its load: none, so it stayed resident forever).
#[tokio::test]
async fn keep_alive_changed_live_applies_to_resident_models() {
    let t = TestServer::start(&[]).await;
    assert_eq!(
        t.post("/pii/extract", json!({"text": "Zed"}))
            .await
            .status(),
        200
    );
    let loaded = || async {
        t.http
            .get(t.url("/models/loaded"))
            .bearer_auth(CLIENT)
            .send()
            .await
            .expect("send")
            .json::<Value>()
            .await
            .expect("json")
    };
    let before = loaded().await;
    assert!(before["models"]["scripted"].is_object(), "{before}");
    assert!(before["models"]["scripted"]["keep_alive_seconds_remaining"].is_null());
    let r = t
        .admin_put("/admin/settings", json!({"models.keep_alive": "1h"}))
        .await;
    assert_eq!(r.status(), 200);
    let after = loaded().await;
    let remaining = after["models"]["scripted"]["keep_alive_seconds_remaining"].as_f64();
    assert!(
        remaining.is_some_and(|s| s > 3000.0 && s <= 3600.0),
        "{after}"
    );
    t.shutdown().await;
}

/// A refusal names the variable that set the value, the OpenMed alias included, and the
/// Redis URL's refusal points to its variable, not to the token commands.
#[tokio::test]
async fn refusals_name_the_real_source() {
    let t = TestServer::start(&[("OPENMED_SERVICE_CIRCUIT_BREAKER_FAILURE_THRESHOLD", "11")]).await;
    let (status, body, _) = envelope(
        t.admin_put("/admin/settings", json!({"breaker.failure_threshold": 2}))
            .await,
    )
    .await;
    assert_eq!(status, 422);
    let text = body.to_string();
    assert!(
        text.contains("OPENMED_SERVICE_CIRCUIT_BREAKER_FAILURE_THRESHOLD")
            && !text.contains("PHIGUARD_BREAKER_FAILURE_THRESHOLD"),
        "{text}"
    );
    let (status, body, _) = envelope(
        t.admin_put(
            "/admin/settings",
            json!({"cluster.redis_url": "redis://127.0.0.1:1"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    let text = body.to_string();
    assert!(
        text.contains("PHIGUARD_REDIS_URL") && !text.contains("token commands"),
        "{text}"
    );
    t.shutdown().await;
}

/// `PUT /admin/settings` refuses, by the rule start-up uses, an alias that is not
/// `requested=installed`, an alias to a model that is not installed and a served name that
/// is neither installed nor an alias (before: 200, saved, `/models/loaded` advertised the
/// alias and every request naming it answered 422). The message names the setting and the
/// entry, never the name sent; nothing is saved. An alias to an installed model passes.
#[tokio::test]
async fn aliases_and_served_names_of_no_installed_model_are_refused() {
    let t = TestServer::start(&[]).await;
    for (key, value) in [
        ("models.aliases", "garbage"),
        ("models.aliases", "foo=nonexistentmodel"),
        ("models.served", "scripted,nonexistentmodel"),
    ] {
        let (status, body, _) =
            envelope(t.admin_put("/admin/settings", json!({ key: value })).await).await;
        assert_eq!(status, 422, "{key}={value}: {body}");
        let detail = &body["error"]["details"][0];
        assert_eq!(detail["field"], key, "{body}");
        assert!(
            detail["message"]
                .as_str()
                .is_some_and(|m| m.contains("entry ")),
            "{body}"
        );
        assert!(
            !body.to_string().contains("nonexistentmodel") && !body.to_string().contains("garbage"),
            "{body}"
        );
    }
    let file =
        std::fs::read_to_string(t._dir.path().join("config/settings.toml")).unwrap_or_default();
    assert!(
        !file.contains("nonexistentmodel") && !file.contains("garbage"),
        "{file}"
    );
    let r = t
        .admin_put("/admin/settings", json!({"models.aliases": "foo=scripted"}))
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        t.post("/pii/extract", json!({"text": "Zed", "model_name": "foo"}))
            .await
            .status(),
        200
    );
    t.shutdown().await;
}

/// `PUT /admin/settings` writes only what it changes, into the file as it is now: a value
/// the admin or `phiguard settings set` changed after the server started stays. A file
/// that does not parse (an admin half way through an edit) is not written over: `409`,
/// nothing applied. Before, the server wrote its own start-up values back over the
/// newer ones, and replaced a file that did not parse with a fresh one, comments and all
/// gone (found by an outside admin, reproduced twice).
#[tokio::test]
async fn saving_a_setting_keeps_later_edits_and_never_replaces_a_broken_file() {
    let t = TestServer::start(&[]).await;
    let file = t._dir.path().join("config/settings.toml");
    let put = |body: Value| t.admin_put("/admin/settings", body);
    assert_eq!(put(json!({"retry.max_attempts": 5})).await.status(), 200);
    // Edited by hand while the server runs.
    let edited = "# ward 4: DO NOT LOSE\r\n[retry]\r\nmax_attempts = 8 # tuned\r\n";
    std::fs::write(&file, format!("\u{feff}{edited}")).expect("edit");
    assert_eq!(
        put(json!({"breaker.failure_threshold": 4})).await.status(),
        200
    );
    let saved = std::fs::read_to_string(&file).expect("read");
    assert_eq!(
        saved,
        format!("\u{feff}{edited}\r\n[breaker]\r\nfailure_threshold = 4\r\n"),
        "the hand edit, its comments, byte-order mark and line endings stay"
    );
    // Half way through an edit: refused, nothing written, nothing applied.
    let broken = "# ward 4: DO NOT LOSE\n[retry]\nmax_attempts = 8\n\n[limits\nrate = 3\n";
    std::fs::write(&file, broken).expect("edit");
    let (status, body, _) = envelope(put(json!({"breaker.failure_threshold": 6})).await).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "conflict");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), broken);
    let all: Value = t.admin_json("/admin/settings").await;
    let row = setting_row(&all, "breaker.failure_threshold");
    assert_eq!(row["value"], 4, "not applied");
    t.shutdown().await;
}

/// A model installed with `phiguard models import` while the server runs is served from
/// the first request that names it, and an alias may name it, as one pulled through the
/// admin API is. Before, `GET /admin/models` listed it while requests naming it got
/// `422 model_not_served` and `POST /admin/models/default` answered 404 until a restart
/// (found by an outside admin, reproduced twice).
#[tokio::test]
async fn a_model_imported_at_the_command_line_is_served_without_a_restart() {
    let t = TestServer::start(&[]).await;
    let (status, _, _) = envelope(
        t.post("/pii/extract", json!({"text": "Zed", "model_name": "tiny"}))
            .await,
    )
    .await;
    assert_eq!(status, 422, "not installed yet");
    import_tiny(&t);
    let r = t
        .post("/pii/extract", json!({"text": "Zed", "model_name": "tiny"}))
        .await;
    assert_eq!(r.status(), 200);
    let r = t
        .admin_put("/admin/settings", json!({"models.aliases": "mine=tiny"}))
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
    t.shutdown().await;
}

/// A pull the download would refuse (the bundled model, a model built on the machine) is
/// refused at once, `409` with the reason, as `phiguard models pull` refuses it. Before,
/// both answered `202` and then showed `failed` with no reason, the audit saying `ok`.
#[tokio::test]
async fn a_pull_that_cannot_download_is_refused_at_once() {
    let t = TestServer::start(&[]).await;
    for (id, says) in [
        ("phiguard-deid", "ships inside phiguard"),
        ("rampart", "built on the machine"),
    ] {
        let (status, body, _) = envelope(
            t.admin_post("/admin/models/pull", json!({ "id": id }))
                .await,
        )
        .await;
        assert_eq!(status, 409, "{id}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains(says),
            "{id}: {body}"
        );
    }
    t.shutdown().await;
}

/// `POST /admin/models/verify` names the files that changed or are missing, as `phiguard
/// models verify` does. Before, it answered `{"id", "ok": false}` alone.
#[tokio::test]
async fn verify_names_the_changed_and_missing_files() {
    let t = TestServer::start(&[]).await;
    import_tiny(&t);
    let dir = t._dir.path().join("data/models/tiny");
    let weights = dir.join("model.safetensors");
    let mut bytes = std::fs::read(&weights).expect("weights");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&weights, bytes).expect("write");
    std::fs::remove_file(dir.join("tokenizer.json")).expect("remove");
    let r = t
        .admin_post("/admin/models/verify", json!({"id": "tiny"}))
        .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["ok"], false);
    let status = |name: &str| {
        v["files"]
            .as_array()
            .expect("files")
            .iter()
            .find(|f| f["name"] == name)
            .map(|f| f["status"].clone())
    };
    assert_eq!(status("model.safetensors"), Some(json!("changed")), "{v}");
    assert_eq!(status("tokenizer.json"), Some(json!("missing")), "{v}");
    assert_eq!(status("config.json"), Some(json!("ok")), "{v}");
    t.shutdown().await;
}

/// `models.served` changes what is served at once, and says so (`restart_required`
/// false). Before, it was marked restart-only while it applied at once: an admin who
/// expected nothing until a restart cut off the clients of the names left out.
#[tokio::test]
async fn the_served_set_applies_at_once_and_says_so() {
    let t = TestServer::start(&[]).await;
    let r = t
        .admin_put("/admin/settings", json!({"models.served": "scripted"}))
        .await;
    assert_eq!(r.status(), 200);
    let all: Value = r.json().await.expect("json");
    let row = setting_row(&all, "models.served");
    assert_eq!(row["restart_required"], false, "{row}");
    let loaded: Value = t
        .http
        .get(t.url("/models/loaded"))
        .bearer_auth(CLIENT)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(loaded["served_models"], json!(["scripted"]), "{loaded}");
    let (status, _, _) = envelope(
        t.post(
            "/pii/extract",
            json!({"text": "Zed", "model_name": "rules"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 422, "rules is no longer served");
    t.shutdown().await;
}

/// `phiguard models import` (the real binary) of the test fixture model as `tiny` into the
/// running server's home, as an admin at its terminal would.
fn import_tiny(t: &TestServer) {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/hub/phiguard-test/tiny-bert"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_phiguard"))
        .args(["models", "import", fixture, "--id", "tiny"])
        .env("PHIGUARD_HOME", t._dir.path())
        .env("PHIGUARD_KEYRING", "off")
        .output()
        .expect("run phiguard models import");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
