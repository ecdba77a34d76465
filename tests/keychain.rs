//! The OS keychain for real: on Linux the Secret Service over D-Bus, spoken by keyring's
//! pure-Rust backend (zbus). `scripts/test` runs this inside `dbus-run-session` with an
//! unlocked gnome-keyring and `PHIGUARD_TEST_KEYCHAIN=1`; without that variable there is no
//! keychain to talk to, and the test says so and passes.

use phiguard::secrets::{SecretStore, StoreKind};

fn wanted() -> bool {
    let on = std::env::var("PHIGUARD_TEST_KEYCHAIN").as_deref() == Ok("1");
    if !on {
        eprintln!("skipped: set PHIGUARD_TEST_KEYCHAIN=1 inside a D-Bus session with a keyring");
    }
    on
}

#[test]
fn secrets_live_in_the_keychain_and_never_in_the_file() {
    if !wanted() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("secrets.json");
    let store = SecretStore::open(file.clone());
    assert_eq!(
        store.kind(),
        StoreKind::Keychain,
        "the keychain did not answer"
    );
    let name = format!("test-{}", std::process::id());
    assert_eq!(store.get(&name).expect("get"), None);
    store.set(&name, "s3cret-value").expect("set");
    assert_eq!(
        store.get(&name).expect("get").as_deref(),
        Some("s3cret-value")
    );
    assert!(
        !file.exists(),
        "a secret went to the file although the keychain answered"
    );

    // The server reads secrets from async code: the backend must work inside tokio too.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let got = rt.block_on(async move {
        tokio::spawn(async move { store.get(&name).expect("get in tokio") })
            .await
            .expect("join")
    });
    assert_eq!(got.as_deref(), Some("s3cret-value"));
}

#[test]
fn the_binary_keeps_its_token_in_the_keychain() {
    if !wanted() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let show = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_phiguard"))
            .args(["token", "show"])
            .env("PHIGUARD_HOME", dir.path())
            .env_remove("PHIGUARD_KEYRING")
            .env_remove("PHIGUARD_AUTH_TOKEN")
            .output()
            .expect("run phiguard");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let first = show();
    assert!(first.trim().len() >= 32, "no token printed");
    assert_eq!(show(), first, "the token was not kept");
    assert!(
        !dir.path().join("data/secrets.json").exists(),
        "the token went to the file although the keychain answered"
    );
}
