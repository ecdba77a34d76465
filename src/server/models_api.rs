//! The admin API of the model store: list, pull with progress (events on the dashboard bus),
//! cancel, verify, delete, choose the default. Downloads run only when an admin asks. Pulls,
//! cancellations, deletions and default changes are audited (`audit.rs`) under the catalog
//! or installed id, never under a name that matched nothing.
//!
//! Pulls, their progress and their cancellation live in the process's
//! [`crate::models::DownloadManager`] (`AppState::downloads`), the one `phiguard models pull`
//! drives too; `Publisher` is what this side does with them (events, engine install).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::audit::{self, Action, Actor};
use super::error::{ApiError, FieldProblem};
use super::middleware::Body;
use super::state::AppState;
use super::validate::parse;
use crate::engine::ModelSpec;
#[cfg(test)]
use crate::models::CancellationToken;
use crate::models::{
    CancelError, Catalog, CatalogEntry, DownloadInfo, DownloadObserver, DownloadState, Downloader,
    Installed, ModelError, ModelSource, StartError, Store,
};
use crate::settings::keys;

/// `GET /admin/models`: the installed models, the catalog and this process's downloads.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ModelsList {
    /// The default model id.
    pub default: String,
    /// Models that can be loaded now.
    pub installed: Vec<InstalledModel>,
    /// Models that can be downloaded.
    pub catalog: Vec<CatalogModel>,
    /// Downloads known to this process, running or finished.
    pub downloads: Vec<DownloadInfo>,
}

/// An installed model (its folder is not shown: absolute paths are the user's business).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct InstalledModel {
    /// Model id.
    pub id: String,
    /// `model_type` of its `config.json`.
    pub family: String,
    /// Total size of its files.
    pub size_bytes: u64,
    /// Entity types from `id2label` (BIO prefixes removed).
    pub labels: Vec<String>,
    /// The phiguard labels those become (what the API answers), each once, in order.
    pub canonical_labels: Vec<String>,
    /// SPDX licence id; `null` when unknown.
    #[schema(required = true)]
    pub license: Option<String>,
    /// Where it came from.
    pub source: ModelSource,
}

impl From<&Installed> for InstalledModel {
    fn from(m: &Installed) -> Self {
        InstalledModel {
            id: m.id.clone(),
            family: m.family.clone(),
            size_bytes: m.size_bytes,
            labels: m.labels.clone(),
            canonical_labels: {
                let mut seen = Vec::new();
                for l in &m.labels {
                    let c = crate::inference::labels::canonical_label(l)
                        .canonical()
                        .to_string();
                    if !seen.contains(&c) {
                        seen.push(c);
                    }
                }
                seen
            },
            license: m.license.clone(),
            source: m.source,
        }
    }
}

/// A catalog entry as the dashboard lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CatalogModel {
    /// Catalog id.
    pub id: String,
    /// Other names that resolve to it.
    pub aliases: Vec<String>,
    /// `model_type` of its `config.json` (`bert`, `deberta-v2`, …).
    pub family: String,
    /// Parameter count in millions, as the model's name gives it.
    pub params_millions: u32,
    /// Approximate download size.
    pub size_bytes: u64,
    /// Canonical (UPPER_SNAKE) labels the model emits.
    pub labels: Vec<String>,
    /// SPDX licence id.
    pub license: String,
    /// True when the repository id was checked against the hub's listing.
    pub verified: bool,
    /// Installed in the model store.
    pub installed: bool,
}

impl CatalogModel {
    fn new(e: &CatalogEntry, installed: bool) -> Self {
        CatalogModel {
            id: e.id.clone(),
            aliases: e.aliases.clone(),
            family: e.family.clone(),
            params_millions: e.params_millions,
            size_bytes: e.approx_size_mb * 1_000_000,
            labels: e.labels.clone(),
            license: e.license.clone(),
            verified: e.verified,
            installed,
        }
    }
}

/// `POST /admin/models/pull`'s 202: the download started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PullStarted {
    /// Catalog id (the one the requested name resolved to).
    pub id: String,
    /// Always `running`.
    pub state: DownloadState,
}

/// `POST /admin/models/verify`'s answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ModelVerification {
    /// Model id.
    pub id: String,
    /// Whether every file matches its recorded digest.
    pub ok: bool,
    /// Each recorded file and what was found, as `phiguard models verify` lists them.
    pub files: Vec<VerifiedFile>,
}

/// One file of a [`ModelVerification`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct VerifiedFile {
    /// The file's name in the model folder (`model.safetensors`).
    pub name: String,
    /// `ok`, `changed` (its digest is not the recorded one) or `missing`.
    pub status: String,
}

/// `POST /admin/models/default`'s answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DefaultModel {
    /// The new default model id.
    pub default: String,
}

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

