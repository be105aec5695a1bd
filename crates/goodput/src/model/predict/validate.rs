//! The what-if validation, in virtual time: a hidden engine (a simulator
//! configuration the fit does not see) is "measured" at a few loads (the model
//! run on the truth, request records as a real run writes them), fitted from
//! those records alone (plus the limits the engine states, as the simulator's
//! `/version` says them), predicted at held-out loads, and the prediction
//! compared with the truth measured there. Used by the `whatif` benchmark and by
//! the tests; no sockets, no sleeping.

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use report::{Point, Report};

use super::{finish_report, interval, predict_sweep, run_trial, Model};
use crate::define::plan::Plan;
use crate::define::profile::{Overrides, Profile};
use crate::drive::record::RequestRecord;
use crate::model::fit::evidence::Evidence;
use crate::model::fit::{self, FitContext};
use crate::sweep::Sweep;
use goodput_sim::SimConfig;

/// One hidden engine and where it is measured and predicted.
#[derive(Debug, Clone)]
pub struct Case {
    /// Its name in the table.
    pub name: String,
    /// The hidden engine.
    pub truth: SimConfig,
    /// Concurrencies measured and fitted.
    pub fitted: Vec<f64>,
    /// Concurrencies predicted and then measured.
    pub held_out: Vec<f64>,
    /// The engine states its limits (the simulator's `/version`); else the fit
    /// must find them in the load.
    pub stated: bool,
    /// Requests per trial, trials per point, prompt and output tokens, the
    /// lengths' spread (`range_ratio`).
    pub shape: (u32, u32, u32, u32, f64),
    /// The machine's trial-to-trial noise: each measured trial runs the truth with
    /// its costs scaled by `exp(N(0, noise))` (all together) and each by
    /// `exp(N(0, noise / 2))` (alone).
    pub noise: f64,
}

/// The measurement's seed: other requests (lengths) than the prediction's.
const MEASURE_SEED: u64 = 0x6d65_6173_7572_6564;

/// The truth of one measured trial: its costs moved by the machine's noise.
fn jitter(truth: &SimConfig, noise: f64, rng: &mut StdRng) -> SimConfig {
    let mut c = truth.clone();
    let mut draw = |sd: f64| -> f64 {
        let z: f64 = StandardNormal.sample(rng);
        (z * sd).exp()
    };
    let all = draw(noise);
    for v in [
        &mut c.step_fixed_ms,
        &mut c.per_prefill_token_ms,
        &mut c.per_decode_seq_ms,
        &mut c.per_kv_token_ms,
        &mut c.sched_cpu_ms,
        &mut c.frontend_ms,
        &mut c.frontend_chunk_ms,
    ] {
        *v *= all * draw(noise / 2.0);
    }
    c
}

/// The truth measured at the plan's loads, trial by trial, each trial on its own
/// noisy machine, with requests of another seed than the prediction's.
pub fn measure(plan: &Plan, truth: &SimConfig, noise: f64) -> (Sweep, Vec<RequestRecord>) {
    let mut plan = plan.clone();
    plan.seed ^= MEASURE_SEED;
    let mut rng = StdRng::seed_from_u64(plan.seed);
    let (mut sweep, mut records) = (Sweep::default(), Vec::new());
    for (pi, &x) in plan.points.iter().enumerate() {
        for t in 0..plan.trials {
            let c = jitter(truth, noise, &mut rng);
            records.extend(run_trial(&plan, &c, &mut sweep, "e", pi as u64, x, t));
        }
    }
    (sweep, records)
}

/// One metric of a held-out point: measured, predicted, the predicted interval.
pub type Measured = (Option<f64>, Option<f64>, Option<[f64; 2]>);

/// One held-out point: the truth against the prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// The load.
    pub x: f64,
    /// Inside the fitted range (else beyond it).
    pub inside: bool,
    /// Whether the prediction said it extrapolates, and why.
    pub extrapolated: bool,
    /// Why (empty when not extrapolated).
    pub why: Vec<String>,
    /// Per metric ([`interval::NAMES`]): measured, predicted, interval.
    pub metrics: Vec<Measured>,
}

impl Compared {
    /// Relative error of each metric known on both sides.
    pub fn errors(&self) -> Vec<f64> {
        self.metrics
            .iter()
            .filter_map(|(m, p, _)| match (m, p) {
                (Some(m), Some(p)) if *m > 0.0 => Some((p / m - 1.0).abs()),
                _ => None,
            })
            .collect()
    }

    /// Per metric: the interval holds the measurement and is no wider than the
    /// predicted value (a wider one says nothing: a miss).
    pub fn hits(&self) -> Vec<bool> {
        self.metrics
            .iter()
            .filter_map(|(m, p, iv)| {
                let (m, p) = ((*m)?, (*p)?);
                Some(iv.is_some_and(|[lo, hi]| lo <= m && m <= hi && hi - lo <= p))
            })
            .collect()
    }
}

