//! `phiguard serve`: runs the service until SIGTERM/SIGINT, then drains and exits 0.

use super::{init_logging, runtime, Failure};
use crate::server::Server;
use crate::settings::{keys, Home, Settings};

pub(super) fn run(host: Option<String>, port: Option<u16>, ui: bool) -> Result<(), Failure> {
    // Flags are the highest layer, locked as environment variables are; messages name the
    // flag, not a variable that was never set.
    let home = Home::from_env();
    let mut settings = Settings::load(&home)?;
    if let Some(h) = host {
        settings.set_from_flag(keys::SERVER_HOST.name(), &h, "--host")?;
    }
    if let Some(p) = port {
        settings.set_from_flag(keys::SERVER_PORT.name(), &p.to_string(), "--port")?;
    }
    if ui {
        settings.set_from_flag(keys::SERVER_UI.name(), "true", "--ui")?;
    }
    init_logging(&settings);
    let rt = runtime()?;
    rt.block_on(async move {
        let server = Server::start(settings, home).await.map_err(|e| match e {
            crate::server::ServerError::Bind { .. } => Failure::runtime(e.to_string()),
            _ => Failure::usage(e.to_string()),
        })?;
        // The one line tests and scripts read to find the port.
        println!("listening on http://{}", server.local_addr());
        if let Some(probes) = server.probe_addr() {
            println!("probes on http://{probes}");
        }
        wait_for_signal().await;
        tracing::info!("shutting down: draining in-flight work");
        server.shutdown().await;
        Ok(())
    })
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
