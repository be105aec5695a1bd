//! `--save-result`: a `vllm bench serve --save-result --save-detailed` file written
//! beside goodput's report, one per engine and load level, so dashboards built on
//! vLLM's format keep working. Figures follow vLLM's rules (numpy mean, median,
//! population standard deviation, linear percentiles), computed from goodput's
//! per-request records; the durations are goodput's (first send to last completion).

use std::path::{Path, PathBuf};

use anyhow::Context;
use report::{Point, Report};
use serde_json::{json, Map, Value};

use crate::drive::record::RequestRecord;

use crate::import::vllm::GOODPUT_SLO_KEY;

/// What the vLLM-format file holds and where it goes.
pub struct VllmResultOptions {
    /// `--percentile-metrics` (default `ttft,tpot,itl`).
    pub metrics: Vec<String>,
    /// `--metric-percentiles` (default `99`).
    pub percentiles: Vec<f64>,
    /// `--result-dir` (default: the report's folder).
    pub dir: Option<PathBuf>,
    /// `--result-filename` (default: the report's name, `.vllm.json`); with several
    /// engines or load levels, `-ENGINE-xX` is added before `.json`.
    pub filename: Option<String>,
}

/// Where the files of `points` (engine and load level, in the report's order) go:
/// `--result-dir` (else the report's folder), `--result-filename` (else the
/// report's name, `.vllm.json`), with `-ENGINE-xX` before `.json` when there are
/// several.
pub fn paths(report_path: &Path, opts: &VllmResultOptions, points: &[(&str, f64)]) -> Vec<PathBuf> {
    let dir = opts.dir.clone().unwrap_or_else(|| {
        report_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    });
    let base = opts.filename.clone().unwrap_or_else(|| {
        let name = report_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "goodput-report.json".into());
        format!("{}.vllm.json", name.strip_suffix(".json").unwrap_or(&name))
    });
    points
        .iter()
        .map(|(engine, x)| {
            let name = if points.len() == 1 {
                base.clone()
            } else {
                let stem = base.strip_suffix(".json").unwrap_or(&base);
                format!("{stem}-{engine}-x{x}.json")
            };
            dir.join(name)
        })
        .collect()
}

/// The engines and load levels of `report`, in order.
pub fn points(report: &Report) -> Vec<(&str, f64)> {
    report
        .load
        .iter()
        .flat_map(|(engine, result)| result.points.iter().map(|p| (engine.as_str(), p.x)))
        .collect()
}

/// Whether the file at `path` is a vLLM-format result goodput wrote (its
/// `goodput_tool`), which a later run may replace.
pub fn written_by_goodput(path: &Path) -> bool {
    crate::files::read_text(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| {
            v.get("goodput_tool")?
                .as_str()
                .map(|s| s.starts_with("goodput "))
        })
        .unwrap_or(false)
}

/// Writes the files at [`paths`] (the caller has checked that they may be
/// written); returns their paths.
pub fn write(
    report: &Report,
    report_path: &Path,
    opts: &VllmResultOptions,
) -> anyhow::Result<Vec<PathBuf>> {
    let rec_path = crate::drive::record::records_path(report_path);
    let records = crate::drive::record::read_records(&rec_path).map_err(anyhow::Error::msg)?;
    let targets = paths(report_path, opts, &points(report));
    let mut written = Vec::new();
    let mut each = targets.into_iter();
    for (engine, result) in &report.load {
        for point in &result.points {
            let Some(path) = each.next() else { break };
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot make {}", dir.display()))?;
            }
            let mine: Vec<&RequestRecord> = records
                .iter()
                .filter(|r| &r.engine == engine && r.x == point.x)
                .collect();
            let value = result_json(report, engine, point, &mine, opts);
            // What the report holds, redacted as the report is.
            let text = crate::redact::to_json_line(&value)?;
            report::io::write_atomic(&path, text.as_bytes())?;
            written.push(path);
        }
    }
    Ok(written)
}

