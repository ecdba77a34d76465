//! `phiguard settings list` through the real binary, in a temporary `PHIGUARD_HOME` with the
//! keychain off: the JSON form (values, sources, no blanks, secrets hidden) and the plain
//! table (fits 100 columns, has the descriptions); a bad value stops start-up, named.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Runs the built `phiguard` with `args`, only the given `PHIGUARD_*`/`OPENMED_*` variables
/// (the caller's own are removed) and its home in `home`.
fn phiguard(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    command(home, args, env).output().expect("run phiguard")
}

/// The command [`phiguard`] runs, not yet started.
fn command(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_phiguard"));
    for (k, _) in std::env::vars() {
        if k.starts_with("PHIGUARD_") || k.starts_with("OPENMED_") || k == "COLUMNS" {
            cmd.env_remove(k);
        }
    }
    cmd.env("PHIGUARD_HOME", home)
        .env("PHIGUARD_KEYRING", "off")
        .envs(env.iter().copied())
        .args(args)
        .current_dir(home);
    cmd
}

fn list_json(home: &Path, env: &[(&str, &str)]) -> Vec<Value> {
    let out = phiguard(home, &["settings", "list", "--json"], env);
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    v.as_array().expect("a JSON array").clone()
}

fn row<'a>(rows: &'a [Value], key: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["key"] == key)
        .unwrap_or_else(|| panic!("no row {key}"))
}

#[test]
fn json_lists_every_setting_with_its_source_and_no_blank_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("config")).expect("config dir");
    std::fs::write(
        dir.path().join("config/settings.toml"),
        "[breaker]\nhalf_open_calls = 2\n",
    )
    .expect("settings.toml");
    let rows = list_json(
        dir.path(),
        &[
            ("PHIGUARD_RETRY_MAX_ATTEMPTS", "5"),
            ("OPENMED_SERVICE_CIRCUIT_BREAKER_FAILURE_THRESHOLD", "7"),
            ("PHIGUARD_AUTH_TOKEN", "pg_never_printed_0123456789"),
        ],
    );
    let keys: Vec<&str> = rows.iter().filter_map(|r| r["key"].as_str()).collect();
    let table: Vec<&str> = phiguard::settings::TABLE.iter().map(|d| d.key).collect();
    assert_eq!(keys, table, "one row per setting, in table order");

    for r in &rows {
        for field in [
            "key",
            "env",
            "value",
            "source",
            "default",
            "description",
            "rule",
        ] {
            let text = r[field].as_str().unwrap_or_default();
            assert!(
                !text.trim().is_empty(),
                "{} has a blank {field}: {r}",
                r["key"]
            );
        }
        assert!(r["auto"].is_boolean() && r["restart"].is_boolean() && r["secret"].is_boolean());
    }

    let attempts = row(&rows, "retry.max_attempts");
    assert_eq!(attempts["value"], "5");
    assert_eq!(attempts["source"], "env");
    assert_eq!(attempts["env"], "PHIGUARD_RETRY_MAX_ATTEMPTS");
    assert_eq!(attempts["alias"], "OPENMED_SERVICE_RETRY_MAX_ATTEMPTS");
    assert_eq!(attempts["default"], "3");

    let threshold = row(&rows, "breaker.failure_threshold");
    assert_eq!(threshold["value"], "7");
    assert_eq!(threshold["source"], "env");

    let half_open = row(&rows, "breaker.half_open_calls");
    assert_eq!(half_open["value"], "2");
    assert_eq!(half_open["source"], "file");

    let high = row(&rows, "admission.high_watermark");
    assert_eq!(high["value"], "auto (256)");
    assert_eq!(high["auto"], true);
    assert_eq!(high["source"], "default");
    assert_eq!(row(&rows, "admission.low_watermark")["value"], "auto (128)");

    let token = row(&rows, "security.auth_token");
    assert_eq!(token["value"], "(secret)");
    assert_eq!(token["source"], "env");
    assert_eq!(token["secret"], true);
    let all = serde_json::to_string(&rows).expect("json");
    assert!(!all.contains("pg_never_printed"), "a secret was printed");
}

