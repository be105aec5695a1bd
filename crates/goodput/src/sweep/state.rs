//! The sweep's state: finished trials per engine and load level, turned into a
//! report after every trial, and rebuilt from the files on resume.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use report::{
    EngineFailure, EngineResult, Judgement, Report, RunStatus, SpecDecode, TrialInfo, TrialsStopped,
};

use crate::define::plan::Plan;
use crate::define::profile::LoadMode;
use crate::drive::record::RequestRecord;
use crate::judge::search::trials::{plan_looks, Settled};
use crate::judge::search::Obs;
use crate::measure::metrics::{
    point_slo_at, point_summary, trial_metrics, trial_slo, TrialMetrics, TrialSlo,
};
use crate::measure::telemetry;

/// One finished (or failed) trial.
#[derive(Debug, Clone)]
pub struct TrialState {
    /// The trial's metrics, derived from its records.
    pub metrics: TrialMetrics,
    /// Details for the report (its GPU samples included).
    pub info: TrialInfo,
    /// What the trial says about the SLO (attainment, misses).
    pub slo: TrialSlo,
}

/// Everything measured for one engine.
#[derive(Debug, Clone, Default)]
pub struct EngineState {
    /// KV pool and where it came from.
    pub kv_pool_tokens: Option<u64>,
    /// Source of the KV pool figure.
    pub kv_pool_source: Option<String>,
    /// Why the engine failed, if it did.
    pub error: Option<EngineFailure>,
    /// Deaths after which it was restarted.
    pub restarts: Vec<EngineFailure>,
    /// Telemetry source name (`nvml`, `sim`...), when sampling worked.
    pub telemetry_source: Option<String>,
    /// Trials by load point then trial index.
    pub points: BTreeMap<PointKey, BTreeMap<u32, TrialState>>,
}

/// The whole sweep.
#[derive(Debug, Clone, Default)]
pub struct Sweep {
    /// Engines in the order they ran.
    pub engines: IndexMap<String, EngineState>,
}

/// A load point: the load mode and x. Concurrency 4 and rate 4 are different points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PointKey {
    /// Closed or open loop.
    pub mode: LoadMode,
    /// `x.to_bits()` (x is positive and finite, so bit order is numeric order).
    x_bits: u64,
}

impl PointKey {
    /// The point of `x` in `mode`.
    pub fn new(mode: LoadMode, x: f64) -> PointKey {
        PointKey {
            mode,
            x_bits: x.to_bits(),
        }
    }

    /// The load level.
    pub fn x(&self) -> f64 {
        f64::from_bits(self.x_bits)
    }
}

impl Sweep {
    /// The state of an engine, created on first use.
    pub fn engine(&mut self, name: &str) -> &mut EngineState {
        self.engines.entry(name.to_string()).or_default()
    }

    /// Trials that finished completely, over every engine and point.
    pub fn complete_trials(&self) -> usize {
        self.engines
            .values()
            .flat_map(|e| e.points.values())
            .flat_map(|p| p.values())
            .filter(|s| s.info.status == RunStatus::Complete)
            .count()
    }

    /// Trials of `engine` that finished completely, over every point.
    pub fn complete_trials_of(&self, engine: &str) -> usize {
        self.engines
            .get(engine)
            .into_iter()
            .flat_map(|e| e.points.values())
            .flat_map(|p| p.values())
            .filter(|s| s.info.status == RunStatus::Complete)
            .count()
    }

    /// True when trial `t` at `point` of `engine` finished completely.
    pub fn is_complete(&self, engine: &str, point: PointKey, t: u32) -> bool {
        self.engines
            .get(engine)
            .and_then(|e| e.points.get(&point))
            .and_then(|p| p.get(&t))
            .is_some_and(|s| s.info.status == RunStatus::Complete)
    }

    /// True when every trial `engine` is to run is complete (for a search: when
    /// the search over its measured points is over).
    pub fn engine_done(&self, plan: &Plan, engine: &str) -> bool {
        super::schedule::next_trial(plan, self, engine, None).is_none()
    }

    /// What a search has measured on `engine`: one observation per load level
    /// (complete trials only), judged as the report judges them.
    pub fn observations(&self, plan: &Plan, engine: &str) -> Vec<crate::judge::search::Obs> {
        let Some(e) = self.engines.get(engine) else {
            return Vec::new();
        };
        e.points
            .iter()
            .filter(|(k, _)| k.mode == plan.mode)
            .map(|(k, trials)| observation(plan, k.x(), trials).0)
            .collect()
    }

