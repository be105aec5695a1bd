//! Summary statistics used in reports.
//!
//! Two quantile rules, both as numpy names them:
//! - [`quantile_linear`]: numpy's default (`method="linear"`, Hyndman & Fan type 7):
//!   `h = q (n-1)`, interpolate between `sorted[floor h]` and `sorted[ceil h]`.
//!   Used for the per-trial scalars (median and p99 of TTFT, TPOT, ITL, E2EL) and for
//!   the median over trials in [`Stat`].
//! - [`quantile_lower`]: numpy's `method="lower"`: `sorted[floor(q (n-1))]`. Used for
//!   the pooled quantile grids (`ttft_quantiles_ms`, `tpot_quantiles_ms`), as in the
//!   reference report.
//!
//! Both take an already sorted slice without NaN; callers sort once with [`sort_values`].
//!
//! The tests behind every "better" and "worse", here so that `compare` and the
//! verdict (which reads a report alone) call the same ones: [`trials`] (Welch's t
//! over trials, the trial-to-trial variance pooled over load levels),
//! [`proportion`] (Newcombe's interval for a share of requests), [`multiple`]
//! (Holm's correction), [`change`] (a relative change, its p-value, equivalence,
//! the trials that would detect it).
//!
//! The SLO judgement's attainment: [`dispersed`] (the interval that allows for
//! over-dispersion between trials) and [`sequential`] (the level of each look when
//! trials are added until a point is decided).

use serde::{Deserialize, Serialize};

pub mod change;
pub mod dispersed;
pub mod multiple;
pub mod proportion;
pub mod sequential;
pub mod trials;

pub use change::{normal_quantile, t_quantile, trials_needed, two_sided_p, upper_tail, Change};

/// Sorts values ascending, dropping NaN (a NaN is never a measurement).
pub fn sort_values(values: &mut Vec<f64>) {
    values.retain(|v| !v.is_nan());
    values.sort_by(f64::total_cmp);
}

/// numpy's default quantile (linear interpolation) of an ascending slice.
/// `None` when the slice is empty. `q` is clamped to `[0, 1]`.
pub fn quantile_linear(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    let (a, b) = (sorted[lo.min(n - 1)], sorted[hi.min(n - 1)]);
    Some(a + (h - lo as f64) * (b - a))
}

/// numpy's "lower" quantile: `sorted[floor(q (n-1))]`. `None` when empty.
pub fn quantile_lower(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let idx = (q.clamp(0.0, 1.0) * (n - 1) as f64).floor() as usize;
    Some(sorted[idx.min(n - 1)])
}

/// One scalar summarised over the trials of a load point: `{median, min, max, n}`.
///
/// `n` is the number of trials that produced the scalar; `median` uses
/// [`quantile_linear`] (the mean of the middle two for an even `n`). When no trial
/// produced it, `n = 0` and the three values are `null`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Stat {
    /// Median over trials.
    pub median: Option<f64>,
    /// Smallest trial value.
    pub min: Option<f64>,
    /// Largest trial value.
    pub max: Option<f64>,
    /// Trials that produced a value.
    pub n: u32,
}

impl Stat {
    /// Summarises per-trial values; `None` entries (a trial that produced no value)
    /// are not counted.
    pub fn from_trials<I: IntoIterator<Item = Option<f64>>>(values: I) -> Stat {
        let mut v: Vec<f64> = values.into_iter().flatten().collect();
        sort_values(&mut v);
        Stat {
            median: quantile_linear(&v, 0.5),
            min: v.first().copied(),
            max: v.last().copied(),
            n: v.len() as u32,
        }
    }

    /// True when the trial ranges `[min, max]` of two summaries overlap.
    pub fn overlaps(&self, other: &Stat) -> bool {
        match (self.min, self.max, other.min, other.max) {
            (Some(a0), Some(a1), Some(b0), Some(b1)) => a0 <= b1 && b0 <= a1,
            _ => true,
        }
    }
}

