//! A comparison as renderers show it: rows of a candidate against a baseline (each
//! metric at each load level, its change with the 95% interval and what it says),
//! the sections they belong to, and the conclusion. goodput's `compare` computes
//! it (reading requests files, bootstrapping); renderers only show it.
//!
//! Also the metrics `compare` tests ([`METRICS`]) as a report holds them, so that a
//! renderer can repeat a test on a report alone (`summary_values`).

use std::ops::Range;

use serde::Serialize;

use crate::stats::Change;
use crate::{Capacity, Point};

pub use crate::metric::{Better, Kind, Metric, GOODPUT_KEY, GOODPUT_METRIC, METRICS};

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
    /// Shown to be within ±threshold (the two one-sided tests, Holm-corrected over
    /// the table).
    Same,
    /// Within noise, or smaller than the threshold.
    NoDetectableDifference,
    /// Not testable (a value missing, a zero baseline, one trial a side).
    Unknown,
}

/// How a row's interval was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Welch's t over per-trial figures, the trial-to-trial variance pooled over the
    /// side's load levels ([`crate::stats::trials`]).
    Trials,
    /// Newcombe's interval for a share of requests over the effective requests
    /// ([`crate::stats::proportion`]).
    Newcombe,
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
    /// p-value of "the change is at least the threshold either way" (the two
    /// one-sided tests), before correction.
    pub p_same: Option<f64>,
    /// Degrees of freedom of the test (absent: normal reference).
    pub df: Option<f64>,
    /// Why the row is not testable, and what would make it so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_testable: Option<String>,
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

/// What a point holds for one metric's test.
#[derive(Debug, Clone, PartialEq)]
pub enum Sample {
    /// Per-trial figures (with their within-trial variances when known).
    Trials(crate::stats::trials::Trials),
    /// Per-trial `(good, sent)`.
    Counts(Vec<(u64, u64)>),
    /// Only a `{median, min, max, n}` of more than three trials: the trial values
    /// are not all there.
    Summary(u32),
    /// Nothing measured.
    Missing,
}

impl Sample {
    /// The value a row shows: the mean over trials, or the pooled share.
    pub fn estimate(&self) -> Option<f64> {
        match self {
            Sample::Trials(t) => t.mean(),
            Sample::Counts(c) => {
                let (g, n) = c.iter().fold((0, 0), |a, t| (a.0 + t.0, a.1 + t.1));
                (n > 0).then(|| g as f64 / n as f64)
            }
            Sample::Summary(_) | Sample::Missing => None,
        }
    }

    /// The figures, when per trial.
    pub fn trials(&self) -> Option<&crate::stats::trials::Trials> {
        match self {
            Sample::Trials(t) => Some(t),
            _ => None,
        }
    }
}

/// The sampling variance of good requests per second of one trial: `good` of
/// `sent` over `duration_s`, binomial on the share `(good + ½) / (sent + 1)` (the
/// Jeffreys prior's mean) so that all-good and none-good trials still carry their
/// uncertainty. The one definition, for the figures a run
/// stores and for reports that only hold the counts.
pub fn goodput_var(good: u64, sent: u64, duration_s: f64) -> Option<f64> {
    if sent == 0 || !(duration_s > 0.0 && duration_s.is_finite()) {
        return None;
    }
    let p = (good.min(sent) as f64 + 0.5) / (sent as f64 + 1.0);
    Some(sent as f64 * p * (1.0 - p) / (duration_s * duration_s))
}

/// The complete trials of a point.
fn complete(p: &Point) -> impl Iterator<Item = &crate::TrialInfo> {
    p.trials
        .iter()
        .filter(|t| t.status == crate::RunStatus::Complete)
}

