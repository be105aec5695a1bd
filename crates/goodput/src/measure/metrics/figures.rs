//! A trial's figures as `compare` and the verdict test them
//! ([`report::TrialInfo::figures`]): the trial's value of each metric, by the same
//! definition as the point's summary of it (so `show` and `compare` print the same
//! numbers), with the sampling variance of that value from the trial's own
//! requests, the floor under the trial-to-trial variance
//! ([`report::stats::trials`]):
//! - a median or p99 of per-request values: from the distribution-free 95%
//!   interval of the quantile over the trial's values (Hahn & Meeker §5.2,
//!   [`crate::stats::order`]), `((high − low) / (2 · 1.96))²`; unknown when an end
//!   is unbounded (too few values for the rank);
//! - good requests per second: binomial on the good share
//!   ([`report::compare::goodput_var`]);
//! - output tokens per second: the variance of the sum of the requests' output
//!   tokens, `n · s²(tokens)`, over the duration squared.

use indexmap::IndexMap;
use report::compare::METRICS;
use report::metric::{Series, Taken};
use report::stats::quantile_linear;
use report::Figure;

use super::TrialMetrics;
use crate::stats::order::quantile_interval;

/// The variance of the `q`-quantile of sorted `values` from its order-statistic
/// interval.
fn quantile_var(sorted: &[f64], q: f64) -> Option<f64> {
    let ci = quantile_interval(sorted, q, crate::stats::LEVEL)?;
    let (lo, hi) = (ci.low?, ci.high?);
    let z = report::stats::normal_quantile(0.5 + crate::stats::LEVEL / 2.0);
    let sd = (hi - lo) / (2.0 * z);
    sd.is_finite().then_some(sd * sd)
}

/// The figures of trial `m`, one per figure `compare` tests ([`METRICS`]), in
/// its order; `itls` its pooled gaps between chunks, ms, and `tokens` the output
/// tokens of each successful request.
pub fn figures(m: &TrialMetrics, itls: &[f64], tokens: &[f64]) -> IndexMap<String, Figure> {
    let mut out = IndexMap::new();
    let d = m.duration_s.filter(|d| *d > 0.0);
    for metric in &METRICS {
        let (value, var) = match metric.taken {
            Taken::Quantile(series, q) => {
                let mut v = match series {
                    Series::Bounded(b) => m.values(b),
                    Series::Itl => itls,
                }
                .to_vec();
                report::stats::sort_values(&mut v);
                (quantile_linear(&v, q), quantile_var(&v, q))
            }
            Taken::OutputRate => (m.output_throughput, tokens_var(d, tokens)),
            Taken::InputRate => (
                m.embeddings.input_throughput,
                m.embeddings.input_rate_var(d),
            ),
            Taken::Goodput => (
                m.goodput_rps,
                d.and_then(|d| report::compare::goodput_var(m.good, m.completed + m.failed, d)),
            ),
            Taken::NotFigure => continue,
        };
        if let Some(value) = value.filter(|v| v.is_finite()) {
            out.insert(metric.key.to_string(), Figure { value, var });
        }
    }
    out
}

/// The variance of output tokens per second over a trial of `d` seconds: that
/// of the sum of the requests' output tokens, `n · s²(tokens)`, over `d²`.
fn tokens_var(d: Option<f64>, tokens: &[f64]) -> Option<f64> {
    let d = d?;
    if tokens.len() < 2 {
        return None;
    }
    let n = tokens.len() as f64;
    let mean = tokens.iter().sum::<f64>() / n;
    let s2 = tokens.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(n * s2 / (d * d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_figures_carry_their_interval_and_rates_their_counts() {
        let m = TrialMetrics {
            ttfts_ms: (1..=64).map(f64::from).collect(),
            median_ttft_ms: Some(32.5),
            p99_ttft_ms: Some(63.4),
            duration_s: Some(2.0),
            goodput_rps: Some(12.0),
            output_throughput: Some(100.0),
            good: 24,
            completed: 24,
            ..TrialMetrics::default()
        };
        let f = figures(&m, &[], &[8.0, 9.0, 8.0, 7.0]);
        let med = f["median_ttft_ms"];
        assert_eq!(med.value, 32.5);
        // The 95% order-statistic interval of the median of 1..=64 is about
        // [24, 41]: sd about 4.3.
        let sd = med.var.unwrap().sqrt();
        assert!(sd > 3.0 && sd < 6.0, "{sd}");
        // 64 values cannot bound a p99 from above.
        assert_eq!(f["p99_ttft_ms"].var, None);
        // All good: the share 24.5/25 still gives a variance.
        assert!(f["goodput_rps"].var.unwrap() > 0.0);
        assert!(f["output_throughput"].var.unwrap() > 0.0);
        assert!(!f.contains_key("median_tpot_ms"));
    }
}
