//! The NDJSON streams `/pii/extract/stream` and `/pii/deidentify/stream`.
//!
//! Detection reads the whole text first, with the same guarded call and sweep as the
//! single-shot routes (so a name found near the end is masked near the start too); the
//! result is then sent in fragments (`deid::fragments`) that never split an identifier, and
//! the chunks joined equal the single-shot output. A failure of the guarded call (an open
//! breaker, a passed deadline, a model that does not load) is therefore an ordinary error
//! response with its status and `Retry-After`, never a `200` with part of the text, and a
//! stream answered by the rules alone in degraded mode carries `X-Phiguard-Degraded:
//! rules` as the other routes do, and says so in its `final` line (`"degraded": true`).
//! The admission permit travels with the stream and is released when the stream ends.
//! Audit hashes are keyed (HMAC with the install secret), never plain SHA-256 of an
//! entity, so they cannot be reversed by guessing names.
//!
//! Both streams end the same way ([`Lines`], [`Pending`]): the headers wait for the first
//! line, and a failure after it is the last line, `{"type":"error",...}`, never a body
//! that just stops.

use std::sync::Arc;

use axum::extract::{Extension, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::api::{DeidentifyStreamRequest, ExtractStreamRequest};
use super::error::ApiError;
use super::middleware::{Body, HeldAdmission};
use super::ndjson::dumps;
use super::pii::{call_options, deid_options, limits, request_rng};
use super::responses::round4;
use super::responses::stream::{
    Chunk, Emit, EmitAudit, EmittedSpan, ExtractFinal, ExtractFinalAudit, StreamError,
    StreamErrorBody,
};
use super::state::AppState;
use super::validate::parse;
use crate::deid::stream::{fragments, Commit, StreamConfig};
use crate::deid::{Action, Deidentifier};
use crate::detect::{CharIndex, Label, Span};
use crate::engine::CallOptions;
use crate::settings::keys;

fn keyed_hash(st: &AppState, text: &str) -> String {
    st.hash_key.audit_hash(text)
}

/// OpenMed's span contract (`OpenMedSpan`) only admits its own canonical labels; phiguard's
/// finer identifier labels map onto the nearest one, and the policy label follows OpenMed's
/// `policy_label_for`. The phiguard label stays in the span's `metadata`.
fn openmed_span_labels(label: Label) -> (&'static str, &'static str) {
    let canonical = match label {
        Label::MedicalRecordNumber | Label::HealthPlanNumber | Label::LicenseNumber => "ID_NUM",
        Label::Fax => "PHONE",
        Label::VehicleId => "VIN",
        Label::DeviceId => "DEVICE_IDENTIFIER",
        Label::City | Label::State | Label::Country => "LOCATION",
        other => other.canonical(),
    };
    let policy = match canonical {
        "DATE" | "TIME" | "AGE" | "ZIPCODE" | "LOCATION" | "ORGANIZATION" => "QUASI_IDENTIFIER",
        "OTHER" => "CLINICAL_CONCEPT",
        _ => "DIRECT_IDENTIFIER",
    };
    (canonical, policy)
}

/// The span `action` in OpenMed's closed set (`keep redact replace mask hash format_preserve`).
fn openmed_span_action(action: Action) -> &'static str {
    match action {
        Action::Mask => "mask",
        Action::Remove => "redact",
        Action::Hash => "hash",
        Action::Keep => "keep",
        Action::Replace | Action::ShiftDates | Action::YearOnly | Action::AgeCap => "replace",
    }
}

fn entity_id(label: &str, start: usize) -> String {
    let h = Sha256::digest(format!("{label}\0{start}").as_bytes());
    format!("ent_{}", &hex::encode(h)[..16])
}

