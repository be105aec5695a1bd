//! How far each predicted point can be trusted: a parametric bootstrap in virtual
//! time, and the points that extrapolate said plainly.
//!
//! The fitted file's `[fit]` table ([`crate::model::fit::evidence::Evidence`]) says what
//! the fit knew. Each of [`DRAWS`] draws (seeded by the plan's seed and the load):
//! 1. every fitted cost moves by a normal draw of its standard error (clamped at
//!    0); `max_num_seqs`, when neither stated nor identified and the load could
//!    reach it, is drawn log-uniformly between the largest batch seen and twice
//!    the load (the model cannot know where the engine caps);
//! 2. the model runs the point's trial in virtual time (the same requests);
//! 3. each metric is multiplied by `exp(N(0, σ))`, `σ² = (model error × g)² +
//!    spread² / trials`: the model's error at the measured points (grown by `g = 1 +
//!    log₂(load / nearest measured load)` beyond the measured range), and the
//!    measured trial-to-trial spread of a median over the plan's trials.
//!
//! The interval is the draws' central [`LEVEL`] share, widened to hold the
//! predicted value itself. A point is **extrapolated** when its load is outside
//! the measured range (or of another load mode), or it depends on a value neither
//! stated nor identifiable. Besides the three metrics, `attainment` (the draws'
//! share of good requests, no noise added) shows which points' SLO judgement the
//! model's uncertainty could flip: `search --predict` confirms those on the engine.

use indexmap::IndexMap;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use report::{PredictedInterval, Report};

use crate::define::plan::Plan;
use crate::define::profile::LoadMode;
use crate::measure::metrics::trial_metrics;
use crate::model::fit::evidence::Evidence;
use crate::model::fit::render::METRICS;
use goodput_sim::SimConfig;

/// Bootstrap draws per point.
pub const DRAWS: u32 = 48;
/// The intervals' nominal coverage.
pub const LEVEL: f64 = 0.9;
/// The metrics an interval covers, in [`METRICS`] order (the report's names).
pub const NAMES: [&str; 3] = ["median_ttft_ms", "median_tpot_ms", "output_throughput"];
/// Loads within this share of a measured one count as measured.
const SAME_LOAD: f64 = 0.01;

/// Adds `predicted_interval` and `extrapolated` to every point of a predicted
/// report whose model file carries the fit's evidence (a hand-written file has
/// none: its points get no interval).
pub fn annotate(plan: &Plan, config: &SimConfig, report: &mut Report) {
    let Some(ev) = Evidence::from_table(config.fit.as_ref()) else {
        return;
    };
    for (engine, result) in report.load.iter_mut() {
        for p in result.points.iter_mut() {
            let pi = match &plan.search {
                Some(_) => (p.x * 1000.0).round() as u64,
                None => plan.points.iter().position(|x| *x == p.x).unwrap_or(0) as u64,
            };
            let nominal = [
                p.median_ttft_ms.median,
                p.median_tpot_ms.median,
                p.output_throughput.median,
            ];
            let why = extrapolation(plan, &ev, p.x);
            let mut iv = bootstrap(plan, config, &ev, engine, pi, p.x, nominal);
            p.extrapolated = !why.is_empty();
            iv.why = why;
            p.predicted_interval = Some(iv);
        }
    }
}

/// Why a prediction at `x` extrapolates (empty: it does not).
pub fn extrapolation(plan: &Plan, ev: &Evidence, x: f64) -> Vec<String> {
    let mut why = Vec::new();
    let Some((lo, hi)) = ev.range() else {
        return vec!["the fit names no measured load".into()];
    };
    let mode = if plan.mode == LoadMode::Concurrency {
        "concurrency"
    } else {
        "rate"
    };
    let num = crate::render::text::num;
    if mode != ev.mode {
        why.push(format!(
            "fitted at {} loads, predicted at {mode} loads",
            ev.mode
        ));
    } else if x < lo * (1.0 - SAME_LOAD) || x > hi * (1.0 + SAME_LOAD) {
        why.push(format!(
            "load {} is outside the fitted range {}-{}",
            num(x),
            num(lo),
            num(hi)
        ));
    }
    let beyond = x > hi * (1.0 + SAME_LOAD) || mode != ev.mode;
    let seen = f64::from(ev.max_batch_seen);
    let reaches = mode != "concurrency" || x > seen;
    if ev.unknown.contains_key("max_num_seqs") && reaches && beyond {
        why.push(format!(
            "depends on max_num_seqs, neither stated by the engine nor identifiable (no step held more than {} requests)",
            ev.max_batch_seen
        ));
    }
    if beyond {
        let costs: Vec<&str> = ev
            .unknown
            .keys()
            .map(String::as_str)
            .filter(|k| k.ends_with("_ms"))
            .collect();
        if !costs.is_empty() {
            why.push(format!(
                "depends on {}, not identifiable from the measurement",
                costs.join(", ")
            ));
        }
        if ev.unknown.contains_key("kv_pool_tokens") {
            why.push("the KV pool was not stated: preemption at this load is not modelled from the engine's own size".into());
        }
    }
    why
}

