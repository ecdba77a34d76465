//! Guard overhead: `Guard::call` around a backend that answers at once, on the success
//! path and on the breaker-open fast-fail path, next to a bare `block_on` baseline.
//!
//! Run with `cargo bench --bench guard`. The goal is a success path under 1 µs median.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use futures::executor::block_on;
use phiguard::guard::{Classify, Guard, GuardConfig, RandJitter, SystemClock, TokioSleeper};

#[derive(Debug)]
struct BenchError;

impl Classify for BenchError {
    fn is_retryable(&self) -> bool {
        true
    }
}

fn guard_call(c: &mut Criterion) {
    let guard = match Guard::new(
        GuardConfig::default(),
        Arc::new(SystemClock),
        Arc::new(TokioSleeper),
        Arc::new(RandJitter),
    ) {
        Ok(g) => g,
        Err(e) => panic!("default config is valid: {e}"),
    };
    let deadline = guard.deadline(Duration::from_secs(300));

    c.bench_function("baseline_block_on_noop", |b| {
        b.iter(|| block_on(async { black_box(Ok::<(), BenchError>(())) }))
    });

    c.bench_function("guard_call_success", |b| {
        b.iter(|| {
            let r = block_on(guard.call(black_box("model-a"), &deadline, |_| async {
                Ok::<(), BenchError>(())
            }));
            black_box(r.is_ok())
        })
    });

    guard.force_open_breaker("model-open");
    c.bench_function("guard_call_breaker_open", |b| {
        b.iter(|| {
            let r = block_on(guard.call(black_box("model-open"), &deadline, |_| async {
                Ok::<(), BenchError>(())
            }));
            black_box(r.is_err())
        })
    });
}

criterion_group!(benches, guard_call);
criterion_main!(benches);
