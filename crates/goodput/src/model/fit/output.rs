//! The fit's evidence and output: residuals per measured point (the fitted model
//! rerun in virtual time on the measured requests), the printed summary, the TOML
//! file, and reading a report to fit.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use goodput_sim::model::virtual_time::{simulate, Arrivals};
use goodput_sim::model::RequestSpec;
use goodput_sim::SimConfig;

use super::solve::Status;
use super::{Fit, FitContext, FITTED_FROM_HEADER};
use crate::drive::record::{read_records_where, records_path, RequestRecord};
use crate::measure::metrics::trial_metrics;
use crate::render::text::num;

/// What a report tells the fit about engine `name` besides its records.
pub fn report_context(report: &report::Report, name: &str, source: String) -> FitContext {
    let result = &report.load[name];
    let spec: Vec<f64> = result
        .points
        .iter()
        .filter_map(|p| p.spec_decode.as_ref().and_then(|s| s.acceptance_rate))
        .collect();
    let env = report
        .environment
        .as_ref()
        .and_then(|e| e.engines.get(name));
    let limits = env.map(|e| e.limits.clone()).unwrap_or_default();
    let slots = limits
        .get("max_num_seqs")
        .map(|l| (l.value.min(65_536) as u32, l.source.clone()))
        .or_else(|| {
            env.and_then(|e| e.command.as_deref())
                .and_then(super::slots_from_command)
        });
    FitContext {
        engine: name.to_string(),
        source,
        kv_pool_tokens: result.kv_pool_tokens,
        rate_mode: report
            .run
            .as_ref()
            .is_some_and(|r| r.load_mode == report::LoadMode::Rate),
        spec_acceptance: (!spec.is_empty()).then(|| spec.iter().sum::<f64>() / spec.len() as f64),
        no_drafts_counted: !result.points.is_empty()
            && result.points.iter().all(|p| {
                p.server.is_some() && p.spec_decode.as_ref().is_none_or(|s| s.draft_tokens == 0.0)
            }),
        throttled: result.points.iter().any(|p| {
            p.gpu
                .as_ref()
                .and_then(|g| g.thermal_share)
                .is_some_and(|t| t > 0.1)
        }),
        max_num_seqs: slots,
        limits,
    }
}

/// The metrics a residual compares, in order.
pub const METRICS: [&str; 3] = ["median TTFT ms", "median TPOT ms", "output tok/s"];

/// One measured point against the fitted model: per metric, the median over trials.
#[derive(Debug, Clone, PartialEq)]
pub struct Residual {
    /// Load level.
    pub x: f64,
    /// Trials at the point.
    pub trials: usize,
    /// Measured, in [`METRICS`] order.
    pub measured: [Option<f64>; 3],
    /// The fitted model on the same requests.
    pub fitted: [Option<f64>; 3],
}

impl Residual {
    /// Relative error of metric `i` (fitted / measured − 1), when both are known.
    pub fn error(&self, i: usize) -> Option<f64> {
        match (self.measured[i], self.fitted[i]) {
            (Some(m), Some(f)) if m.abs() > 0.0 && f.is_finite() => Some(f / m - 1.0),
            _ => None,
        }
    }
}

/// The three compared metrics of one trial.
type Three = [Option<f64>; 3];

fn three(m: &crate::measure::metrics::TrialMetrics) -> Three {
    [m.median_ttft_ms, m.median_tpot_ms, m.output_throughput]
}

/// The median of `v` (linear interpolation), `None` when empty.
pub(crate) fn median_of(v: Vec<f64>) -> Option<f64> {
    crate::stats::median(v)
}

/// The fitted model on one measured trial's requests (lengths, and in rate mode
/// the send schedule), as records.
fn replay(records: &[&RequestRecord], config: &SimConfig, rate_mode: bool) -> Vec<RequestRecord> {
    let mut recs: Vec<&RequestRecord> = records.to_vec();
    recs.sort_by_key(|r| r.index);
    let known: Vec<u64> = recs.iter().filter_map(|r| r.prompt_tokens).collect();
    let mean_prompt = if known.is_empty() {
        1
    } else {
        known.iter().sum::<u64>() / known.len() as u64
    };
    let specs: Vec<RequestSpec> = recs
        .iter()
        .map(|r| RequestSpec {
            prompt_tokens: r.prompt_tokens.unwrap_or(mean_prompt).clamp(1, 1 << 24) as u32,
            output_tokens: r
                .completion_tokens
                .map(|c| c.min(1 << 24) as u32)
                .or(r.requested_tokens)
                .unwrap_or(1)
                .max(1),
            endless: false,
            seed: u64::from(r.index),
        })
        .collect();
    let x = recs.first().map_or(1.0, |r| r.x);
    let first = recs.iter().map(|r| r.scheduled).min().unwrap_or(0);
    let arrivals = if rate_mode {
        Arrivals::Open {
            offsets_s: recs
                .iter()
                .map(|r| (r.scheduled - first) as f64 / 1e9)
                .collect(),
            max_concurrency: None,
        }
    } else {
        Arrivals::Closed {
            concurrency: x.round().max(1.0) as u32,
        }
    };
    let measured_s = recs.iter().filter_map(|r| r.done).max().unwrap_or(0) as f64 / 1e9;
    let out = simulate(
        config,
        &arrivals,
        &specs,
        crate::drive::record::virtual_time::CLIENT,
        20.0 * measured_s + 60.0,
    );
    out.iter()
        .zip(&specs)
        .enumerate()
        .map(|(i, (v, s))| {
            crate::drive::record::virtual_time::to_record(
                "fit",
                x,
                0,
                i as u32,
                v,
                s,
                f64::INFINITY,
            )
        })
        .collect()
}