/// The config of one draw: fitted costs moved by their errors, an unknown batch
/// limit drawn where the load could reach it.
fn perturb(config: &SimConfig, ev: &Evidence, x: f64, rng: &mut StdRng) -> SimConfig {
    let mut c = config.clone();
    for (name, se) in &ev.stderr {
        let z: f64 = StandardNormal.sample(rng);
        let field = match name.as_str() {
            "step_fixed_ms" => &mut c.step_fixed_ms,
            "per_prefill_token_ms" => &mut c.per_prefill_token_ms,
            "per_decode_seq_ms" => &mut c.per_decode_seq_ms,
            "per_kv_token_ms" => &mut c.per_kv_token_ms,
            "prefill_step_ms" => &mut c.prefill_step_ms,
            "per_prefill_seq_ms" => &mut c.per_prefill_seq_ms,
            "frontend_ms" => &mut c.frontend_ms,
            "frontend_chunk_ms" => &mut c.frontend_chunk_ms,
            _ => continue,
        };
        let moved = *field + z * se;
        *field = if moved.is_finite() {
            moved.max(0.0)
        } else {
            *field
        };
    }
    let seen = f64::from(ev.max_batch_seen.max(1));
    let top = if ev.mode == "concurrency" {
        2.0 * x
    } else {
        f64::from(config.max_num_seqs)
    };
    if ev.unknown.contains_key("max_num_seqs") && top > seen {
        let u: f64 = rng.gen();
        let cap = (seen.ln() + u * (top.ln() - seen.ln())).exp().round();
        c.max_num_seqs = cap.clamp(1.0, 65_536.0) as u32;
    }
    c
}

/// The noise σ of each metric at `x` (see the module doc).
fn noise(ev: &Evidence, plan: &Plan, x: f64) -> [f64; 3] {
    let g = match ev.range() {
        Some((_, hi)) if x > hi && hi > 0.0 => 1.0 + (x / hi).log2(),
        Some((lo, _)) if x < lo && x > 0.0 => 1.0 + (lo / x).log2(),
        _ => 1.0,
    };
    let n = f64::from(plan.trials.max(1));
    std::array::from_fn(|i| {
        let m = ev.model_error.get(i).copied().unwrap_or(0.0) * g;
        let s = ev.trial_spread.get(i).copied().unwrap_or(0.0);
        let v = (m * m + s * s / n).sqrt();
        if v.is_finite() {
            v
        } else {
            0.0
        }
    })
}

/// The draws' interval of each metric at one point.
fn bootstrap(
    plan: &Plan,
    config: &SimConfig,
    ev: &Evidence,
    engine: &str,
    pi: u64,
    x: f64,
    nominal: [Option<f64>; 3],
) -> PredictedInterval {
    let mut rng = StdRng::seed_from_u64(plan.seed ^ x.to_bits().rotate_left(13) ^ 0x0005_eed0_ff17);
    let sigma = noise(ev, plan, x);
    let mut draws: [Vec<f64>; 4] = Default::default();
    for b in 0..DRAWS {
        let c = perturb(config, ev, x, &mut rng);
        let recs = super::trial_records(plan, &c, engine, pi, x, b % plan.trials.max(1));
        let m = trial_metrics(&recs, &plan.slo);
        let values = [m.median_ttft_ms, m.median_tpot_ms, m.output_throughput];
        for (i, v) in values.iter().enumerate() {
            let z: f64 = StandardNormal.sample(&mut rng);
            if let Some(v) = v
                .map(|v| v * (z * sigma[i]).exp())
                .filter(|v| v.is_finite())
            {
                draws[i].push(v);
            }
        }
        let sent = m.completed + m.failed;
        if sent > 0 {
            draws[3].push(m.good as f64 / sent as f64);
        }
    }
    let mut metrics = IndexMap::new();
    for (i, name) in NAMES.iter().chain(["attainment"].iter()).enumerate() {
        let own = nominal.get(i).copied().flatten();
        if let Some(iv) = central(&mut draws[i], own) {
            metrics.insert(name.to_string(), iv);
        }
    }
    debug_assert_eq!(NAMES.len(), METRICS.len());
    PredictedInterval {
        level: LEVEL,
        draws: DRAWS,
        metrics,
        why: Vec::new(),
    }
}

/// The central [`LEVEL`] share of `v`, widened to hold `own`; finite only.
fn central(v: &mut Vec<f64>, own: Option<f64>) -> Option<[f64; 2]> {
    report::stats::sort_values(v);
    let tail = (1.0 - LEVEL) / 2.0;
    let mut lo = report::stats::quantile_linear(v, tail)?;
    let mut hi = report::stats::quantile_linear(v, 1.0 - tail)?;
    if let Some(o) = own.filter(|o| o.is_finite()) {
        lo = lo.min(o);
        hi = hi.max(o);
    }
    (lo.is_finite() && hi.is_finite()).then_some([lo, hi])
}

/// Whether a point's SLO judgement could flip within its interval: the draws'
/// attainment straddles the target.
pub fn straddles(p: &report::Point) -> bool {
    let (Some(iv), Some(check)) = (&p.predicted_interval, &p.slo_check) else {
        return false;
    };
    iv.metrics
        .get("attainment")
        .is_some_and(|[lo, hi]| *lo < check.target && *hi >= check.target)
        || (p.extrapolated && iv.metrics.get("attainment").is_none())
}