/// The last line of a stream whose producer ended without its `final` line after the first
/// line went out (the status is already `200`; an internal fault, as the model was called
/// before the first line): `{"type":"error","error":{"code","message"}}` with
/// `internal_error`, as OpenMed's `/pii/deidentify/stream` words it. Fixed text only.
fn error_line(compact: bool) -> Bytes {
    let line = StreamError {
        error: StreamErrorBody {
            code: "internal_error",
            message: "Internal server error".to_string(),
            details: None,
        },
        kind: "error",
    };
    let v = serde_json::to_value(line).unwrap_or(Value::Null);
    Bytes::from(format!("{}\n", dumps(&v, compact)))
}

/// What a stream's producer hands its body.
enum Out {
    /// A line; more follow.
    Line(Bytes),
    /// The `final` line.
    Last(Bytes),
}

/// The receiving side of a stream's body, until the handler answers.
struct Pending {
    rx: mpsc::Receiver<Out>,
    compact: bool,
}

impl Pending {
    /// Waits for the stream's first line, so that only a stream that has something to say
    /// is answered `200`. After that, every line as it comes; a producer that ended without
    /// its `final` line is the `error` line.
    async fn respond(mut self) -> Result<Response, ApiError> {
        let first = match self.rx.recv().await {
            Some(out) => out,
            None => return Err(ApiError::Internal),
        };
        let compact = self.compact;
        let lines =
            futures::stream::unfold((Some(first), Some(self.rx)), move |(next, rx)| async move {
                let mut rx = rx?;
                let out = match next {
                    Some(out) => Some(out),
                    None => rx.recv().await,
                };
                let (line, more) = match out {
                    Some(Out::Line(line)) => (line, true),
                    Some(Out::Last(line)) => (line, false),
                    None => (error_line(compact), false),
                };
                Some((
                    Ok::<Bytes, std::convert::Infallible>(line),
                    (None, more.then_some(rx)),
                ))
            });
        let mut resp = (StatusCode::OK, axum::body::Body::from_stream(lines)).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson"),
        );
        Ok(resp)
    }
}

/// Detects the whole of `text` through the guarded engine, as the single-shot routes do
/// (windows, rules, the sweep across the text), keeps the spans at or over `threshold`, and
/// cuts the text into the stream's fragments. Also whether the rules alone answered, and
/// the model that answered (the name resolved once, as the single-shot routes resolve it).
async fn detect_fragments(
    st: &AppState,
    model_name: Option<&str>,
    text: &str,
    opts: &CallOptions,
    threshold: f32,
    cfg: StreamConfig,
) -> Result<(Vec<Commit>, bool, String), ApiError> {
    let det = super::pii::detect(st, model_name, text, opts).await?;
    let spans: Vec<Span> = det
        .spans
        .into_iter()
        .filter(|s| s.passes(threshold))
        .collect();
    Ok((fragments(text, spans, cfg), det.degraded, det.model_id))
}

/// Marks a stream answered by the rules alone, as `pii::finish` marks the other routes.
fn mark_degraded(resp: &mut Response, degraded: bool) {
    if degraded {
        resp.headers_mut()
            .insert("x-phiguard-degraded", HeaderValue::from_static("rules"));
    }
}

/// The sending side of a stream's body. A line the client does not take within
/// `server.send_timeout_seconds` (it stopped reading, and the socket and this channel are
/// full) abandons the stream: the producer ends, and with it the admission it holds.
struct Lines {
    tx: mpsc::Sender<Out>,
    compact: bool,
    timeout: std::time::Duration,
    abandoned: prometheus::IntCounter,
}

impl Lines {
    /// A stream's two ends; `compact`: JSON without spaces (the deidentify stream) or with
    /// OpenMed's default separators (the extract stream).
    fn new(st: &AppState, compact: bool) -> (Lines, Pending) {
        let (tx, rx) = mpsc::channel::<Out>(32);
        let timeout = std::time::Duration::from_secs_f64(
            st.settings().get(keys::SERVER_SEND_TIMEOUT_SECONDS),
        );
        let abandoned = st.metrics.streams_abandoned.clone();
        (
            Lines {
                tx,
                compact,
                timeout,
                abandoned,
            },
            Pending { rx, compact },
        )
    }

