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
//! chunk, not after the read). Its writes keep when the first write after a
//! request was queued began: the request's send time, when it was handed to the
//! kernel (not when the client decided to send it). Where the kernel gives none (another OS, a socket
//! option refused), a read keeps its read time, as before.
//!
//! The kernel keeps one time per read, that of the last segment the read took, and
//! segments that wait in the receive queue are merged there keeping the later
//! one's time ([`goodput_stamped`]): a read that finds several writes of the
//! server waiting (a client behind by more than a token's gap, or off the CPU)
//! gives all their chunks the last one's arrival, still no later than the read.
//! A read that finds one write, the usual case, is exact. Which case a chunk is in
//! is kept ([`ReadMark`]): a chunk read together with a later HTTP chunk (a later
//! write of the server), or by a read that left bytes queued, has a time that is
//! only an upper bound, and its record says so (`Chunk::bound`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use goodput_stamped::Observer;
use tokio::net::TcpStream;

/// The most one read takes: the stack buffer each read of a connection lands in
/// ([`super::direct::READ_BUF_BYTES`]).
const READ_AT_ONCE: usize = super::direct::READ_BUF_BYTES;

/// A connection's times on the records' clock (ns; 0: none yet), shared between
/// the connection's reader and writer and the request using it: the receive time
/// of the bytes it read last, and when the first write since the request was
/// queued began (the request handed to the kernel).
#[derive(Debug, Clone, Default)]
pub(crate) struct Stamps(Arc<[AtomicU64; 3]>);

const RECEIVED: usize = 0;
const WRITTEN: usize = 1;
/// The latest read's number (counted from 1) shifted left by one, and whether it
/// left bytes queued in the low bit.
const READ: usize = 2;

/// Which read of a connection returned bytes, and whether it left bytes queued
/// (then its time is an upper bound for what it took).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ReadMark {
    /// The read's number on its connection (0: no read stamped yet).
    pub no: u64,
    /// The read left bytes in the socket: the client was behind.
    pub queued: bool,
}

impl Stamps {
    /// The receive time of the latest read, if any read was stamped.
    pub(crate) fn latest(&self) -> Option<u64> {
        Some(self.0[RECEIVED].load(Ordering::Relaxed)).filter(|&t| t != 0)
    }

    /// Which read [`Stamps::latest`] is the time of.
    pub(crate) fn latest_read(&self) -> ReadMark {
        let v = self.0[READ].load(Ordering::Relaxed);
        ReadMark {
            no: v >> 1,
            queued: v & 1 == 1,
        }
    }

    /// A request is about to be queued on the connection: the next write is its.
    pub(crate) fn expect_send(&self) {
        self.0[WRITTEN].store(0, Ordering::Relaxed);
    }

    /// When the first write since [`Stamps::expect_send`] began, if one did.
    pub(crate) fn first_write(&self) -> Option<u64> {
        Some(self.0[WRITTEN].load(Ordering::Relaxed)).filter(|&t| t != 0)
    }
}

impl Observer for Stamps {
    const TIMES_WRITES: bool = true;

    fn received(&mut self, at: u64, queued: bool) {
        self.0[RECEIVED].store(at.max(1), Ordering::Relaxed);
        let no = (self.0[READ].load(Ordering::Relaxed) >> 1).wrapping_add(1);
        self.0[READ].store((no << 1) | u64::from(queued), Ordering::Relaxed);
    }

    fn wrote(&mut self, began: u64) {
        let _ =
            self.0[WRITTEN].compare_exchange(0, began.max(1), Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// A TCP connection that reads with `recvmsg` and keeps the receive time of what
/// it read, and the time its writes began, in its [`Stamps`].
pub(crate) type StampedTcp = goodput_stamped::StampedTcp<Stamps>;

/// `tcp`, asking the kernel for receive timestamps (when it refuses, reads keep
/// their read time), and the stamps its reads and writes leave.
pub(crate) fn stamped(tcp: TcpStream) -> (StampedTcp, Stamps) {
    let stamps = Stamps::default();
    (
        goodput_stamped::StampedTcp::new(tcp, READ_AT_ONCE, stamps.clone()),
        stamps,
    )
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
    use crate::drive::record::now_ns;
    use std::time::Duration;
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

    /// A request's send time is when its first write began; later writes keep it.
    #[tokio::test]
    async fn the_first_write_after_a_send_is_expected_is_kept() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut all = Vec::new();
            let _ = s.read_to_end(&mut all).await;
            all
        });
        let (mut stream, stamps) = stamped(TcpStream::connect(addr).await.unwrap());
        stream.write_all(b"before").await.unwrap();
        stamps.expect_send();
        assert_eq!(stamps.first_write(), None);
        let before = now_ns();
        stream.write_all(b"request").await.unwrap();
        let after = now_ns();
        tokio::time::sleep(Duration::from_millis(5)).await;
        stream.write_all(b"more").await.unwrap();
        let w = stamps.first_write().expect("a write");
        assert!((before..=after).contains(&w), "{before} <= {w} <= {after}");
        drop(stream);
        assert_eq!(server.await.unwrap(), b"beforerequestmore");
    }
}
