//! The verdict: the answer to "which configuration serves my SLO, and up to what
//! load?" in a few plain sentences, from what the report measured. Printed at the
//! top of `show` and of the HTML page, and at the end of `run` and `search`.
//!
//! With a capacity search (`capacity` in the report) it names each engine's largest
//! load meeting the SLO and the best engine; without one it speaks of the measured
//! load levels only. It never claims more than the warnings allow: throttling,
//! missing trials, failed engines and noisy probes are said beside the answer.

use report::{FailureKind, Judgement, Limit, LoadMode, Point, Report};

use report::slo::point_judgement;

use super::point::{point_meets, slo_bounds_text};
use super::text::num;
use super::warnings::{warnings, WarningKind};

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

/// `Extrapolated (trust less): e at x=8, 12; ...` for a predicted report.
fn extrapolated(report: &Report) -> Option<String> {
    let parts: Vec<String> = report
        .load
        .iter()
        .filter_map(|(engine, r)| {
            let xs: Vec<f64> = r
                .points
                .iter()
                .filter(|p| p.extrapolated)
                .map(|p| p.x)
                .collect();
            (!xs.is_empty()).then(|| format!("{engine} at x={}", self::xs(&xs)))
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "EXTRAPOLATED, trust less: {} (beyond what the fit measured or could identify; the intervals say how far).",
            parts.join("; ")
        )
    })
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
                    "up to {} waited in the engine's queue ({}% of samples): TTFT there is queueing",
                    if max == 1.0 {
                        "1 request".to_string()
                    } else {
                        format!("{} requests", num(max))
                    },
                    num((share * 100.0).round())
                ));
            }
        }
        if let Some(n) = s.counts.preemptions.filter(|n| *n > 0.0) {
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

/// The verdict of a capacity search: the best engine and its largest load meeting
/// the SLO, how far ahead it is, and the notes that qualify an answer.
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
    let plus = match cap.limited_by {
        Limit::Max => " (the search's max; it may serve more)",
        Limit::Ttft
        | Limit::Tpot
        | Limit::E2el
        | Limit::Ttfat
        | Limit::NoAnswer
        | Limit::Errors
        | Limit::Slo
        | Limit::MaxProbes
        | Limit::Engine
        | Limit::Unknown(_) => "",
    };
    let mut s = format!(
        "{best} serves {slo} up to {}{plus}{}",
        load_words(report, best_x),
        cap.interval.map_or(String::new(), |i| format!(
            " (the crossing of the target lies at {}, 95% interval {}–{})",
            num(i.estimate),
            num(i.low),
            num(i.high)
        ))
    );
    if !others.is_empty() {
        s.push_str(&format!(" ({})", others.join("; ")));
    }
    s.push('.');
    out.push(s);
    if report.capacity.len() > 1 {
        out.extend(lead(report, &found));
    }
    for (e, c) in &report.capacity {
        let weak = match c.limited_by {
            Limit::MaxProbes | Limit::Engine => true,
            Limit::Ttft
            | Limit::Tpot
            | Limit::E2el
            | Limit::Ttfat
            | Limit::NoAnswer
            | Limit::Errors
            | Limit::Slo
            | Limit::Max
            | Limit::Unknown(_) => false,
        };
        if c.noisy || weak {
            out.push(format!("{e}: {}.", c.note));
        }
    }
    out
}

