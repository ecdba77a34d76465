//! The `phiguard-desktop` binary: set up logging, read the flags, run the shell, and map its
//! outcome to an exit code in one place (0 quit normally, 1 the app could not start).
//!
//! A desktop app started from a launcher has no terminal, so log lines go to
//! `<data dir>/logs/phiguard-desktop.log` (stderr when that file cannot be opened). Nothing
//! logged here or by the library carries request or entity text.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::fs::OpenOptions;
use std::process::ExitCode;
use std::sync::Mutex;

use phiguard::settings::Home;
use tracing_subscriber::EnvFilter;

fn init_logging() {
    let filter = EnvFilter::try_from_env("PHIGUARD_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let dir = Home::from_env().data_dir().join("logs");
    let file = std::fs::create_dir_all(&dir).and_then(|()| {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("phiguard-desktop.log"))
    });
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match file {
        Ok(file) => builder
            .with_ansi(false)
            .with_writer(Mutex::new(file))
            .init(),
        Err(_) => builder.with_writer(std::io::stderr).init(),
    }
}

fn main() -> ExitCode {
    init_logging();
    let options = phiguard_desktop::Options::from_args(std::env::args().skip(1));
    match phiguard_desktop::run(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(kind = e.kind(), error = %e, "phiguard desktop could not start");
            ExitCode::FAILURE
        }
    }
}
