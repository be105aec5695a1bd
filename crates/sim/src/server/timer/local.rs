//! The local timer: a current-thread runtime's own heap, served by a `timerfd`
//! on that runtime's I/O driver (see the parent module's docs).

use std::cell::RefCell;
use std::cmp::Reverse;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use super::{fire, Entry, Heap, ORPHANED};

// --- the local timer ----------------------------------------------------------

/// A runtime thread's own heap, served by a `timerfd` on its runtime's I/O driver.
pub(super) struct Local {
    heap: Mutex<Heap>,
    /// `timerfd` (CLOCK_MONOTONIC, non-blocking), armed at the earliest deadline.
    fd: OwnedFd,
    /// Set when the serving task is gone (its runtime shut down).
    dead: AtomicBool,
    /// Armed only before the thread parks ([`before_park`] is its runtime's
    /// park hook), not at every registration or expiry.
    lazy: AtomicBool,
}

thread_local! {
    static LOCAL: RefCell<Option<Arc<Local>>> = const { RefCell::new(None) };
}

/// This thread's live local timer, if it has one.
pub(super) fn local() -> Option<Arc<Local>> {
    LOCAL
        .try_with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot
                .as_ref()
                .is_some_and(|l| l.dead.load(Ordering::Acquire))
            {
                *slot = None;
            }
            slot.clone()
        })
        .ok()
        .flatten()
}

impl Local {
    /// A local timer with a fresh `timerfd`, not yet served.
    fn new() -> std::io::Result<Local> {
        // SAFETY: timerfd_create takes no pointers; a negative result is an error.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Local {
            heap: Mutex::new(Heap::default()),
            // SAFETY: `raw` is a descriptor just opened and owned by nothing else.
            fd: unsafe { OwnedFd::from_raw_fd(raw) },
            dead: AtomicBool::new(false),
            lazy: AtomicBool::new(false),
        })
    }

    /// [`Local::arm`], unless arming waits for the thread to park.
    fn rearm(&self, heap: &mut Heap) {
        if !self.lazy.load(Ordering::Relaxed) {
            self.arm(heap);
        }
    }

    /// Arms the `timerfd` for the heap's earliest deadline unless it is armed for
    /// that or an earlier one (whose expiry re-arms it).
    fn arm(&self, heap: &mut Heap) {
        let Some(next) = heap.next_deadline() else {
            return;
        };
        if heap.armed.is_some_and(|a| a <= next) {
            return;
        }
        // Relative to a time read just before the call: the kernel counts from
        // the call, so the expiry is at or after `next`, never before.
        let wait = next
            .saturating_duration_since(Instant::now())
            .max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: wait.as_secs() as libc::time_t,
                tv_nsec: wait.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: `fd` is an open timerfd owned by `self`; `spec` is a valid
        // itimerspec and the old value is not asked for (null).
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc == 0 {
            heap.armed = Some(next);
        }
    }

    /// Registers `entry` for `deadline`; wakes what has fallen due by `now`.
    pub(super) fn register(&self, deadline: Instant, entry: Arc<Entry>, now: Instant) {
        let mut due = Vec::new();
        {
            let mut heap = self.heap.lock();
            heap.push(deadline, entry);
            heap.pop_due(now, &mut due);
            self.rearm(&mut heap);
        }
        let _ = fire(due);
    }

    /// Wakes what has fallen due by `now` (cheap when nothing has); how many.
    pub(super) fn fire_due(&self, now: Instant) -> usize {
        let mut due = Vec::new();
        {
            let mut heap = self.heap.lock();
            if heap.next_deadline().is_none_or(|d| d > now) {
                return 0;
            }
            heap.pop_due(now, &mut due);
            self.rearm(&mut heap);
        }
        fire(due)
    }

    /// The `timerfd` expired: wakes what is due and arms it for the next deadline.
    fn expired(&self) {
        let mut due = Vec::new();
        {
            let mut heap = self.heap.lock();
            heap.armed = None;
            heap.pop_due(Instant::now(), &mut due);
            self.rearm(&mut heap);
        }
        let _ = fire(due);
    }

    /// The thread is about to park: wakes what is due; if nothing was, waits
    /// out a deadline closer than [`SPIN`] on the spot, else arms the `timerfd`
    /// for the earliest deadline.
    fn before_park(&self) {
        loop {
            let mut due = Vec::new();
            let spin_to = {
                let mut heap = self.heap.lock();
                let now = Instant::now();
                heap.pop_due(now, &mut due);
                match heap.next_deadline() {
                    Some(next) if due.is_empty() && next.saturating_duration_since(now) <= SPIN => {
                        Some(next)
                    }
                    _ => {
                        self.arm(&mut heap);
                        None
                    }
                }
            };
            // A task woken: the runtime runs it instead of parking, and parks
            // (calling this again) after.
            if fire(due) > 0 {
                return;
            }
            let Some(next) = spin_to else {
                return;
            };
            while Instant::now() < next {
                std::hint::spin_loop();
            }
        }
    }

    /// The serving task is gone: every waiting sleep registers again elsewhere.
    pub(super) fn retire(&self) {
        self.dead.store(true, Ordering::Release);
        let items = std::mem::take(&mut self.heap.lock().items);
        for Reverse(item) in items {
            let _ = item.entry.settle(ORPHANED);
        }
    }
}