fn id_field(st: &AppState, body: &[u8]) -> Result<String, ApiError> {
    parse::<super::api::ModelIdRequest>(body, super::pii::limits(st)).map(|r| r.id)
}

/// `GET /admin/models`.
#[utoipa::path(get, path = "/admin/models", tag = "admin", security(("bearer" = []), ("api_key" = [])), responses((status = 200, description = "installed models, the catalog and running downloads", body = ModelsList)))]
pub async fn admin_models(State(st): State<AppState>) -> Result<Response, ApiError> {
    let st2 = st.clone();
    let (installed, catalog) = tokio::task::spawn_blocking(move || {
        let installed = store(&st2)?.installed().map_err(|_| ApiError::Internal)?;
        Ok::<_, ApiError>((installed, catalog()?))
    })
    .await
    .map_err(|_| ApiError::Internal)??;
    let ids: Vec<&str> = installed.iter().map(|m| m.id.as_str()).collect();
    let catalog = catalog
        .entries()
        .iter()
        .map(|e| CatalogModel::new(e, ids.contains(&e.id.as_str())))
        .collect();
    let downloads = st.downloads.snapshot();
    Ok(axum::Json(ModelsList {
        default: st.engine.default_model(),
        installed: installed.iter().map(InstalledModel::from).collect(),
        catalog,
        downloads,
    })
    .into_response())
}

/// `POST /admin/models/pull {"id"}` → 202; progress arrives as `download` events.
#[utoipa::path(post, path = "/admin/models/pull", tag = "admin", security(("bearer" = []), ("api_key" = [])), request_body(content = super::api::ModelIdRequest, content_type = "application/json"), responses((status = 202, description = "download started; progress arrives as `download` events", body = PullStarted), (status = 409, description = "already downloading, the entry is unpinned while models.require_pinned is on, the bundled model, or a model built on the machine (`conflict`)", body = super::error::ErrorEnvelope)))]
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
    let requested = id_field(st, body)?;
    let catalog = catalog()?;
    // Only catalog ids go further: a request-derived name never reaches a log or the disk.
    let Some(id) = catalog.resolve(&requested).map(str::to_string) else {
        return Err(not_served(&catalog));
    };
    record.target(id.clone());
    // What the download would refuse after its `202`, with the reason only in the log
    // (`phiguard models pull` refuses them at once too): refused now.
    match catalog.get(&id) {
        Some(e) if e.bundled => {
            return Err(ApiError::Conflict {
                message: "The bundled model ships inside phiguard and is not downloaded",
            })
        }
        Some(e) if e.build.is_some() => {
            return Err(ApiError::Conflict {
                message: "This model is built on the machine, not downloaded: run the catalog entry's build command, then phiguard models import",
            })
        }
        _ => {}
    }
    let require_pinned = st.settings().get(keys::MODELS_REQUIRE_PINNED);
    if require_pinned && catalog.get(&id).is_some_and(|e| !e.is_pinned()) {
        return Err(ApiError::Conflict {
            message: "This catalog entry is not pinned and models.require_pinned is on",
        });
    }
    let downloader = Downloader::from_env(catalog)
        .map_err(|e| {
            tracing::error!(error = %e, "downloader unavailable");
            ApiError::Internal
        })?
        .with_require_pinned(require_pinned);
    let store = store(st)?;
    let pull = st
        .downloads
        .start(&downloader, &store, &id, Publisher(st.clone()))
        .map_err(|e| match e {
            StartError::AlreadyRunning => ApiError::Conflict {
                message: "This model is already downloading",
            },
            StartError::NotInCatalog => not_served(downloader.catalog()),
        })?;
    tokio::spawn(pull.run());
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(PullStarted {
            id,
            state: DownloadState::Running,
        }),
    )
        .into_response())
}

fn not_served(catalog: &Catalog) -> ApiError {
    ApiError::ModelNotServed {
        available: catalog.entries().iter().map(|e| e.id.clone()).collect(),
    }
}

/// What the admin API does with its pulls: a `download` event for every change, and the
/// model installed into the engine before its download reads `done`.
struct Publisher(AppState);

impl Publisher {
    fn publish(&self, info: &DownloadInfo) {
        self.0.publish(
            "download",
            serde_json::to_value(info).unwrap_or(Value::Null),
        );
    }
}

impl DownloadObserver for Publisher {
    fn progress(&self, info: &DownloadInfo, _file: &str) {
        self.publish(info);
    }

    fn installed(&self, m: &Installed) {
        self.0.engine.install(ModelSpec {
            id: m.id.clone(),
            dir: Some(m.dir.clone()),
            footprint_bytes: m.size_bytes,
        });
    }

