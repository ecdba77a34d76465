//! The real `phiguard serve` binary's output, read back from the files its stdout and stderr
//! were redirected to: PHI-free at every level (a canary sent through the model routes at
//! `trace` is nowhere in it, and no third-party crate logs below `warn`, not even with
//! `RUST_LOG=trace`), no colour codes when stderr is not a terminal, and a panic logged as
//! one JSON line with its location, never its payload.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const CLIENT: &str = "logs-client-token";
const ADMIN: &str = "logs-admin-token";
/// A made-up patient: a name and an MRN that occur nowhere else.
const CANARY_NAME: &str = "Quillon Vextrabury";
const CANARY_MRN: &str = "73920418";

/// A running binary in its own temporary home, stdout and stderr going to files there.
struct Serve {
    child: Child,
    dir: tempfile::TempDir,
    base: String,
    http: reqwest::Client,
}

/// `phiguard serve` on a free loopback port in a home under `dir`, with `env` on top of the
/// test defaults; its stdout and stderr go to the files `dir/stdout` and `dir/stderr`.
fn serve_command(dir: &std::path::Path, env: &[(&str, &str)]) -> Command {
    let stdout = std::fs::File::create(dir.join("stdout")).expect("stdout file");
    let stderr = std::fs::File::create(dir.join("stderr")).expect("stderr file");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_phiguard"));
    cmd.arg("serve")
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .env("PHIGUARD_HOME", dir.join("home"))
        .env("PHIGUARD_HOST", "127.0.0.1")
        .env("PHIGUARD_PORT", "0")
        .env("PHIGUARD_AUTH_TOKEN", CLIENT)
        .env("PHIGUARD_ADMIN_TOKEN", ADMIN)
        .env("PHIGUARD_KEYRING", "off")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

impl Serve {
    /// Starts `phiguard serve` on a free loopback port with `env` on top of the test
    /// defaults; waits (bounded) for its "listening on" line.
    async fn start(env: &[(&str, &str)]) -> Serve {
        let dir = tempfile::tempdir().expect("tempdir");
        let child = serve_command(dir.path(), env)
            .spawn()
            .expect("start phiguard serve");
        let mut serve = Serve {
            child,
            dir,
            base: String::new(),
            http: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("client"),
        };
        let started = Instant::now();
        loop {
            let out = serve.read("stdout");
            if let Some(addr) = out
                .lines()
                .find_map(|l| l.trim().strip_prefix("listening on "))
            {
                serve.base = addr.to_string();
                return serve;
            }
            if let Ok(Some(status)) = serve.child.try_wait() {
                panic!(
                    "phiguard serve exited with {status}: {}",
                    serve.read("stderr")
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "phiguard serve did not start: {}",
                serve.read("stderr")
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn read(&self, name: &str) -> String {
        let bytes = std::fs::read(self.path(name)).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("request")
    }

    async fn post(&self, path: &str, body: Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.base))
            .bearer_auth(CLIENT)
            .json(&body)
            .send()
            .await
            .expect("request")
    }

    /// Sends the canary through every model route; returns the statuses.
    async fn send_canary(&self) -> Vec<u16> {
        let note = format!(
            "Patient {CANARY_NAME} (MRN {CANARY_MRN}) seen 03/04/2021; {CANARY_NAME} called back."
        );
        let mut statuses = Vec::new();
        for (path, extra) in [
            ("/pii/deidentify", json!({})),
            ("/pii/extract", json!({})),
            ("/pii/deidentify", json!({"method": "replace"})),
            ("/pii/deidentify/stream", json!({"chunk_size": 16})),
        ] {
            let mut body = extra;
            body["text"] = json!(note);
            let r = self.post(path, body).await;
            statuses.push(r.status().as_u16());
            // Read the whole answer, so the request has finished before the logs are read.
            let _ = r.bytes().await;
        }
        statuses
    }

    /// Stops the binary as an operator does (`SIGTERM`: it drains and exits), waits for it
    /// (bounded) and returns (stdout, stderr).
    #[cfg(all(unix, feature = "fault-injection"))]
    fn terminate(mut self) -> (String, String) {
        let term = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(term.success());
        let started = Instant::now();
        while self.child.try_wait().expect("wait").is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "phiguard serve did not exit on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        (self.read("stdout"), self.read("stderr"))
    }

    /// Stops the binary and returns (stdout, stderr).
    fn stop(mut self) -> (String, String) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        (self.read("stdout"), self.read("stderr"))
    }
}

fn assert_no_canary(stdout: &str, stderr: &str) {
    for (name, out) in [("stdout", stdout), ("stderr", stderr)] {
        for canary in [CANARY_NAME, "Vextrabury", "Quillon", CANARY_MRN] {
            assert!(
                !out.contains(canary),
                "{canary:?} found in {name}:\n{}",
                out.lines()
                    .filter(|l| l.contains(canary))
                    .take(5)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}

#[tokio::test]
async fn trace_level_json_logs_carry_no_request_text_and_no_third_party_chatter() {
    let serve = Serve::start(&[
        ("PHIGUARD_LOG_LEVEL", "trace"),
        ("PHIGUARD_LOG_FORMAT", "json"),
    ])
    .await;
    let statuses = serve.send_canary().await;
    assert_eq!(statuses, [200, 200, 200, 200]);
    let (stdout, stderr) = serve.stop();
    assert_no_canary(&stdout, &stderr);
    // Every line is one JSON event; phiguard's own are there (the access log at least);
    // no other crate logs below warn.
    let mut own = 0;
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        let event: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
        let target = event["target"].as_str().unwrap_or_default();
        let level = event["level"].as_str().unwrap_or_default();
        if target.starts_with("phiguard") {
            own += 1;
        } else {
            assert!(
                matches!(level, "WARN" | "ERROR"),
                "a third-party {level} line: {line}"
            );
        }
    }
    assert!(own >= 4, "phiguard's own events are missing:\n{stderr}");
}

#[tokio::test]
async fn rust_log_trace_keeps_the_cap_and_plain_logs_to_a_file_have_no_colour() {
    let serve = Serve::start(&[
        ("PHIGUARD_LOG_LEVEL", "info"),
        ("PHIGUARD_LOG_FORMAT", "plain"),
        ("RUST_LOG", "trace"),
    ])
    .await;
    let statuses = serve.send_canary().await;
    assert_eq!(statuses, [200, 200, 200, 200]);
    let (stdout, stderr) = serve.stop();
    assert_no_canary(&stdout, &stderr);
    assert!(
        stderr.contains("phiguard::access"),
        "the access log is missing:\n{stderr}"
    );
    assert!(
        !stderr.contains("\x1b["),
        "colour codes in a redirected stderr"
    );
    // Plain lines read `<time> <LEVEL> [<span>{…}: ]<target>: …`; inside a request the
    // request span comes before the target.
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let (Some(_), Some(level), Some(mut target)) = (words.next(), words.next(), words.next())
        else {
            continue;
        };
        if target.starts_with("request{") {
            let Some(next) = words.next() else { continue };
            target = next;
        }
        if matches!(level, "TRACE" | "DEBUG" | "INFO") {
            assert!(
                target.starts_with("phiguard"),
                "a third-party {level} line: {line}"
            );
        }
    }
}

#[cfg(feature = "fault-injection")]
#[tokio::test]
async fn a_panic_is_one_json_log_line_with_its_location_and_no_payload() {
    let serve = Serve::start(&[
        ("PHIGUARD_LOG_LEVEL", "info"),
        ("PHIGUARD_LOG_FORMAT", "json"),
        ("PHIGUARD_FAULTS", "infer=panic:1"),
        ("PHIGUARD_RETRY_MAX_ATTEMPTS", "1"),
    ])
    .await;
    let r = serve
        .post(
            "/pii/deidentify",
            json!({"text": format!("{CANARY_NAME} MRN {CANARY_MRN}")}),
        )
        .await;
    assert_eq!(r.status(), 500, "the injected panic is a failed model call");
    let _ = r.bytes().await;
    // The server keeps serving.
    let r = serve
        .post("/pii/extract", json!({"text": "call 617-555-0142"}))
        .await;
    assert_eq!(r.status(), 200);
    let (stdout, stderr) = serve.stop();
    assert_no_canary(&stdout, &stderr);
    assert!(
        !stderr.contains("injected panic") && !stdout.contains("injected panic"),
        "the panic payload was printed:\n{stderr}"
    );
    let panics: Vec<Value> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {l}"))
        })
        .filter(|e| e["target"] == "phiguard::panic")
        .collect();
    assert_eq!(panics.len(), 1, "one panic line:\n{stderr}");
    let fields = &panics[0]["fields"];
    assert_eq!(panics[0]["level"], "ERROR");
    let location = fields["location"].as_str().unwrap_or_default();
    assert!(
        location.contains("faults.rs:"),
        "the location names the panicking line: {fields}"
    );
    assert!(fields["thread"].is_string(), "{fields}");
}

#[tokio::test]
async fn the_request_id_follows_a_request_onto_the_inference_workers() {
    let serve = Serve::start(&[
        ("PHIGUARD_LOG_LEVEL", "debug"),
        ("PHIGUARD_LOG_FORMAT", "json"),
    ])
    .await;
    let id = "0b5f7c3e-9a41-4d2b-8c6e-1f2a3b4c5d6e";
    let r = serve
        .http
        .post(format!("{}/pii/extract", serve.base))
        .bearer_auth(CLIENT)
        .header("x-request-id", id)
        .json(&json!({"text": format!("Patient {CANARY_NAME} seen today.")}))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);
    let _ = r.bytes().await;
    let (stdout, stderr) = serve.stop();
    assert_no_canary(&stdout, &stderr);
    let events: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let inference = events
        .iter()
        .find(|e| e["fields"]["message"] == "inference done")
        .unwrap_or_else(|| panic!("no inference event:\n{stderr}"));
    assert_eq!(
        inference["span"]["request_id"], id,
        "the worker's line lacks the request id: {inference}"
    );
    assert!(
        events.iter().any(|e| e["target"] == "phiguard::access"
            && e["span"]["request_id"] == id
            && e["fields"]["request_id"] == id),
        "the access line and its span disagree:\n{stderr}"
    );
}

