//! GuideLLM's `benchmarks.json` (`guidellm run --output kind=json`, written by
//! GuideLLM 0.8): one entry of `benchmarks` per load level, each with its strategy
//! (`concurrent` streams, `constant`/`poisson` rate, `synchronous`, `throughput`),
//! distributions under `metrics.NAME.successful` (`median`, `percentiles.p99`, ...)
//! and every request under `requests.successful` / `errored` / `incomplete`.
//!
//! Names differ: GuideLLM's `time_per_output_token_ms` counts the first token, and
//! its `inter_token_latency_ms` is `(latency - TTFT) / (tokens - 1)`, which is
//! goodput's (and vLLM's) TPOT; GuideLLM has no per-chunk gaps (goodput's ITL).

use report::{LoadMode, Point};
use serde_json::{json, Value};

use super::{check_figures, check_levels, count, grid, one, peer_report, PeerRun};

/// True when `v` is a GuideLLM benchmarks file.
pub fn is_guidellm(v: &Value) -> bool {
    v.get("benchmarks").is_some_and(Value::is_array)
        && (v.pointer("/metadata/guidellm_version").is_some()
            || v.pointer("/benchmarks/0/type_").and_then(Value::as_str)
                == Some("generative_benchmark"))
}

/// `metrics.NAME.successful.FIELD` (`FIELD` a path like `percentiles/p99`).
fn dist(b: &Value, name: &str, field: &str) -> Option<f64> {
    b.pointer(&format!("/metrics/{name}/successful/{field}"))
        .and_then(Value::as_f64)
}

/// The load level of one benchmark: (mode, x).
fn level(b: &Value) -> (LoadMode, f64) {
    let s = b.pointer("/config/strategy");
    let get = |k: &str| s.and_then(|s| s.get(k)).and_then(Value::as_f64);
    match s.and_then(|s| s.get("type_")).and_then(Value::as_str) {
        Some("concurrent") => (LoadMode::Concurrency, get("streams").unwrap_or(0.0)),
        Some("synchronous") => (LoadMode::Concurrency, 1.0),
        Some("constant" | "poisson") => (LoadMode::Rate, get("rate").unwrap_or(0.0)),
        // `throughput`: everything at once, up to its max concurrency.
        _ => (LoadMode::Concurrency, get("max_concurrency").unwrap_or(0.0)),
    }
}

/// The numbers of benchmark `i` goodput reads are in range (its metrics, load,
/// duration and per-request values finite and at least 0; its request counts whole);
/// errors name the field.
fn check(v: &Value, i: usize) -> anyhow::Result<()> {
    let at = format!("/benchmarks/{i}");
    for k in ["metrics", "duration", "config/strategy/streams"] {
        check_figures(v, &format!("{at}/{k}"))?;
    }
    for k in ["rate", "max_concurrency"] {
        check_figures(v, &format!("{at}/config/strategy/{k}"))?;
    }
    let reqs = v
        .pointer(&format!("{at}/requests/successful"))
        .and_then(Value::as_array);
    for j in 0..reqs.map_or(0, Vec::len) {
        for k in ["time_to_first_token_ms", "inter_token_latency_ms"] {
            check_figures(v, &format!("{at}/requests/successful/{j}/{k}"))?;
        }
    }
    for k in ["successful", "errored", "incomplete"] {
        count(v, &format!("{at}/metrics/request_totals/{k}"))?;
    }
    Ok(())
}

