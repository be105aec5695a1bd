//! Every metric goodput reports, one entry each: the latency metrics an SLO can
//! bound ([`SloMetric`], [`SLO_METRICS`]) and the metrics `compare` tests
//! ([`METRICS`]). The SLO's parsing and checks, the per-request judgement, the
//! percentile form, capacity limits, compare, the table columns and the verdict
//! read these tables instead of naming metrics; CONTRIBUTING's "Adding a metric"
//! says what else a new one needs.

use crate::{Point, Stat};

/// A latency metric an SLO can bound, in the order the report writes its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SloMetric {
    /// Time to first token.
    Ttft,
    /// Time per output token.
    Tpot,
    /// End-to-end latency.
    E2el,
    /// Time to first answer token (reasoning models).
    Ttfat,
    /// Time to first tool call (`[workload] tools`).
    Ttftc,
}

/// One bounded metric: how it is spelled, shown and read.
#[derive(Debug)]
pub struct SloMetricDef {
    /// Its key in `--slo` and vLLM's `--goodput` (`ttft`), in a point's `misses`
    /// and `percentiles_ms`, and as a capacity's `limited_by`.
    pub key: &'static str,
    /// Its bound's key in the report's `slo` and the profile's `[slo]` (`ttft_ms`).
    pub field: &'static str,
    /// How text names it (`TTFT`).
    pub label: &'static str,
    /// What it is, in words.
    pub name: &'static str,
    /// A successful request without a value of it (one that reasoned and gave no
    /// answer) misses its bound and counts as infinitely slow in the percentile
    /// form, beside `no_answer`.
    pub unanswered_misses: bool,
    /// vLLM's `--goodput` knows it: a vLLM-format result has a request goodput
    /// when such a bound was given.
    pub vllm_goodput: bool,
    /// A point's median over trials of each trial's median, where the point has
    /// it.
    pub median: fn(&Point) -> Option<&Stat>,
    /// The engines whose answers have it: a bound on a metric an engine cannot
    /// have is refused (TTFT of an embeddings engine, which streams nothing).
    pub applies: Applies,
}

/// The bounded metrics, in [`SloMetric`]'s order.
pub const SLO_METRICS: [SloMetricDef; SloMetric::COUNT] = [
    SloMetricDef {
        key: "ttft",
        field: "ttft_ms",
        label: "TTFT",
        name: "time to first token",
        unanswered_misses: false,
        vllm_goodput: true,
        median: |p| Some(&p.median_ttft_ms),
        applies: Applies::Generation,
    },
    SloMetricDef {
        key: "tpot",
        field: "tpot_ms",
        label: "TPOT",
        name: "time per output token (GuideLLM's ITL)",
        unanswered_misses: false,
        vllm_goodput: true,
        median: |p| Some(&p.median_tpot_ms),
        applies: Applies::Generation,
    },
    SloMetricDef {
        key: "e2el",
        field: "e2el_ms",
        label: "E2E latency",
        name: "end-to-end latency",
        unanswered_misses: false,
        vllm_goodput: true,
        median: |p| p.median_e2el_ms.as_ref(),
        applies: Applies::Both,
    },
    SloMetricDef {
        key: "ttfat",
        field: "ttfat_ms",
        label: "TTFAT",
        name: "time to first answer token",
        unanswered_misses: true,
        vllm_goodput: false,
        // A point without reasoning answered from its first token.
        median: |p| {
            Some(
                p.reasoning
                    .as_ref()
                    .map_or(&p.median_ttft_ms, |r| &r.median_ttfat_ms),
            )
        },
        applies: Applies::Generation,
    },
    SloMetricDef {
        key: "ttftc",
        field: "ttftc_ms",
        label: "TTFTC",
        name: "time to first tool call",
        // A request that asked for tool calls and made none has no value and
        // misses (`RequestMetrics::value`); the plan refuses the bound on a
        // workload without tools. Not a reasoning model's missing answer.
        unanswered_misses: false,
        vllm_goodput: false,
        median: |p| p.tool_calls.as_ref().map(|t| &t.median_ttftc_ms),
        applies: Applies::Generation,
    },
];

