//! What the benchmark reads from the operating system: CPU time, resident memory,
//! the file-descriptor limit and CPU affinity. Linux only; every reading degrades
//! to "unknown" elsewhere instead of failing.

use std::time::Duration;

/// User + system CPU time of this process (all its threads, not its children).
pub fn cpu_time() -> Duration {
    // SAFETY: an all-zero rusage is a valid value, and getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to an owned struct.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Duration::ZERO;
    }
    let tv =
        |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32).saturating_mul(1000));
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU time the whole machine has spent (all CPUs, everything but idle and I/O wait),
/// from `/proc/stat`.
pub fn machine_cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let busy: u64 = ticks
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, t)| t)
        .take(8)
        .sum();
    Some(ticks_to_duration(busy))
}

/// CPU time (user + system) of process `pid`, from `/proc/PID/stat`.
pub fn process_cpu_time(pid: u32) -> Option<Duration> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command may hold spaces or parentheses: fields count from the last `)`.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let (utime, stime): (u64, u64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    Some(ticks_to_duration(utime + stime))
}

fn ticks_to_duration(ticks: u64) -> Duration {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|&h| h > 0).unwrap_or(100);
    Duration::from_nanos(ticks.saturating_mul(1_000_000_000 / hz))
}

/// The machine's 1-minute load average (`/proc/loadavg`): other work on a shared
/// machine skews every figure, so each is printed with it.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Resident set size of this process in bytes (`/proc/self/statm`), 0 if unknown.
pub fn rss_bytes() -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(4096)
}

/// Raises the limit on open files as far as this process may toward `want`
/// (goodput's own rule: [`goodput::drive::load::fds::raise_limit_toward`]); the
/// soft limit now (`u64::MAX`: unlimited).
pub fn raise_fd_limit(want: u64) -> u64 {
    goodput::drive::load::fds::raise_limit_toward(want).unwrap_or(u64::MAX)
}

/// CPUs this thread may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is the empty set; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; the size matches the set we pass.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return Vec::new();
    }
    // SAFETY: CPU_ISSET reads the set we own, with an index below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Restricts the calling thread (and the threads it creates from now on) to `cpus`.
pub fn pin_current_thread(cpus: &[usize]) -> bool {
    pin(0, cpus)
}

/// Restricts process or thread `pid` (0: the caller) to `cpus`. Async-signal-safe (one
/// syscall, no allocation), so it may run between fork and exec.
pub fn pin(pid: libc::pid_t, cpus: &[usize]) -> bool {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return false;
        }
        // SAFETY: CPU_SET writes inside the set we own; cpu is below CPU_SETSIZE.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: a valid set of the size we pass.
    !cpus.is_empty()
        && unsafe { libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) }
            == 0
}

/// Samples the peak RSS on a plain thread (so the sampling costs the client nothing)
/// until dropped.
pub struct RssPeak {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<u64>>,
}

impl RssPeak {
    /// Starts sampling every `every`.
    pub fn start(every: Duration) -> RssPeak {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("bench-rss".into())
            .spawn(move || {
                let mut peak = rss_bytes();
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(every);
                    peak = peak.max(rss_bytes());
                }
                peak
            })
            .ok();
        RssPeak { stop, handle }
    }

    /// Stops sampling; the peak RSS seen, bytes.
    pub fn finish(mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or(0)
            .max(rss_bytes())
    }
}

impl Drop for RssPeak {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_are_plausible() {
        assert!(rss_bytes() > 0);
        assert!(machine_cpu_time().is_some());
        assert!(process_cpu_time(std::process::id()).is_some());
        let before = cpu_time();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(cpu_time() >= before);
        assert!(raise_fd_limit(1) > 0);
        assert!(!allowed_cpus().is_empty());
        let peak = RssPeak::start(Duration::from_millis(1)).finish();
        assert!(peak > 0);
    }
}
