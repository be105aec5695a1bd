//! The outlier rule: a request far out of a point's pooled TTFT or E2EL
//! distribution (the modified Z-score over the median absolute deviation, as
//! hyperfine flags outliers). goodput's metrics list a point's outliers with it;
//! the warnings count them with the same rule on what a report holds.

use crate::stats::{quantile_linear, sort_values};

/// Modified Z-score above which a request is far out of the spread (hyperfine's).
pub const OUTLIER_SCORE: f64 = 14.0;
/// A far-out request must also be at least this many times the median.
pub const OUTLIER_MIN_RATIO: f64 = 2.0;
/// A request above this many times the median is an outlier whatever the spread.
pub const OUTLIER_DOMINANT_RATIO: f64 = 10.0;
/// Fewer pooled requests than this: no outlier check (no spread to judge by).
pub const OUTLIER_MIN_REQUESTS: usize = 5;
/// At most this many outliers are listed per point.
pub const OUTLIER_MAX_LISTED: usize = 16;

/// Median and median absolute deviation of an ascending slice; `None` when empty.
pub fn median_and_mad(sorted: &[f64]) -> Option<(f64, f64)> {
    let median = quantile_linear(sorted, 0.5)?;
    let mut dev: Vec<f64> = sorted.iter().map(|v| (v - median).abs()).collect();
    sort_values(&mut dev);
    Some((median, quantile_linear(&dev, 0.5).unwrap_or(0.0)))
}

/// Modified Z-score `0.6745 (v - median) / mad`; `None` when `mad` is 0.
pub fn outlier_score(v: f64, median: f64, mad: f64) -> Option<f64> {
    (mad > 0.0).then(|| 0.6745 * (v - median) / mad)
}

/// The outlier rule: far out of the spread and at least twice the
/// median, or more than ten times the median. Slow side only; with a MAD of 0 (most
/// values equal) any value above the median is far out of the spread.
pub fn is_outlier(v: f64, median: f64, mad: f64) -> bool {
    let far = outlier_score(v, median, mad).map_or(v > median, |s| s > OUTLIER_SCORE)
        && v >= OUTLIER_MIN_RATIO * median;
    median > 0.0 && (far || v > OUTLIER_DOMINANT_RATIO * median)
}
