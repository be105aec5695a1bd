//! The outlier rule ("outliers" in the parent's definitions): requests far out
//! of a point's pooled TTFT or E2EL distribution.

use report::stats::sort_values;
use report::Outlier;

use super::TrialMetrics;

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
    let median = crate::stats::median(sorted.iter().copied())?;
    let mad = crate::stats::median(sorted.iter().map(|v| (v - median).abs()));
    Some((median, mad.unwrap_or(0.0)))
}

/// Modified Z-score `0.6745 (v - median) / mad`; `None` when `mad` is 0.
pub fn outlier_score(v: f64, median: f64, mad: f64) -> Option<f64> {
    (mad > 0.0).then(|| 0.6745 * (v - median) / mad)
}

/// The outlier rule (module doc): far out of the spread and at least twice the
/// median, or more than ten times the median. Slow side only; with a MAD of 0 (most
/// values equal) any value above the median is far out of the spread.
pub fn is_outlier(v: f64, median: f64, mad: f64) -> bool {
    let far = outlier_score(v, median, mad).map_or(v > median, |s| s > OUTLIER_SCORE)
        && v >= OUTLIER_MIN_RATIO * median;
    median > 0.0 && (far || v > OUTLIER_DOMINANT_RATIO * median)
}

/// The outliers of a point: requests whose TTFT or E2EL is far out of the pooled
/// distribution of the point's trials (the rule is in the module doc), worst (largest
/// multiple of the median) first, at most [`OUTLIER_MAX_LISTED`].
pub fn outliers(trials: &[TrialMetrics]) -> Vec<Outlier> {
    let mut out = Vec::new();
    type Values = fn(&TrialMetrics) -> &Vec<f64>;
    let per_metric: [(&str, Values); 2] = [("ttft", |t| &t.ttfts_ms), ("e2el", |t| &t.e2els_ms)];
    for (metric, values) in per_metric {
        let pooled: Vec<(f64, u32, u32)> = trials
            .iter()
            .flat_map(|t| {
                values(t)
                    .iter()
                    .zip(&t.request_indexes)
                    .map(|(&v, &i)| (v, t.trial, i))
            })
            .filter(|(v, _, _)| v.is_finite())
            .collect();
        if pooled.len() < OUTLIER_MIN_REQUESTS {
            continue;
        }
        let mut sorted: Vec<f64> = pooled.iter().map(|p| p.0).collect();
        sort_values(&mut sorted);
        let Some((median, mad)) = median_and_mad(&sorted) else {
            continue;
        };
        for (v, trial, index) in pooled {
            if is_outlier(v, median, mad) {
                out.push(Outlier {
                    metric: metric.to_string(),
                    trial,
                    index,
                    value_ms: v,
                    median_ms: median,
                    score: outlier_score(v, median, mad),
                });
            }
        }
    }
    out.sort_by(|a, b| (b.value_ms / b.median_ms).total_cmp(&(a.value_ms / a.median_ms)));
    out.truncate(OUTLIER_MAX_LISTED);
    out
}
