//! `POST /fhir/deidentify` and its FHIR operation name `POST /fhir/$de-identify`: a FHIR R4
//! resource, a `Bundle` or NDJSON in, the same shape out ([`crate::fhir`] does the work).
//!
//! The body is the resource itself (`application/fhir+json`, `application/json`) or one
//! resource per line (`application/fhir+ndjson`, `application/x-ndjson`), with the options
//! in the query string (`profile`, `model_name`, `date_shift_days`); or a `Parameters`
//! resource whose parameters are `resource`, `profile`, `subject`, `dateShiftDays` and
//! `model`. The subject is read only from the body, so it never stands in a URL that
//! proxies log. All free text of a document goes to the engine as one call through the
//! guard (each text read on its own, then names swept across them), so a document is
//! admitted, limited, deadlined and failed fast like one `/pii/deidentify` request.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::error::{ApiError, FieldProblem};
use super::middleware::Body;
use super::pii::{call_options, detect_document};
use super::state::AppState;
use crate::engine::{CallOptions, Texts};
use crate::fhir::{Document, FhirError, Format, Limits, Options, Profile};

/// A problem with the request, as the error envelope's `details` list it.
fn invalid(field: &str, message: impl Into<String>, kind: &str) -> ApiError {
    ApiError::Validation(vec![FieldProblem::new(field, message, kind)])
}

impl From<FhirError> for ApiError {
    fn from(e: FhirError) -> ApiError {
        let kind = match e {
            FhirError::NotJson { .. } => "json_invalid",
            FhirError::TooManyResources { .. } | FhirError::TooDeep { .. } => "too_large",
            FhirError::NotAResource { .. } | FhirError::Empty => "fhir_resource_invalid",
        };
        invalid("body", e.to_string(), kind)
    }
}

/// The options of one request.
struct Request {
    body: String,
    format: Format,
    /// The profile the request names (else the settings' `fhir.profile`).
    profile: Option<Profile>,
    model: Option<String>,
    subject: Option<String>,
    date_shift_days: Option<i64>,
}

fn profile(name: &str) -> Result<Profile, ApiError> {
    Profile::parse(name).ok_or_else(|| {
        invalid(
            "profile",
            format!("Input should be one of: {}", Profile::NAMES.join(", ")),
            "enum",
        )
    })
}

fn shift_days(v: i64) -> Result<i64, ApiError> {
    if crate::deid::usable_shift_days(v) {
        Ok(v)
    } else {
        Err(invalid(
            "date_shift_days",
            format!(
                "Input should be a non-zero number of days from -{max} to {max}",
                max = crate::deid::MAX_SHIFT_DAYS
            ),
            "value_error",
        ))
    }
}

/// NDJSON when the body is declared so.
fn format_of(headers: &HeaderMap) -> Format {
    let essence = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match essence.as_str() {
        "application/fhir+ndjson" | "application/x-ndjson" | "application/ndjson" => Format::Ndjson,
        _ => Format::Json,
    }
}

impl Request {
    fn read(headers: &HeaderMap, query: Option<&str>, body: &[u8]) -> Result<Request, ApiError> {
        let body = std::str::from_utf8(body)
            .map_err(|_| invalid("body", "Body is not valid UTF-8", "json_invalid"))?;
        let mut req = Request {
            body: body.to_owned(),
            format: format_of(headers),
            profile: None,
            model: None,
            subject: None,
            date_shift_days: None,
        };
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            match k.as_ref() {
                "profile" | "policy" => req.profile = Some(profile(&v)?),
                "model_name" | "model" => req.model = Some(v.into_owned()),
                "date_shift_days" => {
                    let n = v.parse::<i64>().map_err(|_| {
                        invalid(
                            "date_shift_days",
                            "Input should be an integer",
                            "int_parsing",
                        )
                    })?;
                    req.date_shift_days = Some(shift_days(n)?);
                }
                _ => {
                    return Err(invalid(
                        "query",
                        "Unknown query parameter; known: profile, model_name, date_shift_days",
                        "extra_forbidden",
                    ))
                }
            }
        }
        if req.format == Format::Json {
            req.unwrap_parameters()?;
        }
        Ok(req)
    }

    /// A `Parameters` body: the resource and the options it carries.
    fn unwrap_parameters(&mut self) -> Result<(), ApiError> {
        let Ok(v) = serde_json::from_str::<Value>(&self.body) else {
            return Ok(()); // reported by the document reader, with its position
        };
        if v.get("resourceType").and_then(Value::as_str) != Some("Parameters") {
            return Ok(());
        }
        let mut resource = None;
        for p in v
            .get("parameter")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = p.get("name").and_then(Value::as_str).unwrap_or("");
            let text = ["valueString", "valueCode", "valueId"]
                .iter()
                .find_map(|k| p.get(*k).and_then(Value::as_str));
            match name {
                "resource" => resource = p.get("resource").cloned(),
                "profile" | "policy" => {
                    req_text(text, name)?;
                    self.profile = Some(profile(text.unwrap_or(""))?);
                }
                "subject" => self.subject = Some(req_text(text, name)?.to_owned()),
                "model" | "model_name" => self.model = Some(req_text(text, name)?.to_owned()),
                "dateShiftDays" | "date_shift_days" => {
                    let n = p
                        .get("valueInteger")
                        .and_then(Value::as_i64)
                        .ok_or_else(|| {
                            invalid(
                                "parameter.dateShiftDays",
                                "Expected valueInteger",
                                "int_type",
                            )
                        })?;
                    self.date_shift_days = Some(shift_days(n)?);
                }
                _ => return Err(invalid(
                    "parameter",
                    "Unknown parameter; known: resource, profile, subject, dateShiftDays, model",
                    "extra_forbidden",
                )),
            }
        }
        let resource = resource.ok_or_else(|| {
            invalid(
                "parameter.resource",
                "A Parameters body needs a parameter named resource",
                "missing",
            )
        })?;
        self.body = resource.to_string();
        Ok(())
    }
}

