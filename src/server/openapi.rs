//! `GET /openapi.json`: the OpenAPI 3.1 document of everything served, generated from the
//! handler annotations, the wire schemas below, and one modifier that adds the error
//! responses.
//!
//! Why separate wire schemas: the parsed request types in `api.rs` hold what a handler needs
//! (durations, a resolved method), not what a client sends (every field optional with its
//! default, `shift_dates`, streaming knobs). A document derived from them told clients that
//! defaulted fields were required and said nothing of ranges, choices or unknown fields, so
//! a generated client or a fuzzer sent bodies the server then rejected. The schemas here
//! mirror the parser field for field, and a unit test checks the two agree.
//!
//! Why a modifier for errors: every route shares the same few failure modes (`docs/errors.md`), decided
//! by the layer stack rather than the handler. Listing them once, by route class, keeps each
//! operation's documented statuses equal to what the stack can answer.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::response::{Response as DocResponse, ResponseBuilder};
use utoipa::openapi::schema::{Object, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::{Content, HeaderBuilder, RefOr};
use utoipa::{OpenApi, PartialSchema, ToSchema};

/// The operations of a path item this server can answer (GET, POST, PUT, DELETE).
fn operations_mut(
    item: &mut utoipa::openapi::path::PathItem,
) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.post,
        &mut item.put,
        &mut item.delete,
    ]
    .into_iter()
    .flatten()
}
use super::state::AppState;

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(title = "phiguard", description = "Local-first clinical de-identification service (OpenMed 3.1 compatible)"),
    components(schemas(
        super::error::ErrorEnvelope, super::error::ErrorBody, SettingsPatch, super::admin::AuditList, super::audit::AuditRecord,
        super::admin::Status, super::admin::BreakerStatus, super::admin::BreakerStateName,
        super::admin::AdmissionStatus, super::admin::QueueDepth, super::admin::Totals,
        super::admin::ClusterStatus, super::admin::TrayState, super::state::Phase,
        crate::cluster::ClusterMode, crate::cluster::ClusterStats, super::admin::TokenList,
        crate::secrets::TokenInfo, crate::secrets::Scope, super::models_api::ModelsList,
        super::models_api::InstalledModel, super::models_api::CatalogModel,
        crate::models::DownloadInfo, crate::models::DownloadState,
        crate::models::ModelSource, super::models_api::PullStarted,
        super::models_api::ModelVerification, super::models_api::DefaultModel,
        super::admin::SettingsList, super::admin::SettingInfo, crate::settings::SettingSource,
        super::admin::BreakerEvent,
    )),
    modifiers(&Security),
)]
pub struct ApiDoc;

/// Body of `PUT /admin/settings`: setting keys (as `GET /admin/settings` lists them) mapped
/// to new values; every change is validated before any is applied, and a 422 names each bad
/// key. Lists may be sent as arrays or comma-separated strings; `null` resets to the default.
pub struct SettingsPatch;

impl PartialSchema for SettingsPatch {
    fn schema() -> RefOr<Schema> {
        let value = OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::String))
            .item(ObjectBuilder::new().schema_type(Type::Number))
            .item(ObjectBuilder::new().schema_type(Type::Boolean))
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .item(
                utoipa::openapi::schema::ArrayBuilder::new()
                    .items(ObjectBuilder::new().schema_type(Type::String)),
            );
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some("setting key → new value"))
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::RefOr(
                RefOr::T(Schema::OneOf(value.build())),
            )))
            .into()
    }
}

impl ToSchema for SettingsPatch {}

/// Names the operation groups for people, by path: the routes carry no tags of their own
/// (the admin ones aside), and untagged operations would sit under one nameless heading in
/// `/docs`.
struct Tags;

/// A group: tag, description, and whether a path belongs (the first that matches wins).
type Group = (&'static str, &'static str, fn(&str) -> bool);