#[tokio::test]
async fn the_access_line_of_a_refusal_names_its_error_code() {
    let serve = Serve::start(&[("PHIGUARD_LOG_FORMAT", "json")]).await;
    let unauthenticated = serve
        .http
        .post(format!("{}/pii/extract", serve.base))
        .json(&json!({"text": "x"}))
        .send()
        .await
        .expect("request");
    assert_eq!(unauthenticated.status(), 401);
    let invalid = serve
        .http
        .post(format!("{}/pii/extract", serve.base))
        .bearer_auth(CLIENT)
        .json(&json!({"text": 5}))
        .send()
        .await
        .expect("request");
    assert_eq!(invalid.status(), 422);
    let served = serve.get("/health").await;
    assert_eq!(served.status(), 200);
    let (_, stderr) = serve.stop();
    let access: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["target"] == "phiguard::access")
        .collect();
    let code_of = |status: u64| {
        access
            .iter()
            .find(|e| e["fields"]["status"] == status)
            .map(|e| e["fields"]["error"].clone())
            .unwrap_or_else(|| panic!("no access line with status {status}:\n{stderr}"))
    };
    assert_eq!(code_of(401), "authentication_required");
    assert_eq!(code_of(422), "validation_error");
    assert_eq!(code_of(200), "");
}

