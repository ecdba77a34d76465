//! Unit tests of the admission queue (kept beside `admission.rs` to keep both short).

use super::*;
use crate::guard::clock::ManualClock;
use futures::FutureExt;
use std::task::Context;

fn queue(
    capacity: usize,
    high: usize,
    low: usize,
    wait_ms: u64,
) -> (ManualClock, Arc<GuardStats>, Admission) {
    let clock = ManualClock::new();
    let stats = Arc::new(GuardStats::default());
    let cfg = AdmissionConfig {
        capacity,
        high_watermark: high,
        low_watermark: low,
        max_queue_wait: Duration::from_millis(wait_ms),
    };
    let adm = Admission::new(cfg, Arc::new(clock.clone()), Arc::clone(&stats));
    (clock, stats, adm)
}

fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    let waker = futures::task::noop_waker();
    f.poll_unpin(&mut Context::from_waker(&waker))
}

fn admit_now(adm: &Admission, p: Priority) -> Result<AdmissionPermit, Shed> {
    match poll(&mut Box::pin(adm.admit(p))) {
        Poll::Ready(r) => r,
        Poll::Pending => panic!("expected an immediate answer"),
    }
}

fn ready(p: Poll<Result<AdmissionPermit, Shed>>) -> AdmissionPermit {
    match p {
        Poll::Ready(Ok(permit)) => permit,
        other => panic!("expected a permit, got {other:?}"),
    }
}

#[test]
fn hysteresis_sheds_from_high_until_low() {
    let (_clock, stats, adm) = queue(1, 4, 2, 10_000);
    let p1 = admit_now(&adm, Priority::Interactive).expect("runs");
    let mut waiters: Vec<_> = (0..3)
        .map(|_| Box::pin(adm.admit(Priority::Interactive)))
        .collect();
    for w in &mut waiters {
        assert!(poll(w).is_pending());
    }
    assert_eq!(adm.snapshot().depth[0], 4);
    let shed = admit_now(&adm, Priority::Interactive).unwrap_err();
    assert_eq!(shed.reason, ShedReason::HighWatermark);
    // `queue_capacity` is the high watermark, as OpenMed reports it (not the execution
    // capacity, 1 here).
    assert_eq!(
        (shed.depth, shed.queue_capacity, shed.low_watermark),
        (4, 4, 2)
    );
    assert_eq!(shed.retry_after, Duration::from_secs(10));
    assert!(adm.snapshot().shedding);

    drop(p1);
    let p2 = ready(poll(&mut waiters[0]));
    assert_eq!(adm.snapshot().depth[0], 3);
    assert!(adm.snapshot().shedding, "3 is above the low watermark");
    assert!(admit_now(&adm, Priority::Interactive).is_err());

    drop(p2);
    let _p3 = ready(poll(&mut waiters[1]));
    assert_eq!(adm.snapshot().depth[0], 2);
    assert!(!adm.snapshot().shedding, "back at the low watermark");
    let mut late = Box::pin(adm.admit(Priority::Interactive));
    assert!(poll(&mut late).is_pending(), "admitted to the queue again");
    let snap = stats.snapshot();
    assert_eq!(
        snap.shed(Priority::Interactive, ShedReason::HighWatermark),
        2
    );
}

#[test]
fn bulk_is_shed_from_the_low_watermark() {
    let (_clock, stats, adm) = queue(1, 4, 2, 10_000);
    let _p = admit_now(&adm, Priority::Interactive).expect("runs");
    let mut bulk = Box::pin(adm.admit(Priority::Bulk));
    // depth is 1 (only the running one) so bulk queues.
    assert!(poll(&mut bulk).is_pending());
    // depth 2 = low: bulk refused, interactive still queued.
    let shed = admit_now(&adm, Priority::Bulk).unwrap_err();
    assert_eq!(
        (shed.reason, shed.priority),
        (ShedReason::HighWatermark, Priority::Bulk)
    );
    let mut inter = Box::pin(adm.admit(Priority::Interactive));
    assert!(poll(&mut inter).is_pending());
    assert_eq!(
        stats
            .snapshot()
            .shed(Priority::Bulk, ShedReason::HighWatermark),
        1
    );
    assert_eq!(adm.snapshot().queued, [1, 1]);
}

