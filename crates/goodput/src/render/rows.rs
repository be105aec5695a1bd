//! The row model: one row per engine x load level, shared by every tabular format
//! (text table, Markdown, CSV, JSON) and the HTML table.

use report::{EngineResult, Point, Report, Stat};
use serde_json::{json, Value};

/// One engine at one load level, or an engine that produced no point (it failed).
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    /// Engine name (the key of `load`).
    pub engine: &'a str,
    /// The engine's results.
    pub result: &'a EngineResult,
    /// The load level; `None` for an engine without points.
    pub point: Option<&'a Point>,
    /// Trials the point should have had (planned, or inferred from the other points).
    pub expected_trials: Option<u32>,
}

/// The rows of a report, engines in run order, points in report order.
pub fn rows(report: &Report) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    for (engine, result) in &report.load {
        if result.points.is_empty() {
            out.push(Row {
                engine,
                result,
                point: None,
                expected_trials: None,
            });
        }
        for p in &result.points {
            out.push(Row {
                engine,
                result,
                point: Some(p),
                expected_trials: expected_trials(report, p),
            });
        }
    }
    out
}

/// Trials that produced results at a point: the entries of `completed`, bounded by
/// the trial count of the throughput summary when that is smaller.
pub fn trials_with_results(p: &Point) -> u32 {
    let n = p.output_throughput.n;
    if p.completed.is_empty() {
        n
    } else {
        let c = p.completed.len() as u32;
        if n > 0 {
            c.min(n)
        } else {
            c
        }
    }
}

/// Trials planned for a point: the point's own count, else the run's.
pub fn planned_trials(report: &Report, p: &Point) -> Option<u32> {
    p.planned_trials
        .or_else(|| report.run.as_ref().map(|r| r.planned_trials))
        .filter(|n| *n > 0)
}

/// Trials a point should have: planned when recorded, otherwise the most trials any
/// point of the report has (the reference format records no plan).
pub fn expected_trials(report: &Report, p: &Point) -> Option<u32> {
    planned_trials(report, p).or_else(|| {
        report
            .load
            .values()
            .flat_map(|e| e.points.iter())
            .map(trials_with_results)
            .max()
            .filter(|n| *n > 0)
    })
}

/// Sum of an optional per-trial count.
pub fn total(v: &Option<Vec<u64>>) -> Option<u64> {
    v.as_ref().map(|v| v.iter().sum())
}

/// True when `value <= bound`; `None` when the value is unknown.
pub fn within(value: Option<f64>, bound: Option<f64>) -> Option<bool> {
    match bound {
        None => Some(true),
        Some(b) => value.map(|v| v <= b),
    }
}

