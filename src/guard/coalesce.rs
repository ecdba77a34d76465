//! Request coalescing: [`SingleFlight`] lets identical concurrent requests share one
//! computation.
//!
//! # Why, and why no cache
//!
//! When several clients send the same request at once (a retrying script, a dashboard
//! refresh), running the model once and handing the result to all of them saves the
//! backend the duplicate work. The entry lives only while the computation runs and is
//! removed the moment it completes: nothing outlives the requests, so no patient text or
//! result is kept around (OpenMed's `COALESCING_ENABLED` has the same scope).
//!
//! If the leader is cancelled (its client went away), its followers do not hang: the
//! channel closes, and the first follower to notice becomes the new leader and runs the
//! computation itself.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;

use parking_lot::Mutex;
use tokio::sync::watch;

/// Whether a caller ran the computation or shared another caller's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// This caller ran the computation.
    Leader,
    /// This caller received the leader's result.
    Follower,
}

/// Shares one in-flight computation per key among concurrent callers.
pub struct SingleFlight<K, V> {
    inflight: Mutex<HashMap<K, Flight<V>>>,
}

struct Flight<V> {
    id: u64,
    rx: watch::Receiver<Option<V>>,
    /// Callers waiting on this flight.
    followers: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl<K, V> Default for SingleFlight<K, V>
where
    K: Eq + Hash,
{
    fn default() -> Self {
        Self {
            inflight: Mutex::new(HashMap::new()),
        }
    }
}

impl<K, V> std::fmt::Debug for SingleFlight<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SingleFlight")
            .field("in_flight", &self.inflight.lock().len())
            .finish()
    }
}

/// Removes the leader's entry when the leader finishes or is dropped.
struct LeaderGuard<'a, K: Eq + Hash, V> {
    map: &'a Mutex<HashMap<K, Flight<V>>>,
    key: Option<K>,
    id: u64,
}

impl<K: Eq + Hash, V> Drop for LeaderGuard<'_, K, V> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let mut map = self.map.lock();
            if map.get(&key).is_some_and(|f| f.id == self.id) {
                map.remove(&key);
            }
        }
    }
}

static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl<K, V> SingleFlight<K, V>
where
    K: Eq + Hash + Clone,
    V: Clone,
{
    /// An empty group.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keys with a computation in flight.
    pub fn in_flight(&self) -> usize {
        self.inflight.lock().len()
    }

    /// Callers waiting on another's computation now (tests observe this instead of sleeping).
    pub fn followers(&self) -> usize {
        self.inflight
            .lock()
            .values()
            .map(|f| f.followers.load(std::sync::atomic::Ordering::SeqCst))
            .sum()
    }

    /// Runs `f` unless a computation for `key` is already running, in which case waits
    /// for its result. Put errors inside `V` (for example `Result<T, Arc<E>>`) to share
    /// them too.
    pub async fn run<F, Fut>(&self, key: K, f: F) -> (V, Role)
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = V>,
    {
        let (id, tx) = loop {
            let joined = {
                let mut map = self.inflight.lock();
                match map.get(&key) {
                    Some(flight) => {
                        let count = std::sync::Arc::clone(&flight.followers);
                        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        Err((flight.rx.clone(), count))
                    }
                    None => {
                        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let (tx, rx) = watch::channel(None);
                        let followers = Default::default();
                        map.insert(key.clone(), Flight { id, rx, followers });
                        Ok((id, tx))
                    }
                }
            };
            match joined {
                Ok(lead) => break lead,
                Err((mut rx, count)) => {
                    let waited = rx.wait_for(Option::is_some).await.map(|v| v.clone());
                    count.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    if let Ok(Some(v)) = waited {
                        return (v, Role::Follower);
                    }
                    // The leader was cancelled before finishing: try to lead.
                }
            }
        };
        let guard = LeaderGuard {
            map: &self.inflight,
            key: Some(key),
            id,
        };
        let v = f().await;
        // Remove the entry first: a caller arriving now starts a fresh flight.
        drop(guard);
        tx.send_replace(Some(v.clone()));
        (v, Role::Leader)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::sync::Notify;

    #[tokio::test]
    async fn concurrent_identical_keys_share_one_computation() {
        let sf = Arc::new(SingleFlight::<String, u32>::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(Notify::new());
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (sf, runs, gate) = (Arc::clone(&sf), Arc::clone(&runs), Arc::clone(&gate));
            tasks.push(tokio::spawn(async move {
                sf.run("k".to_string(), || async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    gate.notified().await;
                    42
                })
                .await
            }));
        }
        while runs.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        gate.notify_one();
        let mut leaders = 0;
        for t in tasks {
            let (v, role) = t.await.expect("task");
            assert_eq!(v, 42);
            leaders += usize::from(role == Role::Leader);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(leaders, 1);
        assert_eq!(sf.in_flight(), 0, "no entry outlives the computation");
    }

    #[tokio::test]
    async fn errors_are_shared_and_different_keys_run_apart() {
        let sf = SingleFlight::<u8, Result<u8, Arc<String>>>::new();
        let (a, _) = sf
            .run(1, || async { Err(Arc::new("boom".to_string())) })
            .await;
        assert!(a.is_err());
        let (b, role) = sf.run(2, || async { Ok(2) }).await;
        assert_eq!((b, role), (Ok(2), Role::Leader));
    }

    #[tokio::test]
    async fn a_cancelled_leader_does_not_strand_followers() {
        let sf = Arc::new(SingleFlight::<u8, u8>::new());
        let leader = {
            let sf = Arc::clone(&sf);
            tokio::spawn(async move { sf.run(1, std::future::pending::<u8>).await })
        };
        while sf.in_flight() == 0 {
            tokio::task::yield_now().await;
        }
        let follower = {
            let sf = Arc::clone(&sf);
            tokio::spawn(async move { sf.run(1, || async { 9 }).await })
        };
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        leader.abort();
        let (v, role) = tokio::time::timeout(std::time::Duration::from_secs(5), follower)
            .await
            .expect("follower finished")
            .expect("task");
        assert_eq!((v, role), (9, Role::Leader));
        assert_eq!(sf.in_flight(), 0);
    }
}
