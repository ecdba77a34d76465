//! Errors of the cluster-wide admission limit: the rejection a caller maps to
//! `429 rate_limited`, and the one error enum for configuration and Redis failures.
//!
//! Neither carries request data: a rejection holds only a duration, and a Redis failure
//! is reduced to a static class name before it reaches a log line.

use std::time::Duration;

/// Result alias of the `cluster` module.
pub type Result<T> = std::result::Result<T, ClusterError>;

/// Returned by [`ClusterLimiter::try_admit`](super::ClusterLimiter::try_admit) when the
/// cluster-wide (or, in fallback, the local) window is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cluster admission limit reached")]
pub struct ClusterRejected {
    /// How long until the oldest admission leaves the window (never zero).
    pub retry_after: Duration,
}

impl ClusterRejected {
    /// `retry_after` in whole seconds, rounded up and at least 1: the value of the
    /// `Retry-After` header (`docs/errors.md`).
    pub fn retry_after_secs(&self) -> u64 {
        let secs = self.retry_after.as_secs();
        let secs = if self.retry_after.subsec_nanos() > 0 {
            secs.saturating_add(1)
        } else {
            secs
        };
        secs.max(1)
    }
}

/// Everything else that can go wrong in this module.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// Returned when a [`ClusterConfig`](super::ClusterConfig) field breaks its rule.
    #[error("invalid cluster setting {field}: {rule}")]
    InvalidConfig {
        /// The field of `ClusterConfig` (the settings table maps it to its variable).
        field: &'static str,
        /// The rule the value breaks.
        rule: &'static str,
    },
    /// Returned when Redis did not answer within the connect or command timeout.
    #[error("redis did not answer in time")]
    Timeout,
    /// Returned when Redis refused, dropped or failed a call; `class` is a static
    /// description of the failure (never the server's message).
    #[error("redis call failed ({class})")]
    Redis {
        /// `connection_refused`, `connection_dropped`, `io`, `auth`, `server` or `client`.
        class: &'static str,
    },
    /// Returned when the limiter has no usable Redis client (the URL did not parse).
    #[error("no redis client configured")]
    NoClient,
}

impl ClusterError {
    /// The static class of a failure, safe for a log field or a metric label.
    pub(crate) fn class(&self) -> &'static str {
        match self {
            Self::InvalidConfig { .. } => "config",
            Self::Timeout => "timeout",
            Self::Redis { class } => class,
            Self::NoClient => "no_client",
        }
    }
}

impl From<redis::RedisError> for ClusterError {
    fn from(e: redis::RedisError) -> Self {
        if e.is_timeout() {
            return Self::Timeout;
        }
        let class = if e.is_connection_refusal() {
            "connection_refused"
        } else if e.is_connection_dropped() {
            "connection_dropped"
        } else if e.is_io_error() {
            "io"
        } else {
            match e.kind() {
                redis::ErrorKind::AuthenticationFailed => "auth",
                redis::ErrorKind::Server(_) | redis::ErrorKind::Extension => "server",
                _ => "client",
            }
        };
        Self::Redis { class }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! retry_secs {
        ($($name:ident: $dur:expr => $secs:expr,)*) => {$(
            #[test]
            fn $name() {
                let r = ClusterRejected { retry_after: $dur };
                assert_eq!(r.retry_after_secs(), $secs);
            }
        )*};
    }

    retry_secs! {
        zero_rounds_to_one: Duration::ZERO => 1,
        one_micro_rounds_to_one: Duration::from_micros(1) => 1,
        exact_second: Duration::from_secs(1) => 1,
        just_over_rounds_up: Duration::from_millis(1001) => 2,
        whole_seconds_kept: Duration::from_secs(7) => 7,
    }

    #[test]
    fn messages_are_lowercase_without_period() {
        let msgs = [
            ClusterRejected {
                retry_after: Duration::ZERO,
            }
            .to_string(),
            ClusterError::Timeout.to_string(),
            ClusterError::NoClient.to_string(),
            ClusterError::Redis { class: "io" }.to_string(),
            ClusterError::InvalidConfig {
                field: "admissions",
                rule: "must be at least 1",
            }
            .to_string(),
        ];
        for m in msgs {
            assert!(!m.ends_with('.'), "{m}");
            assert_eq!(
                m.chars().next().map(|c| c.is_lowercase()),
                Some(true),
                "{m}"
            );
        }
    }
}
