//! Unit tests of the circuit breaker (kept beside `breaker.rs` to keep both files short).

use super::*;
use crate::guard::clock::ManualClock;
use crate::guard::registry::{BreakerRegistry, StateCounts};
use proptest::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

fn secs(v: f64) -> Duration {
    Duration::from_secs_f64(v)
}

fn breaker(cfg: BreakerConfig) -> (ManualClock, Arc<CircuitBreaker>) {
    let clock = ManualClock::new();
    let b = CircuitBreaker::standalone("model-a", cfg, Arc::new(clock.clone()));
    (clock, b)
}

fn fail(b: &Arc<CircuitBreaker>) {
    b.try_acquire_permission().expect("permitted").on_failure();
}

fn succeed(b: &Arc<CircuitBreaker>) {
    b.try_acquire_permission().expect("permitted").on_success();
}

fn refused(b: &Arc<CircuitBreaker>) -> (BreakerState, u64) {
    match b.try_acquire_permission() {
        Err(BreakerError::CallNotPermitted { state, retry_after }) => {
            (state, retry_after.as_secs())
        }
        Ok(_) => panic!("expected a refusal"),
    }
}

#[test]
fn full_cycle_closed_open_half_open_closed() {
    let (clock, b) = breaker(BreakerConfig::default());
    fail(&b);
    fail(&b);
    assert_eq!(b.state(), BreakerState::Closed);
    assert_eq!(b.snapshot().consecutive_failures, 2);
    fail(&b);
    assert_eq!(b.state(), BreakerState::Open);
    assert_eq!(refused(&b), (BreakerState::Open, 30));
    clock.advance(secs(0.5));
    assert_eq!(refused(&b), (BreakerState::Open, 30), "ceil(29.5) = 30");
    clock.advance(secs(0.5));
    assert_eq!(refused(&b), (BreakerState::Open, 29));
    assert_eq!(b.snapshot().retry_after_seconds, 29);
    clock.advance(secs(28.999));
    assert_eq!(
        refused(&b),
        (BreakerState::Open, 1),
        "never below one second"
    );
    clock.advance(secs(0.001));
    let probe = b.try_acquire_permission().expect("probe admitted");
    assert!(probe.is_probe());
    assert_eq!(
        refused(&b),
        (BreakerState::HalfOpen, 1),
        "concurrent caller refused"
    );
    probe.on_success();
    let snap = b.snapshot();
    assert_eq!(snap.state, BreakerState::Closed);
    assert_eq!(snap.consecutive_failures, 0);
    assert_eq!(snap.retry_after_seconds, 0);
}

#[test]
fn failed_probe_reopens_for_a_full_recovery_timeout() {
    let (clock, b) = breaker(BreakerConfig::default());
    (0..3).for_each(|_| fail(&b));
    clock.advance(secs(30.0));
    fail(&b);
    assert_eq!(refused(&b), (BreakerState::Open, 30));
}

#[test]
fn success_resets_the_consecutive_count() {
    let (_clock, b) = breaker(BreakerConfig::default());
    fail(&b);
    fail(&b);
    succeed(&b);
    fail(&b);
    fail(&b);
    assert_eq!(b.state(), BreakerState::Closed);
    fail(&b);
    assert_eq!(b.state(), BreakerState::Open);
}

#[test]
fn cancelled_probe_releases_its_slot_and_records_nothing() {
    let (clock, b) = breaker(BreakerConfig::default());
    (0..3).for_each(|_| fail(&b));
    clock.advance(secs(30.0));
    let probe = b.try_acquire_permission().expect("probe");
    drop(probe);
    assert_eq!(b.state(), BreakerState::HalfOpen);
    let probe = b.try_acquire_permission().expect("slot released");
    probe.on_success();
    assert_eq!(b.state(), BreakerState::Closed);
}

#[test]
fn stale_verdicts_are_ignored() {
    let (_clock, b) = breaker(BreakerConfig::default());
    let early = b.try_acquire_permission().expect("closed");
    (0..3).for_each(|_| fail(&b));
    assert_eq!(b.state(), BreakerState::Open);
    early.on_success();
    assert_eq!(
        b.state(),
        BreakerState::Open,
        "a call from before the opening cannot close it"
    );
}

#[test]
fn admin_actions() {
    let (clock, b) = breaker(BreakerConfig::default());
    b.force_open();
    assert_eq!(refused(&b), (BreakerState::ForcedOpen, 30));
    clock.advance(secs(3600.0));
    assert_eq!(
        refused(&b).0,
        BreakerState::ForcedOpen,
        "forced open ignores the timer"
    );
    b.reset();
    assert_eq!(b.state(), BreakerState::Closed);
    b.disable();
    (0..10).for_each(|_| fail(&b));
    assert_eq!(b.state(), BreakerState::Disabled);
    assert_eq!(b.snapshot().consecutive_failures, 0);
    (0..3).for_each(|_| fail(&b));
    b.reset();
    (0..2).for_each(|_| fail(&b));
    assert_eq!(b.state(), BreakerState::Closed);
}

