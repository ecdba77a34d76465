//! The one way the integration-test binaries start a real server: port 0 on loopback, its own
//! temporary home, file secrets, the given environment on top of fixed test defaults. The
//! service tests add an injected clock and a scripted backend through `StartOptions`; the
//! outage scenarios and the cluster replicas serve the rule backend only.

use std::collections::HashMap;

use phiguard::server::{Server, StartOptions};
use phiguard::settings::{Home, Settings};

/// Starts a real server in a fresh temporary home: `defaults` then `env` as its environment
/// (later entries win), secrets in the 0600 file, `opts` injected. Keep the `TempDir` alive
/// as long as the server.
pub(crate) async fn boot(
    defaults: &[(&str, &str)],
    env: &[(&str, &str)],
    opts: StartOptions,
) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = Home::at(dir.path());
    let vars: HashMap<String, String> = [("PHIGUARD_PORT", "0")]
        .iter()
        .chain(defaults)
        .chain(env)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let settings = Settings::load_from(&home, |k| vars.get(k).cloned()).expect("settings");
    let opts = StartOptions {
        file_secrets: true,
        ..opts
    };
    let server = Server::start_with(settings, home, opts)
        .await
        .expect("start");
    (server, dir)
}

/// A server with the rules as the default model, logs off, the given client and admin
/// tokens; `env` on top.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub(crate) async fn start_rules_server(
    client: &str,
    admin: &str,
    env: &[(&str, &str)],
) -> (Server, tempfile::TempDir) {
    let defaults = [
        ("PHIGUARD_AUTH_TOKEN", client),
        ("PHIGUARD_ADMIN_TOKEN", admin),
        ("PHIGUARD_DEFAULT_MODEL", "rules"),
        ("PHIGUARD_LOG_LEVEL", "off"),
    ];
    boot(&defaults, env, StartOptions::default()).await
}
