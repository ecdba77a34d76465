//! The accept loop: one HTTP/1.1 connection per accepted socket, with a header timeout and a
//! cap on open connections, and a graceful stop.
//!
//! Written out instead of `axum::serve` because that offers neither: a client that never
//! finished its headers kept its connection (and a task) forever, and any number of them
//! could be open at once. hyper's own `header_read_timeout` does the timing; it starts when
//! the connection waits for a request head, so it also closes a kept-alive connection that
//! stays idle that long. The body read timeout and the streams' send timeout are per request
//! (`middleware::Body`, `stream.rs`). HTTP/1.1 only, as OpenMed's uvicorn: every client of
//! this API speaks it, and HTTP/2's streams would need their own stall limits.
//!
//! At the stop, a connection with no response under way (idle between requests, or still
//! sending a request's head) is closed at once; one whose response is being written is let
//! finish it. hyper's graceful stop alone treats a half-sent head as a request in progress,
//! so one slow client held a stopping server until its header timeout.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};

use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::error::ApiError;

/// The connection limits, from `server.max_connections` and `server.header_timeout_seconds`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConnLimits {
    /// Open connections at most.
    pub max_connections: usize,
    /// Time allowed for a request's headers, from the connection's start or its previous
    /// response.
    pub header_timeout: Duration,
}

/// The loop's metric handles (clones of the server's families).
#[derive(Clone)]
pub(crate) struct ConnMetrics {
    /// Connections open now.
    pub open: prometheus::IntGauge,
    /// Connections refused at the cap.
    pub refused: prometheus::IntCounter,
}

/// Serves `app` (the router, behind the door in the server) on `listener` until `stop`
/// resolves, then stops accepting and waits for the open connections to finish their
/// requests (the caller bounds that wait). `app` gives each connection its service, given
/// the peer's address.
pub(crate) async fn serve<S>(
    listener: TcpListener,
    app: impl Fn(std::net::SocketAddr) -> S,
    limits: ConnLimits,
    metrics: ConnMetrics,
    stop: impl std::future::Future<Output = ()>,
) where
    S: tower::Service<
            axum::http::Request<Incoming>,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let stopping = CancellationToken::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors or a reset before accept: wait a moment rather
                    // than spin, and keep serving the connections that are open.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            metrics.refused.inc();
            tokio::spawn(refuse(stream));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let busy = Arc::new(AtomicUsize::new(0));
        let service = counted(app(peer), Arc::clone(&busy));
        let conn = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let conn = graceful.watch(conn);
        let open = metrics.open.clone();
        let stopping = stopping.clone();
        open.inc();
        tokio::spawn(async move {
            // A connection's end (a timeout, a reset, the client leaving) is routine: nothing
            // about it is worth a log line, and its error could only name the peer.
            tokio::pin!(conn);
            tokio::select! {
                _ = &mut conn => {}
                () = stopping.cancelled() => {
                    // Dropping the connection closes it; the graceful stop no longer waits
                    // for it.
                    if busy.load(Ordering::SeqCst) > 0 {
                        let _ = conn.await;
                    }
                }
            }
            open.dec();
            drop(permit);
        });
    }
    drop(listener);
    stopping.cancel();
    graceful.shutdown().await;
}

/// `service`, counting in `busy` its requests whose response has not been written in full:
/// from the call (the head has been read) until the response body ends or is dropped.
fn counted<S>(
    service: S,
    busy: Arc<AtomicUsize>,
) -> impl tower::Service<
    axum::http::Request<Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future = impl std::future::Future<
        Output = Result<axum::response::Response, std::convert::Infallible>,
    > + Send,
> + Clone
where
    S: tower::Service<
            axum::http::Request<Incoming>,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
        > + Clone,
    S::Future: Send + 'static,
{
    service.map_future(move |response| {
        let guard = BusyGuard::new(&busy);
        async move {
            let response = response.await?;
            Ok(response.map(|body| {
                Body::new(CountedBody {
                    body,
                    _guard: guard,
                })
            }))
        }
    })
}

/// One request of a connection counted as under way while it lives.
struct BusyGuard(Arc<AtomicUsize>);

