//! The transport of `http://` targets: HTTP/1.1 connections of our own
//! (`h1.rs`'s framing over a `StampedTcp`), each used by one request at a
//! time, inside that request's task.
//!
//! A pooled client (reqwest, hyper-util's pool) runs every connection in a task of
//! its own and hands body chunks to the request's task through a channel: two task
//! wake-ups per chunk, and buffers per connection that an idle stream keeps. Here
//! the request's task reads its socket itself: a chunk read from the socket is in
//! the request's hands in the same poll, and a read lands in a buffer on that
//! poll's stack, of which only the bytes read are kept until the body's reader
//! takes them (`Conn::rest`). Owning the connections also lets a trial open them
//! before it starts ([`Pool::preconnect`]), and a request that did need a new one
//! knows how long it took (the record's `connect`).
//!
//! The pool keeps idle connections only; a connection is in the pool or in the
//! hands of exactly one request, so the pool never holds more connections than the
//! most requests ever in flight at once. A connection the server closed while idle
//! is noticed when it is taken (a peek at its socket) and dropped.

use std::io::{self, IoSlice};
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use futures_util::Stream;
use reqwest::header::HeaderMap;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::h1::{self, BodyError, Decoder, Head, HeadError};
use super::stamped::{stamped, StampedTcp, Stamps};

/// Bytes one read may take, into a buffer on the stack of the poll that reads. An
/// SSE chunk is a few hundred bytes, and a burst that does not fit is read by the
/// next read of the same poll, so what is measured does not change (each chunk's
/// arrival time is its read's kernel receive time, [`super::stamped`]).
pub(crate) const READ_BUF_BYTES: usize = 2048;

/// One HTTP/1.1 connection.
pub(crate) struct Conn {
    io: StampedTcp,
    /// The kernel's receive time of what the connection read last, and when its
    /// latest request's first write began.
    pub stamps: Stamps,
    /// Bytes read and not yet taken (the rest of the latest read; empty, holding
    /// nothing, while a stream waits).
    rest: Bytes,
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

/// Why a request got no response head.
#[derive(Debug)]
pub(crate) enum Exchange {
    /// The connection closed or failed before any byte of a response arrived
    /// (writing included): the request did not reach an engine that answers, and
    /// may be sent again on a fresh connection.
    Unanswered(io::Error),
    /// The connection closed or failed after part of a head arrived.
    Broken(String),
    /// The head is past a bound, or not HTTP.
    Head(HeadError),
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
        f.debug_struct("Conn")
            .field("rest", &self.rest.len())
            .finish()
    }
}

impl Pool {
    /// A pool for `url` when it is `http://host[:port]/path` (`https` goes through
    /// reqwest, which brings TLS); `None` otherwise.
    /// A fragment (`#...`) is not sent; a URL with white space or a control
    /// character is left to reqwest, which refuses it.
    pub fn for_url(url: &str) -> Option<Pool> {
        let url = url.split('#').next().unwrap_or(url);
        if url
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return None;
        }
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

    /// Opens a connection (TCP with `TCP_NODELAY` and kernel receive timestamps;
    /// HTTP/1.1 needs no set-up).
    pub(crate) async fn connect(&self) -> Result<Conn, ConnectError> {
        let tcp = TcpStream::connect(&self.addr)
            .await
            .map_err(|e| ConnectError {
                out_of_files: super::out_of_files(&e),
                detail: format!("cannot connect to {}: {e}", self.addr),
            })?;
        let _ = tcp.set_nodelay(true);
        let (io, stamps) = stamped(tcp);
        Ok(Conn {
            io,
            stamps,
            rest: Bytes::new(),
        })
    }

    /// An idle connection that is still open, if any.
    pub(crate) fn checkout(&self) -> Option<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(c) = idle.pop() {
            if c.idle_and_open() {
                return Some(c);
            }
        }
        None
    }

    /// Gives back a connection whose exchange ended cleanly.
    pub(crate) fn checkin(&self, c: Conn) {
        if c.rest.is_empty() {
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
            let batch = n.saturating_sub(self.idle()).min(256);
            let opened = futures_util::future::join_all((0..batch).map(|_| self.connect())).await;
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            for c in opened {
                idle.push(c.map_err(|e| e.detail)?);
            }
        }
        Ok(())
    }
}

impl Conn {
    /// Nothing has arrived on the idle connection: not its close (the server
    /// closed it while idle, as llama.cpp does after a few requests), not a stray
    /// byte. One non-blocking peek at the socket.
    fn idle_and_open(&self) -> bool {
        let mut byte = [0u8; 1];
        let flags = nix::sys::socket::MsgFlags::MSG_PEEK | nix::sys::socket::MsgFlags::MSG_DONTWAIT;
        matches!(
            nix::sys::socket::recv(self.io.tcp().as_raw_fd(), &mut byte, flags),
            Err(nix::errno::Errno::EAGAIN)
        )
    }

    /// Sends a `POST` of `body` to `path` with `headers`, then reads the
    /// response's head (interim 1xx heads skipped). The head's bytes are made
    /// before the request is stamped as sent ([`Stamps::expect_send`] is the
    /// caller's), written with the body in one vectored write where the kernel
    /// takes it, and dropped once written.
    ///
    /// A write that fails may have met a server that answered before it read the
    /// whole request (a 413 for a body too large, a 401) and closed: what it sent
    /// is read, and is the answer; with nothing to read, the request went
    /// unanswered.
    pub(crate) async fn exchange(&mut self, head: Vec<u8>, body: &Bytes) -> Result<Head, Exchange> {
        let written = self.write_all(&head, body).await;
        drop(head);
        // An interim (1xx) head was read: the server has answered.
        let mut interim = false;
        loop {
            let read = self.read_head().await;
            let (h, took) = match (read, &written) {
                (Ok(parsed), _) => parsed,
                (Err(Exchange::Unanswered(_)), _) if interim => {
                    return Err(Exchange::Broken(
                        "the connection closed after an interim response".into(),
                    ))
                }
                // Nothing came back after the failed write: the write's error.
                (Err(Exchange::Unanswered(_)), Err(e)) => {
                    return Err(Exchange::Unanswered(io::Error::new(
                        e.kind(),
                        e.to_string(),
                    )))
                }
                (Err(e), _) => return Err(e),
            };
            self.rest = self.rest.slice(took..);
            self.let_go_if_empty();
            if !h.status.is_informational() {
                return Ok(h);
            }
            interim = true;
        }
    }