/// How far the best engine is ahead of the next (`found`: engines and their
/// capacities, largest first), or who ties with it.
fn lead(report: &Report, found: &[(&str, f64)]) -> Option<String> {
    let &(best, best_x) = found.first()?;
    match found.get(1) {
        Some(&(_, next)) if next > 0.0 && best_x > next => Some(format!(
            "Best: {best}, {}x the load of the next.",
            num(best_x / next)
        )),
        Some(&(_, nx)) if nx == best_x => {
            let tied: Vec<&str> = found
                .iter()
                .filter(|f| f.1 == best_x)
                .map(|f| f.0)
                .collect();
            Some(super::rank::tie_break(report, &tied, best_x, and_list))
        }
        None => Some(format!("Best: {best}, the only engine that meets the SLO.")),
        _ => None,
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(names: &[&str]) -> String {
    match names {
        [rest @ .., last] if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// The verdict without a capacity search: which measured loads each engine meets
/// the SLO at, under a sentence on the largest load met.
fn measured_levels(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    // Each engine's largest measured load that meets the SLO.
    let mut passing: Vec<(&str, f64)> = Vec::new();
    let (mut any_known, mut any_undecided) = (false, false);
    for (engine, result) in &report.load {
        if result.points.is_empty() {
            continue;
        }
        let levels = Levels::of(report, &result.points);
        any_known |= levels.judged();
        any_undecided |= !levels.undecided.is_empty();
        out.push(levels.sentence(engine));
        if let Some(&x) = levels.yes.iter().max_by(|a, b| a.total_cmp(b)) {
            passing.push((engine, x));
        }
    }
    let best_x = passing.iter().map(|p| p.1).max_by(f64::total_cmp);
    let head = match best_x {
        Some(x) => best_measured(report, &passing, x),
        None if any_known => {
            // Nothing met the SLO anywhere: one sentence says it for every engine
            // (and the engines' own lines stay when some load is undecided).
            if !any_undecided {
                out.clear();
                nothing_meets(report)
            } else {
                format!(
                    "No engine is shown to meet the SLO ({}) at any measured load: where the \
                     answer is undecided, too few requests were measured to tell either way \
                     (more trials or requests per trial would decide it).",
                    slo_words(report)
                )
            }
        }
        None => "The report does not say whether any request met the SLO.".to_string(),
    };
    out.insert(0, head);
    out
}

/// One engine's measured loads, by whether they meet the SLO.
struct Levels {
    yes: Vec<f64>,
    no: Vec<f64>,
    undecided: Vec<f64>,
    unknown: Vec<f64>,
}

impl Levels {
    fn of(report: &Report, points: &[Point]) -> Levels {
        let mut l = Levels {
            yes: Vec::new(),
            no: Vec::new(),
            undecided: Vec::new(),
            unknown: Vec::new(),
        };
        for p in points {
            match point_judgement(report, p) {
                Some(Judgement::Meets) => l.yes.push(p.x),
                Some(Judgement::Fails) => l.no.push(p.x),
                Some(Judgement::Undecided) => l.undecided.push(p.x),
                Some(Judgement::Unknown) | None => l.unknown.push(p.x),
            }
        }
        l
    }

    /// Some load is known to meet the SLO or not.
    fn judged(&self) -> bool {
        !(self.yes.is_empty() && self.no.is_empty() && self.undecided.is_empty())
    }

    /// `ENGINE meets the SLO at x=1, 2, not at x=4 (unknown at x=8).`
    fn sentence(&self, engine: &str) -> String {
        let (yes, no) = (xs(&self.yes), xs(&self.no));
        let mut s = match (self.yes.is_empty(), self.no.is_empty()) {
            (false, true) => format!("{engine} meets the SLO at every measured load (x={yes})"),
            (false, false) => format!("{engine} meets the SLO at x={yes}, not at x={no}"),
            (true, false) => format!("{engine} meets the SLO at no measured load (x={no})"),
            (true, true) if !self.undecided.is_empty() => {
                format!("{engine}: meets the SLO at no load level for sure")
            }
            (true, true) => format!("{engine}: not known whether it meets the SLO"),
        };
        if !self.undecided.is_empty() {
            s.push_str(&format!(
                "; undecided at x={} (the attainment's 95% interval straddles the target)",
                xs(&self.undecided)
            ));
        }
        if self.judged() && !self.unknown.is_empty() {
            s.push_str(&format!(" (unknown at x={})", xs(&self.unknown)));
        }
        s + "."
    }
}

/// Loads as `1, 2, 4`.
fn xs(loads: &[f64]) -> String {
    loads.iter().map(|x| num(*x)).collect::<Vec<_>>().join(", ")
}

/// `At the measured loads, A serves SLO up to X ...`: the engines whose largest
/// passing load (`passing`) is the best, `best_x`.
fn best_measured(report: &Report, passing: &[(&str, f64)], best_x: f64) -> String {
    let tied: Vec<&str> = passing
        .iter()
        .filter(|p| p.1 == best_x)
        .map(|p| p.0)
        .collect();
    let who = match tied.as_slice() {
        [one] => format!("{one} serves"),
        _ => format!("{} each serve", and_list(&tied)),
    };
    let tie = if tied.len() > 1 {
        format!(
            " {}",
            super::rank::tie_break(report, &tied, best_x, and_list)
        )
    } else {
        String::new()
    };
    let top = report
        .load
        .values()
        .flat_map(|e| e.points.iter().map(|p| p.x))
        .fold(0.0f64, f64::max);
    let where_ = if best_x >= top {
        "every measured level met it, so the largest load is above the highest one"
    } else {
        "the largest load is between measured levels"
    };
    format!(
        "At the measured loads, {who} {} up to {} (no capacity search: {where_}; `goodput search` finds it).{tie}",
        slo_words(report),
        load_words(report, best_x)
    )
}

/// `No engine meets the SLO at any measured load (x=...)`, with why.
fn nothing_meets(report: &Report) -> String {
    let mut levels: Vec<f64> = report
        .load
        .values()
        .flat_map(|e| e.points.iter().map(|p| p.x))
        .collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    format!(
        "No engine meets the SLO ({}) at any measured load (x={}){}.",
        slo_words(report),
        xs(&levels),
        why_missed(report)
    )
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
        ("TTFAT", slo.ttfat_ms, crate::point::median_ttfat),
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
    let kind_of = |name: &str| {
        report
            .load
            .get(name)
            .and_then(|r| r.error.as_ref())
            .map(|e| &e.kind)
    };
    // An engine the run never reached did not fail: say what happened to each.
    let mut by_words: Vec<(&str, Vec<&str>)> = Vec::new();
    for name in failed.iter().copied() {
        let words = match kind_of(name) {
            Some(FailureKind::NotRun) => "did not run (the run ended before them)",
            Some(FailureKind::Interrupted) => "were interrupted while starting",
            Some(
                FailureKind::Launch
                | FailureKind::Unreachable
                | FailureKind::ReadyTimeout
                | FailureKind::Exited
                | FailureKind::DiedDuringTrial
                | FailureKind::Stop
                | FailureKind::Workload
                | FailureKind::Unknown(_),
            )
            | None => "failed",
        };
        match by_words.iter_mut().find(|(w, _)| *w == words) {
            Some((_, names)) => names.push(name),
            None => by_words.push((words, vec![name])),
        }
    }
    for (words, names) in by_words {
        out.push(format!(
            "Not judged, or judged on partial results: {} {words} (see the warnings).",
            names.join(", ")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noisy_capacity_says_its_note_and_a_newer_limit_reads_as_no_max() {
        let text = include_str!("../../goodput/tests/render_fixtures/additive.json");
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
        r.capacity.insert(name.clone(), capacity(Limit::Max, false));
        let v = verdict(&r).join(" ");
        assert!(v.contains("the search's max"), "{v}");
        assert!(!v.contains("the bracket is noisy"), "{v}");
    }
}