const GROUPS: &[Group] = &[
    (
        "pii",
        "OpenMed-compatible detection and de-identification",
        |p| p.starts_with("/pii/") || p == "/analyze",
    ),
    (
        "fhir",
        "FHIR R4 resources, Bundles and NDJSON de-identified in their own shape",
        |p| p.starts_with("/fhir/"),
    ),
    ("admin", "the admin API (admin token)", |p| {
        p.starts_with("/admin/")
    }),
    (
        "front door",
        "the landing page and this reference (open)",
        |p| p == "/" || p == "/docs",
    ),
    (
        "service",
        "health, readiness, metrics and loaded models",
        |_| true,
    ),
];

impl utoipa::Modify for Tags {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::tag::TagBuilder;
        for (path, item) in openapi.paths.paths.iter_mut() {
            let Some((tag, _, _)) = GROUPS.iter().find(|(_, _, member)| member(path)) else {
                continue;
            };
            for op in operations_mut(item) {
                op.tags = Some(vec![(*tag).to_string()]);
            }
        }
        openapi.tags = Some(
            GROUPS
                .iter()
                .map(|(name, what, _)| {
                    TagBuilder::new()
                        .name(*name)
                        .description(Some(*what))
                        .build()
                })
                .collect(),
        );
    }
}

struct Security;

impl utoipa::Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{
            ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme,
        };
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))),
        );
    }
}

/// Adds the stack's error responses to every operation, by route class (`docs/errors.md`):
/// the model routes (behind admission), the open routes (no token, as the auth check
/// decides), the rest.
struct ErrorResponses<'a> {
    model_paths: &'a [String],
}

fn error_response(description: &str, headers: &[(&str, &str)]) -> DocResponse {
    let mut b = ResponseBuilder::new().description(description).content(
        "application/json",
        Content::new(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
            "ErrorEnvelope",
        )))),
    );
    for (name, what) in headers {
        let schema: Object = ObjectBuilder::new().schema_type(Type::String).build();
        b = b.header(
            *name,
            HeaderBuilder::new()
                .schema(schema)
                .description(Some(*what))
                .build(),
        );
    }
    b.build()
}

const RETRY_AFTER: (&str, &str) = ("Retry-After", "whole seconds to wait, at least 1");
const WWW_AUTH: (&str, &str) = ("WWW-Authenticate", "the accepted schemes");

fn add(op: &mut Operation, status: &str, description: &str, headers: &[(&str, &str)]) {
    op.responses
        .responses
        .entry(status.to_string())
        .or_insert_with(|| RefOr::T(error_response(description, headers)));
}

impl utoipa::Modify for ErrorResponses<'_> {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            let model = self.model_paths.contains(path);
            let open = super::middleware::required_scope(path).is_none();
            let admin = path.starts_with("/admin/");
            let ops = [
                (&mut item.get, false),
                (&mut item.post, true),
                (&mut item.put, true),
                (&mut item.delete, true),
            ];
            for (op, changes) in ops
                .into_iter()
                .filter_map(|(op, changes)| op.as_mut().map(|op| (op, changes)))
            {
                let has_body = op.request_body.is_some();
                add(
                    op,
                    "400",
                    "bad Host header, bad priority header or bad request metadata",
                    &[],
                );
                add(
                    op,
                    "500",
                    "internal error (a failure that is not the client's)",
                    &[],
                );
                if !open {
                    add(
                        op,
                        "401",
                        "no or bad token (`authentication_required`, `invalid_credentials`)",
                        &[WWW_AUTH],
                    );
                    // Every authenticated route: too many failed authentications from the
                    // caller's address (`details.key` `auth`); model routes also meet the
                    // request rate limits.
                    add(
                        op,
                        "429",
                        if model {
                            "rate limited (`rate_limited`): a request rate limit, or too many failed authentications from this address"
                        } else {
                            "too many failed authentications from this address (`rate_limited`, `details.key` `auth`)"
                        },
                        &[RETRY_AFTER],
                    );
                }
                let forbidden = if admin {
                    "a client token on an admin route (`forbidden`), or a browser `Origin` that is not allowed (`origin_not_allowed`)"
                } else {
                    "a browser `Origin` that is not allowed (`origin_not_allowed`)"
                };
                add(op, "403", forbidden, &[]);
                if changes {
                    add(
                        op,
                        "415",
                        "a body not declared JSON (`unsupported_media_type`)",
                        &[],
                    );
                }
                if has_body {
                    add(
                        op,
                        "408",
                        "the body did not arrive within `server.body_timeout_seconds` (`request_timeout`)",
                        &[],
                    );
                }
                if has_body {
                    add(
                        op,
                        "413",
                        "body over `limits.max_request_bytes` (`payload_too_large`)",
                        &[],
                    );
                    add(
                        op,
                        "422",
                        "invalid body or field, unknown field, model not served",
                        &[],
                    );
                }
                if model {
                    add(op, "429", "rate limited (`rate_limited`)", &[RETRY_AFTER]);
                    add(
                        op,
                        "503",
                        "breaker open, backpressure, bulkhead full, or not ready",
                        &[RETRY_AFTER],
                    );
                    add(op, "504", "request deadline passed (`timeout`)", &[]);
                    op.parameters.get_or_insert_with(Vec::new).push(
                        ParameterBuilder::new()
                            .name("X-OpenMed-Priority")
                            .parameter_in(ParameterIn::Header)
                            .description(Some("`interactive` (default, also when empty) or `bulk`, and OpenMed's synonyms (case-insensitive, `_` as `-`); other values → 400"))
                            .schema(Some(
                                ObjectBuilder::new().schema_type(Type::String).enum_values(Some([
                                    "", "interactive", "high", "latency", "realtime", "real-time", "foreground",
                                    "normal", "bulk", "batch", "background", "low",
                                ])),
                            ))
                            .build(),
                    );
                }
            }
        }
    }
}