    fn encode<T: serde::Serialize>(&self, line: &T) -> Bytes {
        let v = serde_json::to_value(line).unwrap_or(Value::Null);
        Bytes::from(format!("{}\n", dumps(&v, self.compact)))
    }

    /// Sends one line; false when the stream is over (the client left or stopped reading).
    async fn send<T: serde::Serialize>(&self, line: &T) -> bool {
        self.put(Out::Line(self.encode(line))).await
    }

    /// Sends the `final` line, which ends the stream.
    async fn finish<T: serde::Serialize>(&self, line: &T) {
        self.put(Out::Last(self.encode(line))).await;
    }

    async fn put(&self, out: Out) -> bool {
        match self.tx.send_timeout(out, self.timeout).await {
            Ok(()) => true,
            Err(mpsc::error::SendTimeoutError::Timeout(_)) => {
                self.abandoned.inc();
                tracing::warn!("a stream's client stopped reading; stream abandoned");
                false
            }
            Err(mpsc::error::SendTimeoutError::Closed(_)) => false,
        }
    }
}

/// `POST /pii/extract/stream`.
#[utoipa::path(post, path = "/pii/extract/stream", request_body = ExtractStreamRequest, security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "NDJSON events: `emit`, `retract`, then `final` or `error`", body = String, content_type = "application/x-ndjson")))]
pub async fn pii_extract_stream(
    State(st): State<AppState>,
    held: Option<Extension<Arc<HeldAdmission>>>,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let (req, so) = parse::<ExtractStreamRequest>(&body, limits(&st))?.split();
    let started = std::time::Instant::now();
    let opts = crate::engine::CallOptions {
        terms: req.terms(),
        ..call_options(&st, req.fallback, req.keep_alive)
    };
    let cfg = StreamConfig {
        window_chars: so.window_chars,
        tokenizer_context_chars: so.tokenizer_context_chars,
        max_entity_chars: so.max_entity_chars,
    };
    let (commits, degraded, _) = detect_fragments(
        &st,
        req.model_name.as_deref(),
        &req.text,
        &opts,
        req.confidence_threshold as f32,
        cfg,
    )
    .await?;
    let (lines, pending) = Lines::new(&st, false);
    let held = held.map(|h| h.0);
    tokio::spawn(async move {
        let _held = held;
        let idx = CharIndex::new(&req.text);
        let mut final_spans = Vec::new();
        for commit in &commits {
            for s in &commit.spans {
                let id = entity_id(s.label.wire(), s.start);
                let etext = idx.slice(&req.text, s.start, s.end);
                let span = EmittedSpan {
                    id: id.clone(),
                    label: s.label.wire(),
                    score: round4(s.score),
                    start: s.start,
                    end: s.end,
                    byte_start: idx.byte(s.start),
                    byte_end: idx.byte(s.end),
                    text: so.include_text.then(|| etext.to_string()),
                    text_hash: None,
                };
                let audit_span = EmittedSpan {
                    text: None,
                    text_hash: Some(keyed_hash(&st, etext)),
                    ..span.clone()
                };
                let event = Emit {
                    audit: EmitAudit {
                        entity_id: id.clone(),
                        span: audit_span,
                        kind: "emit",
                    },
                    entity_id: id,
                    span,
                    kind: "emit",
                };
                if !lines.send(&event).await {
                    return;
                }
                final_spans.push(event.span);
            }
        }
        let fin = ExtractFinal {
            audit: ExtractFinalAudit {
                kind: "final",
                window_chars: so.window_chars,
            },
            latency_ms: started.elapsed().as_secs_f64() * 1000.0,
            kind: "final",
            window_chars: so.window_chars,
            final_spans,
            degraded: degraded.then_some(true),
        };
        lines.finish(&fin).await;
    });
    let mut resp = pending.respond().await?;
    mark_degraded(&mut resp, degraded);
    Ok(resp)
}

