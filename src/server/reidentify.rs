//! `POST /admin/reidentify`: the original text back from a de-identified one and the
//! `sealed_mapping` that `/pii/deidentify` returned with `seal_mapping` (see
//! [`crate::deid::seal`]).
//!
//! Admin scope only (the `/admin/` prefix), and audited: the record names the action and
//! how many replacements were restored, never the text, the seal or what it held.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::api::ReidentifyRequest;
use super::audit::{self, Action, Actor};
use super::error::{ApiError, FieldProblem};
use super::middleware::Body;
use super::state::AppState;
use super::validate::parse;
use crate::deid::SealError;

/// `POST /admin/reidentify`'s answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ReidentifyResponse {
    /// The text with the originals put back.
    pub text: String,
    /// Replacements put back.
    pub restored: usize,
    /// Replacements left as they were: a placeholder such as `[first_name]` that stood
    /// for several originals, in a text that is no longer the one sealed.
    pub unresolved: usize,
    /// True when `text` was exactly the de-identified text that was sealed: every
    /// replacement was restored at its own offsets.
    pub exact: bool,
}

/// `POST /admin/reidentify`.
#[utoipa::path(post, path = "/admin/reidentify", tag = "admin", security(("bearer" = []), ("api_key" = [])),
    request_body(content = ReidentifyRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "the original text restored from a sealed mapping (audited)", body = ReidentifyResponse),
        (status = 422, description = "a field is missing or invalid, or `sealed_mapping` was not made by this install or was changed (`validation_error`)", body = super::error::ErrorEnvelope),
    ))]
pub async fn admin_reidentify(
    State(st): State<AppState>,
    actor: Actor,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let mut record = Action::new("mapping.reidentify");
    let outcome = reidentify(&st, &body, &mut record);
    audit::record(&st, &actor, record, &outcome).await;
    outcome
}

fn reidentify(st: &AppState, body: &[u8], record: &mut Action) -> Result<Response, ApiError> {
    let req: ReidentifyRequest = parse(body, super::pii::limits(st))?;
    let restored = st
        .seal_key
        .restore(&req.text, &req.sealed_mapping)
        .map_err(|e| {
            let message = match e {
                SealError::Malformed => "Value error, not a sealed mapping",
                SealError::Forged => {
                    "Value error, the sealed mapping was not made by this install, or was changed"
                }
            };
            ApiError::Validation(vec![FieldProblem::new(
                "body.sealed_mapping",
                message,
                "value_error",
            )])
        })?;
    record.details(json!({
        "restored": restored.restored,
        "unresolved": restored.unresolved,
        "exact": restored.exact,
    }));
    Ok(axum::Json(ReidentifyResponse {
        text: restored.text,
        restored: restored.restored,
        unresolved: restored.unresolved,
        exact: restored.exact,
    })
    .into_response())
}
