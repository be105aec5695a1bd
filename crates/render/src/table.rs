//! The writers of the row model: aligned text, Markdown, CSV and JSON. Text and
//! Markdown share [`display_cells`]; CSV and JSON share [`Row::fields`].

use report::{Judgement, LoadMode, Point, Report, Stat};
use serde_json::Value;

use super::markdown::md_escape;
use super::point::slo_bounds_text;
use super::rows::{field_names, trials_with_results, within, Row};
use super::text::{
    align, count, fixed, num, stat_full, stat_median, stat_range, Cell, Line, Style,
};
use report::slo::point_judgement;

/// Column titles of the text, Markdown and HTML tables.
pub const COLUMNS: [&str; 17] = [
    "engine",
    "x",
    "trials",
    "requests",
    "TTFT med",
    "TTFT p99",
    "TPOT med",
    "TPOT p99",
    "ITL med",
    "ITL p99",
    "out tok/s",
    "req/s",
    "goodput req/s",
    "KV pool",
    "SM MHz",
    "max °C",
    "thermal",
];

/// One displayed cell: the value (the median over trials for statistics), the
/// min–max range over trials when there are at least two, and a style.
#[derive(Debug, Clone, Default)]
pub struct DisplayCell {
    /// Main text.
    pub main: String,
    /// `min–max` over trials, when known.
    pub range: Option<String>,
    /// Style of the main text.
    pub style: Style,
}

impl DisplayCell {
    fn text(main: impl Into<String>, style: Style) -> Self {
        DisplayCell {
            main: main.into(),
            range: None,
            style,
        }
    }

    fn stat(s: &Stat, style: Style) -> Self {
        DisplayCell {
            main: stat_median(s),
            range: stat_range(s),
            style,
        }
    }

    /// `main (range)` on one line.
    pub fn joined(&self) -> String {
        match &self.range {
            Some(r) => format!("{} ({r})", self.main),
            None => self.main.clone(),
        }
    }
}

fn slo_style(ok: Option<bool>) -> Style {
    match ok {
        Some(true) => Style::Good,
        Some(false) => Style::Bad,
        None => Style::Plain,
    }
}

/// The cells of a row, one per entry of [`COLUMNS`]; `None` for an engine without
/// points.
pub fn display_cells(report: &Report, row: &Row) -> Option<Vec<DisplayCell>> {
    let p: &Point = row.point?;
    let slo = &report.slo;
    let got = trials_with_results(p);
    let trials = match row.expected_trials {
        // Adaptive trials: how many ran, and why no more (a budget that left the
        // point undecided is worth a look).
        _ if p.trials_stopped.is_some() => {
            let why = p.trials_stopped.as_ref().map_or("", |w| w.as_str());
            let style = match p.trials_stopped {
                Some(report::TrialsStopped::Budget) => Style::Warn,
                _ => Style::Plain,
            };
            DisplayCell::text(format!("{got} ({why})"), style)
        }
        // A search's confirmation trials go past the planned count: not "3/2".
        Some(e) if got > e => DisplayCell::text(format!("{got} ({} extra)", got - e), Style::Plain),
        Some(e) => DisplayCell::text(
            format!("{got}/{e}"),
            if got < e { Style::Warn } else { Style::Plain },
        ),
        None => DisplayCell::text(got.to_string(), Style::Plain),
    };
    let requests = match row.failed() {
        Some(f) if f > 0 => {
            DisplayCell::text(format!("{} +{f} failed", row.completed()), Style::Warn)
        }
        _ => DisplayCell::text(row.completed().to_string(), Style::Plain),
    };
    let gp = &p.goodput_rps;
    let mut goodput = DisplayCell::stat(gp, judgement_style(point_judgement(report, p)));
    if let Some(good) = row.good() {
        goodput.main = match super::point::point_attainment(p) {
            Some(a) => format!("{} ({good} good, {}%)", goodput.main, num(a * 100.0)),
            None => format!("{} ({good} good)", goodput.main),
        };
    }
    let gpu = p.gpu.as_ref();
    let opt = |v: Option<String>| DisplayCell::text(v.unwrap_or_else(|| "-".into()), Style::Plain);
    let thermal = gpu.and_then(|g| g.thermal_share);
    let mut cells = vec![
        DisplayCell::text(row.engine, Style::Plain),
        DisplayCell::text(x_text(p), Style::Plain),
        trials,
        requests,
        DisplayCell::stat(
            &p.median_ttft_ms,
            slo_style(within(
                p.median_ttft_ms.median,
                slo.bound(report::SloMetric::Ttft),
            )),
        ),
        DisplayCell::stat(&p.p99_ttft_ms, Style::Plain),
        DisplayCell::stat(
            &p.median_tpot_ms,
            slo_style(within(
                p.median_tpot_ms.median,
                slo.bound(report::SloMetric::Tpot),
            )),
        ),
        DisplayCell::stat(&p.p99_tpot_ms, Style::Plain),
        DisplayCell::stat(&p.median_itl_ms, Style::Plain),
        DisplayCell::stat(&p.p99_itl_ms, Style::Plain),
        DisplayCell::stat(&p.output_throughput, Style::Plain),
        DisplayCell::stat(&p.request_throughput, Style::Plain),
        goodput,
        opt(row.result.kv_pool_tokens.map(|k| k.to_string())),
        opt(gpu.and_then(|g| g.median_sm_mhz.median).map(num)),
        opt(gpu.and_then(|g| g.max_temp_c).map(num)),
        DisplayCell::text(
            thermal
                .map(|t| format!("{}%", num(t * 100.0)))
                .unwrap_or_else(|| "-".into()),
            if thermal.is_some_and(|t| t > 0.05) {
                Style::Warn
            } else {
                Style::Plain
            },
        ),
    ];
    if p.embeddings.is_some() {
        // An embeddings answer is not streamed: TTFT through output tok/s do not
        // apply (its latency and inputs/s are in the embeddings table).
        for c in &mut cells[STREAMED_COLUMNS] {
            *c = DisplayCell::text("n/a", Style::Plain);
        }
    }
    Some(cells)
}

