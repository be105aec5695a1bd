//! The verdict's ranking of engines whose capacities tie: by goodput at the shared
//! load, with the same test `compare` makes on what a report holds (Welch's t over
//! per-trial goodput, Holm-corrected over the engines, at least
//! [`report::compare::DEFAULT_MIN_EFFECT`] apart); or, when that cannot tell them
//! apart, a sentence saying so and what would separate them.

use report::{Point, Report};

use super::text::num;
use report::compare::{pct, summary_values, DEFAULT_ALPHA, DEFAULT_MIN_EFFECT, METRICS};
use report::stats::{multiple, trials_needed, welch};

/// Per-trial goodput of `engine` at `x`, when measured.
fn goodput_at<'a>(report: &'a Report, engine: &str, x: f64) -> Option<(&'a Point, Vec<f64>)> {
    let p = report.load.get(engine)?.points.iter().find(|p| p.x == x)?;
    let (v, _) = summary_values(&METRICS[5], p);
    (!v.is_empty()).then_some((p, v))
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The sentence on engines `tied` at load `x`: who leads at that load, beyond
/// noise, or that they cannot be told apart and what would separate them.
pub fn tie_break(
    report: &Report,
    tied: &[&str],
    x: f64,
    and_list: fn(&[&str]) -> String,
) -> String {
    let mut at: Vec<(&str, Vec<f64>)> = tied
        .iter()
        .filter_map(|e| goodput_at(report, e, x).map(|(_, v)| (*e, v)))
        .collect();
    let head = format!("{} tie at {}", and_list(tied), num(x));
    if at.len() < 2 {
        return format!(
            "{head}; the report holds no goodput of theirs at that load, so they cannot be ranked."
        );
    }
    at.sort_by(|a, b| mean(&b.1).total_cmp(&mean(&a.1)));
    let (lead, lead_v) = (&at[0].0, &at[0].1);
    let tests: Vec<_> = at[1..]
        .iter()
        .map(|(e, v)| (*e, welch::change(v, lead_v)))
        .collect();
    let ps: Vec<f64> = tests.iter().map(|(_, c)| c.map_or(1.0, |c| c.p)).collect();
    let adj = multiple::holm(&ps);
    let beats_all = tests.iter().zip(&adj).all(|((_, c), p)| {
        c.is_some_and(|c| c.ci.0 > 0.0 && *p <= DEFAULT_ALPHA && c.change >= DEFAULT_MIN_EFFECT)
    });
    let (second, ch) = (&tests[0].0, tests[0].1);
    if let (true, Some(c)) = (beats_all, ch) {
        return format!(
            "{head}; at that load {lead} has the most goodput: {} ({}–{}) more than {second} (Welch t over trials, Holm-corrected).",
            pct(c.change),
            pct(c.ci.0).trim_end_matches('%'),
            pct(c.ci.1)
        );
    }
    let values: Vec<String> = at
        .iter()
        .map(|(e, v)| format!("{e} {} req/s", num(mean(v))))
        .collect();
    let need = ch.and_then(|c| {
        trials_needed(
            c.se,
            c.trials,
            DEFAULT_MIN_EFFECT,
            DEFAULT_ALPHA / tests.len() as f64,
        )
    });
    let more = match need {
        Some(n) => format!("about {n} trials each"),
        None if ch.is_none() => "at least two trials each".to_string(),
        None => "more trials".to_string(),
    };
    format!(
        "{head} and cannot be told apart at that load (goodput {}); {more} would separate a {} difference, or a finer search between {} and the next load.",
        values.join(", "),
        pct(DEFAULT_MIN_EFFECT),
        num(x)
    )
}
