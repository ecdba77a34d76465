//! A throw-away `redis-server` per test: started on a free loopback port without
//! persistence, killed (by its own pid) when the test ends, and able to be killed,
//! frozen, thawed and restarted on the same port to inject the faults the limiter must
//! survive.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub(crate) type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Environment variable naming the `redis-server` binary (default: found on `PATH`).
const SERVER_ENV: &str = "PHIGUARD_TEST_REDIS_SERVER";

pub(crate) struct RedisServer {
    binary: PathBuf,
    port: u16,
    child: Option<Child>,
    /// The folder of `ca.crt`, `redis.crt` and `redis.key` when the server speaks TLS only.
    tls: Option<PathBuf>,
}

impl RedisServer {
    /// Starts `redis-server` on a free port.
    ///
    /// Fails, with a message saying how to install it, when the binary is missing.
    pub(crate) fn start() -> TestResult<Self> {
        let binary = find_server().ok_or(
            "redis-server not found: the cluster tests need a real redis; run \
             .ci/cluster-deps.sh (Debian package redis-server) or set PHIGUARD_TEST_REDIS_SERVER",
        )?;
        let port = free_port()?;
        let mut server = Self {
            binary,
            port,
            child: None,
            tls: None,
        };
        server.spawn()?;
        Ok(server)
    }

    /// Starts `redis-server` speaking TLS only (as managed Redis services do), with a
    /// certificate for `localhost` signed by a CA of its own, both made with `openssl` in
    /// `dir` (`ca.crt` is the CA a client must trust).
    pub(crate) fn start_tls(dir: &std::path::Path) -> TestResult<Self> {
        let openssl = |args: &[&str]| -> TestResult {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .map_err(|e| format!("openssl not found ({e}): run .ci/cluster-deps.sh"))?;
            if !out.status.success() {
                return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
            }
            Ok(())
        };
        std::fs::write(
            dir.join("ext.cnf"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
        )?;
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=phiguard test CA",
        ])?;
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "redis.key",
            "-out",
            "redis.csr",
            "-subj",
            "/CN=localhost",
        ])?;
        openssl(&[
            "x509",
            "-req",
            "-in",
            "redis.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "redis.crt",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ])?;
        let binary = find_server().ok_or("redis-server not found: run .ci/cluster-deps.sh")?;
        let mut server = Self {
            binary,
            port: free_port()?,
            child: None,
            tls: Some(dir.to_owned()),
        };
        server.spawn()?;
        Ok(server)
    }

    fn spawn(&mut self) -> TestResult {
        let mut cmd = Command::new(&self.binary);
        match &self.tls {
            None => cmd.args(["--port", &self.port.to_string()]),
            Some(dir) => cmd
                .args(["--port", "0", "--tls-port", &self.port.to_string()])
                .arg("--tls-cert-file")
                .arg(dir.join("redis.crt"))
                .arg("--tls-key-file")
                .arg(dir.join("redis.key"))
                .arg("--tls-ca-cert-file")
                .arg(dir.join("ca.crt"))
                .args(["--tls-auth-clients", "no"]),
        };
        let child = cmd
            .args(["--bind", "127.0.0.1"])
            .args(["--save", ""])
            .args(["--appendonly", "no"])
            .args(["--protected-mode", "yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start redis-server: {e}"))?;
        self.child = Some(child);
        Ok(())
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The `rediss://` URL of a TLS server (by the name its certificate carries).
    pub(crate) fn tls_url(&self) -> String {
        format!("rediss://localhost:{}/", self.port)
    }

    /// Waits (up to 5 s) until the server answers `PING`.
    pub(crate) async fn wait_ready(&self) -> TestResult {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            if let Ok(Ok(pong)) =
                tokio::time::timeout(Duration::from_millis(500), self.query::<String>(&["PING"]))
                    .await
            {
                if pong == "PONG" {
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() > deadline {
                return Err("redis-server did not answer PING within 5 s".into());
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    async fn query<T: redis::FromRedisValue>(&self, args: &[&str]) -> TestResult<T> {
        let client = redis::Client::open(self.url())?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        Ok(cmd.query_async(&mut conn).await?)
    }

    /// Runs one command and discards its reply.
    pub(crate) async fn command(&self, args: &[&str]) -> TestResult {
        let _: redis::Value = self.query(args).await?;
        Ok(())
    }

    /// All members of the sorted set `key`.
    pub(crate) async fn members(&self, key: &str) -> TestResult<Vec<String>> {
        self.query(&["ZRANGE", key, "0", "-1"]).await
    }

    /// Remaining time to live of `key` in milliseconds.
    pub(crate) async fn pttl(&self, key: &str) -> TestResult<i64> {
        self.query(&["PTTL", key]).await
    }

    /// Sleeps until Redis `TIME` is at `fraction` of a second (the next time it gets there).
    pub(crate) async fn sleep_until_fraction(&self, fraction: f64) -> TestResult {
        let (_secs, micros): (u64, u64) = self.query(&["TIME"]).await?;
        let now = micros as f64 / 1e6;
        let mut wait = fraction - now;
        if wait <= 0.02 {
            wait += 1.0;
        }
        tokio::time::sleep(Duration::from_secs_f64(wait)).await;
        Ok(())
    }

    fn pid(&self) -> TestResult<u32> {
        Ok(self.child.as_ref().ok_or("redis-server not running")?.id())
    }

    fn signal(&self, sig: &str) -> TestResult {
        let status = Command::new("kill")
            .args([sig, &self.pid()?.to_string()])
            .status()?;
        if !status.success() {
            return Err(format!("kill {sig} failed").into());
        }
        Ok(())
    }

    /// Kills the server (SIGKILL) and reaps it; the port stays reserved for `restart`.
    pub(crate) fn kill(&mut self) -> TestResult {
        if let Some(mut child) = self.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Starts a fresh (empty) server on the same port.
    pub(crate) fn restart(&mut self) -> TestResult {
        self.kill()?;
        self.spawn()
    }

    /// Stops the process (SIGSTOP): connections are accepted by the kernel, never answered.
    pub(crate) fn freeze(&self) -> TestResult {
        self.signal("-STOP")
    }

    /// Resumes a frozen server (SIGCONT).
    pub(crate) fn thaw(&self) -> TestResult {
        self.signal("-CONT")
    }

    pub(crate) fn stop(mut self) {
        let _ = self.kill();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // A frozen process still dies on SIGKILL.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn find_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(SERVER_ENV) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|dir| dir.join("redis-server"))
        .find(|p| p.is_file())
}

/// A port that was free a moment ago (bind 127.0.0.1:0, read it, release it).
fn free_port() -> TestResult<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}
