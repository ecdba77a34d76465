//! `phiguard eval` through the real binary: OpenMed's fixture vocabulary read as it is,
//! its gate and its `--predictions` file.

use std::path::Path;

use super::{binary, command, refused, run, stderr};

/// `phiguard eval ARGS…` in `home` with the rule recognizers.
fn eval(home: &Path, args: &[&str]) -> std::process::Output {
    let mut c = command(&binary(), home);
    c.current_dir(home)
        .arg("eval")
        .args(args)
        .args(["--model", "rules"]);
    run(c, None)
}

/// An OpenMed-shaped fixture: OpenMed's labels (IBAN, PREFIX, GENDER) and one label that
/// no vocabulary knows.
const FIXTURE: &str = concat!(
    r#"{"text":"Mr Ada Li, female, IBAN DE89370400440532013000, code QX-77.","gold_spans":["#,
    r#"{"start":0,"end":2,"label":"PREFIX"},{"start":3,"end":6,"label":"FIRST_NAME"},"#,
    r#"{"start":7,"end":9,"label":"LAST_NAME"},{"start":11,"end":17,"label":"GENDER"},"#,
    r#"{"start":24,"end":46,"label":"IBAN"},{"start":53,"end":58,"label":"STUDY_CODE"}]}"#,
    "\n"
);

#[test]
fn openmed_labels_need_no_map_and_an_unknown_label_is_scored_with_a_warning() {
    let t = tempfile::tempdir().expect("tempdir");
    let gold = t.path().join("openmed.jsonl");
    std::fs::write(&gold, FIXTURE).expect("write");
    let o = eval(
        t.path(),
        &["--gold", gold.to_str().expect("utf-8"), "--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json report");
    let labels: Vec<&str> = report["per_label"]
        .as_array()
        .expect("per_label")
        .iter()
        .filter(|m| m["strict"]["gold"].as_u64().unwrap_or(0) > 0)
        .filter_map(|m| m["label"].as_str())
        .collect();
    for want in ["FIRST_NAME", "LAST_NAME", "ACCOUNT_NUMBER", "OTHER"] {
        assert!(labels.contains(&want), "{want} not in {labels:?}");
    }
    assert!(!labels.contains(&"PERSON"), "{labels:?}");
    let foreign = &report["foreign_labels"][0];
    assert_eq!(foreign["label"], "STUDY_CODE");
    assert_eq!(foreign["gold_spans"], 1);
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("STUDY_CODE"), "{warnings}");
    assert!(
        warnings.contains("not Safe Harbor identifiers"),
        "{warnings}"
    );
}

/// `--predictions` never replaces the gold file, however it is reached, and replaces another
/// existing file only with `--force`. Before, `--predictions g.jsonl --gold g.jsonl`
/// destroyed the gold and any existing file was overwritten in silence.
#[cfg(unix)]
#[test]
fn predictions_never_replace_the_gold_and_an_existing_file_needs_force() {
    let t = tempfile::tempdir().expect("tempdir");
    std::fs::write(t.path().join("g.jsonl"), FIXTURE).expect("write");
    std::os::unix::fs::symlink("g.jsonl", t.path().join("link.jsonl")).expect("symlink");
    std::fs::hard_link(t.path().join("g.jsonl"), t.path().join("hard.jsonl")).expect("link");
    for (predictions, force) in [
        ("g.jsonl", false),
        ("g.jsonl", true),
        ("./link.jsonl", true),
        ("hard.jsonl", true),
    ] {
        let mut args = vec!["--gold", "g.jsonl", "--predictions", predictions];
        if force {
            args.push("--force");
        }
        let o = eval(t.path(), &args);
        refused(&o, &["is the input g.jsonl"]);
        assert_eq!(
            std::fs::read_to_string(t.path().join("g.jsonl")).expect("read"),
            FIXTURE
        );
    }

    std::fs::write(t.path().join("old.jsonl"), "keep me\n").expect("write");
    let o = eval(
        t.path(),
        &["--gold", "g.jsonl", "--predictions", "old.jsonl"],
    );
    refused(&o, &["--force"]);
    assert_eq!(
        std::fs::read_to_string(t.path().join("old.jsonl")).expect("read"),
        "keep me\n"
    );
    let o = eval(
        t.path(),
        &["--gold", "g.jsonl", "--predictions", "old.jsonl", "--force"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let written = std::fs::read_to_string(t.path().join("old.jsonl")).expect("read");
    assert!(written.starts_with("{\"index\":0,"), "{written}");
    let o = eval(
        t.path(),
        &["--gold", "g.jsonl", "--predictions", "new.jsonl"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(t.path().join("new.jsonl").is_file());
}

/// A gold file with no note is refused, and the recall gate fails on one with no gold span
/// (recall over nothing is 1.0); out-of-range numbers are usage errors. Before, each of
/// these passed `--min-recall` with exit 0.
#[test]
fn the_gate_fails_without_gold_spans_and_numbers_outside_0_to_1_are_refused() {
    let t = tempfile::tempdir().expect("tempdir");
    std::fs::write(t.path().join("g.jsonl"), FIXTURE).expect("write");
    std::fs::write(t.path().join("empty.jsonl"), "").expect("write");
    std::fs::write(t.path().join("blank.jsonl"), "\n  \n\n").expect("write");
    std::fs::write(
        t.path().join("none.jsonl"),
        "{\"text\":\"Call 617-555-0142.\",\"gold_spans\":[]}\n{\"text\":\"Fine.\",\"gold_spans\":[]}\n",
    )
    .expect("write");
    for gold in ["empty.jsonl", "blank.jsonl"] {
        let o = eval(t.path(), &["--gold", gold, "--min-recall", "0.5"]);
        refused(&o, &["holds no notes"]);
    }
    let o = eval(t.path(), &["--gold", "none.jsonl", "--min-recall", "0.5"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no gold span"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("617-555-0142"), "{}", stderr(&o));
    let o = eval(t.path(), &["--gold", "none.jsonl"]);
    assert_eq!(o.status.code(), Some(0), "without a gate: {}", stderr(&o));

    for bad in [
        ["--min-recall", "nan"],
        ["--min-recall", "1.5"],
        ["--min-recall", "-0.1"],
        ["--threshold", "2"],
        ["--threshold", "-1"],
        ["--threshold", "inf"],
    ] {
        let mut args = vec!["--gold", "g.jsonl"];
        args.extend(bad);
        let o = eval(t.path(), &args);
        refused(&o, &["must be a number from 0 to 1"]);
    }
}