fn set_enum(schema: &mut RefOr<Schema>, field: &str, choices: &[&str]) {
    let RefOr::T(Schema::Object(obj)) = schema else {
        return;
    };
    if let Some(RefOr::T(Schema::Object(prop))) = obj.properties.get_mut(field) {
        let mut values: Vec<Value> = choices.iter().map(|c| Value::from(*c)).collect();
        values.push(Value::Null);
        prop.enum_values = Some(values);
    }
}

/// Finishes the document the router assembled: tags, the stack's error responses, and
/// axum's catch-all segments (`{*id}`) written as OpenAPI path parameters (`{id}`).
pub fn finish(doc: &mut utoipa::openapi::OpenApi, model_paths: &[String]) {
    use utoipa::Modify;
    ErrorResponses { model_paths }.modify(doc);
    Tags.modify(doc);
    let paths = std::mem::take(&mut doc.paths.paths);
    doc.paths.paths = paths
        .into_iter()
        .map(|(path, item)| (path.replace("{*", "{"), item))
        .collect();
}

/// The document for a server whose served set is `served`: `model_name` lists exactly the
/// names it accepts at this moment (any other name is a 422 `model_not_served`), and the
/// cross-field rules the parser applies are stated in JSON Schema (utoipa's derive has no
/// words for them).
pub fn document(base: &utoipa::openapi::OpenApi, served: &[String]) -> Value {
    let mut doc = base.clone();
    let names: Vec<&str> = served.iter().map(String::as_str).collect();
    if let Some(components) = doc.components.as_mut() {
        for schema in components.schemas.values_mut() {
            set_enum(schema, "model_name", &names);
        }
    }
    let mut doc = serde_json::to_value(doc).unwrap_or(Value::Null);
    let schemas = &mut doc["components"]["schemas"];
    for name in ["DeidentifyRequest", "DeidentifyStreamRequest"] {
        let Some(obj) = schemas[name].as_object_mut() else {
            continue;
        };
        // `date_shift_days` needs the effective method `shift_dates`; `shift_dates=false`
        // conflicts with `method=shift_dates`.
        obj.insert(
            "if".into(),
            serde_json::json!({"properties": {"date_shift_days": {"type": "integer"}}, "required": ["date_shift_days"]}),
        );
        obj.insert(
            "then".into(),
            serde_json::json!({"anyOf": [
                {"properties": {"method": {"const": "shift_dates"}}, "required": ["method"]},
                {"properties": {"shift_dates": {"const": true}}, "required": ["shift_dates"]}]}),
        );
        obj.insert(
            "not".into(),
            serde_json::json!({"properties": {"method": {"const": "shift_dates"}, "shift_dates": {"const": false}},
                "required": ["method", "shift_dates"]}),
        );
    }
    if let Some(obj) = schemas["UnloadRequest"].as_object_mut() {
        // `model_name` is required unless `all` is true.
        obj.insert(
            "anyOf".into(),
            serde_json::json!([
                {"properties": {"model_name": {"type": "string"}}, "required": ["model_name"]},
                {"properties": {"all": {"const": true}}, "required": ["all"]}]),
        );
    }
    doc
}

