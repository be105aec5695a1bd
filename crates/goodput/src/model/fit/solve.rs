//! The step cost by least squares: `ms = fixed + prefill × P + decode × D + kv × K
//! + prefill_step × (1 if N > 0) + per_prefill_seq × N` (N: requests prefilled) over
//! reconstructed steps ([`super::steps`]), the simulator's own step-cost form.
//!
//! Why this and not a general optimiser over simulated runs: the model is linear
//! in its costs, every step is one equation, and a fit of a few thousand
//! equations is exact and instant; what is not identifiable shows directly as a
//! column the others explain. The solve:
//! 1. columns in the order fixed, prefill, decode, kv, prefill step, per prefill
//!    request; a column that is all zero,
//!    or that the columns before it explain (R² of its regression on them
//!    ≥ [`COLLINEAR_R2`]), is **not identifiable**: held at its prior (0: the
//!    columns before it carry its cost) and said so;
//! 2. least squares by SVD (nalgebra) on the rest, made robust by iteratively
//!    reweighted least squares with Huber weights (k = 1.345 × MAD scale), so a
//!    step slowed by something else (a compilation, a preemption, a hidden step)
//!    does not move the fit;
//! 3. a negative cost is clamped to 0 and the rest refitted (a cost is never
//!    negative); the costs' joint covariance is the HAC sandwich of
//!    [`super::covariance`] (Newey & West 1987: steps of one trial are
//!    autocorrelated, and their noise grows with the batch), each cost's standard
//!    error the root of its diagonal.

use nalgebra::{DMatrix, DVector};

use super::steps::Step;

/// A column explained this well by the ones before it is not identifiable.
pub const COLLINEAR_R2: f64 = 0.999;
/// Huber's tuning constant (95% efficiency under normal noise).
const HUBER_K: f64 = 1.345;
/// Reweighting rounds.
const IRLS_ROUNDS: usize = 20;

/// Number of step-cost terms.
pub const TERMS: usize = 6;

/// The costs' names, in column order (the simulator config's field names).
pub const NAMES: [&str; TERMS] = [
    "step_fixed_ms",
    "per_prefill_token_ms",
    "per_decode_seq_ms",
    "per_kv_token_ms",
    "prefill_step_ms",
    "per_prefill_seq_ms",
];

/// How one cost was set.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Fitted, with its standard error.
    Fitted {
        /// Standard error, same unit.
        stderr: f64,
    },
    /// Fitted below 0 and clamped there.
    AtZero,
    /// Not identifiable from these data; held at the prior, with why.
    Prior(String),
    /// Not fitted: known from the run (where it was said).
    Known(String),
}

/// The solved costs.
#[derive(Debug, Clone)]
pub struct Solution {
    /// Values in [`NAMES`] order, ms.
    pub values: [f64; TERMS],
    /// How each was set.
    pub status: [Status; TERMS],
    /// Robust scale of the step residuals, ms.
    pub residual_ms: f64,
    /// The fitted costs' joint covariance, ms², in [`NAMES`] order (rows and
    /// columns of the costs not [`Status::Fitted`] are 0); `None` when it could
    /// not be estimated (the costs' errors are then infinite).
    pub covariance: Option<[[f64; TERMS]; TERMS]>,
}

fn column(s: &Step, j: usize) -> f64 {
    // Per-step costs count once per engine step the observation spans.
    match j {
        0 => s.spans,
        1 => s.prefill_tokens,
        2 => s.decode_seqs * s.spans,
        3 => s.kv_tokens * s.spans,
        4 => f64::from(u8::from(s.prefill_seqs > 0.0)),
        _ => s.prefill_seqs,
    }
}

/// Why column `j` is not identifiable given the accepted columns, if it is not.
fn unidentifiable(steps: &[Step], j: usize, accepted: &[usize]) -> Option<String> {
    let y = DVector::from_iterator(steps.len(), steps.iter().map(|s| column(s, j)));
    if y.iter().all(|v| *v == 0.0) {
        return Some(match j {
            1 => "no step prefilled a prompt with a known length (no usage.prompt_tokens)".into(),
            2 => "no step decoded (every request has a single chunk)".into(),
            4 | 5 => "no step prefilled a prompt".into(),
            _ => "every step's value is 0".into(),
        });
    }
    if accepted.is_empty() {
        return None;
    }
    let x = design(steps, accepted);
    let fit = x.clone().svd(true, true).solve(&y, 1e-12).ok()?;
    let res = &y - &x * fit;
    let mean = y.mean();
    let tss: f64 = y.iter().map(|v| (v - mean).powi(2)).sum();
    let rss = res.norm_squared();
    let r2 = if tss > 0.0 { 1.0 - rss / tss } else { 1.0 };
    let explained = if tss > 0.0 {
        r2 >= COLLINEAR_R2
    } else {
        rss <= 1e-9 * y.norm_squared()
    };
    explained.then(|| {
        let by: Vec<&str> = accepted.iter().map(|&a| NAMES[a]).collect();
        match j {
            2 => format!(
                "every step's batch size follows from the other columns ({}): one load level cannot separate the per-sequence cost from the fixed cost",
                by.join(", ")
            ),
            3 => format!(
                "the attended context moves with {} (prompts and outputs of one length): its cost cannot be told apart",
                by.join(", ")
            ),
            4 => format!(
                "whether a step prefilled follows from {} (every step prefilled alone, or decoded alone, at one batch size): its cost cannot be told apart",
                by.join(", ")
            ),
            5 => format!(
                "the requests prefilled in a step follow from {} (one prompt length, or one prefill a step): a per-request cost cannot be told apart",
                by.join(", ")
            ),
            _ => format!("explained by {}", by.join(", ")),
        }
    })
}