#[test]
fn plain_table_fits_100_columns_and_describes_each_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hosts =
        "one.example.org,two.example.org,three.example.org,four.example.org,five.example.org";
    let out = phiguard(
        dir.path(),
        &["settings", "list"],
        &[("PHIGUARD_TRUSTED_HOSTS", hosts)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "wider than 100: {line}");
    }
    for def in phiguard::settings::TABLE {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{} ", def.key))),
            "no line for {}",
            def.key
        );
    }
    assert!(text.contains("total attempts per model call, the first included"));
    assert!(text.contains("env PHIGUARD_HOST; applies after a restart"));
    let hosts_line = text
        .lines()
        .find(|l| l.starts_with("security.trusted_hosts "))
        .expect("row");
    assert!(
        hosts_line.contains('…') && hosts_line.ends_with("env"),
        "{hosts_line}"
    );
    assert!(text.contains("settings get KEY"));
    let timeout_line = text
        .lines()
        .find(|l| l.starts_with("timeouts.request_timeout_seconds "))
        .expect("row");
    assert!(
        timeout_line.contains("auto (300 s, profile prod)"),
        "{timeout_line}"
    );
}

#[test]
fn a_bad_variable_is_named_and_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = phiguard(
        dir.path(),
        &["settings", "list", "--json"],
        &[("PHIGUARD_RETRY_MAX_ATTEMPTS", "zero")],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("PHIGUARD_RETRY_MAX_ATTEMPTS"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_key_that_is_not_64_hex_digits_is_named_and_never_shown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = phiguard(
        dir.path(),
        &["settings", "list", "--json"],
        &[("PHIGUARD_HASH_KEY", "my-secret-passphrase")],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("PHIGUARD_HASH_KEY") && err.contains("64 hex digits"),
        "{err}"
    );
    assert!(!err.contains("my-secret-passphrase"), "{err}");
}

/// A `models.device` this build cannot open (Metal, off macOS) stops `serve` and `deid` at
/// start, named with its reason, before a port is held or a file written: it is not a
/// service that reports ready while every model load fails.
#[cfg(not(target_os = "macos"))]
#[test]
fn a_device_that_cannot_be_opened_stops_serve_and_deid_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "Seen on 03/04/2021.\n").expect("write");
    for args in [
        &["serve", "--port", "0"][..],
        &["deid", "a.txt", "--out", "out"],
    ] {
        let mut child = command(dir.path(), args, &[("PHIGUARD_DEVICE", "metal")])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn phiguard");
        // A `serve` that started anyway would never exit: bounded wait, then fail.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while child.try_wait().expect("wait").is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("phiguard {args:?} with PHIGUARD_DEVICE=metal did not stop");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let out = child.wait_with_output().expect("output");
        let err = fatal_message(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("models.device (PHIGUARD_DEVICE) is metal")
                && err.contains("without metal support"),
            "{args:?}: {err}"
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains("listening on"));
    }
    assert!(!dir.path().join("out").exists(), "deid wrote an output");
}