/// The keys of the report's `slo` (and the profile's `[slo]`) in order: each
/// bound's [`SloMetricDef::field`], then the attainment target and the percentile
/// form, then the requirements on valid tool calls (a unit test holds it to the
/// table).
pub const SLO_FIELDS: &[&str] = &[
    "ttft_ms",
    "tpot_ms",
    "e2el_ms",
    "ttfat_ms",
    "ttftc_ms",
    "attainment",
    "percentile",
    "min_valid_tool_calls",
    "min_schema_valid_tool_calls",
];

impl SloMetric {
    /// How many metrics an SLO can bound.
    pub const COUNT: usize = 5;

    /// Every bounded metric, in order.
    pub const ALL: [SloMetric; SloMetric::COUNT] = [
        SloMetric::Ttft,
        SloMetric::Tpot,
        SloMetric::E2el,
        SloMetric::Ttfat,
        SloMetric::Ttftc,
    ];

    /// Its entry in [`SLO_METRICS`].
    pub fn def(self) -> &'static SloMetricDef {
        &SLO_METRICS[self as usize]
    }

    /// [`SloMetricDef::key`].
    pub fn key(self) -> &'static str {
        self.def().key
    }

    /// [`SloMetricDef::field`].
    pub fn field(self) -> &'static str {
        self.def().field
    }

    /// [`SloMetricDef::label`].
    pub fn label(self) -> &'static str {
        self.def().label
    }

    /// The metric of a key (`ttft`).
    pub fn from_key(key: &str) -> Option<SloMetric> {
        SloMetric::ALL.into_iter().find(|m| m.key() == key)
    }

    /// The metric of a bound's field (`ttft_ms`).
    pub fn from_field(field: &str) -> Option<SloMetric> {
        SloMetric::ALL.into_iter().find(|m| m.field() == field)
    }

    /// Every metric's `part` listed as prose: `ttft, tpot, e2el, ttfat or ttftc`.
    pub fn listed(part: fn(SloMetric) -> &'static str) -> String {
        let names: Vec<&str> = SloMetric::ALL.into_iter().map(part).collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

impl std::fmt::Display for SloMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

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

/// The per-request values a trial's figure is a quantile of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Series {
    /// A bounded metric's values.
    Bounded(SloMetric),
    /// The gaps between chunks, pooled over the trial's requests.
    Itl,
}

/// How goodput takes a trial's figure of a compared metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Taken {
    /// The `q`-quantile (numpy's linear rule) of the trial's values of a series.
    Quantile(Series, f64),
    /// Output tokens per second.
    OutputRate,
    /// Inputs embedded per second (embeddings engines).
    InputRate,
    /// Good requests per second.
    Goodput,
    /// Not a trial figure: a share of requests, or a summary over trials.
    NotFigure,
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
    /// How a trial's figure of it is taken.
    pub taken: Taken,
    /// A figure only some points have (a reasoning model's): compared where a
    /// side has it.
    pub optional: bool,
    /// The engines whose points have it: compared only where it applies to both
    /// sides ([`Metric::recorded`]).
    pub applies: Applies,
}

/// Which engines a metric applies to: those that generate (stream tokens), those
/// that answer embeddings whole (`api = "embeddings"`, [`Point::embeddings`]),
/// or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applies {
    /// Every engine.
    Both,
    /// Engines that stream generated tokens (completions, chat).
    Generation,
    /// Embeddings engines only.
    Embeddings,
}

impl Applies {
    /// Whether it applies to an engine that answers embeddings (`true`) or
    /// generates (`false`).
    pub fn to(self, embeddings: bool) -> bool {
        match self {
            Applies::Both => true,
            Applies::Generation => !embeddings,
            Applies::Embeddings => embeddings,
        }
    }

    /// Whether it applies to a point ([`Point::embeddings`] says which engine).
    pub fn to_point(self, p: &Point) -> bool {
        self.to(p.embeddings.is_some())
    }
}