/// What point `p` holds for metric `m`'s test: the trials' figures when the
/// report stores them; good requests per second and attainment from the per-trial
/// counts; else the trial values a `{median,min,max,n}` still holds (all of them
/// for up to three trials).
pub fn sample(m: &Metric, p: &Point) -> Sample {
    use crate::stats::trials::Trials;
    if m.kind == Kind::Share {
        let c: Vec<(u64, u64)> = if p.trials.is_empty() {
            let good = p.good.clone().unwrap_or_default();
            let failed = p.failed.clone().unwrap_or_default();
            good.iter()
                .zip(&p.completed)
                .enumerate()
                .map(|(i, (g, c))| (*g, c + failed.get(i).copied().unwrap_or(0)))
                .collect()
        } else {
            complete(p)
                .map(|t| (t.good, t.completed + t.failed))
                .collect()
        };
        if c.iter().any(|t| t.1 > 0) {
            return Sample::Counts(c.into_iter().filter(|t| t.1 > 0).collect());
        }
        // No counts (another tool's report): the per-trial shares its summary holds.
    }
    if m.kind == Kind::Figure {
        let figures: Option<Vec<crate::Figure>> =
            complete(p).map(|t| t.figures.get(m.key).copied()).collect();
        if let Some(f) = figures.filter(|f| !f.is_empty()) {
            return Sample::Trials(Trials {
                values: f.iter().map(|f| f.value).collect(),
                within: f.iter().map(|f| f.var).collect(),
            });
        }
        if m.key == GOODPUT_KEY {
            let t: Vec<(f64, Option<f64>)> = complete(p)
                .filter_map(|t| {
                    let d = t.duration_s.filter(|d| *d > 0.0)?;
                    let sent = t.completed + t.failed;
                    Some((t.good as f64 / d, goodput_var(t.good, sent, d)))
                })
                .collect();
            if !t.is_empty() {
                return Sample::Trials(Trials {
                    values: t.iter().map(|v| v.0).collect(),
                    within: t.iter().map(|v| v.1).collect(),
                });
            }
        }
    }
    let Some(s) = (m.summary)(p) else {
        return Sample::Missing;
    };
    let v = match (s.n, s.min, s.median, s.max) {
        (1, _, Some(v), _) => vec![v],
        (2, Some(a), _, Some(b)) => vec![a, b],
        (3, Some(a), Some(b), Some(c)) => vec![a, b, c],
        (n, Some(_), Some(_), Some(_)) if n > 3 => return Sample::Summary(n),
        _ => return Sample::Missing,
    };
    Sample::Trials(Trials::of(v))
}

/// The trial-to-trial spread of `m` at `at`, pooled over those of `points` (one
/// engine's load levels, [`crate::stats::trials::pooled_spread`]) in the same
/// regime as `at`: on the same side of the SLO (both meet it, or both do not).
/// Past the knee requests queue and a trial's figures swing far more than below
/// it (goodput at an overloaded level was 1.1 and 3.1 req/s in two trials where it
/// was 4.38 and 4.66 at a level that met the SLO), so pooling across the knee would
/// lend one regime's noise to the other. Levels without an SLO check (a report
/// in the reference format) pool together.
pub fn spread(m: &Metric, points: &[Point], at: &Point) -> Option<crate::stats::trials::Spread> {
    let regime = |p: &Point| p.slo_check.as_ref().map(|c| c.meets);
    let samples: Vec<Sample> = points
        .iter()
        .filter(|p| regime(p) == regime(at))
        .map(|p| sample(m, p))
        .collect();
    crate::stats::trials::pooled_spread(samples.iter().filter_map(Sample::trials))
}

/// One side of a test: what its point holds, and its spread over its levels.
pub struct Side<'a> {
    /// The point's sample.
    pub sample: &'a Sample,
    /// The side's spread over its load levels.
    pub spread: Option<crate::stats::trials::Spread>,
}

/// The one test of `m` between two sides: Welch over trials for figures,
/// Newcombe for a share. The error says why it cannot be tested.
pub fn test(base: &Side, cand: &Side) -> Result<Change, String> {
    use crate::stats::trials::Untestable;
    match (base.sample, cand.sample) {
        (Sample::Counts(b), Sample::Counts(c)) => {
            crate::stats::proportion::change(b, c).map_err(|e| e.to_string())
        }
        (Sample::Trials(b), Sample::Trials(c)) => {
            crate::stats::trials::change(b, base.spread, c, cand.spread).map_err(|e| e.to_string())
        }
        (Sample::Summary(n), _) | (_, Sample::Summary(n)) => Err(format!(
            "the report keeps only the min, median and max of its {n} trials (a report written by this version, or its requests file, keeps each trial's)"
        )),
        _ => Err(Untestable::NoValue.to_string()),
    }
}

/// How a test of `m` was made.
pub fn method_of(m: &Metric) -> Method {
    match m.kind {
        Kind::Share => Method::Newcombe,
        _ => Method::Trials,
    }
}

/// The thresholds of a comparison: the practical threshold and the chance of any
/// false "better"/"worse" in the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// The smallest relative change called better or worse (0.02: 2%).
    pub min_effect: f64,
    /// The chance of any false "better"/"worse" in the table (0.05).
    pub alpha: f64,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            min_effect: DEFAULT_MIN_EFFECT,
            alpha: DEFAULT_ALPHA,
        }
    }
}

