//! When a request arrived: the kernel's receive time of its last bytes, so that
//! its clock (TTFT, the model's arrival) starts then, not when the simulator's
//! thread got round to reading it.
//!
//! On one busy core the connection task that reads a request waits behind every
//! chunk due before it: at the end of a wave of streams that is hundreds of
//! writes, and a client that sends its next request sooner lands inside that
//! burst. Stamping at handler time made the schedule depend on the client (issue
//! #32). Here the listening socket asks for `SO_TIMESTAMPNS` (accepted sockets
//! inherit it), every read of a connection goes through `recvmsg` and keeps the
//! receive time of the last segment read, and the handlers take that time
//! through [`ConnectInfo<Arrival>`](axum::extract::ConnectInfo). Without a
//! kernel timestamp (another listener, `app` served by a test) the read time is
//! kept; without a stamped connection at all, the handler's time.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::clock::monotonic_ns;
use crate::stamped;

/// The most one read takes (a longer request takes more reads; each keeps the
/// receive time of its last segment).
const READ_AT_ONCE: usize = 4096;

/// The arrival time of a connection's latest request: CLOCK_MONOTONIC ns of the
/// last bytes read (0: nothing read yet). Shared by the connection's reader and
/// its handlers.
#[derive(Debug, Clone, Default)]
pub struct Arrival(Arc<AtomicU64>);

impl Arrival {
    /// When the bytes read last arrived; `now` if nothing was stamped.
    pub fn instant(&self, now: Instant) -> Instant {
        let ns = self.0.load(Ordering::Relaxed);
        if ns == 0 {
            return now;
        }
        let age = monotonic_ns().saturating_sub(ns);
        now.checked_sub(Duration::from_nanos(age)).unwrap_or(now)
    }

    fn set(&self, ns: u64) {
        self.0.store(ns.max(1), Ordering::Relaxed);
    }
}

/// A listener whose connections stamp what they read ([`StampedStream`]), with
/// `TCP_NODELAY` (streaming latency: Nagle must not hold back a small chunk).
pub struct StampedListener {
    inner: TcpListener,
}

impl StampedListener {
    /// Asks the kernel for receive timestamps on `inner` (inherited by every
    /// accepted socket); if it refuses, reads are stamped with the read time.
    pub fn new(inner: TcpListener) -> StampedListener {
        stamped::enable(&inner);
        StampedListener { inner }
    }
}

impl Listener for StampedListener {
    type Io = StampedStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (StampedStream, std::net::SocketAddr) {
        let (tcp, addr) = Listener::accept(&mut self.inner).await;
        let _ = tcp.set_nodelay(true);
        // Inherited from the listener on Linux; set again in case it was not.
        stamped::enable(&tcp);
        let stream = StampedStream {
            tcp,
            arrival: Arrival::default(),
            reader: stamped::Reader::new(READ_AT_ONCE),
        };
        (stream, addr)
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.inner.local_addr()
    }
}

impl Connected<IncomingStream<'_, StampedListener>> for Arrival {
    fn connect_info(stream: IncomingStream<'_, StampedListener>) -> Arrival {
        stream.io().arrival.clone()
    }
}

/// A TCP connection that reads with `recvmsg` and keeps the receive time of
/// the last segment read in its [`Arrival`].
pub struct StampedStream {
    tcp: TcpStream,
    arrival: Arrival,
    reader: stamped::Reader,
}

impl AsyncRead for StampedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // Chunks that fell due go first: this read's request has its arrival
        // stamp from the kernel, so parsing it a moment later moves nothing.
        if super::timer::wake_due() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if let Some(at) = ready!(this.reader.poll_read(&this.tcp, cx, buf))? {
            this.arrival.set(at);
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for StampedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::socket::{self, sockopt};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Bytes that waited in the socket while the reader was busy keep their
    /// arrival time, not the time they were read.
    #[tokio::test]
    async fn a_late_read_keeps_the_arrival_time() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut listener = StampedListener::new(listener);
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (mut server, _) = Listener::accept(&mut listener).await;
        let arrival = server.arrival.clone();
        let now = Instant::now();
        assert_eq!(arrival.instant(now), now, "nothing read yet");
        // The kernel turns receive timestamps on a moment after they are first
        // asked for (a deferred static key), so the measured exchange waits.
        client.write_all(b"warm").await.unwrap();
        let mut buf = [0u8; 64];
        let _ = server.read(&mut buf).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let before = Instant::now();
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let sent = Instant::now();
        // The reader is busy for 30 ms.
        std::thread::sleep(Duration::from_millis(30));
        let n = server.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"GET / HTTP/1.1\r\n\r\n");
        let read_at = Instant::now();
        let at = arrival.instant(read_at);
        assert!(at <= read_at);
        // With kernel timestamps the arrival is the send, 30 ms before the read;
        // without them (a kernel that refuses), the read time.
        let timestamps = socket::getsockopt(&server.tcp, sockopt::ReceiveTimestampns).unwrap();
        if timestamps {
            assert!(at >= before, "{:?} before the send", before - at);
            assert!(
                at.duration_since(sent) < Duration::from_millis(10),
                "stamped {:?} after the send",
                at.duration_since(sent)
            );
        } else {
            assert!(at >= sent + Duration::from_millis(30));
        }
        // Writes pass through.
        server.write_all(b"ok").await.unwrap();
        let n = client.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"ok");
    }
}
