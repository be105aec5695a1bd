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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use goodput_stamped::{monotonic_ns, Observer, StampedTcp};
use tokio::net::TcpListener;

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
}

impl Observer for Arrival {
    fn received(&mut self, at: u64, _queued: bool) {
        self.0.store(at.max(1), Ordering::Relaxed);
    }

    /// Chunks that fell due go first: this read's request has its arrival stamp
    /// from the kernel, so parsing it a moment later moves nothing.
    fn defer_read(&mut self) -> bool {
        super::timer::wake_due()
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
        goodput_stamped::enable(&inner);
        StampedListener { inner }
    }
}

/// A TCP connection that reads with `recvmsg` and keeps the receive time of the
/// last segment read in its [`Arrival`].
pub type StampedStream = StampedTcp<Arrival>;

impl Listener for StampedListener {
    type Io = StampedStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (StampedStream, std::net::SocketAddr) {
        let (tcp, addr) = Listener::accept(&mut self.inner).await;
        let _ = tcp.set_nodelay(true);
        // Timestamps are inherited from the listener on Linux; `new` asks again in
        // case they were not.
        (StampedTcp::new(tcp, READ_AT_ONCE, Arrival::default()), addr)
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.inner.local_addr()
    }
}

impl Connected<IncomingStream<'_, StampedListener>> for Arrival {
    fn connect_info(stream: IncomingStream<'_, StampedListener>) -> Arrival {
        stream.io().observer().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::socket::{self, sockopt};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// Bytes that waited in the socket while the reader was busy keep their
    /// arrival time, not the time they were read.
    #[tokio::test]
    async fn a_late_read_keeps_the_arrival_time() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut listener = StampedListener::new(listener);
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (mut server, _) = Listener::accept(&mut listener).await;
        let arrival = server.observer().clone();
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
        let timestamps = socket::getsockopt(server.tcp(), sockopt::ReceiveTimestampns).unwrap();
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
