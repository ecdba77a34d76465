//! Shared by the integration-test binaries that start real servers with the rule backend
//! only (the outage scenarios, the cluster replicas): one way to build a server on an
//! ephemeral loopback port in its own temporary home.

use std::collections::HashMap;

use phiguard::server::{Server, StartOptions};
use phiguard::settings::{Home, Settings};

/// Starts a real server: port 0, the given client and admin tokens, the rules as the default
/// model, logs off, file secrets; `env` on top. Keep the `TempDir` alive as long as the
/// server.
pub(crate) async fn start_rules_server(
    client: &str,
    admin: &str,
    env: &[(&str, &str)],
) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = Home::at(dir.path());
    let mut vars: HashMap<String, String> = [
        ("PHIGUARD_PORT", "0"),
        ("PHIGUARD_AUTH_TOKEN", client),
        ("PHIGUARD_ADMIN_TOKEN", admin),
        ("PHIGUARD_DEFAULT_MODEL", "rules"),
        ("PHIGUARD_LOG_LEVEL", "off"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in env {
        vars.insert(k.to_string(), v.to_string());
    }
    let settings = Settings::load_from(&home, |k| vars.get(k).cloned()).expect("settings");
    let opts = StartOptions {
        file_secrets: true,
        ..Default::default()
    };
    let server = Server::start_with(settings, home, opts)
        .await
        .expect("start");
    (server, dir)
}
