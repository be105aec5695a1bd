//! What a point of a report says, read once for every writer: whether it meets the
//! SLO (its stored judgement), its attainment; what would decide an undecided
//! point; and the SLO's bounds in words.

use report::slo::{point_judgement, point_undecided, ToDecide};
use report::{Judgement, Point, Report};

use super::text::num;

/// Whether a point meets the SLO: its one judgement
/// ([`report::slo::point_judgement`]) as `Some(true)` (meets),
/// `Some(false)` (fails), `None` (undecided, or not known).
pub fn point_meets(report: &Report, p: &Point) -> Option<bool> {
    match point_judgement(report, p)? {
        Judgement::Meets => Some(true),
        Judgement::Fails => Some(false),
        Judgement::Undecided | Judgement::Unknown => None,
    }
}

/// What would decide an undecided attainment-form point, in words, from
/// [`report::slo::point_undecided`] (the one computation): `20 of 20 good; 35
/// requests at this share (15 more) would show ≥ 90% at 95%`, or in trials when
/// the trials vary more than requests would. `None` for any other point.
pub fn undecided_words(report: &Report, p: &Point) -> Option<String> {
    let u = point_undecided(report, p)?;
    let a = &u.attainment;
    let above = a.attainment() >= u.target;
    let (counted, show) = match &u.metric {
        None if u.tool_calls.is_some() => (
            format!(
                "{} of {} tool calls {}",
                a.good,
                a.sent,
                if u.tool_calls.as_deref() == Some("schema_valid") {
                    "valid against their schema"
                } else {
                    "valid JSON"
                }
            ),
            format!(
                "would show {} {}% at {}%",
                if above { "≥" } else { "<" },
                num(u.target * 100.0),
                level_words(u.level)
            ),
        ),
        None => (
            format!("{} of {} good", a.good, a.sent),
            format!(
                "would show {} {}% at {}%",
                if above { "≥" } else { "<" },
                num(u.target * 100.0),
                level_words(u.level)
            ),
        ),
        Some((name, bound)) => (
            format!(
                "{} of {} requests within {} ≤ {} ms",
                a.good,
                a.sent,
                name.label(),
                num(*bound)
            ),
            format!(
                "would show its p{} {} the bound at {}%",
                num(u.target * 100.0),
                if above { "within" } else { "beyond" },
                level_words(u.level)
            ),
        ),
    };
    Some(match u.needs {
        ToDecide::Requests { total, more } => {
            let what = if u.tool_calls.is_some() {
                "tool calls"
            } else {
                "requests"
            };
            format!("{counted}; {total} {what} at this share ({more} more) {show}")
        }
        ToDecide::Trials { more, per_trial } => format!(
            "{counted}, the trials varying {}x a binomial; about {more} more trial{} of \
             {per_trial} requests at this share and spread {show}",
            num1(a.design_effect),
            if more == 1 { "" } else { "s" }
        ),
        ToDecide::OnTarget => format!(
            "{counted}: the share sits on the {}% needed, so no number of requests at this \
             share would decide it",
            num(u.target * 100.0)
        ),
    })
}

/// A bounded metric's name as the SLO says it (`ttft` -> `TTFT`).
/// A confidence level in percent, to one decimal when it has one (`95`, `97.2`).
fn level_words(level: f64) -> String {
    let s = format!("{:.1}", level * 100.0);
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

/// A ratio to one decimal (`1.4`).
fn num1(v: f64) -> String {
    format!("{v:.1}")
}

/// Pooled attainment of a point, when known (from `slo_check`, else the counts;
/// 0 when goodput was zero in every trial).
pub fn point_attainment(p: &Point) -> Option<f64> {
    if let Some(a) = p.slo_check.as_ref().and_then(|c| c.attainment) {
        return Some(a);
    }
    if let Some(a) = counted_attainment(p) {
        return Some(a);
    }
    zero_goodput(p).then_some(0.0)
}

/// Good requests over those sent (completed and failed), from a point's counts;
/// `None` without good counts or with nothing sent.
fn counted_attainment(p: &Point) -> Option<f64> {
    let good: u64 = p.good.as_ref()?.iter().sum();
    let sent: u64 =
        p.completed.iter().sum::<u64>() + p.failed.as_ref().map_or(0, |f| f.iter().sum());
    (sent > 0).then(|| good as f64 / sent as f64)
}

/// Goodput was measured and zero in every trial.
fn zero_goodput(p: &Point) -> bool {
    p.goodput_rps.n > 0 && p.goodput_rps.max == Some(0.0)
}

/// The SLO's bounds in words: `TTFT ≤ 1000 ms and TPOT ≤ 100 ms`; only the bounds
/// that were given.
pub fn slo_bounds_text(slo: &report::Slo) -> String {
    let bounds: Vec<String> = slo
        .bounds
        .iter()
        .map(|(m, b)| format!("{} ≤ {} ms", m.label(), num(b)))
        .collect();
    if bounds.is_empty() {
        "no bound".into()
    } else {
        bounds.join(" and ")
    }
}
