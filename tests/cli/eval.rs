//! `phiguard eval` reads OpenMed's fixture vocabulary as it is, through the real binary.

use super::{binary, command, run, stderr};

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
    let mut c = command(&binary(), t.path());
    c.arg("eval")
        .arg("--gold")
        .arg(&gold)
        .args(["--model", "rules", "--json"]);
    let o = run(c, None);
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
