//! Reads that carry the kernel's receive time: a TCP socket asked for
//! `SO_TIMESTAMPNS` and read with `recvmsg` gives, with each read, the time the
//! last segment it took reached the socket (`CLOCK_REALTIME`), here converted to
//! `CLOCK_MONOTONIC` ns ([`crate::clock::monotonic_ns`]'s clock). The simulator
//! starts a request's clock at it (`server::arrival`); goodput's client stamps
//! response chunks with it. One time per read: a read that takes several segments
//! carries the last one's.
//!
//! Not one time per segment either: Linux coalesces a segment into the one before
//! it in the receive queue while the reader has not taken it, and keeps the later
//! one's time (`tcp_try_coalesce`), so bytes that waited behind a busy reader come
//! out with their last segment's time however few are read at once. What a read
//! can say is whether it left bytes queued ([`Reader::left_queued`], the kernel's
//! `TCP_INQ` count returned with the read): then what it took arrived no later
//! than its time, and possibly earlier.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use nix::sys::socket::{self, sockopt, ControlMessageOwned, MsgFlags};
use nix::sys::time::TimeSpec;
use tokio::io::{Interest, ReadBuf};
use tokio::net::TcpStream;

use crate::clock::monotonic_ns;

/// A kernel timestamp older than this at read time is not believed (the wall
/// clock was stepped in between); the read keeps its read time.
pub const MAX_AGE: Duration = Duration::from_secs(10);

/// Asks the kernel for receive timestamps on `socket` (a listener's accepted
/// sockets inherit it), and for the bytes each read leaves queued (`TCP_INQ`);
/// `false` if it refuses timestamps (reads then carry no time).
pub fn enable(socket: &impl AsFd) -> bool {
    let _ = socket::setsockopt(socket, TcpInq, &true);
    socket::setsockopt(socket, sockopt::ReceiveTimestampns, &true).is_ok()
}

/// `TCP_INQ` (Linux 4.18): every `recvmsg` returns, as a control message, how many
/// bytes are still queued after it. nix has no wrapper.
#[derive(Clone, Copy, Debug)]
struct TcpInq;

impl socket::SetSockOpt for TcpInq {
    type Val = bool;

    fn set<F: AsFd>(&self, fd: &F, val: &bool) -> nix::Result<()> {
        let on: libc::c_int = (*val).into();
        // SAFETY: a valid descriptor, and a pointer to a live c_int with its size.
        let r = unsafe {
            libc::setsockopt(
                fd.as_fd().as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INQ,
                std::ptr::from_ref(&on).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        nix::errno::Errno::result(r).map(drop)
    }
}

/// CLOCK_MONOTONIC ns of a `CLOCK_REALTIME` kernel timestamp, read against both
/// clocks now; `None` if it is in the future or older than [`MAX_AGE`].
pub fn monotonic_of(real: TimeSpec) -> Option<u64> {
    let now_real = nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME).ok()?;
    let now_mono = monotonic_ns();
    let age = Duration::from(now_real).checked_sub(Duration::from(real))?;
    (age <= MAX_AGE).then(|| now_mono.saturating_sub(age.as_nanos() as u64))
}

/// Reads of one socket with their receive times (room for the control message).
#[derive(Debug)]
pub struct Reader {
    cmsg: Vec<u8>,
    /// The latest read left bytes in the socket (the kernel's `TCP_INQ` count).
    queued: bool,
    /// The most a read asks for: zeroing a caller's whole spare buffer before
    /// every read can cost more than the read.
    max_read: usize,
}

impl Reader {
    /// A reader whose reads ask for at most `max_read` bytes.
    pub fn new(max_read: usize) -> Reader {
        Reader {
            cmsg: nix::cmsg_space!(TimeSpec, libc::c_int),
            queued: false,
            max_read: max_read.max(1),
        }
    }

    /// Whether the latest read left bytes in the socket: more had arrived than it
    /// took (the reader was behind), so its time is the latest segment's, an upper
    /// bound on when the bytes it took arrived. `false` where the kernel does not
    /// say.
    pub fn left_queued(&self) -> bool {
        self.queued
    }

    /// One `recvmsg` into `buf`: bytes read, the receive time if the kernel gave
    /// one, and whether bytes are left queued.
    fn recv(&mut self, tcp: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Option<u64>, bool)> {
        let fd = tcp.as_raw_fd();
        let cmsg = &mut self.cmsg;
        tcp.try_io(Interest::READABLE, || {
            let mut iov = [io::IoSliceMut::new(buf)];
            let msg = socket::recvmsg::<()>(fd, &mut iov, Some(cmsg), MsgFlags::empty())?;
            let mut stamp = None;
            let mut queued = false;
            if let Ok(cmsgs) = msg.cmsgs() {
                for c in cmsgs {
                    match c {
                        ControlMessageOwned::ScmTimestampns(ts) => stamp = monotonic_of(ts),
                        ControlMessageOwned::Unknown(u)
                            if u.cmsg_header.cmsg_level == libc::IPPROTO_TCP
                                && u.cmsg_header.cmsg_type == libc::TCP_CM_INQ =>
                        {
                            queued = u.data_bytes.iter().any(|&b| b != 0);
                        }
                        _ => {}
                    }
                }
            }
            Ok((msg.bytes, stamp, queued))
        })
    }

    /// `AsyncRead::poll_read` of `tcp` through `recvmsg`: when bytes were read,
    /// their receive time (the read time when the kernel gave none); `None` at the
    /// end of the stream.
    pub fn poll_read(
        &mut self,
        tcp: &TcpStream,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<Option<u64>>> {
        loop {
            ready!(tcp.poll_read_ready(cx))?;
            let n = buf.remaining().min(self.max_read);
            let unfilled = buf.initialize_unfilled_to(n);
            match self.recv(tcp, unfilled) {
                Ok((n, stamp, queued)) => {
                    buf.advance(n);
                    self.queued = queued;
                    let at = (n > 0).then(|| stamp.unwrap_or_else(monotonic_ns));
                    return Poll::Ready(Ok(at));
                }
                // Not readable after all: `try_io` cleared the readiness; wait again.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_or_future_timestamps_are_not_believed() {
        let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME).unwrap();
        let ago = TimeSpec::from(Duration::from(now) - Duration::from_millis(5));
        let mono = monotonic_of(ago).unwrap();
        let age = monotonic_ns() - mono;
        assert!((5_000_000..1_000_000_000).contains(&age), "{age}");
        let future = TimeSpec::from(Duration::from(now) + Duration::from_secs(60));
        assert_eq!(monotonic_of(future), None);
        let stale = TimeSpec::from(Duration::from(now) - Duration::from_secs(60));
        assert_eq!(monotonic_of(stale), None);
    }
}
