//! The admin API of the model store: list, pull with progress (events on the dashboard bus),
//! cancel, verify, delete, choose the default. Downloads run only when an admin asks. Pulls,
//! cancellations, deletions and default changes are audited (`audit.rs`) under the catalog
//! or installed id, never under a name that matched nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{json, Value};

use super::audit::{self, Action, Actor};
use super::error::{ApiError, FieldProblem};
use super::middleware::Body;
use super::state::AppState;
use super::validate::{parse_object, Fields};
use crate::engine::ModelSpec;
use crate::models::{CancellationToken, Catalog, Downloader, Store};
use crate::settings::keys;

/// One download as the dashboard shows it.
#[derive(Clone, Debug, Serialize)]
pub struct DownloadInfo {
    /// Catalog id.
    pub id: String,
    /// `running`, `done`, `failed`, `cancelled`.
    pub state: &'static str,
    /// Bytes fetched.
    pub bytes: u64,
    /// Bytes in all.
    pub total_bytes: u64,
    /// 0..100.
    pub percent: f64,
    #[serde(skip)]
    cancel: Option<CancellationToken>,
}

/// Downloads known to this process.
#[derive(Default)]
pub struct Downloads(Mutex<BTreeMap<String, DownloadInfo>>);

fn store(st: &AppState) -> Result<Store, ApiError> {
    Store::open(st.home.models_dir()).map_err(|e| {
        tracing::error!(error = %e, "model store unreadable");
        ApiError::Internal
    })
}

fn catalog() -> Result<Catalog, ApiError> {
    Catalog::from_env().map_err(|e| {
        tracing::error!(error = %e, "model catalog unreadable");
        ApiError::Internal
    })
}

fn id_field(body: &[u8]) -> Result<String, ApiError> {
    let map = parse_object(body)?;
    let mut f = Fields::new(&map);
    let id = f.opt_str("id");
    f.finish()?;
    id.filter(|s| !s.is_empty()).ok_or_else(|| {
        ApiError::Validation(vec![FieldProblem::new(
            "body.id",
            "Field required",
            "missing",
        )])
    })
}

/// `GET /admin/models`.
#[utoipa::path(get, path = "/admin/models", tag = "admin", security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "installed models, the catalog and running downloads", body = serde_json::Value)))]
pub async fn admin_models(State(st): State<AppState>) -> Result<Response, ApiError> {
    let st2 = st.clone();
    let (installed, catalog) = tokio::task::spawn_blocking(move || {
        let installed = store(&st2)?.installed().map_err(|_| ApiError::Internal)?;
        Ok::<_, ApiError>((installed, catalog()?))
    })
    .await
    .map_err(|_| ApiError::Internal)??;
    let ids: Vec<&str> = installed.iter().map(|m| m.id.as_str()).collect();
    let catalog_json: Vec<Value> = catalog
        .entries()
        .iter()
        .map(|e| {
            json!({"id": e.id, "aliases": e.aliases, "family": e.family, "params_millions": e.params_millions,
                   "size_bytes": e.approx_size_mb * 1_000_000, "labels": e.labels, "license": e.license,
                   "verified": e.verified, "installed": ids.contains(&e.id.as_str())})
        })
        .collect();
    // Installed folders are not shown: their absolute paths are the user's business.
    let installed_json: Vec<Value> = installed
        .iter()
        .map(|m| {
            json!({"id": m.id, "family": m.family, "size_bytes": m.size_bytes, "labels": m.labels,
                   "license": m.license, "source": m.source})
        })
        .collect();
    let downloads: Vec<DownloadInfo> = st.downloads.0.lock().values().cloned().collect();
    Ok(axum::Json(json!({
        "default": st.engine.default_model(),
        "installed": installed_json,
        "catalog": catalog_json,
        "downloads": downloads,
    }))
    .into_response())
}

/// `POST /admin/models/pull {"id"}` → 202; progress arrives as `download` events.
#[utoipa::path(post, path = "/admin/models/pull", tag = "admin", security(("bearer" = []), ("api_key" = [])), request_body(content = super::openapi::ModelIdBody, content_type = "application/json"), responses((status = 202, description = "download started; progress arrives as `download` events", body = serde_json::Value), (status = 409, description = "already downloading, or the entry is unpinned while models.require_pinned is on (`conflict`)", body = super::openapi::ErrorEnvelope)))]
pub async fn admin_models_pull(
    State(st): State<AppState>,
    actor: Actor,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let mut record = Action::new("model.pull");
    let outcome = models_pull(&st, &body, &mut record);
    audit::record(&st, &actor, record, &outcome).await;
    outcome
}