/// The CLI names an unknown key and how to find the right one, for `get` and `set` alike
/// (`set` answered with the HTTP API's message, `body: … GET /admin/settings …`), and says
/// of each secret how it can be had.
#[test]
fn unknown_keys_and_secrets_get_the_cli_s_own_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in [
        &["settings", "set", "nope.key", "1"][..],
        &["settings", "get", "nope.key"][..],
    ] {
        let out = phiguard(dir.path(), args, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("unknown setting nope.key") && err.contains("phiguard settings list"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("/admin/settings"), "{args:?}: {err}");
    }
    let says = |key: &str| {
        let out = phiguard(dir.path(), &["settings", "get", key], &[]);
        assert_eq!(out.status.code(), Some(2), "{key}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(says("security.auth_token").contains("`phiguard token show`"));
    assert!(says("security.admin_token").contains("`phiguard token show --admin`"));
    let hash_key = says("security.hash_key");
    assert!(
        hash_key.contains("never printed") && !hash_key.contains("token show"),
        "{hash_key}"
    );
}

/// `phiguard settings set` of one key keeps every other value of `settings.toml`, those an
/// environment variable overrides included: once the variable is gone, the file's value is
/// back (before, the overridden `max_attempts` was dropped from the file).
#[test]
fn set_keeps_file_values_that_the_environment_overrides() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("config")).expect("config dir");
    let file = dir.path().join("config/settings.toml");
    std::fs::write(
        &file,
        "[retry]\nmax_attempts = 5\n[breaker]\nrecovery_timeout_seconds = 45\n",
    )
    .expect("settings.toml");
    let out = phiguard(
        dir.path(),
        &["settings", "set", "limits.token_rate_limit_rps", "5"],
        &[("PHIGUARD_RETRY_MAX_ATTEMPTS", "9")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let get = |key: &str| {
        let out = phiguard(dir.path(), &["settings", "get", key], &[]);
        assert!(out.status.success(), "{key}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(get("retry.max_attempts"), "5");
    assert_eq!(get("breaker.recovery_timeout_seconds"), "45");
    assert_eq!(get("limits.token_rate_limit_rps"), "5");
}

/// `phiguard settings set` of one key edits `settings.toml` in place: every comment (above
/// a key, at the end of a line, at the end of the file), the blank lines and the other keys
/// stay byte for byte, the changed line keeps its comment (before, the file was rewritten
/// from its values and every comment an admin wrote was lost).
#[test]
fn set_keeps_the_comments_and_layout_of_settings_toml() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("config")).expect("config dir");
    let file = dir.path().join("config/settings.toml");
    let text = "# Ward 4 server. Ask the on-call admin before changing anything here.\n\
                \n\
                [retry]\n\
                # Five: the model host drops the first call after each deploy (INC-1234).\n\
                max_attempts = 0x5   # do not lower\n\
                backoff_multiplier = 3.0\n\
                \n\
                [breaker]\n\
                # Tuned for the night batch.\n\
                failure_threshold = 4 # night batch\n\
                recovery_timeout_seconds = 45\n\
                \n\
                # End of the ward 4 settings.\n";
    std::fs::write(&file, text).expect("settings.toml");
    let out = phiguard(
        dir.path(),
        &["settings", "set", "breaker.failure_threshold", "6"],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved = std::fs::read_to_string(&file).expect("read settings.toml");
    assert_eq!(
        saved,
        text.replace(
            "failure_threshold = 4 # night batch",
            "failure_threshold = 6 # night batch"
        )
    );
    let get = phiguard(
        dir.path(),
        &["settings", "get", "breaker.failure_threshold"],
        &[],
    );
    assert_eq!(String::from_utf8_lossy(&get.stdout).trim(), "6");
}

/// `phiguard settings set` refuses what `PUT /admin/settings` refuses for the model names:
/// a default, an alias target or a served name that no installed model answers (exit 2,
/// naming the setting; nothing written). Before, only the shape of an alias was checked,
/// the value was saved and the next start stopped (exit 2).
#[test]
fn set_refuses_model_names_that_no_installed_model_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("config/settings.toml");
    for (key, value, says) in [
        ("models.aliases", "mine=nonexistentmodel", "not installed"),
        (
            "models.default",
            "nonexistentmodel",
            "names no installed model",
        ),
        (
            "models.served",
            "rules,nonexistentmodel",
            "not an installed model",
        ),
    ] {
        let out = phiguard(dir.path(), &["settings", "set", key, value], &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key}: {err}");
        assert!(
            err.contains(&format!("{key} (")) && err.contains(says),
            "{key}: {err}"
        );
        assert!(!file.exists(), "{key}: settings.toml was written");
    }
    for (key, value) in [
        ("models.aliases", "mine=rules,other=default"),
        ("models.served", "mine,rules"),
        ("models.default", "mine"),
    ] {
        let out = phiguard(dir.path(), &["settings", "set", key, value], &[]);
        assert!(
            out.status.success(),
            "{key}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Runs `phiguard serve --port 0` with `args` and `env`, which must stop at start: waits
/// (bounded; a server that started anyway is killed and fails the test) and returns the
/// exit code and stderr.
fn serve_refused(home: &Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut all = vec!["serve", "--port", "0"];
    all.extend_from_slice(args);
    let mut child = command(home, &all, env)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn phiguard");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("phiguard serve {args:?} with {env:?} started");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening on"));
    (out.status.code(), fatal_message(&out.stderr))
}

/// `serve`'s fatal error: with JSON logs (the default) one JSON line whose `fields.error`
/// is the message (a log pipeline parses it); plain otherwise. The message either way.
fn fatal_message(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v["fields"]["error"].as_str().map(str::to_owned))
                .unwrap_or_else(|| line.to_owned())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The same client and admin token (every client an admin), a placeholder of the deploy
/// files, or a short token on a public bind stops start-up, naming the variables and never
/// the values (before, all three started).
#[test]
fn equal_placeholder_or_short_tokens_stop_start_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, err) = serve_refused(
        dir.path(),
        &[],
        &[
            ("PHIGUARD_AUTH_TOKEN", "shared-secret-value-42"),
            ("PHIGUARD_ADMIN_TOKEN", "shared-secret-value-42"),
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("PHIGUARD_AUTH_TOKEN") && err.contains("PHIGUARD_ADMIN_TOKEN"),
        "{err}"
    );
    assert!(!err.contains("shared-secret-value-42"), "{err}");
    let (code, err) = serve_refused(
        dir.path(),
        &[],
        &[
            ("PHIGUARD_AUTH_TOKEN", "replace-me-client-token"),
            ("PHIGUARD_ADMIN_TOKEN", "replace-me-admin-token"),
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("PHIGUARD_AUTH_TOKEN") && err.contains("placeholder"),
        "{err}"
    );
    assert!(!err.contains("replace-me-"), "{err}");
    // A short token stops a service bound for the network, naming its variable only.
    let (code, err) = serve_refused(
        dir.path(),
        &["--host", "0.0.0.0"],
        &[
            ("PHIGUARD_AUTH_TOKEN", "s3cret"),
            ("PHIGUARD_ADMIN_TOKEN", "admin-token-0123456789"),
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("PHIGUARD_AUTH_TOKEN") && err.contains("fewer than 16 characters"),
        "{err}"
    );
    assert!(!err.contains("s3cret"), "{err}");
}

/// Refusals name where a value came from: `security.auth = "off"` in `settings.toml` is
/// not reported as `PHIGUARD_AUTH=off`, and a secret in `settings.toml` (which would be
/// ignored: secrets are read from the environment only) stops start-up naming its variable
/// and never its value.
#[test]
fn refusals_name_the_file_when_the_value_came_from_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("config")).expect("config dir");
    let file = dir.path().join("config/settings.toml");
    std::fs::write(&file, "[security]\nauth = \"off\"\n").expect("settings.toml");
    let (code, err) = serve_refused(
        dir.path(),
        &["--host", "0.0.0.0"],
        &[
            ("PHIGUARD_AUTH_TOKEN", "client-token-0123456789"),
            ("PHIGUARD_ADMIN_TOKEN", "admin-token-0123456789"),
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("security.auth = \"off\" in settings.toml") && !err.contains("PHIGUARD_AUTH="),
        "{err}"
    );
    for (text, var) in [
        (
            "[security]\nauth_token = \"filetok-never-shown\"\n",
            "PHIGUARD_AUTH_TOKEN",
        ),
        (
            "[cluster]\nredis_url = \"redis://u:filetok-never-shown@db\"\n",
            "PHIGUARD_REDIS_URL",
        ),
    ] {
        std::fs::write(&file, text).expect("settings.toml");
        let out = phiguard(dir.path(), &["settings", "list", "--json"], &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains(var) && err.contains("line 2") && err.contains("environment only"),
            "{err}"
        );
        assert!(!err.contains("filetok-never-shown"), "{err}");
    }
}

/// An alias that is not `requested=installed`, an alias to a model that is not installed and
/// a served name that is neither installed nor an alias stop start-up (exit 2), naming the
/// setting, where it was set and the rule (before, each started: the names were advertised
/// and refused on every request, or a served set named nothing the service could serve).
#[test]
fn aliases_and_served_names_of_no_installed_model_stop_start_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (env, parts) in [
        (
            ("PHIGUARD_MODEL_ALIASES", "garbage"),
            &[
                "models.aliases (PHIGUARD_MODEL_ALIASES)",
                "entry 1",
                "requested-name=installed-model",
            ][..],
        ),
        (
            ("PHIGUARD_MODEL_ALIASES", "foo=nonexistentmodel"),
            &[
                "models.aliases (PHIGUARD_MODEL_ALIASES)",
                "nonexistentmodel",
                "not installed",
            ],
        ),
        (
            ("PHIGUARD_SERVED_MODELS", "nonexistent"),
            &[
                "models.served (PHIGUARD_SERVED_MODELS)",
                "nonexistent",
                "not an installed model",
            ],
        ),
        // A preload typo too: it was skipped with a warning while /readyz said ready.
        (
            ("PHIGUARD_PRELOAD_MODELS", "phiguard-deidd"),
            &[
                "models.preload (PHIGUARD_PRELOAD_MODELS)",
                "phiguard-deidd",
                "not an installed model",
            ],
        ),
    ] {
        let (code, err) = serve_refused(dir.path(), &[], &[env]);
        assert_eq!(code, Some(2), "{env:?}: {err}");
        for part in parts {
            assert!(err.contains(part), "{part:?} not in: {err}");
        }
    }
    std::fs::create_dir_all(dir.path().join("config")).expect("config dir");
    std::fs::write(
        dir.path().join("config/settings.toml"),
        "[models]\nserved = [\"rules\", \"nonexistent\"]\n",
    )
    .expect("settings.toml");
    let (code, err) = serve_refused(dir.path(), &[], &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("models.served (settings.toml)"), "{err}");
}
