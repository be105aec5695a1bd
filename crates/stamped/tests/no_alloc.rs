//! A read allocates nothing: the control messages (the receive time and the
//! `TCP_INQ` count) are walked in a buffer inside the connection. An allocator
//! that counts the allocations of the reading thread proves it (a test binary of
//! its own, so no other test's allocations are counted).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;

use goodput_stamped::{Observer, StampedTcp};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call goes to the system allocator unchanged; the count is a
// thread-local cell, which allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: a pointer this allocator (the system's) gave, with its layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[derive(Default)]
struct Count {
    reads: u64,
    queued: u64,
}

impl Observer for Count {
    fn received(&mut self, _: u64, queued: bool) {
        self.reads += 1;
        self.queued += u64::from(queued);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn reads_with_receive_times_allocate_nothing() {
    const BYTES: usize = 64 * 1024;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (ready, wait) = std::sync::mpsc::channel::<()>();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.write_all(b"warm").unwrap();
        wait.recv().unwrap();
        s.write_all(&vec![7u8; BYTES]).unwrap();
    });
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut conn = StampedTcp::new(tcp, 64, Count::default());
    let mut buf = [0u8; 64];
    let n = conn.read(&mut buf).await.unwrap();
    assert_eq!(&buf[..n], b"warm");
    ready.send(()).unwrap();
    // Everything is in the socket (the peer's write returned) before the measured
    // reads, which are polled by hand: no runtime work is counted, only the reads.
    peer.join().unwrap();
    let mut got = conn.read(&mut buf).await.unwrap();
    let reads_before = conn.observer().reads;
    let mut cx = Context::from_waker(Waker::noop());
    let mut allocated = 0;
    while got < BYTES {
        let mut rb = ReadBuf::new(&mut buf);
        let before = allocations();
        let polled = Pin::new(&mut conn).poll_read(&mut cx, &mut rb);
        let after = allocations();
        match polled {
            Poll::Ready(r) => {
                r.unwrap();
                assert!(!rb.filled().is_empty());
                got += rb.filled().len();
                allocated += after - before;
            }
            // Readiness not seen yet: let the runtime's driver look.
            Poll::Pending => tokio::task::yield_now().await,
        }
    }
    let reads = conn.observer().reads - reads_before;
    assert!(reads >= 1000, "{reads} reads");
    assert!(
        conn.observer().queued > 0,
        "reads of 64 bytes left bytes queued"
    );
    assert_eq!(allocated, 0, "{allocated} allocations in {reads} reads");
}
