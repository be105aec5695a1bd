//! Tool calls (`[workload] tools`): the table of time to first tool call and
//! valid calls (after the results table): one row per engine x load level whose
//! requests asked for tool calls or streamed one.

use report::{Point, Report, ToolCallSummary};

use super::section::TableSection;
use super::text::num;

const COLUMNS: [&str; 9] = [
    "engine",
    "x",
    "TTFTC p50/p99 ms",
    "calls complete p50 ms",
    "called",
    "calls",
    "argument tokens p50",
    "valid JSON [95% CI]",
    "schema-valid [95% CI]",
];

/// A share of the judged calls with its interval: `75% [66–82] (48 of 64)`.
fn share(valid: u64, judged: u64, interval: Option<report::ShareInterval>) -> String {
    if judged == 0 {
        return "–".to_string();
    }
    let pct = |v: f64| num(v * 100.0);
    let ci = interval.map_or(String::new(), |i| {
        format!(" [{}–{}]", pct(i.low), pct(i.high))
    });
    format!(
        "{}%{ci} ({valid} of {judged})",
        pct(valid as f64 / judged as f64)
    )
}

/// Every point with tool calls, in report order.
fn points(report: &Report) -> Vec<(&str, &Point, &ToolCallSummary)> {
    super::section::points_with(report, |p| p.tool_calls.as_ref())
}

fn cells(report: &Report) -> Vec<Vec<String>> {
    let f = |v: Option<f64>| v.map_or("–".to_string(), num);
    points(report)
        .into_iter()
        .map(|(engine, p, t)| {
            let called: u64 = t.called.iter().sum();
            let asked: u64 = t.asked.iter().sum();
            vec![
                engine.to_string(),
                num(p.x),
                format!(
                    "{} / {}",
                    f(t.median_ttftc_ms.median),
                    f(t.p99_ttftc_ms.median)
                ),
                f(t.median_tool_call_ms.median),
                format!("{called} of {asked}"),
                t.calls.to_string(),
                f(t.median_argument_tokens.median),
                share(t.valid, t.judged, t.valid_interval),
                share(t.schema_valid, t.judged, t.schema_valid_interval),
            ]
        })
        .collect()
}

/// The tool-call section; without rows when no point has tool calls.
pub fn section(report: &Report) -> TableSection {
    TableSection {
        qualifier: "(TTFTC medians over trials; calls over all trials)".into(),
        about: Some(
            "TTFTC: the first tool-call delta − send time; a call is valid when its \
             arguments parse as JSON, schema-valid when they also match the schema \
             of the function it names.",
        ),
        rows: cells(report),
        ..TableSection::new("tool-calls", "Tool calls", &COLUMNS[..])
    }
}