/// Residuals per load level (trials keyed by x, trial, attempt).
pub fn residuals(
    trials: &BTreeMap<(u64, u32, u32), Vec<&RequestRecord>>,
    config: &SimConfig,
    rate_mode: bool,
) -> Vec<Residual> {
    let slo = report::Slo::default();
    let mut by_x: BTreeMap<u64, Vec<(Three, Three)>> = BTreeMap::new();
    for ((x, _, _), recs) in trials {
        let owned: Vec<RequestRecord> = recs.iter().map(|r| (*r).clone()).collect();
        let measured = three(&trial_metrics(&owned, &slo));
        let fitted = three(&trial_metrics(&replay(recs, config, rate_mode), &slo));
        by_x.entry(*x).or_default().push((measured, fitted));
    }
    let mut out: Vec<Residual> = by_x
        .into_iter()
        .map(|(x, v)| {
            let pick = |side: usize, i: usize| {
                median_of(
                    v.iter()
                        .filter_map(|p| if side == 0 { p.0[i] } else { p.1[i] })
                        .collect(),
                )
            };
            Residual {
                x: f64::from_bits(x),
                trials: v.len(),
                measured: std::array::from_fn(|i| pick(0, i)),
                fitted: std::array::from_fn(|i| pick(1, i)),
            }
        })
        .collect();
    out.sort_by(|a, b| a.x.total_cmp(&b.x));
    out
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), num)
}

/// A relative error as a signed percentage.
pub fn pct(e: Option<f64>) -> String {
    e.map_or("-".into(), |e| format!("{:+.1}%", e * 100.0))
}

/// What `goodput fit` prints: parameters, residuals per point, notes.
pub fn summary(f: &Fit) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Fitted engine `{}` from {} ({} steps reconstructed; step-time residual scale {} ms)",
        f.engine,
        f.source,
        f.steps,
        num(f.step_residual_ms)
    );
    let _ = writeln!(s, "\n  {:<36} {:>14}  how", "parameter", "value");
    for p in &f.params {
        let how = match &p.status {
            Status::Fitted { stderr } if *stderr > 0.0 && stderr.is_finite() => {
                format!("fitted, ± {}", num(*stderr))
            }
            Status::Fitted { .. } => "from the data".into(),
            Status::AtZero => "fitted below 0: held at 0".into(),
            Status::Prior(why) => format!("NOT IDENTIFIABLE, held at the prior: {why}"),
            Status::Known(from) => format!("known: {from}"),
        };
        let _ = writeln!(s, "  {:<36} {:>14}  {how}", p.name, num(p.value));
    }
    let _ = writeln!(
        s,
        "\nResiduals per point (the fitted model in virtual time on the measured requests):"
    );
    let _ = write!(s, "  {:>6} {:>6}", "x", "trials");
    for m in METRICS {
        let _ = write!(s, "  {:>28}", format!("{m}: measured/fitted/err"));
    }
    s.push('\n');
    for r in &f.residuals {
        let _ = write!(s, "  {:>6} {:>6}", num(r.x), r.trials);
        for i in 0..3 {
            let cell = format!(
                "{} / {} / {}",
                opt(r.measured[i]),
                opt(r.fitted[i]),
                pct(r.error(i))
            );
            let _ = write!(s, "  {cell:>28}");
        }
        s.push('\n');
    }
    for n in &f.notes {
        let _ = writeln!(s, "Note: {n}");
    }
    s
}

/// The fitted configuration as a `goodput sim --config` file, its evidence as comments.
pub fn toml_text(f: &Fit) -> Result<String, String> {
    let body = f.config.to_toml_string().map_err(|e| e.to_string())?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# goodput fit: the simulator's engine model fitted to engine `{}`.",
        f.engine
    );
    let _ = writeln!(s, "{FITTED_FROM_HEADER}{} (engine {})", f.source, f.engine);
    s.push_str("# Serve it: goodput sim --config THIS; use it as an engine: kind = \"sim\", args = [\"--config\", \"THIS\"];\n");
    s.push_str("# predict with it: goodput run PROFILE --predict THIS.\n");
    for line in summary(f).lines() {
        let _ = writeln!(s, "#   {line}");
    }
    s.push('\n');
    s.push_str(&body);
    Ok(s)
}

/// Reads a report and its records and fits `engine` (the first engine when none is
/// named). Errors name the file and what is missing.
pub fn fit_report(path: &Path, engine: Option<&str>) -> anyhow::Result<Fit> {
    let usage = |m: String| anyhow::Error::from(crate::UsageError(m));
    let report = report::read_report(path).map_err(|e| usage(e.to_string()))?;
    let name = match engine {
        Some(n) if report.load.contains_key(n) => n.to_string(),
        Some(n) => {
            let known: Vec<&str> = report.load.keys().map(String::as_str).collect();
            return Err(usage(format!(
                "{}: no engine `{n}` (engines: {})",
                path.display(),
                known.join(", ")
            )));
        }
        None => report
            .load
            .keys()
            .next()
            .cloned()
            .ok_or_else(|| usage(format!("{}: the report has no engine", path.display())))?,
    };
    let rec_path = records_path(path);
    // Only the fitted engine's records are kept.
    let records = read_records_where(&rec_path, |r| r.engine == name).map_err(|e| {
        usage(format!(
            "{e} (goodput fit needs the raw records written beside the report)"
        ))
    })?;
    let ctx = report_context(&report, &name, path.display().to_string());
    super::fit(&records, &ctx).map_err(usage)
}
