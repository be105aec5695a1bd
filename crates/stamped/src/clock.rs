//! CLOCK_MONOTONIC in nanoseconds, the clock `std::time::Instant` uses on
//! Linux, so probe timestamps written by the server compare directly with a
//! client's `Instant`s converted the same way.

use std::time::Instant;

/// CLOCK_MONOTONIC now, in nanoseconds (0 should the clock be unreadable, which
/// it is not on Linux).
#[inline]
pub fn monotonic_ns() -> u64 {
    match nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC) {
        Ok(ts) => (ts.tv_sec() as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(ts.tv_nsec() as u64),
        Err(_) => 0,
    }
}

/// Converts `Instant`s to CLOCK_MONOTONIC nanoseconds.
#[derive(Debug, Clone, Copy)]
pub struct MonoClock {
    base: Instant,
    base_ns: u64,
}

impl MonoClock {
    /// Calibrate against the current time: `Instant::now()` between two reads of
    /// the clock, the tightest of a few tries. (A single pair once put every probe
    /// time 0.2 ms late: the process's first clock read is slow.)
    pub fn new() -> MonoClock {
        let mut best: Option<(u64, MonoClock)> = None;
        for _ in 0..5 {
            let before = monotonic_ns();
            let base = Instant::now();
            let after = monotonic_ns();
            let width = after.saturating_sub(before);
            if best.as_ref().is_none_or(|(w, _)| width < *w) {
                let base_ns = before + width / 2;
                best = Some((width, MonoClock { base, base_ns }));
            }
        }
        best.map_or_else(
            || MonoClock {
                base: Instant::now(),
                base_ns: monotonic_ns(),
            },
            |(_, c)| c,
        )
    }

    /// CLOCK_MONOTONIC nanoseconds of `t`.
    pub fn ns(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.base) {
            Some(d) => self.base_ns.saturating_add(d.as_nanos() as u64),
            None => self
                .base_ns
                .saturating_sub(self.base.duration_since(t).as_nanos() as u64),
        }
    }
}

impl Default for MonoClock {
    fn default() -> Self {
        MonoClock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instant_and_monotonic_agree() {
        let clock = MonoClock::new();
        let a = monotonic_ns();
        let b = clock.ns(Instant::now());
        let c = monotonic_ns();
        assert!(a <= b + 100_000 && b <= c + 100_000, "{a} {b} {c}");
    }
}
