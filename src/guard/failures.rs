//! The failed-authentication limit: one token bucket of failures per peer address, on the
//! injected clock.
//!
//! # Why per peer, and why a bucket of failures
//!
//! A token is 32 random bytes, so guessing one is hopeless; what a flood of wrong tokens
//! costs is work (a digest and a comparison per candidate) and log noise, and what it may
//! hide is a script with a leaked prefix or an old token hammering the service. Counting
//! failures per peer address stops one peer without touching the others, and a bucket
//! (`burst` failures at once, refilled at `per_minute`) forgives a typo or a rotation race
//! while holding a guessing peer to a trickle. While a peer's bucket is empty the server
//! answers every authenticated request from it with 429 *before* comparing the token, so a
//! correct token found late still gets nothing until the bucket refills.
//!
//! Successful authentications are not counted and do not refill the bucket: a peer that
//! mixes a good token with guesses gains nothing from the good one.
//!
//! # Bounded peers
//!
//! At most `max_peers` buckets are held. When a new peer would exceed that, buckets that
//! have refilled to full are dropped first (a full bucket is the same as none); if every
//! bucket is still draining, the one seen longest ago goes. IPv6 peers are counted per /64,
//! the block one host usually owns, so walking a prefix buys no fresh buckets.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::clock::Clock;
use super::rate::Bucket;

/// The failed-authentication limit; inactive unless `burst` and `per_minute` are above 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailureConfig {
    /// Failures a peer may make at once.
    pub burst: u32,
    /// Failures forgiven per minute (the bucket's refill rate).
    pub per_minute: f64,
    /// Most peers tracked at once, at least 1.
    pub max_peers: usize,
}

impl Default for FailureConfig {
    fn default() -> Self {
        FailureConfig {
            burst: 10,
            per_minute: 10.0,
            max_peers: 4096,
        }
    }
}

impl FailureConfig {
    fn active(&self) -> bool {
        self.burst > 0 && self.per_minute > 0.0 && self.per_minute.is_finite()
    }

    fn rps(&self) -> f64 {
        self.per_minute / 60.0
    }
}

/// Per-peer buckets of failed authentications.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use phiguard::guard::{FailureConfig, FailureLimiter, ManualClock};
///
/// let clock = ManualClock::new();
/// let limit = FailureLimiter::new(Arc::new(clock.clone()));
/// let cfg = FailureConfig { burst: 2, per_minute: 6.0, max_peers: 10 };
/// let peer = "192.0.2.7".parse().unwrap();
/// assert!(limit.check(peer, &cfg).is_ok());
/// limit.record_failure(peer, &cfg);
/// limit.record_failure(peer, &cfg);
/// assert_eq!(limit.check(peer, &cfg), Err(Duration::from_secs(10)));
/// clock.advance(Duration::from_secs(10));
/// assert!(limit.check(peer, &cfg).is_ok());
/// ```
pub struct FailureLimiter {
    clock: Arc<dyn Clock>,
    peers: Mutex<HashMap<IpAddr, Bucket>>,
}

impl std::fmt::Debug for FailureLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailureLimiter")
            .field("peers", &self.peers.lock().len())
            .finish()
    }
}

/// The key a peer is counted under: its address, or its /64 for IPv6 (an IPv4-mapped
/// address counts as the IPv4 one).
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl FailureLimiter {
    /// No peer tracked yet.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        FailureLimiter {
            clock,
            peers: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `peer` may still present a token: `Err(retry_after)` while its failures are
    /// spent. Takes nothing from the bucket.
    ///
    /// # Errors
    /// The time until the peer's bucket holds one failure again.
    pub fn check(&self, peer: IpAddr, cfg: &FailureConfig) -> Result<(), Duration> {
        if !cfg.active() {
            return Ok(());
        }
        let mut peers = self.peers.lock();
        let Some(b) = peers.get_mut(&peer_key(peer)) else {
            // A peer that never failed (nearly every request): no clock read.
            return Ok(());
        };
        b.refill(cfg.rps(), cfg.burst, self.clock.now());
        match b.wait(cfg.rps()) {
            d if d.is_zero() => Ok(()),
            d => Err(d),
        }
    }

    /// Counts one failed authentication of `peer`. Returns true when this failure spent the
    /// peer's last one (its next requests are refused), for a log line without the address.
    pub fn record_failure(&self, peer: IpAddr, cfg: &FailureConfig) -> bool {
        if !cfg.active() {
            return false;
        }
        let now = self.clock.now();
        let key = peer_key(peer);
        let mut peers = self.peers.lock();
        if !peers.contains_key(&key) {
            make_room(&mut peers, cfg, now);
            peers.insert(key, Bucket::full(cfg.burst, now));
        }
        let Some(b) = peers.get_mut(&key) else {
            return false;
        };
        b.refill(cfg.rps(), cfg.burst, now);
        let before = b.tokens;
        b.tokens = (b.tokens - 1.0).max(0.0);
        before >= 1.0 && b.tokens < 1.0
    }

    /// Peers tracked now.
    pub fn tracked_peers(&self) -> usize {
        self.peers.lock().len()
    }
}

