//! `phiguard token show|rotate [--admin]`.
//!
//! Rotation writes the new token to the secret store and bumps the token registry's
//! generation; running servers on the same home switch to it within about a second (see
//! `secrets/tokens.rs`), refusing the old one from then on.

use super::Failure;
use crate::secrets::{generate_token, registry_file, Primary, SecretStore};
use crate::settings::{Home, Settings};

fn which(admin: bool) -> (Primary, &'static str, &'static str) {
    if admin {
        (Primary::Admin, "admin-token", "security.admin_token")
    } else {
        (Primary::Client, "client-token", "security.auth_token")
    }
}

/// The token pinned by the environment or `settings.toml`, if any.
fn pinned(home: &Home, key: &str) -> Result<Option<String>, Failure> {
    let settings = Settings::load(home)?;
    let v = settings.str(key);
    Ok((!v.is_empty()).then(|| v.to_string()))
}

pub(super) fn show(admin: bool) -> Result<(), Failure> {
    let (_, name, key) = which(admin);
    let home = Home::from_env();
    if let Some(t) = pinned(&home, key)? {
        println!("{t}");
        return Ok(());
    }
    let store = SecretStore::open(home.secrets_file());
    let t = store
        .get_or_create(name, generate_token)
        .map_err(|e| Failure::runtime(e.to_string()))?;
    println!("{t}");
    Ok(())
}

pub(super) fn rotate(admin: bool) -> Result<(), Failure> {
    let (primary, _, key) = which(admin);
    let home = Home::from_env();
    if pinned(&home, key)?.is_some() {
        return Err(Failure::usage(format!(
            "the {} token is set by {} (or {key} in settings.toml); change it there and restart the service",
            if admin { "admin" } else { "client" },
            primary.variable(),
        )));
    }
    let store = SecretStore::open(home.secrets_file());
    let t = crate::secrets::rotate(&store, &registry_file(&home), primary)
        .map_err(|e| Failure::runtime(e.to_string()))?;
    println!("{t}");
    eprintln!(
        "phiguard: the {} token was replaced; running services on this home refuse the old one within a few seconds",
        if admin { "admin" } else { "client" }
    );
    Ok(())
}
