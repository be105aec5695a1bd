//! The outlier rule ("outliers" in the parent's definitions): requests far out
//! of a point's pooled TTFT or E2EL distribution.

use report::stats::sort_values;
use report::{Outlier, OutlierMetric};

use super::TrialMetrics;

pub use report::outlier::{
    is_outlier, median_and_mad, outlier_score, OUTLIER_DOMINANT_RATIO, OUTLIER_MAX_LISTED,
    OUTLIER_MIN_RATIO, OUTLIER_MIN_REQUESTS, OUTLIER_SCORE,
};

/// The outliers of a point: requests whose TTFT or E2EL is far out of the pooled
/// distribution of the point's trials (the rule is in the module doc), worst (largest
/// multiple of the median) first, at most [`OUTLIER_MAX_LISTED`].
pub fn outliers(trials: &[TrialMetrics]) -> Vec<Outlier> {
    let mut out = Vec::new();
    type Values = fn(&TrialMetrics) -> &Vec<f64>;
    let per_metric: [(OutlierMetric, Values); 2] = [
        (OutlierMetric::Ttft, |t| &t.ttfts_ms),
        (OutlierMetric::E2el, |t| &t.e2els_ms),
    ];
    for (metric, values) in per_metric {
        let pooled: Vec<(f64, u32, u32)> = trials
            .iter()
            // An answer not streamed has no TTFT: values and indexes pair only
            // when every successful request has the metric.
            .filter(|t| values(t).len() == t.request_indexes.len())
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
                    metric: metric.clone(),
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
