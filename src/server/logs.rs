//! `GET /admin/logs`: the service's recent log lines for the dashboard's Logs tab, read from
//! the in-memory ring that [`crate::logging`] fills under the log's own filter.
//!
//! The lines are the log itself, which never holds request text, entity text or a
//! request-derived value (see [`crate::logging`]); this route adds nothing to them. A
//! client tails the log by asking again with `after` set to the `last` it was given.

use std::collections::BTreeMap;

use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::error::{ApiError, FieldProblem};
use super::state::AppState;
use crate::logging;

/// The most lines one answer carries.
pub const LIMIT_MAX: usize = 1000;

/// One log line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LogLine {
    /// Its number: lines are numbered from 1 in the order they were written.
    pub seq: u64,
    /// When it was written (RFC 3339).
    pub timestamp: String,
    /// `error`, `warn`, `info`, `debug` or `trace`.
    pub level: String,
    /// The module that logged it (`phiguard::access`, …).
    pub target: String,
    /// The message.
    pub message: String,
    /// The request it belongs to, when it was logged inside one.
    #[schema(required = true)]
    pub request_id: Option<String>,
    /// The event's other fields (status, route, elapsed time, …).
    pub fields: BTreeMap<String, Value>,
}

/// `GET /admin/logs`'s answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LogTail {
    /// The number to pass as `after` next time.
    pub last: u64,
    /// Lines after `after` that had already left the ring (it keeps the last 2000).
    pub missed: u64,
    /// Oldest first.
    pub lines: Vec<LogLine>,
}

/// A line of the ring as the JSON formatter wrote it.
#[derive(Deserialize)]
struct Written {
    #[serde(default)]
    timestamp: String,
    #[serde(default)]
    level: String,
    #[serde(default)]
    target: String,
    #[serde(default)]
    fields: BTreeMap<String, Value>,
    #[serde(default)]
    span: BTreeMap<String, Value>,
}

fn line(seq: u64, json: &str) -> LogLine {
    match serde_json::from_str::<Written>(json) {
        Ok(mut w) => {
            let message = match w.fields.remove("message") {
                Some(Value::String(m)) => m,
                Some(other) => other.to_string(),
                None => String::new(),
            };
            // The request span's id, or the event's own (the access line carries both; it is
            // kept once, here).
            let own = w.fields.remove("request_id");
            let request_id = match w.span.get("request_id").or(own.as_ref()) {
                Some(Value::String(id)) => Some(id.clone()),
                _ => None,
            };
            LogLine {
                seq,
                timestamp: w.timestamp,
                level: w.level.to_ascii_lowercase(),
                target: w.target,
                message,
                request_id,
                fields: w.fields,
            }
        }
        // The ring only holds the formatter's JSON; a cut line (over the length cap) is
        // shown as its text.
        Err(_) => LogLine {
            seq,
            timestamp: String::new(),
            level: "info".into(),
            target: String::new(),
            message: json.to_owned(),
            request_id: None,
            fields: BTreeMap::new(),
        },
    }
}

/// `after` and `limit` from the query string.
fn query(raw: Option<&str>) -> Result<(u64, usize), ApiError> {
    let mut after = 0;
    let mut limit = LIMIT_MAX;
    let mut problems = Vec::new();
    for kv in raw.unwrap_or("").split('&').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match k {
            "after" => match v.parse::<u64>() {
                Ok(n) => after = n,
                Err(_) => problems.push(FieldProblem::new(
                    "query.after",
                    "Input should be a non-negative integer",
                    "value_error",
                )),
            },
            "limit" => match v.parse::<usize>() {
                Ok(n) if (1..=LIMIT_MAX).contains(&n) => limit = n,
                _ => problems.push(FieldProblem::new(
                    "query.limit",
                    format!("Input should be an integer from 1 to {LIMIT_MAX}"),
                    "value_error",
                )),
            },
            _ => {}
        }
    }
    if problems.is_empty() {
        Ok((after, limit))
    } else {
        Err(ApiError::Validation(problems))
    }
}

/// `GET /admin/logs?after=N&limit=M`.
#[utoipa::path(get, path = "/admin/logs", tag = "admin", security(("bearer" = []), ("api_key" = [])),
    params(
        ("after" = Option<u64>, Query, description = "only lines numbered above this (default 0: every line held)"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "at most this many lines, oldest first (default 1000)"),
    ),
    responses(
        (status = 200, description = "the service's recent log lines (the last 2000 are held in memory), oldest first", body = LogTail),
        (status = 422, description = "`after` or `limit` is not a valid integer (`validation_error`)", body = super::error::ErrorEnvelope),
    ))]
pub async fn admin_logs(
    State(_st): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let (after, limit) = query(raw.as_deref())?;
    let got = logging::recent().after(after, limit);
    Ok(axum::Json(LogTail {
        last: got.last,
        missed: got.missed,
        lines: got.lines.iter().map(|(n, l)| line(*n, l)).collect(),
    })
    .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_formatted_line_becomes_its_parts() {
        let l = line(
            7,
            r#"{"timestamp":"2026-12-01T10:00:00.000Z","level":"WARN","fields":{"message":"request failed","status":503,"route":"/pii/extract"},"target":"phiguard::access","span":{"request_id":"abc","name":"request"}}"#,
        );
        assert_eq!(l.seq, 7);
        assert_eq!(l.level, "warn");
        assert_eq!(l.message, "request failed");
        assert_eq!(l.request_id.as_deref(), Some("abc"));
        assert_eq!(l.target, "phiguard::access");
        assert_eq!(l.fields.get("status"), Some(&Value::from(503)));
        assert!(!l.fields.contains_key("message"));
        let own = line(
            8,
            r#"{"timestamp":"t","level":"INFO","fields":{"message":"request","request_id":"r-2"},"target":"phiguard::access"}"#,
        );
        assert_eq!(own.request_id.as_deref(), Some("r-2"));
        assert!(!own.fields.contains_key("request_id"));
    }

    #[test]
    fn a_line_that_is_not_json_is_kept_as_text() {
        let l = line(1, "{\"timestamp\": [cut]");
        assert_eq!(l.message, "{\"timestamp\": [cut]");
        assert_eq!(l.request_id, None);
    }

    #[test]
    fn the_query_is_checked() {
        assert_eq!(query(None).ok(), Some((0, LIMIT_MAX)));
        assert_eq!(query(Some("after=12&limit=5")).ok(), Some((12, 5)));
        assert!(query(Some("after=-1")).is_err());
        assert!(query(Some("limit=0")).is_err());
        assert!(query(Some("limit=1001")).is_err());
    }
}
