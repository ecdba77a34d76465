//! `phiguard models rm` refuses a model the settings name, by the rule of
//! `DELETE /admin/models/{id}` (409): removed, the next start would stop (exit 2).

use super::{command, refused, run, stderr};

/// A model that `models.default`, an alias (`models.aliases`) or `models.served` names is
/// not removed: exit 2 naming the setting and where it was set, the model still installed;
/// once no setting names it, it goes. Before, `rm` removed it and the next start stopped.
#[test]
fn rm_refuses_a_model_the_settings_name() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let phiguard = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = command(&super::binary(), tmp.path());
        c.current_dir(tmp.path())
            .envs(env.iter().copied())
            .args(args);
        run(c, None)
    };
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/hub/phiguard-test/tiny-bert"
    );
    let out = phiguard(&["models", "import", fixture, "--id", "tiny"], &[]);
    assert!(out.status.success(), "import: {}", stderr(&out));
    let config = tmp.path().join("phiguard/config");
    std::fs::create_dir_all(&config).expect("config dir");
    let file = config.join("settings.toml");
    for (text, env, says) in [
        (
            "[models]\naliases = \"mine=tiny\"\n",
            &[][..],
            "models.aliases (settings.toml)",
        ),
        (
            "[models]\nserved = \"tiny,rules\"\n",
            &[],
            "models.served (settings.toml)",
        ),
        (
            "[models]\ndefault = \"tiny\"\n",
            &[],
            "models.default (settings.toml)",
        ),
        (
            "",
            &[("PHIGUARD_DEFAULT_MODEL", "tiny")],
            "models.default (PHIGUARD_DEFAULT_MODEL)",
        ),
    ] {
        std::fs::write(&file, text).expect("settings.toml");
        let out = phiguard(&["models", "rm", "tiny"], env);
        refused(&out, &["tiny is in use", says, "first"]);
        let out = phiguard(&["models", "verify", "tiny"], &[]);
        assert!(out.status.success(), "{text}: {}", stderr(&out));
    }
    std::fs::write(&file, "[models]\naliases = \"mine=rules\"\n").expect("settings.toml");
    let out = phiguard(&["models", "rm", "tiny"], &[]);
    assert!(out.status.success(), "rm: {}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "removed tiny");
}

/// Admin actions taken at the command line are in the audit log as the admin API's are
/// (actor `cli`): a setting with its old and new value, a model
/// imported and removed, and a refusal. Before, only token actions were recorded.
#[test]
fn command_line_admin_actions_are_audited() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let phiguard = |args: &[&str]| {
        let mut c = command(&super::binary(), tmp.path());
        c.current_dir(tmp.path()).args(args);
        run(c, None)
    };
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/hub/phiguard-test/tiny-bert"
    );
    for args in [
        &["settings", "set", "retry.max_attempts", "5"][..],
        &["settings", "set", "security.auth", "off"],
        &["models", "import", fixture, "--id", "tiny"],
        &["models", "rm", "tiny"],
    ] {
        let out = phiguard(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    let out = phiguard(&["settings", "set", "retry.max_attempts", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let log =
        std::fs::read_to_string(tmp.path().join("phiguard/data/audit.jsonl")).expect("audit log");
    let records: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let got: Vec<(String, String, String)> = records
        .iter()
        .map(|r| {
            (
                r["action"].as_str().unwrap_or("").to_owned(),
                r["target"].as_str().unwrap_or("").to_owned(),
                r["result"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let want = [
        ("settings.update", "retry.max_attempts", "ok"),
        ("settings.update", "security.auth", "ok"),
        ("model.import", "tiny", "ok"),
        ("model.delete", "tiny", "ok"),
        ("settings.update", "", "refused"),
    ]
    .map(|(a, t, r)| (a.to_owned(), t.to_owned(), r.to_owned()));
    assert_eq!(got, want, "{log}");
    assert!(records.iter().all(|r| r["actor"] == "cli"), "{log}");
    assert_eq!(records[0]["old"], 3, "{log}");
    assert_eq!(records[0]["new"], 5, "{log}");
}

/// `rules` and `default` are the names requests use for the rule recognizers and the
/// default model: a model imported under either could never be reached (exit 1, nothing
/// installed). Before, both were imported.
#[test]
fn import_refuses_the_reserved_names() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/hub/phiguard-test/tiny-bert"
    );
    for id in ["rules", "default"] {
        let mut c = command(&super::binary(), tmp.path());
        c.current_dir(tmp.path())
            .args(["models", "import", fixture, "--id", id]);
        let out = run(c, None);
        assert_eq!(out.status.code(), Some(1), "{id}: {}", stderr(&out));
        assert!(stderr(&out).contains("reserved"), "{}", stderr(&out));
    }
    let mut c = command(&super::binary(), tmp.path());
    c.current_dir(tmp.path()).args(["models", "list"]);
    let out = run(c, None);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !listed
            .lines()
            .any(|l| l.starts_with("rules") || l.starts_with("default")),
        "{listed}"
    );
}
