//! `GET /openapi.json`: the OpenAPI 3.1 document of everything served, generated from the
//! handler annotations and request types by utoipa.

use axum::response::{IntoResponse, Response};
use utoipa::OpenApi;

use super::api::{AnalyzeRequest, DeidentifyRequest, ExtractRequest, StreamOptions, UnloadRequest};

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(title = "phiguard", description = "Local-first clinical de-identification service (OpenMed 3.1 compatible)"),
    paths(
        super::ops::health, super::ops::livez, super::ops::readyz, super::ops::metrics,
        super::ops::models_loaded, super::ops::models_unload,
        super::pii::pii_extract, super::pii::pii_deidentify, super::pii::analyze,
        super::stream::pii_extract_stream, super::stream::pii_deidentify_stream,
    ),
    components(schemas(ExtractRequest, DeidentifyRequest, AnalyzeRequest, UnloadRequest, StreamOptions, ErrorEnvelope, ErrorBody)),
    modifiers(&Security),
)]
pub struct ApiDoc;

/// The error envelope every error response uses.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct ErrorEnvelope {
    error: ErrorBody,
}

/// The body of the envelope.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct ErrorBody {
    code: String,
    message: String,
    details: Option<serde_json::Value>,
    request_id: Option<String>,
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

/// `GET /openapi.json`.
pub async fn openapi_json() -> Response {
    axum::Json(ApiDoc::openapi()).into_response()
}