impl BusyGuard {
    fn new(busy: &Arc<AtomicUsize>) -> Self {
        busy.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(busy))
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response body that holds its request's [`BusyGuard`] until hyper drops it, which it
/// does once the last byte is written or the connection is gone.
struct CountedBody {
    body: Body,
    _guard: BusyGuard,
}

impl HttpBody for CountedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// The answer to a connection over the cap: `503 service_busy` with `Retry-After` and the
/// safety headers every response carries (`no-store`, `nosniff`), written by hand because no
/// request was read (so it has no request id).
fn busy_reply() -> String {
    let body = ApiError::Busy { retry_after: 1.0 }.body(None).to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\ncache-control: no-store\r\nx-content-type-options: nosniff\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Answers a connection over the cap with one `503 service_busy` and closes it, without
/// reading its request: a client told to retry does better than one whose connection is reset.
async fn refuse(mut stream: TcpStream) {
    let reply = busy_reply();
    let write = async {
        stream.write_all(reply.as_bytes()).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

/// `router` for one connection from `peer`: each request carries the peer as axum's
/// `ConnectInfo`, as `axum::serve`'s `into_make_service_with_connect_info` would give it
/// (this loop replaces `axum::serve`, so it inserts the extension itself).
pub(crate) fn with_connect_info(
    router: axum::Router,
    peer: std::net::SocketAddr,
) -> tower::util::MapRequest<
    axum::Router,
    impl FnMut(axum::http::Request<Incoming>) -> axum::http::Request<Incoming> + Clone,
> {
    router.map_request(move |mut req: axum::http::Request<Incoming>| {
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
        req
    })
}

/// The peer address a request came from, for tests of the loop itself.
#[cfg(test)]
fn peer_of(req: &axum::http::Request<axum::body::Body>) -> Option<std::net::SocketAddr> {
    req.extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    type Stop = (
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    );

    async fn start(limits: ConnLimits) -> (std::net::SocketAddr, Stop) {
        let router = axum::Router::new()
            .route(
                "/",
                axum::routing::get(|req: axum::http::Request<axum::body::Body>| async move {
                    peer_of(&req)
                        .map(|p| p.ip().to_string())
                        .unwrap_or_default()
                }),
            )
            .route(
                "/slow",
                axum::routing::get(|| async {
                    // A body that takes its time: two chunks 300 ms apart.
                    let chunks = futures_chunks();
                    axum::body::Body::from_stream(chunks)
                }),
            );
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let metrics = ConnMetrics {
            open: prometheus::IntGauge::new("open", "open").expect("gauge"),
            refused: prometheus::IntCounter::new("refused", "refused").expect("counter"),
        };
        let app = move |peer| with_connect_info(router.clone(), peer);
        let task = tokio::spawn(serve(listener, app, limits, metrics, async {
            let _ = rx.await;
        }));
        (addr, (tx, task))
    }

    fn futures_chunks(
    ) -> impl futures::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send {
        futures::stream::unfold(0u8, |n| async move {
            match n {
                0 => Some((Ok(Bytes::from_static(b"first ")), 1)),
                1 => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Some((Ok(Bytes::from_static(b"last")), 2))
                }
                _ => None,
            }
        })
    }

    #[tokio::test]
    async fn the_stop_closes_a_half_sent_head_at_once_and_lets_a_response_finish() {
        let limits = ConnLimits {
            max_connections: 8,
            header_timeout: Duration::from_secs(30),
        };
        let (addr, (stop, task)) = start(limits).await;
        let mut half = TcpStream::connect(addr).await.expect("connect");
        half.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n")
            .await
            .expect("write");
        let mut slow = TcpStream::connect(addr).await.expect("connect");
        slow.write_all(b"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .expect("write");
        let mut first = [0u8; 1];
        slow.read_exact(&mut first)
            .await
            .expect("the response began");
        let _ = stop.send(());
        // The stop waits for the slow response only, not the 30 s header timeout.
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the stop waited on a half-sent head")
            .expect("serve");
        let mut rest = String::new();
        slow.read_to_string(&mut rest).await.expect("read");
        // The byte read above was the `H` of the status line; the chunked body is complete.
        assert!(rest.starts_with("TTP/1.1 200"), "{rest}");
        assert!(
            rest.ends_with("6\r\nfirst \r\n4\r\nlast\r\n0\r\n\r\n"),
            "{rest}"
        );
        let mut buf = Vec::new();
        assert_eq!(
            half.read_to_end(&mut buf)
                .await
                .map(|_| buf.len())
                .unwrap_or(0),
            0
        );
    }

    async fn get(addr: std::net::SocketAddr) -> String {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).await.expect("read");
        out
    }

    #[tokio::test]
    async fn connections_over_the_cap_get_503_and_the_peer_is_known() {
        let limits = ConnLimits {
            max_connections: 2,
            header_timeout: Duration::from_secs(30),
        };
        let (addr, _stop) = start(limits).await;
        assert!(get(addr).await.ends_with("127.0.0.1"));
        let _a = TcpStream::connect(addr).await.expect("a");
        let _b = TcpStream::connect(addr).await.expect("b");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let third = get(addr).await;
        assert!(third.starts_with("HTTP/1.1 503"), "{third}");
        assert!(third.contains("\"service_busy\""), "{third}");
        assert!(
            third.contains("\r\nx-content-type-options: nosniff\r\n"),
            "{third}"
        );
        assert!(third.contains("\r\ncache-control: no-store\r\n"), "{third}");
        drop((_a, _b));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(get(addr).await.starts_with("HTTP/1.1 200"));
    }

    #[tokio::test]
    async fn a_connection_that_never_finishes_its_headers_is_closed() {
        let limits = ConnLimits {
            max_connections: 8,
            header_timeout: Duration::from_millis(300),
        };
        let (addr, _stop) = start(limits).await;
        let mut s = TcpStream::connect(addr).await.expect("connect");
        s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n")
            .await
            .expect("write");
        let mut buf = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await;
        assert!(read.is_ok(), "the server kept a half-sent request open");
    }
}