fn models_pull(st: &AppState, body: &[u8], record: &mut Action) -> Result<Response, ApiError> {
    let requested = id_field(body)?;
    let catalog = catalog()?;
    // Only catalog ids go further: a request-derived name never reaches a log or the disk.
    let Some(id) = catalog.resolve(&requested).map(str::to_string) else {
        return Err(ApiError::ModelNotServed {
            available: catalog.entries().iter().map(|e| e.id.clone()).collect(),
        });
    };
    record.target(id.clone());
    let require_pinned = st.settings().get(keys::MODELS_REQUIRE_PINNED);
    if require_pinned && catalog.get(&id).is_some_and(|e| !e.is_pinned()) {
        return Err(ApiError::Conflict {
            message: "This catalog entry is not pinned and models.require_pinned is on",
        });
    }
    let cancel = CancellationToken::new();
    {
        let mut d = st.downloads.0.lock();
        if d.get(&id).is_some_and(|x| x.state == "running") {
            return Err(ApiError::Conflict {
                message: "This model is already downloading",
            });
        }
        d.insert(
            id.clone(),
            DownloadInfo {
                id: id.clone(),
                state: "running",
                bytes: 0,
                total_bytes: 0,
                percent: 0.0,
                cancel: Some(cancel.clone()),
            },
        );
    }
    let downloader = Downloader::from_env(catalog)
        .map_err(|e| {
            tracing::error!(error = %e, "downloader unavailable");
            ApiError::Internal
        })?
        .with_require_pinned(require_pinned);
    let store = store(st)?;
    let st2 = st.clone();
    let id2 = id.clone();
    tokio::spawn(async move {
        let progress_st = st2.clone();
        let pid = id2.clone();
        let result = downloader
            .pull(
                &store,
                &id2,
                move |p| {
                    let info = {
                        let mut d = progress_st.downloads.0.lock();
                        let Some(e) = d.get_mut(&pid) else { return };
                        e.bytes = p.bytes;
                        e.total_bytes = p.total_bytes;
                        e.percent = if p.total_bytes > 0 {
                            (p.bytes as f64 * 100.0 / p.total_bytes as f64).min(100.0)
                        } else {
                            0.0
                        };
                        e.clone()
                    };
                    progress_st.publish(
                        "download",
                        serde_json::to_value(info).unwrap_or(Value::Null),
                    );
                },
                cancel.clone(),
            )
            .await;
        let state = match &result {
            Ok(m) => {
                st2.engine.install(ModelSpec {
                    id: m.id.clone(),
                    dir: Some(m.dir.clone()),
                    footprint_bytes: m.size_bytes,
                });
                "done"
            }
            Err(_) if cancel.is_cancelled() => "cancelled",
            Err(e) => {
                tracing::warn!(model = %id2, error = %e, "model download failed");
                "failed"
            }
        };
        let info = {
            let mut d = st2.downloads.0.lock();
            d.get_mut(&id2).map(|e| {
                e.state = state;
                if state == "done" {
                    e.percent = 100.0;
                    e.bytes = e.total_bytes.max(e.bytes);
                }
                e.cancel = None;
                e.clone()
            })
        };
        if let Some(info) = info {
            st2.publish(
                "download",
                serde_json::to_value(info).unwrap_or(Value::Null),
            );
        }
    });
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(json!({"id": id, "state": "running"})),
    )
        .into_response())
}

/// `DELETE /admin/models/pull/{id}` cancels a running download.
#[utoipa::path(delete, path = "/admin/models/pull/{id}", tag = "admin", security(("bearer" = []), ("api_key" = [])), params(("id" = String, Path, description = "catalog id; may contain `/`")), responses((status = 202, description = "cancelling"), (status = 404, description = "no such download", body = super::openapi::ErrorEnvelope)))]
pub async fn admin_models_cancel(
    State(st): State<AppState>,
    actor: Actor,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let mut record = Action::new("model.cancel");
    let cancel = st
        .downloads
        .0
        .lock()
        .get(&id)
        .and_then(|e| e.cancel.clone());
    let outcome = match cancel {
        Some(c) => {
            c.cancel();
            record.target(id);
            Ok(StatusCode::ACCEPTED.into_response())
        }
        None => Err(ApiError::NoSuchResource),
    };
    audit::record(&st, &actor, record, &outcome).await;
    outcome
}