/// `GET /openapi.json`.
pub async fn openapi_json(
    State(st): State<AppState>,
    base: std::sync::Arc<utoipa::openapi::OpenApi>,
) -> Response {
    axum::Json(document(&base, &st.engine.served_names())).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::api::{
        AnalyzeRequest, DeidentifyRequest, DeidentifyStreamRequest, ExtractRequest,
        ExtractStreamRequest, ReidentifyRequest, UnloadRequest,
    };
    use crate::server::validate::LANGS;
    use crate::server::validate::{parse_map, Body, TextLimits};
    use serde_json::{json, Map};

    const LIMITS: TextLimits = TextLimits {
        max_chars: 1_000_000,
        max_bytes: 4_000_000,
    };

    fn properties(name: &str) -> Vec<String> {
        let doc = serde_json::to_value(crate::server::router::api_doc()).expect("serialises");
        let props = &doc["components"]["schemas"][name]["properties"];
        props
            .as_object()
            .expect("properties")
            .keys()
            .cloned()
            .collect()
    }

    /// A valid value for each documented property, so a body with every field parses.
    fn sample(field: &str) -> Value {
        match field {
            "text" => json!("Call John at 555-123-4567"),
            "lang" => json!("en"),
            "method" => json!("shift_dates"),
            "fallback" => json!("rules"),
            "aggregation_strategy" => json!("first"),
            "keep_alive" => json!("5m"),
            "date_shift_days" => json!(3),
            "shift_dates" => json!(true),
            "confidence_threshold" => json!(0.5),
            "model_name" | "policy" | "sentence_language" => Value::Null,
            "subject" => json!("study-1/p1"),
            "sealed_mapping" => json!("phiguard-sealed-v1:AAAA"),
            "allow" | "deny" => json!(["Keppra", "/Site [A-Z]/"]),
            "chunk_size" | "window_chars" | "tokenizer_context_chars" | "max_entity_chars" => {
                json!(512)
            }
            _ => json!(true),
        }
    }

    fn full_body(schema: &str) -> Map<String, Value> {
        properties(schema)
            .iter()
            .map(|p| (p.clone(), sample(p)))
            .collect()
    }

    fn accepts<T: Body>(schema: &str) {
        if let Err(e) = parse_map::<T>(&full_body(schema), LIMITS) {
            panic!("{schema}: {}", e.body(None));
        }
    }

    #[test]
    fn every_documented_field_is_accepted_by_the_parser() {
        accepts::<ExtractRequest>("ExtractRequest");
        accepts::<ExtractStreamRequest>("ExtractStreamRequest");
        accepts::<DeidentifyRequest>("DeidentifyRequest");
        accepts::<DeidentifyStreamRequest>("DeidentifyStreamRequest");
        accepts::<AnalyzeRequest>("AnalyzeRequest");
        accepts::<UnloadRequest>("UnloadRequest");
        accepts::<ReidentifyRequest>("ReidentifyRequest");
    }

    #[test]
    fn an_undocumented_field_is_rejected_by_the_parser() {
        let mut body = full_body("DeidentifyRequest");
        body.insert("chunk_size".into(), json!(10));
        assert!(parse_map::<DeidentifyRequest>(&body, LIMITS).is_err());
        let map: Map<String, Value> =
            serde_json::from_str(r#"{"text":"x","window_chars":64}"#).expect("object");
        assert!(parse_map::<ExtractRequest>(&map, LIMITS).is_err());
    }

    #[test]
    fn request_bodies_forbid_unknown_fields_and_require_only_text() {
        let doc = serde_json::to_value(crate::server::router::api_doc()).expect("serialises");
        for name in [
            "ExtractRequest",
            "ExtractStreamRequest",
            "DeidentifyRequest",
            "DeidentifyStreamRequest",
            "AnalyzeRequest",
        ] {
            let s = &doc["components"]["schemas"][name];
            assert_eq!(s["additionalProperties"], json!(false), "{name}");
            assert_eq!(s["required"], json!(["text"]), "{name}");
        }
        let langs = &doc["components"]["schemas"]["ExtractRequest"]["properties"]["lang"]["oneOf"]
            [0]["enum"];
        assert_eq!(langs.as_array().map(Vec::len), Some(LANGS.len()));
    }

    #[test]
    fn model_name_lists_the_served_set() {
        let doc = document(
            &crate::server::router::api_doc(),
            &["a".into(), "b/c".into()],
        );
        for name in [
            "ExtractRequest",
            "DeidentifyStreamRequest",
            "AnalyzeRequest",
            "UnloadRequest",
        ] {
            let names = &doc["components"]["schemas"][name]["properties"]["model_name"]["enum"];
            assert_eq!(names, &json!(["a", "b/c", null]), "{name}");
        }
    }

    #[test]
    fn model_routes_document_the_stack_errors() {
        let doc = serde_json::to_value(crate::server::router::api_doc()).expect("serialises");
        let responses = &doc["paths"]["/pii/deidentify"]["post"]["responses"];
        for status in [
            "200", "400", "401", "403", "408", "413", "415", "422", "429", "500", "503", "504",
        ] {
            assert!(responses.get(status).is_some(), "missing {status}");
        }
        assert!(responses["503"]["headers"].get("Retry-After").is_some());
        for open in ["/health", "/", "/docs"] {
            let responses = &doc["paths"][open]["get"]["responses"];
            assert!(responses.get("200").is_some(), "{open} is not documented");
            assert!(responses.get("401").is_none(), "{open} is open");
        }
    }

    #[test]
    fn operations_are_grouped_under_named_tags() {
        let doc = serde_json::to_value(crate::server::router::api_doc()).expect("serialises");
        let named: Vec<&str> = doc["tags"]
            .as_array()
            .expect("tags")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for (method, op) in item.as_object().expect("item") {
                for tag in op["tags"].as_array().expect("tags") {
                    let tag = tag.as_str().unwrap_or("");
                    assert!(named.contains(&tag), "{method} {path}: tag {tag}");
                }
            }
        }
    }

    #[test]
    fn admin_routes_are_documented_with_their_scope_error() {
        let doc = serde_json::to_value(crate::server::router::api_doc()).expect("serialises");
        for (path, method) in [
            ("/admin/status", "get"),
            ("/admin/settings", "get"),
            ("/admin/settings", "put"),
            ("/admin/breakers/{key}/{action}", "post"),
            ("/admin/tokens", "get"),
            ("/admin/tokens", "post"),
            ("/admin/tokens/{id}", "delete"),
            ("/admin/events", "get"),
            ("/admin/eval", "post"),
            ("/admin/models", "get"),
            ("/admin/models/pull", "post"),
            ("/admin/models/pull/{id}", "delete"),
            ("/admin/models/verify", "post"),
            ("/admin/models/default", "post"),
            ("/admin/models/{id}", "delete"),
            ("/admin/audit", "get"),
        ] {
            let op = &doc["paths"][path][method];
            assert!(op.is_object(), "{method} {path} is not documented");
            for status in ["401", "403", "429"] {
                assert!(
                    op["responses"].get(status).is_some(),
                    "{method} {path} lacks {status}"
                );
            }
        }
        let put = &doc["paths"]["/admin/settings"]["put"]["responses"];
        assert!(put.get("422").is_some() && put.get("413").is_some());
    }
}