fn req_text<'a>(text: Option<&'a str>, name: &str) -> Result<&'a str, ApiError> {
    text.ok_or_else(|| {
        invalid(
            &format!("parameter.{name}"),
            "Expected valueString or valueCode",
            "string_type",
        )
    })
}

/// The entity threshold free text uses (the `/pii/deidentify` default).
const THRESHOLD: f32 = 0.5;

async fn run(
    st: &AppState,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
) -> Result<Response, ApiError> {
    let req = Request::read(headers, query, body)?;
    let mut doc = Document::parse(&req.body, req.format, Limits::default())?;
    // The settings were checked when they were loaded or changed: their actions apply.
    let profile = st
        .settings()
        .fhir_profile(req.profile)
        .map_err(|_| ApiError::Internal)?;
    let texts = doc.texts(&profile);
    // One guarded call for the document; each text is read on its own, then names found
    // in one are swept across the others.
    let shared: Texts = texts.iter().map(|t| Arc::from(t.text.as_str())).collect();
    let opts: CallOptions = call_options(st, None, None);
    let labels: Vec<bool> = texts.iter().map(|t| t.label).collect();
    let det = detect_document(st, req.model.as_deref(), shared, &labels, &opts, THRESHOLD).await?;
    let (spans, degraded) = (det.spans, det.degraded);
    let options = Options {
        profile,
        subject: req.subject.as_deref().map(|s| st.hash_key.subject(s)),
        date_shift_days: req.date_shift_days,
        reference_year: None,
        // A request is a document: its ids are re-pointed under a key of its own.
        id_key: None,
    };
    let stats = doc.deidentify(&texts, &spans, &st.hash_key, &options);
    let content_type = match doc.format() {
        Format::Json => "application/fhir+json",
        Format::Ndjson => "application/fhir+ndjson",
    };
    let mut resp = (StatusCode::OK, doc.write()).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    let summary = format!(
        "profile={}; resources={}; texts={}; entities={}; elements={}; patients={}",
        options.profile.name,
        stats.resources,
        stats.texts,
        stats.text_entities,
        stats.elements,
        stats.patients
    );
    if let Ok(v) = HeaderValue::from_str(&summary) {
        h.insert("x-phiguard-deid", v);
    }
    if degraded {
        h.insert("x-phiguard-degraded", HeaderValue::from_static("rules"));
    }
    Ok(resp)
}

/// `POST /fhir/deidentify`.
#[utoipa::path(post, path = "/fhir/deidentify", tag = "fhir", request_body(content = Object, description = "a FHIR R4 resource or Bundle (application/fhir+json), NDJSON of resources (application/fhir+ndjson), or a Parameters resource with `resource`, `profile`, `subject`, `dateShiftDays`, `model`", content_type = "application/fhir+json"), params(("profile" = Option<String>, Query, description = "hipaa_safe_harbor (default) or pseudonymize"), ("model_name" = Option<String>, Query, description = "the model for free text (default: the configured one)"), ("date_shift_days" = Option<i64>, Query, description = "one fixed date offset instead of each patient's own")), security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "the same resource, Bundle or NDJSON, de-identified; `x-phiguard-deid` counts what was done", body = Object, content_type = "application/fhir+json"), (status = 422, description = "not FHIR JSON, too many resources or too deep (`validation_error`)", body = super::error::ErrorEnvelope), (status = 503, description = "the model is failing (breaker open); retry after `Retry-After`", body = super::error::ErrorEnvelope)))]
pub async fn fhir_deidentify(
    State(st): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    Body(body): Body,
) -> Result<Response, ApiError> {
    run(&st, &headers, query.as_deref(), &body).await
}

/// `POST /fhir/$de-identify`: the same as [`fhir_deidentify`], under a FHIR operation name.
#[utoipa::path(post, path = "/fhir/$de-identify", tag = "fhir", request_body(content = Object, description = "as /fhir/deidentify", content_type = "application/fhir+json"), security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "as /fhir/deidentify", body = Object, content_type = "application/fhir+json"), (status = 422, description = "as /fhir/deidentify", body = super::error::ErrorEnvelope)))]
pub async fn fhir_deidentify_operation(
    State(st): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    Body(body): Body,
) -> Result<Response, ApiError> {
    run(&st, &headers, query.as_deref(), &body).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameters_body_gives_its_resource_and_options() {
        let body = serde_json::json!({"resourceType": "Parameters", "parameter": [
            {"name": "resource", "resource": {"resourceType": "Patient", "id": "1"}},
            {"name": "profile", "valueCode": "pseudonymize"},
            {"name": "subject", "valueString": "s-1"},
            {"name": "dateShiftDays", "valueInteger": 12}
        ]})
        .to_string();
        let req = Request::read(&HeaderMap::new(), None, body.as_bytes()).expect("reads");
        assert_eq!(req.profile, Some(Profile::pseudonymize()));
        assert_eq!(req.subject.as_deref(), Some("s-1"));
        assert_eq!(req.date_shift_days, Some(12));
        assert!(req.body.contains("\"Patient\""));
        let bad = Request::read(&HeaderMap::new(), Some("profile=nope"), b"{}");
        assert!(bad.is_err());
        let bad = Request::read(&HeaderMap::new(), Some("subject=x"), b"{}");
        assert!(bad.is_err());
    }
}