impl Row<'_> {
    /// Requests completed over all trials.
    pub fn completed(&self) -> u64 {
        self.point.map(|p| p.completed.iter().sum()).unwrap_or(0)
    }

    /// Good requests over all trials, when the report counts them.
    pub fn good(&self) -> Option<u64> {
        self.point.and_then(|p| total(&p.good))
    }

    /// Failed requests over all trials, when the report counts them.
    pub fn failed(&self) -> Option<u64> {
        self.point.and_then(|p| total(&p.failed))
    }

    /// `kind: message (exit status)` of a failed engine.
    pub fn engine_error(&self) -> Option<String> {
        self.result.error.as_ref().map(|e| {
            let mut s = format!("{}: {}", e.kind, e.message);
            match &e.exit_status {
                Some(st) if !e.message.contains(st.as_str()) => {
                    s.push_str(&format!(" (exit status {st})"))
                }
                _ => {}
            }
            s
        })
    }

    /// The export fields of this row, in column order: the CSV header and the JSON
    /// keys. Numbers keep full precision; unknown values are `null`.
    pub fn fields(&self) -> Vec<(String, Value)> {
        let mut f: Vec<(String, Value)> = Vec::new();
        let mut put = |k: &str, v: Value| f.push((k.to_string(), v));
        let p = self.point;
        put("engine", json!(self.engine));
        put("x", json!(p.map(|p| p.x)));
        put(
            "achieved_concurrency",
            json!(p.and_then(|p| p.achieved_concurrency.as_ref()?.median)),
        );
        put("status", json!(p.and_then(|p| p.status)));
        put("trials", json!(p.map(trials_with_results)));
        put("expected_trials", json!(self.expected_trials));
        put("completed", json!(p.map(|_| self.completed())));
        put("failed", json!(self.failed()));
        put("good", json!(self.good()));
        put(
            "estimated_tokens",
            json!(p.and_then(|p| p.estimated_tokens)),
        );
        let stats: [(&str, Option<&Stat>); 11] = [
            ("median_ttft_ms", p.map(|p| &p.median_ttft_ms)),
            ("p99_ttft_ms", p.map(|p| &p.p99_ttft_ms)),
            ("median_tpot_ms", p.map(|p| &p.median_tpot_ms)),
            ("p99_tpot_ms", p.map(|p| &p.p99_tpot_ms)),
            ("median_itl_ms", p.map(|p| &p.median_itl_ms)),
            ("p99_itl_ms", p.map(|p| &p.p99_itl_ms)),
            ("median_e2el_ms", p.and_then(|p| p.median_e2el_ms.as_ref())),
            ("p99_e2el_ms", p.and_then(|p| p.p99_e2el_ms.as_ref())),
            ("output_throughput", p.map(|p| &p.output_throughput)),
            ("request_throughput", p.map(|p| &p.request_throughput)),
            ("goodput_rps", p.map(|p| &p.goodput_rps)),
        ];
        for (name, s) in stats {
            put(name, json!(s.and_then(|s| s.median)));
            put(&format!("{name}_min"), json!(s.and_then(|s| s.min)));
            put(&format!("{name}_max"), json!(s.and_then(|s| s.max)));
        }
        let med = |s: Option<&Stat>| json!(s.and_then(|s| s.median));
        put("offered_rate", json!(p.and_then(|p| p.offered_rate)));
        put(
            "scheduled_rate",
            med(p.and_then(|p| p.scheduled_rate.as_ref())),
        );
        put(
            "achieved_rate",
            med(p.and_then(|p| p.achieved_rate.as_ref())),
        );
        put(
            "p99_send_lag_ms",
            med(p.and_then(|p| p.p99_send_lag_ms.as_ref())),
        );
        put(
            "mean_input_tokens",
            med(p.and_then(|p| p.mean_input_tokens.as_ref())),
        );
        put(
            "mean_output_tokens",
            med(p.and_then(|p| p.mean_output_tokens.as_ref())),
        );
        put("kv_pool_tokens", json!(self.result.kv_pool_tokens));
        let gpu = p.and_then(|p| p.gpu.as_ref());
        put("gpu_median_sm_mhz", med(gpu.map(|g| &g.median_sm_mhz)));
        put(
            "gpu_max_sm_clock_mhz",
            json!(gpu.and_then(|g| g.max_sm_clock_mhz)),
        );
        put("gpu_max_temp_c", json!(gpu.and_then(|g| g.max_temp_c)));
        put(
            "gpu_thermal_share",
            json!(gpu.and_then(|g| g.thermal_share)),
        );
        put(
            "spec_acceptance_rate",
            json!(p
                .and_then(|p| p.spec_decode.as_ref())
                .and_then(|s| s.acceptance_rate)),
        );
        put("engine_error", json!(self.engine_error()));
        let att = p.and_then(|p| p.attainment.as_ref());
        let check = p.and_then(|p| p.slo_check.as_ref());
        put("attainment", json!(check.and_then(|c| c.attainment)));
        put("attainment_ci_low", json!(check.and_then(|c| c.ci_low)));
        put("attainment_ci_high", json!(check.and_then(|c| c.ci_high)));
        put("attainment_trial_min", json!(att.and_then(|s| s.min)));
        put("attainment_trial_max", json!(att.and_then(|s| s.max)));
        put("meets_slo", json!(check.map(|c| c.meets)));
        f
    }
}

/// The column names of [`Row::fields`], for a header when there are no rows.
pub fn field_names() -> Vec<String> {
    let engine = EngineResult {
        kv_pool_tokens: None,
        points: Vec::new(),
        kv_pool_source: None,
        error: None,
        restarts: Vec::new(),
        extra: Default::default(),
    };
    let row = Row {
        engine: "",
        result: &engine,
        point: None,
        expected_trials: None,
    };
    row.fields().into_iter().map(|(k, _)| k).collect()
}
