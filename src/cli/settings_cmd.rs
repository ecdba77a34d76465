//! `phiguard settings list|get|set|docs`: the rendering lives in
//! [`crate::settings::listing`], so the CLI only loads, picks the format and prints.

use super::Failure;
use crate::settings::{keys, listing, start, Home, Settings};

/// The terminal width: `$COLUMNS` where the shell exports it, else 100.
fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|w| (40..=1000).contains(w))
        .unwrap_or(100)
}

/// Writes `text` to stdout; a reader that went away (`| head`) is not a failure.
fn emit(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::runtime(format!("writing to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

pub(super) fn list(json: bool) -> Result<(), Failure> {
    let s = Settings::load(&Home::from_env())?;
    let entries = listing::entries(&s);
    if json {
        let text = serde_json::to_string_pretty(&entries)
            .map_err(|e| Failure::runtime(format!("settings as JSON: {e}")))?;
        emit(&format!("{text}\n"))
    } else {
        emit(&listing::render_table(&entries, width()))
    }
}

pub(super) fn docs() -> Result<(), Failure> {
    emit(&listing::render_markdown())
}

pub(super) fn get(key: &str) -> Result<(), Failure> {
    let s = Settings::load(&Home::from_env())?;
    let def = known(key)?;
    if def.secret {
        // Only the two tokens have a command that prints them; the keys and the Redis URL
        // are never printed.
        let how = match def.key {
            "security.auth_token" => "print it with `phiguard token show`".to_string(),
            "security.admin_token" => "print it with `phiguard token show --admin`".to_string(),
            _ => format!("it is never printed (set it with {})", def.env),
        };
        return Err(Failure::usage(format!("{key} is a secret; {how}")));
    }
    println!("{}", s.value(def.key));
    Ok(())
}

/// The definition of `key`, or the usage error every subcommand gives for an unknown one
/// (the settings' own check answers the HTTP API, whose message points at its route).
fn known(key: &str) -> Result<&'static crate::settings::table::Def, Failure> {
    crate::settings::table::def(key).ok_or_else(|| {
        Failure::usage(format!(
            "unknown setting {key}; `phiguard settings list` lists every key"
        ))
    })
}

/// Changes one setting in `settings.toml`, refused (exit 2, nothing written) by the rules
/// of `PUT /admin/settings`: the value's own, the conflicts, what the next start would
/// refuse, and for `models.default`, `models.aliases` and `models.served` a name that no
/// installed model answers, asked of the model store as the next start would.
///
/// Recorded in the audit log as `PUT /admin/settings` records it: the key with its old and
/// new value (a secret one masked), or the refusal without them.
pub(super) fn set(key: &str, value: &str) -> Result<(), Failure> {
    let home = Home::from_env();
    let mut action = crate::server::audit::Action::new("settings.update");
    let outcome = set_in(&home, key, value).map(|(def, old, new)| {
        action.target(def).change(
            crate::server::audit::setting_value(def, &old),
            crate::server::audit::setting_value(def, &new),
        );
    });
    super::audit(&home, action, &outcome);
    outcome
}

/// The change of [`set`]: the key, its value before and after.
fn set_in(
    home: &Home,
    key: &str,
    value: &str,
) -> Result<(&'static str, crate::settings::Value, crate::settings::Value), Failure> {
    let def = known(key)?;
    let mut s = Settings::load(home)?;
    let before = s.clone();
    s.apply(&[(key.to_string(), value.to_string())])
        .map_err(|errs| {
            Failure::usage(
                errs.iter()
                    .map(|e| format!("{}: {}", e.field, e.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
    let naming = [
        keys::MODELS_DEFAULT.name(),
        keys::MODELS_ALIASES.name(),
        keys::MODELS_SERVED.name(),
    ];
    if naming.contains(&def.key) {
        let store = crate::models::Store::with_bundled(home.models_dir(), None)
            .map_err(|e| Failure::runtime(e.to_string()))?;
        let installed = super::models_cmd::installed_in(&store);
        if let Some(r) = start::change_refusal(&before, &s, &installed) {
            return Err(Failure::usage(format!(
                "the service would not start with this: {r}"
            )));
        }
    }
    s.persist(&[def.key])?;
    println!("{key} = {}", s.value(key));
    Ok((
        def.key,
        before.value(def.key).clone(),
        s.value(def.key).clone(),
    ))
}