/// A plan of `shape` at the given concurrencies, engine `e`.
pub fn plan(points: &[f64], shape: (u32, u32, u32, u32, f64)) -> Result<Plan, String> {
    let (requests, trials, input, output, ratio) = shape;
    let pts: Vec<String> = points.iter().map(|x| x.to_string()).collect();
    let text = format!(
        "name = \"whatif\"\n[slo]\nttft_ms = 2000\ntpot_ms = 200\n[load]\nmode = \"concurrency\"\npoints = [{}]\nrequests_per_trial = {requests}\ntrials = {trials}\nrequest_timeout_s = 600\n[workload]\ninput_tokens = {input}\noutput_tokens = {output}\nrange_ratio = {ratio}\n[engines.e]\nkind = \"sim\"\npreset = \"default\"\n",
        pts.join(", ")
    );
    Profile::parse(&text, "whatif")
        .and_then(|p| p.into_plan("whatif", &Overrides::default()))
        .map_err(|e| e.to_string())
}

/// What the fit is told besides the records: the engine's stated limits and its
/// KV pool (a run reads both from the simulator).
fn context(case: &Case) -> FitContext {
    let mut ctx = FitContext {
        engine: "e".into(),
        source: format!("{} (virtual time)", case.name),
        kv_pool_tokens: Some(case.truth.kv_capacity_tokens()),
        ..FitContext::default()
    };
    if case.stated {
        let t = &case.truth;
        let json = serde_json::json!({"limits": {"max_num_seqs": t.max_num_seqs,
            "max_num_batched_tokens": t.max_num_batched_tokens, "block_size": t.block_size}});
        ctx.limits = crate::drive::engine::limits::from_sim_version(&json);
        ctx.max_num_seqs = ctx
            .limits
            .shift_remove("max_num_seqs")
            .map(|l| (l.value as u32, l.source));
    }
    ctx
}

/// The predicted report of `plan` on the fitted `config`, with its intervals.
pub fn predicted(plan: &Plan, config: &SimConfig) -> Report {
    let (sweep, _) = predict_sweep(plan, config);
    let model = Model {
        config: config.clone(),
        path: "fitted".into(),
        fitted_from: None,
    };
    let mut r = finish_report(plan, &model, &sweep);
    interval::annotate(plan, config, &mut r);
    r
}

fn values(p: &Point) -> [Option<f64>; 3] {
    [
        p.median_ttft_ms.median,
        p.median_tpot_ms.median,
        p.output_throughput.median,
    ]
}

/// Measures, fits, predicts and compares one case; the fit too, for its notes.
pub fn run(case: &Case) -> Result<(fit::Fit, Vec<Compared>), String> {
    run_with(case, |_| {})
}

/// [`run`], with the fit's evidence changed by `adjust` before the prediction
/// (the benchmark's ablations: fewer draws, the covariance ignored).
pub fn run_with(
    case: &Case,
    adjust: impl Fn(&mut Evidence),
) -> Result<(fit::Fit, Vec<Compared>), String> {
    let measured = plan(&case.fitted, case.shape)?;
    let (_, records) = measure(&measured, &case.truth, case.noise);
    let mut f = fit::fit(&records, &context(case))?;
    if let Some(mut ev) = Evidence::from_table(f.config.fit.as_ref()) {
        adjust(&mut ev);
        f.config.fit = ev.to_table();
    }
    let held = plan(&case.held_out, case.shape)?;
    let pred = predicted(&held, &f.config);
    let (sweep, _) = measure(&held, &case.truth, case.noise);
    let truth = sweep.report(&held);
    let (lo, hi) = (
        case.fitted.iter().copied().fold(f64::INFINITY, f64::min),
        case.fitted.iter().copied().fold(0.0, f64::max),
    );
    let mut out = Vec::new();
    for (p, t) in pred.load["e"].points.iter().zip(&truth.load["e"].points) {
        let iv = p.predicted_interval.clone().unwrap_or_default();
        let (pv, tv) = (values(p), values(t));
        out.push(Compared {
            x: p.x,
            inside: p.x >= lo && p.x <= hi,
            extrapolated: p.extrapolated,
            why: iv.why.clone(),
            metrics: (0..3)
                .map(|i| (tv[i], pv[i], iv.metrics.get(interval::NAMES[i]).copied()))
                .collect(),
        });
    }
    Ok((f, out))
}

/// The median of `v` (0 when empty).
pub fn median(v: Vec<f64>) -> f64 {
    crate::stats::median(v).unwrap_or(0.0)
}
