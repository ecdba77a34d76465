//! The settings a service cannot start with (exit 2), in one place: `Server::start` refuses
//! them, and `PUT /admin/settings` (and `phiguard settings set`) refuse a change that would
//! lead to them, so an admin cannot save a configuration that stops the next start.
//!
//! Why here and not in the server: the same rule must answer both questions, "may this
//! process start?" and "may this change be saved?", and only the settings know both. The
//! messages name the variables or keys and where they were set, never a value of a secret.

use super::{keys, Settings};

/// Token values shipped as placeholders in the deploy files (`deploy/kubernetes/secret.yaml`):
/// a value starting with this was copied, not generated.
pub const PLACEHOLDER_PREFIX: &str = "replace-me";

/// The fewest characters a token may have on a non-loopback bind: 16 random hex digits are
/// 64 bits, out of reach of guessing over a network at any rate the auth-failure limit
/// lets through; `openssl rand -hex 32`, as the deploy files say, gives 64.
pub const MIN_PUBLIC_TOKEN_CHARS: usize = 16;

/// Why these settings would stop the service at start-up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartRefusal {
    /// Returned when `security.auth` is `off` and the host is not a loopback address.
    #[error("{auth} is refused on a non-loopback bind ({host}); bind 127.0.0.1 or turn auth on")]
    AuthOffOnPublicBind {
        /// The setting as its source spells it: `PHIGUARD_AUTH=off`, or
        /// `security.auth = "off" in settings.toml`.
        auth: String,
        /// The configured host.
        host: String,
    },
    /// Returned when the host is not a loopback address and no client token is configured.
    #[error(
        "binding {host} needs an explicit client token: set PHIGUARD_AUTH_TOKEN (and PHIGUARD_ADMIN_TOKEN)"
    )]
    TokenRequired {
        /// The configured host.
        host: String,
    },
    /// Returned when the client and the admin token are the same: every client would be an
    /// admin (`/admin/reidentify` answers PHI in clear).
    #[error("PHIGUARD_AUTH_TOKEN and PHIGUARD_ADMIN_TOKEN are the same: the client token would be an admin token; set two different random values")]
    SameTokens,
    /// Returned when a token is a placeholder of the deploy files (`replace-me-…`).
    #[error("{var} is a placeholder of the deploy files; set a random value (e.g. `openssl rand -hex 32`)")]
    PlaceholderToken {
        /// The variable holding the placeholder.
        var: &'static str,
    },
    /// Returned when a token is shorter than [`MIN_PUBLIC_TOKEN_CHARS`] on a non-loopback
    /// bind, where anyone on the network may try to guess it.
    #[error("{var} has fewer than {} characters, and {host} is reachable from the network; set a random value (e.g. `openssl rand -hex 32`)", MIN_PUBLIC_TOKEN_CHARS)]
    ShortToken {
        /// The variable holding the token.
        var: &'static str,
        /// The configured host.
        host: String,
    },
    /// Returned when a cluster setting breaks the Redis limiter's rule (a URL Redis's client
    /// cannot read). The value is never part of the message: a URL may hold a password.
    #[error("{key} ({by}) {rule}")]
    Cluster {
        /// The setting's key.
        key: &'static str,
        /// Where it was set: its variable, `settings.toml` or `default`.
        by: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// Returned when an entry of `models.aliases` is not `requested=installed` (no `=`, or
    /// nothing on one side of it). Named by position: the entry may be anything typed.
    #[error("models.aliases ({by}): entry {entry} is not requested-name=installed-model; write the aliases comma-separated, e.g. my-model=phiguard-deid (or my-model=default)")]
    AliasMalformed {
        /// Where the setting was set: its variable or flag, `settings.toml` or `default`.
        by: String,
        /// The 1-based position of the entry in the list.
        entry: usize,
    },
    /// Returned when an alias maps to a model that is not installed (nor `rules`, nor
    /// `default`): every request naming the alias would be refused `422 model_not_served`.
    #[error("models.aliases ({by}): {alias}={target} names a model that is not installed: map it to an installed model (phiguard models list), to default or to rules, or install that one (phiguard models pull)")]
    AliasNotInstalled {
        /// Where the setting was set.
        by: String,
        /// The 1-based position of the entry in the list.
        entry: usize,
        /// The requested name (configuration, never a request's).
        alias: String,
        /// The model it maps to (configuration, never a request's).
        target: String,
    },
    /// Returned when a name of `models.served` is neither an installed model nor an alias:
    /// the service would advertise a name it cannot serve.
    #[error("models.served ({by}): {model} is not an installed model or an alias (models.aliases): list installed models (phiguard models list) or aliases, or install that one (phiguard models pull)")]
    ServedNotInstalled {
        /// Where the setting was set.
        by: String,
        /// The 1-based position of the name in the list.
        entry: usize,
        /// The name (configuration, never a request's).
        model: String,
    },
    /// Returned when a name of `models.preload` is neither an installed model nor an alias:
    /// the model would be skipped with a warning while `/readyz` said ready, a typo
    /// unnoticed until the first request paid for the load that was meant to come first.
    #[error("models.preload ({by}): {model} is not an installed model or an alias (models.aliases): list installed models (phiguard models list) or aliases, or install that one (phiguard models pull)")]
    PreloadNotInstalled {
        /// Where the setting was set.
        by: String,
        /// The 1-based position of the name in the list.
        entry: usize,
        /// The name (configuration, never a request's).
        model: String,
    },
    /// Returned when a change leaves `models.default` naming no installed model (nor an
    /// alias of one): every request that names no model would be refused. (Start-up has its
    /// own error for this, which lets the bundled model's id through with a warning.)
    #[error("models.default ({by}): {model} names no installed model (nor an alias of one): pick one of phiguard models list, or install that one (phiguard models pull)")]
    DefaultNotInstalled {
        /// Where the setting was set.
        by: String,
        /// The name (configuration, never a request's).
        model: String,
    },
}

