//! The one SLO judgement of a point: `meets`, `fails` or `undecided`, from the
//! pooled requests with their 95% interval against the target. Computed here
//! when a point is summarised, stored in the report ([`report::Judgement`]), and
//! shown as is by the table, the CSV, the HTML cells and strips, the verdict,
//! `compare` and `search`.
//!
//! - Attainment form: the pooled good / sent (a failed request is not good) with
//!   its interval that allows for over-dispersion between trials: the Wilson score
//!   interval (Wilson 1927) on the effective sample size `sent / deff`, the design
//!   effect `deff` the Pearson dispersion of the trials' counts, floored at 1 (Kish
//!   1965; Williams 1982; `report::stats::dispersed`; 1 with one trial). Read at
//!   95%, or, when trials are added until the point is decided (`trials = "auto"`,
//!   a search's confirmation), at the level of the look (Haybittle–Peto,
//!   `report::stats::sequential`). `meets` when its lower end is at or above the
//!   target, `fails` when its upper end is below, else `undecided`. A target of 1
//!   (every request) is a rule about the requests measured, not an estimate:
//!   `meets` when every request was good, else `fails`.
//! - Percentile form: for each bounded metric, the distribution-free interval of its
//!   pooled p-th percentile (a failed request slower than any,
//!   [`crate::stats::order`]). `meets` when every upper end is within its bound,
//!   `fails` when some lower end is beyond its bound, else `undecided`.
//!
//! Reports written before the judgement was stored get it from what they hold, by
//! the same rule (`report::slo::point_judgement`, which renderers use too): the stored counts, or for the reference
//! format (no good counts) a goodput of zero in every trial (none good).

use report::Judgement;

use crate::stats::order::quantile_interval;

pub use report::slo::{decided_by, judge_attainment, judge_trials, point_counts, point_judgement};

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

#[cfg(test)]
mod tests {
    use super::*;

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