/// The key of good requests per second in a trial's figures.
pub const GOODPUT_KEY: &str = "goodput_rps";

/// The metrics `compare` tests, in order (seven a load level: a four-level
/// comparison is a 28-row table; optional figures, energy and cost only where a
/// side has them; an embeddings engine's E2EL and inputs/s instead of the
/// streamed figures).
pub const METRICS: [Metric; 15] = [
    Metric {
        name: "median TTFT ms",
        key: "median_ttft_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| Some(&p.median_ttft_ms),
        taken: Taken::Quantile(Series::Bounded(SloMetric::Ttft), 0.5),
        optional: false,
        applies: Applies::Generation,
    },
    Metric {
        name: "p99 TTFT ms",
        key: "p99_ttft_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| Some(&p.p99_ttft_ms),
        taken: Taken::Quantile(Series::Bounded(SloMetric::Ttft), 0.99),
        optional: false,
        applies: Applies::Generation,
    },
    Metric {
        name: "median TPOT ms",
        key: "median_tpot_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| Some(&p.median_tpot_ms),
        taken: Taken::Quantile(Series::Bounded(SloMetric::Tpot), 0.5),
        optional: false,
        applies: Applies::Generation,
    },
    Metric {
        name: "median ITL ms",
        key: "median_itl_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| Some(&p.median_itl_ms),
        taken: Taken::Quantile(Series::Itl, 0.5),
        optional: false,
        applies: Applies::Generation,
    },
    Metric {
        name: "output tok/s",
        key: "output_throughput",
        better: Better::Higher,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| Some(&p.output_throughput),
        taken: Taken::OutputRate,
        optional: false,
        applies: Applies::Generation,
    },
    Metric {
        name: GOODPUT_METRIC,
        key: GOODPUT_KEY,
        better: Better::Higher,
        kind: Kind::Figure,
        slo_bound: true,
        summary: |p| Some(&p.goodput_rps),
        taken: Taken::Goodput,
        optional: false,
        applies: Applies::Both,
    },
    Metric {
        name: "SLO attainment",
        key: "attainment",
        better: Better::Higher,
        kind: Kind::Share,
        slo_bound: true,
        summary: |p| p.attainment.as_ref(),
        taken: Taken::NotFigure,
        optional: false,
        applies: Applies::Both,
    },
    Metric {
        name: "median TTFAT ms",
        key: "median_ttfat_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| p.reasoning.as_ref().map(|r| &r.median_ttfat_ms),
        taken: Taken::Quantile(Series::Bounded(SloMetric::Ttfat), 0.5),
        optional: true,
        applies: Applies::Generation,
    },
    Metric {
        name: "median TTFTC ms",
        key: "median_ttftc_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| p.tool_calls.as_ref().map(|t| &t.median_ttftc_ms),
        taken: Taken::Quantile(Series::Bounded(SloMetric::Ttftc), 0.5),
        optional: true,
        applies: Applies::Generation,
    },
    Metric {
        name: "J/output token",
        key: "joules_per_output_token",
        better: Better::Lower,
        kind: Kind::Summary,
        slo_bound: false,
        summary: |p| p.energy.as_ref().map(|e| &e.joules_per_output_token),
        taken: Taken::NotFigure,
        optional: false,
        applies: Applies::Generation,
    },
    Metric {
        name: "$/M output tokens",
        key: "usd_per_million_output_tokens",
        better: Better::Lower,
        kind: Kind::Summary,
        slo_bound: false,
        summary: |p| p.cost.as_ref().map(|c| &c.usd_per_million_output_tokens),
        taken: Taken::NotFigure,
        optional: false,
        applies: Applies::Generation,
    },
    Metric {
        name: "$/M good tokens",
        key: "usd_per_million_good_tokens",
        better: Better::Lower,
        kind: Kind::Summary,
        slo_bound: true,
        summary: |p| p.cost.as_ref().map(|c| &c.usd_per_million_good_tokens),
        taken: Taken::NotFigure,
        optional: false,
        applies: Applies::Generation,
    },
    Metric {
        name: "median E2EL ms",
        key: "median_e2el_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| p.median_e2el_ms.as_ref(),
        taken: Taken::Quantile(Series::Bounded(SloMetric::E2el), 0.5),
        optional: false,
        applies: Applies::Embeddings,
    },
    Metric {
        name: "p99 E2EL ms",
        key: "p99_e2el_ms",
        better: Better::Lower,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| p.p99_e2el_ms.as_ref(),
        taken: Taken::Quantile(Series::Bounded(SloMetric::E2el), 0.99),
        optional: false,
        applies: Applies::Embeddings,
    },
    Metric {
        name: "inputs/s",
        key: "input_throughput",
        better: Better::Higher,
        kind: Kind::Figure,
        slo_bound: false,
        summary: |p| p.embeddings.as_ref().map(|e| &e.input_throughput),
        taken: Taken::InputRate,
        optional: false,
        applies: Applies::Embeddings,
    },
];

