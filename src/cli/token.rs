//! `phiguard token show|rotate`.

use super::Failure;
use crate::secrets::{generate_token, SecretStore};
use crate::settings::Home;

pub(super) fn show(admin: bool) -> Result<(), Failure> {
    let (var, name) = if admin {
        ("PHIGUARD_ADMIN_TOKEN", "admin-token")
    } else {
        ("PHIGUARD_AUTH_TOKEN", "client-token")
    };
    if let Ok(t) = std::env::var(var) {
        if !t.is_empty() {
            println!("{t}");
            return Ok(());
        }
    }
    let store = SecretStore::open(Home::from_env().secrets_file());
    let t = store
        .get_or_create(name, generate_token)
        .map_err(|e| Failure::runtime(e.to_string()))?;
    println!("{t}");
    Ok(())
}

pub(super) fn rotate() -> Result<(), Failure> {
    let store = SecretStore::open(Home::from_env().secrets_file());
    let t = crate::secrets::rotate_client(&store).map_err(|e| Failure::runtime(e.to_string()))?;
    println!("{t}");
    eprintln!("phiguard: the client token was replaced; restart running services to apply it");
    Ok(())
}
