//! The verdict: the answer to "which configuration serves my SLO, and up to what
//! load?" in a few plain sentences, from what the report measured. Printed at the
//! top of `show` and of the HTML page, and at the end of `run` and `search`.
//!
//! With a capacity search (`capacity` in the report) it names each engine's largest
//! load meeting the SLO and the best engine; without one it speaks of the measured
//! load levels only. It never claims more than the warnings allow: throttling,
//! missing trials, failed engines and noisy probes are said beside the answer.

use report::{FailureKind, Judgement, Limit, LimitWord, LoadMode, Point, Report};

use report::slo::point_judgement;

use crate::point::{point_meets, slo_bounds_text};
use crate::text::num;
use crate::warnings::{warnings, WarningKind};

mod capacity;
mod caveats;
mod measured;

use capacity::from_capacity;
use caveats::{caveats, extrapolated, predicted, server_reasons};
use measured::measured_levels;

fn is_rate(report: &Report) -> bool {
    report
        .run
        .as_ref()
        .is_some_and(|r| r.load_mode == LoadMode::Rate)
        || report.capacity.values().any(|c| c.mode == LoadMode::Rate)
}

fn load_words(report: &Report, x: f64) -> String {
    if is_rate(report) {
        format!("{} requests/s", num(x))
    } else {
        format!(
            "{} concurrent request{}",
            num(x),
            if x == 1.0 { "" } else { "s" }
        )
    }
}

/// `TTFT ≤ 1000 ms and TPOT ≤ 100 ms for 90% of requests` (or `at p90`).
pub fn slo_words(report: &Report) -> String {
    let bounds = slo_bounds_text(&report.slo);
    if bounds == "no bound" {
        // No share of requests to hold to a bound there is not (a peer's file
        // that does not record the SLO it was judged against).
        return "no SLO recorded".into();
    }
    match report.slo.percentile {
        Some(p) => format!("{bounds} at p{}", num(p)),
        None => {
            let a = report
                .slo
                .attainment
                .unwrap_or(report::slo::DEFAULT_ATTAINMENT);
            if a >= 1.0 {
                format!("{bounds} for every request")
            } else {
                format!("{bounds} for {}% of requests", num(a * 100.0))
            }
        }
    }
}

/// The verdict's sentences.
pub fn verdict(report: &Report) -> Vec<String> {
    let mut out = if report.capacity.is_empty() {
        measured_levels(report)
    } else {
        from_capacity(report)
    };
    out.extend(super::cost::cheapest(report, |x| load_words(report, x)));
    out.extend(server_reasons(report));
    out.extend(super::adapters::verdict_sentences(report));
    out.extend(caveats(report));
    if let Some(p) = report.run.as_ref().and_then(|r| r.predicted.as_ref()) {
        // Nothing of a predicted report was measured.
        out = out
            .into_iter()
            .map(|s| s.replace("measured load", "predicted load"))
            .collect();
        out.insert(0, predicted(p));
        out.extend(extrapolated(report));
    }
    out
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(names: &[&str]) -> String {
    match names {
        [rest @ .., last] if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// Loads as `1, 2, 4`.
fn xs(loads: &[f64]) -> String {
    loads.iter().map(|x| num(*x)).collect::<Vec<_>>().join(", ")
}

/// The verdict as text: `Verdict: ...` with one sentence a line.
pub fn verdict_text(report: &Report) -> String {
    let v = verdict(report);
    if v.is_empty() {
        return String::new();
    }
    let mut out = String::from("Verdict: ");
    out.push_str(&v.join("\n         "));
    out.push('\n');
    out
}

/// The verdict as an HTML section.
pub fn verdict_html(report: &Report) -> maud::Markup {
    maud::html! {
        section #verdict {
            h2 { "Verdict" }
            @for s in verdict(report) { p { (s) } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noisy_capacity_says_its_note_and_a_newer_limit_reads_as_no_max() {
        let text = include_str!("../../../goodput/tests/render_fixtures/additive.json");
        let mut r = report::io::parse_report(text).expect("fixture parses");
        let name = r.load.keys().next().expect("an engine").clone();
        let capacity = |limited_by: Limit, noisy: bool| report::Capacity {
            mode: LoadMode::Concurrency,
            max_load: Some(2.0),
            passing: Some(2.0),
            failing: Some(3.0),
            probes: 3,
            trials: 6,
            limited_by,
            noisy,
            note: "the bracket is noisy".into(),
            ..Default::default()
        };
        r.capacity
            .insert(name.clone(), capacity(Limit::from_word("memory"), true));
        let v = verdict(&r).join(" ");
        assert!(v.contains(&format!("{name}: the bracket is noisy.")), "{v}");
        assert!(!v.contains("the search's max"), "{v}");
        r.capacity
            .insert(name.clone(), capacity(Limit::Other(LimitWord::Max), false));
        let v = verdict(&r).join(" ");
        assert!(v.contains("the search's max"), "{v}");
        assert!(!v.contains("the bracket is noisy"), "{v}");
    }

    #[test]
    fn an_undecided_load_says_what_would_decide_it() {
        let text = include_str!("../../../goodput/tests/render_fixtures/additive.json");
        let mut r = report::io::parse_report(text).expect("fixture parses");
        r.capacity.clear();
        r.slo.percentile = None;
        let engine = r.load.keys().next().expect("an engine").clone();
        let points = &mut r.load.get_mut(&engine).expect("the engine").points;
        let p = &mut points[0];
        p.trials.clear();
        p.slo_check = Some(report::SloCheck {
            good: 20,
            sent: 20,
            attainment: Some(1.0),
            target: 0.9,
            form: report::SloForm::Attainment,
            meets: true,
            judgement: Some(Judgement::Undecided),
            ..Default::default()
        });
        let x = num(p.x);
        let v = verdict(&r).join(" ");
        // 20 of 20: Wilson's lower end n / (n + z²) reaches 90% at n = 35.
        let says = format!(
            "undecided at x={x} (the attainment's interval straddles the target: at x={x}, \
             20 of 20 good; 35 requests at this share (15 more) would show ≥ 90% at 95%)"
        );
        assert!(v.contains(&says), "{v}");
    }
}