/// A method is whatever token a client sends (`curl -X ZebulonQuartermaine`): the access
/// line names one outside HTTP's own `OTHER`, so it never reaches the log, the file or
/// `GET /admin/logs`.
#[tokio::test]
async fn a_method_the_client_made_up_is_logged_as_other() {
    const MADE_UP: &str = "ZebulonQuartermaine";
    let serve = Serve::start(&[("PHIGUARD_LOG_FORMAT", "json")]).await;
    let method = reqwest::Method::from_bytes(MADE_UP.as_bytes()).expect("a method token");
    for path in ["/health", "/pii/extract", "/admin/logs", "/no/such/route"] {
        let r = serve
            .http
            .request(method.clone(), format!("{}{path}", serve.base))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("request");
        assert!(r.status().is_client_error(), "{path}: {}", r.status());
        let _ = r.bytes().await;
    }
    let tail = serve
        .http
        .get(format!("{}/admin/logs", serve.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("request");
    assert_eq!(tail.status(), 200);
    let tail = tail.text().await.expect("log tail");
    assert!(tail.contains("OTHER"), "{tail}");
    assert!(
        !tail.contains("Zebulon"),
        "the method in GET /admin/logs: {tail}"
    );
    let (stdout, stderr) = serve.stop();
    for (name, out) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(!out.contains("Zebulon"), "the method in {name}:\n{out}");
    }
    let methods: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["target"] == "phiguard::access")
        .map(|e| e["fields"]["method"].clone())
        .collect();
    assert_eq!(
        methods.iter().filter(|m| *m == "OTHER").count(),
        4,
        "{stderr}"
    );
}

