//! What `compare` tests, per metric and load level: the per-request values of each
//! trial (from the requests file beside a report), or, for a report without one,
//! the per-trial values its summaries still hold.
//!
//! Each metric has one definition here, over the requests of a point, and its
//! estimate is that statistic of the pooled requests (so that the bootstrap
//! resamples exactly what is estimated):
//! - median / p99 TTFT, median TPOT: the quantile of the pooled successful
//!   requests' values;
//! - median ITL: the median over requests of each request's median gap between
//!   chunks (the request is the resampling unit, not the gap);
//! - output tok/s, goodput req/s: per trial, output tokens (good requests) over the
//!   trial's duration; the mean over trials;
//! - SLO attainment: good requests over requests sent, pooled.

use std::collections::HashMap;

use crate::define::profile::SloSpec;
use crate::drive::record::RequestRecord;
use crate::measure::metrics::{request_metrics, trial_metrics};
use crate::stats::bootstrap::Trial;

pub use report::compare::{
    summary_values, Better, Metric, Statistic, Value, METRICS, TTFAT_METRIC,
};

/// One trial's requests as `compare` needs them.
#[derive(Debug, Clone, Default)]
pub struct TrialRequests {
    ttft: Vec<f64>,
    ttfat: Vec<f64>,
    tpot: Vec<f64>,
    itl: Vec<f64>,
    /// Per request sent: output tokens (0 for a failed one).
    tokens: Vec<f64>,
    /// Per request sent: 1 when good.
    good: Vec<f64>,
    duration_s: Option<f64>,
}

impl TrialRequests {
    /// From one trial's records, judged against `slo`.
    pub fn of(records: &[&RequestRecord], slo: &SloSpec) -> TrialRequests {
        let owned: Vec<RequestRecord> = records.iter().map(|r| (*r).clone()).collect();
        let mut t = TrialRequests {
            duration_s: trial_metrics(&owned, slo).duration_s,
            ..Default::default()
        };
        for r in records {
            let Some(m) = request_metrics(r, slo) else {
                t.tokens.push(0.0);
                t.good.push(0.0);
                continue;
            };
            t.ttft.push(m.ttft_ms);
            let reasoning = crate::measure::metrics::reasoning::request_reasoning(
                r,
                m.output_tokens,
                m.e2el_ms,
            );
            t.ttfat.extend(reasoning.ttfat_ms);
            t.tpot.extend(m.tpot_ms);
            t.tokens.push(m.output_tokens as f64);
            t.good.push(f64::from(u8::from(m.good)));
            let mut gaps: Vec<f64> = r
                .chunks
                .windows(2)
                .map(|w| w[1].t.saturating_sub(w[0].t) as f64 / 1e6)
                .collect();
            if !gaps.is_empty() {
                let mid = (gaps.len() - 1) / 2;
                let (_, v, _) = gaps.select_nth_unstable_by(mid, f64::total_cmp);
                t.itl.push(*v);
            }
        }
        t
    }

    /// The bootstrap's view of this trial for one metric.
    pub fn trial(&self, v: Value) -> Trial {
        let values = match v {
            Value::Ttft => &self.ttft,
            Value::Ttfat => &self.ttfat,
            Value::PerTrial => &Vec::new(),
            Value::Tpot => &self.tpot,
            Value::Itl => &self.itl,
            Value::Tokens => &self.tokens,
            Value::Good => &self.good,
        };
        Trial {
            values: values.clone(),
            duration_s: self.duration_s,
        }
    }
}

/// The requests of a report grouped by engine and load level, trial by trial (the
/// last attempt of a restarted trial only).
#[derive(Debug, Default)]
pub struct Requests {
    by_point: HashMap<(String, u64), Vec<TrialRequests>>,
}

impl Requests {
    /// Groups `records` and judges each against `slo`.
    pub fn group(records: &[RequestRecord], slo: &SloSpec) -> Requests {
        let mut last_attempt: HashMap<(&str, u64, u32), u32> = HashMap::new();
        for r in records {
            let a = last_attempt
                .entry((r.engine.as_str(), r.x.to_bits(), r.trial))
                .or_default();
            *a = (*a).max(r.attempt);
        }
        let mut trials: HashMap<(&str, u64), std::collections::BTreeMap<u32, Vec<&RequestRecord>>> =
            HashMap::new();
        for r in records {
            if last_attempt[&(r.engine.as_str(), r.x.to_bits(), r.trial)] != r.attempt {
                continue;
            }
            trials
                .entry((r.engine.as_str(), r.x.to_bits()))
                .or_default()
                .entry(r.trial)
                .or_default()
                .push(r);
        }
        let by_point = trials
            .into_iter()
            .map(|((e, x), ts)| {
                (
                    (e.to_string(), x),
                    ts.values().map(|rs| TrialRequests::of(rs, slo)).collect(),
                )
            })
            .collect();
        Requests { by_point }
    }

    /// The trials of `engine` at load `x`, when the records hold any.
    pub fn point(&self, engine: &str, x: f64) -> Option<&[TrialRequests]> {
        self.by_point
            .get(&(engine.to_string(), x.to_bits()))
            .map(Vec::as_slice)
            .filter(|t| !t.is_empty())
    }
}

/// The SLO of a report as a run's spec.
pub fn slo_spec(s: &report::Slo) -> SloSpec {
    SloSpec {
        ttft_ms: s.ttft_ms,
        tpot_ms: s.tpot_ms,
        e2el_ms: s.e2el_ms,
        ttfat_ms: s.ttfat_ms,
        attainment: s.attainment,
        percentile: s.percentile,
    }
}
