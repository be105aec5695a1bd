//! The per-turn table of conversation workloads (after the results table): one row
//! per engine x load level x turn, and the count of sessions cut to fit the context.

use report::{ConversationSummary, Report};

use super::section::TableSection;
use super::text::num;

const COLUMNS: [&str; 8] = [
    "engine",
    "x",
    "turn",
    "ok",
    "failed",
    "TTFT p50/p99 ms",
    "TPOT p50/p99 ms",
    "prompt tokens",
];

/// Every point that has a per-turn table, in report order.
fn points(report: &Report) -> Vec<(&str, f64, &ConversationSummary)> {
    super::section::points_with(report, |p| p.conversation.as_ref())
        .into_iter()
        .map(|(engine, p, c)| (engine, p.x, c))
        .collect()
}

fn pair(a: Option<f64>, b: Option<f64>) -> String {
    let f = |v: Option<f64>| v.map_or("–".to_string(), num);
    format!("{} / {}", f(a), f(b))
}

fn cells(report: &Report) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (engine, x, c) in points(report) {
        for t in &c.turns {
            out.push(vec![
                engine.to_string(),
                num(x),
                t.turn.to_string(),
                t.completed.to_string(),
                t.failed.to_string(),
                pair(t.median_ttft_ms, t.p99_ttft_ms),
                pair(t.median_tpot_ms, t.p99_tpot_ms),
                t.mean_input_tokens.map_or("–".into(), num),
            ]);
        }
    }
    out
}

/// The sentences on cut sessions, one per point that had any.
fn cut_notes(report: &Report) -> Vec<String> {
    points(report)
        .into_iter()
        .filter(|(_, _, c)| c.cut_sessions > 0)
        .map(|(engine, x, c)| {
            format!(
                "{engine} x={}: {} of {} sessions dropped their oldest turns to fit the context",
                num(x),
                c.cut_sessions,
                c.sessions
            )
        })
        .collect()
}

/// The per-turn section; without rows when the report has no conversation points.
pub fn section(report: &Report) -> TableSection {
    TableSection {
        qualifier: "(conversations; all trials pooled)".into(),
        about: Some(
            "Conversation workload: requests by their turn in the session, all trials pooled.",
        ),
        rows: cells(report),
        notes: cut_notes(report),
        ..TableSection::new("turns", "Per turn", &COLUMNS[..])
    }
}
