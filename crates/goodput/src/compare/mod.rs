//! `compare`: does one engine (or report) serve better than another, and is the
//! difference beyond noise? Pure apart from [`load`], which reads a report and its
//! requests file; [`crate::render::compare`] only shows the result.
//!
//! Per load level and metric ([`samples::METRICS`]): the relative change of the
//! candidate against the baseline with its 95% interval — the hierarchical
//! bootstrap over trials and requests when both sides have their requests file
//! ([`crate::stats::bootstrap`]), else Welch's t over the per-trial values the
//! reports hold ([`crate::stats::welch`]). A row is **better** or **worse** only
//! when its interval excludes zero, its Holm-adjusted p-value over the whole table
//! is at most 5% ([`crate::stats::multiple`]), and the change is at least the
//! practical threshold (`--min-effect`, default 2%); otherwise **no detectable
//! difference**, with the trials per side that would detect the threshold.
//! docs/statistics.md has the reasoning and the calibration.

pub mod conclusion;
pub mod load;
pub mod pairs;
pub mod samples;
pub mod simulated;

use serde::Serialize;

use crate::stats::{self, bootstrap, multiple, Change};
use samples::{summary_values, Better, Metric, TrialRequests};

pub use load::{load, Input};

/// How `compare` decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// The smallest relative change called better or worse (0.02: 2%).
    pub min_effect: f64,
    /// The chance of any false "better"/"worse" in the table (0.05).
    pub alpha: f64,
    /// Bootstrap resamples per row.
    pub draws: usize,
    /// The bootstrap's seed.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min_effect: 0.02,
            alpha: 0.05,
            draws: bootstrap::DEFAULT_DRAWS,
            seed: stats::DEFAULT_SEED,
        }
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
    #[serde(skip)]
    pub(crate) better: Option<Better>,
    #[serde(skip)]
    pub(crate) se: Option<f64>,
    #[serde(skip)]
    pub(crate) trials: usize,
}

/// One side of a pair at one load level: its requests, or its report's point.
pub struct SideData<'a> {
    /// Per-trial requests, when the requests file is at hand.
    pub requests: Option<&'a [TrialRequests]>,
    /// The report's point.
    pub point: &'a report::Point,
}

/// Tests one metric of `cand` against `base`.
pub fn test_metric(
    m: &Metric,
    base: &SideData,
    cand: &SideData,
    opts: &Options,
    key: &str,
) -> (Option<Change>, Method, Option<f64>, Option<f64>) {
    let seed = stats::row_seed(opts.seed, key);
    let per_request = m.value != samples::Value::PerTrial;
    if let (Some(b), Some(c), true) = (base.requests, cand.requests, per_request) {
        let bt: Vec<_> = b.iter().map(|t| t.trial(m.value)).collect();
        let ct: Vec<_> = c.iter().map(|t| t.trial(m.value)).collect();
        let (bv, cv) = (
            bootstrap::estimate(&bt, m.statistic),
            bootstrap::estimate(&ct, m.statistic),
        );
        let ch = bootstrap::change(&bt, &ct, m.statistic, opts.draws, seed);
        return (ch, Method::Bootstrap, bv, cv);
    }
    let (bv, _) = summary_values(m, base.point);
    let (cv, _) = summary_values(m, cand.point);
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let ch = stats::welch::change(&bv, &cv);
    let method = if ch.is_some() {
        Method::Welch
    } else {
        Method::None
    };
    (ch, method, mean(&bv), mean(&cv))
}

/// Fills `significant`, `direction`, `p_adjusted` and `trials_needed` over a whole
/// table (Holm over the rows that have a p-value).
pub fn decide(rows: &mut [Row], opts: &Options) {
    let tested: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].p.is_some()).collect();
    let ps: Vec<f64> = tested.iter().map(|&i| rows[i].p.unwrap_or(1.0)).collect();
    let adjusted = multiple::holm(&ps);
    let m = tested.len().max(1);
    for (k, &i) in tested.iter().enumerate() {
        let r = &mut rows[i];
        r.p_adjusted = Some(adjusted[k]);
        let (Some(change), Some([lo, hi])) = (r.change, r.ci) else {
            continue;
        };
        let excludes_zero = lo > 0.0 || hi < 0.0;
        r.significant =
            excludes_zero && adjusted[k] <= opts.alpha && change.abs() >= opts.min_effect;
        r.direction = if !r.significant {
            Direction::NoDetectableDifference
        } else if (change < 0.0) == (r.better == Some(Better::Lower)) {
            Direction::Better
        } else {
            Direction::Worse
        };
        let settled = lo > -opts.min_effect && hi < opts.min_effect;
        if !r.significant && !settled {
            r.trials_needed = r.se.and_then(|se| {
                stats::trials_needed(se, r.trials, opts.min_effect, opts.alpha / m as f64)
            });
        }
    }
}

/// A row from a test's result.
pub fn row(
    engine: String,
    baseline: String,
    x: f64,
    m: &Metric,
    tested: (Option<Change>, Method, Option<f64>, Option<f64>),
) -> Row {
    let (ch, method, bv, cv) = tested;
    let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
    let ci =
        ch.and_then(|c| (c.ci.0.is_finite() && c.ci.1.is_finite()).then_some([c.ci.0, c.ci.1]));
    Row {
        engine,
        baseline,
        x,
        metric: m.name,
        baseline_value: finite(bv),
        candidate_value: finite(cv),
        change: finite(ch.map(|c| c.change)),
        ci,
        significant: false,
        direction: Direction::Unknown,
        p: finite(ch.map(|c| c.p)),
        p_adjusted: None,
        trials_needed: None,
        method: if ch.is_some() { method } else { Method::None },
        better: Some(m.better),
        se: finite(ch.map(|c| c.se)),
        trials: ch.map_or(0, |c| c.trials),
    }
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
    pub sections: Vec<pairs::Section>,
}

/// Compares `inputs`: with one, its engines against its first; with more, each
/// report against the first.
pub fn compare(inputs: &[Input], opts: &Options) -> Comparison {
    let mut sections = pairs::sections(inputs, opts);
    let mut rows: Vec<Row> = Vec::new();
    for s in &mut sections {
        let start = rows.len();
        rows.append(&mut s.rows);
        s.range = start..rows.len();
    }
    decide(&mut rows, opts);
    let conclusion = conclusion::conclusion(&sections, &rows, opts);
    Comparison {
        conclusion,
        rows,
        correction: "holm",
        min_effect: opts.min_effect,
        sections,
    }
}
