//! `goodput-stamped`: TCP reads that carry the kernel's receive time, on the
//! clock every goodput record uses.
//!
//! A TCP socket asked for `SO_TIMESTAMPNS` and read with `recvmsg` gives, with each
//! read, the time the last segment it took reached the socket (`CLOCK_REALTIME`),
//! here converted to `CLOCK_MONOTONIC` ns ([`monotonic_ns`]'s clock). goodput's
//! client stamps response chunks with it; the simulator (`goodput-sim`) starts a
//! request's clock at it. Both read through one type, [`StampedTcp`], and say
//! what they keep of each read through an [`Observer`].
//!
//! One time per read, not per segment: Linux coalesces a segment into the one
//! before it in the receive queue while the reader has not taken it, and keeps the
//! later one's time (`tcp_try_coalesce`), so bytes that waited behind a busy reader
//! come out with their last segment's time however few are read at once. What a
//! read can say is whether it left bytes queued (the kernel's `TCP_INQ` count,
//! returned with the read): then what it took arrived no later than its time, and
//! possibly earlier ([`Observer::received`]'s `queued`).
//!
//! A read allocates nothing: the control messages land in a buffer inside the
//! connection and are walked with `CMSG_FIRSTHDR`/`CMSG_NXTHDR`.
//!
//! # Layout
//! - [`clock`]: `CLOCK_MONOTONIC` in ns ([`monotonic_ns`]) and `Instant`s converted
//!   to it ([`MonoClock`]).
//! - `read`: one `recvmsg` and its control messages (the timestamp, `TCP_INQ`).
//! - `tcp`: [`StampedTcp`], the connection (`AsyncRead` + `AsyncWrite`) that reads
//!   through it, and [`Observer`], what its owner keeps of each read and write.

#![warn(missing_docs)]

pub mod clock;
mod read;
mod tcp;

pub use clock::{monotonic_ns, MonoClock};
pub use read::enable;
pub use tcp::{Observer, StampedTcp};
