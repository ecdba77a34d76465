//! Black-box tests of the cluster-wide admission limit against a real `redis-server`:
//! two limiters stand for two replicas sharing one budget, the sliding window holds at a
//! second boundary, and killing, freezing and restarting Redis moves the limiters to their
//! local share and back without any call hanging.
//!
//! Each test starts its own `redis-server` on a free loopback port (no persistence) and
//! kills it when done. Without `redis-server` these tests fail: run `.ci/cluster-deps.sh`
//! (Debian package `redis-server`) or point `PHIGUARD_TEST_REDIS_SERVER` at the binary.
//! Real time is used only where Redis `TIME` decides; windows are 1 s.

#[path = "../common/mod.rs"]
mod common;
mod servers;
mod support;
mod tls;

use std::time::Duration;

use futures::future::join_all;
use phiguard::cluster::{ClusterConfig, ClusterLimiter, ClusterMode};
use support::{RedisServer, TestResult};

const W: Duration = Duration::from_secs(1);

fn config(server: &RedisServer, admissions: u32, replicas: u32) -> ClusterConfig {
    ClusterConfig {
        key_prefix: "phiguard-test".into(),
        window: W,
        replicas,
        // Generous for a busy test machine; the fault tests tighten them.
        connect_timeout: Duration::from_millis(500),
        command_timeout: Duration::from_millis(500),
        probe_backoff_min: Duration::from_millis(100),
        probe_backoff_max: Duration::from_millis(400),
        ..ClusterConfig::new(server.url(), admissions)
    }
}

/// Every call in these tests must come back within this bound, Redis up or not.
const CALL_BOUND: Duration = Duration::from_secs(2);

async fn admit(l: &ClusterLimiter, token: &str) -> TestResult<bool> {
    let r = tokio::time::timeout(CALL_BOUND, l.try_admit(token))
        .await
        .map_err(|_| "try_admit hung past its bound")?;
    Ok(r.is_ok())
}

/// Runs `n` admissions concurrently, alternating between the limiters; returns how many
/// each admitted.
async fn burst(limiters: &[&ClusterLimiter], n: usize) -> TestResult<Vec<usize>> {
    let calls = (0..n).map(|i| {
        let l = limiters[i % limiters.len()];
        async move { (i % limiters.len(), admit(l, &format!("tok{}", i % 3)).await) }
    });
    let mut per = vec![0; limiters.len()];
    for (which, ok) in join_all(calls).await {
        if ok? {
            per[which] += 1;
        }
    }
    Ok(per)
}

#[tokio::test]
async fn two_replicas_share_one_limit() -> TestResult {
    let server = RedisServer::start()?;
    server.wait_ready().await?;
    const N: u32 = 6;
    let a = ClusterLimiter::new(config(&server, N, 2)).await;
    let b = ClusterLimiter::new(config(&server, N, 2)).await;
    assert_eq!(
        (a.mode(), b.mode()),
        (ClusterMode::Shared, ClusterMode::Shared)
    );

    let per = burst(&[&a, &b], 2 * N as usize).await?;
    assert_eq!(
        per.iter().sum::<usize>(),
        N as usize,
        "per replica: {per:?}"
    );
    let (sa, sb) = (a.stats(), b.stats());
    assert_eq!(sa.admitted + sb.admitted, u64::from(N));
    assert_eq!(sa.rejected + sb.rejected, u64::from(N));
    assert_eq!(sa.fallbacks + sb.fallbacks, 0);

    // The key holds exactly N members: timestamps, random ids and token ids, nothing else.
    let key = config(&server, N, 2).key();
    let members = server.members(&key).await?;
    assert_eq!(members.len(), N as usize);
    for m in &members {
        let parts: Vec<&str> = m.split(':').collect();
        assert_eq!(parts.len(), 3, "{m}");
        assert!(
            parts[0]
                .split('.')
                .all(|p| p.chars().all(|c| c.is_ascii_digit())),
            "{m}"
        );
        assert_eq!(parts[1].len(), 32, "{m}");
        assert!(parts[2].starts_with("tok"), "{m}");
    }
    let ttl = server.pttl(&key).await?;
    assert!(
        ttl > 0 && ttl <= 2000,
        "key expires with the window, pttl {ttl}"
    );
    server.stop();
    Ok(())
}

#[tokio::test]
async fn boundary_cannot_admit_a_double_burst() -> TestResult {
    let server = RedisServer::start()?;
    server.wait_ready().await?;
    const N: u32 = 5;
    let a = ClusterLimiter::new(config(&server, N, 2)).await;
    let b = ClusterLimiter::new(config(&server, N, 2)).await;

    // N at the end of one Redis second ...
    server.sleep_until_fraction(0.80).await?;
    let first = burst(&[&a, &b], N as usize).await?;
    assert_eq!(first.iter().sum::<usize>(), N as usize);
    // ... and N at the start of the next: a fixed window would admit them all.
    server.sleep_until_fraction(0.15).await?;
    let second = burst(&[&a, &b], N as usize).await?;
    assert_eq!(
        second.iter().sum::<usize>(),
        0,
        "double burst across a boundary"
    );
    match a.try_admit("late").await {
        Err(r) => assert!(r.retry_after <= W && r.retry_after > Duration::ZERO),
        Ok(()) => panic!("window is full"),
    }
    // Once the first burst has left the window, the budget is back.
    server.sleep_until_fraction(0.95).await?;
    let third = burst(&[&a, &b], 2 * N as usize).await?;
    assert_eq!(third.iter().sum::<usize>(), N as usize);
    server.stop();
    Ok(())
}

