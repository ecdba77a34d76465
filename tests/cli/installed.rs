//! A release-like install: the binary copied into an empty folder, started from there,
//! finds the bundled model without the checkout (it is embedded and unpacked once).

use super::{command, run, stderr};

#[test]
fn a_copied_binary_serves_the_bundled_model_offline() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin_dir = tmp.path().join("bin");
    std::fs::create_dir_all(&bin_dir).expect("mkdir");
    let exe = bin_dir.join("phiguard");
    std::fs::copy(super::binary(), &exe).expect("copy the binary");

    // Nothing beside the copy, no variable pointing at the checkout, run from the temp folder.
    let mut c = command(&exe, tmp.path());
    c.current_dir(tmp.path())
        .args(["deid", "-", "--method", "mask"]);
    let out = run(
        c,
        Some("Seen by Dr. Alice Jones on 03/04/2021 at Mercy Hospital, phone 617-555-0142.\n"),
    );
    assert!(out.status.success(), "deid failed: {}", stderr(&out));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(!text.contains("617-555-0142"), "phone left in: {text}");
    assert!(!text.contains("03/04/2021"), "date left in: {text}");

    // The model came from the copy embedded in the binary, unpacked into the store.
    let bundled = tmp.path().join("phiguard/data/models/.bundled");
    let copies: Vec<_> = std::fs::read_dir(&bundled)
        .expect("the embedded model was unpacked into the store")
        .flatten()
        .collect();
    assert_eq!(copies.len(), 1);
    assert!(copies[0].path().join("model.safetensors").is_file());

    // And it verifies against its shipped checksums.
    let mut c = command(&exe, tmp.path());
    c.current_dir(tmp.path())
        .args(["models", "verify", "phiguard-deid"]);
    let out = run(c, None);
    assert!(out.status.success(), "verify failed: {}", stderr(&out));
}

/// Rampart stays in the catalog but is built on the machine: a pull refuses before any
/// network (the hub endpoint is a closed loopback port) and says how to build and import it.
#[test]
fn pulling_rampart_prints_how_to_build_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut c = command(&super::binary(), tmp.path());
    c.env("HF_ENDPOINT", "http://127.0.0.1:9")
        .args(["models", "pull", "rampart"]);
    let out = run(c, None);
    assert!(!out.status.success(), "a pull of rampart succeeded");
    let err = stderr(&out);
    assert!(err.contains("tools/convert_rampart.py --out DIR"), "{err}");
    assert!(
        err.contains("phiguard models import DIR --id rampart"),
        "{err}"
    );

    // The listing says it is built here, and the bundled model is bundled.
    let mut c = command(&super::binary(), tmp.path());
    c.args(["models", "list"]);
    let out = run(c, None);
    let list = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        list.lines()
            .any(|l| l.starts_with("phiguard-deid") && l.contains("bundled")),
        "{list}"
    );
    assert!(
        list.lines()
            .any(|l| l.starts_with("rampart ") && l.contains(" build ")),
        "{list}"
    );
}
