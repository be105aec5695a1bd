//! The one trial loop: the sweep, a search and a prediction all drive it, over a
//! [`Backend`] that runs one trial (an HTTP engine through the load generator, or
//! the engine model in virtual time), as hyperfine's scheduler runs over its real
//! and mock executors. The loop asks [`schedule::next_trial`] what runs next, has
//! the backend run and keep it, and handles an engine that died: the backend
//! restarts it when the profile allows, and the trial runs again as the next
//! attempt. With several engines up at once, [`drive_interleaved`] takes their
//! trials in rounds ([`interleave`]).

use super::interleave;
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
    let mut lane = Lane::new(name);
    while !backend.stopped() && lane.turn(plan, whole_points, backend).await? {}
    Ok(())
}

/// Runs the trials of every engine in `names` (all up at once) interleaved: in
/// rounds, each engine with a trial left runs its next one, in the round's seeded
/// order ([`interleave::next_engine`]), until none has a trial left or the run is
/// stopped. An engine that is gone drops out; the others go on.
pub(crate) async fn drive_interleaved<B: Backend>(
    plan: &Plan,
    names: &[&str],
    whole_points: Option<&[f64]>,
    backend: &mut B,
) -> anyhow::Result<()> {
    let mut lanes: Vec<Lane> = names.iter().map(|n| Lane::new(n)).collect();
    while !backend.stopped() {
        let done: Vec<Option<u32>> = lanes
            .iter()
            .map(|l| {
                let left = !l.over
                    && schedule::next_trial(plan, backend.sweep(), l.name, whole_points).is_some();
                left.then(|| backend.sweep().complete_trials_of(l.name) as u32)
            })
            .collect();
        let Some(i) = interleave::next_engine(plan.seed, &done) else {
            break;
        };
        let lane = &mut lanes[i];
        lane.over = !lane.turn(plan, whole_points, backend).await?;
    }
    Ok(())
}

/// One engine's place in the loop: the trial it ran last (a trial that comes up
/// again without a death between is not run again), and whether its share is over.
struct Lane<'n> {
    name: &'n str,
    last: Option<(u64, u32)>,
    over: bool,
}

impl<'n> Lane<'n> {
    fn new(name: &'n str) -> Lane<'n> {
        Lane {
            name,
            last: None,
            over: false,
        }
    }

    /// One turn: the engine's next trial, run again as the next attempt after each
    /// restart of the engine, until it is kept. `false` when the engine's share is
    /// over (no trial left, a trial that did not complete, or the engine gone);
    /// `true` otherwise, and when the run was stopped.
    async fn turn<B: Backend>(
        &mut self,
        plan: &Plan,
        whole_points: Option<&[f64]>,
        backend: &mut B,
    ) -> anyhow::Result<bool> {
        let name = self.name;
        let mut attempt = 0u32;
        while !backend.stopped() {
            let Some(next) = schedule::next_trial(plan, backend.sweep(), name, whole_points) else {
                return Ok(false);
            };
            // A trial that neither completed nor killed the engine is not run
            // again (that would never end); the report shows it as partial.
            if self.last == Some((next.x.to_bits(), next.t)) && attempt == 0 {
                backend.notice(report::Notice::engine(
                    report::NoticeKind::NotRetried,
                    name,
                    format!(
                        "{name}: trial {} at x={} did not complete and was not retried",
                        next.t + 1,
                        next.x
                    ),
                ));
                return Ok(false);
            }
            self.last = Some((next.x.to_bits(), next.t));
            let at = At::new(name, next, attempt);
            match backend.trial(&at).await? {
                Ran::Kept | Ran::NotStarted => return Ok(true),
                Ran::Died(status) => match backend.died(&at, status).await? {
                    AfterDeath::Restarted => attempt += 1,
                    AfterDeath::Over => return Ok(false),
                },
            }
        }
        Ok(true)
    }
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
    use crate::sweep::state::{PointKey, TrialState};

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
        /// The engine of every trial run.
        engines: Vec<String>,
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
            self.engines.push(at.name.to_string());
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
        mock_of(
            script,
            restarts_left,
            "[engines.e]\nurl = \"http://127.0.0.1:1\"\n",
        )
    }

    fn mock_of(script: &[Does], restarts_left: u32, engines: &str) -> Mock {
        let text = format!("name = \"m\"\n[slo]\nttft_ms = 100\n[load]\npoints = [1, 2]\nrequests_per_trial = 4\ntrials = 2\nseed = 11\n[workload]\ninput_tokens = 8\noutput_tokens = 4\n{engines}");
        let plan = crate::define::profile::Profile::parse(&text, "m.toml")
            .unwrap()
            .into_plan("m.toml", &Default::default())
            .unwrap();
        Mock {
            plan,
            sweep: Sweep::default(),
            script: script.iter().copied().collect(),
            ran: Vec::new(),
            engines: Vec::new(),
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

    const TWO: &str =
        "[engines.a]\nurl = \"http://127.0.0.1:1\"\n[engines.b]\nurl = \"http://127.0.0.1:2\"\n";

    fn run_both(m: &mut Mock) {
        let plan = m.plan.clone();
        without_waiting(drive_interleaved(&plan, &["a", "b"], None, m))
            .expect("the mock never waits")
            .unwrap();
    }

    #[test]
    fn interleaved_engines_take_each_trial_in_rounds_in_the_seeded_order() {
        let mut m = mock_of(&[], 0, TWO);
        run_both(&mut m);
        // Each engine's own trials in the plan's order, 4 each.
        for e in ["a", "b"] {
            let own: Vec<_> = m
                .engines
                .iter()
                .zip(&m.ran)
                .filter(|(n, _)| *n == e)
                .map(|(_, r)| *r)
                .collect();
            assert_eq!(
                own,
                [(1.0, 0, 0), (1.0, 1, 0), (2.0, 0, 0), (2.0, 1, 0)],
                "{e}"
            );
        }
        // Rounds of one trial each, in the order drawn for the round from seed 11.
        for (k, pair) in m.engines.chunks(2).enumerate() {
            let want: Vec<&str> = super::interleave::round_order(11, k as u32, 2)
                .into_iter()
                .map(|i| ["a", "b"][i])
                .collect();
            assert_eq!(pair, &want[..], "round {k}");
        }
    }

    #[test]
    fn an_interleaved_engine_that_dies_for_good_drops_out_and_the_other_goes_on() {
        // The first trial run dies with no restart allowed: that engine is over.
        let mut m = mock_of(&[Does::Dies], 0, TWO);
        run_both(&mut m);
        let first = m.engines[0].clone();
        assert_eq!(m.engines.iter().filter(|n| **n == first).count(), 1);
        assert_eq!(m.engines.len(), 1 + 4);
    }

    #[test]
    fn an_interleaved_death_is_restarted_and_rerun_within_the_engine_s_turn() {
        let mut m = mock_of(&[Does::Dies], 1, TWO);
        run_both(&mut m);
        // The dead trial ran again at once as attempt 1, on the same engine.
        assert_eq!(m.engines[0], m.engines[1]);
        assert_eq!((m.ran[0].2, m.ran[1].2), (0, 1));
        assert_eq!(m.ran.len(), 9);
    }

    #[test]
    fn an_interleaved_run_stops_when_asked() {
        let mut m = mock_of(&[], 0, TWO);
        m.stop_after = 3;
        run_both(&mut m);
        assert_eq!(m.ran.len(), 3);
    }
}
