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
//!
//! The last [`RECENT_CAPACITY`] lines are also kept in memory as JSON ([`recent`]), under the
//! same filter, for the dashboard's Logs tab: what it shows is what the log holds, so the
//! same promise covers it.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

use parking_lot::Mutex;

use tracing_subscriber::filter::{EnvFilter, FilterExt, LevelFilter};
use tracing_subscriber::fmt::writer::MakeWriterExt;
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

/// Set once JSON logs are installed: a fatal error is then one more JSON line
/// ([`json_logs`]).
static JSON_LOGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// True once [`init`] installed JSON logs. The command line then reports a fatal error (a
/// port in use, a bad setting met after logging started) as a JSON event, not a plain
/// `phiguard: …` line that a log pipeline parsing JSON would drop or misread.
pub fn json_logs() -> bool {
    JSON_LOGS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Installs the global subscriber writing to `writer`, and to [`recent`] (a second call does
/// nothing).
pub fn init<W>(cfg: &LogConfig<'_>, writer: W)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    if cfg.json {
        JSON_LOGS.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> = if cfg.json {
        // The log and the ring hold the same JSON line: format each event once, for both.
        vec![json_layer(writer.and(RecentWriter::new))
            .with_filter(filter(cfg))
            .boxed()]
    } else {
        vec![
            tracing_subscriber::fmt::layer()
                .with_writer(writer)
                .with_ansi(cfg.ansi)
                .with_filter(filter(cfg))
                .boxed(),
            json_layer(RecentWriter::new)
                .with_filter(filter(cfg))
                .boxed(),
        ]
    };
    let _ = tracing_subscriber::registry().with(layers).try_init();
}

/// One JSON object per event, with the request span's fields (its id) on every line logged
/// inside it.
fn json_layer<W>(writer: W) -> impl Layer<Registry> + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt::layer()
        .json()
        .with_current_span(true)
        .with_span_list(false)
        .with_ansi(false)
        .with_writer(writer)
}

/// How many log lines [`recent`] keeps.
pub const RECENT_CAPACITY: usize = 2000;

/// The longest line [`recent`] keeps whole; a longer one (a long backtrace) is cut at a
/// character boundary and marked, so one event cannot hold megabytes.
const RECENT_LINE_MAX: usize = 16 * 1024;

/// The last log lines, numbered from 1 in the order they were written.
pub struct RecentLogs {
    ring: Mutex<Ring>,
}

struct Ring {
    /// The number the next line gets.
    next: u64,
    lines: VecDeque<(u64, String)>,
}

/// What [`RecentLogs::after`] returns.
#[derive(Debug, Default, PartialEq)]
pub struct RecentLines {
    /// `(number, JSON line)`, oldest first.
    pub lines: Vec<(u64, String)>,
    /// The number to ask after next time: the last line returned, or the last line written
    /// when none was newer.
    pub last: u64,
    /// Lines after the one asked for that had already left the ring.
    pub missed: u64,
}

impl RecentLogs {
    fn new() -> Self {
        RecentLogs {
            ring: Mutex::new(Ring {
                next: 1,
                lines: VecDeque::with_capacity(RECENT_CAPACITY),
            }),
        }
    }

    fn push(&self, mut line: String) {
        if line.len() > RECENT_LINE_MAX {
            let mut cut = RECENT_LINE_MAX;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push_str(" [cut]");
        }
        let mut ring = self.ring.lock();
        if ring.lines.len() == RECENT_CAPACITY {
            ring.lines.pop_front();
        }
        let n = ring.next;
        ring.next += 1;
        ring.lines.push_back((n, line));
    }

    /// Up to `limit` lines numbered above `after`, oldest first.
    pub fn after(&self, after: u64, limit: usize) -> RecentLines {
        let ring = self.ring.lock();
        let first = ring.lines.front().map_or(ring.next, |l| l.0);
        let lines: Vec<(u64, String)> = ring
            .lines
            .iter()
            .filter(|l| l.0 > after)
            .take(limit)
            .cloned()
            .collect();
        RecentLines {
            last: lines.last().map_or(ring.next - 1, |l| l.0),
            missed: first.saturating_sub(after + 1),
            lines,
        }
    }
}

/// The process's recent log lines (empty until [`init`] runs).
pub fn recent() -> &'static RecentLogs {
    static RECENT: OnceLock<RecentLogs> = OnceLock::new();
    RECENT.get_or_init(RecentLogs::new)
}

/// One event's output: the fmt layer writes a formatted event in one piece, and the line
/// enters the ring when the writer is dropped.
struct RecentWriter(Vec<u8>);

impl RecentWriter {
    fn new() -> Self {
        RecentWriter(Vec::new())
    }
}

impl Write for RecentWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RecentWriter {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.0);
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            recent().push(line.to_owned());
        }
    }
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
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn the_ring_numbers_lines_keeps_the_last_ones_and_says_what_was_missed() {
        let r = RecentLogs::new();
        assert_eq!(r.after(0, 10), RecentLines::default());
        for i in 0..(RECENT_CAPACITY + 5) {
            r.push(format!("{{\"n\":{i}}}"));
        }
        let all = r.after(0, usize::MAX);
        assert_eq!(all.lines.len(), RECENT_CAPACITY);
        assert_eq!(all.lines[0].0, 6);
        assert_eq!(all.missed, 5);
        assert_eq!(all.last, (RECENT_CAPACITY + 5) as u64);
        let tail = r.after(all.last - 2, 10);
        assert_eq!(tail.lines.len(), 2);
        assert_eq!(tail.missed, 0);
        let none = r.after(all.last, 10);
        assert!(none.lines.is_empty());
        assert_eq!(none.last, all.last);
        let page = r.after(0, 3);
        assert_eq!(page.last, 8);
    }

    #[test]
    fn a_long_line_is_cut_at_a_character_boundary() {
        let r = RecentLogs::new();
        r.push("é".repeat(RECENT_LINE_MAX));
        let line = &r.after(0, 1).lines[0].1;
        assert!(line.len() <= RECENT_LINE_MAX + 6 && line.ends_with(" [cut]"));
    }

    #[test]
    fn each_event_is_one_json_line_in_the_ring_and_the_same_line_in_the_log() {
        let out = Captured::default();
        let log = out.clone();
        let layer = json_layer((move || log.clone()).and(RecentWriter::new))
            .with_filter(filter(&cfg("info", None)));
        let before = recent().after(0, usize::MAX).last;
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
            let span =
                tracing::info_span!(target: "phiguard::request", "request", request_id = "r-1");
            let _e = span.enter();
            tracing::info!(target: "phiguard::access", status = 200u16, "ring-test-line");
            tracing::debug!(target: "phiguard::access", "ring-test-hidden");
        });
        let got = recent().after(before, usize::MAX);
        let ours: Vec<&String> = got
            .lines
            .iter()
            .map(|l| &l.1)
            .filter(|l| l.contains("ring-test"))
            .collect();
        assert_eq!(ours.len(), 1, "{ours:?}");
        let v: serde_json::Value = serde_json::from_str(ours[0]).expect("JSON");
        assert_eq!(v["fields"]["message"], "ring-test-line");
        assert_eq!(v["span"]["request_id"], "r-1");
        assert_eq!(v["level"], "INFO");
        let logged = out.0.lock().map(|b| b.clone()).unwrap_or_default();
        assert_eq!(
            String::from_utf8_lossy(&logged).trim_end(),
            ours[0].as_str()
        );
    }

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
