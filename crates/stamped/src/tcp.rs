//! [`StampedTcp`]: a TCP connection whose reads go through `recvmsg` and keep the
//! kernel's receive time, and whose writes pass through (timed when its
//! [`Observer`] asks). goodput's client and the simulator each give it an
//! observer of their own: the client keeps each read's time and number and when a
//! request's first write began; the simulator keeps a request's arrival, and lets
//! chunks that fell due go before a read.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::clock::monotonic_ns;
use crate::read::Reader;

/// What a [`StampedTcp`]'s owner keeps of its reads and writes. Times are
/// `CLOCK_MONOTONIC` ns ([`monotonic_ns`]).
pub trait Observer: Unpin {
    /// Whether writes are timed ([`Observer::wrote`] is called): one clock read
    /// per write.
    const TIMES_WRITES: bool = false;

    /// A read returned bytes that arrived at `at` (the kernel's receive time of
    /// the last segment read; the read's time where the kernel gave none).
    /// `queued`: the read left bytes in the socket, so what it took arrived no
    /// later than `at`, possibly earlier.
    fn received(&mut self, at: u64, queued: bool);

    /// A write that began at `began` handed bytes to the kernel (only when
    /// [`Observer::TIMES_WRITES`]).
    fn wrote(&mut self, began: u64) {
        let _ = began;
    }

    /// Asked before each read: `true` puts the read off to the task's next poll
    /// (the task is woken at once), so that other work goes first.
    fn defer_read(&mut self) -> bool {
        false
    }
}

/// A TCP connection that reads with `recvmsg` and tells its [`Observer`] the
/// receive time of what it read.
#[derive(Debug)]
pub struct StampedTcp<O> {
    tcp: TcpStream,
    reader: Reader,
    observer: O,
}

impl<O: Observer> StampedTcp<O> {
    /// `tcp`, asking the kernel for receive timestamps (when it refuses, reads
    /// keep their read time); each read asks for at most `max_read` bytes.
    pub fn new(tcp: TcpStream, max_read: usize, observer: O) -> StampedTcp<O> {
        crate::read::enable(&tcp);
        StampedTcp {
            tcp,
            reader: Reader::new(max_read),
            observer,
        }
    }

    /// What the connection's reads and writes were told to.
    pub fn observer(&self) -> &O {
        &self.observer
    }

    /// The socket.
    pub fn tcp(&self) -> &TcpStream {
        &self.tcp
    }
}

impl<O: Observer> AsyncRead for StampedTcp<O> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.observer.defer_read() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if let Some(at) = ready!(this.reader.poll_read(&this.tcp, cx, buf))? {
            this.observer.received(at, this.reader.left_queued());
        }
        Poll::Ready(Ok(()))
    }
}

impl<O: Observer> StampedTcp<O> {
    /// A write through `write`, its start told to the observer when it handed
    /// bytes to the kernel.
    fn timed(
        &mut self,
        write: impl FnOnce(Pin<&mut TcpStream>) -> Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        if !O::TIMES_WRITES {
            return write(Pin::new(&mut self.tcp));
        }
        let began = monotonic_ns();
        let r = write(Pin::new(&mut self.tcp));
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.observer.wrote(began);
        }
        r
    }
}

