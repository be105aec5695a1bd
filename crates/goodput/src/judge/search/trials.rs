//! How many trials a point gets: the one rule behind adaptive trials
//! (`trials = "auto"`) and the search's confirmation trials.
//!
//! A point first gets `min` trials. Then, before each further trial, it stops when
//! 1. its SLO judgement is decisive (`meets` or `fails`: the attainment's interval
//!    does not straddle the target), or
//! 2. the interval of its key metrics (median TTFT and TPOT over trials,
//!    [`crate::stats::spread`]) is narrower than `width` (when one is set), or
//! 3. it has `max` trials (the budget);
//!
//! otherwise it gets one more trial. With a fixed trial count (`trials = N`) a grid
//! point gets exactly `N`, and the search confirms its deciding probes by this rule
//! with `min` its base trials, `max` its `max_trials_per_probe` and no width.
//!
//! Because the judgement is read after every trial from `min` to `max`, each read
//! is at the level of its look ([`plan_looks`], [`report::stats::sequential`]: a
//! one-sided 2.5% split in advance, half at the first look, the other half equally
//! over the later ones), so that a point whose true attainment sits on
//! the target is called `meets` about 2.5% of the time at most however early it
//! stops; the interval allows for over-dispersion between trials
//! ([`report::stats::dispersed`]). The seeded simulation in `calibration`
//! measures both (docs/statistics.md, "Adaptive trials").

use report::TrialsStopped;

use report::stats::sequential::Looks;

use crate::define::plan::{Plan, TrialRule};

/// What a point's trials so far say, as the rule reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settled {
    /// Complete trials.
    pub trials: u32,
    /// The SLO judgement is `meets` or `fails`.
    pub decisive: bool,
    /// Relative half-width of the key metrics' interval over trials, when known.
    pub width: Option<f64>,
}

/// The looks at a point's SLO judgement a plan makes: a search's probes and
/// adaptive trials are read after each trial from the first count to the most
/// ([`TrialRule::looks`]), a fixed trial count once.
pub fn plan_looks(plan: &Plan) -> Looks {
    match (&plan.search, plan.adaptive) {
        (Some(cfg), _) => cfg.rule().looks(),
        (None, Some(rule)) => rule.looks(),
        (None, None) => Looks::ONE,
    }
}

impl TrialRule {
    /// The looks this rule makes at a point's judgement: after `min` trials, then
    /// after each further one up to `max`.
    pub fn looks(&self) -> Looks {
        Looks::between(self.min, self.max)
    }

    /// Why the point gets no more trials, or `None` when it gets another.
    pub fn stopped(&self, s: Settled) -> Option<TrialsStopped> {
        if s.trials < self.min {
            return None;
        }
        if s.decisive {
            return Some(TrialsStopped::Decisive);
        }
        if let (Some(target), Some(w)) = (self.width, s.width) {
            if w <= target {
                return Some(TrialsStopped::Narrow);
            }
        }
        (s.trials >= self.max).then_some(TrialsStopped::Budget)
    }
}

#[cfg(test)]
mod calibration;

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: TrialRule = TrialRule {
        min: 2,
        max: 5,
        width: Some(0.02),
    };

    fn at(trials: u32, decisive: bool, width: Option<f64>) -> Option<TrialsStopped> {
        RULE.stopped(Settled {
            trials,
            decisive,
            width,
        })
    }

    #[test]
    fn the_minimum_comes_first_then_the_reasons_in_order() {
        assert_eq!(at(1, true, Some(0.0)), None, "below the minimum");
        assert_eq!(at(2, true, Some(0.5)), Some(TrialsStopped::Decisive));
        assert_eq!(at(2, false, Some(0.01)), Some(TrialsStopped::Narrow));
        assert_eq!(at(2, false, Some(0.05)), None);
        assert_eq!(at(4, false, None), None);
        assert_eq!(at(5, false, Some(0.05)), Some(TrialsStopped::Budget));
        assert_eq!(at(7, true, None), Some(TrialsStopped::Decisive));
    }

    #[test]
    fn without_a_width_only_the_judgement_and_the_budget_stop() {
        let r = TrialRule {
            width: None,
            ..RULE
        };
        let s = |trials, decisive| Settled {
            trials,
            decisive,
            width: Some(0.0),
        };
        assert_eq!(r.stopped(s(3, false)), None);
        assert_eq!(r.stopped(s(5, false)), Some(TrialsStopped::Budget));
    }
}