impl StartRefusal {
    /// The setting to blame in a `422` of `PUT /admin/settings`.
    pub fn key(&self) -> &'static str {
        match self {
            StartRefusal::AuthOffOnPublicBind { .. } => keys::SECURITY_AUTH.name(),
            StartRefusal::TokenRequired { .. } => keys::SERVER_HOST.name(),
            StartRefusal::SameTokens => keys::SECURITY_ADMIN_TOKEN.name(),
            StartRefusal::PlaceholderToken { var } | StartRefusal::ShortToken { var, .. } => {
                if *var == keys::SECURITY_ADMIN_TOKEN.env() {
                    keys::SECURITY_ADMIN_TOKEN.name()
                } else {
                    keys::SECURITY_AUTH_TOKEN.name()
                }
            }
            StartRefusal::AliasMalformed { .. } | StartRefusal::AliasNotInstalled { .. } => {
                keys::MODELS_ALIASES.name()
            }
            StartRefusal::ServedNotInstalled { .. } => keys::MODELS_SERVED.name(),
            StartRefusal::PreloadNotInstalled { .. } => keys::MODELS_PRELOAD.name(),
            StartRefusal::DefaultNotInstalled { .. } => keys::MODELS_DEFAULT.name(),
            StartRefusal::Cluster { key, .. } => key,
        }
    }

    /// The refusal in words fit for a `422` of `PUT /admin/settings`: the rule and the
    /// entry's position, never a model name (there, the value came from the request).
    pub fn rule(&self) -> String {
        match self {
            StartRefusal::AliasNotInstalled { entry, .. } => format!(
                "entry {entry} maps to a model that is not installed; map each alias to an installed model (GET /admin/models), to default or to rules"
            ),
            StartRefusal::ServedNotInstalled { entry, .. } => format!(
                "entry {entry} is not an installed model or an alias (models.aliases); GET /admin/models lists the installed models"
            ),
            StartRefusal::PreloadNotInstalled { entry, .. } => format!(
                "entry {entry} is not an installed model or an alias (models.aliases); GET /admin/models lists the installed models"
            ),
            StartRefusal::AliasMalformed { entry, .. } => format!(
                "entry {entry} is not requested-name=installed-model; write the aliases comma-separated, e.g. my-model=phiguard-deid (or my-model=default)"
            ),
            StartRefusal::DefaultNotInstalled { .. } => {
                "names no installed model (or alias of one) that is served; GET /admin/models lists them".into()
            }
            other => other.to_string(),
        }
    }
}

/// The entries of `models.aliases` as (position, requested name, target), or the first
/// entry that is not `requested=installed`.
fn aliases(settings: &Settings) -> Result<Vec<(usize, &str, &str)>, StartRefusal> {
    let mut out = Vec::new();
    for (i, entry) in settings.get(keys::MODELS_ALIASES).iter().enumerate() {
        match entry.split_once('=').map(|(a, t)| (a.trim(), t.trim())) {
            Some((alias, target)) if !alias.is_empty() && !target.is_empty() => {
                out.push((i + 1, alias, target));
            }
            _ => {
                return Err(StartRefusal::AliasMalformed {
                    by: settings.source_name(keys::MODELS_ALIASES.name()),
                    entry: i + 1,
                })
            }
        }
    }
    Ok(out)
}

