//! The verdict without a search: the measured load levels that meet the SLO, the
//! best engine among them, and why the others missed.

use super::*;

/// The verdict without a capacity search: which measured loads each engine meets
/// the SLO at, under a sentence on the largest load met.
pub(super) fn measured_levels(report: &Report) -> Vec<String> {
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
    /// What would decide each undecided load (`x=4: 20 of 20 good; ...`).
    to_decide: Vec<String>,
}

impl Levels {
    fn of(report: &Report, points: &[Point]) -> Levels {
        let mut l = Levels {
            yes: Vec::new(),
            no: Vec::new(),
            undecided: Vec::new(),
            unknown: Vec::new(),
            to_decide: Vec::new(),
        };
        for p in points {
            match point_judgement(report, p) {
                Some(Judgement::Meets) => l.yes.push(p.x),
                Some(Judgement::Fails) => l.no.push(p.x),
                Some(Judgement::Undecided) => {
                    l.undecided.push(p.x);
                    l.to_decide.extend(
                        crate::point::undecided_words(report, p)
                            .map(|w| format!("at x={}, {w}", num(p.x))),
                    );
                }
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
            let decide = if self.to_decide.is_empty() {
                String::new()
            } else {
                format!(": {}", self.to_decide.join("; "))
            };
            s.push_str(&format!(
                "; undecided at x={} (the attainment's interval straddles the target{decide})",
                xs(&self.undecided)
            ));
        }
        if self.judged() && !self.unknown.is_empty() {
            s.push_str(&format!(" (unknown at x={})", xs(&self.unknown)));
        }
        s + "."
    }
}

/// `At the measured loads, A serves SLO up to X ...`: the engines whose largest
/// passing load (`passing`) is the best, `best_x`.
pub(super) fn best_measured(report: &Report, passing: &[(&str, f64)], best_x: f64) -> String {
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
            crate::rank::tie_break(report, &tied, best_x, and_list)
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
pub(super) fn nothing_meets(report: &Report) -> String {
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
pub(super) fn why_missed(report: &Report) -> String {
    let slo = &report.slo;
    let mut parts = Vec::new();
    for (metric, b) in slo.bounds.iter() {
        let med = metric.def().median;
        let ratios: Vec<f64> = report
            .load
            .values()
            .flat_map(|e| e.points.iter())
            .filter_map(|p| med(p).and_then(|s| s.median))
            .map(|v| v / b)
            .collect();
        let over = ratios.iter().filter(|r| **r > 1.0).count();
        if over == 0 {
            continue;
        }
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(0.0, f64::max);
        parts.push(format!(
            "the median {} is over its {} ms bound at {over} of {} points ({}–{}x)",
            metric.label(),
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