/// Frees one slot when the map is full: refilled buckets first, else the one seen longest ago.
fn make_room(peers: &mut HashMap<IpAddr, Bucket>, cfg: &FailureConfig, now: Instant) {
    let cap = cfg.max_peers.max(1);
    if peers.len() < cap {
        return;
    }
    peers.retain(|_, b| {
        let mut b = *b;
        b.refill(cfg.rps(), cfg.burst, now);
        b.tokens < f64::from(cfg.burst)
    });
    while peers.len() >= cap {
        let oldest = peers.iter().min_by_key(|(_, b)| b.last).map(|(k, _)| *k);
        match oldest {
            Some(k) => peers.remove(&k),
            None => break,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::clock::ManualClock;

    const CFG: FailureConfig = FailureConfig {
        burst: 10,
        per_minute: 10.0,
        max_peers: 100,
    };

    fn limiter() -> (ManualClock, FailureLimiter) {
        let clock = ManualClock::new();
        let l = FailureLimiter::new(Arc::new(clock.clone()));
        (clock, l)
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("address")
    }

    #[test]
    fn ten_failures_then_refused_until_one_refills() {
        let (clock, l) = limiter();
        let a = ip("127.0.0.1");
        for i in 0..10 {
            assert!(l.check(a, &CFG).is_ok(), "failure {i} still allowed");
            assert_eq!(
                l.record_failure(a, &CFG),
                i == 9,
                "the tenth spends the last"
            );
        }
        assert_eq!(l.check(a, &CFG), Err(Duration::from_secs(6)));
        clock.advance(Duration::from_secs(4));
        assert_eq!(l.check(a, &CFG), Err(Duration::from_secs(2)));
        // Another peer is not affected.
        assert!(l.check(ip("127.0.0.2"), &CFG).is_ok());
        clock.advance(Duration::from_secs(2));
        assert!(l.check(a, &CFG).is_ok(), "one failure refilled after 6 s");
        l.record_failure(a, &CFG);
        assert!(l.check(a, &CFG).is_err());
        // A long pause refills the whole burst, never more.
        clock.advance(Duration::from_secs(3600));
        for _ in 0..10 {
            assert!(l.check(a, &CFG).is_ok());
            l.record_failure(a, &CFG);
        }
        assert!(l.check(a, &CFG).is_err());
    }

    #[test]
    fn inactive_when_burst_or_rate_is_zero() {
        let (_clock, l) = limiter();
        for cfg in [
            FailureConfig { burst: 0, ..CFG },
            FailureConfig {
                per_minute: 0.0,
                ..CFG
            },
        ] {
            for _ in 0..100 {
                l.record_failure(ip("10.0.0.1"), &cfg);
            }
            assert!(l.check(ip("10.0.0.1"), &cfg).is_ok());
        }
        assert_eq!(l.tracked_peers(), 0);
    }

    #[test]
    fn ipv6_peers_count_per_64_and_mapped_v4_as_v4() {
        let (_clock, l) = limiter();
        for i in 0..10 {
            l.record_failure(ip(&format!("2001:db8:1:2::{i:x}")), &CFG);
        }
        assert!(l.check(ip("2001:db8:1:2:ffff::1"), &CFG).is_err());
        assert!(l.check(ip("2001:db8:1:3::1"), &CFG).is_ok());
        for _ in 0..10 {
            l.record_failure(ip("::ffff:192.0.2.1"), &CFG);
        }
        assert!(l.check(ip("192.0.2.1"), &CFG).is_err());
    }

    #[test]
    fn a_peer_flood_stays_bounded_and_evicts_the_oldest() {
        let (clock, l) = limiter();
        let cfg = FailureConfig {
            max_peers: 50,
            ..CFG
        };
        for i in 0..5000u32 {
            l.record_failure(IpAddr::V4(i.into()), &cfg);
            clock.advance(Duration::from_millis(1));
        }
        assert!(l.tracked_peers() <= 50);
        // The newest peers are the ones kept.
        let newest = IpAddr::V4(4999u32.into());
        for _ in 0..9 {
            l.record_failure(newest, &cfg);
        }
        assert!(l.check(newest, &cfg).is_err());
    }
}
