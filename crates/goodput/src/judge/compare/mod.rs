//! `compare`: does one engine (or report) serve better than another, and is the
//! difference beyond noise? Pure apart from [`load`], which reads a report and its
//! requests file. The result is a [`report::compare::Comparison`], which
//! [`crate::render::compare`] only shows.
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
pub mod explain;
pub mod load;
pub mod pairs;
pub mod samples;

use crate::stats::{self, bootstrap, multiple, Change};
use samples::{summary_values, Better, Metric, TrialRequests};

pub use report::compare::{Comparison, Direction, Method, Row, DEFAULT_ALPHA, DEFAULT_MIN_EFFECT};

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
            min_effect: DEFAULT_MIN_EFFECT,
            alpha: DEFAULT_ALPHA,
            draws: bootstrap::DEFAULT_DRAWS,
            seed: stats::DEFAULT_SEED,
        }
    }
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

/// Compares reports without their requests files (per-trial summaries only), with
/// the default options, as text.
pub fn reports_text(reports: &[(String, report::Report)], color: bool) -> String {
    let inputs: Vec<Input> = reports
        .iter()
        .map(|(l, r)| Input::summaries_only(l.clone(), r.clone(), "no requests file given"))
        .collect();
    text(&inputs, &Options::default(), color)
}

/// The comparison of `inputs` as text ([`crate::render::compare::text`]).
pub fn text(inputs: &[Input], opts: &Options, color: bool) -> String {
    if inputs.is_empty() {
        return "Nothing to compare: give at least one report.\n".into();
    }
    crate::render::compare::text(&compare(inputs, opts), color)
}

/// The comparison of `inputs` as JSON (`{"conclusion", "rows": [...]}`).
pub fn json(inputs: &[Input], opts: &Options) -> String {
    crate::render::compare::json(&compare(inputs, opts))
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
