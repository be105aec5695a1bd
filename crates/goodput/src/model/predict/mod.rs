//! Prediction: a plan's load levels (or its capacity search) run on the simulator's
//! engine model in virtual time (`goodput_sim::model::virtual_time`: no sockets, no
//! sleeping), each request turned into an ordinary [`RequestRecord`], every metric
//! derived by [`crate::measure::metrics`] and the report built by the sweep's own
//! [`Sweep::report`], so `show`, `compare` and the HTML read it like any other.
//! The report says it is predicted (`run.predicted`), and so does the verdict.
//!
//! What the model is told about each request: its prompt length (the words of the
//! prompt goodput would send, one token per word: the same length a calibrated run
//! asks for) and its output length (`max_tokens`; a JSONL prompt without one is
//! given [`DEFAULT_OUTPUT_TOKENS`]). Warm-up requests are not simulated: each trial
//! starts on an idle engine with a cool GPU.
//!
//! The model's GPU is sampled every `telemetry.interval_ms` of virtual time and its
//! power integrated into the trial's energy ([`crate::measure::telemetry::energy`], source
//! `sim`), so a prediction has energy and cost per token like a measured run (the
//! samples themselves are not kept).

pub mod command;
pub mod coverage;
pub mod draw;
pub mod interval;
pub mod search;
pub mod simulated;
pub mod validate;

use std::path::{Path, PathBuf};

use anyhow::Context;
use goodput_sim::model::virtual_time::{simulate_traced, Arrivals};
use goodput_sim::model::GpuState;
use goodput_sim::model::RequestSpec;
use goodput_sim::SimConfig;
use report::{Notice, NoticeKind, Predicted, Report, RunInfo, RunStatus, TrialInfo};

use crate::define::plan::Plan;
use crate::define::profile::LoadMode;
use crate::define::requests::Builder;
use crate::drive::record::{records_path, RequestRecord};
use crate::measure::metrics::{trial_metrics, trial_slo};
use crate::sweep::schedule::Next;
use crate::sweep::trial_loop::{drive, without_waiting, AfterDeath, At, Backend, Ran};
use crate::sweep::{PointKey, Sweep, TrialState};

/// Output tokens given to a JSONL prompt that names no `max_tokens`.
pub const DEFAULT_OUTPUT_TOKENS: u32 = 128;
use crate::drive::record::virtual_time::to_record;
pub use crate::drive::record::virtual_time::CLIENT;

/// What `run --predict` writes and how.
#[derive(Debug, Clone)]
pub struct PredictOptions {
    /// The report file.
    pub output: PathBuf,
    /// Overwrite an existing report (and its requests file).
    pub force: bool,
    /// Write `<report>.html` beside it.
    pub html: bool,
}

/// A fitted (or hand-written) engine configuration and where it came from.
#[derive(Debug, Clone)]
pub struct Model {
    /// The configuration.
    pub config: SimConfig,
    /// The file it was read from.
    pub path: String,
    /// The report it was fitted from, when the file's header says so.
    pub fitted_from: Option<String>,
}

impl Model {
    /// Reads an engine configuration (an ordinary `goodput sim --config` file).
    pub fn load(path: &Path) -> anyhow::Result<Model> {
        let config =
            SimConfig::load(path).map_err(|e| crate::UsageError(format!("--predict: {e}")))?;
        if config.schedule.is_some() {
            return Err(crate::UsageError(format!(
                "--predict: {} is in fixed-schedule mode (`schedule`): it has no engine model to run",
                path.display()
            ))
            .into());
        }
        let text = crate::files::read_text(path).unwrap_or_default();
        let fitted_from = text
            .lines()
            .find_map(|l| l.strip_prefix(crate::model::fit::FITTED_FROM_HEADER))
            .map(|s| s.trim().to_string());
        Ok(Model {
            config,
            path: path.display().to_string(),
            fitted_from,
        })
    }
}

