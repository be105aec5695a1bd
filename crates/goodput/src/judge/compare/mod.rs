//! `compare`: does one engine (or report) serve better than another, and is the
//! difference beyond noise? Pure apart from [`read()`], which reads a report (and
//! the requests file of a report that stores no per-trial figures). The result is
//! a [`report::compare::Comparison`], which [`crate::render::compare`] only shows.
//!
//! Per load level and metric ([`samples::METRICS`]): the relative change of the
//! candidate's mean over trials against the baseline's, with its 95% interval, by
//! the one test the verdict's ranking also calls ([`report::compare::test`]):
//! Welch's t over the trials' figures, the trial-to-trial variance pooled over each
//! side's load levels and floored by the noise within a trial
//! ([`report::stats::trials`]); for attainment, Newcombe's interval over the
//! effective requests ([`report::stats::proportion`]). A row is **better** or
//! **worse** only when its interval excludes zero, its Holm-adjusted p-value over
//! the whole table is at most 5% ([`crate::stats::multiple`]), and the change is at
//! least the practical threshold (`--min-effect`, default 2%); **same** when the
//! two one-sided tests show it within ±threshold (Holm over the table too);
//! otherwise **no detectable difference**, with the trials per side that would
//! detect the threshold; **not testable** with why (one trial a side, ...).
//! docs/statistics.md has the reasoning and the calibration.

pub mod conclusion;
pub mod explain;
pub mod gate;
pub mod pairs;
pub mod read;
pub mod samples;

use crate::stats;

pub use report::compare::{Comparison, Direction, Method, Row, DEFAULT_ALPHA, DEFAULT_MIN_EFFECT};

pub use read::{read, Input};

/// How `compare` decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// The smallest relative change called better or worse (0.02: 2%).
    pub min_effect: f64,
    /// The chance of any false "better"/"worse" in the table (0.05).
    pub alpha: f64,
    /// Kept for `--seed`: the tests are exact and draw nothing, so it changes
    /// nothing.
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min_effect: DEFAULT_MIN_EFFECT,
            alpha: DEFAULT_ALPHA,
            seed: stats::DEFAULT_SEED,
        }
    }
}

impl Options {
    /// The thresholds the report crate's [`report::compare::decide`] applies.
    pub fn rule(&self) -> Rule {
        Rule {
            min_effect: self.min_effect,
            alpha: self.alpha,
        }
    }
}

pub use report::compare::{decide, pair_rows, Rule};

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
    // Names from a server or a file (a model id with a newline) stay on their line.
    let shown: Vec<Input> = inputs
        .iter()
        .map(|i| Input {
            label: crate::render::one_line::one_line(&i.label).into_owned(),
            report: crate::render::one_line::report(&i.report).into_owned(),
            missing: i.missing.clone(),
        })
        .collect();
    crate::render::compare::text(&compare(&shown, opts), color)
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
    decide(&mut rows, &opts.rule());
    let conclusion = conclusion::conclusion(&sections, &rows, opts);
    Comparison {
        conclusion,
        rows,
        correction: "holm",
        min_effect: opts.min_effect,
        sections,
    }
}
