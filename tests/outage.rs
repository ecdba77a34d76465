//! Outage scenarios with bounded concurrent clients against a real server on loopback, with
//! faults injected at the backend boundary (`fault-injection` builds only). They print the
//! figures reported in the notes and assert the goals loosely (timings on shared machines
//! are not asserted).
#![cfg(feature = "fault-injection")]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use phiguard::server::Server;

mod common;

const TOKEN: &str = "outage-client";
const NOTE: &str = "Seen 03/04/2021, call 617-555-0142, MRN 88412345.";

async fn start(env: &[(&str, &str)]) -> (Server, tempfile::TempDir) {
    common::start_rules_server(TOKEN, "outage-admin", env).await
}

/// Runs `clients` loops sending de-identify requests until `stop`; counts 200s and others.
fn clients(
    base: String,
    clients: usize,
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    last_failure: Arc<parking_lot::Mutex<Option<Instant>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..clients)
        .map(|_| {
            let (base, stop, ok, failed, last) = (
                base.clone(),
                stop.clone(),
                ok.clone(),
                failed.clone(),
                last_failure.clone(),
            );
            tokio::spawn(async move {
                let http = reqwest::Client::builder()
                    .no_proxy()
                    .build()
                    .expect("client");
                while !stop.load(Ordering::Relaxed) {
                    let r = http
                        .post(format!("{base}/pii/deidentify"))
                        .bearer_auth(TOKEN)
                        .json(&serde_json::json!({"text": NOTE}))
                        .send()
                        .await;
                    match r.map(|r| r.status().as_u16()) {
                        Ok(200) => {
                            ok.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            failed.fetch_add(1, Ordering::Relaxed);
                            *last.lock() = Some(Instant::now());
                            // A well-behaved client backs off a little on 503.
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                }
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_outage_then_recovery() {
    let (server, _dir) = start(&[("PHIGUARD_BREAKER_RECOVERY_TIMEOUT_SECONDS", "2")]).await;
    let base = format!("http://{}", server.local_addr());
    let st = server.state().clone();
    let (stop, ok, failed) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let last_failure = Arc::new(parking_lot::Mutex::new(None));
    let handles = clients(
        base,
        8,
        stop.clone(),
        ok.clone(),
        failed.clone(),
        last_failure.clone(),
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = st.engine.guard.stats().attempts;
    let ok_before = ok.load(Ordering::Relaxed);
    st.engine.faults.set_spec("infer=fail").expect("faults");
    tokio::time::sleep(Duration::from_secs(10)).await;
    let during = st.engine.guard.stats().attempts - before;
    let requests_during = failed.load(Ordering::Relaxed);
    st.engine.faults.set_spec("infer=ok").expect("faults");
    let outage_ended = Instant::now();
    // Recovered = the last failure after the outage's end, once a full second has passed
    // with no failure at all (bounded).
    let recovered_at = loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let last = last_failure
            .lock()
            .unwrap_or(outage_ended)
            .max(outage_ended);
        if last.elapsed() >= Duration::from_secs(1) {
            break last;
        }
        assert!(
            outage_ended.elapsed() < Duration::from_secs(20),
            "no recovery within 20 s"
        );
    };
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.await;
    }
    let recovery = recovered_at
        .saturating_duration_since(outage_ended)
        .as_secs_f64();
    eprintln!(
        "FIGURES full outage: 10 s, 8 clients; {requests_during} requests refused during the outage, \
         {during} backend attempts during it; recovered {recovery:.2} s after its end (recovery timeout 2 s); \
         {} successes before, {} total",
        ok_before,
        ok.load(Ordering::Relaxed)
    );
    // The breaker must have cut the backend off: far fewer attempts than requests.
    assert!(
        during < requests_during / 4 + 50,
        "{during} attempts for {requests_during} refused requests"
    );
    assert!(recovery < 10.0);
    server.shutdown().await;
}

/// One flaky:50 run; returns (requests, ok, guarded calls, backend attempts).
async fn flaky_run(env: &[(&str, &str)]) -> (u64, u64, u64, u64) {
    let (server, _dir) = start(env).await;
    let base = format!("http://{}", server.local_addr());
    let st = server.state().clone();
    st.engine.faults.set_spec("infer=flaky:50").expect("faults");
    let (stop, ok, failed) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let last_failure = Arc::new(parking_lot::Mutex::new(None));
    let before = st.engine.guard.stats();
    let handles = clients(
        base,
        8,
        stop.clone(),
        ok.clone(),
        failed.clone(),
        last_failure,
    );
    let started = Instant::now();
    while ok.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed) < 3000
        && started.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.await;
    }
    let after = st.engine.guard.stats();
    server.shutdown().await;
    let ok = ok.load(Ordering::Relaxed);
    (
        ok + failed.load(Ordering::Relaxed),
        ok,
        after.calls - before.calls,
        after.attempts - before.attempts,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_of_the_calls_fail_attempts_per_request() {
    // Defaults: the consecutive-failure breaker sees the failures the budget did not retry.
    let (requests, ok, calls, attempts) = flaky_run(&[]).await;
    eprintln!(
        "FIGURES flaky:50, defaults: {requests} requests ({ok} ok), {calls} reached the guard's retry loop or breaker, \
         {attempts} backend attempts = {:.3} per request",
        attempts as f64 / requests.max(1) as f64
    );
    // The retry budget alone (breaker kept closed): backend attempts per logical request.
    let (requests, ok, calls, attempts) =
        flaky_run(&[("PHIGUARD_BREAKER_FAILURE_THRESHOLD", "10000")]).await;
    let per_request = attempts as f64 / calls.max(1) as f64;
    eprintln!(
        "FIGURES flaky:50, breaker held closed: {requests} requests ({ok} ok), {attempts} backend attempts = \
         {per_request:.3} attempts per request (goal <= 1.25; OpenMed's 3 attempts: 1.75)"
    );
    assert!(
        per_request <= 1.35,
        "retry budget not holding: {per_request}"
    );
}
