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

pub(super) fn pull(id: &str) -> Result<(), Failure> {
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
    println!("{}", cli::import(&store()?, dir, id).map_err(err)?);
    Ok(())
}

pub(super) fn rm(id: &str) -> Result<(), Failure> {
    println!("{}", cli::rm(&store()?, id).map_err(err)?);
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
