//! Capacity search: the largest load at which an engine meets the SLO.
//!
//! A loop of ordinary points. [`next_step`] is pure: given what has been measured
//! so far (one [`Obs`] per load level probed), it says which load to run next and
//! with how many trials, or that the search is done. The runner (`run/`) runs that
//! point through the same trial runner as `goodput run`, which makes every probe
//! durable, and asks again. Because the decision depends only on the measured
//! points, a resumed search replays to where it stopped and continues.
//!
//! The method:
//! 1. **Bracket**: probe `min`, then grow the load geometrically (`growth`, default
//!    ×2) until a probe fails the SLO or `max` is reached.
//! 2. **Narrow** inside the bracket (last passing `p`, first failing `f`): the next
//!    probe is where the straight line through the measured attainments at `p` and
//!    `f` crosses the target (regula falsi), kept within the middle half of the
//!    bracket; when both ends are saturated (attainment 1 and 0: no slope to read),
//!    the midpoint. Concurrency narrows to adjacent integers, rate to
//!    `f − p ≤ resolution × p`.
//! 3. **Confirm**: a probe passes or fails by its stored SLO judgement
//!    ([`report::Judgement`]: its interval, over-dispersed and at the level of the
//!    look, `trials::plan_looks`, against the target), not by its
//!    point estimate. A probe judged `undecided` is neither: it gets more trials
//!    by the one trial rule ([`TrialRule`], the rule of adaptive trials), up to
//!    `max_trials_per_probe` (and with `trials = "auto"`, until its key metrics'
//!    interval is narrow enough), before the bracket moves on. If its judgement
//!    comes out either way, narrowing goes on from there; if it is still undecided
//!    when its trials are spent, its point estimate steers the search and the
//!    result names it ([`Found::noisy`] for the probes that decide the answer).
//!
//! With the cost objective ([`cost`]), the search then looks below the capacity
//! for the load whose good tokens cost least.
//!
//! Bounded: at most `max_probes` load levels and `max_trials_per_probe` trials each.
//! Non-monotone measurements (a pass above a fail) are resolved by the lowest
//! failing load; the capacity itself is then read off a monotone curve fitted to
//! every probe ([`crate::stats::capacity`]).

pub mod cost;
#[cfg(test)]
pub(crate) mod tests;
pub mod trials;

use report::Judgement;

use crate::define::plan::{SearchConfig, TrialRule};
use crate::define::profile::LoadMode;
use crate::define::profile::Objective;

/// What was measured at one load level.
#[derive(Debug, Clone, PartialEq)]
pub struct Obs {
    /// The load.
    pub x: f64,
    /// Complete trials.
    pub trials: u32,
    /// Pooled attainment (good / sent), `None` when nothing was sent.
    pub attainment: Option<f64>,
    /// 95% interval of the pooled attainment.
    pub ci: Option<(f64, f64)>,
    /// The point estimate meets the SLO (`slo_check.meets`).
    pub meets: bool,
    /// The point's stored SLO judgement; `None` (an older report) reads as
    /// `undecided` when `ci` straddles the target, else as `meets`.
    pub judgement: Option<Judgement>,
    /// Median over trials of the output tokens of good requests per second (the
    /// cost objective's measure); `None` when unknown.
    pub good_tokens_per_s: Option<f64>,
    /// Relative half-width of the 95% interval of the per-trial median TTFT and
    /// TPOT (the wider), [`crate::stats::spread`]; `None` under two trials.
    pub width: Option<f64>,
}

impl Obs {
    /// True when the interval has the target strictly inside it: more trials could
    /// change the decision.
    pub fn straddles(&self, target: f64) -> bool {
        self.ci.is_some_and(|(lo, hi)| lo < target && target < hi)
    }

    /// The probe's SLO judgement: the stored one, else from `ci` and `meets`.
    pub fn judged(&self, target: f64) -> Judgement {
        match self.judgement {
            Some(j @ (Judgement::Meets | Judgement::Fails | Judgement::Undecided)) => j,
            None | Some(Judgement::Unknown) if self.straddles(target) => Judgement::Undecided,
            None | Some(Judgement::Unknown) if self.meets => Judgement::Meets,
            None | Some(Judgement::Unknown) => Judgement::Fails,
        }
    }

    /// True when the probe's judgement is `undecided`.
    pub fn undecided(&self, target: f64) -> bool {
        self.judged(target) == Judgement::Undecided
    }

    /// What the trial rule reads of this probe, judged against `target`.
    pub fn settled(&self, target: f64) -> trials::Settled {
        trials::Settled {
            trials: self.trials,
            decisive: !self.undecided(target),
            width: self.width,
        }
    }

