//! The inference worker pool: a fixed set of OS threads fed by one bounded queue.
//!
//! Why dedicated threads: model calls are sustained CPU work. Running them on the async
//! runtime would stall every connection; `spawn_blocking` has a very large pool that would
//! oversubscribe two cores. Here `threads` workers (one per core by default) each take a job,
//! gather more queued jobs for the same model into a batch (dynamic batching: up to
//! `max_batch`, waiting up to `max_wait` only when batching is enabled), run one
//! `detect_batch` call, and reply through a oneshot. The queue is bounded: a full queue is
//! an immediate [`PoolError::Full`], never an unbounded wait.
//!
//! One job's failure never fails its batch-mates: when a batch call fails or panics, each
//! job is re-run on its own. A panic inside a model call is caught and becomes a backend
//! failure; the worker thread survives.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{
    sync_channel, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use tokio::sync::oneshot;

use super::faults::Faults;
use crate::detect::{BackendError, Recognizer, RecognizerError, Span};

/// Batching knobs, changeable live.
#[derive(Clone, Copy, Debug)]
pub struct BatchConfig {
    /// Most texts per `detect_batch` call.
    pub max_batch: usize,
    /// Longest wait to fill a batch when `wait` is on.
    pub max_wait: Duration,
    /// Wait up to `max_wait` for more jobs; off means batch only what is already queued.
    pub wait: bool,
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            max_batch: 8,
            max_wait: Duration::from_millis(5),
            wait: false,
        }
    }
}

/// Why a pool call did not produce spans.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// Returned when the bounded queue is full.
    #[error("inference queue is full")]
    Full,
    /// Returned when the pool has shut down.
    #[error("inference pool stopped")]
    Stopped,
    /// Returned when the recognizer failed (or panicked).
    #[error(transparent)]
    Recognizer(#[from] RecognizerError),
}

type Reply = oneshot::Sender<Result<Vec<Vec<Span>>, RecognizerError>>;

/// Texts detected together: one note, or every free text of one document (a table's
/// cells, a FHIR resource's strings), each detected as a text of its own.
pub type Texts = Arc<[Arc<str>]>;

struct Job {
    key: Arc<str>,
    recognizer: Arc<dyn Recognizer>,
    texts: Texts,
    /// A model call at the backend boundary, where injected faults apply; false for the
    /// rules-only answer of degraded mode, which stands in for a failing model and must not
    /// fail with it.
    at_boundary: bool,
    reply: Reply,
    /// The submitting request's span: the worker thread logs the job's events inside it.
    span: tracing::Span,
    /// Set once its caller stops waiting (a deadline, a disconnect): a call all of whose
    /// jobs' callers went stops between the model's passes ([`crate::detect::cancel`]).
    gone: Arc<std::sync::atomic::AtomicBool>,
}

/// A handle to the worker threads; cheap to clone.
#[derive(Clone)]
pub struct WorkerPool {
    tx: SyncSender<Job>,
    shared: Arc<Shared>,
}

/// What the workers share: the queue's receiving end and what they need to know of each
/// other to batch (how many are running a call, how many jobs wait).
struct Shared {
    rx: Mutex<Receiver<Job>>,
    batch: RwLock<BatchConfig>,
    threads: usize,
    /// Workers running a model call now.
    busy: AtomicUsize,
    /// Jobs sent and not yet taken by a worker.
    queued: AtomicUsize,
    /// One permit per worker: held while it runs a call, lent to a call's extra threads
    /// while it is idle.
    cores: Arc<crate::detect::lend::Cores>,
}

impl Shared {
    /// Workers not running a call, this one included.
    fn idle(&self) -> usize {
        self.threads
            .saturating_sub(self.busy.load(Ordering::SeqCst))
            .max(1)
    }
}

/// How often a worker filling a batch looks again whether another worker fell idle.
const WAIT_SLICE: Duration = Duration::from_micros(200);