/// numpy's mean, median, population standard deviation and linear percentiles.
fn describe(values: &[f64], percentiles: &[f64]) -> (f64, f64, f64, Vec<(f64, f64)>) {
    let mut v = values.to_vec();
    report::stats::sort_values(&mut v);
    if v.is_empty() {
        // vLLM's `np.mean(values or 0)`: 0 for an empty list.
        return (
            0.0,
            0.0,
            0.0,
            percentiles.iter().map(|&p| (p, 0.0)).collect(),
        );
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let std = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let median = report::quantile_linear(&v, 0.5).unwrap_or(0.0);
    let ps = percentiles
        .iter()
        .map(|&p| (p, report::quantile_linear(&v, p / 100.0).unwrap_or(0.0)))
        .collect();
    (mean, median, std, ps)
}

/// Seconds of a nanosecond span.
fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Per-request arrays in vLLM's units (seconds) and its per-metric values (ms).
#[derive(Default)]
struct Arrays {
    input_lens: Vec<Value>,
    output_lens: Vec<Value>,
    ttfts: Vec<Value>,
    itls: Vec<Value>,
    latencies: Vec<Value>,
    errors: Vec<Value>,
    ttft_ms: Vec<f64>,
    tpot_ms: Vec<f64>,
    itl_ms: Vec<f64>,
    e2el_ms: Vec<f64>,
}

fn arrays(records: &[&RequestRecord]) -> Arrays {
    let mut a = Arrays::default();
    for r in records {
        let ok = r.ok() && !r.chunks.is_empty();
        let first = r.chunks.first().map_or(0, |c| c.t.saturating_sub(r.sent));
        let last = r.chunks.last().map_or(0, |c| c.t.saturating_sub(r.sent));
        let out = if ok {
            r.completion_tokens.unwrap_or(r.chunks.len() as u64)
        } else {
            0
        };
        let gaps: Vec<f64> = r
            .chunks
            .windows(2)
            .map(|w| secs(w[1].t.saturating_sub(w[0].t)))
            .collect();
        a.input_lens.push(json!(r.prompt_tokens.unwrap_or(0)));
        a.output_lens.push(json!(out));
        a.ttfts.push(json!(if ok { secs(first) } else { 0.0 }));
        a.latencies.push(json!(if ok { secs(last) } else { 0.0 }));
        a.errors.push(json!(r.error_label().unwrap_or_default()));
        if ok {
            a.ttft_ms.push(secs(first) * 1e3);
            a.e2el_ms.push(secs(last) * 1e3);
            if out > 1 {
                a.tpot_ms.push(secs(last - first) * 1e3 / (out - 1) as f64);
            }
            a.itl_ms.extend(gaps.iter().map(|g| g * 1e3));
        }
        a.itls.push(json!(if ok { gaps } else { Vec::new() }));
    }
    a
}

fn result_json(
    report: &Report,
    engine: &str,
    point: &Point,
    records: &[&RequestRecord],
    opts: &VllmResultOptions,
) -> Value {
    let env = report
        .environment
        .as_ref()
        .and_then(|e| e.engines.get(engine));
    let model = env
        .and_then(|e| e.model.clone())
        .unwrap_or_else(|| engine.to_string());
    let chat = env.and_then(|e| e.api.as_deref()) == Some("chat");
    let backend = if chat { "openai-chat" } else { "openai" };
    let rate_mode = report
        .run
        .as_ref()
        .is_some_and(|r| r.load_mode == report::LoadMode::Rate);
    let duration: f64 = point.trials.iter().filter_map(|t| t.duration_s).sum();
    let a = arrays(records);
    let completed = a.ttft_ms.len() as f64;
    let failed = records.len() as f64 - completed;
    let total_in: u64 = records
        .iter()
        .filter(|r| r.ok())
        .filter_map(|r| r.prompt_tokens)
        .sum();
    let total_out: u64 = a.output_lens.iter().filter_map(Value::as_u64).sum();
    let good: u64 = point.good.iter().flatten().sum();
    let per_s = |x: f64| if duration > 0.0 { x / duration } else { 0.0 };
    let slo_given = report.slo.bounds.iter().any(|(m, _)| m.def().vllm_goodput);
    let mut m = Map::new();
    m.insert("date".into(), json!(crate::dates::compact_now()));
    m.insert("endpoint_type".into(), json!(backend));
    m.insert("backend".into(), json!(backend));
    m.insert("label".into(), Value::Null);
    m.insert("model_id".into(), json!(model));
    m.insert("tokenizer_id".into(), json!(model));
    m.insert("num_prompts".into(), json!(records.len()));
    m.insert(
        "request_rate".into(),
        if rate_mode {
            json!(point.x)
        } else {
            json!("inf")
        },
    );
    m.insert("burstiness".into(), json!(1.0));
    m.insert(
        "max_concurrency".into(),
        if rate_mode {
            Value::Null
        } else {
            json!(point.x as u64)
        },
    );
    m.insert("duration".into(), json!(duration));
    m.insert("completed".into(), json!(completed as u64));
    m.insert("failed".into(), json!(failed as u64));
    m.insert("total_input_tokens".into(), json!(total_in));
    m.insert("total_output_tokens".into(), json!(total_out));
    m.insert("request_throughput".into(), json!(per_s(completed)));
    m.insert(
        "request_goodput".into(),
        if slo_given {
            json!(per_s(good as f64))
        } else {
            Value::Null
        },
    );
    m.insert("output_throughput".into(), json!(per_s(total_out as f64)));
    m.insert(
        "total_token_throughput".into(),
        json!(per_s((total_in + total_out) as f64)),
    );
    for metric in &opts.metrics {
        let values = match metric.as_str() {
            "ttft" => &a.ttft_ms,
            "tpot" => &a.tpot_ms,
            "itl" => &a.itl_ms,
            "e2el" => &a.e2el_ms,
            _ => continue,
        };
        let (mean, median, std, ps) = describe(values, &opts.percentiles);
        m.insert(format!("mean_{metric}_ms"), json!(mean));
        m.insert(format!("median_{metric}_ms"), json!(median));
        m.insert(format!("std_{metric}_ms"), json!(std));
        for (p, v) in ps {
            let word = if p.fract() == 0.0 {
                format!("{}", p as i64)
            } else {
                p.to_string()
            };
            m.insert(format!("p{word}_{metric}_ms"), json!(v));
        }
    }
    m.insert("input_lens".into(), Value::Array(a.input_lens));
    m.insert("output_lens".into(), Value::Array(a.output_lens));
    m.insert("ttfts".into(), Value::Array(a.ttfts));
    m.insert("itls".into(), Value::Array(a.itls));
    m.insert("latencies".into(), Value::Array(a.latencies));
    m.insert("errors".into(), Value::Array(a.errors));
    m.insert(
        "goodput_tool".into(),
        json!(format!("goodput {}", env!("CARGO_PKG_VERSION"))),
    );
    // Beside vLLM's keys, what `show` needs to read the file back as the run was:
    // the SLO its `request_goodput` counts against, and the seed (vLLM's format has
    // neither; vLLM's own reader ignores keys it does not know).
    if slo_given {
        m.insert(
            GOODPUT_SLO_KEY.into(),
            serde_json::to_value(&report.slo).unwrap_or(Value::Null),
        );
    }
    if let Some(seed) = report.run.as_ref().and_then(|r| r.seed) {
        m.insert("seed".into(), json!(seed));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn figures_follow_numpys_rules_as_vllms_do() {
        // np.mean, np.median, np.std (population), np.percentile (linear) of [4, 1, 3, 2].
        let (mean, median, std, ps) = describe(&[4.0, 1.0, 3.0, 2.0], &[50.0, 99.0]);
        assert_eq!((mean, median), (2.5, 2.5));
        assert!((std - 1.25f64.sqrt()).abs() < 1e-12);
        assert_eq!(ps[0], (50.0, 2.5));
        assert!((ps[1].1 - 3.97).abs() < 1e-12);
        // vLLM's `np.mean(values or 0)`: zeros for no value.
        assert_eq!(describe(&[], &[99.0]).3, vec![(99.0, 0.0)]);
    }
}