/// A refusal storm: with the breaker open, the first refusal's access line is in full (its
/// request id, at `warn`), the rest are one `requests refused` line with their count, which
/// the shutdown writes; at `debug` each still has its own line.
#[cfg(all(unix, feature = "fault-injection"))]
#[tokio::test]
async fn a_storm_of_refusals_is_one_full_line_and_a_count_and_each_line_at_debug() {
    for rust_log in [None, Some("info,phiguard::access=debug")] {
        let mut env = vec![
            ("PHIGUARD_LOG_FORMAT", "json"),
            ("PHIGUARD_FAULTS", "infer=fail"),
            ("PHIGUARD_DEFAULT_MODEL", "rules"),
            ("PHIGUARD_RETRY_MAX_ATTEMPTS", "1"),
            ("PHIGUARD_BREAKER_RECOVERY_TIMEOUT_SECONDS", "3600"),
        ];
        if let Some(directives) = rust_log {
            env.push(("RUST_LOG", directives));
        }
        let serve = Serve::start(&env).await;
        let body = json!({"text": format!("{CANARY_NAME} MRN {CANARY_MRN}")});
        let mut refused = Vec::new();
        for _ in 0..40 {
            let r = serve.post("/pii/deidentify", body.clone()).await;
            let status = r.status().as_u16();
            let id = r.headers()["x-request-id"]
                .to_str()
                .expect("ascii")
                .to_owned();
            let _ = r.bytes().await;
            if status == 503 {
                refused.push(id);
            } else {
                assert!(refused.is_empty(), "a {status} after a refusal");
            }
        }
        assert!(refused.len() >= 20, "the breaker did not open: {refused:?}");
        let (stdout, stderr) = serve.terminate();
        assert_no_canary(&stdout, &stderr);
        let access: Vec<Value> = stderr
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["target"] == "phiguard::access" && e["fields"]["status"] == 503)
            .collect();
        let lines = |level: &str, message: &str| -> Vec<&Value> {
            access
                .iter()
                .filter(|e| e["level"] == level && e["fields"]["message"] == message)
                .collect()
        };
        let full = lines("WARN", "request");
        assert_eq!(full.len(), 1, "one full line:\n{stderr}");
        assert_eq!(full[0]["fields"]["request_id"], refused[0].as_str());
        assert_eq!(full[0]["fields"]["error"], "circuit_breaker_open");
        let summary = lines("WARN", "requests refused");
        assert_eq!(
            summary.len(),
            1,
            "one summary, written at shutdown:\n{stderr}"
        );
        let fields = &summary[0]["fields"];
        assert_eq!(fields["count"], (refused.len() - 1) as u64);
        assert_eq!(fields["route"], "/pii/deidentify");
        assert_eq!(fields["error"], "circuit_breaker_open");
        assert_eq!(fields["token"], "client");
        assert!(fields["seconds"].as_f64().is_some_and(|s| s >= 0.0));
        let each: Vec<&str> = lines("DEBUG", "request")
            .iter()
            .filter_map(|e| e["fields"]["request_id"].as_str())
            .collect();
        if rust_log.is_some() {
            assert_eq!(each, refused[1..], "every other refusal at debug, in order");
        } else {
            assert!(each.is_empty(), "debug lines at info:\n{stderr}");
        }
    }
}