fn design(steps: &[Step], cols: &[usize]) -> DMatrix<f64> {
    DMatrix::from_fn(steps.len(), cols.len(), |i, c| column(&steps[i], cols[c]))
}

/// Median of absolute values (for the robust scale).
fn mad(v: &DVector<f64>) -> f64 {
    crate::stats::median(v.iter().map(|x| x.abs())).unwrap_or(0.0) / 0.6745
}

/// Huber-weighted least squares of `y` on the columns `cols`: (coefficients,
/// their HAC covariance over `trials`' runs of steps, robust residual scale).
fn robust_ls(
    steps: &[Step],
    cols: &[usize],
    y: &DVector<f64>,
    trials: &[usize],
) -> (Vec<f64>, Option<DMatrix<f64>>, f64) {
    let x = design(steps, cols);
    let n = steps.len();
    let mut w = DVector::from_element(n, 1.0);
    let mut beta = DVector::zeros(cols.len());
    let mut scale = 0.0;
    for _ in 0..IRLS_ROUNDS {
        let sw = w.map(f64::sqrt);
        let xw = DMatrix::from_fn(n, cols.len(), |i, c| x[(i, c)] * sw[i]);
        let yw = y.component_mul(&sw);
        let Ok(b) = xw.svd(true, true).solve(&yw, 1e-12) else {
            break;
        };
        beta = b;
        let res = y - &x * &beta;
        scale = mad(&res).max(1e-9);
        w = res.map(|r| {
            let u = r.abs() / (HUBER_K * scale);
            if u <= 1.0 {
                1.0
            } else {
                1.0 / u
            }
        });
    }
    let res = y - &x * &beta;
    let cov = super::covariance::hac(&x, &w, &res, trials);
    (beta.iter().copied().collect(), cov, scale)
}

/// Solves the step cost over `steps` (at least one); `trials`: the lengths of the
/// consecutive runs of steps that belong to one trial, each in time order (for
/// the covariance's lags).
pub fn solve(steps: &[Step], trials: &[usize]) -> Solution {
    let mut status: [Status; TERMS] = std::array::from_fn(|_| Status::Prior(String::new()));
    let mut accepted = Vec::new();
    for (j, st) in status.iter_mut().enumerate() {
        match unidentifiable(steps, j, &accepted) {
            Some(why) => *st = Status::Prior(why),
            None => accepted.push(j),
        }
    }
    let y = DVector::from_iterator(steps.len(), steps.iter().map(|s| s.ms));
    let mut values = [0.0; TERMS];
    let mut residual_ms = 0.0;
    let mut covariance = None;
    // Clamp negatives one at a time and refit (at most one round per column).
    for _ in 0..=TERMS {
        let (beta, cov, scale) = robust_ls(steps, &accepted, &y, trials);
        residual_ms = scale;
        covariance = cov.as_ref().map(|v| {
            let mut full = [[0.0; TERMS]; TERMS];
            for (a, &ja) in accepted.iter().enumerate() {
                for (b, &jb) in accepted.iter().enumerate() {
                    full[ja][jb] = v[(a, b)];
                }
            }
            full
        });
        let stderr: Vec<f64> = (0..accepted.len())
            .map(|c| {
                cov.as_ref()
                    .map_or(f64::INFINITY, |v| v[(c, c)].max(0.0).sqrt())
            })
            .collect();
        values = [0.0; TERMS];
        let worst = accepted
            .iter()
            .zip(&beta)
            .filter(|(_, b)| **b < 0.0)
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(&j, _)| j);
        for ((&j, &b), &e) in accepted.iter().zip(&beta).zip(&stderr) {
            values[j] = b.max(0.0);
            status[j] = Status::Fitted { stderr: e };
        }
        match worst {
            Some(j) => {
                accepted.retain(|&a| a != j);
                values[j] = 0.0;
                status[j] = Status::AtZero;
                covariance = None;
            }
            None => break,
        }
    }
    if values.iter().any(|v| !v.is_finite()) {
        values = values.map(|v| if v.is_finite() { v } else { 0.0 });
    }
    Solution {
        values,
        status,
        residual_ms,
        covariance,
    }
}
