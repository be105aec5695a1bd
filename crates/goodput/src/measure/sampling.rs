//! The loop of both background samplers beside a trial (the GPU's, in
//! [`crate::measure::telemetry`], and the engine's `/metrics`, in [`crate::measure::server_metrics`]):
//! one read per tick until the trial's end is signalled (a cancellation token,
//! the one kind of stop signal in goodput), or until reads have failed
//! too often in a row.

use std::future::Future;
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

/// When a sampler reads.
#[derive(Debug, Clone, Copy)]
pub struct Ticks {
    /// Sample times are seconds since this.
    pub start: Instant,
    /// The first read (later ones every `interval`; a late read delays the next).
    pub first: Instant,
    /// Between two reads.
    pub interval: Duration,
}

/// Reads on every tick and hands each success to `keep` with its time, until
/// `stop` is cancelled (a read in flight is then dropped) or `max_failures` reads in a row
/// have failed. Returns the last error when it gave up, `None` when stopped.
pub async fn sample_until_stopped<T, E, Fut>(
    ticks: Ticks,
    stop: CancellationToken,
    max_failures: u32,
    mut read: impl FnMut() -> Fut,
    mut keep: impl FnMut(f64, T),
) -> Option<E>
where
    Fut: Future<Output = Result<T, E>>,
{
    let mut tick = tokio::time::interval_at(ticks.first, ticks.interval);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut failures = 0;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return None,
            _ = tick.tick() => {}
        }
        let t_s = ticks.start.elapsed().as_secs_f64();
        let got = tokio::select! {
            _ = stop.cancelled() => return None,
            r = read() => r,
        };
        match got {
            Ok(value) => {
                failures = 0;
                keep(t_s, value);
            }
            Err(e) => {
                failures += 1;
                if failures >= max_failures {
                    return Some(e);
                }
            }
        }
    }
}