/// A default model whose file is damaged, as an operator meets it: the binary still starts
/// (its admin routes work), but `/readyz` answers `503 not_ready` so a balancer sends the work
/// elsewhere, a model route answers `503 model_load_error` with `Retry-After`, and the log
/// says which model failed and why, without the note. Once the file is put back, the service
/// loads it on its own (no request, no restart) and turns ready.
#[tokio::test]
async fn a_default_model_that_does_not_load_is_not_ready_until_it_loads() {
    let bundled = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/phiguard-deid");
    let copy = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(&bundled).expect("the bundled model") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), copy.path().join(entry.file_name())).expect("copy");
    }
    let weights = copy.path().join("model.safetensors");
    std::fs::write(&weights, b"damaged").expect("damage the weights");
    let model_dir = copy.path().to_str().expect("a UTF-8 path");
    let serve = Serve::start(&[
        ("PHIGUARD_LOG_FORMAT", "json"),
        ("PHIGUARD_BUNDLED_MODEL_DIR", model_dir),
        ("PHIGUARD_RETRY_MAX_ATTEMPTS", "1"),
    ])
    .await;
    let ready = || async {
        let r = serve.get("/readyz").await;
        let status = r.status().as_u16();
        (status, r.json::<Value>().await.expect("json"))
    };
    let (status, body) = ready().await;
    assert_eq!((status, &body["error"]["code"]), (503, &json!("not_ready")));
    let note = format!("Patient {CANARY_NAME} (MRN {CANARY_MRN}) seen 03/04/2021.");
    let r = serve.post("/pii/deidentify", json!({ "text": note })).await;
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "model_load_error");
    let alive = serve.get("/livez").await;
    assert_eq!(alive.status(), 200, "alive while not ready");

    std::fs::copy(bundled.join("model.safetensors"), &weights).expect("restore the weights");
    let started = Instant::now();
    while ready().await.0 != 200 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not ready after the model was restored:\n{}",
            serve.read("stderr")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let r = serve.post("/pii/deidentify", json!({ "text": note })).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.expect("json");
    let out = body["deidentified_text"].as_str().unwrap_or_default();
    assert!(
        !out.contains(CANARY_NAME) && !out.contains(CANARY_MRN),
        "{out}"
    );

    let (stdout, stderr) = serve.stop();
    assert_no_canary(&stdout, &stderr);
    let messages: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["target"] != "phiguard::access")
        .map(|e| e["fields"].clone())
        .collect();
    let failed = messages
        .iter()
        .find(|f| f["message"] == "model load failed")
        .unwrap_or_else(|| panic!("no load failure logged:\n{stderr}"));
    assert_eq!(failed["model"], "phiguard-deid");
    assert!(
        failed["error"]
            .as_str()
            .unwrap_or_default()
            .contains("sha256"),
        "{failed}"
    );
    assert!(
        messages
            .iter()
            .any(|f| f["message"] == "the default model loaded; ready"),
        "{stderr}"
    );
}

/// `PHIGUARD_PROBE_PORT` gives `phiguard serve` a second port for probes and scrapes: it is
/// printed under the listening line, named in the start-up log line, and answers there.
#[tokio::test]
async fn the_probe_port_is_printed_logged_and_answers() {
    let serve = Serve::start(&[
        ("PHIGUARD_LOG_FORMAT", "json"),
        ("PHIGUARD_PROBE_PORT", "0"),
    ])
    .await;
    let started = Instant::now();
    let probes = loop {
        if let Some(p) = serve
            .read("stdout")
            .lines()
            .find_map(|l| l.trim().strip_prefix("probes on "))
        {
            break p.to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no probes line"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_ne!(probes, serve.base);
    for path in ["/livez", "/readyz"] {
        let r = serve
            .http
            .get(format!("{probes}{path}"))
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 200, "{path}");
    }
    let (_, stderr) = serve.stop();
    let serving = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| e["fields"].clone())
        .find(|f| f["message"] == "phiguard serving")
        .unwrap_or_else(|| panic!("no start-up line:\n{stderr}"));
    assert_eq!(
        serving["probe_address"].as_str(),
        probes.strip_prefix("http://"),
        "{serving}"
    );
}

