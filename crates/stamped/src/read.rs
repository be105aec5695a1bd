//! One `recvmsg` of a TCP socket and the control messages it returns: the
//! kernel's receive time of the last segment read (`SCM_TIMESTAMPNS`) and the
//! bytes still queued after it (`TCP_CM_INQ`). The control messages land in a
//! buffer inside the [`Reader`] and are walked with `CMSG_FIRSTHDR` /
//! `CMSG_NXTHDR`: a read allocates nothing (nix's iterator turned the `TCP_INQ`
//! message, which it has no variant for, into a `Vec` on every read).

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use nix::sys::socket::{self, sockopt};
use tokio::io::{Interest, ReadBuf};
use tokio::net::TcpStream;

use crate::clock::monotonic_ns;

/// A kernel timestamp older than this at read time is not believed (the wall
/// clock was stepped in between); the read keeps its read time.
const MAX_AGE: Duration = Duration::from_secs(10);

/// Asks the kernel for receive timestamps on `socket` (a listener's accepted
/// sockets inherit it), and for the bytes each read leaves queued (`TCP_INQ`,
/// Linux 4.18); `false` if it refuses timestamps (reads then carry their read
/// time).
pub fn enable(socket: &impl AsFd) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: a valid descriptor, and a pointer to a live c_int with its size. nix
    // has no `TCP_INQ` option; a kernel without it refuses, and reads then say
    // nothing of what is queued.
    let _ = unsafe {
        libc::setsockopt(
            socket.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INQ,
            std::ptr::from_ref(&on).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    socket::setsockopt(socket, sockopt::ReceiveTimestampns, &true).is_ok()
}

/// `CLOCK_MONOTONIC` ns of a `CLOCK_REALTIME` kernel timestamp, read against both
/// clocks now; `None` if it is in the future, older than [`MAX_AGE`], or not a
/// time at all.
fn monotonic_of(real: &libc::timespec) -> Option<u64> {
    let real = Duration::from_secs(u64::try_from(real.tv_sec).ok()?)
        .checked_add(Duration::from_nanos(u64::try_from(real.tv_nsec).ok()?))?;
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME).ok()?;
    let now_mono = monotonic_ns();
    let age = Duration::from(now).checked_sub(real)?;
    (age <= MAX_AGE).then(|| now_mono.saturating_sub(age.as_nanos() as u64))
}

/// Room for the control messages of one read: `CMSG_SPACE(timespec)` (32 bytes
/// on 64-bit Linux) and `CMSG_SPACE(int)` (24), in `u64`s for `cmsghdr`'s
/// alignment. A message that did not fit is cut by the kernel (`MSG_CTRUNC`)
/// and only what fitted is read.
const CONTROL_WORDS: usize = 8;

/// Reads of one socket with their receive times.
#[derive(Debug)]
pub(crate) struct Reader {
    control: [u64; CONTROL_WORDS],
    /// The latest read left bytes in the socket (the kernel's `TCP_INQ` count).
    queued: bool,
    /// The most a read asks for: zeroing a caller's whole spare buffer before
    /// every read can cost more than the read.
    max_read: usize,
}

/// What one read returned beside its bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Control {
    /// The receive time of the last segment read, on `CLOCK_MONOTONIC`.
    stamp: Option<u64>,
    /// Bytes were left in the socket.
    queued: bool,
}

impl Reader {
    /// A reader whose reads ask for at most `max_read` bytes.
    pub(crate) fn new(max_read: usize) -> Reader {
        Reader {
            control: [0; CONTROL_WORDS],
            queued: false,
            max_read: max_read.max(1),
        }
    }

    /// Whether the latest read left bytes in the socket: more had arrived than it
    /// took (the reader was behind), so its time is the latest segment's, an upper
    /// bound on when the bytes it took arrived. `false` where the kernel does not
    /// say.
    pub(crate) fn left_queued(&self) -> bool {
        self.queued
    }

    /// One `recvmsg` into `buf`: bytes read, and what came with them.
    fn recv(&mut self, tcp: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Control)> {
        let fd = tcp.as_raw_fd();
        let control = &mut self.control;
        tcp.try_io(Interest::READABLE, || {
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            // SAFETY: an all-zero msghdr is a valid value (no name, no buffers).
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(control) as _;
            // SAFETY: `msg` points at one live iovec over `buf` and at the control
            // buffer, each with its length; both outlive the call.
            let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok((n as usize, parse_control(&msg)))
        })
    }