/// Predicts every engine of the plan with `model`: its load levels, or its capacity
/// search. Writes the report and its requests file; returns the report.
pub fn predict(plan: &Plan, model: &Model, opts: &PredictOptions) -> anyhow::Result<Report> {
    if let Some(name) = plan
        .engines
        .iter()
        .find(|(_, e)| e.api.embeds())
        .map(|(n, _)| n)
    {
        return Err(crate::UsageError(format!(
            "engine `{name}` uses api = \"embeddings\": the engine model predicts generation \
             (its steps of tokens), not embeddings; measure it with `goodput run`"
        ))
        .into());
    }
    let rec_path = records_path(&opts.output);
    for p in [&opts.output, &rec_path] {
        if p.exists() && !opts.force {
            return Err(crate::UsageError(format!(
                "{} exists: a prediction does not overwrite it; pass --force or -o another file",
                p.display()
            ))
            .into());
        }
    }
    let Virtual {
        sweep,
        records,
        notices,
        ..
    } = predict_all(plan, &model.config);
    let mut report = finish_report(plan, model, &sweep);
    interval::annotate(plan, &model.config, &mut report);
    if let Some(run) = report.run.as_mut() {
        run.requests_file = rec_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        run.notices.extend(notices);
    }
    let text = crate::redact::jsonl(&records)?;
    crate::redact::write_file(&rec_path, &text)
        .with_context(|| format!("cannot write {}", rec_path.display()))?;
    crate::redact::write_report(&opts.output, &report)?;
    if opts.html {
        let html = opts.output.with_extension("html");
        crate::redact::write_html(&html, &report)?;
    }
    Ok(report)
}

/// The sweep of every engine on the model, and every request record, in virtual time
/// (for benchmarks and `compare`'s simulated A/B; [`predict`] also keeps the
/// loop's notices, which a model that never fails does not give).
pub fn predict_sweep(plan: &Plan, config: &SimConfig) -> (Sweep, Vec<RequestRecord>) {
    let model = predict_all(plan, config);
    (model.sweep, model.records)
}

/// Every engine of the plan driven through the trial loop on the model.
fn predict_all<'a>(plan: &'a Plan, config: &'a SimConfig) -> Virtual<'a> {
    let mut model = Virtual {
        plan,
        config,
        sweep: Sweep::default(),
        records: Vec::new(),
        notices: Vec::new(),
    };
    for name in plan.engines.keys() {
        let st = model.sweep.engine(name);
        st.kv_pool_tokens = Some(config.kv_capacity_tokens());
        st.kv_pool_source = Some("predicted".into());
        // The loop a measured run drives, over the model: its load levels, or its
        // capacity search, each with the trials a measured run would take.
        match without_waiting(drive(plan, name, None, &mut model)) {
            Some(Ok(())) => {}
            Some(Err(e)) => model.notices.push(Notice::engine(
                NoticeKind::Predicted,
                name,
                format!("{name}: prediction stopped: {e:#}"),
            )),
            None => model.notices.push(Notice::engine(
                NoticeKind::Predicted,
                name,
                format!(
                    "{name}: prediction stopped: its trial loop waited, which the model never does"
                ),
            )),
        }
    }
    model
}

/// The trial loop's backend in virtual time: each trial on the engine model
/// (`trial_traced`), kept in the sweep with its records.
struct Virtual<'a> {
    plan: &'a Plan,
    config: &'a SimConfig,
    sweep: Sweep,
    records: Vec<RequestRecord>,
    notices: Vec<Notice>,
}

impl Backend for Virtual<'_> {
    fn sweep(&self) -> &Sweep {
        &self.sweep
    }

    fn stopped(&self) -> bool {
        false
    }

    fn notice(&mut self, notice: Notice) {
        self.notices.push(notice);
    }

    async fn trial(&mut self, at: &At<'_>) -> anyhow::Result<Ran> {
        let recs = keep_trial(self.plan, self.config, &mut self.sweep, at);
        self.records.extend(recs);
        Ok(Ran::Kept)
    }

    async fn died(&mut self, _: &At<'_>, _: String) -> anyhow::Result<AfterDeath> {
        // The model does not die.
        Ok(AfterDeath::Over)
    }
}

