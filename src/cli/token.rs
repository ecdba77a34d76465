//! `phiguard token show|rotate [--admin]`, `phiguard token create [--label L] [--admin]
//! [--expires-in 30d]` and `phiguard token list`.
//!
//! Rotation writes the new token to the secret store and bumps the token registry's
//! generation; running servers on the same home switch to it within about a second (see
//! `secrets/tokens.rs`), refusing the old one from then on. Creation adds a labelled token
//! to the same registry. Rotations and creations are written to the home's audit log with
//! the actor `cli` (`server/audit.rs`).

use crate::settings::key::Text;
use crate::settings::{keys, Key};
use std::sync::Arc;
use std::time::Duration;

use super::Failure;
use crate::secrets::{generate_token, registry_file, Primary, Scope, SecretStore, TokenRegistry};
use crate::server::api::MAX_TOKEN_LIFETIME_SECONDS;
use crate::server::audit::Action;
use crate::settings::{Home, Settings};

fn which(admin: bool) -> (Primary, &'static str, Key<Text>) {
    if admin {
        (Primary::Admin, "admin-token", keys::SECURITY_ADMIN_TOKEN)
    } else {
        (Primary::Client, "client-token", keys::SECURITY_AUTH_TOKEN)
    }
}

/// The token pinned by the environment or `settings.toml`, if any.
fn pinned(home: &Home, key: Key<Text>) -> Result<Option<String>, Failure> {
    let settings = Settings::load(home)?;
    let v = settings.get(key);
    Ok((!v.is_empty()).then(|| v.to_string()))
}

fn audit(home: &Home, action: Action) {
    super::audit(home, action, &Ok(()));
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
    let mut action = Action::new("token.rotate");
    action.target(if admin { "admin" } else { "client" });
    audit(&home, action);
    println!("{t}");
    eprintln!(
        "phiguard: the {} token was replaced; running services on this home refuse the old one within a few seconds",
        if admin { "admin" } else { "client" }
    );
    Ok(())
}

/// A lifetime as `--expires-in` takes it: the keep-alive duration syntax, at least a second.
fn lifetime(text: &str) -> Result<Duration, Failure> {
    let bad = || {
        Failure::usage(format!(
            "--expires-in must be a duration like 30d, 12h, 1h30m or 90s, from 1 second to {} days",
            MAX_TOKEN_LIFETIME_SECONDS / 86_400
        ))
    };
    match crate::settings::value::parse_keep_alive(text) {
        Some(Some(secs)) if (1.0..=MAX_TOKEN_LIFETIME_SECONDS as f64).contains(&secs) => {
            Ok(Duration::from_secs_f64(secs))
        }
        _ => Err(bad()),
    }
}

fn registry(home: &Home) -> Result<TokenRegistry, Failure> {
    TokenRegistry::open(
        Arc::new(SecretStore::open(home.secrets_file())),
        registry_file(home),
        pinned(home, keys::SECURITY_AUTH_TOKEN)?,
        pinned(home, keys::SECURITY_ADMIN_TOKEN)?,
    )
    .map_err(|e| Failure::runtime(e.to_string()))
}

pub(super) fn create(label: &str, admin: bool, expires_in: Option<&str>) -> Result<(), Failure> {
    let label = label.trim();
    if let Some(problem) = crate::secrets::label_problem(label) {
        return Err(Failure::usage(format!("--{problem}")));
    }
    let lifetime = expires_in.map(lifetime).transpose()?;
    let home = Home::from_env();
    let scope = if admin { Scope::Admin } else { Scope::Client };
    let t = registry(&home)?
        .create(label, scope, lifetime)
        .map_err(|e| Failure::runtime(e.to_string()))?;
    let mut action = Action::new("token.create");
    action.target(t.id.clone()).details(
        serde_json::json!({"label": t.label, "scope": t.scope, "expires_at": t.expires_at}),
    );
    audit(&home, action);
    println!("{}", t.token);
    eprintln!(
        "phiguard: created {} ({}){}; it is not shown again",
        t.id,
        if admin { "admin" } else { "client" },
        t.expires_at
            .as_deref()
            .map(|at| format!(", expires {at}"))
            .unwrap_or_default()
    );
    Ok(())
}

pub(super) fn list() -> Result<(), Failure> {
    let home = Home::from_env();
    for t in registry(&home)?.list() {
        let scope = match t.scope {
            Scope::Admin => "admin",
            Scope::Client => "client",
        };
        let expiry = match (&t.expires_at, t.expired) {
            (Some(at), true) => format!("expired {at}"),
            (Some(at), false) => format!("expires {at}"),
            (None, _) => "no expiry".into(),
        };
        println!("{:<17} {:<6} {:<32} {}", t.id, scope, expiry, t.label);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_take_the_duration_syntax_within_range() {
        assert_eq!(lifetime("30d").ok(), Some(Duration::from_secs(30 * 86_400)));
        assert_eq!(lifetime("1h30m").ok(), Some(Duration::from_secs(5400)));
        assert_eq!(lifetime("90").ok(), Some(Duration::from_secs(90)));
        for bad in ["0", "never", "soon", "20000d", ""] {
            assert!(lifetime(bad).is_err(), "{bad}");
        }
    }
}
