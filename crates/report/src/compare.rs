//! A comparison as renderers show it: rows of a candidate against a baseline (each
//! metric at each load level, its change with the 95% interval and what it says),
//! the sections they belong to, and the conclusion. goodput's `compare` computes
//! it (reading requests files, bootstrapping); renderers only show it.
//!
//! Also the metrics `compare` tests ([`METRICS`]) as a report holds them, so that a
//! renderer can repeat a test on a report alone ([`summary_values`]).

use std::ops::Range;

use serde::Serialize;

use crate::{Capacity, Point, Stat};

/// The smallest relative change `compare` calls better or worse by default (2%).
pub const DEFAULT_MIN_EFFECT: f64 = 0.02;
/// The chance of any false "better"/"worse" in a table, by default (5%).
pub const DEFAULT_ALPHA: f64 = 0.05;

/// `12%` or `1.5%` of a relative change's size.
pub fn pct(v: f64) -> String {
    let p = (v * 100.0).abs();
    if p >= 10.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%").replace(".0%", "%")
    }
}

/// What a row says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Beyond noise and the threshold, the good way.
    Better,
    /// Beyond noise and the threshold, the bad way.
    Worse,
    /// Within noise, or smaller than the threshold.
    NoDetectableDifference,
    /// Not testable (a value missing, a zero baseline, one trial only).
    Unknown,
}

/// How a row's interval was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Hierarchical bootstrap over trials and requests.
    Bootstrap,
    /// Welch's t over per-trial values (no requests file).
    Welch,
    /// Nothing to test.
    None,
}

/// One metric at one load level of one candidate against its baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The candidate (engine; with its report when comparing reports).
    pub engine: String,
    /// The baseline it is compared with.
    pub baseline: String,
    /// Load level.
    pub x: f64,
    /// Metric name.
    pub metric: &'static str,
    /// The baseline's estimate.
    pub baseline_value: Option<f64>,
    /// The candidate's estimate.
    pub candidate_value: Option<f64>,
    /// Relative change, `candidate / baseline - 1`.
    pub change: Option<f64>,
    /// 95% interval of the relative change.
    pub ci: Option<[f64; 2]>,
    /// Better or worse, after the correction and the threshold.
    pub significant: bool,
    /// What the row says.
    pub direction: Direction,
    /// p-value of "no change", before correction.
    pub p: Option<f64>,
    /// Holm-adjusted p-value over the table.
    pub p_adjusted: Option<f64>,
    /// Trials per side that would detect the threshold (rows without a
    /// detectable difference, when it can be said).
    pub trials_needed: Option<u64>,
    /// How the interval was made.
    pub method: Method,
    /// Which way is better for the metric (not written: the conclusion's input).
    #[serde(skip)]
    pub better: Option<Better>,
    /// Standard error of the change (not written: the trials-needed estimate's input).
    #[serde(skip)]
    pub se: Option<f64>,
    /// Trials behind the smaller side (not written).
    #[serde(skip)]
    pub trials: usize,
}

/// A comparison: the conclusion, the sections (one per candidate report, or one
/// for the engines of a report) and the rows of all of them, decided together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The answer in one line.
    pub conclusion: String,
    /// Every row, decided over the whole table.
    pub rows: Vec<Row>,
    /// The correction applied over the rows.
    pub correction: &'static str,
    /// The practical threshold.
    pub min_effect: f64,
    /// Each part of the comparison: its title, notes, and its rows' range.
    #[serde(skip)]
    pub sections: Vec<Section>,
}

/// One part of a comparison: a report against the baseline report, or the engines
/// of one report against its first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Section {
    /// What is compared with what.
    pub title: String,
    /// Why it was not compared at all, when it was not.
    pub refused: Option<String>,
    /// What is missing or differs.
    pub notes: Vec<String>,
    /// Its rows (moved into the comparison's table, at `range`).
    pub rows: Vec<Row>,
    /// Where its rows are in the comparison's table.
    pub range: Range<usize>,
    /// The pairs compared: baseline and candidate names, and their capacities.
    pub pairs: Vec<Pair>,
}

/// A candidate against its baseline, for the conclusion.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// The baseline's name in the rows.
    pub baseline: String,
    /// The candidate's name in the rows.
    pub candidate: String,
    /// The baseline's capacity, from a search.
    pub baseline_capacity: Option<Capacity>,
    /// The candidate's capacity.
    pub candidate_capacity: Option<Capacity>,
}

/// What is computed over a (resampled) set of trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Statistic {
    /// The q-quantile of the pooled values (lower rule: `sorted[floor(q (n-1))]`).
    Quantile(f64),
    /// Per trial, the sum of its values over its duration; the mean over trials.
    Rate,
    /// The mean of the pooled values (a share, for 0/1 values).
    Mean,
}

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