/// `POST /admin/models/verify {"id"}`.
#[utoipa::path(post, path = "/admin/models/verify", tag = "admin", security(("bearer" = []), ("api_key" = [])), request_body(content = super::openapi::ModelIdBody, content_type = "application/json"), responses((status = 200, description = "`{\"id\", \"ok\"}`: whether every file matches its recorded digest", body = serde_json::Value), (status = 404, description = "no such model", body = super::openapi::ErrorEnvelope)))]
pub async fn admin_models_verify(
    State(st): State<AppState>,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let id = id_field(&body)?;
    let st2 = st.clone();
    let id2 = id.clone();
    let ok = tokio::task::spawn_blocking(move || {
        let store = store(&st2)?;
        if store.get(&id2).is_none() {
            return Err(ApiError::NoSuchResource);
        }
        store
            .verify(&id2)
            .map(|r| r.ok())
            .map_err(|_| ApiError::Internal)
    })
    .await
    .map_err(|_| ApiError::Internal)??;
    Ok(axum::Json(json!({"id": id, "ok": ok})).into_response())
}

/// `POST /admin/models/default {"id"}`: persists `models.default`.
#[utoipa::path(post, path = "/admin/models/default", tag = "admin", security(("bearer" = []), ("api_key" = [])), request_body(content = super::openapi::ModelIdBody, content_type = "application/json"), responses((status = 200, description = "the new default", body = serde_json::Value), (status = 404, description = "no such model", body = super::openapi::ErrorEnvelope)))]
pub async fn admin_models_default(
    State(st): State<AppState>,
    actor: Actor,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let mut record = Action::new("model.default");
    let outcome = models_default(&st, &body, &mut record);
    audit::record(&st, &actor, record, &outcome).await;
    outcome
}

fn models_default(st: &AppState, body: &[u8], record: &mut Action) -> Result<Response, ApiError> {
    let id = id_field(body)?;
    if !st.engine.is_installed(&id) {
        return Err(ApiError::NoSuchResource);
    }
    record.target(id.clone());
    let before = st.settings();
    let mut next = (*before).clone();
    next.apply(&[("models.default".into(), id.clone())])
        .map_err(|errs| {
            ApiError::Validation(
                errs.into_iter()
                    .map(|e| FieldProblem::new(e.field, e.message, "value_error"))
                    .collect(),
            )
        })?;
    next.persist().map_err(|_| ApiError::Internal)?;
    crate::runtime::apply_live(&st.engine, &next);
    *st.settings.write() = Arc::new(next);
    record.change(json!(before.get(keys::MODELS_DEFAULT)), json!(id));
    Ok(axum::Json(json!({"default": id})).into_response())
}

/// `DELETE /admin/models/{id}` (ids may contain `/`).
#[utoipa::path(delete, path = "/admin/models/{id}", tag = "admin", security(("bearer" = []), ("api_key" = [])), params(("id" = String, Path, description = "model id; may contain `/`")), responses((status = 204, description = "removed"), (status = 404, description = "no such model", body = super::openapi::ErrorEnvelope), (status = 409, description = "in use or not removable (`conflict`)", body = super::openapi::ErrorEnvelope)))]
pub async fn admin_models_delete(
    State(st): State<AppState>,
    actor: Actor,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let mut record = Action::new("model.delete");
    let outcome = models_delete(&st, id, &mut record).await;
    audit::record(&st, &actor, record, &outcome).await;
    outcome
}

async fn models_delete(
    st: &AppState,
    id: String,
    record: &mut Action,
) -> Result<Response, ApiError> {
    let st2 = st.clone();
    let id2 = id.clone();
    let removed = tokio::task::spawn_blocking(move || {
        let store = store(&st2)?;
        if store.get(&id2).is_none() {
            return Err(ApiError::NoSuchResource);
        }
        Ok(store.remove(&id2).map_err(|_| ApiError::Conflict {
            message: "This model cannot be removed (bundled or busy)",
        }))
    })
    .await
    .map_err(|_| ApiError::Internal)??;
    // Installed: from here on the id is a known one, refused or not.
    record.target(id.clone());
    removed?;
    st.engine.uninstall(&id);
    Ok(StatusCode::NO_CONTENT.into_response())
}