/// The rows of `cand` against `base` at their common load levels (every metric
/// each has, SLO-bound ones only under the same SLO), not yet decided: the one
/// place a row is made, for `compare` and for the verdict.
pub fn pair_rows(
    (base_name, base): (&str, &crate::EngineResult),
    (cand_name, cand): (&str, &crate::EngineResult),
    same_slo: bool,
    rule: &Rule,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for bp in &base.points {
        let Some(cp) = cand.points.iter().find(|c| same_x(c.x, bp.x)) else {
            continue;
        };
        for m in METRICS.iter().filter(|m| same_slo || !m.slo_bound) {
            // Attainment only where a side recorded it (the reference does not);
            // optional figures, energy and cost where a side has them.
            if !m.recorded(bp, cp) {
                continue;
            }
            let (bs, cs) = (sample(m, bp), sample(m, cp));
            let change = test(
                &Side {
                    sample: &bs,
                    spread: spread(m, &base.points, bp),
                },
                &Side {
                    sample: &cs,
                    spread: spread(m, &cand.points, cp),
                },
            );
            rows.push(row(
                (cand_name, base_name, bp.x),
                m,
                (change, bs.estimate(), cs.estimate()),
                rule,
            ));
        }
    }
    rows
}

/// Two load levels are the same.
pub fn same_x(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// A row from a test's result and both sides' estimates.
fn row(
    (engine, baseline, x): (&str, &str, f64),
    m: &Metric,
    (change, base, cand): (Result<Change, String>, Option<f64>, Option<f64>),
    rule: &Rule,
) -> Row {
    let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
    let (ch, why) = match change {
        Ok(c) => (Some(c), None),
        Err(why) => (None, Some(why)),
    };
    let ci =
        ch.and_then(|c| (c.ci.0.is_finite() && c.ci.1.is_finite()).then_some([c.ci.0, c.ci.1]));
    Row {
        engine: engine.to_string(),
        baseline: baseline.to_string(),
        x,
        metric: m.name,
        baseline_value: finite(base),
        candidate_value: finite(cand),
        change: finite(ch.map(|c| c.change)),
        ci,
        significant: false,
        direction: Direction::Unknown,
        p: finite(ch.map(|c| c.p)),
        p_adjusted: None,
        trials_needed: None,
        p_same: finite(ch.map(|c| c.p_same(rule.min_effect))),
        df: finite(ch.map(|c| c.df)),
        not_testable: why,
        method: if ch.is_some() {
            method_of(m)
        } else {
            Method::None
        },
        better: Some(m.better),
        se: finite(ch.map(|c| c.se)),
        trials: ch.map_or(0, |c| c.trials),
    }
}

/// Fills `significant`, `direction`, `p_adjusted` and `trials_needed` over a whole
/// table: Holm over the rows' tests of "no change", and separately over their
/// tests of "a change of at least the threshold" (equivalence). The one decision,
/// for `compare` and the verdict.
pub fn decide(rows: &mut [Row], rule: &Rule) {
    use crate::stats::multiple::holm;
    let tested: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].p.is_some()).collect();
    let ps: Vec<f64> = tested.iter().map(|&i| rows[i].p.unwrap_or(1.0)).collect();
    let adjusted = holm(&ps);
    let same: Vec<f64> = tested
        .iter()
        .map(|&i| rows[i].p_same.unwrap_or(1.0))
        .collect();
    let same_adjusted = holm(&same);
    let m = tested.len().max(1);
    for (k, &i) in tested.iter().enumerate() {
        let r = &mut rows[i];
        r.p_adjusted = Some(adjusted[k]);
        let (Some(change), Some([lo, hi])) = (r.change, r.ci) else {
            continue;
        };
        let excludes_zero = lo > 0.0 || hi < 0.0;
        r.significant =
            excludes_zero && adjusted[k] <= rule.alpha && change.abs() >= rule.min_effect;
        r.direction = if r.significant {
            if (change < 0.0) == (r.better == Some(Better::Lower)) {
                Direction::Better
            } else {
                Direction::Worse
            }
        } else if same_adjusted[k] <= rule.alpha {
            Direction::Same
        } else {
            Direction::NoDetectableDifference
        };
        if r.direction == Direction::NoDetectableDifference {
            r.trials_needed = r.se.and_then(|se| {
                crate::stats::trials_needed(
                    se,
                    r.df.unwrap_or(f64::INFINITY),
                    r.trials,
                    rule.min_effect,
                    rule.alpha / m as f64,
                )
            });
        }
    }
}

/// A report's engines against its first, decided as `compare` decides them on
/// that report (the verdict reads its ranking from these rows).
pub fn within(report: &crate::Report, rule: &Rule) -> Vec<Row> {
    let mut engines = report.load.iter();
    let Some((base_name, base)) = engines.next() else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    for (name, result) in engines {
        if base.points.is_empty() || result.points.is_empty() {
            continue;
        }
        rows.extend(pair_rows((base_name, base), (name, result), true, rule));
    }
    decide(&mut rows, rule);
    rows
}

#[cfg(test)]
mod tests;