    /// What the trial rule reads of `engine`'s point `x`: its complete trials,
    /// whether its SLO judgement is decisive, and its key metrics' width.
    pub fn settled(&self, plan: &Plan, engine: &str, x: f64) -> Settled {
        let trials = self
            .engines
            .get(engine)
            .and_then(|e| e.points.get(&PointKey::new(plan.mode, x)));
        match trials {
            Some(t) => observation(plan, x, t).1,
            None => Settled {
                trials: 0,
                decisive: false,
                width: None,
            },
        }
    }

    /// Records a finished trial.
    pub fn add_trial(&mut self, engine: &str, point: PointKey, state: TrialState) {
        self.engine(engine)
            .points
            .entry(point)
            .or_default()
            .insert(state.info.index, state);
    }

    /// The report as of now.
    pub fn report(&self, plan: &Plan) -> Report {
        let mut load = IndexMap::new();
        for (name, e) in &self.engines {
            let mut points = Vec::new();
            for (k, trials) in &e.points {
                let x = k.x();
                let done: Vec<&TrialState> = trials
                    .values()
                    .filter(|t| t.info.status == RunStatus::Complete)
                    .collect();
                let metrics: Vec<TrialMetrics> = done.iter().map(|t| t.metrics.clone()).collect();
                let mut p = point_summary(x, &metrics, &plan.quantiles, plan.mode.open_loop());
                p.planned_trials = Some(plan.trials);
                p.status = Some(if done.len() as u32 >= plan.trials {
                    RunStatus::Complete
                } else {
                    RunStatus::Partial
                });
                let samples: Vec<Vec<report::GpuSample>> = done
                    .iter()
                    .filter(|t| !t.info.gpu_samples.is_empty())
                    .map(|t| t.info.gpu_samples.clone())
                    .collect();
                p.gpu = telemetry::summarize(
                    &samples,
                    e.telemetry_source.as_deref().unwrap_or("unknown"),
                );
                p.spec_decode = sum_spec(done.iter().filter_map(|t| t.info.spec_decode.as_ref()));
                p.trials = trials
                    .values()
                    .map(|t| report::TrialInfo {
                        figures: t.metrics.figures.clone(),
                        ..t.info.clone()
                    })
                    .collect();
                let slos: Vec<TrialSlo> = done.iter().map(|t| t.slo.clone()).collect();
                if !slos.is_empty() {
                    let (attainment, check) =
                        point_slo_at(&slos, &plan.slo, plan_looks(plan).z(slos.len() as u32));
                    p.attainment = Some(attainment);
                    p.slo_check = Some(check);
                }
                p.server = crate::measure::server_metrics::summarize(
                    done.iter().filter_map(|t| t.info.server.as_ref()),
                );
                energy_and_cost(&mut p, plan, name, &done);
                p.trials_stopped = trials_stopped(plan, x, trials);
                points.push(p);
            }
            load.insert(
                name.clone(),
                EngineResult {
                    kv_pool_tokens: e.kv_pool_tokens,
                    points,
                    kv_pool_source: e.kv_pool_source.clone(),
                    error: e.error.clone(),
                    restarts: e.restarts.clone(),
                    extra: Default::default(),
                },
            );
        }
        Report {
            profile: plan.name.clone(),
            slo: report::Slo {
                bounds: plan.slo.bounds,
                attainment: Some(
                    plan.slo
                        .attainment
                        .unwrap_or(crate::measure::metrics::DEFAULT_ATTAINMENT),
                ),
                percentile: plan.slo.percentile,
                tool_calls: plan.slo.tool_calls,
                extra: Default::default(),
            },
            environment: None,
            quantiles: plan.quantiles.clone(),
            load,
            run: None,
            capacity: Default::default(),
            extra: Default::default(),
        }
    }

    /// Rebuilds the state of complete trials from a previous report and its records.
    /// Records of trials the report does not list as complete are dropped (they were
    /// in flight when the previous run stopped).
    pub fn restore(
        plan: &Plan,
        old: &Report,
        records: Vec<RequestRecord>,
    ) -> (Sweep, Vec<RequestRecord>) {
        let mut sweep = Sweep::default();
        // The old run's mode (the same as the plan's when fingerprints match; a
        // report of another mode keys its points apart and restores nothing).
        let mode = match old.run.as_ref().map(|r| r.load_mode.as_str()) {
            Some("rate") => LoadMode::Rate,
            Some("trace") => LoadMode::Trace,
            _ => LoadMode::Concurrency,
        };
        let key = |x: f64| PointKey::new(mode, x);
        let mut by_trial: BTreeMap<(String, PointKey, u32, u32), Vec<RequestRecord>> =
            BTreeMap::new();
        for r in records {
            by_trial
                .entry((r.engine.clone(), key(r.x), r.trial, r.attempt))
                .or_default()
                .push(r);
        }
        let mut kept = Vec::new();
        for (name, e) in &old.load {
            if !plan.engines.contains_key(name) {
                continue;
            }
            for p in &e.points {
                for info in p.trials.iter().filter(|t| t.status == RunStatus::Complete) {
                    let Some(recs) =
                        by_trial.remove(&(name.clone(), key(p.x), info.index, info.attempt))
                    else {
                        continue;
                    };
                    let st = sweep.engine(name);
                    st.kv_pool_tokens = e.kv_pool_tokens;
                    st.kv_pool_source = e.kv_pool_source.clone();
                    st.restarts = e.restarts.clone();
                    if let Some(g) = &p.gpu {
                        st.telemetry_source = g.source.clone();
                    }
                    let state = TrialState {
                        metrics: trial_metrics(&recs, &plan.slo),
                        slo: trial_slo(&recs, &plan.slo),
                        info: info.clone(),
                    };
                    kept.extend(recs);
                    sweep.add_trial(name, key(p.x), state);
                }
            }
        }
        (sweep, kept)
    }
}