impl WorkerPool {
    /// Starts `threads` workers behind a queue of `queue` jobs.
    pub fn new(threads: usize, queue: usize, batch: BatchConfig, faults: Arc<Faults>) -> Self {
        let (tx, rx) = sync_channel::<Job>(queue.max(1));
        let shared = Arc::new(Shared {
            rx: Mutex::new(rx),
            batch: RwLock::new(batch),
            threads: threads.max(1),
            busy: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
            cores: crate::detect::lend::Cores::new(threads.max(1)),
        });
        for i in 0..shared.threads {
            let shared = Arc::clone(&shared);
            let faults = Arc::clone(&faults);
            let spawned = std::thread::Builder::new()
                .name(format!("phiguard-infer-{i}"))
                .spawn(move || worker_loop(&shared, &faults));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "could not start an inference worker");
            }
        }
        WorkerPool { tx, shared }
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.shared.threads
    }

    /// The batching knobs in force.
    pub fn batch(&self) -> BatchConfig {
        *self.shared.batch.read()
    }

    /// Replaces the batching knobs (live settings).
    pub fn set_batch(&self, cfg: BatchConfig) {
        *self.shared.batch.write() = cfg;
    }

    /// Runs `recognizer` on `text` on a worker; `key` groups jobs of one model into batches.
    ///
    /// # Errors
    /// [`PoolError::Full`] when the queue is full, [`PoolError::Recognizer`] when the model
    /// call failed or panicked.
    pub async fn run(
        &self,
        key: Arc<str>,
        recognizer: Arc<dyn Recognizer>,
        text: Arc<str>,
    ) -> Result<Vec<Span>, PoolError> {
        let mut each = self.run_each(key, recognizer, Arc::from([text])).await?;
        Ok(each.pop().unwrap_or_default())
    }

    /// Runs `recognizer` on each of `texts` as one job (one queue slot, one answer): the
    /// spans of each text, found as if it had been sent alone. A job's texts go to the
    /// model at most `max_batch` at a time, batched with other jobs' as single texts are.
    ///
    /// # Errors
    /// As [`run`](Self::run); one text's failure fails the job.
    pub async fn run_each(
        &self,
        key: Arc<str>,
        recognizer: Arc<dyn Recognizer>,
        texts: Texts,
    ) -> Result<Vec<Vec<Span>>, PoolError> {
        self.submit(key, recognizer, texts, true).await
    }

    /// Runs the rules-only answer of degraded mode: like [`run_each`](Self::run_each), but
    /// outside the backend boundary, so an injected model fault does not fail the fallback
    /// too.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub async fn run_fallback(
        &self,
        key: Arc<str>,
        recognizer: Arc<dyn Recognizer>,
        texts: Texts,
    ) -> Result<Vec<Vec<Span>>, PoolError> {
        self.submit(key, recognizer, texts, false).await
    }

    async fn submit(
        &self,
        key: Arc<str>,
        recognizer: Arc<dyn Recognizer>,
        texts: Texts,
        at_boundary: bool,
    ) -> Result<Vec<Vec<Span>>, PoolError> {
        let (reply, rx) = oneshot::channel();
        let (abandoned, gone) = crate::detect::cancel::Abandoned::new();
        let job = Job {
            key,
            recognizer,
            texts,
            at_boundary,
            reply,
            span: tracing::Span::current(),
            gone,
        };
        // Counted before the send, so a worker never takes a job it did not count.
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        self.tx.try_send(job).map_err(|e| {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
            match e {
                TrySendError::Full(_) => PoolError::Full,
                TrySendError::Disconnected(_) => PoolError::Stopped,
            }
        })?;
        let answer = rx.await;
        abandoned.disarm();
        match answer {
            Ok(r) => r.map_err(PoolError::Recognizer),
            Err(_) => Err(PoolError::Stopped),
        }
    }
}