/// The report of a predicted sweep, marked predicted.
pub fn finish_report(plan: &Plan, model: &Model, sweep: &Sweep) -> Report {
    let mut report = sweep.report(plan);
    report.capacity = crate::sweep::capacities(plan, sweep, &report);
    let complete = report.load.values().all(|e| {
        e.points
            .iter()
            .all(|p| p.status == Some(RunStatus::Complete))
    });
    report.run = Some(RunInfo {
        status: if complete {
            RunStatus::Complete
        } else {
            RunStatus::Partial
        },
        predicted: Some(Predicted {
            engine_config: model.path.clone(),
            fitted_from: model.fitted_from.clone(),
            method: "virtual time: the simulator's engine model, no sockets, no sleeping".into(),
        }),
        // Virtual time: no engine ran at a --time-scale, so its notice does not apply.
        notices: Vec::new(),
        ..crate::sweep::plan_info(plan)
    });
    report
}

/// The request builder a real run would use, without an engine to ask.
fn builder(plan: &Plan) -> Builder {
    Builder {
        workload: plan.workload.clone(),
        model: String::new(),
        api: crate::define::profile::Api::Completions,
        tokens_per_word: 1.0,
        chat_fields: Default::default(),
        // Predicted prompts meet no cache that a salt would change.
        salt: None,
        images: None,
    }
}

/// The model's view of a trial's requests: the same prompts a real run sends.
pub fn request_specs(plan: &Plan, sample: u64) -> Vec<RequestSpec> {
    builder(plan)
        .build(plan.requests_per_trial, plan.seed, sample)
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let body: serde_json::Value = serde_json::from_slice(&p.body).unwrap_or_default();
            let words = body["prompt"]
                .as_str()
                .map_or(1, |s| s.split_whitespace().count());
            RequestSpec {
                prompt_tokens: p.asked.input_tokens.unwrap_or(words as u32).max(1),
                output_tokens: p.asked.max_tokens.unwrap_or(DEFAULT_OUTPUT_TOKENS).max(1),
                endless: false,
                seed: plan.seed ^ sample.rotate_left(17) ^ (i as u64).wrapping_mul(0x9E37_79B9),
            }
        })
        .collect()
}

/// Runs trial `t` at load `x` (the `pi`-th point's request stream) on the model and
/// adds it to the sweep; returns its records.
pub(crate) fn run_trial(
    plan: &Plan,
    config: &SimConfig,
    sweep: &mut Sweep,
    engine: &str,
    pi: u64,
    x: f64,
    t: u32,
) -> Vec<RequestRecord> {
    let at = At::new(engine, Next { level: pi, x, t }, 0);
    keep_trial(plan, config, sweep, &at)
}

/// Trial `at` on the model, kept in the sweep; returns its records.
fn keep_trial(
    plan: &Plan,
    config: &SimConfig,
    sweep: &mut Sweep,
    at: &At<'_>,
) -> Vec<RequestRecord> {
    let (records, energy) = trial_at(plan, config, at);
    let metrics = trial_metrics(&records, &plan.slo);
    let info = TrialInfo {
        index: at.t,
        status: RunStatus::Complete,
        duration_s: metrics.duration_s,
        completed: metrics.completed,
        failed: metrics.failed,
        good: metrics.good,
        energy,
        ..Default::default()
    };
    let state = TrialState {
        slo: trial_slo(&records, &plan.slo),
        metrics,
        info,
    };
    sweep.add_trial(at.name, PointKey::new(plan.mode, at.x), state);
    records
}

/// The inputs of trial `t` at load `x` (the `pi`-th point's request stream).
pub(crate) fn trial_inputs(plan: &Plan, engine: &str, pi: u64, x: f64, t: u32) -> TrialInputs {
    TrialInputs::new(plan, &At::new(engine, Next { level: pi, x, t }, 0))
}

