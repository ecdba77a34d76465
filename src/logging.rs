//! Log set-up shared by the `phiguard` binary and the desktop shell, so both keep the one
//! promise about logs: no request text, entity text or request-derived value in any line, at
//! any level.
//!
//! phiguard's own code never logs request data. Third-party crates make no such promise: at
//! `trace` the tokenizer logs the text it is given, character by character, and HTTP crates
//! log bodies and headers. So the requested level applies to phiguard's own targets only,
//! and every other crate is capped at [`THIRD_PARTY_MAX`] (`warn`). `RUST_LOG` keeps its
//! usual meaning (directives replace the configured level) under the same cap: it can narrow
//! anything, but never open a third-party crate below `warn`.
//!
//! A panic's payload can carry data too (a slicing panic quotes the string it sliced), and
//! the default hook prints it outside the log. [`install_panic_hook`] replaces that hook with
//! one that logs the thread and the location only (and the frames when `RUST_BACKTRACE` asks
//! for them: they name code, not data), through `tracing`, so a panic is one line of the
//! JSON log like any other event.
//!
//! Colour: ANSI codes only when the log goes to a terminal (and `NO_COLOR` is unset), never
//! into a file or a pipe.

use std::io::IsTerminal;

use tracing_subscriber::filter::{EnvFilter, FilterExt, LevelFilter};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Filter, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Registry;

/// The most verbose level any crate other than phiguard's own may log at.
pub const THIRD_PARTY_MAX: LevelFilter = LevelFilter::WARN;

/// The target prefix of phiguard's own crates (`phiguard`, `phiguard_desktop`,
/// `phiguard_kernels`): `EnvFilter` matches targets by prefix.
const OWN_TARGETS: &str = "phiguard";

/// The target of panic reports.
pub const PANIC_TARGET: &str = "phiguard::panic";

/// How to log.
#[derive(Clone, Debug)]
pub struct LogConfig<'a> {
    /// `trace`, `debug`, `info`, `warn` (or `warning`), `error` or `off`; empty means `info`.
    pub level: &'a str,
    /// `RUST_LOG` directives, if set: they replace `level` (still under the cap).
    pub rust_log: Option<&'a str>,
    /// One JSON object per line; otherwise plain text.
    pub json: bool,
    /// ANSI colours (plain text only); see [`stderr_is_a_colour_terminal`].
    pub ansi: bool,
}

impl LogConfig<'_> {
    /// The level as `EnvFilter` spells it.
    fn level(&self) -> &str {
        match self.level.trim() {
            "warning" => "warn",
            "" => "info",
            l => l,
        }
    }
}

