//! A Redis that speaks TLS only (`rediss://`), as managed Redis services do: the real
//! `phiguard serve` shares the limit through it when it trusts the server's CA (named by
//! `SSL_CERT_FILE`, as for any program on the machine), and keeps to its local share when
//! it does not. Before, the release binary refused every `rediss://` URL at start.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{RedisServer, TestResult};

const CLIENT: &str = "tls-client-token";
const ADMIN: &str = "tls-admin-token";

/// `phiguard serve` on a free loopback port, home and output files in `dir`.
struct Serve {
    child: Child,
    base: String,
}

impl Serve {
    async fn start(dir: &std::path::Path, env: &[(&str, &str)]) -> TestResult<Serve> {
        let stdout = dir.join("serve.out");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_phiguard"));
        cmd.arg("serve")
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .env("PHIGUARD_HOME", dir.join("home"))
            .env("PHIGUARD_PORT", "0")
            .env("PHIGUARD_AUTH_TOKEN", CLIENT)
            .env("PHIGUARD_ADMIN_TOKEN", ADMIN)
            .env("PHIGUARD_KEYRING", "off")
            .env("PHIGUARD_DEFAULT_MODEL", "rules")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout)?)
            .stderr(std::fs::File::create(dir.join("serve.err"))?);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn()?;
        let started = Instant::now();
        loop {
            let out = std::fs::read_to_string(&stdout).unwrap_or_default();
            if let Some(addr) = out
                .lines()
                .find_map(|l| l.trim().strip_prefix("listening on "))
            {
                return Ok(Serve {
                    child,
                    base: addr.to_owned(),
                });
            }
            if let Some(status) = child.try_wait()? {
                let err = std::fs::read_to_string(dir.join("serve.err")).unwrap_or_default();
                return Err(format!("phiguard serve exited with {status}: {err}").into());
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                return Err("phiguard serve did not start within 60 s".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The limiter's mode once a few requests have been admitted (the first of them may
    /// find it still connecting): `shared` or `local_fallback`.
    async fn mode_after_requests(&self) -> TestResult<String> {
        let http = reqwest::Client::builder().no_proxy().build()?;
        let mut mode = String::new();
        for _ in 0..40 {
            let r = http
                .post(format!("{}/pii/extract", self.base))
                .bearer_auth(CLIENT)
                .json(&serde_json::json!({"text": "Call 617-555-0142."}))
                .send()
                .await?;
            assert_eq!(r.status(), 200);
            let status: Value = http
                .get(format!("{}/admin/status", self.base))
                .bearer_auth(ADMIN)
                .send()
                .await?
                .json()
                .await?;
            mode = status["cluster"]["mode"].as_str().unwrap_or("").to_owned();
            if mode == "shared" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(mode)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_shares_the_limit_through_a_tls_redis_whose_ca_it_trusts() -> TestResult {
    let dir = tempfile::tempdir()?;
    let redis = RedisServer::start_tls(dir.path())?;
    let url = redis.tls_url();
    let ca = dir.path().join("ca.crt");
    let ca = ca.to_str().ok_or("utf-8 path")?;
    let cluster = [
        ("PHIGUARD_REDIS_URL", url.as_str()),
        ("PHIGUARD_CLUSTER_ADMISSIONS", "1000"),
    ];
    // Trusting the CA: decisions are made in Redis.
    let trusted = tempfile::tempdir()?;
    let mut env = cluster.to_vec();
    env.push(("SSL_CERT_FILE", ca));
    let serve = Serve::start(trusted.path(), &env).await?;
    assert_eq!(serve.mode_after_requests().await?, "shared");
    drop(serve);
    // Not trusting it: the handshake fails and the replica keeps to its local share; its
    // requests are still answered.
    let untrusted = tempfile::tempdir()?;
    let serve = Serve::start(untrusted.path(), &cluster).await?;
    assert_eq!(serve.mode_after_requests().await?, "local_fallback");
    drop(serve);
    redis.stop();
    Ok(())
}

/// A URL Redis's client cannot read stops start-up naming the variable, never the value
/// (a URL may hold a password). Before, the message named the limiter's field.
#[tokio::test]
async fn a_bad_redis_url_stops_start_up_naming_the_variable() -> TestResult {
    let dir = tempfile::tempdir()?;
    let secret = "http://user:s3cret-pw@127.0.0.1:1/";
    let err = match Serve::start(
        dir.path(),
        &[
            ("PHIGUARD_REDIS_URL", secret),
            ("PHIGUARD_CLUSTER_ADMISSIONS", "10"),
        ],
    )
    .await
    {
        Ok(_) => return Err("phiguard serve started with a bad Redis URL".into()),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("exit status: 2"), "{err}");
    assert!(err.contains("PHIGUARD_REDIS_URL"), "{err}");
    assert!(err.contains("rediss://"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
    Ok(())
}
