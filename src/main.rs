//! The `phiguard` binary: installs the payload-free panic hook, parses the command line and
//! maps errors to exit codes.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.

use std::process::ExitCode;

fn main() -> ExitCode {
    // First, so no panic (even one in argument parsing) prints its payload.
    phiguard::logging::install_panic_hook();
    phiguard::cli::main()
}
