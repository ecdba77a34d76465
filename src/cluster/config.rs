//! The configuration of the cluster-wide admission limit: Redis address, key prefix,
//! the shared budget (`admissions` per `window`), the expected replica count that sizes
//! the local fallback share, and the tight timeouts that keep Redis off the critical path.
//!
//! The settings table maps these fields to `PHIGUARD_REDIS_URL`,
//! `PHIGUARD_REDIS_KEY_PREFIX`, `PHIGUARD_CLUSTER_ADMISSIONS`,
//! `PHIGUARD_CLUSTER_WINDOW_SECONDS` and `PHIGUARD_CLUSTER_REPLICAS`; [`ClusterConfig::validate`]
//! is the rule it applies at start-up. `Debug` redacts the password in the URL.

use std::fmt;
use std::time::Duration;

use super::error::{ClusterError, Result};

/// Longest accepted key prefix; keys stay short and predictable.
const MAX_KEY_PREFIX_LEN: usize = 64;
/// Longest accepted window: a sliding log holds one member per admission in the window.
const MAX_WINDOW: Duration = Duration::from_secs(3600);
/// Longest accepted connect or command timeout: anything longer is no longer "tight".
const MAX_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings of [`ClusterLimiter`](super::ClusterLimiter).
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// `redis://[user:password@]host:port[/db]` or `redis+unix:///path`.
    pub redis_url: String,
    /// Prefix of the one sorted-set key (`<prefix>:cluster:admissions`).
    pub key_prefix: String,
    /// At most this many admissions in any `window`, across all replicas.
    pub admissions: u32,
    /// The sliding window (default 1 s).
    pub window: Duration,
    /// Expected replica count: in fallback a replica admits `admissions / replicas`
    /// (at least 1) per window on its own.
    pub replicas: u32,
    /// Bound on establishing a Redis connection.
    pub connect_timeout: Duration,
    /// Bound on one admission script call; a slower answer counts as a Redis failure.
    pub command_timeout: Duration,
    /// First wait before probing Redis again after a failure.
    pub probe_backoff_min: Duration,
    /// The probe back-off doubles per failed probe up to this.
    pub probe_backoff_max: Duration,
}

impl ClusterConfig {
    /// Default key prefix.
    pub const DEFAULT_KEY_PREFIX: &'static str = "phiguard";
    /// Default window.
    pub const DEFAULT_WINDOW: Duration = Duration::from_secs(1);
    /// Default connect timeout.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_millis(250);
    /// Default command timeout.
    pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_millis(100);
    /// Default first probe back-off.
    pub const DEFAULT_PROBE_BACKOFF_MIN: Duration = Duration::from_millis(250);
    /// Default longest probe back-off.
    pub const DEFAULT_PROBE_BACKOFF_MAX: Duration = Duration::from_secs(5);

    /// A config with the given URL and budget and every other field at its default.
    pub fn new(redis_url: impl Into<String>, admissions: u32) -> Self {
        Self {
            redis_url: redis_url.into(),
            key_prefix: Self::DEFAULT_KEY_PREFIX.to_owned(),
            admissions,
            window: Self::DEFAULT_WINDOW,
            replicas: 1,
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            command_timeout: Self::DEFAULT_COMMAND_TIMEOUT,
            probe_backoff_min: Self::DEFAULT_PROBE_BACKOFF_MIN,
            probe_backoff_max: Self::DEFAULT_PROBE_BACKOFF_MAX,
        }
    }

    /// Checks every field against its rule.
    ///
    /// # Errors
    ///
    /// [`ClusterError::InvalidConfig`] naming the first field that breaks its rule. The
    /// URL itself is never part of the message (it may hold a password).
    pub fn validate(&self) -> Result<()> {
        let bad = |field, rule| Err(ClusterError::InvalidConfig { field, rule });
        if redis::Client::open(self.redis_url.as_str()).is_err() {
            return bad(
                "redis_url",
                "must be a redis://, rediss:// (TLS) or redis+unix:// url",
            );
        }
        if self.key_prefix.is_empty()
            || self.key_prefix.len() > MAX_KEY_PREFIX_LEN
            || !self.key_prefix.chars().all(|c| c.is_ascii_graphic())
        {
            return bad(
                "key_prefix",
                "must be 1 to 64 visible ascii characters without spaces",
            );
        }
        if self.admissions == 0 {
            return bad("admissions", "must be at least 1");
        }
        if self.window < Duration::from_millis(1) || self.window > MAX_WINDOW {
            return bad("window", "must be between 1 ms and 3600 s");
        }
        if self.replicas == 0 {
            return bad("replicas", "must be at least 1");
        }
        if !in_timeout_range(self.connect_timeout) {
            return bad("connect_timeout", "must be between 1 ms and 10 s");
        }
        if !in_timeout_range(self.command_timeout) {
            return bad("command_timeout", "must be between 1 ms and 10 s");
        }
        if self.probe_backoff_min < Duration::from_millis(1) {
            return bad("probe_backoff_min", "must be at least 1 ms");
        }
        if self.probe_backoff_max < self.probe_backoff_min {
            return bad(
                "probe_backoff_max",
                "must not be less than probe_backoff_min",
            );
        }
        Ok(())
    }

    /// The per-process share used in fallback: `admissions / replicas`, at least 1.
    pub fn local_share(&self) -> u32 {
        (self.admissions / self.replicas.max(1)).max(1)
    }

    /// The Redis key of the sorted set (timestamps and token ids only).
    pub fn key(&self) -> String {
        format!("{}:cluster:admissions", self.key_prefix)
    }

