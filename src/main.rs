//! The `phiguard` binary: installs the payload-free panic hook, parses the command line and
//! maps errors to exit codes.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.
//!
//! The bundled model is compiled into this binary (not into the library, so test binaries
//! and the desktop shell stay small): a `phiguard` copied anywhere — `cargo install`, a
//! package, a container — serves offline from the first start (see `models::bundle`).

use std::process::ExitCode;

static BUNDLED_MODEL: phiguard::models::bundle::Embedded =
    phiguard::embedded_model!(concat!(env!("CARGO_MANIFEST_DIR"), "/models/phiguard-deid"));

fn main() -> ExitCode {
    // First, so no panic (even one in argument parsing) prints its payload.
    phiguard::logging::install_panic_hook();
    // Before any thread starts (see `phiguard::memory`).
    phiguard::memory::limit_malloc_arenas(2);
    phiguard::models::bundle::embed(&BUNDLED_MODEL);
    phiguard::cli::main()
}
