//! `goodput gate BASELINE CANDIDATE`: compare's judgement as a CI job's exit
//! status. The candidate fails the gate when any gated row is **worse** (beyond
//! noise after Holm over the table, and at least `--min-effect`): the same rows,
//! tests and correction `compare` prints, so a gate never says what compare would
//! not. It passes when none is worse and at least one gated row was tested; when
//! no gated row could be tested (one trial a side, nothing in common) it cannot
//! decide, and says what would let it.
//!
//! The summary is Markdown, for a CI job's summary page (`--markdown FILE`, and
//! `$GITHUB_STEP_SUMMARY` when set): the answer, compare's conclusion, and the
//! gated rows with their intervals, the worse ones first.

use report::compare::METRICS;

use crate::render::compare::{change_text as change, verdict_text};
use crate::render::markdown::md_escape;
use crate::render::text::num;

use super::{compare, Direction, Input, Options, Row};

/// What the gate decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// No gated row is worse, and at least one was tested.
    Pass,
    /// At least one gated row is worse.
    Fail,
    /// No gated row could be tested.
    Undecided,
}

impl Outcome {
    /// The exit status: 0 pass, 1 fail, 2 undecided (the inputs cannot support a
    /// gate, as a bad input cannot).
    pub fn code(self) -> i32 {
        match self {
            Outcome::Pass => 0,
            Outcome::Fail => 1,
            Outcome::Undecided => 2,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::Undecided => "UNDECIDED",
        }
    }
}

/// The gate's answer: the outcome, one line for the terminal, the Markdown summary.
#[derive(Debug, Clone)]
pub struct Gate {
    /// What it decided.
    pub outcome: Outcome,
    /// One line: the outcome and why.
    pub line: String,
    /// The summary for a CI job's page.
    pub markdown: String,
}

/// The metric names `--metric` accepts a key or a name of: compare's table.
pub fn metric_names() -> Vec<&'static str> {
    METRICS.iter().map(|m| m.key).collect()
}

/// The display name of the metric `spec` names (its key, e.g. `median_tpot_ms`,
/// or its name, e.g. `median TPOT ms`, case ignored); `None` when none.
pub fn metric(spec: &str) -> Option<&'static str> {
    METRICS
        .iter()
        .find(|m| m.key.eq_ignore_ascii_case(spec) || m.name.eq_ignore_ascii_case(spec))
        .map(|m| m.name)
}

/// Gates the candidate (`pair[1]`) against the baseline (`pair[0]`) on the rows
/// of `metrics` (display names; empty: every row).
pub fn gate(pair: &[Input; 2], metrics: &[&str], opts: &Options) -> Gate {
    let [baseline, candidate] = pair;
    let c = compare(pair, opts);
    let gated: Vec<&Row> = c
        .rows
        .iter()
        .filter(|r| metrics.is_empty() || metrics.contains(&r.metric))
        .collect();
    let worse: Vec<&Row> = gated
        .iter()
        .copied()
        .filter(|r| r.direction == Direction::Worse)
        .collect();
    let tested = gated
        .iter()
        .filter(|r| r.direction != Direction::Unknown)
        .count();
    let outcome = if !worse.is_empty() {
        Outcome::Fail
    } else if tested == 0 {
        Outcome::Undecided
    } else {
        Outcome::Pass
    };
    let (b, cand) = (&baseline.label, &candidate.label);
    let line = match outcome {
        Outcome::Fail => format!(
            "gate: FAIL: {cand} is worse than {b} in {} of {} gated rows ({})",
            worse.len(),
            gated.len(),
            worse
                .iter()
                .map(|r| format!("{} at x={}: {}", r.metric, num(r.x), change(r)))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Outcome::Pass => format!(
            "gate: PASS: no gated row of {cand} is worse than {b} ({tested} of {} rows tested; Holm-corrected 95%, threshold {}%)",
            gated.len(),
            num(opts.min_effect * 100.0)
        ),
        Outcome::Undecided => format!(
            "gate: UNDECIDED: none of the {} gated rows could be tested ({}); the gate needs at least 2 trials a side (--trials 2) at load levels both reports measured",
            gated.len(),
            untestable_reasons(&gated)
        ),
    };
    let markdown = markdown(outcome, &line, &c.conclusion, &gated, opts.min_effect);
    Gate {
        outcome,
        line,
        markdown,
    }
}

/// Why the untestable rows were, each reason once.
fn untestable_reasons(rows: &[&Row]) -> String {
    let mut reasons: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.not_testable.as_deref())
        .collect();
    reasons.sort_unstable();
    reasons.dedup();
    if reasons.is_empty() {
        "no rows in common".into()
    } else {
        reasons.join("; ")
    }
}

fn markdown(
    outcome: Outcome,
    line: &str,
    conclusion: &str,
    rows: &[&Row],
    min_effect: f64,
) -> String {
    let mut out = format!(
        "## goodput gate: {}\n\n{line}\n\n{conclusion}\n\n",
        outcome.word()
    );
    if rows.is_empty() {
        return out;
    }
    out.push_str("| engine | x | metric | baseline | candidate | change (95% CI) | verdict |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    let mut sorted: Vec<&&Row> = rows.iter().collect();
    sorted.sort_by_key(|r| r.direction != Direction::Worse);
    for r in sorted {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            md_escape(&r.engine),
            num(r.x),
            r.metric,
            r.baseline_value.map_or("-".into(), num),
            r.candidate_value.map_or("-".into(), num),
            change(r),
            row_verdict(r, min_effect)
        ));
    }
    out
}

/// What a row says, as compare prints it; a worse row in bold, an untestable one
/// with why.
fn row_verdict(r: &Row, min_effect: f64) -> String {
    let (words, _) = verdict_text(r, min_effect);
    match (r.direction, r.not_testable.as_deref()) {
        (Direction::Worse, _) => format!("**{words}**"),
        (Direction::Unknown, Some(why)) => format!("{words} ({})", md_escape(why)),
        _ => words,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_named_by_key_or_name() {
        assert_eq!(metric("median_tpot_ms"), Some("median TPOT ms"));
        assert_eq!(metric("Median TPOT ms"), Some("median TPOT ms"));
        assert_eq!(metric("goodput_rps"), Some("goodput req/s"));
        assert_eq!(metric("tpot"), None);
        assert!(metric_names().contains(&"median_ttft_ms"));
    }
}
