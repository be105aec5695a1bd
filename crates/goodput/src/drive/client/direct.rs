//! The transport of `http://` targets: HTTP/1.1 connections of our own (hyper's
//! `client::conn::http1`), each driven inside the task of the request that uses it.
//!
//! A pooled client (reqwest, hyper-util's pool) runs every connection in a task of
//! its own and hands body chunks to the request's task through a channel: two task
//! wake-ups per chunk. Here the request's task polls the connection itself, right
//! before it polls the body (`Driven`), so a chunk read from the socket is in the
//! request's hands in the same poll. Owning the connections also lets a trial open
//! them before it starts ([`Pool::preconnect`]), and a request that did need a new
//! one knows how long it took (the record's `connect`).
//!
//! The pool keeps idle connections only; a connection is in the pool or in the
//! hands of exactly one request, so the pool never holds more connections than the
//! most requests ever in flight at once. A connection the server closed while idle
//! is noticed when it is taken (one poll of its driver) and dropped.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::{FutureExt, Stream};
use http_body_util::Full;
use hyper::body::{Body, Incoming};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::stamped::{stamped, StampedTcp, Stamps};

type Driver = http1::Connection<TokioIo<StampedTcp>, Full<Bytes>>;

/// Bytes each read from a connection may fill. hyper's adaptive default reserves
/// 8 KiB before every read and, since each chunk it hands out shares that buffer,
/// moves a busy stream to a new 16 KiB one (heaptrack: the largest single cost of
/// 10,000 open streams). An SSE chunk is a few hundred bytes, and a burst that does
/// not fit is read by the next read of the same poll, so what is measured does not
/// change (each chunk's arrival time is its read's kernel receive time,
/// [`super::stamped`]).
const READ_BUF_BYTES: usize = 2048;

/// One HTTP/1.1 connection: the half that sends requests and the half that does
/// the socket's work (polled by whoever uses the connection).
pub(crate) struct Conn {
    pub sender: http1::SendRequest<Full<Bytes>>,
    pub driver: Driver,
    /// The driver has completed: the connection is closed.
    pub ended: bool,
    /// The kernel's receive time of what the connection read last, and when its
    /// latest request's first write began.
    pub stamps: Stamps,
}

/// Why a connection could not be opened.
#[derive(Debug)]
pub(crate) struct ConnectError {
    /// What failed, with the address.
    pub detail: String,
    /// This process had no file descriptor left (`EMFILE`, `ENFILE`): the client's
    /// limit, not the server's failure.
    pub out_of_files: bool,
}

/// Idle connections to one `host:port`.
#[derive(Debug)]
pub struct Pool {
    /// `host:port` to connect to.
    pub(crate) addr: String,
    /// Request target (path and query) of the endpoint.
    pub(crate) path: String,
    idle: Mutex<Vec<Conn>>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("ended", &self.ended).finish()
    }
}

