//! The `phiguard` binary as a user runs it: an installed copy far from the checkout, the
//! safety of `deid` over files and folders, `models rm` of a model in use, and the
//! fresh-machine build (no crate that needs a system library).

mod deid;
mod eval;
mod fhir;
mod fresh_machine;
mod installed;
mod models;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The binary cargo built for these tests.
pub(crate) fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_phiguard"))
}

/// A command for `exe` with a clean environment: only `PATH`, a `HOME` and `PHIGUARD_HOME`
/// inside `home`, file secrets, logs off. Nothing from the caller's `PHIGUARD_*` leaks in.
pub(crate) fn command(exe: &Path, home: &Path) -> Command {
    let mut c = Command::new(exe);
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PHIGUARD_HOME", home.join("phiguard"))
        .env("PHIGUARD_KEYRING", "off")
        .env("PHIGUARD_LOG_LEVEL", "off")
        .stdin(Stdio::null());
    c
}

/// Runs to completion, feeding `stdin` when given.
pub(crate) fn run(mut c: Command, stdin: Option<&str>) -> Output {
    use std::io::Write;
    if stdin.is_some() {
        c.stdin(Stdio::piped());
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn phiguard");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("write stdin");
    }
    child.wait_with_output().expect("wait")
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that `o` is a refusal of the command line (exit 2) whose message says each of
/// `says`.
pub(crate) fn refused(o: &Output, says: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for s in says {
        assert!(err.contains(s), "{s:?} not in: {err}");
    }
}