/// The first name of `models.aliases`, `models.served` or `models.preload` that names no model `installed`
/// knows, or `None`. The settings cannot see the model store, so the caller says what is
/// installed: `Server::start` (exit 2) and `PUT /admin/settings` (422) ask the same
/// question of the engine. An alias to `default` is left to the rule of `models.default`.
pub fn models_refusal(
    settings: &Settings,
    installed: &dyn Fn(&str) -> bool,
) -> Option<StartRefusal> {
    let aliases = match aliases(settings) {
        Ok(a) => a,
        Err(malformed) => return Some(malformed),
    };
    for &(entry, alias, target) in &aliases {
        if target != "default" && !installed(target) {
            return Some(StartRefusal::AliasNotInstalled {
                by: settings.source_name(keys::MODELS_ALIASES.name()),
                entry,
                alias: alias.to_string(),
                target: target.to_string(),
            });
        }
    }
    for (i, name) in settings.get(keys::MODELS_SERVED).iter().enumerate() {
        let name = name.trim();
        if !installed(name) && !aliases.iter().any(|&(_, a, _)| a == name) {
            return Some(StartRefusal::ServedNotInstalled {
                by: settings.source_name(keys::MODELS_SERVED.name()),
                entry: i + 1,
                model: name.to_string(),
            });
        }
    }
    for (i, name) in settings.get(keys::MODELS_PRELOAD).iter().enumerate() {
        let name = name.trim();
        if name != "default" && !installed(name) && !aliases.iter().any(|&(_, a, _)| a == name) {
            return Some(StartRefusal::PreloadNotInstalled {
                by: settings.source_name(keys::MODELS_PRELOAD.name()),
                entry: i + 1,
                model: name.to_string(),
            });
        }
    }
    None
}

/// The model `models.default` names, followed through `models.aliases` as the engine
/// resolves a request that names no model: the target of the alias of that name where there
/// is one (`default` being the default itself), else the name.
pub fn default_target(settings: &Settings) -> &str {
    let default = settings.get(keys::MODELS_DEFAULT);
    let target = settings
        .get(keys::MODELS_ALIASES)
        .iter()
        .filter_map(|entry| entry.split_once('='))
        .filter(|(alias, _)| alias.trim() == default)
        .map(|(_, target)| target.trim())
        .next_back();
    match target {
        Some(t) if t != "default" => t,
        _ => default,
    }
}

/// Why the change from `before` to `next` would leave a model setting naming no installed
/// model, or `None`: `models.default` (when it, an alias or the served set changed) must
/// name an installed model or an alias of one, and [`models_refusal`] must not refuse
/// `next` for a reason it did not refuse `before` for (so a refusal that was there already,
/// in settings read without the server's variables, does not block an unrelated change).
/// `PUT /admin/settings` (422) and `phiguard settings set` (exit 2) both ask this.
pub fn change_refusal(
    before: &Settings,
    next: &Settings,
    installed: &dyn Fn(&str) -> bool,
) -> Option<StartRefusal> {
    let naming_changed = next.get(keys::MODELS_DEFAULT) != before.get(keys::MODELS_DEFAULT)
        || next.get(keys::MODELS_ALIASES) != before.get(keys::MODELS_ALIASES)
        || next.get(keys::MODELS_SERVED) != before.get(keys::MODELS_SERVED);
    if naming_changed && !installed(default_target(next)) {
        return Some(StartRefusal::DefaultNotInstalled {
            by: next.source_name(keys::MODELS_DEFAULT.name()),
            model: next.get(keys::MODELS_DEFAULT).to_string(),
        });
    }
    models_refusal(next, installed)
        .filter(|r| models_refusal(before, installed).as_ref() != Some(r))
}