impl<O: Observer> AsyncWrite for StampedTcp<O> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().timed(|tcp| tcp.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .timed(|tcp| tcp.poll_write_vectored(cx, bufs))
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
    use std::io::{Read, Write};
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Every read and write told, in order.
    #[derive(Debug, Default)]
    struct Log {
        reads: Vec<(u64, bool)>,
        writes: Vec<u64>,
    }

    impl Observer for Log {
        const TIMES_WRITES: bool = true;
        fn received(&mut self, at: u64, queued: bool) {
            self.reads.push((at, queued));
        }
        fn wrote(&mut self, began: u64) {
            self.writes.push(began);
        }
    }

    /// A connected pair: the peer a plain std socket on a thread of its own.
    async fn pair(
        peer: impl FnOnce(std::net::TcpStream) + Send + 'static,
    ) -> (StampedTcp<Log>, std::thread::JoinHandle<()>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = std::thread::spawn(move || peer(listener.accept().unwrap().0));
        let tcp = TcpStream::connect(addr).await.unwrap();
        (StampedTcp::new(tcp, 16, Log::default()), peer)
    }

    /// Bytes that wait in the socket while the reader is busy keep the time they
    /// arrived, not the time they were read; a read that takes part of what waits
    /// says so (`queued`), and the one that empties the socket does not.
    #[tokio::test]
    async fn a_late_read_keeps_the_arrival_time_and_says_what_it_left() {
        let (go, went) = std::sync::mpsc::channel::<()>();
        let (wrote, written) = std::sync::mpsc::channel::<()>();
        let (mut conn, peer) = pair(move |mut s| {
            s.write_all(b"warm").unwrap();
            went.recv().unwrap();
            s.write_all(&[b'x'; 40]).unwrap();
            wrote.send(()).unwrap();
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest);
        })
        .await;
        // The kernel turns receive timestamps on a moment after they are first
        // asked for (a deferred static key): one exchange first, then a pause.
        let mut buf = [0u8; 64];
        let n = conn.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"warm");
        tokio::time::sleep(Duration::from_millis(50)).await;
        go.send(()).unwrap();
        written.recv().unwrap();
        let arrived_by = monotonic_ns();
        std::thread::sleep(Duration::from_millis(60));
        let mut got = Vec::new();
        while got.len() < 40 {
            let n = conn.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
        }
        let read_at = monotonic_ns();
        assert_eq!(got, [b'x'; 40]);
        // 40 bytes in reads of at most 16: 16, 16, 8.
        let reads = &conn.observer().reads[1..];
        assert_eq!(reads.len(), 3, "{reads:?}");
        let queued: Vec<bool> = reads.iter().map(|r| r.1).collect();
        let timestamps =
            socket::getsockopt(conn.tcp(), sockopt::ReceiveTimestampns).unwrap_or(false);
        if timestamps {
            assert_eq!(queued, [true, true, false]);
            for &(at, _) in reads {
                assert!(at <= arrived_by, "stamped {at}, arrived by {arrived_by}");
                assert!(read_at - at >= 50_000_000, "the stamp is the arrival");
            }
        }
        drop(conn);
        peer.join().unwrap();
    }

    /// A write is timed from when it began, each write once.
    #[tokio::test]
    async fn writes_are_timed_when_the_observer_asks() {
        let (mut conn, peer) = pair(|mut s| {
            let mut all = Vec::new();
            let _ = s.read_to_end(&mut all);
            assert_eq!(all, b"onetwo");
        })
        .await;
        let before = monotonic_ns();
        conn.write_all(b"one").await.unwrap();
        let after = monotonic_ns();
        conn.write_all(b"two").await.unwrap();
        let w = &conn.observer().writes;
        assert_eq!(w.len(), 2);
        assert!(
            (before..=after).contains(&w[0]),
            "{before} <= {} <= {after}",
            w[0]
        );
        conn.shutdown().await.unwrap();
        drop(conn);
        peer.join().unwrap();
    }

    /// An observer that defers a read gets it on a later poll, with nothing lost.
    #[tokio::test]
    async fn a_deferred_read_is_read_on_a_later_poll() {
        #[derive(Default)]
        struct Defer(u32, u32);
        impl Observer for Defer {
            fn received(&mut self, _: u64, _: bool) {
                self.1 += 1;
            }
            fn defer_read(&mut self) -> bool {
                self.0 += 1;
                self.0 <= 3
            }
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(b"hello").unwrap();
        });
        let tcp = TcpStream::connect(addr).await.unwrap();
        let mut conn = StampedTcp::new(tcp, 64, Defer::default());
        let mut buf = Vec::new();
        conn.read_to_end(&mut buf).await.unwrap();
        assert_eq!(buf, b"hello");
        assert!(conn.observer().0 > 3 && conn.observer().1 == 1);
        peer.join().unwrap();
    }

    use nix::sys::socket::{self, sockopt};
}
