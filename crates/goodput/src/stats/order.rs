//! Distribution-free confidence intervals for a quantile from order statistics
//! (Hahn & Meeker, *Statistical Intervals*, 2nd ed., §5.2).
//!
//! Of n independent values, the number below the true q-quantile is
//! Binomial(n, q). The interval `[x_(l), x_(u)]` (1-based ranks of the sorted
//! values) covers the quantile with probability `F(u-1) - F(l-1)`, F the Binomial
//! CDF; `l` is the largest rank with `F(l-1) ≤ α/2` and `u` the smallest with
//! `F(u-1) ≥ 1-α/2`, so each tail holds at most α/2 and the coverage is at least
//! 1-α whatever the distribution. When no rank is far enough out (too few
//! values for the quantile), that end of the interval is unbounded (`None`).

use statrs::distribution::{Binomial, DiscreteCDF};

/// A quantile's estimate (nearest rank) and its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantileInterval {
    /// Nearest-rank estimate: the value at rank `ceil(q n)`.
    pub estimate: f64,
    /// Lower end (infinite when it falls on a failed request); `None`: unbounded
    /// below (too few values).
    pub low: Option<f64>,
    /// Upper end; `None`: unbounded above (too few values).
    pub high: Option<f64>,
}

/// The ranks `(l, u)` (1-based; 0 or n+1 when unbounded) of the order-statistic
/// interval of the `q`-quantile of `n` values at confidence `level`.
pub fn ranks(n: usize, q: f64, level: f64) -> (usize, usize) {
    let Ok(b) = Binomial::new(q.clamp(0.0, 1.0), n as u64) else {
        return (0, n + 1);
    };
    let tail = (1.0 - level) / 2.0;
    let cdf = |k: usize| if k == 0 { 0.0 } else { b.cdf(k as u64 - 1) };
    // l: the largest rank in 1..=n with F(l-1) <= tail (0 when even rank 1 fails).
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if cdf(mid) <= tail {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let l = lo;
    // u: the smallest rank in 1..=n with F(u-1) >= 1 - tail (n+1 when none).
    let (mut lo, mut hi) = (1usize, n + 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if cdf(mid) >= 1.0 - tail {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    (l, lo)
}

/// The `q`-quantile of `sorted` (ascending; `f64::INFINITY` stands for a failed
/// request, slower than any) with its distribution-free interval at `level`.
/// `None` for no values.
pub fn quantile_interval(sorted: &[f64], q: f64, level: f64) -> Option<QuantileInterval> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    let (l, u) = ranks(n, q, level);
    let at = |r: usize| (r >= 1 && r <= n).then(|| sorted[r - 1]);
    Some(QuantileInterval {
        estimate: sorted[rank - 1],
        // A lower end on a failed request is infinite: the quantile is beyond any bound.
        low: at(l),
        high: at(u).filter(|v| v.is_finite()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn median_of_100_matches_the_tables() {
        // Hahn & Meeker Table A.15 (and the Binomial directly): for n = 100 the 95%
        // interval of the median is [x_(40), x_(61)].
        assert_eq!(ranks(100, 0.5, 0.95), (40, 61));
    }

    #[test]
    fn too_few_values_leave_an_end_open() {
        // p99 of 20 values: no rank is high enough for the upper end.
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let ci = quantile_interval(&v, 0.99, 0.95).unwrap();
        assert_eq!(ci.high, None);
        assert_eq!(ci.estimate, 20.0);
        assert!(quantile_interval(&[], 0.5, 0.95).is_none());
    }

    #[test]
    fn covers_the_true_median_at_least_95_percent() {
        // Exponential(1): median ln 2.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let truth = std::f64::consts::LN_2;
        let runs = 2000;
        let mut covered = 0;
        for _ in 0..runs {
            let mut v: Vec<f64> = (0..50).map(|_| -(1.0 - rng.gen::<f64>()).ln()).collect();
            v.sort_by(f64::total_cmp);
            let ci = quantile_interval(&v, 0.5, 0.95).unwrap();
            covered += (ci.low.unwrap() <= truth && truth <= ci.high.unwrap()) as u32;
        }
        let rate = f64::from(covered) / f64::from(runs);
        assert!((0.94..=0.99).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn failures_make_the_upper_end_open() {
        let mut v: Vec<f64> = (1..=50).map(f64::from).collect();
        v.extend([f64::INFINITY; 10]);
        let ci = quantile_interval(&v, 0.9, 0.95).unwrap();
        assert_eq!(ci.high, None);
        assert!(ci.low.is_some());
    }
}
