//! `compare` shown: the conclusion, then per section a table of rows (each metric
//! at each load level: baseline, candidate, the change with its 95% interval, and
//! what it says), the notes, and how the rows were decided. The decisions are made
//! by goodput's `compare`, which hands over a [`Comparison`]; this only shows it.
//! `--format json` prints the [`Comparison`] for CI pipelines to gate on ([`json`]).

use report::compare::{pct, Comparison, Direction, Method, Row};

use super::text::{align, num, x_label, Cell, Line, Style};

/// The comparison as JSON (`{"conclusion", "rows": [...], ...}`), for CI
/// pipelines to gate on.
pub fn json(c: &Comparison) -> String {
    let mut s =
        serde_json::to_string_pretty(c).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

fn header() -> Line {
    Line::Cells(
        [
            "engine",
            "x",
            "metric",
            "baseline",
            "candidate",
            "change (95% CI)",
            "verdict",
        ]
        .iter()
        .map(|h| Cell::styled(*h, Style::Bold))
        .collect(),
    )
}

fn value(v: Option<f64>) -> String {
    v.map_or("-".into(), num)
}

/// `+3.1% (+1.2 to +5.0)`, or `-`.
pub fn change_text(r: &Row) -> String {
    let signed = |v: f64| {
        format!(
            "{}{}",
            if v > 0.0 {
                "+"
            } else if v < 0.0 {
                "-"
            } else {
                ""
            },
            pct(v)
        )
    };
    match (r.change, r.ci) {
        (Some(c), Some([lo, hi])) => format!("{} ({} to {})", signed(c), signed(lo), signed(hi)),
        (Some(c), None) => signed(c),
        _ => "-".into(),
    }
}

/// What a row says, and its style.
/// `min_effect` is the comparison's practical threshold.
pub fn verdict_text(r: &Row, min_effect: f64) -> (String, Style) {
    match r.direction {
        Direction::Better => ("better".into(), Style::Good),
        Direction::Worse => ("worse".into(), Style::Bad),
        Direction::Same => (format!("same (within ±{})", pct(min_effect)), Style::Dim),
        Direction::NoDetectableDifference => {
            let apart = r.ci.is_some_and(|[lo, hi]| lo > 0.0 || hi < 0.0);
            let words = match r.trials_needed {
                _ if apart && r.change.is_some_and(|c| c.abs() < min_effect) => {
                    format!("below the {} threshold", pct(min_effect))
                }
                Some(n) if apart => format!("not beyond noise over the table (~{n} trials)"),
                Some(n) if n > 1000 => "no detectable difference (>1000 trials)".into(),
                Some(n) => format!("no detectable difference (~{n} trials)"),
                None => "no detectable difference".into(),
            };
            (words, Style::Dim)
        }
        Direction::Unknown if r.baseline_value.is_some() && r.candidate_value.is_some() => {
            ("not testable".into(), Style::Dim)
        }
        Direction::Unknown => ("unknown".into(), Style::Dim),
    }
}

fn cells(r: &Row, first: bool, first_of_x: bool, min_effect: f64) -> Line {
    let (verdict, style) = verdict_text(r, min_effect);
    let ch_style = if r.significant { style } else { Style::Plain };
    Line::Cells(vec![
        Cell::plain(if first {
            r.engine.clone()
        } else {
            String::new()
        }),
        Cell::plain(if first_of_x {
            x_label(r.x)
        } else {
            String::new()
        }),
        Cell::plain(r.metric),
        Cell::plain(value(r.baseline_value)),
        Cell::plain(value(r.candidate_value)),
        Cell::styled(change_text(r), ch_style),
        Cell::styled(verdict, style),
    ])
}

/// The comparison as text.
pub fn text(c: &Comparison, color: bool) -> String {
    let mut out = format!(
        "{} {}\n",
        Style::Bold.paint("Conclusion:", color),
        c.conclusion
    );
    for s in &c.sections {
        out.push('\n');
        out.push_str(&Style::Bold.paint(&s.title, color));
        out.push('\n');
        if let Some(why) = &s.refused {
            out.push_str(why);
            out.push('\n');
            continue;
        }
        let rows = &c.rows[s.range.clone()];
        if rows.is_empty() {
            out.push_str("No load level in common.\n");
        } else {
            out.push_str(&table(rows, c.min_effect, color));
            out.push_str(&method_line(rows, c));
        }
        for n in &s.notes {
            out.push_str(&format!("  {n}\n"));
        }
    }
    out
}

fn table(rows: &[Row], min_effect: f64, color: bool) -> String {
    let mut lines = vec![header()];
    let mut last: Option<(&str, f64)> = None;
    let mut last_engine = "";
    for r in rows {
        let first = r.engine != last_engine;
        if first && last.is_some() {
            lines.push(Line::Note(Cell::plain("")));
        }
        let first_of_x = last != Some((r.engine.as_str(), r.x));
        lines.push(cells(r, first, first_of_x, min_effect));
        last = Some((r.engine.as_str(), r.x));
        last_engine = &r.engine;
    }
    align(&lines, &[2, 6], color)
}

/// How the rows were decided, in a sentence; and why rows were not testable.
fn method_line(rows: &[Row], c: &Comparison) -> String {
    let count = |d: Direction| rows.iter().filter(|r| r.direction == d).count();
    let (better, worse, same) = (
        count(Direction::Better),
        count(Direction::Worse),
        count(Direction::Same),
    );
    let trials = rows.iter().any(|r| r.method == Method::Trials);
    let share = rows.iter().any(|r| r.method == Method::Newcombe);
    let how = match (trials, share) {
        (true, true) => "intervals: Welch t over trials (trial-to-trial variance pooled over each side's load levels on the same side of the SLO), Newcombe for attainment",
        (true, false) => "intervals: Welch t over trials (trial-to-trial variance pooled over each side's load levels on the same side of the SLO)",
        (false, true) => "intervals: Newcombe for attainment",
        (false, false) => "nothing testable",
    };
    let mut out = format!(
        "{better} better, {worse} worse, {same} same of {} rows: better/worse when the 95% interval excludes 0, \
         the Holm-corrected p-value over all {} rows is ≤ 0.05, and the change is at least {} (--min-effect); \
         same when the two one-sided tests put it within ±{} (Holm too); {how}. \
         Values: the mean over trials (`show` prints the median over trials: the same for two trials).\n",
        rows.len(),
        c.rows.len(),
        pct(c.min_effect),
        pct(c.min_effect)
    );
    let mut whys: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.not_testable.as_deref())
        .collect();
    whys.dedup();
    whys.sort_unstable();
    whys.dedup();
    for why in whys {
        let n = rows
            .iter()
            .filter(|r| r.not_testable.as_deref() == Some(why))
            .count();
        out.push_str(&format!("  not testable ({n} rows): {why}\n"));
    }
    out
}
