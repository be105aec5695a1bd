//! The one SLO judgement of a point: `meets`, `fails` or `undecided`, from the
//! pooled requests with their 95% interval against the target. Computed here
//! when a point is summarised, stored in the report ([`report::Judgement`]), and
//! shown as is by the table, the CSV, the HTML cells and strips, the verdict,
//! `compare` and `search`.
//!
//! - Attainment form: the Wilson score interval of good / sent (a failed request
//!   is not good). `meets` when its lower end is at or above the target, `fails`
//!   when its upper end is below, else `undecided`. A target of 1 (every request)
//!   is a rule about the requests measured, not an estimate: `meets` when every
//!   request was good, else `fails`.
//! - Percentile form: for each bounded metric, the distribution-free interval of its
//!   pooled p-th percentile (a failed request slower than any,
//!   [`crate::stats::order`]). `meets` when every upper end is within its bound,
//!   `fails` when some lower end is beyond its bound, else `undecided`.
//!
//! Reports written before the judgement was stored get it from what they hold, by
//! the same rule ([`point_judgement`]): the stored counts, or for the reference
//! format (no good counts) a goodput of zero in every trial (none good).

use report::stats::{wilson_interval, Z95};
use report::{Judgement, Point, Report};

use super::DEFAULT_ATTAINMENT;
use crate::stats::order::quantile_interval;

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

/// The judgement of one bounded percentile: `values` the pooled successful
/// requests' values (sorted or not), `failed` requests counted slower than any.
pub fn judge_percentile(values: &[f64], failed: u64, p: f64, bound: f64) -> Judgement {
    let mut v = values.to_vec();
    v.extend(std::iter::repeat_n(f64::INFINITY, failed as usize));
    v.sort_by(f64::total_cmp);
    let Some(ci) = quantile_interval(&v, p / 100.0, crate::stats::LEVEL) else {
        return Judgement::Undecided;
    };
    if ci.high.is_some_and(|h| h <= bound) {
        Judgement::Meets
    } else if ci.low.is_some_and(|l| l > bound) {
        Judgement::Fails
    } else {
        Judgement::Undecided
    }
}

/// The judgement of a point from the judgements of its bounded percentiles: fails
/// when one fails, meets when all meet, else undecided.
pub fn all_of(parts: impl IntoIterator<Item = Judgement>) -> Judgement {
    let mut out = Judgement::Meets;
    for j in parts {
        match j {
            Judgement::Fails => return Judgement::Fails,
            Judgement::Meets => {}
            _ => out = Judgement::Undecided,
        }
    }
    out
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
        if c.form == "attainment" {
            return judge_attainment(c.good, c.sent, c.target);
        }
        return Some(if c.meets {
            Judgement::Meets
        } else {
            Judgement::Fails
        });
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

    #[test]
    fn percentiles_meet_fail_or_wait() {
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        assert_eq!(judge_percentile(&v, 0, 50.0, 150.0), Judgement::Meets);
        assert_eq!(judge_percentile(&v, 0, 50.0, 50.0), Judgement::Fails);
        assert_eq!(judge_percentile(&v, 0, 50.0, 100.0), Judgement::Undecided);
        assert_eq!(judge_percentile(&v, 200, 90.0, 1e9), Judgement::Fails);
        let all = [Judgement::Meets, Judgement::Undecided];
        assert_eq!(all_of(all), Judgement::Undecided);
        assert_eq!(
            all_of([Judgement::Fails, Judgement::Undecided]),
            Judgement::Fails
        );
    }
}
