//! What the fit knows about how far its values can be trusted, written into the
//! fitted file (`[fit]`, which the simulator ignores) for `run --predict`'s
//! intervals ([`crate::model::predict::interval`]):
//! - the load levels measured and the largest batch seen (a prediction outside
//!   them extrapolates);
//! - each fitted value's standard error (least squares, HAC; the front-end
//!   search's resolution for `frontend_ms` and `frontend_chunk_ms`);
//! - the fitted step costs' joint covariance ([`super::covariance`]: the costs
//!   move together, e.g. a higher fixed cost with a lower per-request one), from
//!   which the prediction draws them together;
//! - how many draws a prediction's interval takes ([`DRAWS`], editable in the
//!   file);
//! - the values neither stated by the engine nor identifiable (held at a prior),
//!   and the limits the engine stated, with where;
//! - the measured trial-to-trial spread of each compared metric (the standard
//!   deviation of ln(trial / point median), pooled over points);
//! - the model's own error at the measured points (root mean square of
//!   ln(fitted / measured) over points), which no parameter error explains.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::output::{Residual, METRICS};
use super::solve::{Solution, Status, NAMES, TERMS};
use super::{FitContext, Param, Trials};
use crate::drive::record::RequestRecord;
use crate::measure::metrics::trial_metrics;

/// Draws of a prediction's interval the fit asks for (the `[fit]` table's `draws`):
/// a 90% interval's tails then rest on 20 draws each.
pub const DRAWS: u32 = 400;

/// The fitted step costs' joint covariance, ms², as the `[fit]` table's
/// `covariance` (`names`, and `matrix` in their order); every value finite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Covariance {
    /// The costs, by config field name (those fitted, in [`NAMES`] order).
    pub names: Vec<String>,
    /// Row by row, symmetric.
    pub matrix: Vec<Vec<f64>>,
}

impl Covariance {
    /// The covariance of a solution's fitted costs (those with a finite, positive
    /// standard error); `None` when it has none.
    pub fn of(s: &Solution) -> Option<Covariance> {
        let full = s.covariance.as_ref()?;
        let keep: Vec<usize> = (0..TERMS)
            .filter(|&j| {
                matches!(s.status[j], Status::Fitted { stderr } if stderr.is_finite() && stderr > 0.0)
            })
            .collect();
        let matrix: Vec<Vec<f64>> = keep
            .iter()
            .map(|&a| keep.iter().map(|&b| full[a][b]).collect())
            .collect();
        (!keep.is_empty() && matrix.iter().flatten().all(|v| v.is_finite())).then(|| Covariance {
            names: keep.iter().map(|&j| NAMES[j].to_string()).collect(),
            matrix,
        })
    }

    /// Whether it is square, as large as its names, and finite.
    pub fn is_valid(&self) -> bool {
        let n = self.names.len();
        n > 0
            && self.matrix.len() == n
            && self
                .matrix
                .iter()
                .all(|r| r.len() == n && r.iter().all(|v| v.is_finite()))
    }
}

/// The fit's evidence (see the module doc); every float finite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Evidence {
    /// `concurrency` or `rate`: what the measured loads were.
    pub mode: String,
    /// The measured load levels, ascending.
    pub loads: Vec<f64>,
    /// The largest batch one reconstructed step held.
    pub max_batch_seen: u32,
    /// Standard error of each fitted value, by config field name.
    pub stderr: BTreeMap<String, f64>,
    /// Values held at a prior (neither stated nor identifiable), with why.
    pub unknown: BTreeMap<String, String>,
    /// Values the engine stated, with where they were read.
    pub known: BTreeMap<String, String>,
    /// Trial-to-trial spread per compared metric ([`METRICS`] order), relative.
    pub trial_spread: Vec<f64>,
    /// The fitted model's error at the measured points per metric, relative.
    pub model_error: Vec<f64>,
    /// Draws per predicted point (absent in older files: [`DRAWS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draws: Option<u32>,
    /// The fitted step costs' joint covariance (absent in older files: the
    /// costs are then drawn independently, by their standard errors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub covariance: Option<Covariance>,
}

impl Evidence {
    /// As the `[fit]` table of the fitted file (`None` if it cannot be written).
    pub fn to_table(&self) -> Option<toml::Table> {
        toml::Table::try_from(self).ok()
    }

    /// From a fitted file's `[fit]` table; `None` when absent or unreadable.
    pub fn from_table(t: Option<&toml::Table>) -> Option<Evidence> {
        t.cloned().and_then(|t| t.try_into().ok())
    }

    /// The lowest and highest measured load.
    pub fn range(&self) -> Option<(f64, f64)> {
        Some((*self.loads.first()?, *self.loads.last()?))
    }
}

fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// The evidence of a fit (`max_batch`: the largest batch a step held).
pub fn build(
    trials: &Trials<'_>,
    ctx: &FitContext,
    params: &[Param],
    residuals: &[Residual],
    max_batch: u32,
) -> Evidence {
    let mut ev = Evidence {
        mode: if ctx.rate_mode { "rate" } else { "concurrency" }.into(),
        loads: residuals
            .iter()
            .map(|r| r.x)
            .filter(|x| x.is_finite())
            .collect(),
        max_batch_seen: max_batch,
        draws: Some(DRAWS),
        trial_spread: spread(trials),
        model_error: (0..METRICS.len())
            .map(|i| {
                let e: Vec<f64> = residuals
                    .iter()
                    .filter_map(|r| r.error(i))
                    .map(|e| (1.0 + e).max(1e-9).ln().powi(2))
                    .collect();
                finite((e.iter().sum::<f64>() / e.len().max(1) as f64).sqrt())
            })
            .collect(),
        ..Evidence::default()
    };
    ev.loads.sort_by(f64::total_cmp);
    ev.loads.dedup();
    for p in params {
        match &p.status {
            Status::Fitted { stderr } if stderr.is_finite() && *stderr > 0.0 => {
                ev.stderr.insert(p.name.clone(), *stderr);
            }
            Status::Prior(why) => {
                ev.unknown.insert(p.name.clone(), why.clone());
            }
            Status::Known(from) => {
                ev.known.insert(p.name.clone(), from.clone());
            }
            _ => {}
        }
    }
    ev
}

/// The pooled standard deviation of ln(trial / point median), per metric.
pub(super) fn spread(trials: &Trials<'_>) -> Vec<f64> {
    let slo = report::Slo::default();
    let mut by_x: BTreeMap<u64, Vec<[Option<f64>; 3]>> = BTreeMap::new();
    for ((x, _, _), recs) in trials {
        let owned: Vec<RequestRecord> = recs.iter().map(|r| (*r).clone()).collect();
        let m = trial_metrics(&owned, &slo);
        by_x.entry(*x)
            .or_default()
            .push([m.median_ttft_ms, m.median_tpot_ms, m.output_throughput]);
    }
    (0..METRICS.len())
        .map(|i| {
            let (mut ss, mut dof) = (0.0, 0usize);
            for v in by_x.values() {
                let logs: Vec<f64> = v
                    .iter()
                    .filter_map(|t| t[i])
                    .filter(|x| *x > 0.0 && x.is_finite())
                    .map(f64::ln)
                    .collect();
                if logs.len() < 2 {
                    continue;
                }
                let mean = logs.iter().sum::<f64>() / logs.len() as f64;
                ss += logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>();
                dof += logs.len() - 1;
            }
            finite(if dof > 0 {
                (ss / dof as f64).sqrt()
            } else {
                0.0
            })
        })
        .collect()
}
