//! Live token rotation and revocation, black-box: the real `phiguard serve` binary on an
//! ephemeral loopback port in its own temporary home (file secrets), and `phiguard token …`
//! run as separate processes on the same home. A rotation must take effect in the running
//! server, without a restart: the new token works and the old one is refused.
//!
//! See: issue 11, "The front door" (`phiguard token rotate` did not take effect).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_phiguard");

/// How long a change may take to reach the running server before the test fails. The
/// server looks about once a second; this only bounds the polling.
const DEADLINE: Duration = Duration::from_secs(10);

/// A `phiguard` command on `home`, with no token pinned by the environment. The polling
/// below presents the not-yet-current token about ten times a second until the switch, so
/// the failed-authentication limit is raised out of its way.
fn phiguard(home: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env("PHIGUARD_HOME", home)
        .env("PHIGUARD_KEYRING", "off")
        .env("PHIGUARD_LOG_LEVEL", "off")
        .env("PHIGUARD_AUTH_FAILURE_BURST", "1000000")
        .env_remove("PHIGUARD_AUTH_TOKEN")
        .env_remove("PHIGUARD_ADMIN_TOKEN");
    c
}

/// `phiguard serve` on port 0, killed (its own pid) when dropped.
struct Serve {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    base: String,
}

impl Serve {
    fn start(home: &Path) -> Serve {
        let mut child = phiguard(home)
            .args(["serve", "--port", "0"])
            .env("PHIGUARD_DEFAULT_MODEL", "rules")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn phiguard serve");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(None);
                        return;
                    }
                    Ok(_) => {
                        if let Some(base) = line.trim().strip_prefix("listening on ") {
                            let _ = tx.send(Some((base.to_string(), reader)));
                            return;
                        }
                    }
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(Some((base, reader))) => Serve {
                child,
                _stdout: reader,
                base,
            },
            other => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "phiguard serve did not print its address (ended: {})",
                    matches!(other, Ok(None))
                );
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("run phiguard")
}

/// The one line a `token` command prints on stdout.
fn token_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "phiguard failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = String::from_utf8(out.stdout.clone()).expect("utf-8");
    let t = t.trim().to_string();
    assert!(
        t.starts_with("pg_") && !t.contains('\n'),
        "one token printed"
    );
    t
}

fn show(home: &Path, admin: bool) -> String {
    let mut c = phiguard(home);
    c.args(["token", "show"]);
    if admin {
        c.arg("--admin");
    }
    token_of(&run(&mut c))
}

fn rotate(home: &Path, admin: bool) -> String {
    let mut c = phiguard(home);
    c.args(["token", "rotate"]);
    if admin {
        c.arg("--admin");
    }
    token_of(&run(&mut c))
}

async fn status_with(http: &reqwest::Client, url: &str, token: &str) -> u16 {
    http.get(url)
        .bearer_auth(token)
        .send()
        .await
        .expect("send")
        .status()
        .as_u16()
}

/// `GET /admin/tokens` with the admin token.
async fn tokens_listed(http: &reqwest::Client, url: &str, admin: &str) -> Value {
    http.get(url)
        .bearer_auth(admin)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json")
}

/// Polls until `url` answers 200 to `new` and 401 to `old`, or fails at [`DEADLINE`].
async fn until_switched(http: &reqwest::Client, url: &str, old: &str, new: &str) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let with_new = status_with(http, url, new).await;
        let with_old = status_with(http, url, old).await;
        if (with_new, with_old) == (200, 401) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "after {DEADLINE:?} the new token answers {with_new} and the old one {with_old}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn token_rotate_takes_effect_in_a_running_server() {
    let home = tempfile::tempdir().expect("tempdir");
    let server = Serve::start(home.path());
    let http = reqwest::Client::new();
    let route = server.url("/models/loaded");
    let old = show(home.path(), false);
    assert_eq!(status_with(&http, &route, &old).await, 200);

    let new = rotate(home.path(), false);
    assert_ne!(new, old);
    until_switched(&http, &route, &old, &new).await;
    assert_eq!(
        show(home.path(), false),
        new,
        "show prints the rotated token"
    );

    // The refused old token is `invalid_credentials`, and stays refused.
    let r = http
        .get(&route)
        .bearer_auth(&old)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 401);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "invalid_credentials");
    // The admin token was not touched.
    let admin = show(home.path(), true);
    assert_eq!(
        status_with(&http, &server.url("/admin/status"), &admin).await,
        200
    );
}

