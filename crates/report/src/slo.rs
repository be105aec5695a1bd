//! The SLO judgement of a point as a report holds it: the stored one, or, for a
//! report written before judgements were stored (the reference included), the
//! attainment rule on what it holds. goodput's metrics judge the points of a run
//! with the same [`judge_trials`]; renderers read [`point_judgement`], and what
//! would decide an undecided point from [`point_undecided`] ([`decide`]).
//!
//! The attainment rule: the pooled attainment `good / sent` with its interval that
//! allows for over-dispersion between trials ([`crate::stats::dispersed`]: Wilson
//! on the effective sample size `sent / design effect`), at 95% or at the level of
//! the look ([`crate::stats::sequential`]); `meets` when the interval's lower end is
//! at or above the target, `fails` when its upper end is below it, else
//! `undecided`. A target of 1 is a rule on the requests measured.

pub mod decide;

pub use decide::{point_undecided, to_decide, ToDecide, Undecided};

use crate::stats::dispersed::{attainment_interval, Dispersed};
use crate::stats::Z95;
use crate::{Judgement, Point, Report, RunStatus, SloForm};

/// The attainment target when an SLO names none: 90% of requests good.
pub const DEFAULT_ATTAINMENT: f64 = 0.9;

/// The judgement of an attainment whose interval is `[low, high]` against `target`.
pub fn judge_interval(low: f64, high: f64, target: f64) -> Judgement {
    if low >= target - 1e-12 {
        Judgement::Meets
    } else if high < target - 1e-12 {
        Judgement::Fails
    } else {
        Judgement::Undecided
    }
}

/// The judgement of trials of `(good, sent)` requests against `target`, read at the
/// normal quantile `z` (1.96, or a look's, [`crate::stats::sequential`]), with the
/// interval it read; `None` when nothing was sent.
pub fn judge_trials(trials: &[(u64, u64)], target: f64, z: f64) -> Option<(Judgement, Dispersed)> {
    let d = attainment_interval(trials, z)?;
    if target >= 1.0 {
        let j = if d.good >= d.sent {
            Judgement::Meets
        } else {
            Judgement::Fails
        };
        return Some((j, d));
    }
    Some((judge_interval(d.low, d.high, target), d))
}

/// The judgement of `good` of `sent` requests as one trial (no spread between
/// trials known) at 95% against `target`; `None` when nothing was sent.
pub fn judge_attainment(good: u64, sent: u64, target: f64) -> Option<Judgement> {
    judge_trials(&[(good, sent)], target, Z95).map(|(j, _)| j)
}

/// The fewest requests whose outcome, reversed, would move the pooled attainment
/// `good / sent` to the other side of `target`; `None` when nothing was sent.
pub fn decided_by(good: u64, sent: u64, target: f64) -> Option<u64> {
    if sent == 0 {
        return None;
    }
    // The fewest good requests that meet the target.
    let need = ((target * sent as f64) - 1e-9)
        .ceil()
        .clamp(0.0, sent as f64) as u64;
    Some(if good >= need {
        good - need + 1
    } else {
        need - good
    })
}

/// The judgement of a point in a report: the stored one, or for an older report
/// the same rule on what it holds (per-trial counts when it lists them, at 95%);
/// `None` when it cannot be told.
pub fn point_judgement(report: &Report, p: &Point) -> Option<Judgement> {
    if let Some(c) = &p.slo_check {
        if let Some(j) = c.judgement {
            return Some(j);
        }
        return match c.form {
            SloForm::Attainment => {
                let trials = point_trial_counts(p)
                    .filter(|t| t.iter().map(|c| c.1).sum::<u64>() == c.sent)
                    .unwrap_or_else(|| vec![(c.good, c.sent)]);
                judge_trials(&trials, c.target, Z95).map(|(j, _)| j)
            }
            SloForm::Percentile | SloForm::Unknown(_) => Some(if c.meets {
                Judgement::Meets
            } else {
                Judgement::Fails
            }),
        };
    }
    let target = report.slo.attainment.unwrap_or(DEFAULT_ATTAINMENT);
    let trials = point_trial_counts(p).or_else(|| point_counts(p).map(|c| vec![c]))?;
    judge_trials(&trials, target, Z95).map(|(j, _)| j)
}