    /// Which side of the capacity the probe lies on, for the bracket: its
    /// judgement; an undecided probe whose trials are spent by `cfg`'s rule, by its
    /// point estimate; `None` while an undecided probe may still get trials.
    fn passes(&self, cfg: &SearchConfig) -> Option<bool> {
        match self.judged(cfg.target) {
            Judgement::Meets => Some(true),
            Judgement::Fails => Some(false),
            Judgement::Undecided | Judgement::Unknown => cfg
                .rule()
                .stopped(self.settled(cfg.target))
                .map(|_| self.meets),
        }
    }
}

/// Why the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Passing and failing loads are adjacent (or within the resolution).
    Resolved,
    /// The lowest load fails.
    LowestFails,
    /// The highest load passes.
    MaxPasses,
    /// `max_probes` load levels were probed before the bracket was narrow enough.
    ProbeBudget,
}

/// The search's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Largest probed load that met the SLO (below the lowest failing one).
    pub passing: Option<f64>,
    /// Lowest probed load that failed.
    pub failing: Option<f64>,
    /// Why it stopped.
    pub reason: Reason,
    /// Deciding probes (`passing`, `failing`) still judged `undecided` after the
    /// most trials allowed: their point estimates placed the bracket.
    pub noisy: Vec<f64>,
    /// Some load above `failing` passed (the measurements are not monotone).
    pub non_monotone: bool,
    /// The cost objective: the load meeting the SLO with the least cost per good
    /// token (`None` with the capacity objective).
    pub cheapest: Option<f64>,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Run load `x` until it has `trials` complete trials.
    Run {
        /// The load.
        x: f64,
        /// Complete trials wanted in total.
        trials: u32,
    },
    /// The search is over.
    Done(Found),
}

/// Rounds a rate to 3 significant digits (probes people can read and type).
fn round_rate(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return x;
    }
    let mag = x.log10().floor() as i32;
    let scale = 10f64.powi(2 - mag);
    (x * scale).round() / scale
}

impl SearchConfig {
    /// The trial rule of the deciding probes: from the base trials up to
    /// `max_trials_per_probe`.
    pub fn rule(&self) -> TrialRule {
        TrialRule {
            min: self.base_trials,
            max: self.max_trials_per_probe,
            width: self.width,
        }
    }

    fn snap(&self, x: f64) -> f64 {
        let x = x.clamp(self.min, self.max);
        match self.mode {
            LoadMode::Concurrency => x.round().clamp(self.min.ceil(), self.max.floor()),
            LoadMode::Rate | LoadMode::Trace => round_rate(x).clamp(self.min, self.max),
        }
    }

    /// True when `p` and `f` are as close as the search resolves.
    fn resolved(&self, p: f64, f: f64) -> bool {
        match self.mode {
            LoadMode::Concurrency => f - p <= 1.0,
            LoadMode::Rate | LoadMode::Trace => f - p <= self.resolution * p * (1.0 + 1e-9),
        }
    }
}

/// The next step of the search, from the points measured so far (any order).
/// Observations outside `[min, max]` are ignored.
pub fn next_step(cfg: &SearchConfig, measured: &[Obs]) -> Step {
    match (cfg.objective, capacity_step(cfg, measured)) {
        (Objective::Cost, Step::Done(found)) => cost::refine(cfg, &in_range(cfg, measured), found),
        (_, step) => step,
    }
}

/// The capacity search's next step.
fn capacity_step(cfg: &SearchConfig, measured: &[Obs]) -> Step {
    let obs = in_range(cfg, measured);
    // A probe first gets its base trials (also: a probe cut short by a crash).
    if let Some(o) = obs.iter().find(|o| o.trials < cfg.base_trials) {
        return Step::Run {
            x: o.x,
            trials: cfg.base_trials,
        };
    }
    // An undecided probe below the lowest failure gets its trials before the
    // bracket moves on (the lowest load first).
    let lowest_fail = obs
        .iter()
        .find(|o| o.passes(cfg) == Some(false))
        .map(|o| o.x);
    if let Some(o) = obs
        .iter()
        .filter(|o| lowest_fail.is_none_or(|f| o.x <= f))
        .find(|o| o.passes(cfg).is_none())
    {
        return Step::Run {
            x: o.x,
            trials: o.trials + 1,
        };
    }
    let lowest = cfg.snap(cfg.min);
    let Some(first) = obs.first() else {
        return run_new(lowest, cfg);
    };
    let bracket = Bracket::of(cfg, &obs);
    let budget_left = (obs.len() as u32) < cfg.max_probes;
    match (bracket.passing, bracket.failing) {
        (None, Some(f)) => {
            if first.x > lowest && budget_left {
                // Measured above the lowest load only (a changed `min`): probe it.
                return run_new(lowest, cfg);
            }
            bracket.done(cfg, Reason::LowestFails, &[f])
        }
        (Some(p), None) => bracket.grow(cfg, p, budget_left),
        (Some(p), Some(f)) => bracket.narrow(cfg, p, f, budget_left),
        (None, None) => run_new(lowest, cfg),
    }
}

