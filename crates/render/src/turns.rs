//! The per-turn table of conversation workloads (after the results table): one row
//! per engine x load level x turn, and the count of sessions cut to fit the context.

use maud::{html, Markup};
use report::{ConversationSummary, Report};

use super::markdown::grid;
use super::markdown::md_escape;
use super::text::{num, plain_table};

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
    report
        .load
        .iter()
        .flat_map(|(engine, r)| {
            r.points
                .iter()
                .filter_map(move |p| p.conversation.as_ref().map(|c| (engine.as_str(), p.x, c)))
        })
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

/// The table for a terminal; empty when the report has no conversation points.
pub fn turns_text(report: &Report) -> String {
    let rows = cells(report);
    if rows.is_empty() {
        return String::new();
    }
    let table = plain_table(&COLUMNS, rows);
    let mut out = String::from("Per turn (conversations; all trials pooled):\n");
    out.push_str(&table);
    for n in cut_notes(report) {
        out.push_str(&format!("{n}\n"));
    }
    out
}

/// The table in Markdown; empty when the report has no conversation points.
pub fn turns_markdown(report: &Report) -> String {
    let rows: Vec<Vec<String>> = cells(report)
        .into_iter()
        .map(|r| r.iter().map(|c| md_escape(c)).collect())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("**Per turn** (conversations; all trials pooled)\n\n");
    out.push_str(&grid(&COLUMNS, 1, &rows));
    for n in cut_notes(report) {
        out.push_str(&format!("\n{}\n", md_escape(&n)));
    }
    out
}

/// The section of the HTML page; nothing when the report has no conversation points.
pub fn turns_html(report: &Report) -> Markup {
    let rows = cells(report);
    html! {
        @if !rows.is_empty() {
            section #turns {
                h2 { "Per turn" }
                p { "Conversation workload: requests by their turn in the session, all trials pooled." }
                table {
                    thead { tr { @for c in COLUMNS { th { (c) } } } }
                    tbody {
                        @for r in &rows {
                            tr { @for c in r { td { (c) } } }
                        }
                    }
                }
                @for n in cut_notes(report) {
                    p.notice { (n) }
                }
            }
        }
    }
}