#[test]
fn failure_rate_window_opens_without_consecutive_failures() {
    let cfg = BreakerConfig {
        failure_threshold: 100,
        sliding_window_size: 10,
        minimum_number_of_calls: 4,
        failure_rate_threshold: 50.0,
        ..BreakerConfig::default()
    };
    let (_clock, b) = breaker(cfg);
    fail(&b);
    succeed(&b);
    succeed(&b);
    assert_eq!(
        b.snapshot().failure_rate,
        None,
        "below minimum_number_of_calls"
    );
    succeed(&b);
    assert_eq!(b.snapshot().failure_rate, Some(25.0));
    assert_eq!(b.state(), BreakerState::Closed);
    fail(&b);
    assert_eq!(b.state(), BreakerState::Closed, "2 of 5 = 40 %");
    fail(&b);
    // 3 of 6 = 50 %: the rate trips it (the consecutive threshold is 100).
    assert_eq!(b.state(), BreakerState::Open);
}

#[test]
fn slow_successes_open_the_breaker() {
    let cfg = BreakerConfig {
        sliding_window_size: 4,
        minimum_number_of_calls: 4,
        slow_call_duration_threshold: Some(secs(1.0)),
        slow_call_rate_threshold: 75.0,
        ..BreakerConfig::default()
    };
    let (clock, b) = breaker(cfg);
    succeed(&b);
    for _ in 0..2 {
        let p = b.try_acquire_permission().expect("closed");
        clock.advance(secs(1.0));
        p.on_success();
    }
    assert_eq!(
        b.state(),
        BreakerState::Closed,
        "2 of 3 slow, window not full"
    );
    let p = b.try_acquire_permission().expect("closed");
    clock.advance(secs(2.0));
    p.on_success();
    assert_eq!(b.state(), BreakerState::Open, "3 of 4 slow = 75 %");
}

#[test]
fn n_probes_must_all_succeed() {
    let cfg = BreakerConfig {
        permitted_calls_in_half_open_state: 2,
        ..BreakerConfig::default()
    };
    let (clock, b) = breaker(cfg);
    (0..3).for_each(|_| fail(&b));
    clock.advance(secs(30.0));
    let p1 = b.try_acquire_permission().expect("probe 1");
    let p2 = b.try_acquire_permission().expect("probe 2");
    assert_eq!(refused(&b), (BreakerState::HalfOpen, 1));
    p1.on_success();
    assert_eq!(b.state(), BreakerState::HalfOpen);
    assert_eq!(
        refused(&b).0,
        BreakerState::HalfOpen,
        "the success keeps its slot"
    );
    p2.on_success();
    assert_eq!(b.state(), BreakerState::Closed);
}

