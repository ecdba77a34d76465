//! The HTTP floor for the fast-fail benchmark (`tools/bench_fastfail.py`): a bare axum
//! handler that answers every `POST /pii/deidentify` with the response phiguard sends while
//! a model's breaker is open (same status, body bytes and, given `--header`, the same
//! headers; `hyper` adds `date` and `content-length` to both), on the same runtime phiguard
//! serves with. Nothing else happens per request, so its requests per second are what axum
//! and hyper cost on this machine for those bytes; phiguard's fast-fail is reported as a
//! share of it. Without `--header` it sends only `content-type` and `Retry-After` (the floor
//! of the benchmark's earlier runs).
//!
//! ```text
//! cargo run --release --example floor503 -- --port 0 --body-file envelope.json \
//!     --header 'cache-control: no-store'
//! ```
//! It prints `listening on http://127.0.0.1:PORT` once it accepts connections.

use std::path::PathBuf;

use anyhow::Context;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Loopback port (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The 503 body to send, as phiguard sent it (a file the benchmark captured).
    #[arg(long)]
    body_file: PathBuf,
    /// The `Retry-After` value to send (without `--header`).
    #[arg(long, default_value = "3600")]
    retry_after: String,
    /// A response header as phiguard sent it, `name: value` (repeatable); when given, these
    /// are the response's headers.
    #[arg(long = "header")]
    headers: Vec<String>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let body: &'static [u8] = std::fs::read(&args.body_file)
        .with_context(|| format!("reading {}", args.body_file.display()))?
        .leak();
    let mut headers = axum::http::HeaderMap::new();
    if args.headers.is_empty() {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let retry_after = HeaderValue::from_str(&args.retry_after).context("--retry-after")?;
        headers.insert(header::RETRY_AFTER, retry_after);
    }
    for h in &args.headers {
        let (name, value) = h.split_once(':').context("--header is `name: value`")?;
        headers.append(
            header::HeaderName::from_bytes(name.trim().as_bytes()).context("--header name")?,
            HeaderValue::from_str(value.trim()).context("--header value")?,
        );
    }
    // The same runtime `phiguard serve` builds (src/cli/mod.rs): multi-threaded, one worker
    // per core.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let app = Router::new().route(
            "/pii/deidentify",
            post(move || async move {
                (StatusCode::SERVICE_UNAVAILABLE, headers.clone(), body).into_response()
            }),
        );
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
        println!("listening on http://{}", listener.local_addr()?);
        axum::serve(listener, app).await?;
        anyhow::Ok(())
    })
}