/// The records of trial `at` on the model, with the energy the model's GPU used
/// over it.
fn trial_at(
    plan: &Plan,
    config: &SimConfig,
    at: &At<'_>,
) -> (Vec<RequestRecord>, Option<report::TrialEnergy>) {
    let inputs = TrialInputs::new(plan, at);
    let every_s = plan.telemetry.interval_ms.max(1) as f64 / 1000.0;
    let (records, gpu) = inputs.run(config, at.name, at.t, Some(every_s));
    (records, model_energy(&gpu))
}

/// What the model is given for one trial, built once: its requests, their
/// arrivals and the horizon. The intervals' draws run many configurations on
/// the same inputs ([`interval`]).
pub(crate) struct TrialInputs {
    specs: Vec<RequestSpec>,
    arrivals: Arrivals,
    horizon_s: f64,
    timeout_s: f64,
    x: f64,
    sample: u64,
}

impl TrialInputs {
    /// The inputs of trial `at` (its requests and their arrival times).
    pub(crate) fn new(plan: &Plan, at: &At<'_>) -> TrialInputs {
        let x = at.x;
        let sample = at.lane;
        let specs = request_specs(plan, sample);
        let arrivals = match plan.mode {
            LoadMode::Concurrency => Arrivals::Closed {
                concurrency: x.round().max(1.0) as u32,
            },
            LoadMode::Rate => Arrivals::Open {
                offsets_s: crate::drive::load::arrival_offsets(
                    x,
                    plan.burstiness,
                    specs.len(),
                    plan.seed ^ sample,
                )
                .into_iter()
                .map(|ns| ns as f64 / 1e9)
                .collect(),
                max_concurrency: plan.max_concurrency,
            },
            // The trace's own arrival times at speedup `x`, as a real run sends them.
            LoadMode::Trace => Arrivals::Open {
                offsets_s: builder(plan)
                    .trace_offsets(x)
                    .into_iter()
                    .map(|ns| ns as f64 / 1e9)
                    .collect(),
                max_concurrency: plan.max_concurrency,
            },
        };
        let timeout_s = plan.request_timeout.as_secs_f64();
        let horizon_s = plan
            .trial_timeout
            .map_or(timeout_s * f64::from(plan.requests_per_trial.max(1)), |d| {
                d.as_secs_f64()
            });
        TrialInputs {
            specs,
            arrivals,
            horizon_s,
            timeout_s,
            x,
            sample,
        }
    }

    /// The trial on `config` (engine `engine`, trial index `t`): its records and,
    /// when `every_s` is given, the model GPU's samples.
    pub(crate) fn run(
        &self,
        config: &SimConfig,
        engine: &str,
        t: u32,
        every_s: Option<f64>,
    ) -> (Vec<RequestRecord>, Vec<(f64, GpuState)>) {
        // With seeded noise, each trial draws its own (as a real engine's trials do).
        let trial_config;
        let config = match config.jitter {
            Some(_) => {
                trial_config = SimConfig {
                    seed: config.seed ^ self.sample.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    ..config.clone()
                };
                &trial_config
            }
            None => config,
        };
        let traced = simulate_traced(
            config,
            &self.arrivals,
            &self.specs,
            CLIENT,
            self.horizon_s,
            every_s,
        );
        let records = traced
            .requests
            .iter()
            .zip(&self.specs)
            .enumerate()
            .map(|(i, (v, s))| to_record(engine, self.x, t, i as u32, v, s, self.timeout_s))
            .collect();
        (records, traced.gpu)
    }
}

/// The trial's energy from the model GPU's samples (the power integral).
fn model_energy(samples: &[(f64, GpuState)]) -> Option<report::TrialEnergy> {
    let mut meter = crate::measure::telemetry::energy::EnergyMeter::default();
    for (t, g) in samples {
        let reading = crate::measure::telemetry::GpuReading {
            power_w: Some(g.power_w),
            util_pct: Some(g.utilization_pct),
            ..Default::default()
        };
        meter.add(*t, &[reading]);
    }
    meter.finish("sim")
}

#[cfg(test)]
mod tests;