/// One worker: take a job, gather more for the same call, run it, repeat.
///
/// How much to gather is where throughput and latency meet. Taking every queued job (up to
/// `max_batch`) makes one call of them, which shares a call's fixed costs (every weight
/// matrix streamed once) among its notes. Two rules keep that from costing the other cores
/// or a lone request:
/// - while another worker is idle, a worker takes only its share of the queue (the jobs
///   over the idle workers), so two idle workers split four queued notes two and two
///   instead of one running four while the other waits;
/// - with `wait` on, a worker waits up to `max_wait` for more jobs only while every other
///   worker is running a call: a job arriving then could not start anywhere sooner, and
///   joining this call costs it less than waiting for a whole call to end. As soon as
///   another worker falls idle, the worker stops waiting and runs what it has, and the idle
///   one takes what comes next. So one client never waits (there is always an idle worker
///   when it sends), and a single worker waits as before. On a CPU the wait still costs
///   the waiting core its time (25-35 % fewer notes a second at 4 and 16 clients on two
///   cores, `docs/bench-peers.md`), which is why it is off by default.
fn worker_loop(shared: &Shared, faults: &Faults) {
    let mut pending: VecDeque<Job> = VecDeque::new();
    loop {
        let cfg = *shared.batch.read();
        // With jobs of its own still to run (another model's, left from the last batch), a
        // worker must not wait for the queue: the worker holding it may be waiting in
        // `recv` for a job that never comes, and those jobs' callers would wait with it (a
        // folder of tables hung so, every worker idle).
        let rx = if pending.is_empty() {
            Some(shared.rx.lock())
        } else {
            shared.rx.try_lock()
        };
        if let Some(rx) = rx {
            let take = |pending: &mut VecDeque<Job>, job| {
                shared.queued.fetch_sub(1, Ordering::SeqCst);
                pending.push_back(job);
            };
            if pending.is_empty() {
                match rx.recv() {
                    Ok(job) => take(&mut pending, job),
                    Err(_) => return,
                }
            }
            let idle = shared.idle();
            let limit = if idle > 1 {
                let queued = pending.len() + shared.queued.load(Ordering::SeqCst);
                cfg.max_batch.min(queued.div_ceil(idle).max(1))
            } else {
                cfg.max_batch
            };
            let deadline = Instant::now() + cfg.max_wait;
            while pending.len() < limit {
                match rx.try_recv() {
                    Ok(job) => take(&mut pending, job),
                    Err(TryRecvError::Disconnected) => break,
                    Err(TryRecvError::Empty) => {
                        let others_busy = shared.idle() == 1;
                        let left = deadline.saturating_duration_since(Instant::now());
                        if !cfg.wait || !others_busy || left.is_zero() {
                            break;
                        }
                        match rx.recv_timeout(left.min(WAIT_SLICE)) {
                            Ok(job) => take(&mut pending, job),
                            Err(RecvTimeoutError::Timeout) => {}
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    }
                }
            }
        }
        // Take the first job's model and every queued job of the same model.
        let Some(first) = pending.pop_front() else {
            continue;
        };
        let mut group = vec![first];
        let mut rest = VecDeque::new();
        while let Some(job) = pending.pop_front() {
            if job.key == group[0].key && group.len() < cfg.max_batch.max(1) {
                group.push(job);
            } else {
                rest.push_back(job);
            }
        }
        pending = rest;
        shared.busy.fetch_add(1, Ordering::SeqCst);
        // This worker's core; the call may borrow the idle ones ([`crate::detect::lend`]).
        let core = shared.cores.acquire();
        crate::detect::lend::during(Arc::clone(&shared.cores), || {
            run_group(group, cfg.max_batch, faults)
        });
        drop(core);
        shared.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

fn run_group(group: Vec<Job>, max_batch: usize, faults: &Faults) {
    // Callers that gave up (timeout, disconnect) need no work.
    let mut live: Vec<Job> = group.into_iter().filter(|j| !j.reply.is_closed()).collect();
    // Faults are decided per job, so a batch behaves like its jobs run one by one; only
    // model calls are at the backend boundary. An injected panic is caught like a panic in
    // the model call itself: the worker thread must survive it.
    let inject = || {
        catch_unwind(AssertUnwindSafe(|| faults.before_infer()))
            .unwrap_or_else(|_| Err(RecognizerError::Backend(BackendError::Panicked)))
    };
    live.retain_mut(|job| match job.at_boundary.then(inject) {
        None | Some(Ok(())) => true,
        Some(Err(e)) => {
            let (tx, _) = oneshot::channel();
            let reply = std::mem::replace(&mut job.reply, tx);
            let _ = reply.send(Err(e));
            false
        }
    });
    if live.is_empty() {
        return;
    }
    let recognizer = Arc::clone(&live[0].recognizer);
    let gone: Vec<_> = live.iter().map(|j| Arc::clone(&j.gone)).collect();
    crate::detect::cancel::during(gone, || run_live(live, &*recognizer, max_batch));
}

/// [`run_group`]'s model calls for the jobs whose callers still wait.
fn run_live(live: Vec<Job>, recognizer: &dyn Recognizer, max_batch: usize) {
    if live.len() > 1 {
        // Every job's texts in one run of calls; each job gets its own back.
        let texts: Vec<&str> = live
            .iter()
            .flat_map(|j| j.texts.iter().map(|t| &**t))
            .collect();
        let started = Instant::now();
        if let Ok(results) = call_chunked(recognizer, &texts, max_batch) {
            let (batch, ms) = (texts.len(), started.elapsed().as_secs_f64() * 1000.0);
            let mut rest = results.into_iter();
            for job in live {
                let spans: Vec<Vec<Span>> = rest.by_ref().take(job.texts.len()).collect();
                job.span.in_scope(|| {
                    tracing::debug!(model = %job.key, batch, elapsed_ms = ms, "inference done");
                });
                let _ = job.reply.send(Ok(spans));
            }
            return;
        }
    }
    // Alone, or after a failed batch: each job on its own, so one job's failure (or
    // panic) never fails its batch-mates.
    for job in live {
        // A caller that gave up while its batch ran needs no second try.
        if job.reply.is_closed() {
            continue;
        }
        let started = Instant::now();
        let texts: Vec<&str> = job.texts.iter().map(|t| &**t).collect();
        let result = call_chunked(recognizer, &texts, max_batch);
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let abandoned = job.reply.is_closed();
        job.span.in_scope(|| match &result {
            Err(_) if abandoned => {
                tracing::debug!(model = %job.key, elapsed_ms = ms, "inference stopped: its caller went")
            }
            // The error's words stay out of the log: only that it failed.
            Err(_) => tracing::warn!(model = %job.key, elapsed_ms = ms, "inference failed"),
            Ok(_) => {
                let batch = texts.len();
                tracing::debug!(model = %job.key, batch, elapsed_ms = ms, "inference done")
            }
        });
        let _ = job.reply.send(result);
    }
}

/// Runs `texts` through the recognizer at most `max_batch` at a time (what one call's
/// buffers hold is bounded by that, not by how many texts a document has), and checks that
/// each call answers every text.
fn call_chunked(
    recognizer: &dyn Recognizer,
    texts: &[&str],
    max_batch: usize,
) -> Result<Vec<Vec<Span>>, RecognizerError> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(max_batch.max(1)) {
        match call(recognizer, chunk) {
            Ok(Ok(r)) if r.len() == chunk.len() => out.extend(r),
            Ok(Ok(_)) => return Err(RecognizerError::Backend(BackendError::WrongCount)),
            Ok(Err(e)) => return Err(e),
            Err(()) => return Err(RecognizerError::Backend(BackendError::Panicked)),
        }
    }
    Ok(out)
}

/// Calls the recognizer, turning a panic into `Err(())`.
fn call(
    recognizer: &dyn Recognizer,
    texts: &[&str],
) -> Result<Result<Vec<Vec<Span>>, RecognizerError>, ()> {
    catch_unwind(AssertUnwindSafe(|| recognizer.detect_batch(texts))).map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::{Label, Source};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Finds "X" characters; panics on a text containing "boom"; counts batch calls.
    struct Xs {
        calls: AtomicUsize,
    }

    impl Recognizer for Xs {
        fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if texts.iter().any(|t| t.contains("boom")) {
                panic!("injected test panic");
            }
            Ok(texts
                .iter()
                .map(|t| {
                    t.chars()
                        .enumerate()
                        .filter(|(_, c)| *c == 'X')
                        .map(|(i, _)| Span::new(i, i + 1, Label::IdNum, 1.0, Source::Rule))
                        .collect()
                })
                .collect())
        }
    }

    /// Runs up to 500 passes of 5 ms, asking between them whether its callers have gone;
    /// counts the passes it ran.
    struct Passes {
        ran: Arc<AtomicUsize>,
    }

    impl Recognizer for Passes {
        fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
            for _ in 0..500 {
                if crate::detect::cancel::requested() {
                    return Err(RecognizerError::Backend(BackendError::Panicked));
                }
                self.ran.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(vec![Vec::new(); texts.len()])
        }
    }

    /// A call whose caller stops waiting (its future dropped, as a deadline or a disconnect
    /// drops it) is told so between passes and stops: the worker is free for the next
    /// caller. Before, it ran every pass of an abandoned call (found by an outside
    /// security reviewer: a long text kept the workers busy for a minute after its `504`).
    #[tokio::test]
    async fn a_call_whose_caller_went_stops_between_passes() {
        let pool = WorkerPool::new(1, 16, BatchConfig::default(), Arc::new(Faults::default()));
        let ran = Arc::new(AtomicUsize::new(0));
        let rec: Arc<dyn Recognizer> = Arc::new(Passes {
            ran: Arc::clone(&ran),
        });
        let key: Arc<str> = Arc::from("m");
        let call = pool.run(key.clone(), Arc::clone(&rec), Arc::from("long"));
        assert!(
            tokio::time::timeout(Duration::from_millis(100), call)
                .await
                .is_err(),
            "still running"
        );
        // The worker is free well before the 500 passes (2.5 s) of the abandoned call: a
        // recognizer that answers at once gets its answer.
        let quick: Arc<dyn Recognizer> = Arc::new(Xs {
            calls: AtomicUsize::new(0),
        });
        let next = pool
            .run(key, quick, Arc::from("X"))
            .await
            .expect("answered");
        assert_eq!(next.len(), 1);
        assert!(
            ran.load(Ordering::SeqCst) < 500,
            "the abandoned call stopped"
        );
    }

    #[tokio::test]
    async fn a_panicking_batch_mate_fails_alone_and_workers_survive() {
        let pool = WorkerPool::new(1, 16, BatchConfig::default(), Arc::new(Faults::default()));
        let rec: Arc<dyn Recognizer> = Arc::new(Xs {
            calls: AtomicUsize::new(0),
        });
        let key: Arc<str> = Arc::from("m");
        let a = pool.run(key.clone(), rec.clone(), Arc::from("aXb"));
        let b = pool.run(key.clone(), rec.clone(), Arc::from("boom"));
        let (a, b) = tokio::join!(a, b);
        assert_eq!(a.expect("a succeeds").len(), 1);
        assert!(matches!(
            b,
            Err(PoolError::Recognizer(RecognizerError::Backend(_)))
        ));
        let again = pool
            .run(key, rec, Arc::from("XX"))
            .await
            .expect("pool alive");
        assert_eq!(again.len(), 2);
    }

    /// A job of many texts answers each text on its own, in order, through calls of at most
    /// `max_batch` texts, also when it shares a batch with a single-text job.
    #[tokio::test]
    async fn a_job_of_many_texts_gets_each_text_s_spans_through_bounded_calls() {
        let held = Arc::new(Held::default());
        held.release.store(true, Ordering::SeqCst);
        let cfg = BatchConfig {
            max_batch: 2,
            ..Default::default()
        };
        let pool = WorkerPool::new(1, 16, cfg, Arc::new(Faults::default()));
        let key: Arc<str> = Arc::from("m");
        let xs: Arc<dyn Recognizer> = Arc::new(Xs {
            calls: AtomicUsize::new(0),
        });
        let texts: Texts = ["X", "aXX", "", "XbX", "XXXX"].map(Arc::from).into();
        let (each, one) = tokio::join!(
            pool.run_each(key.clone(), xs.clone(), texts),
            pool.run(key.clone(), xs, Arc::from("XaX"))
        );
        let counts: Vec<usize> = each.expect("spans").iter().map(Vec::len).collect();
        assert_eq!(counts, [1, 2, 0, 2, 4]);
        assert_eq!(one.expect("spans").len(), 2);
        let rec: Arc<dyn Recognizer> = held.clone();
        let texts: Texts = ["a", "b", "c", "d", "e"].map(Arc::from).into();
        pool.run_each(key, rec, texts).await.expect("spans");
        let calls = held.calls.lock().clone();
        assert_eq!(calls, [vec!["a", "b"], vec!["c", "d"], vec!["e"]]);
    }

    #[cfg(feature = "fault-injection")]
    #[tokio::test]
    async fn injected_faults_hit_model_calls_only_and_an_injected_panic_spares_the_worker() {
        let faults = Arc::new(Faults::default());
        let pool = WorkerPool::new(1, 16, BatchConfig::default(), Arc::clone(&faults));
        let rec: Arc<dyn Recognizer> = Arc::new(Xs {
            calls: AtomicUsize::new(0),
        });
        let key: Arc<str> = Arc::from("m");
        faults.set_spec("infer=fail").expect("faults");
        let model = pool.run(key.clone(), rec.clone(), Arc::from("X")).await;
        assert!(matches!(
            model,
            Err(PoolError::Recognizer(RecognizerError::Backend(_)))
        ));
        let fallback = pool
            .run_fallback(key.clone(), rec.clone(), Arc::from([Arc::from("X")]))
            .await;
        let spans: Vec<usize> = fallback
            .expect("the fallback is not at the boundary")
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(spans, [1]);
        faults.set_spec("infer=panic:1").expect("faults");
        let panicked = pool.run(key.clone(), rec.clone(), Arc::from("X")).await;
        assert!(matches!(
            panicked,
            Err(PoolError::Recognizer(RecognizerError::Backend(_)))
        ));
        // The only worker survived the injected panic.
        let again = pool.run(key, rec, Arc::from("XX")).await;
        assert_eq!(again.expect("the worker is alive").len(), 2);
    }

    /// Records each call's texts; a call holding "hold" runs until `release`.
    #[derive(Default)]
    struct Held {
        calls: Mutex<Vec<Vec<String>>>,
        release: std::sync::atomic::AtomicBool,
    }

    impl Recognizer for Held {
        fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
            self.calls
                .lock()
                .push(texts.iter().map(|t| t.to_string()).collect());
            while texts.contains(&"hold") && !self.release.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(vec![Vec::new(); texts.len()])
        }
    }

    /// Sleeps as long as each text says (`x` 100 ms, `y` 200 ms, `a` 300 ms, `b` none).
    struct Timed;

    impl Recognizer for Timed {
        fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
            for t in texts {
                let ms = match *t {
                    "x" => 100,
                    "y" => 200,
                    "a" => 300,
                    _ => 0,
                };
                std::thread::sleep(Duration::from_millis(ms));
            }
            Ok(vec![Vec::new(); texts.len()])
        }
    }

    /// A worker left with another model's job after its batch runs it without waiting for
    /// the queue. Before, it waited for the queue's lock while the other worker held it in
    /// `recv`, and that job's caller waited for ever (`phiguard deid` over a folder of
    /// tables hung so): here the worker that finishes `x` takes `a` and `b` while the other
    /// still runs `y`, runs `a`, and must then run `b` though the other now waits in `recv`.
    #[tokio::test]
    async fn a_job_left_over_from_a_batch_runs_while_another_worker_waits_for_the_queue() {
        let pool = WorkerPool::new(2, 16, BatchConfig::default(), Arc::new(Faults::default()));
        let rec: Arc<dyn Recognizer> = Arc::new(Timed);
        let run = |key: &'static str, text: &'static str| {
            let (pool, rec) = (pool.clone(), Arc::clone(&rec));
            tokio::spawn(async move { pool.run(Arc::from(key), rec, Arc::from(text)).await })
        };
        let x = run("slow", "x");
        let y = run("slow", "y");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let a = run("a", "a");
        let b = run("b", "b");
        for (name, job) in [("x", x), ("y", y), ("a", a), ("b", b)] {
            let answered = tokio::time::timeout(Duration::from_secs(10), job).await;
            assert!(
                matches!(answered, Ok(Ok(Ok(_)))),
                "job {name} was not answered"
            );
        }
    }

    /// With `wait` on and a wait far longer than the test: a lone job does not wait while
    /// another worker is idle (before, it waited the whole `max_wait`, and with two workers
    /// the pool served half as many notes a second); while the other worker is busy, jobs
    /// arriving one after another join one call, which runs once that worker is free.
    #[tokio::test]
    async fn a_worker_waits_for_more_jobs_only_while_every_other_worker_is_busy() {
        let wait = BatchConfig {
            max_batch: 8,
            max_wait: Duration::from_secs(3600),
            wait: true,
        };
        let pool = WorkerPool::new(2, 16, wait, Arc::new(Faults::default()));
        let held = Arc::new(Held::default());
        let rec: Arc<dyn Recognizer> = held.clone();
        let key: Arc<str> = Arc::from("m");
        let run = |text: &'static str| {
            let (pool, key, rec) = (pool.clone(), key.clone(), rec.clone());
            tokio::spawn(async move { pool.run(key, rec, Arc::from(text)).await })
        };
        let alone = tokio::time::timeout(Duration::from_secs(60), run("alone"))
            .await
            .expect("a lone job with an idle worker beside it does not wait for a batch");
        alone.expect("join").expect("spans");

        let hold = run("hold");
        while held.calls.lock().len() < 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let a = run("a");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let b = run("b");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            held.calls.lock().len(),
            2,
            "a and b wait while the other worker is busy"
        );
        held.release.store(true, Ordering::SeqCst);
        for job in [hold, a, b] {
            tokio::time::timeout(Duration::from_secs(60), job)
                .await
                .expect("released")
                .expect("join")
                .expect("spans");
        }
        let calls = held.calls.lock().clone();
        assert_eq!(calls[2], ["a", "b"], "{calls:?}");
    }

    #[tokio::test]
    async fn a_full_queue_is_refused_at_once() {
        struct Slow;
        impl Recognizer for Slow {
            fn detect_batch(&self, texts: &[&str]) -> Result<Vec<Vec<Span>>, RecognizerError> {
                std::thread::sleep(Duration::from_millis(200));
                Ok(vec![Vec::new(); texts.len()])
            }
        }
        let pool = WorkerPool::new(
            1,
            1,
            BatchConfig {
                max_batch: 1,
                ..Default::default()
            },
            Arc::new(Faults::default()),
        );
        let rec: Arc<dyn Recognizer> = Arc::new(Slow);
        let key: Arc<str> = Arc::from("m");
        let mut futs = Vec::new();
        for _ in 0..4 {
            futs.push(pool.run(key.clone(), rec.clone(), Arc::from("t")));
        }
        let results = futures::future::join_all(futs).await;
        assert!(results.iter().any(|r| matches!(r, Err(PoolError::Full))));
        assert!(results.iter().any(|r| r.is_ok()));
    }
}