/// The setting that would stop naming an installed model if the installed model `id` were
/// removed, or `None` when it can go: `models.default` when it names `id` (directly or
/// through an alias), else `models.aliases` or `models.served` when [`models_refusal`]
/// refuses the settings without `id` and did not with it. `DELETE /admin/models/{id}` (409)
/// and `phiguard models rm` (exit 2) both ask this: removed, the model would leave every
/// request that names it refused, and the next start would stop (exit 2).
pub fn removal_refusal(
    settings: &Settings,
    id: &str,
    installed: &dyn Fn(&str) -> bool,
) -> Option<&'static str> {
    if !installed(id) {
        return None;
    }
    if settings.get(keys::MODELS_DEFAULT) == id || default_target(settings) == id {
        return Some(keys::MODELS_DEFAULT.name());
    }
    let without = |m: &str| m != id && installed(m);
    let after = models_refusal(settings, &without);
    if after == models_refusal(settings, installed) {
        return None;
    }
    after.map(|r| r.key())
}

/// True for `localhost` and loopback addresses (`127.0.0.1`, `[::1]`).
pub fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h == "localhost"
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The first reason `settings` would stop the service at start-up, or `None`.
pub fn refusal(settings: &Settings) -> Option<StartRefusal> {
    let host = settings.get(keys::SERVER_HOST);
    let public = !is_loopback(host);
    if settings.get(keys::SECURITY_AUTH) == "off" && public {
        return Some(StartRefusal::AuthOffOnPublicBind {
            auth: match settings.source(keys::SECURITY_AUTH.name()) {
                super::SettingSource::File => "security.auth = \"off\" in settings.toml".into(),
                _ => format!("{}=off", settings.source_name(keys::SECURITY_AUTH.name())),
            },
            host: host.to_string(),
        });
    }
    let client = settings.get(keys::SECURITY_AUTH_TOKEN);
    let admin = settings.get(keys::SECURITY_ADMIN_TOKEN);
    if public && client.is_empty() {
        return Some(StartRefusal::TokenRequired {
            host: host.to_string(),
        });
    }
    for (key, value) in [
        (keys::SECURITY_AUTH_TOKEN, client),
        (keys::SECURITY_ADMIN_TOKEN, admin),
    ] {
        let placeholder = value
            .trim()
            .get(..PLACEHOLDER_PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(PLACEHOLDER_PREFIX));
        if placeholder {
            return Some(StartRefusal::PlaceholderToken { var: key.env() });
        }
        let short = !value.is_empty() && value.trim().chars().count() < MIN_PUBLIC_TOKEN_CHARS;
        if public && short {
            return Some(StartRefusal::ShortToken {
                var: key.env(),
                host: host.to_string(),
            });
        }
    }
    if !client.is_empty() && client == admin {
        return Some(StartRefusal::SameTokens);
    }
    aliases(settings).err()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Home;

    fn load(pairs: &[(&str, &str)]) -> Settings {
        let dir = tempfile::tempdir().expect("tempdir");
        let vars: std::collections::HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::load_from(&Home::at(dir.path()), |k| vars.get(k).cloned()).expect("load")
    }

    #[test]
    fn equal_and_placeholder_tokens_are_refused_and_never_shown() {
        let same = refusal(&load(&[
            ("PHIGUARD_AUTH_TOKEN", "hunter2-shared-token"),
            ("PHIGUARD_ADMIN_TOKEN", "hunter2-shared-token"),
        ]));
        assert_eq!(same, Some(StartRefusal::SameTokens));
        let placeholder = refusal(&load(&[
            ("PHIGUARD_AUTH_TOKEN", "a-real-client-token"),
            ("PHIGUARD_ADMIN_TOKEN", "replace-me-admin-token"),
        ]));
        assert_eq!(
            placeholder,
            Some(StartRefusal::PlaceholderToken {
                var: "PHIGUARD_ADMIN_TOKEN"
            })
        );
        for r in [same, placeholder].into_iter().flatten() {
            let msg = r.to_string();
            assert!(msg.contains("PHIGUARD_"), "{msg}");
            assert!(
                !msg.contains("hunter2") && !msg.contains("replace-me-admin"),
                "{msg}"
            );
        }
        assert_eq!(
            refusal(&load(&[
                ("PHIGUARD_AUTH_TOKEN", "client-token-1"),
                ("PHIGUARD_ADMIN_TOKEN", "admin-token-1"),
            ])),
            None
        );
        assert_eq!(refusal(&load(&[])), None);
    }

    /// A token shorter than 16 characters stops a service reachable from the network, and
    /// the message names its variable, never its value; on loopback it is the local user's
    /// choice.
    #[test]
    fn a_public_bind_needs_tokens_of_16_characters() {
        let short = refusal(&load(&[
            ("PHIGUARD_HOST", "0.0.0.0"),
            ("PHIGUARD_AUTH_TOKEN", "client-token-for-tests"),
            ("PHIGUARD_ADMIN_TOKEN", "hunter2-admin"),
        ]))
        .expect("refused");
        assert_eq!(
            short,
            StartRefusal::ShortToken {
                var: "PHIGUARD_ADMIN_TOKEN",
                host: "0.0.0.0".into()
            }
        );
        assert_eq!(short.key(), "security.admin_token");
        assert!(!short.to_string().contains("hunter2"), "{short}");
        let exactly = "0123456789abcdef";
        for (host, admin) in [("0.0.0.0", exactly), ("127.0.0.1", "hunter2-admin")] {
            let r = refusal(&load(&[
                ("PHIGUARD_HOST", host),
                ("PHIGUARD_AUTH_TOKEN", "client-token-for-tests"),
                ("PHIGUARD_ADMIN_TOKEN", admin),
            ]));
            assert_eq!(r, None, "{host}");
        }
    }

    #[test]
    fn a_public_bind_needs_auth_and_a_token() {
        let r = refusal(&load(&[
            ("PHIGUARD_HOST", "0.0.0.0"),
            ("PHIGUARD_AUTH", "off"),
        ]));
        assert_eq!(
            r.map(|r| r.to_string()),
            Some("PHIGUARD_AUTH=off is refused on a non-loopback bind (0.0.0.0); bind 127.0.0.1 or turn auth on".into())
        );
        let r = refusal(&load(&[("PHIGUARD_HOST", "0.0.0.0")]));
        assert_eq!(
            r,
            Some(StartRefusal::TokenRequired {
                host: "0.0.0.0".into()
            })
        );
        assert!(is_loopback("[::1]") && is_loopback("localhost") && !is_loopback("10.0.0.1"));
    }

    /// An alias that is not `requested=installed`, one that maps to a model not installed,
    /// and a served name that is neither installed nor an alias stop start-up, each naming
    /// its setting and source; `default`, `rules` and installed models pass. Before, all
    /// three started, and the names were advertised and refused on every request.
    #[test]
    fn aliases_and_served_names_must_name_installed_models() {
        let installed = |id: &str| matches!(id, "rules" | "phiguard-deid");
        let check = |pairs: &[(&str, &str)]| models_refusal(&load(pairs), &installed);
        let r = check(&[("PHIGUARD_MODEL_ALIASES", "garbage")]).expect("refused");
        assert_eq!(
            r,
            StartRefusal::AliasMalformed {
                by: "PHIGUARD_MODEL_ALIASES".into(),
                entry: 1
            }
        );
        assert_eq!(r.key(), "models.aliases");
        // The settings-only rule sees a malformed entry too (PUT, `phiguard settings set`).
        assert_eq!(
            refusal(&load(&[("PHIGUARD_MODEL_ALIASES", "a=rules,=x")])),
            {
                Some(StartRefusal::AliasMalformed {
                    by: "PHIGUARD_MODEL_ALIASES".into(),
                    entry: 2,
                })
            }
        );
        let r = check(&[("PHIGUARD_MODEL_ALIASES", "foo=nonexistentmodel")]).expect("refused");
        let msg = r.to_string();
        assert!(
            msg.starts_with("models.aliases (PHIGUARD_MODEL_ALIASES): foo=nonexistentmodel")
                && msg.contains("not installed"),
            "{msg}"
        );
        assert!(!r.rule().contains("nonexistentmodel"), "{}", r.rule());
        let r = check(&[("OPENMED_SERVICE_SERVED_MODELS", "rules,nonexistent")]).expect("refused");
        assert_eq!(r.key(), "models.served");
        assert!(
            r.to_string()
                .starts_with("models.served (OPENMED_SERVICE_SERVED_MODELS): nonexistent is not"),
            "{r}"
        );
        assert!(r.rule().starts_with("entry 2 ") && !r.rule().contains("nonexistent"));
        let r =
            check(&[("PHIGUARD_PRELOAD_MODELS", "phiguard-deid,phiguard-deidd")]).expect("refused");
        assert_eq!(r.key(), "models.preload");
        assert!(r.rule().starts_with("entry 2 ") && !r.rule().contains("deidd"));
        assert!(check(&[("PHIGUARD_PRELOAD_MODELS", "default,rules,phiguard-deid")]).is_none());
        for ok in [
            &[(
                "PHIGUARD_MODEL_ALIASES",
                "a=default, b = rules,c=phiguard-deid",
            )][..],
            &[
                ("PHIGUARD_MODEL_ALIASES", "a=rules"),
                ("PHIGUARD_SERVED_MODELS", "a,phiguard-deid"),
            ],
            &[],
        ] {
            assert_eq!(check(ok), None, "{ok:?}");
        }
    }

    /// A change is refused when it leaves the default, an alias or a served name naming no
    /// installed model, and not for a refusal that was there before it.
    #[test]
    fn a_change_is_refused_when_it_names_no_installed_model() {
        let installed = |id: &str| matches!(id, "rules" | "phiguard-deid" | "tiny");
        let before = load(&[]);
        let after = |changes: &[(&str, &str)]| {
            let mut next = before.clone();
            let changes: Vec<(String, String)> = changes
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            next.apply(&changes).expect("valid shape");
            change_refusal(&before, &next, &installed).map(|r| r.key())
        };
        assert_eq!(
            after(&[("models.default", "nothere")]),
            Some("models.default")
        );
        assert_eq!(after(&[("models.default", "tiny")]), None);
        assert_eq!(
            after(&[("models.aliases", "x=nothere")]),
            Some("models.aliases")
        );
        assert_eq!(after(&[("models.aliases", "x=tiny,y=default")]), None);
        assert_eq!(
            after(&[("models.served", "nothere")]),
            Some("models.served")
        );
        assert_eq!(after(&[("models.served", "tiny,rules")]), None);
        // The default through an alias: `mine` is no model, but an alias to one.
        assert_eq!(
            after(&[("models.default", "mine"), ("models.aliases", "mine=tiny")]),
            None
        );
        // A refusal already there does not block an unrelated change.
        let broken = load(&[("PHIGUARD_SERVED_MODELS", "nothere")]);
        let mut next = broken.clone();
        next.apply(&[("retry.max_attempts".into(), "4".into())])
            .expect("valid");
        assert_eq!(change_refusal(&broken, &next, &installed), None);
    }

    /// A model is in use while `models.default` names it (or an alias the default names maps
    /// to it), an alias maps to it or `models.served` names it; one the settings do not name,
    /// or one not installed, is not.
    #[test]
    fn removal_names_the_setting_that_uses_the_model() {
        let installed = |id: &str| matches!(id, "rules" | "phiguard-deid" | "tiny" | "spare");
        let check =
            |pairs: &[(&str, &str)], id: &str| removal_refusal(&load(pairs), id, &installed);
        assert_eq!(check(&[], "phiguard-deid"), Some("models.default"));
        assert_eq!(
            check(
                &[
                    ("PHIGUARD_DEFAULT_MODEL", "mine"),
                    ("PHIGUARD_MODEL_ALIASES", "mine=tiny")
                ],
                "tiny"
            ),
            Some("models.default")
        );
        assert_eq!(
            check(&[("PHIGUARD_MODEL_ALIASES", "a=tiny")], "tiny"),
            Some("models.aliases")
        );
        assert_eq!(
            check(&[("PHIGUARD_SERVED_MODELS", "tiny,rules")], "tiny"),
            Some("models.served")
        );
        assert_eq!(
            check(&[("PHIGUARD_MODEL_ALIASES", "a=tiny")], "spare"),
            None
        );
        assert_eq!(check(&[("PHIGUARD_DEFAULT_MODEL", "tiny")], "gone"), None);
    }

    /// What start-up refuses, a change is refused for, by the same rule: `security.auth`
    /// off while the bind is public (before, it was saved and the next start exited 2).
    #[test]
    fn apply_refuses_what_the_next_start_would_refuse() {
        let mut s = load(&[
            ("PHIGUARD_HOST", "0.0.0.0"),
            ("PHIGUARD_AUTH_TOKEN", "client-token-1"),
            ("PHIGUARD_ADMIN_TOKEN", "admin-token-1"),
        ]);
        let errs = s
            .apply(&[("security.auth".into(), "off".into())])
            .expect_err("refused");
        assert_eq!(errs[0].field, "security.auth");
        assert!(
            errs[0].message.contains("non-loopback"),
            "{}",
            errs[0].message
        );
        assert_eq!(s.get(keys::SECURITY_AUTH), "on");
        // Back on a loopback host in the same change, it is fine.
        let mut s = load(&[]);
        assert!(s
            .apply(&[("server.host".into(), "0.0.0.0".into())])
            .is_err());
        assert!(s.apply(&[("security.auth".into(), "off".into())]).is_ok());
    }
}
