//! Two real phiguard servers (replicas) sharing one cluster-wide admission limit in a real
//! Redis.

#[cfg(feature = "fault-injection")]
use std::collections::HashMap;
#[cfg(feature = "fault-injection")]
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(feature = "fault-injection")]
use std::sync::Arc;
#[cfg(feature = "fault-injection")]
use std::time::{Duration, Instant};

use phiguard::server::Server;

use crate::support::{RedisServer, TestResult};

const TOKEN: &str = "replica-client";

async fn replica(
    redis: &RedisServer,
    admissions: u32,
    window: f64,
    extra: &[(&str, &str)],
) -> (Server, tempfile::TempDir) {
    let window = window.to_string();
    let admissions = admissions.to_string();
    let url = redis.url();
    let mut env: Vec<(&str, &str)> = vec![
        ("PHIGUARD_REDIS_URL", url.as_str()),
        ("PHIGUARD_CLUSTER_ADMISSIONS", admissions.as_str()),
        ("PHIGUARD_CLUSTER_WINDOW_SECONDS", window.as_str()),
        ("PHIGUARD_CLUSTER_REPLICAS", "2"),
    ];
    env.extend_from_slice(extra);
    crate::common::start_rules_server(TOKEN, "replica-admin", &env).await
}

async fn post(http: &reqwest::Client, base: &str) -> u16 {
    http.post(format!("{base}/pii/deidentify"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({"text": "Call 617-555-0142 on 03/04/2021."}))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_share_one_limit() -> TestResult {
    let redis = RedisServer::start()?;
    redis.wait_ready().await?;
    let n = 10;
    // A long window so the whole burst falls inside one window even on a slow machine.
    let (a, _da) = replica(&redis, n, 30.0, &[]).await;
    let (b, _db) = replica(&redis, n, 30.0, &[]).await;
    let http = reqwest::Client::builder().no_proxy().build()?;
    let (ba, bb) = (
        format!("http://{}", a.local_addr()),
        format!("http://{}", b.local_addr()),
    );
    let mut statuses = Vec::new();
    for i in 0..(2 * n) {
        let base = if i % 2 == 0 { &ba } else { &bb };
        statuses.push(post(&http, base).await);
    }
    let admitted = statuses.iter().filter(|s| **s == 200).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(
        (admitted, limited),
        (n as usize, n as usize),
        "{statuses:?}"
    );
    let status: serde_json::Value = http
        .get(format!("{ba}/admin/status"))
        .bearer_auth("replica-admin")
        .send()
        .await?
        .json()
        .await?;
    assert_eq!(status["cluster"]["mode"], "shared", "{status}");
    a.shutdown().await;
    b.shutdown().await;
    Ok(())
}

/// The recovery scenario across two replicas: bounded clients, a 10 s injected model
/// outage on both, then recovery, with half of the clients retrying at once on failure.
/// Admissions in any second never exceed the cluster limit.
#[cfg(feature = "fault-injection")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_recovery_across_two_replicas_stays_under_the_cluster_limit() -> TestResult {
    let redis = RedisServer::start()?;
    redis.wait_ready().await?;
    let n: u64 = 40;
    let recovery = [("PHIGUARD_BREAKER_RECOVERY_TIMEOUT_SECONDS", "2")];
    let (a, _da) = replica(&redis, n as u32, 1.0, &recovery).await;
    let (b, _db) = replica(&redis, n as u32, 1.0, &recovery).await;
    let bases = [
        format!("http://{}", a.local_addr()),
        format!("http://{}", b.local_addr()),
    ];
    let stop = Arc::new(AtomicBool::new(false));
    // Admissions (anything the cluster limit let through) per wall-clock second.
    let per_second: Arc<parking_lot::Mutex<HashMap<u64, u64>>> = Arc::default();
    let last_failure = Arc::new(parking_lot::Mutex::new(None::<Instant>));
    let ok = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut handles = Vec::new();
    for c in 0..8 {
        let (base, stop, per_second, last_failure, ok) = (
            bases[c % 2].clone(),
            stop.clone(),
            per_second.clone(),
            last_failure.clone(),
            ok.clone(),
        );
        handles.push(tokio::spawn(async move {
            let http = reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("client");
            // Traffic: 8 clients x 4 requests/s = 32/s, under the limit of 40/s; half of the
            // clients retry at once on any failure (the retry storm after an outage).
            let stormy = c >= 4;
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            let mut failed_last = false;
            while !stop.load(Ordering::Relaxed) {
                if !(stormy && failed_last) {
                    tick.tick().await;
                }
                let s = post(&http, &base).await;
                failed_last = s != 200;
                if s != 429 && s != 0 {
                    *per_second
                        .lock()
                        .entry(start.elapsed().as_secs())
                        .or_default() += 1;
                }
                if s == 200 {
                    ok.fetch_add(1, Ordering::Relaxed);
                } else {
                    *last_failure.lock() = Some(Instant::now());
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for s in [&a, &b] {
        s.state().engine.set_faults("infer=fail").expect("faults");
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    for s in [&a, &b] {
        s.state().engine.set_faults("infer=ok").expect("faults");
    }
    let ended = Instant::now();
    let recovered = loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let last = last_failure.lock().unwrap_or(ended).max(ended);
        if last.elapsed() >= Duration::from_secs(1) {
            break last.saturating_duration_since(ended);
        }
        assert!(
            ended.elapsed() < Duration::from_secs(20),
            "no recovery within 20 s"
        );
    };
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.await;
    }
    let counts = per_second.lock().clone();
    let max = counts.values().copied().max().unwrap_or(0);
    eprintln!(
        "FIGURES two replicas, cluster limit {n}/s, 10 s outage: max admitted in any wall-clock second {max}; \
         fully served {:.2} s after the outage; {} successes",
        recovered.as_secs_f64(),
        ok.load(Ordering::Relaxed)
    );
    assert!(max <= n, "{counts:?}");
    a.shutdown().await;
    b.shutdown().await;
    Ok(())
}
