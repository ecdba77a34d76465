//! The `phiguard` binary: parses the command line and maps errors to exit codes.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.

use std::process::ExitCode;

fn main() -> ExitCode {
    phiguard::cli::main()
}
