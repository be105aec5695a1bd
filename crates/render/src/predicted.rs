//! The intervals of a predicted report (after the results table): per engine and
//! load, each metric's predicted value with its interval, and whether the point
//! is EXTRAPOLATED and why. Empty for a measured report.

use report::{Point, Report};

use super::section::TableSection;
use super::text::num;

const COLUMNS: [&str; 6] = [
    "engine",
    "x",
    "TTFT p50 ms [interval]",
    "TPOT p50 ms [interval]",
    "output tok/s [interval]",
    "trust",
];

fn cell(p: &Point, name: &str, value: Option<f64>) -> String {
    let v = value.map_or("-".into(), num);
    match p
        .predicted_interval
        .as_ref()
        .and_then(|i| i.metrics.get(name))
    {
        Some([lo, hi]) => format!("{v} [{}, {}]", num(*lo), num(*hi)),
        None => v,
    }
}

fn cells(report: &Report) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (engine, result) in &report.load {
        for p in result
            .points
            .iter()
            .filter(|p| p.predicted_interval.is_some())
        {
            let why = p.predicted_interval.as_ref().map(|i| i.why.join("; "));
            rows.push(vec![
                engine.clone(),
                num(p.x),
                cell(p, "median_ttft_ms", p.median_ttft_ms.median),
                cell(p, "median_tpot_ms", p.median_tpot_ms.median),
                cell(p, "output_throughput", p.output_throughput.median),
                match why {
                    Some(w) if p.extrapolated => format!("EXTRAPOLATED: {w}"),
                    _ => "inside the fitted range".into(),
                },
            ]);
        }
    }
    rows
}

fn title(report: &Report) -> String {
    let level = report
        .load
        .values()
        .flat_map(|r| &r.points)
        .find_map(|p| p.predicted_interval.as_ref().map(|i| i.level))
        .unwrap_or(0.9);
    format!(
        "PREDICTED, with {:.0}% intervals (the fit's uncertainty carried through the model)",
        level * 100.0
    )
}

/// The intervals' section; without rows when no point has an interval.
pub fn section(report: &Report) -> TableSection {
    TableSection {
        rows: cells(report),
        ..TableSection::new("intervals", title(report), &COLUMNS[..])
    }
}