    /// A copy with every numeric field clamped into its valid range, so that a limiter
    /// built from an unvalidated config still never admits without bound.
    pub(crate) fn clamped(&self) -> Self {
        let clamp_timeout = |d: Duration| d.clamp(Duration::from_millis(1), MAX_TIMEOUT);
        let probe_backoff_min = self.probe_backoff_min.max(Duration::from_millis(1));
        Self {
            redis_url: self.redis_url.clone(),
            key_prefix: if self.key_prefix.is_empty() {
                Self::DEFAULT_KEY_PREFIX.to_owned()
            } else {
                self.key_prefix.clone()
            },
            admissions: self.admissions.max(1),
            window: self.window.clamp(Duration::from_millis(1), MAX_WINDOW),
            replicas: self.replicas.max(1),
            connect_timeout: clamp_timeout(self.connect_timeout),
            command_timeout: clamp_timeout(self.command_timeout),
            probe_backoff_min,
            probe_backoff_max: self.probe_backoff_max.max(probe_backoff_min),
        }
    }
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self::new("redis://127.0.0.1:6379", 100)
    }
}

impl fmt::Debug for ClusterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterConfig")
            .field("redis_url", &redact_url(&self.redis_url))
            .field("key_prefix", &self.key_prefix)
            .field("admissions", &self.admissions)
            .field("window", &self.window)
            .field("replicas", &self.replicas)
            .field("connect_timeout", &self.connect_timeout)
            .field("command_timeout", &self.command_timeout)
            .field("probe_backoff_min", &self.probe_backoff_min)
            .field("probe_backoff_max", &self.probe_backoff_max)
            .finish()
    }
}

fn in_timeout_range(d: Duration) -> bool {
    d >= Duration::from_millis(1) && d <= MAX_TIMEOUT
}

/// The URL with any `user:password@` part replaced by `***@`.
pub(crate) fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}***{}", &url[..scheme_end], &rest[at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn base() -> ClusterConfig {
        ClusterConfig::new("redis://127.0.0.1:6379", 10)
    }

    macro_rules! invalid {
        ($($name:ident: |$c:ident| $edit:expr => $field:expr,)*) => {$(
            #[test]
            fn $name() {
                let mut $c = base();
                $edit;
                match $c.validate() {
                    Err(ClusterError::InvalidConfig { field, .. }) => assert_eq!(field, $field),
                    other => panic!("expected invalid {}, got {other:?}", $field),
                }
            }
        )*};
    }

    invalid! {
        bad_scheme: |c| c.redis_url = "http://localhost".into() => "redis_url",
        garbage_url: |c| c.redis_url = "not a url".into() => "redis_url",
        empty_prefix: |c| c.key_prefix.clear() => "key_prefix",
        prefix_with_space: |c| c.key_prefix = "a b".into() => "key_prefix",
        zero_admissions: |c| c.admissions = 0 => "admissions",
        zero_window: |c| c.window = Duration::ZERO => "window",
        huge_window: |c| c.window = Duration::from_secs(7200) => "window",
        zero_replicas: |c| c.replicas = 0 => "replicas",
        zero_connect: |c| c.connect_timeout = Duration::ZERO => "connect_timeout",
        slow_command: |c| c.command_timeout = Duration::from_secs(60) => "command_timeout",
        inverted_backoff: |c| c.probe_backoff_max = Duration::from_millis(1) => "probe_backoff_max",
    }

    #[test]
    fn defaults_are_valid() -> Result<()> {
        base().validate()?;
        ClusterConfig::default().validate()?;
        ClusterConfig::new("redis://:secret@redis.internal:6380/2", 1).validate()
    }

    #[test]
    fn error_never_contains_the_url() {
        let mut c = base();
        c.redis_url = "http://user:hunter2@host".into();
        let msg = c
            .validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(msg.contains("redis_url"));
        assert!(!msg.contains("hunter2"));
    }

    #[test]
    fn debug_redacts_password() {
        let c = ClusterConfig::new("redis://user:hunter2@redis:6379/0", 5);
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("hunter2"), "{dbg}");
        assert!(dbg.contains("redis://***@redis:6379/0"), "{dbg}");
    }

    #[test]
    fn redact_leaves_urls_without_userinfo() {
        assert_eq!(redact_url("redis://h:1/0"), "redis://h:1/0");
        assert_eq!(redact_url("redis://:p@h"), "redis://***@h");
        assert_eq!(redact_url("nothing"), "nothing");
    }

    #[test]
    fn local_share_divides_and_never_reaches_zero() {
        let mut c = base();
        c.admissions = 10;
        c.replicas = 3;
        assert_eq!(c.local_share(), 3);
        c.replicas = 20;
        assert_eq!(c.local_share(), 1);
        c.replicas = 0;
        assert_eq!(c.local_share(), 10);
    }

    proptest! {
        #[test]
        fn clamped_is_always_valid_apart_from_url(
            admissions in any::<u32>(), replicas in any::<u32>(),
            window_ms in any::<u32>(), connect_ms in any::<u32>(), command_ms in any::<u32>(),
            bmin in any::<u32>(), bmax in any::<u32>(),
        ) {
            let c = ClusterConfig {
                admissions,
                replicas,
                window: Duration::from_millis(window_ms.into()),
                connect_timeout: Duration::from_millis(connect_ms.into()),
                command_timeout: Duration::from_millis(command_ms.into()),
                probe_backoff_min: Duration::from_millis(bmin.into()),
                probe_backoff_max: Duration::from_millis(bmax.into()),
                ..base()
            };
            prop_assert_eq!(c.clamped().validate(), Ok(()));
        }

        #[test]
        fn redact_never_panics_and_hides_userinfo(user in "[a-z]{0,8}", pass in "[a-z0-9]{1,12}") {
            let url = format!("redis://{user}:{pass}@host:6379/0");
            let secret = format!(":{pass}@");
            prop_assert!(!redact_url(&url).contains(&secret));
        }
    }
}
