//! The `phiguard-desktop` binary: set up logging, read the flags, run the shell, and map its
//! outcome to an exit code in one place (0 quit normally, 1 the app could not start).
//!
//! A desktop app started from a launcher has no terminal, so log lines go to
//! `<data dir>/logs/phiguard-desktop.log` (stderr when that file cannot be opened). Nothing
//! logged here or by the library carries request or entity text: the filter and the panic
//! hook are the library's ([`phiguard::logging`]), so third-party crates stay at `warn` or
//! quieter whatever `PHIGUARD_LOG` asks, and a panic logs its location, never its payload.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::fs::OpenOptions;
use std::process::ExitCode;
use std::sync::Mutex;

use phiguard::logging::LogConfig;
use phiguard::settings::Home;

fn init_logging() {
    // `PHIGUARD_LOG` takes `RUST_LOG`-style directives (under the library's cap).
    let directives = std::env::var("PHIGUARD_LOG").ok();
    let cfg = LogConfig {
        level: "info",
        rust_log: directives.as_deref(),
        json: false,
        ansi: false,
    };
    let dir = Home::from_env().data_dir().join("logs");
    let file = std::fs::create_dir_all(&dir).and_then(|()| {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("phiguard-desktop.log"))
    });
    match file {
        Ok(file) => phiguard::logging::init(&cfg, Mutex::new(file)),
        Err(_) => phiguard::logging::init(
            &LogConfig {
                ansi: phiguard::logging::stderr_is_a_colour_terminal(),
                ..cfg
            },
            std::io::stderr,
        ),
    }
}

fn main() -> ExitCode {
    phiguard::logging::install_panic_hook();
    // Before any thread starts (see `phiguard::memory`).
    phiguard::memory::limit_malloc_arenas(2);
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
