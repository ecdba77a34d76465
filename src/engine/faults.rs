//! Fault injection at the backend boundary (DESIGN §4.3), for tests of the guard.
//!
//! Only the `fault-injection` cargo feature makes faults settable (`PHIGUARD_FAULTS`,
//! `PUT /admin/faults`); without it [`Faults`] is always empty and `PHIGUARD_FAULTS` is
//! ignored with a warning. Syntax: comma-separated `target=mode`, target `load` or `infer`,
//! mode `ok`, `fail`, `fail:N`, `flaky:P`, `delay:MS`, `panic:N`.

use std::collections::BTreeMap;

use parking_lot::Mutex;
use rand::Rng;

use crate::detect::{BackendError, RecognizerError};

/// Why a fault spec (`PHIGUARD_FAULTS`, `PUT /admin/faults`) was refused. The messages give
/// the accepted syntax and never echo the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultSpecError {
    /// Returned when a part of the spec is not a `target=mode` pair.
    #[error("faults must be target=mode pairs")]
    NotAPair,
    /// Returned when a target is neither `load` nor `infer`.
    #[error("fault target must be load or infer")]
    UnknownTarget,
    /// Returned when a mode's argument is missing, negative or not a number.
    #[error("fault mode needs a non-negative number")]
    BadNumber,
    /// Returned when a mode is none of the known ones.
    #[error("fault mode must be ok, fail, fail:N, flaky:P, delay:MS or panic:N")]
    UnknownMode,
}

/// One target's fault mode.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultMode {
    /// No fault.
    Ok,
    /// Every call fails with an infrastructure error.
    Fail,
    /// The next N calls fail.
    FailN(u64),
    /// Each call fails with probability P percent.
    Flaky(f64),
    /// Each call is delayed by this many milliseconds.
    Delay(u64),
    /// The next N calls panic.
    PanicN(u64),
}

impl FaultMode {
    /// Parses `ok`, `fail`, `fail:N`, `flaky:P`, `delay:MS`, `panic:N`.
    ///
    /// # Errors
    /// [`FaultSpecError::BadNumber`] or [`FaultSpecError::UnknownMode`].
    pub fn parse(s: &str) -> Result<Self, FaultSpecError> {
        let s = s.trim().to_ascii_lowercase();
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s.as_str(), None),
        };
        let num = |a: Option<&str>| -> Result<f64, FaultSpecError> {
            a.and_then(|a| a.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or(FaultSpecError::BadNumber)
        };
        Ok(match (name, arg) {
            ("ok", None) => FaultMode::Ok,
            ("fail", None) => FaultMode::Fail,
            ("fail", a) => FaultMode::FailN(num(a)? as u64),
            ("flaky", a) => FaultMode::Flaky(num(a)?.min(100.0)),
            ("delay", a) => FaultMode::Delay(num(a)? as u64),
            ("panic", a) => FaultMode::PanicN(num(a)? as u64),
            _ => return Err(FaultSpecError::UnknownMode),
        })
    }

    /// The textual form.
    pub fn render(&self) -> String {
        match self {
            FaultMode::Ok => "ok".into(),
            FaultMode::Fail => "fail".into(),
            FaultMode::FailN(n) => format!("fail:{n}"),
            FaultMode::Flaky(p) => format!("flaky:{p}"),
            FaultMode::Delay(ms) => format!("delay:{ms}"),
            FaultMode::PanicN(n) => format!("panic:{n}"),
        }
    }
}

/// The current faults for `load` and `infer`.
#[derive(Debug, Default)]
pub struct Faults {
    modes: Mutex<BTreeMap<&'static str, FaultMode>>,
}

/// Fault targets.
pub const TARGETS: [&str; 2] = ["load", "infer"];

impl Faults {
    /// True when this build can inject faults.
    pub const ENABLED: bool = cfg!(feature = "fault-injection");

