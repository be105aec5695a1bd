//! The run's stop signal (Ctrl-C, SIGTERM), and waits that end as soon as it is set.
//!
//! Every wait of the sweep (an engine's readiness, the GPU cool-down, a trial)
//! takes a [`Stop`], so that a signal ends it within a poll interval, never after
//! its own timeout.

use std::future::Future;

use tokio::sync::watch;

/// A receiver of the run's stop signal.
#[derive(Debug, Clone)]
pub struct Stop(watch::Receiver<bool>);

impl Stop {
    /// Wraps a watch channel's receiver (`true` = stop).
    pub fn new(rx: watch::Receiver<bool>) -> Stop {
        Stop(rx)
    }

    /// A stop that is never set (for callers without signals: tests, libraries).
    pub fn never() -> Stop {
        // One sender for the life of the program, never sent on: its receivers never
        // see a closed channel (which `wait` would take for a stop).
        static NEVER: std::sync::OnceLock<watch::Sender<bool>> = std::sync::OnceLock::new();
        Stop(NEVER.get_or_init(|| watch::channel(false).0).subscribe())
    }

    /// True once the stop signal was given.
    pub fn is_set(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves when the stop signal is given (or its sender is gone).
    pub async fn wait(&self) {
        let mut rx = self.0.clone();
        let _ = rx.wait_for(|&s| s).await;
    }

    /// Runs `f` until it finishes or the stop signal is given; `None` when stopped
    /// (`f` is then dropped).
    pub async fn until<F: Future>(&self, f: F) -> Option<F::Output> {
        if self.is_set() {
            return None;
        }
        tokio::select! {
            out = f => Some(out),
            _ = self.wait() => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn a_long_wait_ends_when_stopped() {
        let (tx, rx) = watch::channel(false);
        let stop = Stop::new(rx);
        let waiter = tokio::spawn({
            let stop = stop.clone();
            async move {
                stop.until(tokio::time::sleep(Duration::from_secs(600)))
                    .await
            }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        tx.send(true).unwrap();
        assert_eq!(waiter.await.unwrap(), None);
        assert!(stop.is_set());
        assert_eq!(stop.until(async { 1 }).await, None, "already stopped");
    }

    #[tokio::test(start_paused = true)]
    async fn never_lets_the_future_finish() {
        let stop = Stop::never();
        let out = stop
            .until(async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                7
            })
            .await;
        assert_eq!(out, Some(7));
    }
}