/// Good requests and requests sent at a point, from its check or its per-trial
/// counts; for a report that records no good counts, zero good when goodput was
/// zero in every trial.
pub fn point_counts(p: &Point) -> Option<(u64, u64)> {
    if let Some(c) = &p.slo_check {
        return Some((c.good, c.sent));
    }
    let sent: u64 =
        p.completed.iter().sum::<u64>() + p.failed.as_ref().map_or(0, |f| f.iter().sum());
    if let Some(good) = &p.good {
        return (sent > 0).then(|| (good.iter().sum(), sent));
    }
    let zero = p.goodput_rps.n > 0 && p.goodput_rps.max == Some(0.0);
    (zero && sent > 0).then_some((0, sent))
}

/// `(good, sent)` of each complete trial of a point, from `trials[]` (the trials
/// the point's summary is over), or from the per-trial `good`, `completed` and
/// `failed` lists; `None` when the report holds no per-trial good counts.
pub fn point_trial_counts(p: &Point) -> Option<Vec<(u64, u64)>> {
    if !p.trials.is_empty() {
        let done: Vec<(u64, u64)> = p
            .trials
            .iter()
            .filter(|t| t.status == RunStatus::Complete)
            .map(|t| (t.good, t.completed + t.failed))
            .collect();
        return (!done.is_empty()).then_some(done);
    }
    let good = p.good.as_ref()?;
    if good.len() != p.completed.len() {
        return None;
    }
    let failed = |i: usize| p.failed.as_ref().and_then(|f| f.get(i)).copied();
    Some(
        good.iter()
            .zip(&p.completed)
            .enumerate()
            .map(|(i, (&g, &c))| (g, c + failed(i).unwrap_or(0)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seven_of_eight_is_undecided_and_decided_by_one() {
        assert_eq!(judge_attainment(7, 8, 0.9), Some(Judgement::Undecided));
        assert_eq!(decided_by(7, 8, 0.9), Some(1));
        assert_eq!(judge_attainment(0, 64, 0.9), Some(Judgement::Fails));
        assert_eq!(judge_attainment(200, 200, 0.9), Some(Judgement::Meets));
        assert_eq!(judge_attainment(0, 0, 0.9), None);
        assert_eq!(decided_by(200, 200, 0.9), Some(21));
    }

    #[test]
    fn a_target_of_one_is_a_rule_on_the_requests() {
        assert_eq!(judge_attainment(8, 8, 1.0), Some(Judgement::Meets));
        assert_eq!(judge_attainment(7, 8, 1.0), Some(Judgement::Fails));
    }

    #[test]
    fn trials_that_disagree_widen_the_judgement() {
        // 95 + 99 of 100: pooled Wilson [0.9361, 0.9862] meets 93%; the two trials
        // differ more than a binomial would (X² = 8 / 2.91 = 2.749, on 1 df), so the
        // interval on n_eff = 200 / 2.749 = 72.75, [0.9015, 0.9913], straddles it.
        let pooled = judge_trials(&[(194, 200)], 0.93, Z95).unwrap();
        assert_eq!(pooled.0, Judgement::Meets);
        let (j, d) = judge_trials(&[(95, 100), (99, 100)], 0.93, Z95).unwrap();
        assert_eq!(j, Judgement::Undecided, "{d:?}");
        assert!((d.design_effect - 2.749_141).abs() < 1e-5, "{d:?}");
        assert!((d.low - 0.901_536).abs() < 1e-5 && (d.high - 0.991_318).abs() < 1e-5);
        // Alike trials keep the pooled judgement.
        let (j, _) = judge_trials(&[(97, 100), (97, 100)], 0.93, Z95).unwrap();
        assert_eq!(j, Judgement::Meets);
    }

    #[test]
    fn an_older_report_is_judged_on_its_trials() {
        let mut p = Point {
            completed: vec![100, 100],
            good: Some(vec![95, 99]),
            failed: Some(vec![0, 0]),
            ..Default::default()
        };
        let text = include_str!("../../../tests/data/l4-gpu1-vllm.json");
        let mut r = crate::io::parse_report(text).expect("the reference parses");
        r.slo.attainment = Some(0.93);
        assert_eq!(point_trial_counts(&p), Some(vec![(95, 100), (99, 100)]));
        assert_eq!(point_judgement(&r, &p), Some(Judgement::Undecided));
        // Without per-trial good counts: the pooled counts.
        p.good = None;
        p.goodput_rps = crate::Stat::from_trials([Some(0.0), Some(0.0)]);
        assert_eq!(point_trial_counts(&p), None);
        assert_eq!(point_judgement(&r, &p), Some(Judgement::Fails));
    }
}
