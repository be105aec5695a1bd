//! Client stalls: a process that is paused (SIGSTOP, a debugger, a suspended VM)
//! or starved of CPU reads every chunk late, and its TTFT, TPOT and ITL grow by the
//! pause although the server never saw it. A small task wakes every [`TICK`] on the
//! same runtime as the requests and keeps how late its wake-ups came (the gap
//! between the runtime's expected and actual wake-up); only the worst is kept, so
//! its memory does not grow with the trial. The trial records it as
//! `client_stall_ms`, and a trial above [`report::CLIENT_STALL_LIMIT_MS`] is
//! flagged (a notice, and the report's "Client stalled" warning).
//!
//! The records say the same per chunk: a chunk read together with later writes of
//! the server has a time that is an upper bound (`Chunk::bound`, the kernel keeps
//! one receive time for bytes that waited together); [`late_stamps`] sums a
//! trial's, and a trial whose chunks may be late by more than
//! [`LATE_STAMP_LIMIT_MS`] is flagged with how late.

use std::time::Duration;

use tokio::task::JoinHandle;

use crate::drive::record::RequestRecord;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How often the watch wakes.
pub const TICK: Duration = Duration::from_millis(10);

/// The watch over one trial: started before its load, finished after it.
pub struct StallWatch {
    stop: CancellationToken,
    task: JoinHandle<Duration>,
}

impl StallWatch {
    /// Starts watching (on the current runtime).
    pub fn start() -> StallWatch {
        let stop = CancellationToken::new();
        let cancelled = stop.clone();
        let task = tokio::spawn(async move {
            let mut worst = Duration::ZERO;
            loop {
                let due = Instant::now() + TICK;
                tokio::select! {
                    // A late tick is measured even when the stop came meanwhile.
                    biased;
                    _ = tokio::time::sleep_until(due) => {
                        worst = worst.max(Instant::now().saturating_duration_since(due));
                    }
                    // A tick due and not yet run when the load ends is late too.
                    _ = cancelled.cancelled() => {
                        worst = worst.max(Instant::now().saturating_duration_since(due));
                        break;
                    }
                }
            }
            worst
        });
        StallWatch { stop, task }
    }

    /// Stops watching; the latest any wake-up came, in milliseconds.
    pub async fn finish(self) -> f64 {
        self.stop.cancel();
        self.task.await.unwrap_or_default().as_secs_f64() * 1e3
    }
}

/// A trial whose chunks' times may be late by more than this many ms (their
/// bound) is flagged: the client was away while the server wrote.
pub const LATE_STAMP_LIMIT_MS: f64 = 10.0;

/// A trial's chunks whose times are upper bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LateStamps {
    /// Chunks whose bound is above [`LATE_STAMP_LIMIT_MS`].
    pub late: usize,
    /// Content chunks in the trial.
    pub chunks: usize,
    /// The widest bound, ms: the most any chunk's time may be late.
    pub worst_ms: f64,
}

/// The trial's chunks stamped possibly late by more than [`LATE_STAMP_LIMIT_MS`],
/// or `None` when there are none.
pub fn late_stamps(records: &[RequestRecord]) -> Option<LateStamps> {
    let limit_ns = (LATE_STAMP_LIMIT_MS * 1e6) as u64;
    let chunks = records.iter().flat_map(|r| &r.chunks);
    let (mut late, mut all, mut worst) = (0, 0, 0u64);
    for c in chunks {
        all += 1;
        let b = c.bound.map_or(0, u64::from);
        late += usize::from(b > limit_ns);
        worst = worst.max(b);
    }
    (late > 0).then(|| LateStamps {
        late,
        chunks: all,
        worst_ms: worst as f64 / 1e6,
    })
}

impl std::fmt::Display for LateStamps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} chunks were read together with later ones after the client was away \
             (off the CPU, or behind): each such time is the last one's arrival, an upper \
             bound, up to {:.0} ms late (limit {LATE_STAMP_LIMIT_MS} ms; the records' \
             `bound`)",
            self.late, self.chunks, self.worst_ms
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_with_wide_bounds_flag_the_trial() {
        use crate::drive::record::Chunk;
        let chunk = |bound_ms: Option<u64>| Chunk {
            t: 100_000_000,
            len: 1,
            reasoning: 0,
            lag: None,
            bound: bound_ms.and_then(|ms| std::num::NonZeroU64::new(ms * 1_000_000)),
        };
        let mut r = RequestRecord::new("e", 1.0, 0, 0, 0);
        r.chunks = vec![chunk(None), chunk(Some(2)), chunk(None)];
        assert_eq!(late_stamps(std::slice::from_ref(&r)), None);
        r.chunks.extend([chunk(Some(40)), chunk(Some(25))]);
        let late = late_stamps(&[r]).unwrap();
        assert_eq!((late.late, late.chunks), (2, 5));
        assert!((late.worst_ms - 40.0).abs() < 1e-9);
        assert!(late.to_string().contains("2 of 5 chunks"), "{late}");
    }

    #[tokio::test]
    async fn a_blocked_runtime_is_seen_as_late_wake_ups() {
        let quiet = StallWatch::start();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let quiet = quiet.finish().await;
        assert!(quiet < 50.0, "{quiet} ms late on an idle runtime");
        // The runtime's one thread blocked for 300 ms: the tick cannot run.
        let watch = StallWatch::start();
        tokio::time::sleep(Duration::from_millis(20)).await;
        std::thread::sleep(Duration::from_millis(300));
        // Seen whether the tick ran after the block or is still pending at the end.
        let late = watch.finish().await;
        assert!(late >= 200.0, "{late} ms");
    }
}
