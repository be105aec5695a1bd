//! When a response's bytes arrived: the kernel's receive time of the last segment
//! each read returned (`SO_TIMESTAMPNS`), so that a chunk's time is when it reached
//! this machine, not when the client's thread got round to reading it.
//!
//! One client thread serving hundreds of streams reads them in turn: when many
//! chunks land at once (an engine's decode step ends for every stream together),
//! the stream read last would be stamped late by the time spent reading the others
//! first. That delay is the client's, not the server's, and it grows with the load
//! that is being measured. Here each connection reads with `recvmsg` and keeps the
//! kernel's receive time of what it read (converted to the records' monotonic
//! clock); [`super::events::read`] takes it for every chunk of that read, within the
//! bounds it can be believed (not before the request was sent or the previous
//! chunk, not after the read). Where the kernel gives none (another OS, a socket
//! option refused), a read keeps its read time, as before.
//!
//! The kernel keeps one time per read, that of the last segment the read took: a
//! read that finds several writes of the server waiting (a client behind by more
//! than a token's gap) gives all their chunks the last one's arrival, still no
//! later than the read. A read that finds one write, the usual case, is exact.

use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use nix::sys::socket::{self, sockopt, ControlMessageOwned, MsgFlags};
use nix::sys::time::TimeSpec;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

use crate::drive::record::now_ns;

/// A kernel timestamp older than this at read time is not believed (the wall
/// clock was stepped in between); the read keeps its read time.
const MAX_AGE: Duration = Duration::from_secs(10);

/// The receive time (the records' clock, ns) of the bytes a connection read last;
/// 0 before any. Shared between the connection's reader and the request reading
/// its response.
#[derive(Debug, Clone, Default)]
pub(crate) struct Received(Arc<AtomicU64>);

impl Received {
    /// The receive time of the latest read, if any read was stamped.
    pub(crate) fn latest(&self) -> Option<u64> {
        Some(self.0.load(Ordering::Relaxed)).filter(|&t| t != 0)
    }

    fn set(&self, ns: u64) {
        self.0.store(ns.max(1), Ordering::Relaxed);
    }
}

/// The records' clock (CLOCK_MONOTONIC ns) of a `CLOCK_REALTIME` kernel timestamp,
/// read against both clocks now; `None` if it is in the future or older than
/// [`MAX_AGE`].
fn monotonic_of(real: TimeSpec) -> Option<u64> {
    let now_real = nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME).ok()?;
    let now_mono = now_ns();
    let age = Duration::from(now_real).checked_sub(Duration::from(real))?;
    (age <= MAX_AGE).then(|| now_mono.saturating_sub(age.as_nanos() as u64))
}

/// A TCP connection that reads with `recvmsg` and keeps the receive time of what
/// it read in its [`Received`].
pub(crate) struct StampedTcp {
    tcp: TcpStream,
    received: Received,
    /// Room for one `SCM_TIMESTAMPNS` control message.
    cmsg: Vec<u8>,
}

impl StampedTcp {
    /// `tcp`, asking the kernel for receive timestamps (when it refuses, reads keep
    /// their read time).
    pub(crate) fn new(tcp: TcpStream) -> (StampedTcp, Received) {
        let _ = socket::setsockopt(&tcp, sockopt::ReceiveTimestampns, &true);
        let received = Received::default();
        let s = StampedTcp {
            tcp,
            received: received.clone(),
            cmsg: nix::cmsg_space!(TimeSpec),
        };
        (s, received)
    }

    /// One `recvmsg` into `buf`: the bytes read and their receive time, if the
    /// kernel gave one.
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        let fd = self.tcp.as_raw_fd();
        let cmsg = &mut self.cmsg;
        self.tcp.try_io(Interest::READABLE, || {
            let mut iov = [io::IoSliceMut::new(buf)];
            let msg = socket::recvmsg::<()>(fd, &mut iov, Some(cmsg), MsgFlags::empty())?;
            let mut stamp = None;
            if let Ok(cmsgs) = msg.cmsgs() {
                for c in cmsgs {
                    if let ControlMessageOwned::ScmTimestampns(ts) = c {
                        stamp = monotonic_of(ts);
                    }
                }
            }
            Ok((msg.bytes, stamp))
        })
    }
}

impl AsyncRead for StampedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            ready!(this.tcp.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match this.recv(unfilled) {
                Ok((n, stamp)) => {
                    if n > 0 {
                        this.received.set(stamp.unwrap_or_else(now_ns));
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                // Not readable after all: `try_io` cleared the readiness; wait again.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for StampedTcp {
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

/// The time of a chunk read at `now`: the kernel's receive time of its read when
/// it lies in `[floor, now]` (`floor`: the request's send time or the previous
/// chunk's time), else `now`.
pub(crate) fn chunk_time(received: Option<u64>, floor: u64, now: u64) -> u64 {
    match received {
        Some(k) if (floor..=now).contains(&k) => k,
        _ => now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn a_receive_time_is_believed_only_between_the_floor_and_the_read() {
        assert_eq!(chunk_time(Some(150), 100, 200), 150);
        assert_eq!(chunk_time(Some(100), 100, 200), 100);
        assert_eq!(
            chunk_time(Some(50), 100, 200),
            200,
            "before the send: stale"
        );
        assert_eq!(chunk_time(Some(250), 100, 200), 200, "after the read");
        assert_eq!(chunk_time(None, 100, 200), 200);
    }

    #[test]
    fn old_or_future_timestamps_are_not_believed() {
        let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME).unwrap();
        let future = now + TimeSpec::from_duration(Duration::from_secs(5));
        assert_eq!(monotonic_of(future), None);
        let old = now - TimeSpec::from_duration(MAX_AGE + Duration::from_secs(1));
        assert_eq!(monotonic_of(old), None);
        let recent = now - TimeSpec::from_duration(Duration::from_millis(30));
        let m = monotonic_of(recent).unwrap();
        let age = now_ns() - m;
        assert!(age >= 30_000_000, "{age}");
    }

    /// Bytes that wait in the socket while the reader is busy keep the time they
    /// arrived, not the time they were read.
    #[tokio::test]
    async fn a_late_read_keeps_the_arrival_time() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            s.write_all(b"data: first\n\n").await.unwrap();
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest).await;
        });
        let (mut stream, received) = StampedTcp::new(TcpStream::connect(addr).await.unwrap());
        // Wait until the bytes are there, then stay busy before reading them.
        stream.tcp.readable().await.unwrap();
        let arrived_by = now_ns();
        tokio::time::sleep(Duration::from_millis(60)).await;
        let mut buf = [0u8; 64];
        let n = stream.read(&mut buf).await.unwrap();
        let read_at = now_ns();
        assert_eq!(&buf[..n], b"data: first\n\n");
        let k = received.latest().expect("a stamped read");
        assert!(k <= arrived_by, "stamped {k}, arrived by {arrived_by}");
        assert!(
            read_at - k >= 50_000_000,
            "the stamp is the arrival ({} ms before the read)",
            (read_at - k) / 1_000_000
        );
        drop(stream);
        server.await.unwrap();
    }
}
