//! The guard's errors: what [`Guard::call`](super::Guard::call) returns when it refuses or
//! gives up, and the validation error of every guard configuration.
//!
//! `GuardError` carries no HTTP types: the server maps each variant to one status and error
//! code (DESIGN §5) in one place. No variant carries request text, entity text or a model
//! name; the caller's own error `E` is carried as is and its message is not repeated here.

use std::time::Duration;

use thiserror::Error;

use super::admission::Shed;
use super::breaker::BreakerState;
use super::rate::{RateLimited, Scope};

/// Why a guarded call did not return a value.
#[derive(Debug, Error)]
pub enum GuardError<E> {
    /// Returned when a token bucket (per token or global) is empty.
    #[error("rate limit exceeded")]
    RateLimited {
        /// Time until the bucket has a token again.
        retry_after: Duration,
        /// The bucket that refused.
        scope: Scope,
    },
    /// Returned when the admission queue sheds the request (over a watermark or waited
    /// longer than `max_queue_wait`).
    #[error("admission queue shed the request")]
    Shed(#[from] Shed),
    /// Returned when the per-key bulkhead stayed full for its whole wait.
    #[error("service busy")]
    Busy {
        /// When the caller may try again.
        retry_after: Duration,
    },
    /// Returned when the key's circuit breaker does not permit the call (open, forced open,
    /// or half-open with its probes already in flight).
    #[error("circuit breaker is {state}")]
    BreakerOpen {
        /// The breaker state that refused the call.
        state: BreakerState,
        /// Whole seconds until the caller may try again, at least 1.
        retry_after_seconds: u64,
    },
    /// Returned when the request deadline passed before a result arrived.
    #[error("request timed out")]
    Timeout {
        /// The request's configured timeout.
        timeout: Duration,
    },
    /// Returned with the last error after the retries ended, or at once with a client
    /// (non-retryable) error.
    #[error("backend call failed")]
    Failed(#[source] E),
}

impl<E> From<RateLimited> for GuardError<E> {
    fn from(e: RateLimited) -> Self {
        GuardError::RateLimited {
            retry_after: e.retry_after,
            scope: e.scope,
        }
    }
}

/// A configuration value broke its rule. The message names the field and the rule.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid guard setting {field}: {rule}")]
pub struct GuardConfigError {
    /// The field name, as in the config struct (`retry.max_attempts`).
    pub field: &'static str,
    /// The rule the value broke (`must be at least 1`).
    pub rule: &'static str,
}

/// Shorthand for validation results.
pub type ConfigResult = std::result::Result<(), GuardConfigError>;

/// Returns `Err` naming `field` and `rule` unless `ok`.
pub(crate) fn ensure(ok: bool, field: &'static str, rule: &'static str) -> ConfigResult {
    if ok {
        Ok(())
    } else {
        Err(GuardConfigError { field, rule })
    }
}

/// Checks that a float is finite and at least `min`.
pub(crate) fn ensure_at_least(
    v: f64,
    min: f64,
    field: &'static str,
    rule: &'static str,
) -> ConfigResult {
    ensure(v.is_finite() && v >= min, field, rule)
}

/// Rounds a wait up to whole seconds, at least one (the `Retry-After` rule).
pub(crate) fn ceil_secs_min1(d: Duration) -> u64 {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_secs_rounds_up_and_floors_at_one() {
        assert_eq!(ceil_secs_min1(Duration::ZERO), 1);
        assert_eq!(ceil_secs_min1(Duration::from_millis(1)), 1);
        assert_eq!(ceil_secs_min1(Duration::from_secs(1)), 1);
        assert_eq!(ceil_secs_min1(Duration::from_millis(28_001)), 29);
        assert_eq!(ceil_secs_min1(Duration::from_secs(29)), 29);
    }

    #[test]
    fn refusals_convert_into_guard_errors() {
        let e: GuardError<()> = RateLimited {
            retry_after: Duration::from_millis(923),
            scope: Scope::Global,
        }
        .into();
        assert!(matches!(
            e,
            GuardError::RateLimited { scope: Scope::Global, retry_after } if retry_after == Duration::from_millis(923)
        ));
        assert_eq!(e.to_string(), "rate limit exceeded");
    }

    #[test]
    fn config_error_names_field_and_rule() {
        let e = ensure(false, "retry.max_attempts", "must be at least 1").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid guard setting retry.max_attempts: must be at least 1"
        );
        assert!(ensure_at_least(f64::NAN, 1.0, "x", "y").is_err());
        assert!(ensure_at_least(1.0, 1.0, "x", "y").is_ok());
    }
}