impl Pool {
    /// A pool for `url` when it is `http://host[:port]/path` (`https` goes through
    /// reqwest, which brings TLS); `None` otherwise.
    pub fn for_url(url: &str) -> Option<Pool> {
        let rest = url.strip_prefix("http://")?;
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() || authority.contains('@') {
            return None;
        }
        let has_port = match authority.rfind(']') {
            Some(close) => authority[close..].contains(':'),
            None => authority.contains(':'),
        };
        let addr = if has_port {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        Some(Pool {
            addr,
            path,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// Opens a connection (TCP with `TCP_NODELAY` and kernel receive timestamps,
    /// then HTTP/1.1 set-up, which sends nothing).
    pub(crate) async fn connect(&self) -> Result<Conn, ConnectError> {
        let tcp = TcpStream::connect(&self.addr)
            .await
            .map_err(|e| ConnectError {
                out_of_files: super::out_of_files(&e),
                detail: format!("cannot connect to {}: {e}", self.addr),
            })?;
        let _ = tcp.set_nodelay(true);
        let (tcp, stamps) = stamped(tcp);
        let (sender, driver) = http1::Builder::new()
            .read_buf_exact_size(Some(READ_BUF_BYTES))
            .handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| ConnectError {
                out_of_files: false,
                detail: format!("HTTP/1.1 set-up with {} failed: {e}", self.addr),
            })?;
        Ok(Conn {
            sender,
            driver,
            ended: false,
            stamps,
        })
    }

    /// An idle connection that is still open, if any.
    pub(crate) fn checkout(&self) -> Option<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(mut c) = idle.pop() {
            // One poll reads a close (or a stray byte) that arrived while idle.
            if (&mut c.driver).now_or_never().is_none() && !c.sender.is_closed() {
                return Some(c);
            }
        }
        None
    }

    /// Gives back a connection whose exchange ended cleanly.
    pub(crate) fn checkin(&self, c: Conn) {
        if !c.ended && c.sender.is_ready() {
            self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(c);
        }
    }

    /// Idle connections now.
    pub fn idle(&self) -> usize {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Opens connections until `n` are idle, at most 256 at a time; the first
    /// error, if a connection could not be opened.
    pub async fn preconnect(&self, n: usize) -> Result<(), String> {
        while self.idle() < n {
            let batch = (n - self.idle()).min(256);
            let opened = futures_util::future::join_all((0..batch).map(|_| self.connect())).await;
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            for c in opened {
                idle.push(c.map_err(|e| e.detail)?);
            }
        }
        Ok(())
    }
}

/// `fut`, with the connection's driver polled before it in the same task, so the
/// socket's work is done where its result is awaited. `None` when the connection
/// ended with `fut` still pending: nothing more can arrive on it, and the pending
/// request's callback is only cancelled when the driver is dropped, which it is not
/// while we hold it (waiting would hang until the request timeout).
pub(crate) async fn drive<F: Future>(
    driver: &mut Driver,
    ended: &mut bool,
    fut: F,
) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        poll_driver(driver, ended, cx);
        match fut.as_mut().poll(cx) {
            Poll::Ready(v) => Poll::Ready(Some(v)),
            Poll::Pending if *ended => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Polls the driver unless it has ended; an ended (closed or failed) connection
/// shows to the request as the end or error of its response.
fn poll_driver(driver: &mut Driver, ended: &mut bool, cx: &mut Context<'_>) {
    if !*ended && Pin::new(driver).poll(cx).is_ready() {
        *ended = true;
    }
}

/// A response body whose connection is driven by whoever reads it: data frames as
/// a stream of bytes (trailers are skipped).
pub(crate) struct Driven<'a> {
    pub driver: &'a mut Driver,
    pub ended: &'a mut bool,
    pub body: Incoming,
}

impl Stream for Driven<'_> {
    type Item = Result<Bytes, hyper::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        poll_driver(this.driver, this.ended, cx);
        loop {
            return match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => Poll::Ready(Some(Ok(data))),
                    Err(_) => continue,
                },
                Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => Poll::Ready(None),
                // The connection has ended: no more of the body can arrive (see
                // [`drive`]); the body's end shows as a response cut short.
                Poll::Pending if *this.ended => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_urls_get_a_pool() {
        let p = Pool::for_url("http://127.0.0.1:8000/v1/completions").unwrap();
        assert_eq!(
            (p.addr.as_str(), p.path.as_str()),
            ("127.0.0.1:8000", "/v1/completions")
        );
        let p = Pool::for_url("http://example.com/v1/chat/completions").unwrap();
        assert_eq!(p.addr, "example.com:80");
        let p = Pool::for_url("http://[::1]:9000/x?y=1").unwrap();
        assert_eq!((p.addr.as_str(), p.path.as_str()), ("[::1]:9000", "/x?y=1"));
        assert_eq!(Pool::for_url("http://[::1]/x").unwrap().addr, "[::1]:80");
        assert!(Pool::for_url("https://example.com/v1/completions").is_none());
        assert!(Pool::for_url("http://user:pw@example.com/").is_none());
        assert!(Pool::for_url("http:///x").is_none());
    }
}
