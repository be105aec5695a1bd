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
//! 3. **Confirm**: the two probes that decide the answer (`p` and `f`) get more
//!    trials, up to `max_trials_per_probe`, while the 95% Wilson interval of their
//!    pooled attainment straddles the target. If a decision flips, narrowing goes on;
//!    if the interval still straddles after the last trial, the result says so.
//!
//! Bounded: at most `max_probes` load levels and `max_trials_per_probe` trials each.
//! A probe's measured attainment decides pass or fail on the way; non-monotone
//! measurements (a pass above a fail) are resolved by the lowest failing load.

#[cfg(test)]
mod tests;

use crate::profile::LoadMode;

/// The search's bounds, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    /// What the load counts.
    pub mode: LoadMode,
    /// Lowest load probed.
    pub min: f64,
    /// Highest load probed.
    pub max: f64,
    /// Rate mode: relative resolution of the answer.
    pub resolution: f64,
    /// Attainment a point needs (also the level the confidence interval is judged
    /// against).
    pub target: f64,
    /// Most load levels probed.
    pub max_probes: u32,
    /// Trials each probe gets first.
    pub base_trials: u32,
    /// Most trials at one probe.
    pub max_trials_per_probe: u32,
    /// Growth factor while bracketing (> 1).
    pub growth: f64,
}

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
    /// The point meets the SLO.
    pub meets: bool,
}

impl Obs {
    /// True when the interval has the target strictly inside it: more trials could
    /// change the decision.
    pub fn straddles(&self, target: f64) -> bool {
        self.ci.is_some_and(|(lo, hi)| lo < target && target < hi)
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
    /// Deciding probes whose interval still straddles the target after the most
    /// trials allowed.
    pub noisy: Vec<f64>,
    /// Some load above `failing` passed (the measurements are not monotone).
    pub non_monotone: bool,
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
    let mut obs: Vec<&Obs> = measured
        .iter()
        .filter(|o| o.x >= cfg.min - 1e-12 && o.x <= cfg.max + 1e-12)
        .collect();
    obs.sort_by(|a, b| a.x.total_cmp(&b.x));
    // A probe first gets its base trials (also: a probe cut short by a crash).
    if let Some(o) = obs.iter().find(|o| o.trials < cfg.base_trials) {
        return Step::Run {
            x: o.x,
            trials: cfg.base_trials,
        };
    }
    let lowest = cfg.snap(cfg.min);
    let Some(first) = obs.first() else {
        return run_new(lowest, cfg);
    };
    let failing = obs.iter().find(|o| !o.meets).copied();
    let passing = obs
        .iter()
        .rfind(|o| o.meets && failing.is_none_or(|f| o.x < f.x))
        .copied();
    let non_monotone = failing.is_some_and(|f| obs.iter().any(|o| o.meets && o.x > f.x));
    let probes = obs.len() as u32;
    let budget_left = probes < cfg.max_probes;
    let done = |reason, deciding: &[Option<&Obs>]| -> Step {
        // Confirm the deciding probes while their interval straddles the target.
        for o in deciding.iter().flatten() {
            if o.straddles(cfg.target) && o.trials < cfg.max_trials_per_probe {
                return Step::Run {
                    x: o.x,
                    trials: o.trials + 1,
                };
            }
        }
        Step::Done(Found {
            passing: passing.map(|o| o.x),
            failing: failing.map(|o| o.x),
            reason,
            noisy: deciding
                .iter()
                .flatten()
                .filter(|o| o.straddles(cfg.target))
                .map(|o| o.x)
                .collect(),
            non_monotone,
        })
    };
    match (passing, failing) {
        (None, Some(f)) => {
            if first.x > lowest && budget_left {
                // Measured above the lowest load only (a changed `min`): probe it.
                return run_new(lowest, cfg);
            }
            done(Reason::LowestFails, &[Some(f)])
        }
        (Some(p), None) => {
            if p.x >= cfg.max - 1e-12 || cfg.snap(cfg.max) <= p.x {
                return done(Reason::MaxPasses, &[Some(p)]);
            }
            if !budget_left {
                return done(Reason::ProbeBudget, &[Some(p)]);
            }
            let next = cfg.snap(p.x * cfg.growth).max(match cfg.mode {
                LoadMode::Concurrency => p.x + 1.0,
                LoadMode::Rate | LoadMode::Trace => p.x,
            });
            let next = next.min(cfg.snap(cfg.max));
            if next <= p.x {
                return done(Reason::MaxPasses, &[Some(p)]);
            }
            run_new(next, cfg)
        }
        (Some(p), Some(f)) => {
            if cfg.resolved(p.x, f.x) {
                return done(Reason::Resolved, &[Some(p), Some(f)]);
            }
            if !budget_left {
                return done(Reason::ProbeBudget, &[Some(p), Some(f)]);
            }
            match inside(cfg, p, f) {
                Some(x) => run_new(x, cfg),
                // Nothing representable strictly inside: as narrow as it gets.
                None => done(Reason::Resolved, &[Some(p), Some(f)]),
            }
        }
        (None, None) => run_new(lowest, cfg),
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
