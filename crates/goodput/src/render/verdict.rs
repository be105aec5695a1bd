//! The verdict: the answer to "which configuration serves my SLO, and up to what
//! load?" in a few plain sentences, from what the report measured. Printed at the
//! top of `show` and of the HTML page, and at the end of `run` and `search`.
//!
//! With a capacity search (`capacity` in the report) it names each engine's largest
//! load meeting the SLO and the best engine; without one it speaks of the measured
//! load levels only. It never claims more than the warnings allow: throttling,
//! missing trials, failed engines and noisy probes are said beside the answer.

use report::{Point, Report};

use super::table::slo_bounds_text;
use super::text::num;
use super::warnings::{warnings, WarningKind};

/// Whether a point meets the SLO, as far as the report tells: its `slo_check` when
/// present; otherwise the attainment from good and failed counts against the
/// target; otherwise `false` when its goodput is zero in every trial (no request
/// was good, as in the reference report); otherwise unknown.
pub fn point_meets(report: &Report, p: &Point) -> Option<bool> {
    if let Some(c) = &p.slo_check {
        return Some(c.meets);
    }
    let target = report
        .slo
        .attainment
        .unwrap_or(crate::metrics::DEFAULT_ATTAINMENT);
    if let Some(good) = &p.good {
        let good: u64 = good.iter().sum();
        let sent: u64 =
            p.completed.iter().sum::<u64>() + p.failed.as_ref().map_or(0, |f| f.iter().sum());
        if sent > 0 {
            return Some(good as f64 / sent as f64 >= target);
        }
    }
    if p.goodput_rps.n > 0 && p.goodput_rps.max == Some(0.0) {
        return Some(false);
    }
    None
}

/// Pooled attainment of a point, when known (from `slo_check`, else the counts;
/// 0 when goodput was zero in every trial).
pub fn point_attainment(p: &Point) -> Option<f64> {
    if let Some(a) = p.slo_check.as_ref().and_then(|c| c.attainment) {
        return Some(a);
    }
    if let Some(good) = &p.good {
        let sent: u64 =
            p.completed.iter().sum::<u64>() + p.failed.as_ref().map_or(0, |f| f.iter().sum());
        if sent > 0 {
            return Some(good.iter().sum::<u64>() as f64 / sent as f64);
        }
    }
    (p.goodput_rps.n > 0 && p.goodput_rps.max == Some(0.0)).then_some(0.0)
}