#[test]
fn listener_and_counters_see_every_transition() {
    let clock = ManualClock::new();
    let stats = Arc::new(GuardStats::default());
    let reg = BreakerRegistry::new(
        BreakerConfig::default(),
        Arc::new(clock.clone()),
        Arc::clone(&stats),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    reg.set_listener(Some(Arc::new(move |t: &BreakerTransition| {
        sink.lock().push((t.key.to_string(), t.from, t.to));
    })));
    let b = reg.get("m1");
    (0..3).for_each(|_| fail(&b));
    clock.advance(secs(30.0));
    succeed(&b);
    let seen = seen.lock().clone();
    assert_eq!(
        seen,
        vec![
            ("m1".to_string(), BreakerState::Closed, BreakerState::Open),
            ("m1".to_string(), BreakerState::Open, BreakerState::HalfOpen),
            (
                "m1".to_string(),
                BreakerState::HalfOpen,
                BreakerState::Closed
            ),
        ]
    );
    let snap = stats.snapshot();
    assert_eq!(snap.transitions_to(BreakerState::Open), 1);
    assert_eq!(snap.transitions_to(BreakerState::HalfOpen), 1);
    assert_eq!(snap.transitions_to(BreakerState::Closed), 1);
}

#[test]
fn registry_is_lazy_per_key_and_updates_live() {
    let clock = ManualClock::new();
    let reg = BreakerRegistry::new(
        BreakerConfig::default(),
        Arc::new(clock.clone()),
        Arc::default(),
    );
    let a = reg.get("a");
    assert!(Arc::ptr_eq(&a, &reg.get("a")));
    let b = reg.get("b");
    (0..3).for_each(|_| fail(&a));
    fail(&b);
    reg.update_config(BreakerConfig {
        failure_threshold: 2,
        ..BreakerConfig::default()
    });
    fail(&b);
    let snaps = reg.snapshots();
    assert_eq!(
        snaps.iter().map(|s| s.key.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(
        snaps[1].state,
        BreakerState::Open,
        "existing breaker took the new threshold"
    );
    reg.get("c");
    assert_eq!(
        reg.state_counts(),
        StateCounts {
            closed: 1,
            open: 2,
            half_open: 0
        }
    );
    clock.advance(secs(30.0));
    assert_eq!(reg.state_counts().half_open, 2);
}

#[test]
fn config_validation_names_fields() {
    let bad = BreakerConfig {
        failure_threshold: 0,
        ..BreakerConfig::default()
    };
    assert_eq!(
        bad.validate().unwrap_err().field,
        "breaker.failure_threshold"
    );
    let bad = BreakerConfig {
        slow_call_duration_threshold: Some(secs(1.0)),
        ..BreakerConfig::default()
    };
    assert_eq!(
        bad.validate().unwrap_err().field,
        "breaker.slow_call_duration_threshold"
    );
    assert!(BreakerConfig::default().validate().is_ok());
}

#[test]
fn concurrent_callers_get_exactly_n_probes() {
    for n in [1u32, 3] {
        let cfg = BreakerConfig {
            permitted_calls_in_half_open_state: n,
            ..BreakerConfig::default()
        };
        let (clock, b) = breaker(cfg);
        (0..3).for_each(|_| fail(&b));
        clock.advance(secs(30.0));
        let reached = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(std::sync::Barrier::new(32));
        let handles: Vec<_> = (0..32)
            .map(|_| {
                let (b, reached, barrier) =
                    (Arc::clone(&b), Arc::clone(&reached), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    // Hold the permit until every thread has tried.
                    let permit = b.try_acquire_permission().ok();
                    if permit.is_some() {
                        reached.fetch_add(1, Ordering::SeqCst);
                    }
                    barrier.wait();
                    permit
                })
            })
            .collect();
        let permits: Vec<_> = handles
            .into_iter()
            .filter_map(|h| h.join().expect("thread"))
            .collect();
        assert_eq!(reached.load(Ordering::SeqCst), n as usize);
        permits.into_iter().for_each(BreakerPermit::on_success);
        assert_eq!(b.state(), BreakerState::Closed);
    }
}

#[derive(Debug, Clone)]
enum Op {
    Acquire,
    Succeed(usize),
    Fail(usize),
    Drop(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Acquire),
        2 => (0usize..8).prop_map(Op::Succeed),
        2 => (0usize..8).prop_map(Op::Fail),
        2 => (0usize..8).prop_map(Op::Drop),
        1 => (0u64..40).prop_map(Op::Advance),
    ]
}

proptest! {
    #[test]
    fn half_open_never_admits_more_than_n(
        n in 1u32..4,
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let cfg = BreakerConfig {
            failure_threshold: 1,
            permitted_calls_in_half_open_state: n,
            ..BreakerConfig::default()
        };
        let (clock, b) = breaker(cfg);
        let mut held: Vec<BreakerPermit> = Vec::new();
        // Probes admitted in the current half-open epoch (including settled ones).
        let mut admitted_this_epoch = 0u32;
        let mut epoch = u64::MAX;
        for op in ops {
            match op {
                Op::Acquire => {
                    if let Ok(p) = b.try_acquire_permission() {
                        if p.is_probe() {
                            if p.epoch != epoch {
                                epoch = p.epoch;
                                admitted_this_epoch = 0;
                            }
                            admitted_this_epoch += 1;
                        }
                        held.push(p);
                    }
                }
                Op::Succeed(i) if i < held.len() => held.remove(i).on_success(),
                Op::Fail(i) if i < held.len() => held.remove(i).on_failure(),
                Op::Drop(i) if i < held.len() => {
                    let p = held.remove(i);
                    if p.is_probe() && p.epoch == epoch && b.inner.lock().epoch == epoch {
                        admitted_this_epoch -= 1;
                    }
                    drop(p);
                }
                Op::Advance(s) => clock.advance(Duration::from_secs(s)),
                _ => {}
            }
            let g = b.inner.lock();
            let live_probes = held.iter().filter(|p| p.is_probe() && p.epoch == g.epoch).count();
            prop_assert!(live_probes <= n as usize);
            prop_assert!(g.half_open_in_flight + g.half_open_successes <= n);
            if g.state == BreakerState::HalfOpen && g.epoch == epoch {
                prop_assert!(admitted_this_epoch <= n);
            }
        }
    }
}
