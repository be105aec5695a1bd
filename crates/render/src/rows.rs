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
    /// The point's SLO judgement (stored, or derived for an older report).
    pub judgement: Option<report::Judgement>,
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
                judgement: None,
            });
        }
        for p in &result.points {
            out.push(Row {
                engine,
                result,
                point: Some(p),
                expected_trials: expected_trials(report, p),
                judgement: report::slo::point_judgement(report, p),
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
        let mut f = Fields(Vec::new());
        let p = self.point;
        self.put_counts(&mut f);
        put_stats(&mut f, p);
        put_load(&mut f, p);
        f.put("kv_pool_tokens", json!(self.result.kv_pool_tokens));
        put_gpu(&mut f, p);
        f.put(
            "spec_acceptance_rate",
            json!(p
                .and_then(|p| p.spec_decode.as_ref())
                .and_then(|s| s.acceptance_rate)),
        );
        f.put("engine_error", json!(self.engine_error()));
        put_slo(&mut f, p, self.judgement);
        f.0
    }

    /// Which row, the trials and the request counts.
    fn put_counts(&self, f: &mut Fields) {
        let p = self.point;
        f.put("engine", json!(self.engine));
        f.put("x", json!(p.map(|p| p.x)));
        f.put(
            "achieved_concurrency",
            json!(p.and_then(|p| p.achieved_concurrency.as_ref()?.median)),
        );
        f.put("status", json!(p.and_then(|p| p.status)));
        f.put("trials", json!(p.map(trials_with_results)));
        f.put("expected_trials", json!(self.expected_trials));
        f.put("completed", json!(p.map(|_| self.completed())));
        f.put("failed", json!(self.failed()));
        f.put("good", json!(self.good()));
        f.put(
            "estimated_tokens",
            json!(p.and_then(|p| p.estimated_tokens)),
        );
    }
}

/// The export fields of a row, collected in column order.
struct Fields(Vec<(String, Value)>);

impl Fields {
    fn put(&mut self, k: &str, v: Value) {
        self.0.push((k.to_string(), v));
    }
}

/// The median over trials of a per-trial summary.
fn med(s: Option<&Stat>) -> Value {
    json!(s.and_then(|s| s.median))
}

/// Latencies and throughputs: the median over trials, and the trials' min and max.
fn put_stats(f: &mut Fields, p: Option<&Point>) {
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
        f.put(name, med(s));
        f.put(&format!("{name}_min"), json!(s.and_then(|s| s.min)));
        f.put(&format!("{name}_max"), json!(s.and_then(|s| s.max)));
    }
}

/// Where a point keeps one of its optional per-trial summaries.
type StatOf = fn(&Point) -> Option<&Stat>;

/// The load as offered, scheduled and achieved, and the requests' mean lengths.
fn put_load(f: &mut Fields, p: Option<&Point>) {
    f.put("offered_rate", json!(p.and_then(|p| p.offered_rate)));
    let medians: [(&str, StatOf); 5] = [
        ("scheduled_rate", |p| p.scheduled_rate.as_ref()),
        ("achieved_rate", |p| p.achieved_rate.as_ref()),
        ("p99_send_lag_ms", |p| p.p99_send_lag_ms.as_ref()),
        ("mean_input_tokens", |p| p.mean_input_tokens.as_ref()),
        ("mean_output_tokens", |p| p.mean_output_tokens.as_ref()),
    ];
    for (name, get) in medians {
        f.put(name, med(p.and_then(get)));
    }
}

/// The GPU's clocks and temperature during the point's trials.
fn put_gpu(f: &mut Fields, p: Option<&Point>) {
    let gpu = p.and_then(|p| p.gpu.as_ref());
    f.put("gpu_median_sm_mhz", med(gpu.map(|g| &g.median_sm_mhz)));
    f.put(
        "gpu_max_sm_clock_mhz",
        json!(gpu.and_then(|g| g.max_sm_clock_mhz)),
    );
    f.put("gpu_max_temp_c", json!(gpu.and_then(|g| g.max_temp_c)));
    f.put(
        "gpu_thermal_share",
        json!(gpu.and_then(|g| g.thermal_share)),
    );
}

/// The SLO attainment, pooled (with its interval) and per trial, and the verdict.
fn put_slo(f: &mut Fields, p: Option<&Point>, judgement: Option<report::Judgement>) {
    let att = p.and_then(|p| p.attainment.as_ref());
    let check = p.and_then(|p| p.slo_check.as_ref());
    f.put("attainment", json!(check.and_then(|c| c.attainment)));
    f.put("attainment_ci_low", json!(check.and_then(|c| c.ci_low)));
    f.put("attainment_ci_high", json!(check.and_then(|c| c.ci_high)));
    f.put("attainment_trial_min", json!(att.and_then(|s| s.min)));
    f.put("attainment_trial_max", json!(att.and_then(|s| s.max)));
    f.put("meets_slo", json!(check.map(|c| c.meets)));
    f.put("slo_judgement", json!(judgement.map(|j| j.as_str())));
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
        judgement: None,
    };
    row.fields().into_iter().map(|(k, _)| k).collect()
}