    fn finished(&self, info: &DownloadInfo, outcome: &Result<Installed, ModelError>) {
        if let (DownloadState::Failed, Err(e)) = (info.state, outcome) {
            tracing::warn!(model = %info.id, error = %e, "model download failed");
        }
        self.publish(info);
    }
}

/// `DELETE /admin/models/pull/{id}` cancels a running download.
#[utoipa::path(delete, path = "/admin/models/pull/{*id}", tag = "admin", security(("bearer" = []), ("api_key" = [])), params(("id" = String, Path, description = "catalog id; may contain `/`")), responses((status = 202, description = "cancelling"), (status = 404, description = "no such download", body = super::error::ErrorEnvelope)))]
pub async fn admin_models_cancel(
    State(st): State<AppState>,
    actor: Actor,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let mut record = Action::new("model.cancel");
    let outcome = match st.downloads.cancel(&id) {
        Ok(()) => {
            record.target(id);
            Ok(StatusCode::ACCEPTED.into_response())
        }
        Err(CancelError::NotRunning) => Err(ApiError::NoSuchResource),
    };
    audit::record(&st, &actor, record, &outcome).await;
    outcome
}

/// `POST /admin/models/verify {"id"}`.
#[utoipa::path(post, path = "/admin/models/verify", tag = "admin", security(("bearer" = []), ("api_key" = [])), request_body(content = super::api::ModelIdRequest, content_type = "application/json"), responses((status = 200, description = "whether every file matches its recorded digest", body = ModelVerification), (status = 404, description = "no such model", body = super::error::ErrorEnvelope)))]
pub async fn admin_models_verify(
    State(st): State<AppState>,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let id = id_field(&st, &body)?;
    let st2 = st.clone();
    let id2 = id.clone();
    let report = tokio::task::spawn_blocking(move || {
        let store = store(&st2)?;
        if store.get(&id2).is_none() {
            return Err(ApiError::NoSuchResource);
        }
        store.verify(&id2).map_err(|_| ApiError::Internal)
    })
    .await
    .map_err(|_| ApiError::Internal)??;
    let files = report
        .files
        .iter()
        .map(|f| VerifiedFile {
            name: f.name.clone(),
            status: match f.status {
                crate::models::FileStatus::Ok => "ok",
                crate::models::FileStatus::Mismatch => "changed",
                crate::models::FileStatus::Missing => "missing",
            }
            .to_owned(),
        })
        .collect();
    Ok(axum::Json(ModelVerification {
        id,
        ok: report.ok(),
        files,
    })
    .into_response())
}

/// `POST /admin/models/default {"id"}`: persists `models.default`.
#[utoipa::path(post, path = "/admin/models/default", tag = "admin", security(("bearer" = []), ("api_key" = [])), request_body(content = super::api::ModelIdRequest, content_type = "application/json"), responses((status = 200, description = "the new default", body = DefaultModel), (status = 404, description = "no such model", body = super::error::ErrorEnvelope)))]
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
    let id = id_field(st, body)?;
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
    next.persist(&[keys::MODELS_DEFAULT.name()])
        .map_err(super::admin::persist_error)?;
    crate::runtime::apply_live(&st.engine, &next);
    *st.settings.write() = Arc::new(next);
    record.change(json!(before.get(keys::MODELS_DEFAULT)), json!(id));
    Ok(axum::Json(DefaultModel { default: id }).into_response())
}

