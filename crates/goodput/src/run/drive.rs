//! The one trial loop: the sweep, a search and a prediction all drive it, over a
//! [`Backend`] that runs one trial (an HTTP engine through the load generator, or
//! the engine model in virtual time), as hyperfine's scheduler runs over its real
//! and mock executors. The loop asks [`schedule::next_trial`] what runs next, has
//! the backend run and keep it, and handles an engine that died: the backend
//! restarts it when the profile allows, and the trial runs again as the next
//! attempt.

use super::schedule::{self, Next};
use super::state::Sweep;
use crate::plan::Plan;

/// Which trial runs: engine, load level, trial index, restart attempt, and the
/// trial's lane of the seeded random draws (from the load level's number and the
/// trial index, so the requests are the same on every engine and backend).
#[derive(Debug, Clone, Copy)]
pub(crate) struct At<'a> {
    pub name: &'a str,
    pub x: f64,
    pub t: u32,
    pub attempt: u32,
    pub lane: u64,
}

impl<'a> At<'a> {
    /// Attempt `attempt` of the scheduled trial `next` on `name`.
    pub fn new(name: &'a str, next: Next, attempt: u32) -> At<'a> {
        At {
            name,
            x: next.x,
            t: next.t,
            attempt,
            lane: next.level << 32 | u64::from(next.t),
        }
    }
}

/// What became of a trial the backend was asked to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ran {
    /// It ran and is kept in the sweep (complete, or partial when interrupted).
    Kept,
    /// It never started (the run was stopped before it).
    NotStarted,
    /// The engine died during it (its exit status); the trial is kept as partial.
    Died(String),
}

/// After a death: the engine runs again, or the engine's share is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterDeath {
    Restarted,
    Over,
}

/// Runs trials and keeps them: the loop's one edge.
pub(crate) trait Backend {
    /// What is measured so far (the scheduler reads it).
    fn sweep(&self) -> &Sweep;
    /// True once the run is asked to stop: no new trial starts.
    fn stopped(&self) -> bool;
    /// A notice for the report.
    fn notice(&mut self, text: String);
    /// Runs trial `at` and keeps it in the sweep (and wherever the backend makes
    /// it durable).
    async fn trial(&mut self, at: &At<'_>) -> anyhow::Result<Ran>;
    /// The engine died during `at`: records it, and restarts the engine when
    /// allowed.
    async fn died(&mut self, at: &At<'_>, status: String) -> anyhow::Result<AfterDeath>;
}

/// Runs `name`'s trials until the scheduler has none left, the run is stopped, or
/// the engine is gone. `whole_points`: see [`schedule::next_trial`].
pub(crate) async fn drive<B: Backend>(
    plan: &Plan,
    name: &str,
    whole_points: Option<&[f64]>,
    backend: &mut B,
) -> anyhow::Result<()> {
    let mut attempt = 0u32;
    let mut last: Option<(u64, u32)> = None;
    while !backend.stopped() {
        let Some(next) = schedule::next_trial(plan, backend.sweep(), name, whole_points) else {
            break;
        };
        // A trial that neither completed nor killed the engine is not run again
        // (that would never end); the report shows it as partial.
        if last == Some((next.x.to_bits(), next.t)) && attempt == 0 {
            backend.notice(format!(
                "{name}: trial {} at x={} did not complete and was not retried",
                next.t + 1,
                next.x
            ));
            break;
        }
        last = Some((next.x.to_bits(), next.t));
        let at = At::new(name, next, attempt);
        match backend.trial(&at).await? {
            Ran::Kept | Ran::NotStarted => attempt = 0,
            Ran::Died(status) => match backend.died(&at, status).await? {
                AfterDeath::Restarted => attempt += 1,
                AfterDeath::Over => break,
            },
        }
    }
    Ok(())
}

/// Runs a future that never waits (a backend in virtual time) to its end on this
/// thread; `None` if it did wait, which such a backend never does.
pub(crate) fn without_waiting<F: std::future::Future>(f: F) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => Some(out),
        std::task::Poll::Pending => None,
    }
}