/// The filter of [`LogConfig`]: the requested level (or `RUST_LOG`) for phiguard's own
/// targets, and at most [`THIRD_PARTY_MAX`] for everything else.
pub fn filter<S>(cfg: &LogConfig<'_>) -> impl Filter<S> + Send + Sync + 'static
where
    S: tracing::Subscriber + for<'l> tracing_subscriber::registry::LookupSpan<'l>,
{
    let requested = cfg
        .rust_log
        .filter(|d| !d.trim().is_empty())
        .and_then(|d| EnvFilter::try_new(d).ok())
        .unwrap_or_else(|| EnvFilter::new(cfg.level()));
    let cap = EnvFilter::new(format!("{THIRD_PARTY_MAX},{OWN_TARGETS}=trace"));
    requested.and(cap)
}

/// True when stderr is a terminal and `NO_COLOR` is unset or empty: the only case in which
/// plain logs carry colour codes.
pub fn stderr_is_a_colour_terminal() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Installs the global subscriber writing to `writer` (a second call does nothing).
pub fn init<W>(cfg: &LogConfig<'_>, writer: W)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let layer = tracing_subscriber::fmt::layer().with_writer(writer);
    let layer: Box<dyn Layer<Registry> + Send + Sync> = if cfg.json {
        layer
            .json()
            // The request span's fields (its id) on every line logged inside it.
            .with_current_span(true)
            .with_span_list(false)
            .with_ansi(false)
            .with_filter(filter(cfg))
            .boxed()
    } else {
        layer.with_ansi(cfg.ansi).with_filter(filter(cfg)).boxed()
    };
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

/// Replaces the default panic hook with one that logs the panicking thread and the source
/// location (and the backtrace when `RUST_BACKTRACE` asks for one), never the payload (see
/// the module docs). Before a subscriber is installed it writes the same to stderr.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let thread = thread.name().unwrap_or("unnamed");
        let location = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_else(|| "unknown".into());
        // Frames name code, never data: kept when RUST_BACKTRACE asks for them.
        let backtrace = std::backtrace::Backtrace::capture();
        let backtrace = (backtrace.status() == std::backtrace::BacktraceStatus::Captured)
            .then(|| backtrace.to_string());
        if tracing::dispatcher::has_been_set() {
            tracing::error!(
                target: PANIC_TARGET,
                thread,
                location = %location,
                backtrace = backtrace.as_deref(),
                "panic (payload withheld)"
            );
        } else {
            eprintln!("panic in thread {thread} at {location} (payload withheld)");
            if let Some(b) = backtrace {
                eprintln!("{b}");
            }
        }
    }));
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Collects what the subscriber writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::ErrorKind::Other)?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Emits one event per (target, level) pair under `cfg` and returns the output.
    fn emit(cfg: &LogConfig<'_>) -> String {
        let out = Captured::default();
        let writer = out.clone();
        let layer = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .with_filter(filter(cfg));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::trace!(target: "tokenizers::pre", "third-trace");
            tracing::debug!(target: "hyper::proto", "third-debug");
            tracing::warn!(target: "hyper::proto", "third-warn");
            tracing::trace!(target: "phiguard::server", "own-trace");
            tracing::info!(target: "phiguard::access", "own-info");
            tracing::error!(target: "phiguard::access", "own-error");
        });
        let bytes = out.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn found(out: &str) -> Vec<&'static str> {
        [
            "third-trace",
            "third-debug",
            "third-warn",
            "own-trace",
            "own-info",
            "own-error",
        ]
        .into_iter()
        .filter(|m| out.contains(m))
        .collect()
    }

    fn cfg<'a>(level: &'a str, rust_log: Option<&'a str>) -> LogConfig<'a> {
        LogConfig {
            level,
            rust_log,
            json: false,
            ansi: false,
        }
    }

    #[test]
    fn trace_opens_phiguard_only_and_third_party_crates_stay_at_warn() {
        assert_eq!(
            found(&emit(&cfg("trace", None))),
            ["third-warn", "own-trace", "own-info", "own-error"]
        );
    }

    #[test]
    fn quieter_levels_apply_to_every_crate() {
        assert_eq!(
            found(&emit(&cfg("info", None))),
            ["third-warn", "own-info", "own-error"]
        );
        assert_eq!(found(&emit(&cfg("error", None))), ["own-error"]);
        assert!(found(&emit(&cfg("off", None))).is_empty());
        assert_eq!(
            found(&emit(&cfg("warning", None))),
            ["third-warn", "own-error"]
        );
    }

    #[test]
    fn rust_log_replaces_the_level_under_the_same_cap() {
        assert_eq!(
            found(&emit(&cfg("error", Some("trace")))),
            ["third-warn", "own-trace", "own-info", "own-error"]
        );
        assert_eq!(
            found(&emit(&cfg(
                "info",
                Some("hyper=trace,tokenizers=trace,phiguard=error")
            ))),
            ["third-warn", "own-error"]
        );
        // Unparsable directives fall back to the configured level.
        assert_eq!(
            found(&emit(&cfg("info", Some("hyper=loud")))),
            ["third-warn", "own-info", "own-error"]
        );
    }
}
