//! The admin audit log: one JSON line per admin action (settings changed, tokens created or
//! revoked, breakers forced, faults set, models pulled, cancelled, deleted, unloaded or made
//! the default), saying when, who (the token id), from where (the peer address), what,
//! on which target, and how it ended (`ok` or the error code); and each admin route a
//! client token was refused at (`admin.refused`, the route's template as its target; one a
//! minute per token at most), so a re-identification tried without the admin token leaves
//! a trace.
//!
//! Why a file of its own and not the access log: the access log is for operations and may
//! be shipped, sampled or turned off with `server.log_level`; the audit trail must answer
//! "who changed this and when" for as long as the file is kept, whatever the log settings.
//! Why JSON lines: appending one line is one `write` on a file opened for append, so
//! concurrent writers (this server, `phiguard token create`) never interleave inside a
//! record, and any line-oriented tool reads it.
//!
//! What a record may hold: token ids, setting keys and their values (a secret setting's
//! value is masked), catalog and installed model ids, token labels (chosen by admins), the
//! peer address and closed words. Never request text, never a token, never a name taken
//! from a request that was not first matched against a known key: a refused action on an
//! unknown target is recorded without its target.
//!
//! The file (`audit.jsonl` in the data directory, mode 0600) is capped at
//! `security.audit_max_bytes`; a write that would pass the cap first moves the file to
//! `audit.jsonl.1` (replacing the older one), so at most twice the cap is kept.

use std::convert::Infallible;
use std::io::{BufRead, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use parking_lot::Mutex;
use serde_json::Value;

use super::error::ApiError;
use super::middleware::Caller;
use super::state::AppState;
use crate::settings::Home;

/// The mask written in place of a secret setting's value.
pub const MASK: &str = "********";

/// The audit log of a home: `audit.jsonl` in its data directory.
pub fn audit_file(home: &Home) -> PathBuf {
    home.data_dir().join("audit.jsonl")
}

/// One audit record, as written and as `GET /admin/audit` returns it. Never request text
/// or a token; a secret setting's value is masked.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[schema(as = AuditEntry)]
pub struct AuditRecord {
    /// RFC 3339 UTC, milliseconds.
    pub time: String,
    /// Token id of the caller (`admin`, `tok_…`, `anonymous` with auth off, `cli`).
    pub actor: String,
    /// The caller's address; `null` for the CLI.
    pub peer: Option<String>,
    /// What was done: `settings.update`, `token.create`, `token.revoke`, `breaker.reset`,
    /// `breaker.force_open`, `breaker.disable`, `faults.set`, `model.pull`, `model.cancel`,
    /// `model.delete`, `model.default`, `model.unload`.
    pub action: String,
    /// On what: a setting key, token id, model id; `null` when refused for an unknown one.
    pub target: Option<String>,
    /// The value before (settings, breaker state, default model, faults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    /// The value after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<Value>,
    /// Closed facts of the action (a token's label, scope and expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// `ok`, or the error code it was refused with (`docs/errors.md`).
    pub result: String,
}

/// An action about to be recorded; the actor, time and result are added by [`record`].
#[derive(Clone, Debug)]
pub struct Action {
    action: &'static str,
    target: Option<String>,
    old: Option<Value>,
    new: Option<Value>,
    details: Option<Value>,
}

impl Action {
    /// An action with no target yet.
    pub fn new(action: &'static str) -> Self {
        Action {
            action,
            target: None,
            old: None,
            new: None,
            details: None,
        }
    }

    /// Its target: a known key or id (never an unmatched name from the request).
    pub fn target(&mut self, target: impl Into<String>) -> &mut Self {
        self.target = Some(target.into());
        self
    }

    /// The value before and after.
    pub fn change(&mut self, old: Value, new: Value) -> &mut Self {
        self.old = Some(old);
        self.new = Some(new);
        self
    }

    /// Closed facts.
    pub fn details(&mut self, details: Value) -> &mut Self {
        self.details = Some(details);
        self
    }

    /// The record, at `time`, by `actor` from `peer`, ending with `result`.
    pub fn into_record(self, actor: &str, peer: Option<IpAddr>, result: &str) -> AuditRecord {
        AuditRecord {
            time: rfc3339_millis(SystemTime::now()),
            actor: actor.to_string(),
            peer: peer.map(|p| p.to_string()),
            action: self.action.to_string(),
            target: self.target,
            old: self.old,
            new: self.new,
            details: self.details,
            result: result.to_string(),
        }
    }
}

fn rfc3339_millis(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Who is acting: the token id [`context`](super::middleware::context) attached and the peer
/// address of the connection. Never fails: without auth or connection info (a router
/// driven in a unit test) the fields are `unknown` / `None`.
#[derive(Clone, Debug)]
pub struct Actor {
    /// Token id.
    pub token_id: String,
    /// Peer address.
    pub peer: Option<IpAddr>,
}

impl<S: Send + Sync> FromRequestParts<S> for Actor {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Actor {
            token_id: parts
                .extensions
                .get::<Caller>()
                .map_or_else(|| "unknown".to_string(), |c| c.token_id.to_string()),
            peer: parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip()),
        })
    }
}

