//! How sure we are: the intervals and tests behind every "meets", "better",
//! "worse" and "capacity" goodput says. Pure and seeded: the same data and seed give
//! the same intervals.
//!
//! - [`order`]: distribution-free confidence intervals for a percentile of pooled
//!   requests from order statistics (Hahn & Meeker, *Statistical Intervals*, 2nd
//!   ed., §5.2): `[x_(l), x_(u)]` with ranks chosen from Binomial(n, q) so that
//!   the interval covers the true q-quantile with probability ≥ 95%, whatever the
//!   distribution.
//! - `compare`'s tests, in the report crate so that the verdict repeats them on a
//!   report alone: [`report::stats::trials`] (Welch's t over trials, the
//!   trial-to-trial variance pooled over load levels and floored by the noise
//!   within a trial; Welch 1947, Satterthwaite 1946), [`report::stats::proportion`]
//!   (Newcombe's interval for a share of requests, over the effective requests),
//!   equivalence by the two one-sided tests (Schuirmann 1987), and [`multiple`]:
//!   Holm's step-down correction (Holm 1979) over a table of tests, controlling the
//!   chance of any false "better"/"worse" in the table at 5%.
//! - [`capacity`]: a search's capacity from a non-increasing attainment curve
//!   fitted to every probe (weighted isotonic regression, Barlow et al. 1972), and
//!   its interval from a beta-binomial bootstrap over all probes (Williams 1982;
//!   Davison & Hinkley 1997).
//! - [`spread`]: Student's t interval of a mean over trials, as a share of the
//!   mean: how settled a point's per-trial medians are (adaptive trials).
//!
//! - [`median`] and [`median_p99`]: the one median (and p99) goodput computes, by
//!   the report's linear rule ([`report::stats::quantile_linear`], numpy's default).
//!
//! docs/statistics.md says what each interval means and how `compare` decides.

pub mod capacity;
pub mod order;
pub mod spread;

/// The median of values in any order, NaN dropped, by the report's linear rule
/// ([`report::stats::quantile_linear`]: the mean of the middle two for an even
/// count); `None` when there is none.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().collect();
    report::stats::sort_values(&mut v);
    report::stats::quantile_linear(&v, 0.5)
}

/// The median and p99 of `values` by the same rule, sorting them in place (NaN
/// dropped) for the caller's further quantiles.
pub fn median_p99(values: &mut Vec<f64>) -> (Option<f64>, Option<f64>) {
    report::stats::sort_values(values);
    (
        report::stats::quantile_linear(values, 0.5),
        report::stats::quantile_linear(values, 0.99),
    )
}

/// The confidence level of every interval goodput reports.
pub const LEVEL: f64 = 0.95;

/// The seed of the capacity's bootstrap (and `compare --seed`'s default, which
/// changes nothing now that compare's tests draw nothing).
pub const DEFAULT_SEED: u64 = 0x5eed_600d;

pub use report::stats::{multiple, normal_quantile, trials_needed, two_sided_p, Change};

/// A seed for one row of a table, from the table's seed and the row's key, so that
/// a row's interval does not depend on which other rows the table has.
pub fn row_seed(seed: u64, key: &str) -> u64 {
    // FNV-1a over the key, mixed with the seed.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod median_tests {
    #[test]
    fn the_median_is_the_linear_rules_and_ignores_order_and_nan() {
        assert_eq!(super::median([3.0, f64::NAN, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(super::median([5.0]), Some(5.0));
        assert_eq!(super::median(std::iter::empty()), None);
        let mut v = vec![4.0, 1.0, 3.0, 2.0];
        let (m, p99) = super::median_p99(&mut v);
        assert_eq!((m, v.clone()), (Some(2.5), vec![1.0, 2.0, 3.0, 4.0]));
        assert!((p99.unwrap() - 3.97).abs() < 1e-12);
    }
}
