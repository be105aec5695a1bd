//! LoRA adapters (`[workload.adapters]`): the per-adapter table (after the results
//! table; one row per engine x load level x adapter, every bounded metric the
//! adapters have, read through the metric table) and the sentences that name an
//! adapter whose latency differs, which the warnings and the verdict print. Both
//! only show the report's stored judgement (`adapters.judgements`).

use report::{AdapterJudgement, AdapterOutcome, AdapterSummary, Point, Report, SloMetric};

use super::section::TableSection;
use super::text::num;

/// Every point with adapters, in report order.
fn points(report: &Report) -> Vec<(&str, &Point, &AdapterSummary)> {
    super::section::points_with(report, |p| p.adapters.as_ref())
}

/// The bounded metrics some adapter of the report has, in the table's order.
fn metrics(report: &Report) -> Vec<SloMetric> {
    SloMetric::ALL
        .into_iter()
        .filter(|m| {
            points(report)
                .iter()
                .any(|(_, _, s)| s.adapters.iter().any(|a| a.latency.contains_key(m.key())))
        })
        .collect()
}

fn columns(metrics: &[SloMetric]) -> Vec<String> {
    let mut c: Vec<String> = [
        "engine",
        "x",
        "adapter",
        "sent (share)",
        "ok",
        "failed",
        "good",
    ]
    .map(String::from)
    .to_vec();
    c.push("goodput req/s".into());
    c.extend(metrics.iter().map(|m| format!("{} p50/p99 ms", m.label())));
    c.push("against the other adapters".into());
    c
}

fn cells(report: &Report, metrics: &[SloMetric]) -> Vec<Vec<String>> {
    let f = |v: Option<f64>| v.map_or("–".to_string(), num);
    let mut rows = Vec::new();
    for (engine, p, s) in points(report) {
        for a in &s.adapters {
            let sent: u64 = a.sent.iter().sum();
            let mut row = vec![
                engine.to_string(),
                num(p.x),
                a.name.clone(),
                format!("{sent} ({}%)", num((a.share * 100.0 * 10.0).round() / 10.0)),
                a.completed.to_string(),
                a.failed.to_string(),
                match a.attainment {
                    Some(at) => format!("{} ({}%)", a.good, num((at * 100.0).round())),
                    None => a.good.to_string(),
                },
                f(a.goodput_rps.median),
            ];
            for m in metrics {
                row.push(a.latency.get(m.key()).map_or("–".to_string(), |l| {
                    format!("{} / {}", f(l.median_ms), f(l.p99_ms))
                }));
            }
            let against: Vec<String> = s
                .judgements
                .iter()
                .filter(|j| j.adapter == a.name)
                .map(short)
                .collect();
            row.push(if against.is_empty() {
                "–".into()
            } else {
                against.join("; ")
            });
            rows.push(row);
        }
    }
    rows
}

/// `TTFT +80 ms [72, 88] higher`: one judgement in a table cell.
fn short(j: &AdapterJudgement) -> String {
    let label = SloMetric::from_key(&j.metric).map_or(j.metric.as_str(), |m| m.label());
    let sign = if j.difference_ms >= 0.0 { "+" } else { "" };
    let word = match &j.outcome {
        AdapterOutcome::Undecided => "cannot tell",
        other => other.as_str(),
    };
    format!(
        "{label} {sign}{} ms {} {word}",
        num(j.difference_ms),
        interval(j)
    )
}

/// `[72, 88]`, an unbounded end as `…`.
fn interval(j: &AdapterJudgement) -> String {
    let end = |v: Option<f64>| v.map_or("…".to_string(), num);
    format!("[{}, {}]", end(j.low_ms), end(j.high_ms))
}

/// The adapters' section; without rows when no point drew adapters.
pub fn section(report: &Report) -> TableSection {
    let m = metrics(report);
    TableSection {
        columns: columns(&m),
        left: 3,
        qualifier: "(all trials pooled; against the others: median difference, 95% interval)"
            .into(),
        about: Some(
            "Each request named one adapter in its model field, drawn by weight. \
             Against the others: the adapter's median minus the other adapters' \
             median, with an interval that holds for every row of the point at 95%; \
             higher or lower only beyond 2% of the others' median.",
        ),
        rows: cells(report, &m),
        ..TableSection::new("adapters", "LoRA adapters", &[])
    }
}

/// The judgements of a point worth a sentence: each adapter judged higher, and
/// for a metric where none is, each judged lower (with two adapters, "a is lower"
/// is "b is higher" said again).
pub fn differing(s: &AdapterSummary) -> Vec<&AdapterJudgement> {
    let higher = |metric: &str| {
        s.judgements
            .iter()
            .any(|j| j.metric == metric && j.outcome == AdapterOutcome::Higher)
    };
    s.judgements
        .iter()
        .filter(|j| match j.outcome {
            AdapterOutcome::Higher => true,
            AdapterOutcome::Lower => !higher(&j.metric),
            _ => false,
        })
        .collect()
}

/// `lora-b's TTFT is higher than the other adapters' by 80 ms (95% interval
/// 72–88 ms; median 120 ms against 40 ms)`.
pub fn sentence(j: &AdapterJudgement) -> String {
    let label = SloMetric::from_key(&j.metric).map_or(j.metric.as_str(), |m| m.label());
    let end = |v: Option<f64>| v.map_or("…".to_string(), |v| num(v.abs()));
    // The interval of the size of the difference: for a lower adapter, its
    // negated ends in reverse.
    let (lo, hi) = match j.outcome {
        AdapterOutcome::Lower => (end(j.high_ms), end(j.low_ms)),
        _ => (end(j.low_ms), end(j.high_ms)),
    };
    format!(
        "{}'s {label} is {} than the other adapters' by {} ms ({}% interval {lo}–{hi} ms; median {} ms against {} ms)",
        j.adapter,
        j.outcome.as_str(),
        num(j.difference_ms.abs()),
        num(j.level * 100.0),
        num(j.median_ms),
        num(j.others_median_ms),
    )
}

/// The verdict's sentences: per engine, each adapter that differs, said with
/// its difference at the lowest load level where it does, and every level where it
/// does.
pub fn verdict_sentences(report: &Report) -> Vec<String> {
    let mut out: Vec<(String, String, Vec<f64>)> = Vec::new();
    for (engine, p, s) in points(report) {
        for j in differing(s) {
            let key = format!("{engine}/{}/{}/{}", j.adapter, j.metric, j.outcome);
            match out.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, _, xs)) => xs.push(p.x),
                None => out.push((key, format!("{engine}: {}", sentence(j)), vec![p.x])),
            }
        }
    }
    out.into_iter()
        .map(|(_, said, xs)| {
            let xs: Vec<String> = xs.into_iter().map(num).collect();
            format!("Adapters differ on {said}, at x={}.", xs.join(", "))
        })
        .collect()
}