#[tokio::test]
async fn token_rotate_admin_takes_effect_in_a_running_server() {
    let home = tempfile::tempdir().expect("tempdir");
    let server = Serve::start(home.path());
    let http = reqwest::Client::new();
    let route = server.url("/admin/status");
    let client = show(home.path(), false);
    let old = show(home.path(), true);
    assert_eq!(status_with(&http, &route, &old).await, 200);

    let new = rotate(home.path(), true);
    assert_ne!(new, old);
    until_switched(&http, &route, &old, &new).await;
    assert_eq!(show(home.path(), true), new);
    // The client token still works, and is still not an admin token.
    let models = server.url("/models/loaded");
    assert_eq!(status_with(&http, &models, &client).await, 200);
    assert_eq!(status_with(&http, &route, &client).await, 403);
}

#[tokio::test]
async fn the_primary_client_token_is_listed_and_revoked_through_the_admin_api() {
    let home = tempfile::tempdir().expect("tempdir");
    let server = Serve::start(home.path());
    let http = reqwest::Client::new();
    let admin = show(home.path(), true);
    let old = show(home.path(), false);
    let models = server.url("/models/loaded");
    assert_eq!(status_with(&http, &models, &old).await, 200);

    let list = tokens_listed(&http, &server.url("/admin/tokens"), &admin).await;
    let text = list.to_string();
    assert!(!text.contains(&old) && !text.contains("digest"), "{text}");
    let primary = list["tokens"]
        .as_array()
        .expect("tokens")
        .iter()
        .find(|t| t["primary"] == true)
        .expect("the primary client token is listed")
        .clone();
    assert_eq!(primary["id"], "client");
    assert_eq!(primary["scope"], "client");
    assert_eq!(
        primary["prefix"].as_str().expect("prefix"),
        &old[..7],
        "recognisable by its prefix"
    );

    let r = http
        .delete(server.url("/admin/tokens/client"))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 204);
    // The server that revoked it refuses it at once.
    assert_eq!(status_with(&http, &models, &old).await, 401);
    // It was replaced by a fresh one that `token show` prints and that works.
    let new = show(home.path(), false);
    assert_ne!(new, old);
    assert_eq!(status_with(&http, &models, &new).await, 200);
    let list = tokens_listed(&http, &server.url("/admin/tokens"), &admin).await;
    assert_eq!(list["tokens"][0]["prefix"].as_str(), Some(&new[..7]));
    // A second server on the same home (a restart) agrees.
    drop(server);
    let again = Serve::start(home.path());
    let models = again.url("/models/loaded");
    assert_eq!(status_with(&http, &models, &old).await, 401);
    assert_eq!(status_with(&http, &models, &new).await, 200);
}

#[tokio::test]
async fn a_pinned_token_is_not_rotated() {
    let home = tempfile::tempdir().expect("tempdir");
    let before = show(home.path(), false);
    let out = run(phiguard(home.path())
        .args(["token", "rotate"])
        .env("PHIGUARD_AUTH_TOKEN", "pinned-by-the-environment"));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("PHIGUARD_AUTH_TOKEN"), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(show(home.path(), false), before, "the stored token is kept");
}

/// A label with a line break would print a row of its own in `token list`, one that looks
/// like another token: the CLI and the admin API refuse it, and nothing is created.
#[tokio::test]
async fn a_label_with_a_line_break_is_refused_by_the_cli_and_the_api() {
    let home = tempfile::tempdir().expect("tempdir");
    let spoof = "a\ntok_fake  admin  no expiry";
    let out = run(phiguard(home.path()).args(["token", "create", "--label", spoof]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("control characters"), "{err}");
    assert!(out.stdout.is_empty(), "no token printed");

    let server = Serve::start(home.path());
    let http = reqwest::Client::new();
    let admin = show(home.path(), true);
    let r = http
        .post(server.url("/admin/tokens"))
        .bearer_auth(&admin)
        .json(&serde_json::json!({"label": spoof}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 422);
    let list = tokens_listed(&http, &server.url("/admin/tokens"), &admin).await;
    assert!(!list.to_string().contains("tok_fake"), "{list}");
    let listed = run(phiguard(home.path()).args(["token", "list"]));
    assert!(!String::from_utf8_lossy(&listed.stdout).contains("tok_fake"));
}
