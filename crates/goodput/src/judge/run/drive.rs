//! The one trial loop: the sweep, a search and a prediction all drive it, over a
//! [`Backend`] that runs one trial (an HTTP engine through the load generator, or
//! the engine model in virtual time), as hyperfine's scheduler runs over its real
//! and mock executors. The loop asks [`schedule::next_trial`] what runs next, has
//! the backend run and keep it, and handles an engine that died: the backend
//! restarts it when the profile allows, and the trial runs again as the next
//! attempt.

use super::schedule::{self, Next};
use super::state::Sweep;
use crate::define::plan::Plan;

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
    fn notice(&mut self, notice: report::Notice);
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
            backend.notice(report::Notice::engine(
                report::NoticeKind::NotRetried,
                name,
                format!(
                    "{name}: trial {} at x={} did not complete and was not retried",
                    next.t + 1,
                    next.x
                ),
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

#[cfg(test)]
mod tests {
    //! The loop over a scripted backend (hyperfine's mock executor): the order of
    //! trials, restarts after a death, a trial that neither completed nor killed
    //! the engine, and a stop.

    use std::collections::VecDeque;

    use report::{RunStatus, TrialInfo};

    use super::*;
    use crate::judge::run::state::{PointKey, TrialState};

    /// What the scripted engine does with the next trial.
    #[derive(Clone, Copy)]
    enum Does {
        Completes,
        StopsShort,
        Dies,
    }

    struct Mock {
        plan: Plan,
        sweep: Sweep,
        script: VecDeque<Does>,
        /// `(x, t, attempt)` of every trial run.
        ran: Vec<(f64, u32, u32)>,
        notices: Vec<report::Notice>,
        restarts_left: u32,
        stop_after: usize,
    }

    impl Backend for Mock {
        fn sweep(&self) -> &Sweep {
            &self.sweep
        }

        fn stopped(&self) -> bool {
            self.ran.len() >= self.stop_after
        }

        fn notice(&mut self, notice: report::Notice) {
            self.notices.push(notice);
        }

        async fn trial(&mut self, at: &At<'_>) -> anyhow::Result<Ran> {
            self.ran.push((at.x, at.t, at.attempt));
            let does = self.script.pop_front().unwrap_or(Does::Completes);
            let status = match does {
                Does::Completes => RunStatus::Complete,
                Does::StopsShort | Does::Dies => RunStatus::Partial,
            };
            let state = TrialState {
                metrics: Default::default(),
                info: TrialInfo {
                    index: at.t,
                    attempt: at.attempt,
                    status,
                    ..Default::default()
                },
                slo: Default::default(),
            };
            self.sweep
                .add_trial(at.name, PointKey::new(self.plan.mode, at.x), state);
            Ok(match does {
                Does::Dies => Ran::Died("signal 9".into()),
                _ => Ran::Kept,
            })
        }

        async fn died(&mut self, _: &At<'_>, _: String) -> anyhow::Result<AfterDeath> {
            if self.restarts_left == 0 {
                return Ok(AfterDeath::Over);
            }
            self.restarts_left -= 1;
            Ok(AfterDeath::Restarted)
        }
    }

    fn mock(script: &[Does], restarts_left: u32) -> Mock {
        let text = "name = \"m\"\n[slo]\nttft_ms = 100\n[load]\npoints = [1, 2]\nrequests_per_trial = 4\ntrials = 2\n[workload]\ninput_tokens = 8\noutput_tokens = 4\n[engines.e]\nurl = \"http://127.0.0.1:1\"\n";
        let plan = crate::define::profile::Profile::parse(text, "m.toml")
            .unwrap()
            .into_plan("m.toml", &Default::default())
            .unwrap();
        Mock {
            plan,
            sweep: Sweep::default(),
            script: script.iter().copied().collect(),
            ran: Vec::new(),
            notices: Vec::new(),
            restarts_left,
            stop_after: usize::MAX,
        }
    }

    fn run(m: &mut Mock) {
        let plan = m.plan.clone();
        without_waiting(drive(&plan, "e", None, m))
            .expect("the mock never waits")
            .unwrap();
    }

    #[test]
    fn every_trial_runs_once_in_order() {
        let mut m = mock(&[], 0);
        run(&mut m);
        assert_eq!(m.ran, [(1.0, 0, 0), (1.0, 1, 0), (2.0, 0, 0), (2.0, 1, 0)]);
        assert!(m.notices.is_empty());
    }

    #[test]
    fn a_death_restarts_the_engine_and_reruns_the_trial_as_the_next_attempt() {
        let mut m = mock(&[Does::Completes, Does::Dies], 1);
        run(&mut m);
        assert_eq!(
            m.ran,
            [
                (1.0, 0, 0),
                (1.0, 1, 0),
                (1.0, 1, 1),
                (2.0, 0, 0),
                (2.0, 1, 0)
            ]
        );
    }

    #[test]
    fn a_death_past_the_restarts_allowed_ends_the_engine() {
        let mut m = mock(&[Does::Completes, Does::Dies], 0);
        run(&mut m);
        assert_eq!(m.ran, [(1.0, 0, 0), (1.0, 1, 0)]);
    }

    #[test]
    fn a_trial_that_stopped_short_is_not_run_again_and_says_so() {
        let mut m = mock(&[Does::StopsShort, Does::StopsShort], 0);
        run(&mut m);
        assert_eq!(m.ran, [(1.0, 0, 0)]);
        let texts: Vec<_> = m
            .notices
            .iter()
            .map(|n| (&n.kind, n.text.as_str()))
            .collect();
        assert_eq!(
            texts,
            [(
                &report::NoticeKind::NotRetried,
                "e: trial 1 at x=1 did not complete and was not retried"
            )]
        );
    }

    #[test]
    fn a_stop_starts_no_new_trial() {
        let mut m = mock(&[], 0);
        m.stop_after = 3;
        run(&mut m);
        assert_eq!(m.ran.len(), 3);
    }
}
