//! Embeddings engines (`api = "embeddings"`): the table of requests, inputs and
//! input tokens per second and the whole answer's latency (after the results
//! table), one row per engine x load level that sent embeddings requests. Their
//! TTFT, TPOT, ITL and output-token columns in the results table read `n/a`.

use report::{EmbeddingsSummary, Point, Report};

use super::section::TableSection;
use super::text::num;

const COLUMNS: [&str; 9] = [
    "engine",
    "x",
    "req/s",
    "inputs/s",
    "input tok/s",
    "E2EL p50/p99 ms",
    "headers p50 ms",
    "inputs/req",
    "dimension",
];

/// Every embeddings point, in report order.
fn points(report: &Report) -> Vec<(&str, &Point, &EmbeddingsSummary)> {
    super::section::points_with(report, |p| p.embeddings.as_ref())
}

fn cells(report: &Report) -> Vec<Vec<String>> {
    let f = |v: Option<f64>| v.map_or("–".to_string(), num);
    points(report)
        .into_iter()
        .map(|(engine, p, e)| {
            let e2el = |s: Option<&report::Stat>| f(s.and_then(|s| s.median));
            vec![
                engine.to_string(),
                num(p.x),
                f(p.request_throughput.median),
                f(e.input_throughput.median),
                f(e.input_token_throughput.median),
                format!(
                    "{} / {}",
                    e2el(p.median_e2el_ms.as_ref()),
                    e2el(p.p99_e2el_ms.as_ref())
                ),
                f(e.median_headers_ms.median),
                e.inputs_per_request.to_string(),
                e.dimension.map_or("–".to_string(), |d| d.to_string()),
            ]
        })
        .collect()
}

/// The embeddings section; without rows when no point is an embeddings point.
pub fn section(report: &Report) -> TableSection {
    TableSection {
        qualifier: "(medians over trials; E2EL: send to the whole answer)".into(),
        about: Some(
            "An embeddings answer comes whole: its latency is E2EL, the send to \
             the answer's last byte; it has no TTFT, TPOT or ITL. inputs/s: texts \
             embedded per second; input tok/s: their usage.prompt_tokens per second.",
        ),
        rows: cells(report),
        ..TableSection::new("embeddings", "Embeddings", &COLUMNS[..])
    }
}
