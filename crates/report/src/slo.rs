//! The SLO judgement of a point as a report holds it: the stored one, or, for a
//! report written before judgements were stored (the reference included), the
//! attainment rule on what it holds. goodput's metrics judge the points of a run
//! with the same [`judge_attainment`]; renderers read [`point_judgement`].

use crate::stats::{wilson_interval, Z95};
use crate::{Judgement, Point, Report, SloForm};

/// The attainment target when an SLO names none: 90% of requests good.
pub const DEFAULT_ATTAINMENT: f64 = 0.9;

/// The judgement of `good` of `sent` requests against `target`; `None` when
/// nothing was sent.
pub fn judge_attainment(good: u64, sent: u64, target: f64) -> Option<Judgement> {
    if target >= 1.0 {
        return (sent > 0).then_some(if good >= sent {
            Judgement::Meets
        } else {
            Judgement::Fails
        });
    }
    let (lo, hi) = wilson_interval(good, sent, Z95)?;
    Some(if lo >= target - 1e-12 {
        Judgement::Meets
    } else if hi < target - 1e-12 {
        Judgement::Fails
    } else {
        Judgement::Undecided
    })
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
/// the same rule on what it holds; `None` when it cannot be told.
pub fn point_judgement(report: &Report, p: &Point) -> Option<Judgement> {
    if let Some(c) = &p.slo_check {
        if let Some(j) = c.judgement {
            return Some(j);
        }
        return match c.form {
            SloForm::Attainment => judge_attainment(c.good, c.sent, c.target),
            SloForm::Percentile | SloForm::Unknown(_) => Some(if c.meets {
                Judgement::Meets
            } else {
                Judgement::Fails
            }),
        };
    }
    let target = report.slo.attainment.unwrap_or(DEFAULT_ATTAINMENT);
    let (good, sent) = point_counts(p)?;
    judge_attainment(good, sent, target)
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
}