/// `DELETE /admin/models/{id}` (ids may contain `/`).
#[utoipa::path(delete, path = "/admin/models/{*id}", tag = "admin", security(("bearer" = []), ("api_key" = [])), params(("id" = String, Path, description = "model id; may contain `/`")), responses((status = 204, description = "removed"), (status = 404, description = "no such model", body = super::error::ErrorEnvelope), (status = 409, description = "in use or not removable (`conflict`)", body = super::error::ErrorEnvelope)))]
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
    // The model behind models.default stays: removed, the service would turn not ready and
    // its next start would stop (exit 2) on a default that names no installed model. So does
    // a model an alias maps to or `models.served` names: removed, those names would be
    // refused on every request, and the next start would stop on them. One rule for this
    // and `phiguard models rm`: `settings::start::removal_refusal`.
    let installed = |m: &str| st.engine.is_installed(m);
    let in_use = crate::settings::start::removal_refusal(&st.settings(), &id, &installed);
    if let Some(key) = in_use {
        record.target(id.clone());
        return Err(ApiError::Conflict {
            message: if key == keys::MODELS_DEFAULT.name() {
                "This model is the default model (models.default); set another default first"
            } else {
                "An alias (models.aliases) or the served set (models.served) names this model; change them first"
            },
        });
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn installed(license: Option<&str>) -> Installed {
        Installed {
            id: "phiguard-deid".into(),
            dir: "models/phiguard-deid".into(),
            family: "bert".into(),
            size_bytes: 1234,
            labels: vec!["NAME".into(), "DATE".into()],
            license: license.map(str::to_owned),
            source: ModelSource::Bundled,
        }
    }

    fn entry() -> CatalogEntry {
        CatalogEntry {
            id: "OpenMed/OpenMed-PII-SuperClinical-Small-44M-v1".into(),
            aliases: vec!["superclinical_small".into()],
            task: crate::models::Task::Pii,
            family: "deberta-v2".into(),
            params_millions: 44,
            approx_size_mb: 180,
            license: "apache-2.0".into(),
            revision: "main".into(),
            files: vec!["config.json".into()],
            pins: Vec::new(),
            labels: vec!["NAME".into()],
            bundled: false,
            verified: true,
            build: None,
            description: "small".into(),
        }
    }

    fn download(state: DownloadState) -> DownloadInfo {
        DownloadInfo {
            id: "OpenMed/OpenMed-PII-SuperClinical-Small-44M-v1".into(),
            state,
            bytes: 512,
            total_bytes: 2048,
            percent: 25.0,
            cancel: Some(CancellationToken::new()),
        }
    }

    /// The wire format the dashboard has always read, key order included: the `json!` the
    /// handler built before these types.
    #[test]
    fn models_list_serialises_to_the_documented_json() -> serde_json::Result<()> {
        let (m, e) = (installed(None), entry());
        let list = ModelsList {
            default: "phiguard-deid".into(),
            installed: vec![InstalledModel::from(&m)],
            catalog: vec![CatalogModel::new(&e, false)],
            downloads: vec![download(DownloadState::Running)],
        };
        let want = json!({
            "default": "phiguard-deid",
            "installed": [json!({"id": m.id, "family": m.family, "size_bytes": m.size_bytes, "labels": m.labels,
                                 "canonical_labels": ["PERSON", "DATE"],
                                 "license": m.license, "source": m.source})],
            "catalog": [json!({"id": e.id, "aliases": e.aliases, "family": e.family, "params_millions": e.params_millions,
                               "size_bytes": e.approx_size_mb * 1_000_000, "labels": e.labels, "license": e.license,
                               "verified": e.verified, "installed": false})],
            "downloads": [{"id": "OpenMed/OpenMed-PII-SuperClinical-Small-44M-v1", "state": "running",
                           "bytes": 512, "total_bytes": 2048, "percent": 25.0}],
        });
        assert_eq!(serde_json::to_string(&list)?, want.to_string());
        let licensed = serde_json::to_value(InstalledModel::from(&installed(Some("mit"))))?;
        assert_eq!(licensed["license"], "mit");
        Ok(())
    }

    #[test]
    fn models_list_reads_back() -> serde_json::Result<()> {
        let list = ModelsList {
            default: "phiguard-deid".into(),
            installed: vec![InstalledModel::from(&installed(Some("mit")))],
            catalog: vec![CatalogModel::new(&entry(), true)],
            downloads: vec![download(DownloadState::Done)],
        };
        let text = serde_json::to_string(&list)?;
        let back: ModelsList = serde_json::from_str(&text)?;
        assert_eq!(back.installed, list.installed);
        assert_eq!(back.catalog, list.catalog);
        assert_eq!(back.downloads[0].state, DownloadState::Done);
        assert!(back.downloads[0].cancel.is_none());
        assert_eq!(serde_json::to_string(&back)?, text);
        Ok(())
    }

    /// The action answers, against the `json!` the handlers built before these types.
    #[test]
    fn model_action_answers_serialise_to_the_documented_json() -> serde_json::Result<()> {
        let id = "phiguard-deid";
        let pull = PullStarted {
            id: id.into(),
            state: DownloadState::Running,
        };
        assert_eq!(
            serde_json::to_string(&pull)?,
            json!({"id": id, "state": "running"}).to_string()
        );
        let ok = false;
        let verified = ModelVerification {
            id: id.into(),
            ok,
            files: vec![VerifiedFile {
                name: "model.safetensors".into(),
                status: "changed".into(),
            }],
        };
        assert_eq!(
            serde_json::to_string(&verified)?,
            json!({"id": id, "ok": ok, "files": [{"name": "model.safetensors", "status": "changed"}]})
                .to_string()
        );
        let default = DefaultModel { default: id.into() };
        assert_eq!(
            serde_json::to_string(&default)?,
            json!({"default": id}).to_string()
        );
        Ok(())
    }

    #[test]
    fn download_states_are_the_old_words() {
        let cases = [
            (DownloadState::Running, "running"),
            (DownloadState::Done, "done"),
            (DownloadState::Failed, "failed"),
            (DownloadState::Cancelled, "cancelled"),
        ];
        for (state, word) in cases {
            assert_eq!(serde_json::to_value(state).ok(), Some(json!(word)));
        }
    }
}
