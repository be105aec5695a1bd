//! How far each predicted point can be trusted: a parametric bootstrap in virtual
//! time, and the points that extrapolate said plainly.
//!
//! The fitted file's `[fit]` table ([`crate::model::fit::evidence::Evidence`]) says what
//! the fit knew. Each of its `draws` (default [`DRAWS`], 400: a 90% interval's
//! tails rest on 20 draws each; each draw seeded by the plan's seed, the load and
//! the draw's index, so the draws can run on several threads and still repeat):
//! 1. the step costs move together by a multivariate normal draw from their HAC
//!    covariance (Newey & West 1987, [`crate::model::fit::covariance`]; drawn by
//!    its Cholesky factor, [`super::draw`]), the front-end costs alone by their
//!    search's resolution, each clamped at 0 (an older file without the
//!    covariance: every cost alone, by its standard error); `max_num_seqs`, when
//!    neither stated nor identified and the load could
//!    reach it, is drawn log-uniformly between the largest batch seen and twice
//!    the load (the model cannot know where the engine caps);
//! 2. the model runs the point's trial in virtual time (the same requests, built
//!    once per trial and reused by every draw);
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

use super::draw::CostDraw;
use super::TrialInputs;

use crate::define::plan::Plan;
use crate::define::profile::LoadMode;
use crate::measure::metrics::trial_metrics;
use crate::model::fit::evidence::Evidence;
use crate::model::fit::output::METRICS;
use goodput_sim::SimConfig;

/// Bootstrap draws per point unless the fitted file says otherwise.
pub use crate::model::fit::evidence::DRAWS;
/// The fewest draws a point takes (a 90% interval's tails on 1 draw each).
pub const MIN_DRAWS: u32 = 20;
/// The most draws a point takes.
pub const MAX_DRAWS: u32 = 100_000;
/// The most threads one point's draws use.
const MAX_THREADS: usize = 8;
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

/// The config of one draw: fitted costs moved together by their covariance
/// ([`CostDraw`]), an unknown batch limit drawn where the load could reach it.
fn perturb(
    config: &SimConfig,
    ev: &Evidence,
    costs: &CostDraw,
    x: f64,
    rng: &mut StdRng,
) -> SimConfig {
    let mut c = config.clone();
    costs.apply(&mut c, rng);
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
    let point = Point {
        engine,
        pi,
        x,
        nominal,
    };
    bootstrap_with(plan, config, ev, &CostDraw::new(ev), draws(ev), &point)
}

/// The number of draws a point takes: the fitted file's `draws` (else
/// [`DRAWS`]), within [`MIN_DRAWS`]..=[`MAX_DRAWS`].
pub fn draws(ev: &Evidence) -> u32 {
    ev.draws.unwrap_or(DRAWS).clamp(MIN_DRAWS, MAX_DRAWS)
}

/// The point an interval is drawn for.
struct Point<'a> {
    engine: &'a str,
    /// Its place in the plan (its requests).
    pi: u64,
    x: f64,
    /// The prediction itself, per metric of [`NAMES`].
    nominal: [Option<f64>; 3],
}

/// One draw's metrics ([`NAMES`], then attainment).
type Drawn = [Option<f64>; 4];

/// The point's `n` draws with `costs`: each its own seeded generator (the
/// point's seed and the draw's index), so the draws do not depend on how many
/// threads share them; the trial inputs (requests, arrivals) built once per
/// trial index and reused by every draw.
fn bootstrap_with(
    plan: &Plan,
    config: &SimConfig,
    ev: &Evidence,
    costs: &CostDraw,
    n: u32,
    at: &Point<'_>,
) -> PredictedInterval {
    let seed = plan.seed ^ at.x.to_bits().rotate_left(13) ^ 0x0005_eed0_ff17;
    let sigma = noise(ev, plan, at.x);
    let trials = plan.trials.max(1);
    let inputs: Vec<TrialInputs> = (0..trials)
        .map(|t| super::trial_inputs(plan, at.engine, at.pi, at.x, t))
        .collect();
    let one = |b: u32| -> Drawn {
        let mut rng =
            StdRng::seed_from_u64(seed ^ u64::from(b + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let c = perturb(config, ev, costs, at.x, &mut rng);
        let t = b % trials;
        let (recs, _) = inputs[t as usize].run(&c, at.engine, t, None);
        let m = trial_metrics(&recs, &plan.slo);
        let values = [m.median_ttft_ms, m.median_tpot_ms, m.output_throughput];
        let mut out: Drawn = [None; 4];
        for (i, v) in values.iter().enumerate() {
            let z: f64 = StandardNormal.sample(&mut rng);
            out[i] = v
                .map(|v| v * (z * sigma[i]).exp())
                .filter(|v| v.is_finite());
        }
        let sent = m.completed + m.failed;
        out[3] = (sent > 0).then(|| m.good as f64 / sent as f64);
        out
    };
    let mut draws: [Vec<f64>; 4] = Default::default();
    for d in parallel(n, threads(n), &one) {
        for (i, v) in d.iter().enumerate() {
            if let Some(v) = v {
                draws[i].push(*v);
            }
        }
    }
    let mut metrics = IndexMap::new();
    for (i, name) in NAMES.iter().chain(["attainment"].iter()).enumerate() {
        let own = at.nominal.get(i).copied().flatten();
        if let Some(iv) = central(&mut draws[i], own) {
            metrics.insert(name.to_string(), iv);
        }
    }
    debug_assert_eq!(NAMES.len(), METRICS.len());
    PredictedInterval {
        level: LEVEL,
        draws: n,
        metrics,
        why: Vec::new(),
    }
}

/// The threads `n` draws use: the machine's cores, at most [`MAX_THREADS`].
fn threads(n: u32) -> u32 {
    std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .clamp(1, MAX_THREADS)
        .min(n.max(1) as usize) as u32
}

/// `one(b)` for every draw `b < n` (in no particular order: the draws are
/// sorted), on `threads` scoped threads.
fn parallel(n: u32, threads: u32, one: &(dyn Fn(u32) -> Drawn + Sync)) -> Vec<Drawn> {
    if threads <= 1 {
        return (0..n).map(one).collect();
    }
    let mut parts: Vec<Vec<Drawn>> = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                s.spawn(move || {
                    (k..n)
                        .step_by(threads as usize)
                        .map(one)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            // A draw that panicked is lost, not the prediction.
            if let Ok(p) = h.join() {
                parts.push(p);
            }
        }
    });
    parts.into_iter().flatten().collect()
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

#[cfg(test)]
#[path = "interval_tests.rs"]
mod tests;
