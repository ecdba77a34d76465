//! FHIR files through `phiguard deid` (rules only): PHI outside the places the walker used
//! to read (narrative markup, Bundle URLs, typed elements under other keys) comes out
//! removed or de-identified, and the document stays consistent.

use std::path::Path;

use serde_json::{json, Value};

use super::{binary, command, run, stderr};

/// `doc` written as `in/doc.json`, de-identified with `args`, read back.
fn deid_json(home: &Path, doc: &Value, args: &[&str], env: &[(&str, &str)]) -> Value {
    let input = home.join("in/doc.json");
    std::fs::create_dir_all(input.parent().expect("parent")).expect("mkdir");
    std::fs::write(&input, doc.to_string()).expect("write");
    let out = home.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let mut c = command(&binary(), home);
    c.current_dir(home)
        .args(["deid", "in/doc.json", "--out", "out", "--model", "rules"])
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = run(c, None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_str(&std::fs::read_to_string(out.join("doc.json")).expect("output"))
        .expect("the output is JSON")
}

/// Asserts that none of `phi` is anywhere in `out`.
fn assert_gone(out: &Value, phi: &[&str]) {
    let text = out.to_string();
    for p in phi {
        assert!(!text.contains(p), "{p} left in {text}");
    }
}

/// The narrative's attributes and comments: a mailto and tel link, an image URL, a `title`
/// with a phone number, an `id` and a comment with an MRN. Before, every one came out as it
/// went in (only text nodes were read), under both profiles.
#[test]
fn narrative_attributes_and_comments_come_out_without_phi() {
    let t = tempfile::tempdir().expect("tempdir");
    let div = concat!(
        r#"<div xmlns="http://www.w3.org/1999/xhtml"><p title="Call 617-555-0142">Patient seen</p>"#,
        r#"<a href="mailto:arthur.quibblesworth@example.com">mail</a> <a href="tel:+16175550142">call</a>"#,
        r#"<img src="http://hospital.example.org/photo/Quibblesworth.png" alt="arthur.quibblesworth@example.com"/>"#,
        r#"<span id="Quibblesworth-a1">x</span><!-- Arthur Quibblesworth MRN 4455667 --></div>"#
    );
    let doc = json!({"resourceType": "Patient", "id": "p1",
        "text": {"status": "generated", "div": div}});
    for profile in ["hipaa_safe_harbor", "pseudonymize"] {
        let out = deid_json(t.path(), &doc, &["--fhir-profile", profile], &[]);
        assert_gone(
            &out,
            &[
                "Quibblesworth",
                "quibblesworth",
                "617-555-0142",
                "6175550142",
                "4455667",
            ],
        );
        let div = out["text"]["div"].as_str().expect("div");
        assert!(
            div.starts_with(r#"<div xmlns="http://www.w3.org/1999/xhtml"><p title=""#)
                && div.contains("Patient seen</p>")
                && div.ends_with("</span></div>"),
            "{div}"
        );
    }
}