/// `POST /pii/deidentify/stream`.
#[utoipa::path(post, path = "/pii/deidentify/stream", request_body = DeidentifyStreamRequest, security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "NDJSON lines: `chunk`s, then `final` or `error`", body = String, content_type = "application/x-ndjson")))]
pub async fn pii_deidentify_stream(
    State(st): State<AppState>,
    held: Option<Extension<Arc<HeldAdmission>>>,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let req = parse::<DeidentifyStreamRequest>(&body, limits(&st))?.into_request();
    let opts = crate::engine::CallOptions {
        terms: req.terms(),
        ..call_options(&st, req.fallback, req.keep_alive)
    };
    let cfg = StreamConfig::default();
    let (commits, degraded, model_id) = detect_fragments(
        &st,
        req.model_name.as_deref(),
        &req.text,
        &opts,
        req.confidence_threshold as f32,
        cfg,
    )
    .await?;
    let (lines, pending) = Lines::new(&st, true);
    let held = held.map(|h| h.0);
    tokio::spawn(async move {
        let _held = held;
        let dopts = deid_options(&st, &req);
        let mut deid = Deidentifier::new(dopts, &st.hash_key, request_rng());
        let mut index = 0usize;
        let mut spans_out = Vec::new();
        let mut redacted_len = 0usize;
        let mut redacted_hasher = Sha256::new();
        let mut chunks = 0usize;
        for commit in &commits {
            let out = commit.redact(&mut deid);
            for r in &out.replacements {
                let (canonical, policy_label) = openmed_span_labels(r.span.label);
                spans_out.push(json!({
                    "schema_version": 1, "start": r.span.start, "end": r.span.end,
                    "text_hash": keyed_hash(&st, &r.original),
                    "entity_type": r.span.label.wire(), "canonical_label": canonical,
                    "policy_label": policy_label, "regulatory_tags": [],
                    "score": round4(r.span.score), "detector": r.span.source.wire(),
                    "evidence": {}, "action": openmed_span_action(r.action),
                    "replacement": r.replacement, "reversible_id": null, "section": null,
                    "metadata": {"phiguard_action": r.action.wire(),
                                 "phiguard_canonical_label": r.span.label.canonical()},
                }));
            }
            if !out.text.is_empty() {
                redacted_len += out.text.chars().count();
                redacted_hasher.update(out.text.as_bytes());
                let line = Chunk {
                    index,
                    redacted_text: out.text,
                    kind: "chunk",
                };
                index += 1;
                chunks += 1;
                if !lines.send(&line).await {
                    return;
                }
            }
        }
        let max_buffer = commits
            .iter()
            .map(|c| c.text.chars().count())
            .max()
            .unwrap_or(0);
        // As OpenMed: the document id is the input hash, and each span carries it.
        let doc_id = keyed_hash(&st, &req.text);
        for s in &mut spans_out {
            s["doc_id"] = json!(doc_id);
        }
        let redacted_hash = format!("sha256:{}", hex::encode(redacted_hasher.finalize()));
        let audit = json!({
            "doc_id": doc_id,
            "input_text_hash": doc_id,
            "language": req.lang.as_str(), "model_name": model_id,
            "normalized_length": req.text.chars().count(),
            "redacted_length": redacted_len,
            "redacted_text_hash": redacted_hash,
            "script": "latin",
            "span_count": spans_out.len(),
            "spans": spans_out,
            "stages": [{"stage": 10, "name": "emit", "span_count": spans_out.len(),
                "metadata": {"redacted_text_hash": redacted_hash, "audit_stage_count": 10}}],
            "stream": {"chunks": chunks, "max_buffer": 4096, "max_observed_buffer": max_buffer},
        });
        let mut fin = json!({"audit": audit, "spans": spans_out, "type": "final"});
        if degraded {
            fin["degraded"] = json!(true);
        }
        if deid.keeps_mapping() && !deid.mapping().is_empty() {
            let m: serde_json::Map<String, Value> = deid
                .mapping()
                .iter()
                .map(|(r, o)| (r.clone(), json!(o)))
                .collect();
            fin["mapping"] = Value::Object(m);
        }
        lines.finish(&fin).await;
    });
    let mut resp = pending.respond().await?;
    mark_degraded(&mut resp, degraded);
    Ok(resp)
}
