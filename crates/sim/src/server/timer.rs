//! A sub-millisecond timer for absolute deadlines.
//!
//! tokio's timer wheel has a 1 ms resolution and rounds deadlines up, so a
//! token scheduled at `t` would leave between `t` and `t + 1 ms`. This timer
//! keeps deadlines in a heap served by one dedicated thread that sleeps with
//! nanosecond timeouts (timer slack reduced to 1 µs) and wakes the waiting
//! tasks when their instant has come.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

#[derive(Debug, Default)]
struct Entry {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

struct Item {
    deadline: Instant,
    seq: u64,
    entry: Arc<Entry>,
}

impl PartialEq for Item {
    fn eq(&self, other: &Self) -> bool {
        (self.deadline, self.seq) == (other.deadline, other.seq)
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Item {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.deadline, self.seq).cmp(&(other.deadline, other.seq))
    }
}

#[derive(Default)]
struct Heap {
    items: BinaryHeap<Reverse<Item>>,
    seq: u64,
}

struct Shared {
    heap: Mutex<Heap>,
    /// The timer thread, or `None` if it could not be started.
    thread: Option<Thread>,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let handle = std::thread::Builder::new()
            .name("goodput-sim-timer".into())
            .spawn(timer_thread);
        // Without a timer thread, sleeps fall back to tokio's timer.
        let thread = handle.ok().map(|h| h.thread().clone());
        Shared {
            heap: Mutex::new(Heap::default()),
            thread,
        }
    })
}

fn timer_thread() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0);
    }
    let shared = shared();
    let mut due: Vec<Arc<Entry>> = Vec::new();
    loop {
        let next = {
            let mut heap = shared.heap.lock();
            let now = Instant::now();
            while let Some(Reverse(top)) = heap.items.peek() {
                if top.deadline > now {
                    break;
                }
                if let Some(Reverse(item)) = heap.items.pop() {
                    due.push(item.entry);
                }
            }
            heap.items.peek().map(|Reverse(i)| i.deadline)
        };
        for entry in due.drain(..) {
            entry.fired.store(true, Ordering::Release);
            if let Some(w) = entry.waker.lock().take() {
                w.wake();
            }
        }
        match next {
            Some(deadline) => {
                let now = Instant::now();
                if deadline > now {
                    std::thread::park_timeout(deadline - now);
                }
            }
            None => std::thread::park(),
        }
    }
}

/// Future that completes at an absolute instant. See [`sleep_until`].
#[derive(Debug)]
pub struct Sleep {
    deadline: Instant,
    entry: Option<Arc<Entry>>,
    fallback: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// Complete at `deadline` (immediately if it has passed).
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        entry: None,
        fallback: None,
    }
}

/// Complete after `duration`.
pub fn sleep(duration: Duration) -> Sleep {
    sleep_until(Instant::now() + duration)
}

impl Sleep {
    /// The instant this sleep completes at.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        if let Some(f) = self.fallback.as_mut() {
            return f.as_mut().poll(cx);
        }
        if let Some(entry) = &self.entry {
            if entry.fired.load(Ordering::Acquire) {
                return Poll::Ready(());
            }
            *entry.waker.lock() = Some(cx.waker().clone());
            // It may have fired between the check and storing the waker.
            if entry.fired.load(Ordering::Acquire) {
                return Poll::Ready(());
            }
            return Poll::Pending;
        }
        let shared = shared();
        let Some(thread) = &shared.thread else {
            let mut f = Box::pin(tokio::time::sleep_until(self.deadline.into()));
            let poll = f.as_mut().poll(cx);
            self.fallback = Some(f);
            return poll;
        };
        let entry = Arc::new(Entry {
            fired: AtomicBool::new(false),
            waker: Mutex::new(Some(cx.waker().clone())),
        });
        let earliest = {
            let mut heap = shared.heap.lock();
            heap.seq += 1;
            let seq = heap.seq;
            let earlier = heap
                .items
                .peek()
                .is_none_or(|Reverse(top)| self.deadline < top.deadline);
            heap.items.push(Reverse(Item {
                deadline: self.deadline,
                seq,
                entry: entry.clone(),
            }));
            earlier
        };
        self.entry = Some(entry);
        if earliest {
            thread.unpark();
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wakes_close_to_the_deadline() {
        let mut worst = Duration::ZERO;
        for i in 0..20u64 {
            let deadline = Instant::now() + Duration::from_micros(500 + 150 * i);
            sleep_until(deadline).await;
            let late = Instant::now().duration_since(deadline);
            worst = worst.max(late);
        }
        // Generous: the test machine is shared and loaded.
        assert!(worst < Duration::from_millis(20), "{worst:?}");
    }

    #[tokio::test]
    async fn many_sleeps_complete_in_order_of_deadline() {
        let start = Instant::now();
        let mut handles = Vec::new();
        for i in (0..50u64).rev() {
            handles.push(tokio::spawn(async move {
                sleep_until(start + Duration::from_millis(1 + i / 5)).await;
                Instant::now() >= start + Duration::from_millis(1 + i / 5)
            }));
        }
        for h in handles {
            assert!(h.await.unwrap());
        }
        assert!(sleep(Duration::ZERO).deadline() <= Instant::now());
    }
}