/// Appends the record of `action` by `actor`, its result taken from `outcome`. A failure to
/// write is logged (without the record) and does not change the answer: the action has
/// already happened. The returned future holds neither `outcome` nor `actor`.
pub fn record<T>(
    st: &AppState,
    actor: &Actor,
    action: Action,
    outcome: &Result<T, ApiError>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let result = match outcome {
        Ok(_) => "ok",
        Err(e) => e.code(),
    };
    let rec = action.into_record(&actor.token_id, actor.peer, result);
    let st = st.clone();
    async move {
        let written = tokio::task::spawn_blocking(move || st.audit.append(&rec)).await;
        if !matches!(written, Ok(Ok(()))) {
            tracing::warn!("could not write the audit log");
        }
    }
}

/// The append-only, size-capped audit file.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    max_bytes: u64,
    /// Serialises this process's writes and rotations.
    lock: Mutex<()>,
    /// When each token's last `admin.refused` record was written: at most one a
    /// [`REFUSAL_EVERY`] per token, so a client token that floods admin routes cannot
    /// rotate the trail of admin actions away. (Only authenticated tokens reach it, so the
    /// map holds at most one entry per token.)
    refused: Mutex<std::collections::HashMap<String, std::time::Instant>>,
}

/// The least time between two `admin.refused` records of one token.
const REFUSAL_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

impl AuditLog {
    /// The log at `path`, rotated once it would pass `max_bytes`.
    pub fn new(path: PathBuf, max_bytes: u64) -> Self {
        AuditLog {
            path,
            max_bytes,
            lock: Mutex::new(()),
            refused: Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// True when a refusal of `token_id` at an admin route is to be recorded now (see
    /// `refused`); the time is then taken.
    pub fn refusal_due(&self, token_id: &str) -> bool {
        let now = std::time::Instant::now();
        let mut last = self.refused.lock();
        match last.get(token_id) {
            Some(t) if now.duration_since(*t) < REFUSAL_EVERY => false,
            _ => {
                last.insert(token_id.to_owned(), now);
                true
            }
        }
    }

    /// Whether a record could be appended now: the file opens for appending (created
    /// with its folder where missing). Asked before an admin change, which is refused
    /// where it could not be recorded.
    ///
    /// # Errors
    /// Any I/O error.
    pub fn writable(&self) -> std::io::Result<()> {
        let _g = self.lock.lock();
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        open_append(&self.path).map(drop)
    }

    /// The rotated file: `audit.jsonl.1`.
    fn rotated(&self) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(".1");
        self.path.with_file_name(name)
    }

    /// Appends one record as one line (blocking I/O).
    ///
    /// # Errors
    /// Any I/O error.
    pub fn append(&self, rec: &AuditRecord) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(rec).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let _g = self.lock.lock();
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let len = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        if len > 0 && len + line.len() as u64 > self.max_bytes {
            std::fs::rename(&self.path, self.rotated())?;
        }
        open_append(&self.path)?.write_all(&line)
    }

    /// The latest `limit` records, newest first (the current file, then the rotated one).
    /// Lines that do not parse (a torn write) are skipped.
    ///
    /// # Errors
    /// Any I/O error but a missing file.
    pub fn latest(&self, limit: usize) -> std::io::Result<Vec<AuditRecord>> {
        let _g = self.lock.lock();
        let mut out = Vec::new();
        for path in [self.path.clone(), self.rotated()] {
            if out.len() >= limit {
                break;
            }
            let mut records = read_records(&path)?;
            records.reverse();
            out.extend(records.into_iter().take(limit - out.len()));
        }
        Ok(out)
    }
}

fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)
}

