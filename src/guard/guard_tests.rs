//! Unit tests of the `Guard` facade: the order inside `call`, retries, deadlines, the
//! budget end to end, and the breaker verdicts.

use super::*;
use crate::guard::clock::testing::drive;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TestErr {
    Infra,
    Client,
}

impl Classify for TestErr {
    fn is_retryable(&self) -> bool {
        *self == TestErr::Infra
    }
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn guard_with(cfg: GuardConfig) -> (ManualClock, Guard) {
    let clock = ManualClock::new();
    let g = Guard::new(
        cfg,
        Arc::new(clock.clone()),
        Arc::new(clock.clone()),
        Arc::new(FixedJitter(0.5)),
    )
    .expect("valid config");
    (clock, g)
}

fn guard() -> (ManualClock, Guard) {
    guard_with(GuardConfig::default())
}

/// Runs one call whose every attempt returns `outcome`; returns the result and the
/// number of attempts made.
fn call_with(
    clock: &ManualClock,
    g: &Guard,
    deadline: &Deadline,
    outcome: Result<u8, TestErr>,
) -> (Result<u8, GuardError<TestErr>>, u32) {
    let attempts = AtomicU32::new(0);
    let r = drive(
        clock,
        g.call("m", deadline, |_| {
            attempts.fetch_add(1, Ordering::SeqCst);
            async move { outcome }
        }),
    );
    (r, attempts.load(Ordering::SeqCst))
}

fn long(clock: &ManualClock) -> Deadline {
    Deadline::after(clock.now(), Duration::from_secs(300))
}

#[test]
fn success_takes_one_attempt() {
    let (clock, g) = guard();
    let (r, n) = call_with(&clock, &g, &long(&clock), Ok(7));
    assert_eq!((r.ok(), n), (Some(7), 1));
    assert_eq!(clock.elapsed(), Duration::ZERO);
    let s = g.stats();
    assert_eq!((s.calls, s.attempts, s.retries), (1, 1, 0));
}

#[test]
fn retries_stop_at_max_attempts_with_openmed_backoff() {
    let (clock, g) = guard();
    let (r, n) = call_with(&clock, &g, &long(&clock), Err(TestErr::Infra));
    assert!(matches!(r, Err(GuardError::Failed(TestErr::Infra))));
    assert_eq!(n, 3);
    // 50 + 5 (half the jitter), then 100 + 5.
    assert_eq!(clock.elapsed(), ms(160));
    assert_eq!(
        g.breakers()[0].consecutive_failures,
        1,
        "one failed logical request"
    );
    let s = g.stats();
    assert_eq!((s.attempts, s.retries), (3, 2));
}

#[test]
fn attempts_are_numbered_from_one() {
    let (clock, g) = guard();
    let seen = parking_lot::Mutex::new(Vec::new());
    let r: Result<u8, _> = drive(
        &clock,
        g.call("m", &long(&clock), |attempt| {
            seen.lock().push(attempt);
            async move {
                if attempt < 3 {
                    Err(TestErr::Infra)
                } else {
                    Ok(1)
                }
            }
        }),
    );
    assert_eq!(r.ok(), Some(1));
    assert_eq!(*seen.lock(), vec![1, 2, 3]);
    assert_eq!(g.breakers()[0].consecutive_failures, 0);
}

#[test]
fn client_errors_are_not_retried_and_count_as_success() {
    let (clock, g) = guard();
    for _ in 0..2 {
        let _ = call_with(&clock, &g, &long(&clock), Err(TestErr::Infra));
    }
    assert_eq!(g.breakers()[0].consecutive_failures, 2);
    let (r, n) = call_with(&clock, &g, &long(&clock), Err(TestErr::Client));
    assert!(matches!(r, Err(GuardError::Failed(TestErr::Client))));
    assert_eq!(n, 1);
    assert_eq!(
        g.breakers()[0].consecutive_failures,
        0,
        "a client error resets the count"
    );
}

#[test]
fn never_sleeps_past_the_deadline() {
    let (clock, g) = guard();
    let d = Deadline::after(clock.now(), ms(100));
    let (r, n) = call_with(&clock, &g, &d, Err(TestErr::Infra));
    // Attempt 1 at 0, wait 55, attempt 2 at 55; the next wait (105) would end at 160 > 100.
    assert!(matches!(r, Err(GuardError::Failed(TestErr::Infra))));
    assert_eq!(n, 2);
    assert_eq!(clock.elapsed(), ms(55));
}

/// One call whose attempt takes 5 s, under a 100 ms deadline.
fn slow_call(clock: &ManualClock, g: &Guard) -> Result<u8, GuardError<TestErr>> {
    let d = Deadline::after(clock.now(), ms(100));
    let sleeper = clock.clone();
    drive(
        clock,
        g.call("m", &d, |_| {
            let s = sleeper.sleep(Duration::from_secs(5));
            async move {
                s.await;
                Ok(1)
            }
        }),
    )
}

/// A deadline bounds the client's wait and is no model failure (OpenMed's timeout is
/// not either): before, three requests cut by it (a burst of load, one client's long
/// notes) opened the breaker and every client got `503` for 30 s.
#[test]
fn a_slow_attempt_times_out_and_is_no_failure() {
    let (clock, g) = guard();
    for _ in 0..3 {
        let r = slow_call(&clock, &g);
        assert!(matches!(r, Err(GuardError::Timeout { timeout }) if timeout == ms(100)));
    }
    assert_eq!(clock.elapsed(), ms(300));
    assert_eq!(g.stats().timeouts, 3);
    assert_eq!(g.breakers()[0].consecutive_failures, 0);
    assert_eq!(g.breaker_state_counts().closed, 1);
    assert_eq!(call_with(&clock, &g, &long(&clock), Ok(1)).0.ok(), Some(1));
}

/// A failure before the deadline still counts when a timeout follows: the timeout
/// leaves the consecutive-failure count as it was.
#[test]
fn a_timeout_between_failures_neither_counts_nor_resets() {
    let (clock, g) = guard();
    let _ = call_with(&clock, &g, &long(&clock), Err(TestErr::Infra));
    let _ = slow_call(&clock, &g);
    let _ = call_with(&clock, &g, &long(&clock), Err(TestErr::Infra));
    assert_eq!(g.breakers()[0].consecutive_failures, 2);
}

/// Calls cut by their deadline are slow calls: with the slow-call rule on, they open the
/// breaker as slow successes do.
#[test]
fn timeouts_open_the_breaker_through_the_slow_call_rule() {
    let mut cfg = GuardConfig::default();
    cfg.breaker.sliding_window_size = 3;
    cfg.breaker.minimum_number_of_calls = 3;
    cfg.breaker.slow_call_duration_threshold = Some(ms(50));
    cfg.breaker.slow_call_rate_threshold = 100.0;
    let (clock, g) = guard_with(cfg);
    for _ in 0..3 {
        let _ = slow_call(&clock, &g);
    }
    assert_eq!(g.breaker_state_counts().open, 1);
}

#[test]
fn an_expired_deadline_makes_no_attempt() {
    let (clock, g) = guard();
    let d = Deadline::after(clock.now(), ms(10));
    clock.advance(ms(10));
    let (r, n) = call_with(&clock, &g, &d, Ok(1));
    assert!(matches!(r, Err(GuardError::Timeout { .. })));
    assert_eq!(n, 0);
    assert_eq!(g.stats().timeouts, 1);
    assert_eq!(
        g.breakers()[0].consecutive_failures,
        0,
        "no attempt, so no verdict for the breaker"
    );
}

#[test]
fn breaker_opens_after_three_failed_requests_then_recovers() {
    let (clock, g) = guard();
    for _ in 0..3 {
        let _ = call_with(&clock, &g, &long(&clock), Err(TestErr::Infra));
    }
    assert_eq!(g.stats().attempts, 9);
    // OpenMed observed `Retry-After: 29` after ~0.5 s of retries; ours: ceil(remaining).
    clock.advance(ms(500));
    let (r, n) = call_with(&clock, &g, &long(&clock), Ok(1));
    assert!(matches!(
        r,
        Err(GuardError::BreakerOpen {
            state: BreakerState::Open,
            retry_after_seconds: 30
        })
    ));
    assert_eq!(n, 0, "fail fast: the backend is not called");
    clock.advance(Duration::from_secs(30));
    let (r, n) = call_with(&clock, &g, &long(&clock), Ok(1));
    assert_eq!((r.ok(), n), (Some(1), 1));
    assert_eq!(g.breaker_state_counts().closed, 1);
    let s = g.stats();
    assert_eq!(s.breaker_rejected, 1);
    assert_eq!(s.transitions_to(BreakerState::Open), 1);
    assert_eq!(s.transitions_to(BreakerState::Closed), 1);
}

#[test]
fn a_cancelled_probe_call_frees_the_half_open_slot() {
    let (clock, g) = guard();
    for _ in 0..3 {
        let _ = call_with(&clock, &g, &long(&clock), Err(TestErr::Infra));
    }
    clock.advance(Duration::from_secs(30));
    {
        let d = long(&clock);
        let mut fut = Box::pin(g.call("m", &d, |_| std::future::pending::<Result<u8, TestErr>>()));
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        let (r, _) = call_with(&clock, &g, &long(&clock), Ok(1));
        assert!(matches!(
            r,
            Err(GuardError::BreakerOpen {
                state: BreakerState::HalfOpen,
                retry_after_seconds: 1
            })
        ));
    }
    let (r, _) = call_with(&clock, &g, &long(&clock), Ok(1));
    assert_eq!(r.ok(), Some(1), "the dropped probe released its slot");
}

#[test]
fn resilience_off_means_one_attempt_and_no_breaker() {
    let (clock, g) = guard_with(GuardConfig {
        resilience_enabled: false,
        ..GuardConfig::default()
    });
    for _ in 0..5 {
        let (_, n) = call_with(&clock, &g, &long(&clock), Err(TestErr::Infra));
        assert_eq!(n, 1);
    }
    assert!(g.breakers().is_empty());
}

#[test]
fn full_bulkhead_answers_busy() {
    let (clock, g) = guard_with(GuardConfig {
        bulkhead: BulkheadConfig {
            max_concurrent_calls: 1,
            max_wait_duration: ms(50),
        },
        ..GuardConfig::default()
    });
    let d = long(&clock);
    let mut held = Box::pin(g.call("m", &d, |_| std::future::pending::<Result<u8, TestErr>>()));
    let waker = futures::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(held.as_mut().poll(&mut cx).is_pending());
    let (r, n) = call_with(&clock, &g, &long(&clock), Ok(1));
    assert!(matches!(r, Err(GuardError::Busy { .. })));
    assert_eq!(n, 0);
    assert_eq!(g.stats().bulkhead_rejected, 1);
    drop(held);
    assert_eq!(
        g.breakers()[0].consecutive_failures,
        0,
        "busy is not a backend failure"
    );
}

#[test]
fn rate_limit_and_admission_feed_the_counters() {
    let (_clock, g) = guard_with(GuardConfig {
        rate: RateConfig {
            per_token_rps: 1.0,
            per_token_burst: 1,
            ..RateConfig::default()
        },
        admission: AdmissionConfig {
            capacity: 1,
            high_watermark: 1,
            low_watermark: 0,
            max_queue_wait: ms(10),
        },
        ..GuardConfig::default()
    });
    assert!(g.check_rate("tok-1").is_ok());
    assert_eq!(g.check_rate("tok-1").unwrap_err().scope, Scope::Token);
    let _p = futures::executor::block_on(g.admit(Priority::Interactive)).expect("admitted");
    let shed = futures::executor::block_on(g.admit(Priority::Interactive)).unwrap_err();
    assert_eq!(shed.reason, ShedReason::HighWatermark);
    assert!(g.admission_snapshot().shedding);
    let s = g.stats();
    assert_eq!(s.rate_limited(Scope::Token), 1);
    assert_eq!(s.shed(Priority::Interactive, ShedReason::HighWatermark), 1);
}

#[test]
fn config_updates_apply_live_and_are_validated() {
    let (clock, g) = guard();
    let _ = call_with(&clock, &g, &long(&clock), Err(TestErr::Infra));
    let mut cfg = g.config();
    cfg.breaker.failure_threshold = 2;
    cfg.retry.max_attempts = 1;
    g.update_config(cfg).expect("valid");
    let (_, n) = call_with(&clock, &g, &long(&clock), Err(TestErr::Infra));
    assert_eq!(n, 1);
    assert_eq!(
        g.breakers()[0].state,
        BreakerState::Open,
        "the existing breaker took threshold 2"
    );
    cfg.admission.low_watermark = cfg.admission.high_watermark;
    let err = g.update_config(cfg).unwrap_err();
    assert_eq!(err.field, "admission.low_watermark");
    assert_eq!(g.config().retry.max_attempts, 1);
}

#[test]
fn admin_actions_by_key() {
    let (clock, g) = guard();
    g.force_open_breaker("m");
    let (r, _) = call_with(&clock, &g, &long(&clock), Ok(1));
    assert!(matches!(
        r,
        Err(GuardError::BreakerOpen {
            state: BreakerState::ForcedOpen,
            ..
        })
    ));
    g.disable_breaker("m");
    for _ in 0..5 {
        let _ = call_with(&clock, &g, &long(&clock), Err(TestErr::Infra));
    }
    assert_eq!(g.breakers()[0].state, BreakerState::Disabled);
    g.reset_breaker("m");
    assert_eq!(g.breakers()[0].state, BreakerState::Closed);
}

/// xorshift64*: a deterministic stand-in for random backend failures.
fn coin(state: &mut u64) -> bool {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 63) == 1
}

