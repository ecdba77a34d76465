//! `phiguard serve`: runs the service until SIGTERM/SIGINT, then drains and exits 0.

use super::{init_logging, runtime, Failure};
use crate::server::Server;
use crate::settings::{Home, Settings};

pub(super) fn run(host: Option<String>, port: Option<u16>, ui: bool) -> Result<(), Failure> {
    // Flags are the highest layer: they are applied as the environment variables they stand
    // for, before any thread exists.
    if let Some(h) = host {
        std::env::set_var("PHIGUARD_HOST", h);
    }
    if let Some(p) = port {
        std::env::set_var("PHIGUARD_PORT", p.to_string());
    }
    if ui {
        std::env::set_var("PHIGUARD_UI", "true");
    }
    let home = Home::from_env();
    let settings = Settings::load(&home)?;
    init_logging(&settings);
    let rt = runtime()?;
    rt.block_on(async move {
        let server = Server::start(settings, home).await.map_err(|e| match e {
            crate::server::ServerError::Bind { .. } => Failure::runtime(e.to_string()),
            _ => Failure::usage(e.to_string()),
        })?;
        // The one line tests and scripts read to find the port.
        println!("listening on http://{}", server.local_addr());
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