/// Good requests per second.
pub const GOODPUT_METRIC: &str = "goodput req/s";

impl Metric {
    /// Whether a point pair has this metric to compare: attainment where a side
    /// recorded it, an optional figure, energy and cost where a side has it; the
    /// rest always.
    pub fn recorded(&self, base: &Point, cand: &Point) -> bool {
        if !self.applies.to_point(base) || !self.applies.to_point(cand) {
            return false;
        }
        let has = |p: &Point| (self.summary)(p).is_some_and(|s| s.n > 0);
        match self.kind {
            Kind::Share => has(base) || has(cand) || !base.trials.is_empty(),
            Kind::Summary => has(base) || has(cand),
            Kind::Figure if self.optional => has(base) || has(cand),
            Kind::Figure => true,
        }
    }

    /// The metric of the given name.
    pub fn named(name: &str) -> Option<&'static Metric> {
        METRICS.iter().find(|m| m.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_is_compared_where_it_applies_to_both_sides() {
        let generation = Point::default();
        let embeddings = Point {
            embeddings: Some(crate::EmbeddingsSummary::default()),
            ..Point::default()
        };
        let named = |n: &str| Metric::named(n).unwrap();
        for streamed in ["median TTFT ms", "median TPOT ms", "output tok/s"] {
            assert!(named(streamed).recorded(&generation, &generation));
            assert!(
                !named(streamed).recorded(&embeddings, &embeddings),
                "{streamed}"
            );
        }
        for whole in ["median E2EL ms", "p99 E2EL ms", "inputs/s"] {
            assert!(named(whole).recorded(&embeddings, &embeddings));
            assert!(!named(whole).recorded(&generation, &generation), "{whole}");
            assert!(!named(whole).recorded(&generation, &embeddings), "{whole}");
        }
        assert!(named(GOODPUT_METRIC).recorded(&embeddings, &embeddings));
        // An SLO may bound only E2EL on an embeddings engine.
        let bounded: Vec<_> = SloMetric::ALL
            .into_iter()
            .filter(|m| m.def().applies.to(true))
            .collect();
        assert_eq!(bounded, [SloMetric::E2el]);
    }

    #[test]
    fn the_tables_agree() {
        for (i, m) in SloMetric::ALL.into_iter().enumerate() {
            assert_eq!(m as usize, i);
            assert_eq!(SLO_FIELDS[i], m.field());
            assert_eq!(SloMetric::from_key(m.key()), Some(m));
            assert_eq!(m.field(), format!("{}_ms", m.key()));
        }
        assert_eq!(SLO_FIELDS.len(), SloMetric::ALL.len() + 4);
        assert_eq!(
            SloMetric::listed(SloMetric::key),
            "ttft, tpot, e2el, ttfat or ttftc"
        );
        // Every trial figure has a name and key of its own.
        for (i, a) in METRICS.iter().enumerate() {
            assert!(METRICS[i + 1..]
                .iter()
                .all(|b| a.key != b.key && a.name != b.name));
            assert_eq!(
                a.kind == Kind::Figure,
                a.taken != Taken::NotFigure,
                "{}",
                a.name
            );
        }
    }
}
