//! `phiguard models list|pull|import|rm|verify`: thin wrappers over `models::cli`.

use std::path::Path;

use super::{runtime, Failure};
use crate::models::{cli, Catalog, Downloader, Store};
use crate::settings::keys;
use crate::settings::{Home, Settings};

fn store() -> Result<Store, Failure> {
    Store::open(Home::from_env().models_dir()).map_err(|e| Failure::runtime(e.to_string()))
}

fn catalog() -> Result<Catalog, Failure> {
    Catalog::from_env().map_err(|e| Failure::usage(e.to_string()))
}

fn err(e: crate::models::ModelError) -> Failure {
    Failure::runtime(e.to_string())
}

pub(super) fn list() -> Result<(), Failure> {
    print!("{}", cli::list(&store()?, &catalog()?).map_err(err)?);
    Ok(())
}

/// The audit record of a model action at the command line, with the model's id (a name
/// the admin typed, as the admin API records it).
fn audited(
    action: &'static str,
    id: &str,
    run: impl FnOnce() -> Result<(), Failure>,
) -> Result<(), Failure> {
    let outcome = run();
    let mut record = crate::server::audit::Action::new(action);
    record.target(id);
    super::audit(&Home::from_env(), record, &outcome);
    outcome
}

pub(super) fn pull(id: &str) -> Result<(), Failure> {
    audited("model.pull", id, || pull_in(id))
}

fn pull_in(id: &str) -> Result<(), Failure> {
    let catalog = catalog()?;
    if let Some(build) = catalog.get(id).and_then(|e| e.build.as_deref()) {
        // The person at the terminal typed the name: showing the way to build it is the
        // answer they need (the service's pull answers with the error alone).
        return Err(Failure::runtime(format!(
            "{id} is built on this machine, not downloaded; from a phiguard checkout run\n  {build}\n  phiguard models import DIR --id {id}"
        )));
    }
    let store = store()?;
    let require_pinned = Settings::load(&Home::from_env())?.get(keys::MODELS_REQUIRE_PINNED);
    let d = Downloader::from_env(catalog)
        .map_err(err)?
        .with_require_pinned(require_pinned);
    let rt = runtime()?;
    let installed = rt.block_on(cli::pull(&d, &store, id, true)).map_err(err)?;
    println!("installed {}", installed.id);
    Ok(())
}

pub(super) fn import(dir: &Path, id: Option<&str>) -> Result<(), Failure> {
    let target = id
        .map(str::to_owned)
        .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    audited("model.import", &target, || {
        println!("{}", cli::import(&store()?, dir, id).map_err(err)?);
        Ok(())
    })
}

/// Whether `id` is a model the next start finds installed: the rules, a model of `store`,
/// or the bundled model's id, which start-up accepts even without its files (it warns).
pub(super) fn installed_in(store: &Store) -> impl Fn(&str) -> bool + '_ {
    |id: &str| {
        id == crate::engine::RULES_ID
            || id == crate::models::store::BUNDLED_ID
            || store.get(id).is_some()
    }
}

/// Removes a model, unless a setting names it (as `DELETE /admin/models/{id}` refuses it
/// with 409, by the same rule): removed, the next start would stop (exit 2).
pub(super) fn rm(id: &str) -> Result<(), Failure> {
    audited("model.delete", id, || rm_in(id))
}

fn rm_in(id: &str) -> Result<(), Failure> {
    let settings = Settings::load(&Home::from_env())?;
    let store = store()?;
    if let Some(key) = crate::settings::start::removal_refusal(&settings, id, &installed_in(&store))
    {
        return Err(Failure::usage(format!(
            "{id} is in use: {key} ({}) names it, and without the model the service would not \
             start; change {key} first (phiguard settings set {key} …), then remove it",
            settings.source_name(key)
        )));
    }
    println!("{}", cli::rm(&store, id).map_err(err)?);
    Ok(())
}

pub(super) fn verify(id: &str) -> Result<(), Failure> {
    let (report, ok) = cli::verify(&store()?, id).map_err(err)?;
    println!("{report}");
    if ok {
        Ok(())
    } else {
        Err(Failure::runtime("verification failed"))
    }
}
