//! The metrics `compare` tests, one entry each: its name, its key in a trial's
//! figures, which way is better, what its test reads and the report's summary of
//! it over trials.

use crate::{Point, Stat};

/// Whether a metric is better when lower (latency) or higher (throughput).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Lower is better.
    Lower,
    /// Higher is better.
    Higher,
}

/// What a metric's test reads of a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Each trial's figure ([`crate::TrialInfo::figures`]); for reports without
    /// them, the trial values the point's summary still holds.
    Figure,
    /// A share of requests: each trial's good and sent requests.
    Share,
    /// Only the point's summary over trials (energy and cost, measured per trial).
    Summary,
}

/// A compared metric.
pub struct Metric {
    /// Display name (and the JSON `metric`).
    pub name: &'static str,
    /// Its key in a trial's figures.
    pub key: &'static str,
    /// Which way is better.
    pub better: Better,
    /// What its test reads.
    pub kind: Kind,
    /// The SLO defines it: compared only under the same SLO.
    pub slo_bound: bool,
    /// The report's summary of it over trials.
    pub summary: fn(&Point) -> Option<&Stat>,
}

/// The key of good requests per second in a trial's figures.
pub const GOODPUT_KEY: &str = "goodput_rps";

/// The metrics `compare` tests, in order (seven a load level: a four-level
/// comparison is a 28-row table; TTFAT only where a side reasoned, energy and cost
/// only where a side has them).
pub const METRICS: [Metric; 11] = [
    Metric {
        name: "median TTFT ms",
        key: "median_ttft_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| Some(&p.median_ttft_ms),
    },
    Metric {
        name: "p99 TTFT ms",
        key: "p99_ttft_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| Some(&p.p99_ttft_ms),
    },
    Metric {
        name: "median TPOT ms",
        key: "median_tpot_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| Some(&p.median_tpot_ms),
    },
    Metric {
        name: "median ITL ms",
        key: "median_itl_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| Some(&p.median_itl_ms),
    },
    Metric {
        name: "output tok/s",
        key: "output_throughput",
        better: Better::Higher,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| Some(&p.output_throughput),
    },
    Metric {
        name: GOODPUT_METRIC,
        key: GOODPUT_KEY,
        better: Better::Higher,
        kind: Kind::Figure,
        slo_bound: true,
        summary: |p| Some(&p.goodput_rps),
    },
    Metric {
        name: "SLO attainment",
        key: "attainment",
        better: Better::Higher,
        kind: Kind::Share,
        slo_bound: true,
        summary: |p| p.attainment.as_ref(),
    },
    Metric {
        name: TTFAT_METRIC,
        key: "median_ttfat_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| p.reasoning.as_ref().map(|r| &r.median_ttfat_ms),
    },
    Metric {
        name: "J/output token",
        key: "joules_per_output_token",
        better: Better::Lower,
        kind: Kind::Summary,
        slo_bound: false,
        summary: |p| p.energy.as_ref().map(|e| &e.joules_per_output_token),
    },
    Metric {
        name: "$/M output tokens",
        key: "usd_per_million_output_tokens",
        better: Better::Lower,
        kind: Kind::Summary,
        slo_bound: false,
        summary: |p| p.cost.as_ref().map(|c| &c.usd_per_million_output_tokens),
    },
    Metric {
        name: "$/M good tokens",
        key: "usd_per_million_good_tokens",
        better: Better::Lower,
        kind: Kind::Summary,
        slo_bound: true,
        summary: |p| p.cost.as_ref().map(|c| &c.usd_per_million_good_tokens),
    },
];

/// Time to first answer token: compared where either side streamed reasoning.
pub const TTFAT_METRIC: &str = "median TTFAT ms";
/// Good requests per second.
pub const GOODPUT_METRIC: &str = "goodput req/s";

impl Metric {
    /// Whether a point pair has this metric to compare: attainment where a side
    /// recorded it, TTFAT where a side reasoned, energy and cost where a side has
    /// the figure; the rest always.
    pub fn recorded(&self, base: &Point, cand: &Point) -> bool {
        let has = |p: &Point| (self.summary)(p).is_some_and(|s| s.n > 0);
        match self.kind {
            Kind::Share => has(base) || has(cand) || !base.trials.is_empty(),
            Kind::Summary => has(base) || has(cand),
            Kind::Figure if self.name == TTFAT_METRIC => has(base) || has(cand),
            Kind::Figure => true,
        }
    }

    /// The metric of the given name.
    pub fn named(name: &str) -> Option<&'static Metric> {
        METRICS.iter().find(|m| m.name == name)
    }
}
