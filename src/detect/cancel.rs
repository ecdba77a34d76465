//! Cooperative cancellation of a recognizer call whose callers have all gone.
//!
//! A request that times out (`504`) or whose client disconnects stops waiting, but the
//! inference worker running its model call did not stop: a long text (a megabyte of
//! punctuation is a token per character, thousands of windows) kept both workers busy for a
//! minute while every other caller timed out behind it. The worker now says, around each
//! recognizer call, how to tell that every caller of that call has gone ([`during`]), and
//! the model asks between its encoder passes ([`requested`]) and stops early.
//!
//! # Why a thread-local and not a parameter
//!
//! [`Recognizer::detect_batch`](super::Recognizer::detect_batch) is the one interface of
//! every recognizer (rules, context, scripted test backends, the candle model), and only the
//! model has passes worth stopping between. The check is set and cleared on the worker
//! thread that makes the call, so it can never be seen by another call.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

thread_local! {
    static GONE: RefCell<Option<Vec<Arc<AtomicBool>>>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread with cancellation requested once every flag of `gone` is set
/// (each is one caller's: set when it stops waiting).
pub fn during<R>(gone: Vec<Arc<AtomicBool>>, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            GONE.with(|g| *g.borrow_mut() = None);
        }
    }
    GONE.with(|g| *g.borrow_mut() = Some(gone));
    let _reset = Reset;
    f()
}

/// True when the call running on this thread has no caller left waiting for it.
pub fn requested() -> bool {
    GONE.with(|g| {
        g.borrow().as_ref().is_some_and(|flags| {
            !flags.is_empty() && flags.iter().all(|f| f.load(Ordering::Relaxed))
        })
    })
}

/// Set when dropped unless [`disarm`](Abandoned::disarm)ed: held by a caller while it
/// waits for an answer, so that a caller dropped mid-wait (a deadline, a disconnect) marks
/// its call as abandoned.
#[derive(Debug)]
pub struct Abandoned(Option<Arc<AtomicBool>>);

impl Abandoned {
    /// A guard and the flag it sets.
    pub fn new() -> (Abandoned, Arc<AtomicBool>) {
        let flag = Arc::new(AtomicBool::new(false));
        (Abandoned(Some(Arc::clone(&flag))), flag)
    }

    /// The caller got its answer: nothing to set.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_only_inside_a_call_whose_callers_all_went() {
        assert!(!requested(), "outside any call");
        let (a, fa) = Abandoned::new();
        let (b, fb) = Abandoned::new();
        during(vec![fa, fb], || {
            assert!(!requested());
            drop(a);
            assert!(!requested(), "one caller still waits");
            b.disarm();
            assert!(!requested(), "an answered caller is not gone");
        });
        let (c, fc) = Abandoned::new();
        during(vec![fc], || {
            drop(c);
            assert!(requested());
        });
        assert!(!requested(), "cleared after the call");
    }
}
