//! Idle cores that one recognizer call may borrow.
//!
//! The engine runs one worker thread per core, each running whole calls with single-threaded
//! kernels: that is what keeps two cores busy when many notes arrive (`engine::workers`).
//! A single long note is one call, so it ran on one core while the others sat idle: one
//! 50 KB file took 1.7× as long as the same text cut into 20 files. A call whose model has
//! several passes to run now asks here for idle cores and runs some passes on them.
//!
//! The cores are a counting semaphore, [`Cores`], with one permit per worker. A worker
//! holds a permit while it runs a call ([`Cores::acquire`]); a call borrows a permit only
//! while no worker waits for one ([`Cores::try_borrow`]), and gives it back after each
//! pass. So the cores are never oversubscribed, and a worker that gets a job while its core
//! is lent waits at most for the pass running on it to end.
//!
//! # Why a thread-local and not a parameter
//!
//! As with [`super::cancel`]: [`Recognizer::detect_batch`](super::Recognizer::detect_batch)
//! is the one interface of every recognizer, and only the model has passes to share out.
//! The worker sets the pool's cores around each call on its own thread ([`during`]); the
//! model reads them there ([`current`]) and hands the permits to the threads it starts.

use std::cell::RefCell;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

thread_local! {
    static CORES: RefCell<Option<Arc<Cores>>> = const { RefCell::new(None) };
}

/// One permit per core; see the module documentation.
#[derive(Debug)]
pub struct Cores {
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Debug)]
struct State {
    free: usize,
    /// Workers blocked in [`Cores::acquire`]: while any waits, nothing is lent.
    waiting: usize,
}

impl Cores {
    /// `n` permits (at least one).
    pub fn new(n: usize) -> Arc<Cores> {
        Arc::new(Cores {
            state: Mutex::new(State {
                free: n.max(1),
                waiting: 0,
            }),
            freed: Condvar::new(),
        })
    }

    /// A worker's permit for one call: waits while every core is in use (at most one pass
    /// of a borrowing call).
    pub fn acquire(self: &Arc<Self>) -> Permit {
        let mut s = self.state.lock();
        s.waiting += 1;
        while s.free == 0 {
            self.freed.wait(&mut s);
        }
        s.waiting -= 1;
        s.free -= 1;
        Permit(Arc::clone(self))
    }

    /// A permit for a borrowing call's extra thread, or `None` when no core is idle or a
    /// worker waits for one.
    pub fn try_borrow(self: &Arc<Self>) -> Option<Permit> {
        let mut s = self.state.lock();
        if s.free == 0 || s.waiting > 0 {
            return None;
        }
        s.free -= 1;
        Some(Permit(Arc::clone(self)))
    }

    /// Permits not held now.
    pub fn free(&self) -> usize {
        self.state.lock().free
    }
}

/// One core, given back when dropped.
#[derive(Debug)]
pub struct Permit(Arc<Cores>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.state.lock().free += 1;
        self.0.freed.notify_one();
    }
}

/// Runs `f` on this thread with `cores` as the cores its recognizer call may borrow.
pub fn during<R>(cores: Arc<Cores>, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            CORES.with(|c| *c.borrow_mut() = None);
        }
    }
    CORES.with(|c| *c.borrow_mut() = Some(cores));
    let _reset = Reset;
    f()
}

/// The cores the call running on this thread may borrow; `None` outside a worker's call
/// (a test, a tool calling a model directly), which then runs on this thread alone.
pub fn current() -> Option<Arc<Cores>> {
    CORES.with(|c| c.borrow().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_core_is_lent_only_while_free_and_comes_back_when_dropped() {
        let cores = Cores::new(2);
        let worker = cores.acquire();
        let lent = cores.try_borrow().expect("the second core is idle");
        assert!(cores.try_borrow().is_none(), "both cores in use");
        drop(lent);
        assert_eq!(cores.free(), 1);
        drop(worker);
        assert_eq!(cores.free(), 2);
    }

    /// A worker that needs its core back gets it when the lent pass ends, and nothing more
    /// is lent while it waits.
    #[test]
    fn a_waiting_worker_gets_the_lent_core_and_stops_further_lending() {
        let cores = Cores::new(1);
        let lent = cores.try_borrow().expect("idle");
        let (got, told) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
        let waiter = {
            let cores = Arc::clone(&cores);
            std::thread::spawn(move || {
                let permit = cores.acquire();
                got.0.send(()).expect("send");
                told.1.recv().expect("recv");
                drop(permit);
            })
        };
        while cores.state.lock().waiting == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Waiting, or holding the core it waited for: nothing to lend either way.
        drop(lent);
        assert!(cores.try_borrow().is_none());
        got.1.recv().expect("the worker got its core");
        assert!(cores.try_borrow().is_none());
        told.0.send(()).expect("send");
        waiter.join().expect("join");
        assert_eq!(cores.free(), 1);
    }

    #[test]
    fn current_is_set_only_inside_during() {
        assert!(current().is_none());
        let cores = Cores::new(2);
        during(Arc::clone(&cores), || assert!(current().is_some()));
        assert!(current().is_none());
    }
}
