//! The verdict's ranking of engines whose capacities tie: by goodput at the shared
//! load, judged by `compare`'s own decision on the same report
//! ([`report::compare::within`]: each engine against the report's first, Welch's t
//! over trials with the variance pooled over load levels, Holm over the whole
//! table, at least [`report::compare::DEFAULT_MIN_EFFECT`] apart), so the verdict
//! and `compare` cannot disagree, and quoting the interval `compare` prints.
//!
//! Every engine is ranked, not all or nothing: the engines are ordered by their
//! mean goodput over trials and each is set apart from the next only when the
//! test says so. Two neighbours of which neither is the report's first engine are
//! not in `compare`'s table; they get the same test directly, Holm-corrected over
//! those direct tests, and the sentence says so. Neighbours that cannot be told
//! apart are said to tie, with how much they could differ and the trials that
//! would separate a difference of the size seen.

use report::compare::{pct, sample, within, Direction, Row, Rule, GOODPUT_METRIC, METRICS};
use report::stats::trials_needed;
use report::Report;

use super::text::num;

/// Mean goodput over trials of `engine` at `x`, when measured.
fn goodput_at(report: &Report, engine: &str, x: f64) -> Option<f64> {
    let m = METRICS.iter().find(|m| m.name == GOODPUT_METRIC)?;
    let p = report.load.get(engine)?.points.iter().find(|p| p.x == x)?;
    sample(m, p).estimate()
}

/// The goodput row of `a` against `b` (either way round) at `x` in `rows`.
fn row_of<'a>(rows: &'a [Row], a: &str, b: &str, x: f64) -> Option<&'a Row> {
    rows.iter().find(|r| {
        r.metric == GOODPUT_METRIC
            && r.x == x
            && ((r.engine == a && r.baseline == b) || (r.engine == b && r.baseline == a))
    })
}

/// `vllm-ngram 52% (47–57%) more than vllm-fast-b`, from the row's own side.
fn difference(r: &Row) -> String {
    let (Some(ch), Some([lo, hi])) = (r.change, r.ci) else {
        return format!("{} against {}: not testable", r.engine, r.baseline);
    };
    let way = if ch >= 0.0 { "more" } else { "less" };
    let signed = |v: f64| format!("{}{}", if v < 0.0 { "−" } else { "+" }, pct(v));
    let range = if lo * hi > 0.0 {
        let (a, b) = (lo.abs().min(hi.abs()), lo.abs().max(hi.abs()));
        format!("{}–{}", pct(a).trim_end_matches('%'), pct(b))
    } else {
        format!("{} to {}", signed(lo), signed(hi))
    };
    format!(
        "{} has {} ({range}) {way} goodput than {}",
        r.engine,
        pct(ch),
        r.baseline
    )
}

/// What would separate two engines that the row cannot: how far apart they
/// could be, and the trials a side for a difference of the size seen.
fn unseparated(r: &Row, rule: &Rule, tests: usize) -> String {
    let (Some(ch), Some([lo, hi])) = (r.change, r.ci) else {
        let why = r.not_testable.as_deref().unwrap_or("nothing to test");
        return format!("{} and {} cannot be ranked ({why})", r.engine, r.baseline);
    };
    let signed = |v: f64| format!("{}{}", if v < 0.0 { "−" } else { "+" }, pct(v));
    let need = r.se.and_then(|se| {
        trials_needed(
            se,
            r.df.unwrap_or(f64::INFINITY),
            r.trials,
            ch.abs().max(rule.min_effect),
            rule.alpha / tests.max(1) as f64,
        )
    });
    let more = match need {
        Some(n) => format!(
            "about {n} trials each would separate a difference of {}",
            pct(ch.abs().max(rule.min_effect))
        ),
        None => "more trials would tell".to_string(),
    };
    let apart = if lo > 0.0 || hi < 0.0 {
        ", apart on its own interval but not once corrected over compare's table (Holm)"
    } else {
        ""
    };
    format!(
        "{} and {} cannot be told apart: {}'s goodput is {} ({} to {}) against {}'s{apart}; {more}",
        r.engine,
        r.baseline,
        r.engine,
        signed(ch),
        signed(lo),
        signed(hi),
        r.baseline
    )
}

/// The sentence on engines `tied` at load `x`: their order by goodput at that
/// load, each set apart from the next only beyond noise, with the interval.
pub fn tie_break(
    report: &Report,
    tied: &[&str],
    x: f64,
    and_list: fn(&[&str]) -> String,
) -> String {
    let head = format!("{} reach the same load, {}", and_list(tied), num(x));
    let mut at: Vec<(&str, f64)> = tied
        .iter()
        .filter_map(|e| goodput_at(report, e, x).map(|v| (*e, v)))
        .collect();
    if at.len() < 2 {
        return format!(
            "{head}; the report holds no goodput of theirs at that load, so they cannot be ranked."
        );
    }
    at.sort_by(|a, b| b.1.total_cmp(&a.1));
    let rule = Rule::default();
    let table = within(report, &rule);
    let first = report.load.keys().next().map(String::as_str).unwrap_or("");
    // Neighbours outside compare's table: the same test, decided among themselves.
    let mut direct: Vec<Row> = Vec::new();
    for w in at.windows(2) {
        let (hi, lo) = (w[0].0, w[1].0);
        if hi != first && lo != first {
            if let (Some(h), Some(l)) = (report.load.get(hi), report.load.get(lo)) {
                direct.extend(
                    report::compare::pair_rows((lo, l), (hi, h), true, &rule)
                        .into_iter()
                        .filter(|r| r.metric == GOODPUT_METRIC && r.x == x),
                );
            }
        }
    }
    report::compare::decide(&mut direct, &rule);
    let tests = table.iter().filter(|r| r.p.is_some()).count();
    let mut parts = Vec::new();
    let mut any_direct = false;
    for (i, w) in at.windows(2).enumerate() {
        let (hi, lo) = (w[0].0, w[1].0);
        let (row, from_direct) = match row_of(&table, hi, lo, x) {
            Some(r) => (Some(r), false),
            None => (row_of(&direct, hi, lo, x), true),
        };
        let Some(r) = row else {
            parts.push(format!(
                "{hi} and {lo} cannot be ranked (no goodput test at that load)"
            ));
            continue;
        };
        any_direct |= from_direct;
        let separated = matches!(r.direction, Direction::Better | Direction::Worse);
        let text = if separated {
            let lead = if i == 0 {
                format!("{hi} leads: ")
            } else {
                format!("then {hi}: ")
            };
            format!("{lead}{}", difference(r))
        } else {
            unseparated(r, &rule, if from_direct { direct.len() } else { tests })
        };
        parts.push(text);
    }
    let values: Vec<String> = at.iter().map(|(e, v)| format!("{e} {}", num(*v))).collect();
    let how = if any_direct {
        "compare's test: Welch t over trials, Holm over compare's table; neighbours that are not in that table, which sets each engine against the first, tested directly"
    } else {
        "compare's test: Welch t over trials, Holm over compare's table"
    };
    format!(
        "{head}; at that load (goodput req/s, mean over trials: {}) {} ({how}).",
        values.join(", "),
        parts.join("; ")
    )
}