#[test]
fn budget_holds_attempts_per_request_under_half_failures() {
    // 50 % random infrastructure failures, 100 requests per second for 60 s. OpenMed's
    // plain 3 attempts would cost 1 + 0.5 + 0.25 = 1.75 attempts per request.
    let (clock, g) = guard();
    g.disable_breaker("m");
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let requests = 6000u64;
    let attempts = AtomicUsize::new(0);
    for _ in 0..requests {
        let start = clock.elapsed();
        let d = long(&clock);
        let _ = drive(
            &clock,
            g.call("m", &d, |_| {
                attempts.fetch_add(1, Ordering::Relaxed);
                let fail = coin(&mut rng);
                async move {
                    if fail {
                        Err(TestErr::Infra)
                    } else {
                        Ok(())
                    }
                }
            }),
        );
        let spent = clock.elapsed() - start;
        clock.advance(ms(10).saturating_sub(spent));
    }
    let per_request = attempts.load(Ordering::Relaxed) as f64 / requests as f64;
    assert!(per_request <= 1.25, "attempts per request {per_request}");
    assert!(
        per_request > 1.1,
        "the budget still allows some retries: {per_request}"
    );
    assert!(g.stats().budget_exhausted > 0);
}

#[test]
fn concurrent_callers_send_exactly_one_probe() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let clock = ManualClock::new();
        let g = Arc::new(
            Guard::new(
                GuardConfig::default(),
                Arc::new(clock.clone()),
                Arc::new(clock.clone()),
                Arc::new(FixedJitter(0.0)),
            )
            .expect("config"),
        );
        let b = g.breaker("m");
        for _ in 0..3 {
            b.try_acquire_permission().expect("closed").on_failure();
        }
        clock.advance(Duration::from_secs(30));
        let reached = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(AtomicUsize::new(0));
        // The backend holds every call that reaches it until the others are done; a
        // semaphore (not a one-shot notification) so that a second caller that wrongly
        // reached the backend fails the assertion below instead of hanging the test.
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let d = Deadline::unbounded(clock.now());
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let (g, reached, gate) = (Arc::clone(&g), Arc::clone(&reached), Arc::clone(&gate));
                let finished = Arc::clone(&finished);
                tokio::spawn(async move {
                    let r = g
                        .call("m", &d, |_| {
                            let (reached, gate) = (Arc::clone(&reached), Arc::clone(&gate));
                            async move {
                                reached.fetch_add(1, Ordering::SeqCst);
                                let _ = gate.acquire().await;
                                Ok::<_, TestErr>(())
                            }
                        })
                        .await;
                    finished.fetch_add(1, Ordering::SeqCst);
                    r
                })
            })
            .collect();
        // Release the probe only once every other caller has been answered: released
        // earlier, it would close the breaker and let a caller that had not yet asked for
        // a permit through to the backend (a race of the test, not of the breaker).
        while finished.load(Ordering::SeqCst) < 63 && reached.load(Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        gate.add_permits(64);
        let mut ok = 0;
        for t in tasks {
            if t.await.expect("task").is_ok() {
                ok += 1;
            }
        }
        assert_eq!(
            reached.load(Ordering::SeqCst),
            1,
            "exactly one probe reached the backend"
        );
        assert_eq!(ok, 1);
        assert_eq!(g.breakers()[0].state, BreakerState::Closed);
    });
}