    /// `AsyncRead::poll_read` of `tcp` through `recvmsg`: when bytes were read,
    /// their receive time (the read time when the kernel gave none); `None` at the
    /// end of the stream.
    pub(crate) fn poll_read(
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
                Ok((n, control)) => {
                    buf.advance(n);
                    self.queued = control.queued;
                    let at = (n > 0).then(|| control.stamp.unwrap_or_else(monotonic_ns));
                    return Poll::Ready(Ok(at));
                }
                // Not readable after all: `try_io` cleared the readiness; wait again.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// The receive time and the queued count among the control messages `recvmsg`
/// left in `msg`'s control buffer; other messages are skipped.
// The lengths are `size_t` with glibc and `socklen_t` with musl: cast either way.
#[allow(clippy::unnecessary_cast)]
fn parse_control(msg: &libc::msghdr) -> Control {
    let mut out = Control::default();
    // SAFETY: `msg` is the header `recvmsg` filled: `msg_control` points at a
    // buffer aligned for `cmsghdr` and `msg_controllen` is what the kernel wrote
    // into it, so the macros return a header inside it or null.
    let mut c = unsafe { libc::CMSG_FIRSTHDR(msg) };
    let end = (msg.msg_control as usize).saturating_add(msg.msg_controllen as usize);
    while !c.is_null() {
        // SAFETY: a header inside the buffer (CMSG_FIRSTHDR/NXTHDR checked its
        // room), aligned as the buffer is.
        let h = unsafe { &*c };
        // A message that runs past what the kernel wrote (cut by `MSG_CTRUNC`) is
        // not read, nor anything after it.
        if (c as usize).saturating_add(h.cmsg_len as usize) > end {
            break;
        }
        // SAFETY: CMSG_LEN only adds the aligned header size.
        let header = unsafe { libc::CMSG_LEN(0) } as usize;
        let len = (h.cmsg_len as usize).saturating_sub(header);
        // SAFETY: the data follows the header inside the same buffer.
        let data = unsafe { libc::CMSG_DATA(c) };
        match (h.cmsg_level, h.cmsg_type) {
            (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS)
                if len >= std::mem::size_of::<libc::timespec>() =>
            {
                // SAFETY: `len` bytes of data, at least a timespec's, read unaligned.
                let ts: libc::timespec = unsafe { std::ptr::read_unaligned(data.cast()) };
                out.stamp = monotonic_of(&ts);
            }
            (libc::IPPROTO_TCP, libc::TCP_CM_INQ) if len >= std::mem::size_of::<libc::c_int>() => {
                // SAFETY: at least a c_int's bytes of data, read unaligned.
                let left: libc::c_int = unsafe { std::ptr::read_unaligned(data.cast()) };
                out.queued = left != 0;
            }
            _ => {}
        }
        // SAFETY: `c` is a header of `msg`'s buffer; the next one or null.
        c = unsafe { libc::CMSG_NXTHDR(msg, c) };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn realtime_ago(ago: Duration, ahead: bool) -> libc::timespec {
        let now =
            Duration::from(nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME).unwrap());
        let t = if ahead { now + ago } else { now - ago };
        libc::timespec {
            tv_sec: t.as_secs() as libc::time_t,
            tv_nsec: t.subsec_nanos().into(),
        }
    }

    #[test]
    fn old_or_future_timestamps_are_not_believed() {
        let mono = monotonic_of(&realtime_ago(Duration::from_millis(5), false)).unwrap();
        let age = monotonic_ns() - mono;
        assert!((5_000_000..1_000_000_000).contains(&age), "{age}");
        let future = realtime_ago(Duration::from_secs(60), true);
        assert_eq!(monotonic_of(&future), None);
        let stale = realtime_ago(Duration::from_secs(60), false);
        assert_eq!(monotonic_of(&stale), None);
        let negative = libc::timespec {
            tv_sec: -1,
            tv_nsec: 0,
        };
        assert_eq!(monotonic_of(&negative), None);
    }

    /// A control buffer written as the kernel writes it: both messages are read,
    /// an unknown one between them is skipped, and a message cut short is not read.
    #[test]
    fn control_messages_are_walked_in_place() {
        let mut buf = [0u64; 16];
        let base = buf.as_mut_ptr().cast::<u8>();
        let mut at = 0usize;
        let mut put = |level: libc::c_int, kind: libc::c_int, data: &[u8], claimed: usize| {
            // SAFETY: CMSG_LEN/CMSG_SPACE only do arithmetic.
            let (len, space) = unsafe {
                (
                    libc::CMSG_LEN(claimed as u32) as usize,
                    libc::CMSG_SPACE(data.len() as u32) as usize,
                )
            };
            let h = libc::cmsghdr {
                cmsg_len: len as _,
                cmsg_level: level,
                cmsg_type: kind,
            };
            // SAFETY: the test's buffer has room for the three messages written.
            unsafe {
                std::ptr::write_unaligned(base.add(at).cast(), h);
                let d = base.add(at + libc::CMSG_LEN(0) as usize);
                std::ptr::copy_nonoverlapping(data.as_ptr(), d, data.len());
            }
            at += space;
        };
        let ts = realtime_ago(Duration::from_millis(3), false);
        // SAFETY: a timespec's bytes, for the test's buffer.
        let ts_bytes: [u8; std::mem::size_of::<libc::timespec>()] =
            unsafe { std::mem::transmute(ts) };
        put(
            libc::SOL_SOCKET,
            libc::SCM_TIMESTAMPNS,
            &ts_bytes,
            ts_bytes.len(),
        );
        put(libc::SOL_SOCKET, 999, &[1, 2, 3, 4], 4);
        put(libc::IPPROTO_TCP, libc::TCP_CM_INQ, &7i32.to_ne_bytes(), 4);
        let used = at;
        // SAFETY: an all-zero msghdr is valid.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = buf.as_mut_ptr().cast();
        msg.msg_controllen = used as _;
        let c = parse_control(&msg);
        assert!(c.queued);
        let age = monotonic_ns() - c.stamp.expect("a stamp");
        assert!((3_000_000..1_000_000_000).contains(&age), "{age}");
        // The last message cut short: not read.
        msg.msg_controllen = (used - 8) as _;
        let c = parse_control(&msg);
        assert!(!c.queued && c.stamp.is_some());
        // The first one cut short: nothing is read.
        msg.msg_controllen = 20;
        assert_eq!(parse_control(&msg), Control::default());
        // Nothing received: no messages.
        msg.msg_controllen = 0;
        assert_eq!(parse_control(&msg), Control::default());
    }
}
