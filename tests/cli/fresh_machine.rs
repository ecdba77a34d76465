//! The README's first command must build on a fresh machine with nothing but the Rust
//! toolchain: no crate in the root crate's (non-dev) dependency tree may link a system
//! library through pkg-config. Cargo marks every crate that links native code with `links`;
//! each one allowed here says why it needs nothing from the system.

use std::collections::{HashMap, HashSet};
use std::process::Command;

/// `links` crates that build what they link from their own sources (or link nothing).
const ALLOWED: [(&str, &str); 3] = [
    ("onig_sys", "compiles its bundled Oniguruma with cc"),
    ("ring", "compiles its bundled C and assembly with cc"),
    (
        "rayon-core",
        "a `links` key only to keep one copy; links nothing",
    ),
];

fn host() -> String {
    let out = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("-vV")
        .output()
        .expect("rustc -vV");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .expect("host triple")
}

/// Runs `cargo ARGS… <host triple>` in the checkout and returns its stdout.
fn cargo_for_host(args: &[&str], host: &str) -> Vec<u8> {
    let out = Command::new(env!("CARGO"))
        .args(args)
        .arg(host)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn the_root_crate_needs_no_system_library() {
    let host = host();
    let metadata = cargo_for_host(
        &[
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--filter-platform",
        ],
        &host,
    );
    let m: serde_json::Value = serde_json::from_slice(&metadata).expect("metadata JSON");
    let packages: HashMap<&str, &serde_json::Value> = m["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| (p["id"].as_str().expect("id"), p))
        .collect();
    // What the root crate really builds with (normal and build dependencies, not dev) comes
    // from `cargo tree`: it applies the feature resolver, whereas `metadata`'s resolve also
    // lists weak optional dependencies that no feature turns on.
    let tree = cargo_for_host(
        &[
            "tree",
            "--locked",
            "-p",
            "phiguard",
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--format",
            "{p}",
            "--target",
        ],
        &host,
    );
    let tree = String::from_utf8_lossy(&tree).into_owned();
    // `name vX.Y.Z (source)`; the same crate repeats, marked `(*)`.
    let built: HashSet<(String, String)> = tree
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((
                w.next()?.to_owned(),
                w.next()?.trim_start_matches('v').to_owned(),
            ))
        })
        .collect();
    let seen: Vec<&str> = packages
        .iter()
        .filter(|(_, p)| {
            let key = (
                p["name"].as_str().unwrap_or_default().to_owned(),
                p["version"].as_str().unwrap_or_default().to_owned(),
            );
            built.contains(&key)
        })
        .map(|(id, _)| *id)
        .collect();
    assert!(
        seen.len() > 100,
        "the walk found only {} crates",
        seen.len()
    );
    let allowed: HashSet<&str> = ALLOWED.iter().map(|(n, _)| *n).collect();
    let mut native: Vec<String> = seen
        .iter()
        .map(|id| packages[id])
        .filter(|p| !p["links"].is_null())
        .map(|p| p["name"].as_str().unwrap_or_default().to_owned())
        .filter(|n| !allowed.contains(n.as_str()))
        .collect();
    native.sort();
    assert!(
        native.is_empty(),
        "crates that link a native library, which a fresh machine may lack: {native:?}"
    );
}