#[test]
fn refusal_answers_as_call_would_without_taking_the_probe() {
    let mut cfg = GuardConfig::default();
    cfg.breaker.failure_threshold = 1;
    cfg.retry.max_attempts = 1;
    let (clock, g) = guard_with(cfg);
    // No breaker yet, then a closed one: nothing to refuse, nothing counted.
    assert!(!g.may_refuse());
    assert!(g.refusal("m").is_none());
    let _ = call_with(&clock, &g, &long(&clock), Ok(1));
    assert!(g.refusal("m").is_none());
    // Open: refused with the time left; asking counts nothing, answering counts a refused
    // call.
    let _ = call_with(&clock, &g, &long(&clock), Err(TestErr::Infra));
    let before = g.stats();
    assert!(g.may_refuse());
    clock.advance(Duration::from_millis(10_500));
    let left = cfg.breaker.recovery_timeout.as_secs() - 10;
    let refused = g.refusal("m").expect("open");
    assert_eq!(g.stats(), before, "asking counts nothing");
    assert!(matches!(
        g.refused_call::<TestErr>("m", refused),
        GuardError::BreakerOpen {
            state: BreakerState::Open,
            retry_after_seconds,
        } if retry_after_seconds == left
    ));
    assert!(g.refusal("other").is_none(), "per key");
    let after = g.stats();
    assert_eq!(after.breaker_rejected - before.breaker_rejected, 1);
    assert_eq!(after.calls - before.calls, 1);
    // Half-open: asking leaves the probe slot to the call, however often it is asked.
    clock.advance(cfg.breaker.recovery_timeout);
    for _ in 0..3 {
        assert!(g.refusal("m").is_none());
    }
    let (r, n) = call_with(&clock, &g, &long(&clock), Ok(7));
    assert!(matches!((r, n), (Ok(7), 1)), "the probe");
    assert_eq!(g.breakers()[0].state, BreakerState::Closed);
    assert!(!g.may_refuse(), "every breaker lets calls through again");
    // Forced open refuses; with resilience off nothing does.
    g.force_open_breaker("m");
    assert!(g.refusal("m").is_some());
    cfg.resilience_enabled = false;
    g.update_config(cfg).expect("valid");
    assert!(!g.may_refuse());
    assert!(g.refusal("m").is_none());
}