#[tokio::test]
async fn rejections_never_extend_the_window() -> TestResult {
    let server = RedisServer::start()?;
    server.wait_ready().await?;
    let a = ClusterLimiter::new(config(&server, 2, 1)).await;
    let start = tokio::time::Instant::now();
    assert!(admit(&a, "t").await? && admit(&a, "t").await?);
    // Hammer the full window for most of its length.
    while start.elapsed() < Duration::from_millis(700) {
        assert!(!admit(&a, "t").await?);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep_until(start + W + Duration::from_millis(100)).await;
    assert!(
        admit(&a, "t").await?,
        "rejections must not have extended the window"
    );
    server.stop();
    Ok(())
}

#[tokio::test]
async fn redis_killed_falls_back_without_hanging_then_recovers() -> TestResult {
    let mut server = RedisServer::start()?;
    server.wait_ready().await?;
    const N: u32 = 4;
    let tight = |s: &RedisServer| ClusterConfig {
        connect_timeout: Duration::from_millis(200),
        command_timeout: Duration::from_millis(200),
        ..config(s, N, 2)
    };
    let a = ClusterLimiter::new(tight(&server)).await;
    let b = ClusterLimiter::new(tight(&server)).await;
    assert!(admit(&a, "t").await?);
    assert_eq!(a.mode(), ClusterMode::Shared);

    server.kill()?;
    // The next call on each replica notices, within the command timeout, and still answers.
    for l in [&a, &b] {
        let t0 = tokio::time::Instant::now();
        let _ = admit(l, "t").await?;
        assert!(
            t0.elapsed() < Duration::from_millis(1000),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(l.mode(), ClusterMode::LocalFallback);
    }
    // In fallback each replica admits its share (N / 2) per window, and no more.
    tokio::time::sleep(W + Duration::from_millis(50)).await;
    for l in [&a, &b] {
        let mut admitted = 0;
        for _ in 0..N {
            if admit(l, "t").await? {
                admitted += 1;
            }
        }
        assert_eq!(admitted, N / 2);
        assert_eq!(l.stats().fallbacks, 1);
        assert!(l.stats().redis_errors >= 1);
    }

    server.restart()?;
    server.wait_ready().await?;
    for l in [&a, &b] {
        wait_for_shared(l).await?;
    }
    // Shared again: one budget of N across both replicas.
    tokio::time::sleep(W + Duration::from_millis(50)).await;
    let per = burst(&[&a, &b], 2 * N as usize).await?;
    assert_eq!(
        per.iter().sum::<usize>(),
        N as usize,
        "per replica: {per:?}"
    );
    server.stop();
    Ok(())
}

#[tokio::test]
async fn frozen_redis_times_out_and_starting_without_redis_joins_later() -> TestResult {
    let server = RedisServer::start()?;
    server.wait_ready().await?;
    let tight = ClusterConfig {
        connect_timeout: Duration::from_millis(150),
        command_timeout: Duration::from_millis(150),
        ..config(&server, 3, 1)
    };
    let a = ClusterLimiter::new(tight.clone()).await;
    assert_eq!(a.mode(), ClusterMode::Shared);

    // A frozen server accepts connections but never answers: only timeouts help.
    server.freeze()?;
    let t0 = tokio::time::Instant::now();
    let _ = admit(&a, "t").await?;
    assert!(
        t0.elapsed() < Duration::from_millis(900),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(a.mode(), ClusterMode::LocalFallback);
    // A replica starting now does not hang either; it starts local.
    let t0 = tokio::time::Instant::now();
    let late = tokio::time::timeout(CALL_BOUND, ClusterLimiter::new(tight))
        .await
        .map_err(|_| "new hung on a frozen redis")?;
    assert!(
        t0.elapsed() < Duration::from_millis(900),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(late.mode(), ClusterMode::LocalFallback);
    assert_eq!(late.stats().fallbacks, 1);

    server.thaw()?;
    wait_for_shared(&a).await?;
    wait_for_shared(&late).await?;
    server.stop();
    Ok(())
}

#[tokio::test]
async fn a_redis_that_answers_but_cannot_run_the_script_keeps_the_replica_local() -> TestResult {
    let server = RedisServer::start()?;
    server.wait_ready().await?;
    let cfg = config(&server, 2, 1);
    // Something else owns the key with another type: every script call fails.
    server
        .command(&["SET", &cfg.key(), "not-a-sorted-set"])
        .await?;
    let a = ClusterLimiter::new(cfg.clone()).await;
    assert_eq!(a.mode(), ClusterMode::LocalFallback);
    // Probes run the script as a dry run, so they fail too: no flapping back to shared.
    let start = tokio::time::Instant::now();
    while start.elapsed() < Duration::from_millis(600) {
        let _ = admit(&a, "t").await?;
        assert_eq!(a.mode(), ClusterMode::LocalFallback);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(a.stats().fallbacks, 1);
    assert!(a.stats().redis_errors >= 2, "probes ran: {:?}", a.stats());
    server.command(&["DEL", &cfg.key()]).await?;
    wait_for_shared(&a).await?;
    server.stop();
    Ok(())
}

/// Calls `try_admit` (which schedules the background probe) until the limiter is shared.
async fn wait_for_shared(l: &ClusterLimiter) -> TestResult {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while l.mode() != ClusterMode::Shared {
        if tokio::time::Instant::now() > deadline {
            return Err("limiter did not return to the shared limit within 5 s".into());
        }
        let _ = admit(l, "probe").await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