fn is_rate(report: &Report) -> bool {
    report.run.as_ref().is_some_and(|r| r.load_mode == "rate")
        || report.capacity.values().any(|c| c.mode == "rate")
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
    match report.slo.percentile {
        Some(p) => format!("{bounds} at p{}", num(p)),
        None => {
            let a = report
                .slo
                .attainment
                .unwrap_or(crate::metrics::DEFAULT_ATTAINMENT);
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
    out.extend(server_reasons(report));
    out.extend(caveats(report));
    if let Some(p) = report.run.as_ref().and_then(|r| r.predicted.as_ref()) {
        out.insert(0, predicted(p));
    }
    out
}

/// The sentence that says a report was predicted, not measured.
fn predicted(p: &report::Predicted) -> String {
    let from = p
        .fitted_from
        .as_ref()
        .map_or(String::new(), |f| format!(", fitted from {f}"));
    format!(
        "PREDICTED, not measured: every figure below comes from the engine model {}{from} ({}).",
        p.engine_config, p.method
    )
}

/// Why the lowest failing load of each engine fails, as the engine's own metrics
/// tell it (when they were sampled): requests waiting in its queue make TTFT queue
/// time; preemptions mean the KV pool is too small for that load.
fn server_reasons(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for (engine, result) in &report.load {
        let failing = result
            .points
            .iter()
            .find(|p| point_meets(report, p) == Some(false));
        let Some(p) = failing else { continue };
        let Some(s) = &p.server else { continue };
        let mut why = Vec::new();
        if let (Some(share), Some(max)) = (s.waiting_share, s.max_waiting) {
            if share >= 0.2 && max >= 1.0 {
                why.push(format!(
                    "up to {} requests waited in the engine's queue ({}% of samples): TTFT there is queueing",
                    num(max),
                    num((share * 100.0).round())
                ));
            }
        }
        if let Some(n) = s.preemptions.filter(|n| *n > 0.0) {
            why.push(format!(
                "{} preemptions: the KV pool is too small for this load",
                num(n)
            ));
        }
        if !why.is_empty() {
            out.push(format!(
                "Why {engine} fails at x={}: {}.",
                num(p.x),
                why.join("; ")
            ));
        }
    }
    out
}

fn from_capacity(report: &Report) -> Vec<String> {
    let slo = slo_words(report);
    let mut found: Vec<(&str, f64)> = report
        .capacity
        .iter()
        .filter_map(|(e, c)| c.max_load.map(|m| (e.as_str(), m)))
        .collect();
    found.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut out = Vec::new();
    let Some(&(best, best_x)) = found.first() else {
        let why: Vec<String> = report
            .capacity
            .iter()
            .map(|(e, c)| format!("{e}: {}", c.note))
            .collect();
        out.push(format!(
            "No engine serves {slo}, even at the lowest load probed ({}).",
            why.join("; ")
        ));
        return out;
    };
    let others: Vec<String> = report
        .capacity
        .iter()
        .filter(|(e, _)| e.as_str() != best)
        .map(|(e, c)| match c.max_load {
            Some(m) => format!("{e}: {}", num(m)),
            None => format!(
                "{e}: not even {}",
                c.failing.map_or("the lowest load".into(), num)
            ),
        })
        .collect();
    let cap = &report.capacity[best];
    let plus = if cap.limited_by == "max" {
        " (the search's max; it may serve more)"
    } else {
        ""
    };
    let mut s = format!(
        "{best} serves {slo} up to {}{plus}",
        load_words(report, best_x)
    );
    if !others.is_empty() {
        s.push_str(&format!(" ({})", others.join("; ")));
    }
    s.push('.');
    out.push(s);
    if report.capacity.len() > 1 {
        match found.get(1) {
            Some(&(_, next)) if next > 0.0 && best_x > next => out.push(format!(
                "Best: {best}, {}x the load of the next.",
                num(best_x / next)
            )),
            Some(&(_, nx)) if nx == best_x => {
                let tied: Vec<&str> = found
                    .iter()
                    .filter(|f| f.1 == best_x)
                    .map(|f| f.0)
                    .collect();
                let names = match tied.as_slice() {
                    [rest @ .., last] if !rest.is_empty() => {
                        format!("{} and {last}", rest.join(", "))
                    }
                    _ => tied.join(""),
                };
                let all = if tied.len() == report.capacity.len() && tied.len() > 2 {
                    "all "
                } else {
                    ""
                };
                out.push(format!("{names} {all}tie at {}.", num(best_x)))
            }
            None => out.push(format!("Best: {best}, the only engine that meets the SLO.")),
            _ => {}
        }
    }
    for (e, c) in &report.capacity {
        if c.note.contains("noise") || c.limited_by == "max_probes" || c.limited_by == "engine" {
            out.push(format!("{e}: {}.", c.note));
        }
    }
    out
}

fn measured_levels(report: &Report) -> Vec<String> {
    let slo = slo_words(report);
    let mut out = Vec::new();
    // Each engine's largest measured load that meets the SLO.
    let mut passing: Vec<(&str, f64)> = Vec::new();
    let mut any_known = false;
    for (engine, result) in &report.load {
        if result.points.is_empty() {
            continue;
        }
        let (mut yes, mut no, mut unknown) = (Vec::new(), Vec::new(), Vec::new());
        for p in &result.points {
            match point_meets(report, p) {
                Some(true) => yes.push(p.x),
                Some(false) => no.push(p.x),
                None => unknown.push(p.x),
            }
        }
        any_known |= !(yes.is_empty() && no.is_empty());
        let list = |xs: &[f64]| xs.iter().map(|x| num(*x)).collect::<Vec<_>>().join(", ");
        let mut s = match (yes.is_empty(), no.is_empty()) {
            (false, true) => format!(
                "{engine} meets the SLO at every measured load (x={})",
                list(&yes)
            ),
            (false, false) => format!(
                "{engine} meets the SLO at x={}, not at x={}",
                list(&yes),
                list(&no)
            ),
            (true, false) => format!(
                "{engine} meets the SLO at no measured load (x={})",
                list(&no)
            ),
            (true, true) => format!("{engine}: not known whether it meets the SLO"),
        };
        let judged = !(yes.is_empty() && no.is_empty());
        if judged && !unknown.is_empty() {
            s.push_str(&format!(" (unknown at x={})", list(&unknown)));
        }
        out.push(s + ".");
        if let Some(&x) = yes.iter().max_by(|a, b| a.total_cmp(b)) {
            passing.push((engine, x));
        }
    }
    let levels: Vec<f64> = {
        let mut v: Vec<f64> = report
            .load
            .values()
            .flat_map(|e| e.points.iter().map(|p| p.x))
            .collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let best_x = passing.iter().map(|p| p.1).max_by(f64::total_cmp);
    let tied: Vec<&str> = passing
        .iter()
        .filter(|p| Some(p.1) == best_x)
        .map(|p| p.0)
        .collect();
    let head = match best_x {
        Some(x) => {
            let who = match tied.as_slice() {
                [one] => format!("{one} serves"),
                [rest @ .., last] => format!("{} and {last} each serve", rest.join(", ")),
                [] => String::new(),
            };
            let tie = if tied.len() > 1 { "; they tie" } else { "" };
            format!(
                "At the measured loads, {who} {slo} up to {}{tie} (no capacity search: the largest load is between measured levels; `goodput search` finds it).",
                load_words(report, x)
            )
        }
        None if any_known => {
            // Nothing met the SLO anywhere: one sentence says it for every engine.
            out.clear();
            format!(
                "No engine meets the SLO ({slo}) at any measured load (x={}){}.",
                levels
                    .iter()
                    .map(|x| num(*x))
                    .collect::<Vec<_>>()
                    .join(", "),
                why_missed(report)
            )
        }
        None => "The report does not say whether any request met the SLO.".to_string(),
    };
    out.insert(0, head);
    out
}

/// `: the median TTFT is 1.4–4.9x its bound, ...` for a report where nothing passed.
fn why_missed(report: &Report) -> String {
    let slo = &report.slo;
    let mut parts = Vec::new();
    for (name, bound, med) in [
        (
            "TTFT",
            slo.ttft_ms,
            (|p: &Point| p.median_ttft_ms.median) as fn(&Point) -> Option<f64>,
        ),
        ("TPOT", slo.tpot_ms, |p: &Point| p.median_tpot_ms.median),
    ] {
        let Some(b) = bound else { continue };
        let ratios: Vec<f64> = report
            .load
            .values()
            .flat_map(|e| e.points.iter())
            .filter_map(med)
            .map(|v| v / b)
            .collect();
        let over = ratios.iter().filter(|r| **r > 1.0).count();
        if over == 0 {
            continue;
        }
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(0.0, f64::max);
        parts.push(format!(
            "the median {name} is over its {} ms bound at {over} of {} points ({}–{}x)",
            num(b),
            ratios.len(),
            num(lo),
            num(hi)
        ));
    }
    let errors: u64 = report
        .load
        .values()
        .flat_map(|e| e.points.iter())
        .map(|p| p.errors.values().sum::<u64>())
        .sum();
    if errors > 0 {
        parts.push(format!("{errors} requests failed"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(": {}", parts.join("; "))
    }
}

/// What weakens the answer, from the warnings.
fn caveats(report: &Report) -> Vec<String> {
    let ws = warnings(report);
    let mut out = Vec::new();
    let engines_with = |k: WarningKind| {
        let mut v: Vec<&str> = ws
            .iter()
            .filter(|w| w.kind == k)
            .map(|w| w.engine.as_str())
            .collect();
        v.dedup();
        v
    };
    let throttled = engines_with(WarningKind::ThermalThrottle);
    if !throttled.is_empty() {
        out.push(format!(
            "But the GPU was thermally throttled ({}): these figures measure the cooling as much as the engine; rerun on a cool GPU before relying on them.",
            throttled.join(", ")
        ));
    }
    let missing = engines_with(WarningKind::MissingTrials);
    if !missing.is_empty() {
        out.push(format!(
            "Some trials are missing ({}): the answer there rests on fewer trials than planned.",
            missing.join(", ")
        ));
    }
    let failed = engines_with(WarningKind::EngineFailed);
    if !failed.is_empty() {
        out.push(format!(
            "Not judged, or judged on partial results: {} failed (see the warnings).",
            failed.join(", ")
        ));
    }
    out
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
