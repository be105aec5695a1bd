//! Reasoning models: the time to first answer token (TTFAT) every renderer uses
//! for the `ttfat` bound, and the table of thinking against answering (after the
//! results table): one row per engine x load level that streamed reasoning.

use report::{Point, ReasoningSummary, Report};

use super::section::TableSection;
use super::text::num;

const COLUMNS: [&str; 8] = [
    "engine",
    "x",
    "TTFT p50 ms",
    "TTFAT p50/p99 ms",
    "answer TPOT p50 ms",
    "reasoning tokens",
    "answer tokens",
    "no answer",
];

/// Every point that streamed reasoning, in report order.
fn points(report: &Report) -> Vec<(&str, &Point, &ReasoningSummary)> {
    super::section::points_with(report, |p| p.reasoning.as_ref())
}

fn cells(report: &Report) -> Vec<Vec<String>> {
    let f = |v: Option<f64>| v.map_or("–".to_string(), num);
    points(report)
        .into_iter()
        .map(|(engine, p, r)| {
            let sent: u64 = p.completed.iter().sum();
            vec![
                engine.to_string(),
                num(p.x),
                f(p.median_ttft_ms.median),
                format!(
                    "{} / {}",
                    f(r.median_ttfat_ms.median),
                    f(r.p99_ttfat_ms.median)
                ),
                f(r.median_answer_tpot_ms.median),
                f(r.mean_reasoning_tokens.median),
                f(r.mean_answer_tokens.median),
                format!("{} of {sent}", r.no_answer_total()),
            ]
        })
        .collect()
}

/// The reasoning section; without rows when no point streamed reasoning.
pub fn section(report: &Report) -> TableSection {
    TableSection {
        qualifier: "(reasoning models; medians over trials)".into(),
        about: Some(
            "Reasoning model: TTFT counts the first token of either kind, TTFAT the \
             first token of the answer; medians over trials.",
        ),
        rows: cells(report),
        ..TableSection::new("reasoning", "Thinking and answering", &COLUMNS[..])
    }
}