/// A default model that is not installed (a typo of the bundled model's id) is a bad
/// setting: start-up stops with a message naming the variable and the model, exit 2, rather
/// than a service that answers every request naming no model `422 model_not_served`.
#[tokio::test]
async fn a_default_model_that_is_not_installed_stops_start_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = serve_command(dir.path(), &[("PHIGUARD_DEFAULT_MODEL", "phiguard_deid")])
        .spawn()
        .expect("start phiguard serve");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "phiguard serve started with a default model that is not installed: {}",
                std::fs::read_to_string(dir.path().join("stdout")).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let stdout = std::fs::read_to_string(dir.path().join("stdout")).unwrap_or_default();
    let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(!stdout.contains("listening on"), "{stdout}");
    for part in ["PHIGUARD_DEFAULT_MODEL", "phiguard_deid", "not installed"] {
        assert!(stderr.contains(part), "{part:?} not in: {stderr}");
    }
}

/// `PUT /admin/settings` refuses a default that names no installed model, and
/// `DELETE /admin/models/{id}` refuses to remove the model the default names (`409
/// conflict` naming `models.default`) or an alias maps to (naming `models.aliases`): either
/// would leave a service whose next start stops. Once nothing names the model, it can go.
#[tokio::test]
async fn a_default_model_that_is_not_installed_is_refused_and_its_model_stays() {
    // A second model in the store, installed before the server starts.
    let home = tempfile::tempdir().expect("tempdir");
    let bundled = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/phiguard-deid");
    let imported = Command::new(env!("CARGO_BIN_EXE_phiguard"))
        .args(["models", "import", "--id", "copy-deid"])
        .arg(&bundled)
        .env("PHIGUARD_HOME", home.path())
        .env("PHIGUARD_KEYRING", "off")
        .env_remove("PHIGUARD_DEFAULT_MODEL")
        .output()
        .expect("phiguard models import");
    assert!(imported.status.success(), "{imported:?}");
    let serve = Serve::start(&[
        ("PHIGUARD_HOME", home.path().to_str().expect("a UTF-8 path")),
        (
            "PHIGUARD_BUNDLED_MODEL_DIR",
            bundled.to_str().expect("a UTF-8 path"),
        ),
    ])
    .await;
    let set_default = |model: &'static str| {
        serve
            .http
            .put(format!("{}/admin/settings", serve.base))
            .bearer_auth(ADMIN)
            .json(&json!({ "models.default": model }))
            .send()
    };
    assert_eq!(serve.get("/readyz").await.status(), 200);
    // A default that names no installed model is refused, and nothing changes.
    let r = set_default("phiguard_deid").await.expect("request");
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.expect("json");
    assert_eq!(
        body["error"]["details"][0]["field"], "models.default",
        "{body}"
    );
    assert_eq!(serve.get("/readyz").await.status(), 200);
    // The default's model cannot be removed while it is the default.
    assert_eq!(
        set_default("copy-deid").await.expect("request").status(),
        200
    );
    let remove = || {
        serve
            .http
            .delete(format!("{}/admin/models/copy-deid", serve.base))
            .bearer_auth(ADMIN)
            .send()
    };
    let r = remove().await.expect("request");
    assert_eq!(r.status(), 409);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "conflict");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("models.default")),
        "{body}"
    );
    assert_eq!(serve.get("/readyz").await.status(), 200);
    // Another default first: then the model can be removed, and the service stays ready.
    let r = set_default("phiguard-deid").await.expect("request");
    assert_eq!(r.status(), 200);
    // But not while an alias maps to it: the alias would be refused on every request and
    // the next start would stop on it (the rule of models.aliases at start-up).
    let set_aliases = |aliases: &'static str| {
        serve
            .http
            .put(format!("{}/admin/settings", serve.base))
            .bearer_auth(ADMIN)
            .json(&json!({ "models.aliases": aliases }))
            .send()
    };
    assert_eq!(
        set_aliases("copy=copy-deid")
            .await
            .expect("request")
            .status(),
        200
    );
    let r = remove().await.expect("request");
    assert_eq!(r.status(), 409);
    let body: Value = r.json().await.expect("json");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("models.aliases")),
        "{body}"
    );
    assert_eq!(set_aliases("").await.expect("request").status(), 200);
    assert_eq!(remove().await.expect("request").status(), 204);
    assert_eq!(serve.get("/readyz").await.status(), 200);
    let (stdout, stderr) = serve.stop();
    assert_no_canary(&stdout, &stderr);
}