/// The `timerfd`'s descriptor for [`AsyncFd`]: the local timer that owns it,
/// which keeps it open as long as the registration lives.
struct TimerFd(Arc<Local>);

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.fd.as_raw_fd()
    }
}

/// What the serving task owns: the local timer's registration with the
/// runtime's I/O driver. Dropped with the task (the runtime shut down, even
/// before the task first ran): the local timer retires.
struct Server(AsyncFd<TimerFd>);

impl Drop for Server {
    fn drop(&mut self) {
        self.0.get_ref().0.retire();
    }
}

/// The task that serves a local timer: waits for its `timerfd`, then wakes
/// what is due.
async fn serve_local(server: Server) {
    let local = server.0.get_ref().0.clone();
    loop {
        let Ok(mut ready) = server.0.readable().await else {
            return;
        };
        // Not read: arming the timerfd again resets its expiry count, and its
        // next expiry is a new edge for the (edge-triggered) driver either way.
        ready.clear_ready();
        local.expired();
    }
}

/// Before parking, a deadline this close is waited out on the spot: arming the
/// `timerfd` and waking from idle cost more (a VM exit each on a virtual machine)
/// and come later.
const SPIN: Duration = Duration::from_micros(20);

/// For a current-thread runtime's park hook
/// (`Builder::on_thread_park(timer::before_park)`): from its first call, this
/// thread's local timer arms its `timerfd` only when the thread is about to
/// park (for the earliest deadline, or waits out one closer than 20 µs), not at
/// every registration and expiry, while sleeps polled meanwhile wake what falls
/// due. Nothing without a local timer.
pub fn before_park() {
    if let Some(l) = local() {
        l.lazy.store(true, Ordering::Relaxed);
        l.before_park();
    }
}

/// Serve this thread's sleeps from a local timer (see the module docs): on a
/// current-thread tokio runtime with I/O enabled, call it from inside the
/// runtime. Returns whether a local timer serves this thread (installed now or
/// before); elsewhere (a multi-thread runtime, no runtime, no `timerfd`) it
/// does nothing and sleeps go on using the shared timer thread. The local timer
/// lives as long as the runtime.
pub fn install_local() -> bool {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return false;
    };
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread {
        return false;
    }
    if local().is_some() {
        return true;
    }
    let Ok(local) = Local::new() else {
        return false;
    };
    let local = Arc::new(local);
    // SAFETY: the descriptor is the open timerfd owned by the `Local` that
    // `TimerFd` holds, so it stays open and the same as long as the `AsyncFd`.
    let Ok(async_fd) =
        (unsafe { AsyncFd::register_with_interest(TimerFd(local.clone()), Interest::READABLE) })
    else {
        return false;
    };
    let installed = LOCAL
        .try_with(|cell| *cell.borrow_mut() = Some(local))
        .is_ok();
    if installed {
        handle.spawn(serve_local(Server(async_fd)));
    }
    installed
}

#[cfg(test)]
mod tests {
    use super::super::{sleep_until, FIRED, WAITING};
    use super::*;
    use std::task::{Wake, Waker};

    /// A waker that records its name when woken.
    struct Named(&'static str, Arc<Mutex<Vec<&'static str>>>);

    impl Wake for Named {
        fn wake(self: Arc<Self>) {
            self.1.lock().push(self.0);
        }
    }

    fn entry(name: &'static str, log: &Arc<Mutex<Vec<&'static str>>>) -> Arc<Entry> {
        Arc::new(Entry::new(&Waker::from(Arc::new(Named(name, log.clone())))))
    }

