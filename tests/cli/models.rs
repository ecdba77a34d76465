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
