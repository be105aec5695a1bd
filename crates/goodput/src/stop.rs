//! The run's stop signal (Ctrl-C, SIGTERM), and waits that end as soon as it is set.
//!
//! One cancellation tree: the run holds the root [`CancellationToken`], cancelled
//! on the first signal; each trial's load takes a child of it (`no_new`: nothing
//! new is sent, [`crate::drive::load`]), whose own partner token abandons what is still in
//! flight after the grace period; the GPU and `/metrics` samplers beside a trial
//! stop on tokens of their own ([`crate::measure::sampling`]), cancelled when the trial's
//! records are in (they keep reading through the grace period, which the records
//! still cover). Every wait of the sweep (an engine's readiness, the GPU cool-down,
//! a barrier, a trial) takes a [`Stop`], so that a signal ends it at once, never
//! after its own timeout.

use std::future::Future;

use tokio_util::sync::CancellationToken;

/// The run's stop signal: a token, cancelled to stop.
#[derive(Debug, Clone)]
pub struct Stop(CancellationToken);

impl Stop {
    /// A stop given when `token` is cancelled.
    pub fn new(token: CancellationToken) -> Stop {
        Stop(token)
    }

    /// A stop that is never given (for callers without signals: tests, libraries).
    pub fn never() -> Stop {
        Stop(CancellationToken::new())
    }

    /// A stop not given yet, that its holder gives with [`Stop::set`].
    pub fn unset() -> Stop {
        Stop(CancellationToken::new())
    }

    /// Gives the stop signal (to every clone and child).
    pub fn set(&self) {
        self.0.cancel();
    }

    /// True once the stop signal was given.
    pub fn is_set(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Resolves when the stop signal is given.
    pub async fn wait(&self) {
        self.0.cancelled().await;
    }

    /// A child token: cancelled with the run's stop, or on its own.
    pub fn child(&self) -> CancellationToken {
        self.0.child_token()
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
        let root = CancellationToken::new();
        let stop = Stop::new(root.clone());
        let child = stop.child();
        let waiter = tokio::spawn({
            let stop = stop.clone();
            async move {
                stop.until(tokio::time::sleep(Duration::from_secs(600)))
                    .await
            }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        root.cancel();
        assert_eq!(waiter.await.unwrap(), None);
        assert!(stop.is_set());
        assert!(child.is_cancelled(), "a child stops with the run");
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
