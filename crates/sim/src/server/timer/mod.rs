//! A sub-millisecond timer for absolute deadlines.
//!
//! tokio's timer wheel has a 1 ms resolution and rounds deadlines up, so a
//! token scheduled at `t` would leave between `t` and `t + 1 ms`. This timer
//! keeps deadlines in a heap and wakes the waiting tasks when their instant has
//! come, never before. Two ways of serving a heap:
//!
//! - **local** (a current-thread runtime that called [`install_local`], as the
//!   simulator's server does): the heap belongs to that runtime's thread, and a
//!   `timerfd` armed at its earliest deadline is registered with the runtime's own
//!   I/O driver, so the thread that writes the chunks also sleeps until the next
//!   one is due: one wake-up per deadline, on that thread, with no other thread
//!   to switch to and no cross-thread wake (an `eventfd` write per task). While
//!   the thread is busy (a burst of writes), every sleep it polls also wakes the
//!   tasks that have fallen due since, in deadline order, so they queue behind
//!   the work already there rather than waiting for the next I/O poll. With
//!   [`before_park`] as the runtime's park hook (`goodput sim --threads 1`), the
//!   `timerfd` is armed only when the thread is about to park, and a deadline
//!   less than 20 µs away is waited out instead: no timer programming while
//!   busy;
//! - **shared** (everything else: multi-thread runtimes, other threads): one
//!   dedicated thread sleeps with nanosecond timeouts (timer slack reduced to
//!   1 µs) and wakes the tasks from there.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// An entry's states.
const WAITING: u8 = 0;
/// Its deadline has come: the sleep completes.
const FIRED: u8 = 1;
/// Its local timer went away before the deadline: the sleep registers again.
const ORPHANED: u8 = 2;

#[derive(Debug)]
struct Entry {
    state: AtomicU8,
    waker: Mutex<Option<Waker>>,
}

impl Entry {
    fn new(waker: &Waker) -> Entry {
        Entry {
            state: AtomicU8::new(WAITING),
            waker: Mutex::new(Some(waker.clone())),
        }
    }

    /// Sets the state and wakes the task; whether there was one (a dropped
    /// sleep leaves none).
    fn settle(&self, state: u8) -> bool {
        self.state.store(state, Ordering::Release);
        let waker = self.waker.lock().take();
        waker.map(Waker::wake).is_some()
    }
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
    /// Local timer: the deadline its `timerfd` is armed for (`None`: disarmed, or
    /// expired and not yet handled).
    armed: Option<Instant>,
}

impl Heap {
    fn push(&mut self, deadline: Instant, entry: Arc<Entry>) {
        self.seq += 1;
        let seq = self.seq;
        self.items.push(Reverse(Item {
            deadline,
            seq,
            entry,
        }));
    }

    /// Moves every entry due at `now` to `due`, earliest first.
    fn pop_due(&mut self, now: Instant, due: &mut Vec<Arc<Entry>>) {
        while self
            .items
            .peek()
            .is_some_and(|Reverse(top)| top.deadline <= now)
        {
            if let Some(Reverse(item)) = self.items.pop() {
                due.push(item.entry);
            }
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.items.peek().map(|Reverse(i)| i.deadline)
    }
}

/// Wakes `due`'s tasks, in order; how many there were.
fn fire(due: Vec<Arc<Entry>>) -> usize {
    due.into_iter().filter(|e| e.settle(FIRED)).count()
}

// --- the shared timer thread ------------------------------------------------

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
    loop {
        let mut due = Vec::new();
        let next = {
            let mut heap = shared.heap.lock();
            heap.pop_due(Instant::now(), &mut due);
            heap.next_deadline()
        };
        let _ = fire(due);
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

mod local;

use local::local;
pub use local::{before_park, install_local};

/// Future that completes at an absolute instant. See [`sleep_until`].
#[derive(Debug)]
pub struct Sleep {
    deadline: Instant,
    entry: Option<Arc<Entry>>,
    fallback: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// On a thread with its own timer: wakes what has fallen due and says whether
/// anything had, so that work that can wait (reading and parsing a new request,
/// whose clock started at its arrival stamp anyway) lets those chunks go first.
/// `false` elsewhere.
pub fn wake_due() -> bool {
    local::local().is_some_and(|l| l.fire_due(Instant::now()) > 0)
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

impl Drop for Sleep {
    fn drop(&mut self) {
        // The entry stays in its heap until due; it must not wake the task then.
        if let Some(entry) = &self.entry {
            entry.waker.lock().take();
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let now = Instant::now();
        if now >= self.deadline {
            // Others that have fallen due meanwhile go next.
            if let Some(l) = local() {
                l.fire_due(now);
            }
            return Poll::Ready(());
        }
        if let Some(f) = self.fallback.as_mut() {
            return f.as_mut().poll(cx);
        }
        if let Some(entry) = &self.entry {
            match entry.state.load(Ordering::Acquire) {
                FIRED => return Poll::Ready(()),
                WAITING => {
                    {
                        let mut waker = entry.waker.lock();
                        if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                            *waker = Some(cx.waker().clone());
                        }
                    }
                    // It may have settled between the check and storing the waker.
                    match entry.state.load(Ordering::Acquire) {
                        WAITING => return Poll::Pending,
                        FIRED => return Poll::Ready(()),
                        _ => {}
                    }
                }
                _ => {}
            }
            // Orphaned by a local timer that went away: register again.
            self.entry = None;
        }
        let entry = Arc::new(Entry::new(cx.waker()));
        let deadline = self.deadline;
        if let Some(l) = local() {
            l.register(deadline, entry.clone(), now);
            self.entry = Some(entry);
            return Poll::Pending;
        }
        let shared = shared();
        let Some(thread) = &shared.thread else {
            let mut f = Box::pin(tokio::time::sleep_until(self.deadline.into()));
            let poll = f.as_mut().poll(cx);
            self.fallback = Some(f);
            return poll;
        };
        let earliest = {
            let mut heap = shared.heap.lock();
            let earlier = heap.next_deadline().is_none_or(|top| deadline < top);
            heap.push(deadline, entry.clone());
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

    #[test]
    fn no_local_timer_on_a_multi_thread_runtime() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            assert!(!install_local());
            let deadline = Instant::now() + Duration::from_millis(1);
            sleep_until(deadline).await;
            assert!(Instant::now() >= deadline);
        });
    }

    /// A sleep whose local timer goes away registers again and still completes.
    #[test]
    fn an_orphaned_sleep_registers_again() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            assert!(install_local());
            let deadline = Instant::now() + Duration::from_millis(20);
            let mut sleep = Box::pin(sleep_until(deadline));
            assert!(futures_util::poll!(sleep.as_mut()).is_pending());
            local().unwrap().retire();
            assert!(local().is_none());
            sleep.await;
            assert!(Instant::now() >= deadline);
        });
    }

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
