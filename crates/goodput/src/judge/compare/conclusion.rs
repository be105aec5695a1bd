//! The one-line answer of a comparison: for each candidate against its baseline,
//! which is better, by how much (with the interval), and whether that is beyond
//! noise; or that no difference could be detected, and what would detect one.

use super::pairs::{Pair, Section};
use super::{Direction, Options, Row};
use crate::render::text::num;

pub use report::compare::pct;

/// The metrics a conclusion names first, most telling first.
const PREFERENCE: [&str; 7] = [
    "goodput req/s",
    "median TPOT ms",
    "median TTFT ms",
    "output tok/s",
    "p99 TTFT ms",
    "median ITL ms",
    "SLO attainment",
];

fn metric_words(m: &str) -> &str {
    m.trim_end_matches(" ms")
}

/// The conclusion over every section's pairs.
pub fn conclusion(sections: &[Section], rows: &[Row], opts: &Options) -> String {
    let mut out = Vec::new();
    for s in sections {
        for pair in &s.pairs {
            let mine: Vec<&Row> = rows[s.range.clone()]
                .iter()
                .filter(|r| r.engine == pair.candidate && r.baseline == pair.baseline)
                .collect();
            out.push(pair_sentence(pair, &mine, opts));
        }
    }
    if out.is_empty() {
        return "Nothing compared.".into();
    }
    out.join(" ")
}

fn pair_sentence(pair: &Pair, rows: &[&Row], opts: &Options) -> String {
    let (b, c) = (&pair.baseline, &pair.candidate);
    if rows.is_empty() {
        return format!("{c} and {b}: no load level in common.");
    }
    let better = rows
        .iter()
        .filter(|r| r.direction == Direction::Better)
        .count();
    let worse = rows
        .iter()
        .filter(|r| r.direction == Direction::Worse)
        .count();
    let capacity = capacity_words(pair);
    let head = match (better, worse) {
        (0, 0) => return nothing_detected(pair, rows, opts, capacity),
        (_, 0) => format!("{c} is better than {b}"),
        (0, _) => format!("{b} is better than {c}"),
        _ => format!("Mixed: {c} is better than {b} in {better} rows and worse in {worse}"),
    };
    let wanted = if worse == 0 {
        Direction::Better
    } else if better == 0 {
        Direction::Worse
    } else {
        Direction::Better
    };
    let detail = headline(rows, wanted, c);
    let mut s = head;
    if let Some(cap) = capacity {
        s.push_str(&format!(": {cap}"));
        s.push_str(&detail.map_or(String::new(), |d| format!("; {d}")));
    } else if let Some(d) = detail {
        s.push_str(&format!(": {d}"));
    }
    s + "."
}

/// The most telling significant rows in `dir`: one metric at every load level, or
/// its largest change.
fn headline(rows: &[&Row], dir: Direction, cand: &str) -> Option<String> {
    let metric = PREFERENCE
        .iter()
        .find(|m| rows.iter().any(|r| r.metric == **m && r.direction == dir))?;
    let of: Vec<&&Row> = rows.iter().filter(|r| r.metric == *metric).collect();
    let hits: Vec<&&Row> = of.iter().copied().filter(|r| r.direction == dir).collect();
    let updown = |v: f64| if v > 0.0 { "higher" } else { "lower" };
    let whose = format!("{cand}'s {}", metric_words(metric));
    if hits.len() == of.len() && hits.len() > 1 {
        let sizes: Vec<f64> = hits.iter().filter_map(|r| r.change).collect();
        let lo = sizes.iter().map(|v| v.abs()).fold(f64::INFINITY, f64::min);
        let hi = sizes.iter().map(|v| v.abs()).fold(0.0, f64::max);
        let range = if pct(lo) == pct(hi) {
            pct(lo)
        } else {
            format!("{}–{}", pct(lo).trim_end_matches('%'), pct(hi))
        };
        return Some(format!(
            "{whose} is {range} {} at every load level",
            updown(sizes[0])
        ));
    }
    let best = hits.iter().max_by(|a, b| {
        a.change
            .unwrap_or(0.0)
            .abs()
            .total_cmp(&b.change.unwrap_or(0.0).abs())
    })?;
    let ch = best.change?;
    let ci = best.ci.map_or(String::new(), |[lo, hi]| {
        let (a, b) = (lo.abs().min(hi.abs()), lo.abs().max(hi.abs()));
        format!(" ({}–{})", pct(a).trim_end_matches('%'), pct(b))
    });
    Some(format!(
        "at x={} {whose} is {}{ci} {}",
        num(best.x),
        pct(ch),
        updown(ch)
    ))
}

/// `B serves 2.0x (1.6–2.4x) the load of A under the SLO`, when both searched.
fn capacity_words(pair: &Pair) -> Option<String> {
    let (bc, cc) = (
        pair.baseline_capacity.as_ref()?,
        pair.candidate_capacity.as_ref()?,
    );
    let (bx, cx) = (bc.max_load?, cc.max_load?);
    if bx <= 0.0 || cx <= 0.0 || bx == cx {
        return None;
    }
    let (win, lose, wc, lc) = if cx > bx {
        (&pair.candidate, &pair.baseline, cc, bc)
    } else {
        (&pair.baseline, &pair.candidate, bc, cc)
    };
    let ratio = wc.max_load? / lc.max_load?;
    let range = match (wc.interval, lc.interval) {
        (Some(w), Some(l)) if l.high > 0.0 && l.low > 0.0 => {
            format!(" ({}–{}x)", num(w.low / l.high), num(w.high / l.low))
        }
        _ => String::new(),
    };
    Some(format!(
        "{win} serves {}x{range} the load of {lose} under the SLO",
        num(ratio)
    ))
}

fn nothing_detected(
    pair: &Pair,
    rows: &[&Row],
    opts: &Options,
    capacity: Option<String>,
) -> String {
    let tested = rows.iter().filter(|r| r.p.is_some()).count();
    if tested == 0 {
        let why = rows
            .iter()
            .find_map(|r| r.not_testable.as_deref())
            .unwrap_or("no row had a value on both sides");
        return format!(
            "Nothing could be compared between {} and {} (0 of {} rows testable: {why}).",
            pair.candidate,
            pair.baseline,
            rows.len()
        );
    }
    let same = rows
        .iter()
        .filter(|r| r.direction == Direction::Same)
        .count();
    let mut s = format!(
        "No detectable difference between {} and {} ({tested} of {} rows tested; Holm-corrected 95%, threshold {})",
        pair.candidate,
        pair.baseline,
        rows.len(),
        pct(opts.min_effect)
    );
    let need = rows
        .iter()
        .filter_map(|r| r.trials_needed.map(|n| (n, r)))
        .min_by_key(|(n, _)| *n);
    if let Some((n, r)) = need {
        s.push_str(&format!(
            "; about {n} trials a side would detect a {} change in {} at x={}",
            pct(opts.min_effect),
            metric_words(r.metric),
            num(r.x)
        ));
    }
    if same > 0 {
        s.push_str(&format!(
            "; {same} shown the same within ±{}",
            pct(opts.min_effect)
        ));
    }
    if let Some(cap) = capacity {
        s.push_str(&format!(
            "; the searches differ ({cap}), by less than the rows can tell"
        ));
    }
    s + "."
}