fn read_records(path: &Path) -> std::io::Result<Vec<AuditRecord>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for line in std::io::BufReader::new(file).lines() {
        if let Ok(rec) = serde_json::from_str::<AuditRecord>(&line?) {
            out.push(rec);
        }
    }
    Ok(out)
}

/// A setting's value as the audit log shows it: masked for a secret setting.
pub fn setting_value(key: &str, value: &crate::settings::Value) -> Value {
    if crate::settings::table::def(key).is_none_or(|d| d.secret) {
        return Value::String(MASK.into());
    }
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(n: usize) -> AuditRecord {
        let mut a = Action::new("settings.update");
        a.target(format!("retry.max_attempts{n}"))
            .change(json!(n), json!(n + 1));
        a.into_record("admin", Some("127.0.0.1".parse().expect("ip")), "ok")
    }

    #[test]
    fn records_append_as_lines_and_read_newest_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = AuditLog::new(dir.path().join("data/audit.jsonl"), 1 << 20);
        assert!(log.latest(10).expect("empty").is_empty());
        for n in 0..5 {
            log.append(&rec(n)).expect("append");
        }
        let text = std::fs::read_to_string(dir.path().join("data/audit.jsonl")).expect("read");
        assert_eq!(text.lines().count(), 5);
        let first: Value = serde_json::from_str(text.lines().next().expect("line")).expect("json");
        assert_eq!(first["actor"], "admin");
        assert_eq!(first["peer"], "127.0.0.1");
        assert_eq!(first["old"], 0);
        assert!(first["time"].as_str().expect("time").ends_with('Z'));
        assert!(first.get("details").is_none(), "empty fields are left out");
        let latest = log.latest(3).expect("latest");
        let targets: Vec<&str> = latest.iter().filter_map(|r| r.target.as_deref()).collect();
        assert_eq!(
            targets,
            [
                "retry.max_attempts4",
                "retry.max_attempts3",
                "retry.max_attempts2"
            ]
        );
        assert_eq!(latest[0].new, Some(json!(5)));
    }

    #[test]
    fn the_file_rotates_once_at_the_cap_and_reads_across_the_rotation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.jsonl");
        let one = serde_json::to_vec(&rec(0)).expect("ser").len() as u64 + 1;
        // Room for three records per file.
        let log = AuditLog::new(path.clone(), one * 3 + 2);
        for n in 0..8 {
            log.append(&rec(n)).expect("append");
        }
        let lines = |p: &Path| std::fs::read_to_string(p).expect("read").lines().count();
        let rotated = dir.path().join("audit.jsonl.1");
        assert_eq!(lines(&path), 2, "records 6 and 7");
        assert_eq!(lines(&rotated), 3, "records 3 to 5; 0 to 2 are gone");
        assert!(std::fs::metadata(&path).expect("meta").len() <= one * 3 + 2);
        let targets: Vec<String> = log
            .latest(100)
            .expect("latest")
            .into_iter()
            .filter_map(|r| r.target)
            .collect();
        let want: Vec<String> = (3..8)
            .rev()
            .map(|n| format!("retry.max_attempts{n}"))
            .collect();
        assert_eq!(targets, want);
        assert_eq!(log.latest(4).expect("latest").len(), 4);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_private_also_after_rotation() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::new(path.clone(), 4096);
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        log.append(&rec(0)).expect("append");
        assert_eq!(mode(&path), 0o600);
        for n in 0..100 {
            log.append(&rec(n)).expect("append");
        }
        assert!(dir.path().join("audit.jsonl.1").exists(), "rotated");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.path().join("audit.jsonl.1")), 0o600);
    }

    #[test]
    fn a_torn_line_is_skipped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::new(path.clone(), 1 << 20);
        log.append(&rec(0)).expect("append");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open")
            .write_all(b"{\"time\":\"2")
            .expect("write");
        log.append(&rec(1)).expect("append");
        assert_eq!(
            log.latest(10).expect("latest").len(),
            1,
            "the torn line and the one glued to it"
        );
    }

    #[test]
    fn secret_settings_are_masked() {
        let v = crate::settings::Value::Str("redis://user:pw@host".into());
        assert_eq!(setting_value("cluster.redis_url", &v), json!(MASK));
        assert_eq!(setting_value("security.auth_token", &v), json!(MASK));
        assert_eq!(
            setting_value(
                "models.default",
                &crate::settings::Value::Str("rules".into())
            ),
            json!("rules")
        );
        assert_eq!(setting_value("no.such.key", &v), json!(MASK));
    }
}