/// The columns of [`COLUMNS`] read off a stream (TTFT med to out tok/s).
const STREAMED_COLUMNS: std::ops::RangeInclusive<usize> = 4..=10;

/// `4`, or `4 (2.0 in flight)` when the report has the achieved concurrency (mean
/// requests in flight), so a load that was not reached does not pass for x.
fn x_text(p: &Point) -> String {
    match p.achieved_concurrency.as_ref().and_then(|s| s.median) {
        Some(c) => format!("{} ({} in flight)", num(p.x), fixed(c, 1)),
        None => num(p.x),
    }
}

/// `(label, value)` lines describing the run: profile, SLO, load mode, run status.
pub fn header_lines(report: &Report) -> Vec<(String, String)> {
    let slo = &report.slo;
    let mut slo_text = slo_bounds_text(slo);
    slo_text.push_str(" (a request is good when all hold)");
    let mut lines = vec![
        ("profile".to_string(), report.profile.clone()),
        ("SLO".to_string(), slo_text),
        ("load".to_string(), load_mode_text(report)),
    ];
    lines.extend(super::ran::ran_lines(report));
    if let Some(run) = &report.run {
        let status = serde_json::to_value(run.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let mut s = format!(
            "{status}, {} per point, {} per trial",
            count(run.planned_trials.into(), "trial"),
            count(run.requests_per_trial.into(), "request")
        );
        if run.warmup_requests > 0 {
            s.push_str(&format!(
                " after {}",
                count(run.warmup_requests.into(), "warm-up request")
            ));
        }
        if let Some(seed) = run.seed {
            s.push_str(&format!(", seed {seed}"));
        }
        if let Some(r) = &run.reason {
            s.push_str(&format!(" ({r})"));
        }
        lines.push(("run".to_string(), s));
        for n in &run.notices {
            lines.push(("notice".to_string(), n.text.clone()));
        }
    }
    lines
}

/// What `x` means in this report.
pub fn load_mode_text(report: &Report) -> String {
    let sessions = report
        .run
        .as_ref()
        .is_some_and(|r| r.workload_kind() == report::WorkloadKind::Conversation);
    match report.run.as_ref().map(|r| &r.load_mode) {
        Some(LoadMode::Concurrency) if sessions => {
            "concurrency (x = conversation sessions in progress, closed loop)".into()
        }
        Some(LoadMode::Rate) if sessions => {
            "rate (x = conversation sessions started per second, open loop)".into()
        }
        Some(LoadMode::Concurrency) => "concurrency (x = requests in flight, closed loop)".into(),
        Some(LoadMode::Rate) => "rate (x = requests per second, open loop)".into(),
        Some(other @ (LoadMode::Trace | LoadMode::Unknown(_))) => other.to_string(),
        None => "not recorded (reference format: x is closed-loop concurrency)".into(),
    }
}

/// The header of the text table.
pub fn header_text(report: &Report) -> String {
    let lines = header_lines(report);
    let w = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    lines
        .iter()
        .map(|(k, v)| format!("{k:<w$}  {v}\n"))
        .collect()
}

/// The header of the Markdown output.
pub fn header_markdown(report: &Report) -> String {
    let mut out = format!("## goodput report: {}\n\n", md_escape(&report.profile));
    for (k, v) in header_lines(report).iter().skip(1) {
        out.push_str(&format!("- **{k}**: {}\n", md_escape(v)));
    }
    out
}

/// Columns of the first text table (latency), as indexes into [`COLUMNS`].
const LATENCY_COLUMNS: [usize; 9] = [1, 2, 3, 4, 5, 6, 7, 8, 9];
/// What the colours say (the goodput cell shows the point's SLO judgement).
pub const JUDGEMENT_LEGEND: &str = "Goodput: green meets the SLO, red fails it, yellow undecided \
     (the 95% interval of the attainment straddles the target); latency medians: green within \
     their bound, red beyond it.";

/// The style of a point's SLO judgement: the one colour of `meets`, `fails`,
/// `undecided` in every renderer.
pub fn judgement_style(j: Option<Judgement>) -> Style {
    match j {
        Some(Judgement::Meets) => Style::Good,
        Some(Judgement::Fails) => Style::Bad,
        Some(Judgement::Undecided) => Style::Warn,
        Some(Judgement::Unknown) | None => Style::Plain,
    }
}

/// Columns of the second text table (throughput and GPU).
const THROUGHPUT_COLUMNS: [usize; 8] = [1, 10, 11, 12, 13, 14, 15, 16];

/// The text tables: latency, then throughput and GPU, each grouped by engine with
/// one line of medians per load level and, below it, the min–max over trials. Two
/// narrower tables instead of one that no terminal holds.
pub fn text_table(report: &Report, rows: &[Row], color: bool) -> String {
    let mut out = Style::Bold.paint(
        "Latency (ms): median over trials, min–max over trials below it",
        color,
    );
    out.push('\n');
    out.push_str(&text_part(report, rows, &LATENCY_COLUMNS, true, color));
    if rows.iter().all(|r| r.point.is_none()) {
        return out;
    }
    out.push('\n');
    out.push_str(&Style::Bold.paint("Throughput and GPU", color));
    out.push('\n');
    out.push_str(&text_part(report, rows, &THROUGHPUT_COLUMNS, false, color));
    // The legend names colours, so it is printed only where there are any.
    if color {
        out.push_str(&Style::Dim.paint(JUDGEMENT_LEGEND, color));
        out.push('\n');
    }
    out
}

fn text_part(report: &Report, rows: &[Row], cols: &[usize], notes: bool, color: bool) -> String {
    let mut lines = vec![Line::Cells(
        cols.iter()
            .map(|&c| Cell::styled(if c == 1 { "  x" } else { COLUMNS[c] }, Style::Bold))
            .collect(),
    )];
    let mut last_engine = "";
    for row in rows {
        if !notes && row.point.is_none() {
            continue;
        }
        if row.engine != last_engine {
            lines.push(Line::Note(Cell::styled(row.engine, Style::Bold)));
            last_engine = row.engine;
        }
        let Some(cells) = display_cells(report, row) else {
            if notes {
                lines.push(Line::Note(failure_note(row)));
            }
            continue;
        };
        let main = cols
            .iter()
            .map(|&c| {
                let d = &cells[c];
                let text = if c == 1 {
                    format!("  {}", d.main)
                } else {
                    d.main.clone()
                };
                Cell::styled(text, d.style)
            })
            .collect();
        lines.push(Line::Cells(main));
        if cols.iter().any(|&c| cells[c].range.is_some()) {
            let ranges = cols
                .iter()
                .map(|&c| Cell::styled(cells[c].range.clone().unwrap_or_default(), Style::Dim))
                .collect();
            lines.push(Line::Cells(ranges));
        }
        let last_of_engine = row.result.points.last().map(|p| p as *const Point)
            == row.point.map(|p| p as *const Point);
        if notes && last_of_engine && row.result.error.is_some() {
            lines.push(Line::Note(failure_note(row)));
        }
    }
    align(&lines, &[], color)
}

fn failure_note(row: &Row) -> Cell {
    let text = match row.engine_error() {
        Some(e) => format!("  engine failed: {e}"),
        None => "  no results".to_string(),
    };
    Cell::styled(text, Style::Bad)
}

/// The Markdown table, one row per engine x load level, `median (min–max)` cells.
pub fn markdown_table(report: &Report, rows: &[Row]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| match display_cells(report, row) {
            Some(cells) => cells.iter().map(|c| md_escape(&c.joined())).collect(),
            None => {
                let mut v = vec![String::new(); COLUMNS.len()];
                v[0] = md_escape(row.engine);
                v[1] = md_escape(&format!(
                    "failed: {}",
                    row.engine_error().unwrap_or_default()
                ));
                v
            }
        })
        .collect();
    let mut out = super::markdown::grid(&COLUMNS, 1, &cells);
    out.push_str("\nLatencies in ms: median over trials (min–max over trials in parentheses).\n");
    for row in rows.iter().filter(|r| r.point.is_some()) {
        let first = row.result.points.first().map(|p| p as *const Point)
            == row.point.map(|p| p as *const Point);
        if first {
            if let Some(e) = row.engine_error() {
                out.push_str(&format!(
                    "\n**{}** failed: {}\n",
                    md_escape(row.engine),
                    md_escape(&e)
                ));
            }
        }
    }
    out
}