    /// Parses `target=mode,…` and replaces the current faults.
    ///
    /// # Errors
    /// The first bad part's [`FaultSpecError`] (never echoing the input).
    pub fn set_spec(&self, spec: &str) -> Result<(), FaultSpecError> {
        let mut next = BTreeMap::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (target, mode) = part.split_once('=').ok_or(FaultSpecError::NotAPair)?;
            let target = TARGETS
                .iter()
                .find(|t| **t == target.trim())
                .ok_or(FaultSpecError::UnknownTarget)?;
            next.insert(*target, FaultMode::parse(mode)?);
        }
        self.set(next);
        Ok(())
    }

    /// Replaces the faults (only in fault-injection builds; a no-op otherwise).
    pub fn set(&self, modes: BTreeMap<&'static str, FaultMode>) {
        if Self::ENABLED {
            *self.modes.lock() = modes;
        }
    }

    /// Current faults, rendered, for `GET /admin/faults`.
    pub fn snapshot(&self) -> BTreeMap<String, String> {
        let modes = self.modes.lock();
        TARGETS
            .iter()
            .map(|t| {
                (
                    t.to_string(),
                    modes
                        .get(t)
                        .map(FaultMode::render)
                        .unwrap_or_else(|| "ok".into()),
                )
            })
            .collect()
    }

    /// Called before each model call; may fail, delay or panic.
    ///
    /// # Errors
    /// An injected backend failure.
    ///
    /// # Panics
    /// With `panic:N`, the next N calls panic (that is the point: the pool must survive it).
    pub fn before_infer(&self) -> Result<(), RecognizerError> {
        self.apply("infer")
    }

    /// Called before each model load.
    ///
    /// # Errors
    /// An injected load failure.
    pub fn before_load(&self) -> Result<(), RecognizerError> {
        self.apply("load")
    }

    fn apply(&self, target: &'static str) -> Result<(), RecognizerError> {
        if !Self::ENABLED {
            return Ok(());
        }
        let mode = {
            let mut modes = self.modes.lock();
            let Some(mode) = modes.get_mut(target) else {
                return Ok(());
            };
            let current = mode.clone();
            match mode {
                FaultMode::FailN(n) | FaultMode::PanicN(n) => {
                    if *n == 0 {
                        return Ok(());
                    }
                    *n -= 1;
                }
                _ => {}
            }
            current
        };
        let injected = || Err(RecognizerError::Backend(BackendError::Injected));
        match mode {
            FaultMode::Ok => Ok(()),
            FaultMode::Fail | FaultMode::FailN(_) => injected(),
            FaultMode::Flaky(p) => {
                if rand::rng().random::<f64>() * 100.0 < p {
                    injected()
                } else {
                    Ok(())
                }
            }
            FaultMode::Delay(ms) => {
                std::thread::sleep(std::time::Duration::from_millis(ms));
                Ok(())
            }
            FaultMode::PanicN(_) => panic!("injected panic"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_render() {
        for s in ["ok", "fail", "fail:3", "flaky:50", "delay:20", "panic:1"] {
            assert_eq!(FaultMode::parse(s).map(|m| m.render()).as_deref(), Ok(s));
        }
        assert_eq!(
            FaultMode::parse("explode"),
            Err(FaultSpecError::UnknownMode)
        );
        assert_eq!(FaultMode::parse("fail:-1"), Err(FaultSpecError::BadNumber));
        let f = Faults::default();
        assert_eq!(f.set_spec("disk=fail"), Err(FaultSpecError::UnknownTarget));
        assert_eq!(f.set_spec("infer"), Err(FaultSpecError::NotAPair));
        assert!(f.set_spec("infer=fail:2,load=ok").is_ok());
    }

    #[cfg(feature = "fault-injection")]
    #[test]
    fn fail_n_fails_exactly_n_times() {
        let f = Faults::default();
        f.set_spec("infer=fail:2").expect("valid");
        assert!(f.before_infer().is_err());
        assert!(f.before_infer().is_err());
        assert!(f.before_infer().is_ok());
    }
}
