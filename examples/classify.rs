//! Runs a token-classification model over texts and prints JSON; also the phiguard side
//! of `tools/check_rampart.py` and `tools/bench_peers.py`.
//!
//! ```text
//! cargo run --release --example classify -- --model models/phiguard-deid --input texts.json --mode tokens
//! cargo run --release --example classify -- --model models/phiguard-deid --input texts.json --mode bench --threads 2
//! ```
//! `--input` is a JSON array of strings. Modes:
//! - `tokens`: per text, every token's offsets, top raw label and its probability;
//! - `spans`: per text, the canonical spans `detect_batch` returns;
//! - `bench`: throughput and latency at batch 1 and batched over `--threads` workers
//!   (each worker runs whole batches, candle ops single-threaded), plus peak RSS.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use phiguard::detect::Recognizer;
use phiguard::inference::{ClassifierOptions, Precision, TokenClassifier};
use serde_json::json;

#[derive(Parser)]
struct Args {
    /// Model directory (config.json, tokenizer.json, *.safetensors).
    #[arg(long, default_value = "models/phiguard-deid")]
    model: PathBuf,
    /// JSON array of texts.
    #[arg(long)]
    input: PathBuf,
    /// tokens | spans | bench
    #[arg(long, default_value = "spans")]
    mode: String,
    /// Worker threads for `bench`.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Texts per `detect_batch` call in the batched part of `bench`.
    #[arg(long, default_value_t = 32)]
    docs_per_call: usize,
    /// Windows per forward pass inside the classifier.
    #[arg(long, default_value_t = 4)]
    batch: usize,
    /// Dense-layer arithmetic: f32 | int8.
    #[arg(long, default_value = "f32")]
    precision: String,
}

fn main() -> anyhow::Result<()> {
    // Before any thread exists: candle ops single-threaded, parallelism across workers.
    phiguard::inference::init_cpu_threads(1);
    let args = Args::parse();
    let texts: Vec<String> =
        serde_json::from_slice(&std::fs::read(&args.input).context("reading --input")?)
            .context("--input must be a JSON array of strings")?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let device = phiguard::inference::device_from_env()?;
    let t0 = Instant::now();
    let options = ClassifierOptions {
        batch_size: args.batch,
        precision: match args.precision.as_str() {
            "f32" => Precision::F32,
            "int8" => Precision::Int8,
            other => anyhow::bail!("unknown --precision {other}"),
        },
        ..ClassifierOptions::default()
    };
    let model = TokenClassifier::load_with(&args.model, &device, options)?;
    let load_s = t0.elapsed().as_secs_f64();
    let out = match args.mode.as_str() {
        "tokens" => tokens(&model, &refs)?,
        "spans" => spans(&model, &refs)?,
        "bench" => bench(
            &model,
            &refs,
            args.threads.max(1),
            args.docs_per_call.max(1),
            load_s,
        )?,
        other => anyhow::bail!("unknown --mode {other}"),
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{out}")?;
    Ok(())
}

fn tokens(model: &TokenClassifier, texts: &[&str]) -> anyhow::Result<serde_json::Value> {
    let raw = model.raw_labels();
    let all = model.token_logits(texts)?;
    let docs: Vec<_> =
        all.iter()
            .map(|tl| {
                let toks: Vec<_> =
                    tl.offsets
                        .iter()
                        .zip(&tl.logits)
                        .map(|(&(s, e), row)| {
                            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                            let sum: f32 = row.iter().map(|v| (v - max).exp()).sum();
                            let (best, _) = row.iter().enumerate().fold(
                                (0, f32::NEG_INFINITY),
                                |a, (i, &v)| if v > a.1 { (i, v) } else { a },
                            );
                            json!({"start": s, "end": e, "label": raw[best], "score": 1.0 / sum})
                        })
                        .collect();
                json!({ "tokens": toks })
            })
            .collect();
    Ok(json!(docs))
}

fn spans(model: &TokenClassifier, texts: &[&str]) -> anyhow::Result<serde_json::Value> {
    let all = model.detect_batch(texts)?;
    Ok(json!(all
        .iter()
        .map(|doc| doc
            .iter()
            .map(|s| json!({"start": s.start, "end": s.end, "label": s.label.wire(), "score": s.score}))
            .collect::<Vec<_>>())
        .collect::<Vec<_>>()))
}

/// Runs `calls` (each a slice of texts) over `threads` workers; returns wall seconds and
/// the latency of every call.
fn run_calls(
    model: &TokenClassifier,
    calls: &[&[&str]],
    threads: usize,
) -> anyhow::Result<(f64, Vec<f64>)> {
    let next = AtomicUsize::new(0);
    let latencies = Mutex::new(Vec::with_capacity(calls.len()));
    let failed = AtomicUsize::new(0);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(call) = calls.get(i) else { break };
                let t = Instant::now();
                if model.detect_batch(call).is_err() {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
                if let Ok(mut l) = latencies.lock() {
                    l.push(t.elapsed().as_secs_f64());
                }
            });
        }
    });
    let wall = start.elapsed().as_secs_f64();
    anyhow::ensure!(
        failed.load(Ordering::Relaxed) == 0,
        "a detect_batch call failed"
    );
    let mut l = latencies
        .into_inner()
        .map_err(|_| anyhow::anyhow!("poisoned"))?;
    l.sort_by(f64::total_cmp);
    Ok((wall, l))
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<f64>().ok())
            })
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn bench(
    model: &TokenClassifier,
    texts: &[&str],
    threads: usize,
    docs_per_call: usize,
    load_s: f64,
) -> anyhow::Result<serde_json::Value> {
    // Warm-up (allocator, caches).
    model.detect_batch(&texts[..texts.len().min(8)])?;
    let singles: Vec<&[&str]> = texts.chunks(1).collect();
    let (wall1, lat1) = run_calls(model, &singles, threads)?;
    let (wall1_seq, lat1_seq) = run_calls(model, &singles, 1)?;
    let batched: Vec<&[&str]> = texts.chunks(docs_per_call).collect();
    let (wallb, latb) = run_calls(model, &batched, threads)?;
    let n = texts.len() as f64;
    Ok(json!({
        "engine": "phiguard",
        "docs": texts.len(),
        "threads": threads,
        "load_s": load_s,
        "batch1_threads": {"wall_s": wall1, "docs_per_s": n / wall1, "p50_ms": pct(&lat1, 0.5) * 1e3, "p99_ms": pct(&lat1, 0.99) * 1e3},
        "batch1_one_thread": {"wall_s": wall1_seq, "docs_per_s": n / wall1_seq, "p50_ms": pct(&lat1_seq, 0.5) * 1e3, "p99_ms": pct(&lat1_seq, 0.99) * 1e3},
        "batched": {"docs_per_call": docs_per_call, "wall_s": wallb, "docs_per_s": n / wallb, "p50_ms": pct(&latb, 0.5) * 1e3, "p99_ms": pct(&latb, 0.99) * 1e3},
        "peak_rss_mb": peak_rss_mb(),
    }))
}
