//! Client stalls: a process that is paused (SIGSTOP, a debugger, a suspended VM)
//! or starved of CPU reads every chunk late, and its TTFT, TPOT and ITL grow by the
//! pause although the server never saw it. A small task wakes every [`TICK`] on the
//! same runtime as the requests and keeps how late its wake-ups came (the gap
//! between the runtime's expected and actual wake-up); only the worst is kept, so
//! its memory does not grow with the trial. The trial records it as
//! `client_stall_ms`, and a trial above [`report::CLIENT_STALL_LIMIT_MS`] is
//! flagged (a notice, and the report's "Client stalled" warning).

use std::time::Duration;

use tokio::task::JoinHandle;
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

#[cfg(test)]
mod tests {
    use super::*;

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
