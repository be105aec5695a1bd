//! AIPerf's `profile_export_aiperf.json` (AIPerf 0.13, schema 1.4): one run at one
//! load (`input_config.phases[].type` `concurrency` or `request_rate`), each metric
//! an object of `avg`, `p50`, `p99`, ... with its `unit`. Per-request values live in
//! `profile_export.jsonl` beside it; when that file is there, its TTFTs and
//! per-request TPOTs give the quantile grids.
//!
//! Names differ: AIPerf's `inter_token_latency` is `(latency - TTFT) / (tokens - 1)`,
//! goodput's (and vLLM's) TPOT; its `inter_chunk_latency` is goodput's ITL.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use report::{LoadMode, Point};
use serde_json::{json, Value};

use anyhow::Context;

use super::{check_figures, check_levels, count, grid, one, peer_report, PeerRun};

/// Largest `profile_export.jsonl` read for the grids.
const MAX_JSONL_BYTES: u64 = 256 * 1024 * 1024;

/// True when `v` is AIPerf's aggregate export.
pub fn is_aiperf(v: &Value) -> bool {
    v.get("aiperf_version").is_some()
        || (v.get("schema_version").is_some() && v.get("time_to_first_token").is_some())
}

/// `v.NAME.FIELD`.
fn metric(v: &Value, name: &str, field: &str) -> Option<f64> {
    v.get(name)?.get(field)?.as_f64()
}

/// The load: (mode, x) from the profiling phase.
fn level(v: &Value) -> (LoadMode, f64) {
    let phases = v.pointer("/input_config/phases").and_then(Value::as_array);
    let phase = phases
        .into_iter()
        .flatten()
        .find(|p| p.get("kind").and_then(Value::as_str) == Some("profiling"));
    let get = |k: &str| phase.and_then(|p| p.get(k)).and_then(Value::as_f64);
    match (get("request_rate"), get("concurrency")) {
        (Some(r), _) => (LoadMode::Rate, r),
        (None, Some(c)) => (LoadMode::Concurrency, c),
        (None, None) => (LoadMode::Concurrency, 0.0),
    }
}

/// Per-request (TTFT, TPOT) in ms from `profile_export.jsonl`, when it is beside:
/// a regular file only (a FIFO there is refused, not waited on), each value used
/// finite and at least 0 (else an error naming the line and field).
fn per_request(dir: Option<&Path>) -> anyhow::Result<Option<(Vec<f64>, Vec<f64>)>> {
    let Some(path) = dir.map(|d| d.join("profile_export.jsonl")) else {
        return Ok(None);
    };
    let name = path.display();
    let file = match crate::files::open_regular(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // A FIFO or a device is refused as `show` refuses one named on its own.
        Err(e) => anyhow::bail!("{name}: {e}"),
    };
    let (mut ttfts, mut tpots) = (Vec::new(), Vec::new());
    for (i, line) in BufReader::new(file.take(MAX_JSONL_BYTES))
        .lines()
        .enumerate()
    {
        let Ok(line) = line else { break };
        let Ok(r) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if r.get("error").is_some_and(|e| !e.is_null()) {
            continue;
        }
        for (k, into) in [
            ("time_to_first_token", &mut ttfts),
            ("inter_token_latency", &mut tpots),
        ] {
            let at = format!("/metrics/{k}/value");
            check_figures(&r, &at).with_context(|| format!("{name}:{}", i + 1))?;
            if let Some(t) = r.pointer(&at).and_then(Value::as_f64) {
                into.push(t);
            }
        }
    }
    Ok(Some((ttfts, tpots)))
}

/// Converts an AIPerf export (`dir`: its folder, for the per-request file).
pub fn convert(v: &Value, dir: Option<&Path>) -> anyhow::Result<report::Report> {
    // Every metric's figures (objects with a `unit`) and the load are in range.
    for (k, m) in v.as_object().into_iter().flatten() {
        if m.get("unit").is_some() {
            check_figures(v, &format!("/{k}"))?;
        }
    }
    let phases = v.pointer("/input_config/phases").and_then(Value::as_array);
    for i in 0..phases.map_or(0, Vec::len) {
        for k in ["request_rate", "concurrency"] {
            check_figures(v, &format!("/input_config/phases/{i}/{k}"))?;
        }
    }
    let completed = count(v, "/request_count/avg")?
        .ok_or_else(|| anyhow::anyhow!("no `request_count`: not a finished AIPerf run"))?;
    let failed = count(v, "/error_request_count/avg")?.unwrap_or(0.0);
    let (mode, x) = level(v);
    let quantiles = report::default_quantiles();
    let stat = |name: &str, field: &str| one(metric(v, name, field));
    let opt = |name: &str, field: &str| metric(v, name, field).map(|m| one(Some(m)));
    let mut point = Point {
        x,
        output_throughput: stat("output_token_throughput", "avg"),
        median_ttft_ms: stat("time_to_first_token", "p50"),
        p99_ttft_ms: stat("time_to_first_token", "p99"),
        median_tpot_ms: stat("inter_token_latency", "p50"),
        p99_tpot_ms: stat("inter_token_latency", "p99"),
        median_itl_ms: stat("inter_chunk_latency", "p50"),
        p99_itl_ms: stat("inter_chunk_latency", "p99"),
        goodput_rps: stat("goodput", "avg"),
        request_throughput: stat("request_throughput", "avg"),
        completed: vec![completed as u64],
        failed: Some(vec![failed as u64]),
        median_e2el_ms: opt("request_latency", "p50"),
        p99_e2el_ms: opt("request_latency", "p99"),
        mean_input_tokens: opt("input_sequence_length", "avg"),
        mean_output_tokens: opt("output_sequence_length", "avg"),
        offered_rate: (mode == LoadMode::Rate).then_some(x),
        trials: vec![report::TrialInfo {
            index: 0,
            status: report::RunStatus::Complete,
            duration_s: metric(v, "benchmark_duration", "avg"),
            completed: completed as u64,
            failed: failed as u64,
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut notices = vec![
        "TPOT is AIPerf's inter_token_latency; ITL is its inter_chunk_latency".to_string(),
        "the SLO and the engine's configuration are not in the file".to_string(),
    ];
    check_levels(std::slice::from_ref(&point))?;
    match per_request(dir)? {
        Some((ttfts, tpots)) => {
            point.ttft_quantiles_ms = grid(ttfts, &quantiles);
            point.tpot_quantiles_ms = grid(tpots, &quantiles);
        }
        None => notices.push(
            "no profile_export.jsonl beside it: no per-request data, no quantile grids".into(),
        ),
    }
    let model = v
        .pointer("/input_config/models/items/0/name")
        .and_then(Value::as_str)
        .unwrap_or("aiperf");
    let version = v
        .get("aiperf_version")
        .and_then(Value::as_str)
        .unwrap_or("?");
    Ok(peer_report(PeerRun {
        tool: format!("AIPerf {version}"),
        engine: model.rsplit('/').next().unwrap_or(model).to_string(),
        mode,
        points: vec![point],
        requests: completed as u32,
        notices,
        workload: json!({
            "tool": format!("AIPerf {version}"),
            "endpoint": v.pointer("/input_config/endpoint"),
            "input_tokens": v.pointer("/input_config/datasets/0/prompts/isl/mean"),
            "output_tokens": v.pointer("/input_config/datasets/0/prompts/osl/mean"),
            "datasets": v.pointer("/input_config/datasets"),
            "cli_command": v.pointer("/run_info/cli_command"),
        }),
    }))
}