    /// The local heap wakes only what is due at the time it is given, earliest
    /// first, and arms its timerfd for the earliest deadline; retiring it sends
    /// the rest back to register again. (Times are given, not read: no timing.)
    #[test]
    fn local_timer_wakes_due_entries_in_deadline_order() {
        let local = Local::new().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let (a, b, c, d) = (
            entry("3", &log),
            entry("1", &log),
            entry("2", &log),
            entry("2 again", &log),
        );
        local.register(t0 + ms(3000), a.clone(), t0);
        local.register(t0 + ms(1000), b.clone(), t0);
        local.register(t0 + ms(2000), c.clone(), t0);
        assert!(log.lock().is_empty(), "nothing is due at t0");
        assert_eq!(local.heap.lock().armed, Some(t0 + ms(1000)));
        // Same deadline as "2": after it (registration order).
        local.register(t0 + ms(2000), d.clone(), t0 + ms(500));
        local.fire_due(t0 + ms(1999));
        assert_eq!(*log.lock(), ["1"]);
        // A registration wakes what has fallen due by its own time.
        local.register(t0 + ms(2500), entry("2.5", &log), t0 + ms(2000));
        assert_eq!(*log.lock(), ["1", "2", "2 again"]);
        for e in [&b, &c, &d] {
            assert_eq!(e.state.load(Ordering::Acquire), FIRED);
        }
        assert_eq!(a.state.load(Ordering::Acquire), WAITING);
        local.retire();
        assert_eq!(a.state.load(Ordering::Acquire), ORPHANED);
        assert!(local.heap.lock().items.is_empty());
    }

    /// `fire_due` says how many it woke (what lets a request's parsing wait for
    /// the chunks that fell due: `wake_due`); nothing due, none.
    #[test]
    fn fire_due_counts_what_it_wakes() {
        let local = Local::new().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        local.register(t0 + ms(10), entry("a", &log), t0);
        local.register(t0 + ms(10), entry("b", &log), t0);
        local.register(t0 + ms(20), entry("c", &log), t0);
        assert_eq!(local.fire_due(t0 + ms(5)), 0);
        assert_eq!(local.fire_due(t0 + ms(10)), 2);
        assert_eq!(local.fire_due(t0 + ms(10)), 0, "each is woken once");
        assert_eq!(*log.lock(), ["a", "b"]);
        local.retire();
    }

    /// On a current-thread runtime with the local timer, `wake_due` wakes a
    /// sleep that has fallen due and says so; with nothing due it says no.
    #[test]
    fn wake_due_lets_due_sleeps_go_first() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            assert!(install_local());
            assert!(!super::super::wake_due(), "nothing registered");
            let deadline = Instant::now() + Duration::from_millis(5);
            let mut sleep = Box::pin(super::super::sleep_until(deadline));
            // Registered, not yet due.
            assert!(futures_util::poll!(&mut sleep).is_pending());
            assert!(!super::super::wake_due());
            std::thread::sleep(Duration::from_millis(10));
            assert!(super::super::wake_due(), "the sleep fell due");
            assert!(futures_util::poll!(&mut sleep).is_ready());
        });
    }

    /// On a current-thread runtime the local timer serves the sleeps, armed
    /// eagerly or (with the park hook) before parking: none completes before its
    /// deadline, and they complete in deadline order when registered together.
    /// After that runtime is gone, the thread's next runtime gets a timer of its
    /// own.
    #[test]
    fn local_timer_serves_a_current_thread_runtime() {
        for hook in [false, true, false] {
            let mut builder = tokio::runtime::Builder::new_current_thread();
            if hook {
                builder.on_thread_park(before_park);
            }
            let rt = builder.enable_all().build().unwrap();
            rt.block_on(async {
                assert!(install_local());
                assert!(local().is_some());
                let start = Instant::now() + Duration::from_millis(5);
                let order = Arc::new(Mutex::new(Vec::new()));
                // 300 µs apart, or 7 µs (waited out before parking, with the hook).
                let gap = |i: u64| {
                    Duration::from_micros(if i.is_multiple_of(2) {
                        300 * i
                    } else {
                        300 * i - 293
                    })
                };
                let handles: Vec<_> = (0..20u64)
                    .rev()
                    .map(|i| {
                        let order = order.clone();
                        let deadline = start + gap(i);
                        tokio::spawn(async move {
                            sleep_until(deadline).await;
                            order.lock().push(i);
                            Instant::now() >= deadline
                        })
                    })
                    .collect();
                // Every task registers its sleep before this task goes on.
                tokio::task::yield_now().await;
                let registered_in_time = Instant::now() < start;
                for h in handles {
                    assert!(h.await.unwrap(), "a sleep completed before its deadline");
                }
                // Registered before the first fell due, they complete in deadline
                // order (on a machine too slow for that, the late ones complete at
                // once, in spawn order: not checked).
                if registered_in_time {
                    assert_eq!(*order.lock(), (0..20).collect::<Vec<u64>>());
                }
                assert_eq!(local().unwrap().lazy.load(Ordering::Relaxed), hook);
            });
            drop(rt);
            assert!(local().is_none(), "retired with its runtime");
        }
    }
}
