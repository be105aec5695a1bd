//! The verdict from a capacity search: each engine's largest load meeting the SLO,
//! and the best engine.

use super::*;

/// The verdict of a capacity search: the best engine and its largest load meeting
/// the SLO, how far ahead it is, and the notes that qualify an answer.
pub(super) fn from_capacity(report: &Report) -> Vec<String> {
    let slo = slo_words(report);
    let mut found: Vec<(&str, f64)> = report
        .capacity
        .iter()
        .filter_map(|(e, c)| c.max_load.map(|m| (e.as_str(), m)))
        .collect();
    // Ranked by the fitted capacity (every probe, `capacity.interval.estimate`),
    // else the largest passing load.
    let key = |e: &str, m: f64| {
        report
            .capacity
            .get(e)
            .and_then(|c| c.interval)
            .map_or(m, |i| i.estimate)
    };
    found.sort_by(|a, b| key(b.0, b.1).total_cmp(&key(a.0, a.1)));
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
        Limit::Other(LimitWord::Max) => " (the search's max; it may serve more)",
        Limit::Metric(_)
        | Limit::Other(
            LimitWord::NoAnswer
            | LimitWord::Errors
            | LimitWord::Slo
            | LimitWord::ToolCalls
            | LimitWord::MaxProbes
            | LimitWord::Engine
            | LimitWord::Unknown(_),
        ) => "",
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
            Limit::Other(LimitWord::MaxProbes | LimitWord::Engine) => true,
            Limit::Metric(_)
            | Limit::Other(
                LimitWord::NoAnswer
                | LimitWord::Errors
                | LimitWord::Slo
                | LimitWord::ToolCalls
                | LimitWord::Max
                | LimitWord::Unknown(_),
            ) => false,
        };
        if c.noisy || weak {
            out.push(format!("{e}: {}.", c.note));
        }
    }
    out
}

/// How far the best engine is ahead of the next (`found`: engines and their
/// capacities, largest first), or who ties with it.
pub(super) fn lead(report: &Report, found: &[(&str, f64)]) -> Option<String> {
    let &(best, best_x) = found.first()?;
    let interval = |e: &str| report.capacity.get(e).and_then(|c| c.interval);
    match found.get(1) {
        Some(&(next_name, next)) if next > 0.0 && best_x > next => {
            let ratio = num(best_x / next);
            Some(match (interval(best), interval(next_name)) {
                (Some(b), Some(n)) if b.low <= n.high => format!(
                    "{best} reached a higher load than {next_name} ({}x), but their capacities' 95% intervals overlap ({}–{} against {}–{}): the search cannot rank them; more trials per probe, or probes between {} and {}, would.",
                    ratio,
                    num(b.low),
                    num(b.high),
                    num(n.low),
                    num(n.high),
                    num(n.low.min(b.low)),
                    num(b.high.max(n.high))
                ),
                (Some(b), Some(n)) => format!(
                    "Best: {best}, {ratio}x the load of the next ({next_name}); their capacities' 95% intervals do not overlap ({}–{} against {}–{}).",
                    num(b.low),
                    num(b.high),
                    num(n.low),
                    num(n.high)
                ),
                _ => format!("Best: {best}, {ratio}x the load of the next."),
            })
        }
        Some(&(_, nx)) if nx == best_x => {
            let tied: Vec<&str> = found
                .iter()
                .filter(|f| f.1 == best_x)
                .map(|f| f.0)
                .collect();
            Some(crate::rank::tie_break(report, &tied, best_x, and_list))
        }
        None => Some(format!("Best: {best}, the only engine that meets the SLO.")),
        _ => None,
    }
}
