//! `vllm bench serve --save-result` (with or without `--save-detailed`).
//!
//! The file is one run at one load: `request_rate` (`"inf"`: every prompt at once,
//! gated by `max_concurrency`), the run's aggregates (`median_ttft_ms`,
//! `p99_tpot_ms`, ... for the metrics of `--percentile-metrics` and the percentiles
//! of `--metric-percentiles`), and with `--save-detailed` one entry per request in
//! `ttfts`, `itls`, `latencies` (seconds), `input_lens`, `output_lens`, `errors`.

use report::{LoadMode, Point};
use serde_json::{json, Map, Value};

/// The key of the SLO a goodput-written file was judged against (goodput's
/// `slo` table as the report holds it): written by [`crate::export::vllm`], read
/// back by [`convert`].
pub const GOODPUT_SLO_KEY: &str = "goodput_slo";

use super::{check_figures, check_levels, count, grid, num, one, peer_report, PeerRun};

/// True when `v` is a vLLM `bench serve` result.
pub fn is_vllm(v: &Value) -> bool {
    v.is_object()
        && (v.get("backend").is_some() || v.get("endpoint_type").is_some())
        && v.get("request_throughput").is_some()
        && v.get("load").is_none()
}

/// Per-request values of a detailed file, ms; empty when it has none.
struct Requests {
    ttfts: Vec<f64>,
    tpots: Vec<f64>,
}

fn requests(v: &Value) -> Option<Requests> {
    let ttfts = v.get("ttfts")?.as_array()?;
    let out_lens = v.get("output_lens").and_then(Value::as_array);
    let latencies = v.get("latencies").and_then(Value::as_array);
    let itls = v.get("itls").and_then(Value::as_array);
    let errors = v.get("errors").and_then(Value::as_array);
    let mut r = Requests {
        ttfts: Vec::new(),
        tpots: Vec::new(),
    };
    for (i, t) in ttfts.iter().enumerate() {
        let failed = errors
            .and_then(|e| e.get(i))
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
        let out = out_lens.and_then(|o| o.get(i)).and_then(Value::as_f64);
        let Some(ttft) = t.as_f64().filter(|_| !failed && out.unwrap_or(1.0) > 0.0) else {
            continue;
        };
        r.ttfts.push(ttft * 1000.0);
        // vLLM's TPOT: (latency - ttft) / (output_len - 1), latency from the file
        // or, in older files, TTFT plus the gaps.
        let latency = latencies
            .and_then(|l| l.get(i))
            .and_then(Value::as_f64)
            .or_else(|| {
                let gaps = itls?.get(i)?.as_array()?;
                Some(ttft + gaps.iter().filter_map(Value::as_f64).sum::<f64>())
            });
        if let (Some(lat), Some(n)) = (latency, out) {
            if n > 1.0 {
                r.tpots.push((lat - ttft) * 1000.0 / (n - 1.0));
            }
        }
    }
    Some(r)
}