fn csv_field(v: &Value) -> String {
    let s = match v {
        Value::Null => return String::new(),
        Value::String(s) => not_a_formula(s),
        other => other.to_string(),
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

/// A text cell that a spreadsheet would not run as a formula: one starting with
/// `=`, `+`, `-`, `@`, tab or carriage return gets a leading `'` (OWASP's advice
/// on CSV injection), unless it is a number (`-3.5`). Engine names and error
/// labels come from profiles and servers.
fn not_a_formula(cell: &str) -> String {
    let risky = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if risky && cell.parse::<f64>().is_err() {
        format!("'{cell}")
    } else {
        cell.to_string()
    }
}

/// CSV export: a header, then one line per engine x load level, full precision.
pub fn csv(rows: &[Row]) -> String {
    let mut out = field_names()
        .iter()
        .map(|k| csv_field(&Value::String(k.clone())))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for row in rows {
        let line: Vec<String> = row.fields().iter().map(|(_, v)| csv_field(v)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

/// JSON export: a flat array of row objects with the CSV's keys.
pub fn json(rows: &[Row]) -> String {
    let arr: Vec<Value> = rows
        .iter()
        .map(|r| Value::Object(r.fields().into_iter().collect()))
        .collect();
    let mut s = serde_json::to_string_pretty(&Value::Array(arr)).unwrap_or_else(|_| "[]".into());
    s.push('\n');
    s
}

/// `median (min–max)` of a statistic, for other renderers.
pub fn stat_text(s: &Stat) -> String {
    stat_full(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::rows;

    #[test]
    fn csv_cells_that_a_spreadsheet_would_run_are_neutralised() {
        assert_eq!(
            csv_field(&Value::from("=HYPERLINK(\"x\")")),
            "\"'=HYPERLINK(\"\"x\"\")\""
        );
        assert_eq!(csv_field(&Value::from("@SUM(A1)")), "'@SUM(A1)");
        assert_eq!(csv_field(&Value::from("+cmd")), "'+cmd");
        assert_eq!(csv_field(&Value::from("-3.5")), "-3.5");
        assert_eq!(csv_field(&Value::from(-3.5)), "-3.5");
        assert_eq!(csv_field(&Value::from("vllm")), "vllm");
    }

    #[test]
    fn adaptive_trials_show_why_they_stopped() {
        let text = include_str!("../../goodput/tests/render_fixtures/additive.json");
        let mut report = report::io::parse_report(text).expect("fixture parses");
        let engine = report.load.values_mut().next().expect("an engine");
        engine.points[0].trials_stopped = Some(report::TrialsStopped::Budget);
        engine.points[1].trials_stopped = Some(report::TrialsStopped::Decisive);
        let rows = rows(&report);
        let trials = |i: usize| {
            let cells = display_cells(&report, &rows[i]).expect("a point");
            let c = cells
                .into_iter()
                .find(|c| c.main.ends_with(')'))
                .expect("the trials cell says why it stopped");
            (c.main, matches!(c.style, Style::Warn))
        };
        let (budget, warned) = trials(0);
        assert!(budget.ends_with("(budget)") && warned, "{budget}");
        let (decisive, warned) = trials(1);
        assert!(decisive.ends_with("(decisive)") && !warned, "{decisive}");
    }

    #[test]
    fn the_colour_legend_is_printed_only_in_colour() {
        let text = include_str!("../../goodput/tests/render_fixtures/additive.json");
        let report = report::io::parse_report(text).expect("fixture parses");
        let rows = rows(&report);
        let legend = "Goodput: green meets the SLO";
        assert!(text_table(&report, &rows, true).contains(legend));
        assert!(!text_table(&report, &rows, false).contains(legend));
    }
}
