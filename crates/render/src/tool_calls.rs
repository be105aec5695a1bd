//! Tool calls (`[workload] tools`): the table of time to first tool call and
//! valid calls (after the results table): one row per engine x load level whose
//! requests asked for tool calls or streamed one.

use report::{Point, Report, ToolCallSummary};

use super::section::TableSection;
use super::text::num;

const COLUMNS: [&str; 7] = [
    "engine",
    "x",
    "TTFTC p50/p99 ms",
    "calls complete p50 ms",
    "called",
    "calls",
    "valid JSON",
];

/// Every point with tool calls, in report order.
fn points(report: &Report) -> Vec<(&str, &Point, &ToolCallSummary)> {
    report
        .load
        .iter()
        .flat_map(|(engine, r)| {
            r.points
                .iter()
                .filter_map(move |p| p.tool_calls.as_ref().map(|s| (engine.as_str(), p, s)))
        })
        .collect()
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
                t.valid_share.map_or("–".to_string(), |s| {
                    format!("{}% ({} of {})", num(s * 100.0), t.valid, t.judged)
                }),
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
             arguments parse as JSON.",
        ),
        rows: cells(report),
        ..TableSection::new("tool-calls", "Tool calls", &COLUMNS[..])
    }
}