/// A load level's observation (complete trials only) for the search, and what the
/// trial rule reads of it (the decisive judgement is the report's).
fn observation(plan: &Plan, x: f64, trials: &BTreeMap<u32, TrialState>) -> (Obs, Settled) {
    let done: Vec<&TrialState> = trials
        .values()
        .filter(|t| t.info.status == RunStatus::Complete)
        .collect();
    let slos: Vec<TrialSlo> = done.iter().map(|t| t.slo.clone()).collect();
    let (_, c) = point_slo_at(&slos, &plan.slo, plan_looks(plan).z(slos.len() as u32));
    let good = done
        .iter()
        .map(|t| crate::measure::metrics::cost::good_output_throughput(&t.metrics));
    let width = key_metrics_width(&done);
    let obs = Obs {
        x,
        trials: slos.len() as u32,
        attainment: c.attainment,
        ci: c.ci_low.zip(c.ci_high),
        meets: c.meets,
        judgement: c.judgement,
        good_tokens_per_s: report::Stat::from_trials(good).median,
        width,
    };
    let settled = Settled {
        trials: obs.trials,
        decisive: matches!(c.judgement, Some(Judgement::Meets | Judgement::Fails)),
        width,
    };
    (obs, settled)
}

/// The wider of the relative 95% intervals of the per-trial median TTFT and median
/// TPOT ([`crate::stats::spread`]); `None` when neither is known.
fn key_metrics_width(done: &[&TrialState]) -> Option<f64> {
    let of = |f: fn(&TrialMetrics) -> Option<f64>| {
        let v: Vec<f64> = done.iter().filter_map(|t| f(&t.metrics)).collect();
        crate::stats::spread::relative_half_width(&v)
    };
    [of(|m| m.median_ttft_ms), of(|m| m.median_tpot_ms)]
        .into_iter()
        .flatten()
        .reduce(f64::max)
}

/// Why an adaptive point got no more trials (`None` with a fixed count, or while
/// it is still to get one). A search's probes are confirmed by the search's own
/// budget ([`crate::define::plan::SearchConfig::rule`]).
fn trials_stopped(
    plan: &Plan,
    x: f64,
    trials: &BTreeMap<u32, TrialState>,
) -> Option<TrialsStopped> {
    let rule = plan.adaptive?;
    let (obs, settled) = observation(plan, x, trials);
    match &plan.search {
        Some(cfg) => cfg.rule().stopped(obs.settled(cfg.target)),
        None => rule.stopped(settled),
    }
}

/// A point's energy and cost, from its complete trials and the engine's price.
fn energy_and_cost(p: &mut report::Point, plan: &Plan, engine: &str, done: &[&TrialState]) {
    let spec = plan.engines.get(engine);
    let per_trial: Vec<_> = done
        .iter()
        .map(|t| (&t.metrics, t.info.energy.as_ref()))
        .collect();
    let launched =
        spec.is_some_and(|s| s.effective_kind() != crate::define::profile::EngineKind::Url);
    let usd_per_hour = spec.and_then(|s| s.usd_per_hour);
    crate::measure::metrics::cost::fill_point(p, &per_trial, usd_per_hour, launched);
}

fn sum_spec<'a>(it: impl Iterator<Item = &'a SpecDecode>) -> Option<SpecDecode> {
    let mut total: Option<SpecDecode> = None;
    for s in it {
        let t = total.get_or_insert_with(SpecDecode::default);
        t.draft_tokens += s.draft_tokens;
        t.accepted_tokens += s.accepted_tokens;
    }
    if let Some(t) = total.as_mut() {
        t.acceptance_rate = (t.draft_tokens > 0.0).then(|| t.accepted_tokens / t.draft_tokens);
    }
    total
}