fn point(b: &Value, quantiles: &[f64]) -> Point {
    let stat = |name: &str, field: &str| one(dist(b, name, field));
    let ms = |name: &str, field: &str| dist(b, name, field).map(|s| one(Some(s * 1000.0)));
    // In range: checked by `check`.
    let count = |k: &str| {
        b.pointer(&format!("/metrics/request_totals/{k}"))
            .and_then(Value::as_f64)
    };
    let completed = count("successful").unwrap_or(0.0) as u64;
    let failed = (count("errored").unwrap_or(0.0) + count("incomplete").unwrap_or(0.0)) as u64;
    let reqs = b.pointer("/requests/successful").and_then(Value::as_array);
    let per = |k: &str| -> Vec<f64> {
        reqs.into_iter()
            .flatten()
            .filter_map(|r| r.get(k).and_then(Value::as_f64))
            .collect()
    };
    let (mode, x) = level(b);
    Point {
        x,
        output_throughput: stat("output_tokens_per_second", "mean"),
        median_ttft_ms: stat("time_to_first_token_ms", "median"),
        p99_ttft_ms: stat("time_to_first_token_ms", "percentiles/p99"),
        median_tpot_ms: stat("inter_token_latency_ms", "median"),
        p99_tpot_ms: stat("inter_token_latency_ms", "percentiles/p99"),
        goodput_rps: one(b
            .pointer("/metrics/request_goodput")
            .and_then(Value::as_f64)),
        request_throughput: stat("requests_per_second", "mean"),
        completed: vec![completed],
        failed: Some(vec![failed]),
        median_e2el_ms: ms("request_latency", "median"),
        p99_e2el_ms: ms("request_latency", "percentiles/p99"),
        mean_input_tokens: dist(b, "prompt_token_count", "mean").map(|m| one(Some(m))),
        mean_output_tokens: dist(b, "output_token_count", "mean").map(|m| one(Some(m))),
        offered_rate: (mode == LoadMode::Rate).then_some(x),
        ttft_quantiles_ms: grid(per("time_to_first_token_ms"), quantiles),
        tpot_quantiles_ms: grid(per("inter_token_latency_ms"), quantiles),
        trials: vec![report::TrialInfo {
            index: 0,
            status: report::RunStatus::Complete,
            duration_s: b.get("duration").and_then(Value::as_f64),
            completed,
            failed,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Converts a GuideLLM benchmarks file into the report model.
pub fn convert(v: &Value) -> anyhow::Result<report::Report> {
    let benchmarks = v
        .get("benchmarks")
        .and_then(Value::as_array)
        .filter(|b| !b.is_empty())
        .ok_or_else(|| anyhow::anyhow!("`benchmarks` is empty: no load level finished"))?;
    let quantiles = report::default_quantiles();
    let mode = if benchmarks
        .iter()
        .all(|b| level(b).0 == LoadMode::Concurrency)
    {
        LoadMode::Concurrency
    } else {
        LoadMode::Rate
    };
    let mut notices = vec![
        "TPOT is GuideLLM's inter_token_latency_ms ((latency - TTFT) / (tokens - 1)); GuideLLM's own TPOT counts the first token".to_string(),
        "no per-chunk gaps: ITL is not in the file".to_string(),
        "the SLO, GPU telemetry and the engine's configuration are not in the file".to_string(),
    ];
    for i in 0..benchmarks.len() {
        check(v, i)?;
    }
    let mut points: Vec<Point> = Vec::new();
    for b in benchmarks {
        let mut p = point(b, &quantiles);
        if mode == LoadMode::Rate && level(b).0 == LoadMode::Concurrency {
            // A sweep's synchronous and throughput levels have no set rate: placed at
            // the rate they reached.
            p.x = p.request_throughput.median.unwrap_or(0.0);
            notices.push(format!(
                "a {} level is placed at the request rate it reached ({:.3}/s)",
                b.pointer("/config/strategy/type_")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
                p.x
            ));
        }
        points.push(p);
    }
    check_levels(&points)?;
    points.sort_by(|a, b| a.x.total_cmp(&b.x));
    let backend = v.pointer("/benchmarks/0/config/backend");
    let model = backend
        .and_then(|b| b.get("model"))
        .and_then(Value::as_str)
        .unwrap_or("guidellm");
    let version = v
        .pointer("/metadata/guidellm_version")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let requests = points
        .iter()
        .flat_map(|p| &p.completed)
        .max()
        .copied()
        .unwrap_or(0) as u32;
    Ok(peer_report(PeerRun {
        tool: format!("GuideLLM {version}"),
        engine: model.rsplit('/').next().unwrap_or(model).to_string(),
        mode,
        points,
        requests,
        notices,
        workload: json!({
            "tool": format!("GuideLLM {version}"),
            "target": backend.and_then(|b| b.get("target")),
            "request_format": backend.and_then(|b| b.get("request_format")),
            "input_tokens": v.pointer("/config/spec/data/0/prompt_tokens"),
            "output_tokens": v.pointer("/config/spec/data/0/output_tokens"),
            "data": v.pointer("/config/spec/data"),
        }),
    }))
}