/// z for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval of a binomial proportion `successes / trials` at the
/// normal quantile `z` (1.96 for 95%): `(p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) /
/// (1 + z²/n)`. Unlike the normal ("Wald") interval it stays inside [0, 1] and is
/// not empty at 0 or n successes, which is where SLO attainment usually sits.
/// `None` when `trials` is 0.
pub fn wilson_interval(successes: u64, trials: u64, z: f64) -> Option<(f64, f64)> {
    if trials == 0 {
        return None;
    }
    let n = trials as f64;
    let p = successes.min(trials) as f64 / n;
    let z2 = z * z;
    let centre = p + z2 / (2.0 * n);
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let denom = 1.0 + z2 / n;
    let lo = ((centre - half) / denom).clamp(0.0, 1.0);
    let hi = ((centre + half) / denom).clamp(0.0, 1.0);
    // At the ends the interval reaches exactly 0 or 1 (rounding aside).
    let lo = if successes == 0 { 0.0 } else { lo };
    let hi = if successes >= trials { 1.0 } else { hi };
    Some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_published_values() {
        // 8/10 at 95%: (0.4902, 0.9433) (Wilson 1927; e.g. statsmodels proportion_confint).
        let (lo, hi) = wilson_interval(8, 10, Z95).unwrap();
        assert!(
            (lo - 0.4902).abs() < 1e-4 && (hi - 0.9433).abs() < 1e-4,
            "{lo} {hi}"
        );
        // 16/16: the lower end is n / (n + z²).
        let (lo, hi) = wilson_interval(16, 16, Z95).unwrap();
        assert!((lo - 16.0 / (16.0 + Z95 * Z95)).abs() < 1e-9 && hi == 1.0);
        let (lo, hi) = wilson_interval(0, 5, Z95).unwrap();
        assert!(lo == 0.0 && hi > 0.0 && hi < 0.5);
        assert_eq!(wilson_interval(0, 0, Z95), None);
    }

    #[test]
    fn linear_matches_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        // numpy.quantile([1,2,3,4], 0.5) == 2.5; 0.99 -> 3.97
        assert_eq!(quantile_linear(&v, 0.5), Some(2.5));
        assert!((quantile_linear(&v, 0.99).unwrap() - 3.97).abs() < 1e-12);
        assert_eq!(quantile_linear(&v, 0.0), Some(1.0));
        assert_eq!(quantile_linear(&v, 1.0), Some(4.0));
        assert_eq!(quantile_linear(&[7.0], 0.99), Some(7.0));
        assert_eq!(quantile_linear(&[], 0.5), None);
    }

    #[test]
    fn lower_matches_numpy() {
        let v: Vec<f64> = (0..32).map(f64::from).collect();
        // floor(0.02 * 31) = 0, floor(0.04*31) = 1, floor(0.5*31) = 15, floor(0.98*31)=30
        assert_eq!(quantile_lower(&v, 0.02), Some(0.0));
        assert_eq!(quantile_lower(&v, 0.04), Some(1.0));
        assert_eq!(quantile_lower(&v, 0.5), Some(15.0));
        assert_eq!(quantile_lower(&v, 0.98), Some(30.0));
        assert_eq!(quantile_lower(&v, 1.0), Some(31.0));
        assert_eq!(quantile_lower(&[], 1.0), None);
    }

    #[test]
    fn stat_over_trials() {
        let s = Stat::from_trials([Some(3.0), None, Some(1.0)]);
        assert_eq!(s.n, 2);
        assert_eq!(s.median, Some(2.0));
        assert_eq!((s.min, s.max), (Some(1.0), Some(3.0)));
        let empty = Stat::from_trials([None]);
        assert_eq!(empty.n, 0);
        assert_eq!(empty.median, None);
    }

    proptest::proptest! {
        #[test]
        fn quantiles_are_within_range(mut v in proptest::collection::vec(-1e9f64..1e9, 1..200), q in 0.0f64..=1.0) {
            sort_values(&mut v);
            let lin = quantile_linear(&v, q).unwrap();
            let low = quantile_lower(&v, q).unwrap();
            proptest::prop_assert!(lin >= v[0] && lin <= v[v.len()-1]);
            proptest::prop_assert!(low <= lin + 1e-6 * lin.abs().max(1.0));
        }
    }
}