/// The observations within `[min, max]`, by load.
fn in_range<'a>(cfg: &SearchConfig, measured: &'a [Obs]) -> Vec<&'a Obs> {
    let mut obs: Vec<&Obs> = measured
        .iter()
        .filter(|o| o.x >= cfg.min - 1e-12 && o.x <= cfg.max + 1e-12)
        .collect();
    obs.sort_by(|a, b| a.x.total_cmp(&b.x));
    obs
}

/// What the probes so far bracket: the largest passing load below the lowest
/// failing one, and that failing one.
struct Bracket<'a> {
    passing: Option<&'a Obs>,
    failing: Option<&'a Obs>,
    /// Some load above `failing` passed.
    non_monotone: bool,
}

impl<'a> Bracket<'a> {
    /// The bracket of observations sorted by load, each on the side its judgement
    /// puts it ([`Obs::passes`]; a probe still owed trials on neither).
    fn of(cfg: &SearchConfig, obs: &[&'a Obs]) -> Bracket<'a> {
        let pass = |o: &Obs| o.passes(cfg) == Some(true);
        let failing = obs.iter().find(|o| o.passes(cfg) == Some(false)).copied();
        let passing = obs
            .iter()
            .rfind(|o| pass(o) && failing.is_none_or(|f| o.x < f.x))
            .copied();
        let non_monotone = failing.is_some_and(|f| obs.iter().any(|o| pass(o) && o.x > f.x));
        Bracket {
            passing,
            failing,
            non_monotone,
        }
    }

    /// The search is over for `reason`, once the deciding probes are confirmed:
    /// while the trial rule gives one another trial, it gets it.
    fn done(&self, cfg: &SearchConfig, reason: Reason, deciding: &[&Obs]) -> Step {
        for o in deciding {
            if cfg.rule().stopped(o.settled(cfg.target)).is_none() {
                return Step::Run {
                    x: o.x,
                    trials: o.trials + 1,
                };
            }
        }
        Step::Done(Found {
            passing: self.passing.map(|o| o.x),
            failing: self.failing.map(|o| o.x),
            reason,
            noisy: deciding
                .iter()
                .filter(|o| o.undecided(cfg.target))
                .map(|o| o.x)
                .collect(),
            non_monotone: self.non_monotone,
            cheapest: None,
        })
    }

    /// Nothing failed yet: grow the load from the highest pass `p`, up to `max`.
    fn grow(&self, cfg: &SearchConfig, p: &Obs, budget_left: bool) -> Step {
        if p.x >= cfg.max - 1e-12 || cfg.snap(cfg.max) <= p.x {
            return self.done(cfg, Reason::MaxPasses, &[p]);
        }
        if !budget_left {
            return self.done(cfg, Reason::ProbeBudget, &[p]);
        }
        let next = cfg.snap(p.x * cfg.growth).max(match cfg.mode {
            LoadMode::Concurrency => p.x + 1.0,
            LoadMode::Rate | LoadMode::Trace => p.x,
        });
        let next = next.min(cfg.snap(cfg.max));
        if next <= p.x {
            return self.done(cfg, Reason::MaxPasses, &[p]);
        }
        run_new(next, cfg)
    }

    /// A pass `p` below a fail `f`: probe inside until they are as close as the
    /// search resolves.
    fn narrow(&self, cfg: &SearchConfig, p: &Obs, f: &Obs, budget_left: bool) -> Step {
        if cfg.resolved(p.x, f.x) {
            return self.done(cfg, Reason::Resolved, &[p, f]);
        }
        if !budget_left {
            return self.done(cfg, Reason::ProbeBudget, &[p, f]);
        }
        match inside(cfg, p, f) {
            Some(x) => run_new(x, cfg),
            // Nothing representable strictly inside: as narrow as it gets.
            None => self.done(cfg, Reason::Resolved, &[p, f]),
        }
    }
}

fn run_new(x: f64, cfg: &SearchConfig) -> Step {
    Step::Run {
        x,
        trials: cfg.base_trials,
    }
}

/// The next probe strictly inside `(p, f)`: interpolated where the attainment line
/// crosses the target, kept within the middle half; the midpoint when the ends
/// carry no slope. `None` when no representable load lies strictly inside.
fn inside(cfg: &SearchConfig, p: &Obs, f: &Obs) -> Option<f64> {
    let (a, b) = (p.attainment.unwrap_or(1.0), f.attainment.unwrap_or(0.0));
    let saturated = a >= 1.0 && b <= 0.0;
    let frac = if !saturated && a > b && (b..=a).contains(&cfg.target) {
        ((a - cfg.target) / (a - b)).clamp(0.25, 0.75)
    } else {
        0.5
    };
    let raw = p.x + frac * (f.x - p.x);
    let mut x = cfg.snap(raw);
    if cfg.mode == LoadMode::Concurrency {
        x = x.clamp(p.x + 1.0, f.x - 1.0);
    }
    (x > p.x && x < f.x).then_some(x)
}
