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

use report::{Point, Stat};

use crate::metrics::{request_metrics, trial_metrics};
use crate::profile::SloSpec;
use crate::record::RequestRecord;
use crate::stats::bootstrap::{Statistic, Trial};

/// Whether a metric is better when lower (latency) or higher (throughput).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Lower is better.
    Lower,
    /// Higher is better.
    Higher,
}

/// Which per-request value a metric takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    Ttft,
    /// Time to first answer token (reasoning models; a request without reasoning:
    /// its TTFT).
    Ttfat,
    /// No per-request value: compared from the report's per-trial figures (energy
    /// and cost, measured per trial).
    PerTrial,
    Tpot,
    Itl,
    Tokens,
    Good,
}

/// A compared metric.
pub struct Metric {
    /// Display name (and the JSON `metric`).
    pub name: &'static str,
    /// Which way is better.
    pub better: Better,
    /// The per-request value.
    pub value: Value,
    /// The statistic over the pooled (or per-trial) values.
    pub statistic: Statistic,
    /// The SLO defines it: compared only under the same SLO.
    pub slo_bound: bool,
    /// The report's summary of it, for reports without their requests.
    pub summary: fn(&Point) -> Option<&Stat>,
}

/// The metrics `compare` tests, in order (seven a load level: a four-level
/// comparison is a 28-row table; TTFAT only where a side reasoned, energy and cost
/// only where a side has them).
pub const METRICS: [Metric; 11] = [
    Metric {
        name: "median TTFT ms",
        better: Better::Lower,
        value: Value::Ttft,
        statistic: Statistic::Quantile(0.5),
        slo_bound: false,
        summary: |p| Some(&p.median_ttft_ms),
    },
    Metric {
        name: "p99 TTFT ms",
        better: Better::Lower,
        value: Value::Ttft,
        statistic: Statistic::Quantile(0.99),
        slo_bound: false,
        summary: |p| Some(&p.p99_ttft_ms),
    },
    Metric {
        name: "median TPOT ms",
        better: Better::Lower,
        value: Value::Tpot,
        statistic: Statistic::Quantile(0.5),
        slo_bound: false,
        summary: |p| Some(&p.median_tpot_ms),
    },
    Metric {
        name: "median ITL ms",
        better: Better::Lower,
        value: Value::Itl,
        statistic: Statistic::Quantile(0.5),
        slo_bound: false,
        summary: |p| Some(&p.median_itl_ms),
    },
    Metric {
        name: "output tok/s",
        better: Better::Higher,
        value: Value::Tokens,
        statistic: Statistic::Rate,
        slo_bound: false,
        summary: |p| Some(&p.output_throughput),
    },
    Metric {
        name: "goodput req/s",
        better: Better::Higher,
        value: Value::Good,
        statistic: Statistic::Rate,
        slo_bound: true,
        summary: |p| Some(&p.goodput_rps),
    },
    Metric {
        name: "SLO attainment",
        better: Better::Higher,
        value: Value::Good,
        statistic: Statistic::Mean,
        slo_bound: true,
        summary: |p| p.attainment.as_ref(),
    },
    Metric {
        name: TTFAT_METRIC,
        better: Better::Lower,
        value: Value::Ttfat,
        statistic: Statistic::Quantile(0.5),
        slo_bound: false,
        summary: |p| p.reasoning.as_ref().map(|r| &r.median_ttfat_ms),
    },
    Metric {
        name: "J/output token",
        better: Better::Lower,
        value: Value::PerTrial,
        statistic: Statistic::Mean,
        slo_bound: false,
        summary: |p| p.energy.as_ref().map(|e| &e.joules_per_output_token),
    },
    Metric {
        name: "$/M output tokens",
        better: Better::Lower,
        value: Value::PerTrial,
        statistic: Statistic::Mean,
        slo_bound: false,
        summary: |p| p.cost.as_ref().map(|c| &c.usd_per_million_output_tokens),
    },
    Metric {
        name: "$/M good tokens",
        better: Better::Lower,
        value: Value::PerTrial,
        statistic: Statistic::Mean,
        slo_bound: true,
        summary: |p| p.cost.as_ref().map(|c| &c.usd_per_million_good_tokens),
    },
];

/// Time to first answer token: compared where either side streamed reasoning.
pub const TTFAT_METRIC: &str = "median TTFAT ms";

impl Metric {
    /// Whether a point pair has this metric to compare: attainment where a side
    /// recorded it (or requests are at hand), TTFAT where a side reasoned, energy
    /// and cost where a side has the figure; the rest always.
    pub fn recorded(&self, base: &Point, cand: &Point, have_requests: bool) -> bool {
        let has = |p: &Point| (self.summary)(p).is_some_and(|s| s.n > 0);
        match (self.name, self.value) {
            ("SLO attainment", _) => have_requests || has(base) || has(cand),
            (_, Value::Ttfat | Value::PerTrial) => has(base) || has(cand),
            _ => true,
        }
    }
}

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
            let reasoning =
                crate::metrics::reasoning::request_reasoning(r, m.output_tokens, m.e2el_ms);
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

/// Per-trial values of a metric from a report's summaries, for a report without
/// its requests: exact for goodput and attainment when the report lists its
/// trials, else the trial values a `{median,min,max,n}` still holds (all of them
/// for up to three trials; `exact` false beyond).
pub fn summary_values(m: &Metric, p: &Point) -> (Vec<f64>, bool) {
    if m.slo_bound && m.value == Value::Good && !p.trials.is_empty() {
        let v: Vec<f64> = p
            .trials
            .iter()
            .filter_map(|t| match m.statistic {
                Statistic::Rate => t.duration_s.filter(|d| *d > 0.0).map(|d| t.good as f64 / d),
                _ => {
                    let sent = t.completed + t.failed;
                    (sent > 0).then(|| t.good as f64 / sent as f64)
                }
            })
            .collect();
        if !v.is_empty() {
            return (v, true);
        }
    }
    let Some(s) = (m.summary)(p) else {
        return (Vec::new(), true);
    };
    match (s.n, s.min, s.median, s.max) {
        (1, _, Some(v), _) => (vec![v], true),
        (2, Some(a), _, Some(b)) => (vec![a, b], true),
        (3, Some(a), Some(b), Some(c)) => (vec![a, b, c], true),
        (n, Some(a), Some(b), Some(c)) if n > 3 => (vec![a, b, c], false),
        _ => (Vec::new(), true),
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