    /// Writes `head` then `body`, vectored.
    async fn write_all(&mut self, head: &[u8], body: &[u8]) -> io::Result<()> {
        let mut done = 0;
        let total = head.len() + body.len();
        std::future::poll_fn(|cx| {
            while done < total {
                let bufs = if done < head.len() {
                    [IoSlice::new(&head[done..]), IoSlice::new(body)]
                } else {
                    [IoSlice::new(&body[done - head.len()..]), IoSlice::new(&[])]
                };
                let n = ready!(Pin::new(&mut self.io).poll_write_vectored(cx, &bufs))?;
                if n == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                done += n;
            }
            Poll::Ready(Ok(()))
        })
        .await
    }

    /// Reads until [`Conn::rest`] starts with a whole response head; the head and
    /// the bytes it took.
    async fn read_head(&mut self) -> Result<(Head, usize), Exchange> {
        let mut answered = !self.rest.is_empty();
        loop {
            if !self.rest.is_empty() {
                if let Some(parsed) = h1::parse_head(&self.rest).map_err(Exchange::Head)? {
                    return Ok(parsed);
                }
            }
            let read = std::future::poll_fn(|cx| self.poll_read_more(cx)).await;
            match read {
                Ok(true) => answered = true,
                Ok(false) if answered => {
                    return Err(Exchange::Broken(
                        "the connection closed in the middle of the response's head".into(),
                    ))
                }
                Ok(false) => {
                    return Err(Exchange::Unanswered(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the connection closed before a response",
                    )))
                }
                Err(e) if answered => {
                    return Err(Exchange::Broken(format!(
                        "the connection failed in the middle of the response's head: {e}"
                    )))
                }
                Err(e) => return Err(Exchange::Unanswered(e)),
            }
        }
    }

    /// An empty [`Conn::rest`] that is still a slice of its read's bytes keeps
    /// them alive: let them go.
    fn let_go_if_empty(&mut self) {
        if self.rest.is_empty() {
            self.rest = Bytes::new();
        }
    }

    /// One read, its bytes added to [`Conn::rest`]: `false` at the end of the
    /// stream. The read lands in a buffer on this poll's stack; only what it
    /// brought is kept.
    fn poll_read_more(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        let mut stack = [MaybeUninit::<u8>::uninit(); READ_BUF_BYTES];
        let mut buf = ReadBuf::uninit(&mut stack);
        ready!(Pin::new(&mut self.io).poll_read(cx, &mut buf))?;
        let got = buf.filled();
        if got.is_empty() {
            return Poll::Ready(Ok(false));
        }
        self.rest = if self.rest.is_empty() {
            Bytes::copy_from_slice(got)
        } else {
            let mut joined = Vec::with_capacity(self.rest.len() + got.len());
            joined.extend_from_slice(&self.rest);
            joined.extend_from_slice(got);
            Bytes::from(joined)
        };
        Poll::Ready(Ok(true))
    }
}

/// A response body read from its connection by whoever reads it: its data, a
/// piece per HTTP chunk (or per read, for a body framed by a length or the close),
/// as a stream of bytes; trailers are skipped.
pub(crate) struct Body<'a> {
    pub conn: &'a mut Conn,
    pub decoder: Decoder,
}

impl Body<'_> {
    /// The body has ended and nothing followed it: the connection can carry the
    /// next request.
    pub(crate) fn ended_cleanly(&self) -> bool {
        self.decoder == Decoder::Done && self.conn.rest.is_empty()
    }
}

impl Stream for Body<'_> {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.decoder == Decoder::Done {
                return Poll::Ready(None);
            }
            if !this.conn.rest.is_empty() {
                let step = this.decoder.decode(&mut this.conn.rest);
                this.conn.let_go_if_empty();
                match step {
                    Ok(Some(data)) if !data.is_empty() => return Poll::Ready(Some(Ok(data))),
                    Ok(_) => continue,
                    Err(e) => return Poll::Ready(Some(Err(e))),
                }
            }
            match ready!(this.conn.poll_read_more(cx)) {
                Ok(true) => {}
                Ok(false) => {
                    return Poll::Ready(match this.decoder.closed() {
                        Ok(()) => None,
                        Err(e) => Some(Err(e)),
                    })
                }
                Err(e) => return Poll::Ready(Some(Err(BodyError::Io(e)))),
            }
        }
    }
}

/// The head of a request to `pool`'s path with `headers` and a body of
/// `body_len` bytes.
pub(crate) fn request_head(pool: &Pool, headers: &HeaderMap, body_len: usize) -> Vec<u8> {
    h1::request_head(&pool.path, headers, body_len)
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
        let p = Pool::for_url("http://h:1/v1#frag").unwrap();
        assert_eq!((p.addr.as_str(), p.path.as_str()), ("h:1", "/v1"));
        assert_eq!(Pool::for_url("http://h#x").unwrap().addr, "h:80");
        assert!(Pool::for_url("http://h:1/v 1").is_none());
    }
}