/// Converts a vLLM result into the report model.
pub fn convert(v: &Value) -> anyhow::Result<report::Report> {
    check(v)?;
    let completed = count(v, "/completed")?
        .ok_or_else(|| anyhow::anyhow!("no `completed` count: not a finished `bench serve` run"))?;
    let failed = count(v, "/failed")?;
    let duration = num(v, "duration");
    let rate = match v.get("request_rate") {
        Some(Value::String(s)) if s == "inf" => None,
        Some(r) => r.as_f64(),
        None => None,
    };
    let max_conc = num(v, "max_concurrency");
    let (mode, x) = match rate {
        Some(r) => (LoadMode::Rate, r),
        None => (
            LoadMode::Concurrency,
            max_conc.or(num(v, "num_prompts")).unwrap_or(0.0),
        ),
    };
    let quantiles = report::default_quantiles();
    let detail = requests(v);
    let mut notices = Vec::new();
    let mean = |total: &str| {
        num(v, total)
            .filter(|_| completed > 0.0)
            .map(|t| t / completed)
    };
    let mut point = Point {
        x,
        output_throughput: one(num(v, "output_throughput")),
        median_ttft_ms: one(num(v, "median_ttft_ms")),
        p99_ttft_ms: one(num(v, "p99_ttft_ms")),
        median_tpot_ms: one(num(v, "median_tpot_ms")),
        p99_tpot_ms: one(num(v, "p99_tpot_ms")),
        median_itl_ms: one(num(v, "median_itl_ms")),
        p99_itl_ms: one(num(v, "p99_itl_ms")),
        goodput_rps: one(num(v, "request_goodput")),
        request_throughput: one(num(v, "request_throughput")),
        completed: vec![completed as u64],
        failed: failed.map(|f| vec![f as u64]),
        median_e2el_ms: num(v, "median_e2el_ms").map(|m| one(Some(m))),
        p99_e2el_ms: num(v, "p99_e2el_ms").map(|m| one(Some(m))),
        mean_input_tokens: mean("total_input_tokens").map(|m| one(Some(m))),
        mean_output_tokens: mean("total_output_tokens").map(|m| one(Some(m))),
        offered_rate: rate,
        trials: vec![report::TrialInfo {
            index: 0,
            status: report::RunStatus::Complete,
            duration_s: duration,
            completed: completed as u64,
            failed: failed.unwrap_or(0.0) as u64,
            ..Default::default()
        }],
        spec_decode: spec_decode(v),
        extra: vllm_only(v),
        ..Default::default()
    };
    match &detail {
        Some(d) => {
            point.ttft_quantiles_ms = grid(d.ttfts.clone(), &quantiles);
            point.tpot_quantiles_ms = grid(d.tpots.clone(), &quantiles);
        }
        None => notices.push(
            "no per-request data (run with --save-detailed for it): no quantile grids, no SLO attainment".into(),
        ),
    }
    if num(v, "request_goodput").is_none() {
        notices.push("no goodput: the run was made without --goodput".into());
    }
    let slo = recorded_slo(v)?;
    notices.push(if slo.is_some() {
        "GPU telemetry and the engine's configuration are not in the file".into()
    } else {
        "the SLO the run was judged against, GPU telemetry and the engine's configuration are not in the file"
            .into()
    });
    check_levels(std::slice::from_ref(&point))?;
    let model = v.get("model_id").and_then(Value::as_str).unwrap_or("vllm");
    let engine = model.rsplit('/').next().unwrap_or(model).to_string();
    let mut report = peer_report(PeerRun {
        tool: "vllm bench serve".into(),
        engine,
        mode,
        points: vec![point],
        requests: num(v, "num_prompts").unwrap_or(completed) as u32,
        notices,
        workload: json!({
            "tool": "vllm bench serve",
            "backend": v.get("backend"),
            "model_id": v.get("model_id"),
            "tokenizer_id": v.get("tokenizer_id"),
            "date": v.get("date"),
            "request_rate": v.get("request_rate"),
            "burstiness": v.get("burstiness"),
            "max_concurrency": v.get("max_concurrency"),
            "num_prompts": v.get("num_prompts"),
        }),
    });
    if let Some(slo) = slo {
        report.slo = slo;
    }
    if let Some(run) = report.run.as_mut() {
        // Only a seed the file records (goodput's `--save-result` writes it; vLLM's
        // own files do not): never a made-up 0.
        run.seed = v.get("seed").and_then(Value::as_u64);
    }
    Ok(report)
}

/// The SLO a goodput-written file was judged against
/// ([`GOODPUT_SLO_KEY`]), bounds checked as every figure is;
/// `None` in vLLM's own files.
fn recorded_slo(v: &Value) -> anyhow::Result<Option<report::Slo>> {
    let key = GOODPUT_SLO_KEY;
    let Some(slo) = v.get(key) else {
        return Ok(None);
    };
    super::check_figures(v, &format!("/{key}"))?;
    let slo: report::Slo = serde_json::from_value(slo.clone())
        .map_err(|e| crate::UsageError(format!("field `{key}`: {e}")))?;
    Ok(Some(slo))
}

/// The numbers goodput reads are in range: figures, rates, durations, token totals
/// and per-request values finite and at least 0, request counts whole. (Other
/// top-level keys, `--metadata` ones say, are the user's and kept as they are.)
fn check(v: &Value) -> anyhow::Result<()> {
    let Some(obj) = v.as_object() else {
        return Ok(());
    };
    const READ: [&str; 17] = [
        "duration",
        "completed",
        "failed",
        "num_prompts",
        "max_concurrency",
        "request_rate",
        "burstiness",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "spec_decode_draft_tokens",
        "spec_decode_accepted_tokens",
        "ttfts",
        "itls",
        "latencies",
        "input_lens",
        "output_lens",
    ];
    for k in obj.keys() {
        let figure = k.ends_with("_ms") || k.starts_with("total_") || k.starts_with("max_");
        if figure || READ.contains(&k.as_str()) {
            check_figures(v, &format!("/{k}"))?;
        }
    }
    for k in ["/num_prompts", "/max_concurrency"] {
        count(v, k)?;
    }
    Ok(())
}

fn spec_decode(v: &Value) -> Option<report::SpecDecode> {
    let drafted = num(v, "spec_decode_draft_tokens")?;
    let accepted = num(v, "spec_decode_accepted_tokens")?;
    Some(report::SpecDecode {
        draft_tokens: drafted,
        accepted_tokens: accepted,
        acceptance_rate: (drafted > 0.0).then(|| accepted / drafted),
    })
}

/// vLLM's figures goodput's point has no field for (means, standard deviations,
/// other percentiles), kept under `vllm` in the point.
fn vllm_only(v: &Value) -> Map<String, Value> {
    let mut kept = Map::new();
    if let Some(obj) = v.as_object() {
        for (k, val) in obj {
            let figure = k.ends_with("_ms")
                && (k.starts_with("mean_") || k.starts_with("std_") || k.starts_with('p'));
            let total = k.starts_with("total_") || k.starts_with("max_");
            if (figure || total) && val.is_number() {
                kept.insert(k.clone(), val.clone());
            }
        }
    }
    let mut extra = Map::new();
    if !kept.is_empty() {
        extra.insert("vllm".into(), Value::Object(kept));
    }
    extra
}