#[test]
fn interactive_waiters_are_served_first() {
    let (_clock, _stats, adm) = queue(1, 10, 5, 10_000);
    let p = admit_now(&adm, Priority::Interactive).expect("runs");
    let mut bulk = Box::pin(adm.admit(Priority::Bulk));
    assert!(poll(&mut bulk).is_pending());
    let mut inter = Box::pin(adm.admit(Priority::Interactive));
    assert!(poll(&mut inter).is_pending());
    drop(p);
    assert!(poll(&mut bulk).is_pending(), "bulk queued first but waits");
    let i = ready(poll(&mut inter));
    assert_eq!(i.priority(), Priority::Interactive);
    assert_eq!(adm.snapshot().running, [1, 0]);
    drop(i);
    let b = ready(poll(&mut bulk));
    assert_eq!(b.priority(), Priority::Bulk);
    assert_eq!(adm.snapshot().running, [0, 1]);
}

#[test]
fn waiting_past_max_queue_wait_sheds() {
    let (clock, stats, adm) = queue(1, 10, 5, 1_000);
    let _p = admit_now(&adm, Priority::Interactive).expect("runs");
    let mut w = Box::pin(adm.admit(Priority::Interactive));
    assert!(poll(&mut w).is_pending());
    clock.advance(Duration::from_millis(999));
    assert!(poll(&mut w).is_pending());
    clock.advance(Duration::from_millis(1));
    match poll(&mut w) {
        Poll::Ready(Err(shed)) => {
            assert_eq!(shed.reason, ShedReason::MaxWait);
            assert_eq!(shed.retry_after, Duration::from_secs(1));
        }
        other => panic!("expected a max-wait shed, got {other:?}"),
    }
    assert_eq!(adm.snapshot().queued, [0, 0]);
    assert_eq!(
        stats
            .snapshot()
            .shed(Priority::Interactive, ShedReason::MaxWait),
        1
    );
}

#[test]
fn zero_wait_sheds_at_once_when_full() {
    let (_clock, _stats, adm) = queue(1, 10, 5, 0);
    let _p = admit_now(&adm, Priority::Interactive).expect("runs");
    assert_eq!(
        admit_now(&adm, Priority::Interactive).unwrap_err().reason,
        ShedReason::MaxWait
    );
}

#[test]
fn cancelled_waiters_leave_and_pass_on_their_slot() {
    let (_clock, _stats, adm) = queue(1, 10, 5, 10_000);
    let p = admit_now(&adm, Priority::Interactive).expect("runs");
    let mut gone = Box::pin(adm.admit(Priority::Interactive));
    assert!(poll(&mut gone).is_pending());
    drop(gone);
    assert_eq!(adm.snapshot().queued, [0, 0]);

    let mut granted_then_cancelled = Box::pin(adm.admit(Priority::Interactive));
    assert!(poll(&mut granted_then_cancelled).is_pending());
    let mut next = Box::pin(adm.admit(Priority::Bulk));
    assert!(poll(&mut next).is_pending());
    drop(p);
    assert_eq!(
        adm.snapshot().running,
        [1, 0],
        "slot granted to the first waiter"
    );
    drop(granted_then_cancelled);
    let b = ready(poll(&mut next));
    assert_eq!(adm.snapshot().running, [0, 1]);
    drop(b);
    assert_eq!(adm.snapshot(), AdmissionSnapshot::default());
}

#[test]
fn larger_capacity_admits_waiters() {
    let (_clock, _stats, adm) = queue(1, 10, 5, 10_000);
    let _p = admit_now(&adm, Priority::Interactive).expect("runs");
    let mut w = Box::pin(adm.admit(Priority::Interactive));
    assert!(poll(&mut w).is_pending());
    adm.update_config(AdmissionConfig {
        capacity: 2,
        high_watermark: 10,
        low_watermark: 5,
        max_queue_wait: Duration::from_secs(10),
    });
    let _w = ready(poll(&mut w));
    assert_eq!(adm.snapshot().running, [2, 0]);
}

#[test]
fn validation_names_the_field() {
    let bad = AdmissionConfig {
        low_watermark: 256,
        ..AdmissionConfig::default()
    };
    assert_eq!(bad.validate().unwrap_err().field, "admission.low_watermark");
    assert!(AdmissionConfig::default().validate().is_ok());
}
