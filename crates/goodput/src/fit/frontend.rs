//! `frontend_ms`: the API server's time per request before the engine can schedule
//! it (one shared first-come-first-served queue in the model), found by
//! golden-section search over whole refits ([`search_frontend`]).

use super::solve::Status;
use super::{fit_at, Candidate, FitContext, Param, Trials};
use crate::record::RequestRecord;

/// Whether the records can tell a front-end time from the prefill cost: only a
/// request sent while the engine was busy with another one can (alone, the two
/// add up in every TTFT). `Ok`: the largest front-end time to consider, ms (the
/// median TTFT of the requests that found the engine idle, else of all);
/// `Err`: why not.
pub(super) fn frontend_evidence(trials: &Trials<'_>) -> Result<f64, String> {
    let mut busy = 0usize;
    let (mut idle_ttft, mut all_ttft) = (Vec::new(), Vec::new());
    for recs in trials.values() {
        let ok: Vec<&&RequestRecord> = recs
            .iter()
            .filter(|r| r.ok() && !r.chunks.is_empty())
            .collect();
        for r in &ok {
            let ttft = r.chunks[0].t.saturating_sub(r.sent) as f64 / 1e6;
            let others = ok.iter().any(|o| {
                o.index != r.index && o.sent < r.sent && o.done.is_none_or(|d| d > r.sent)
            });
            all_ttft.push(ttft);
            if others {
                busy += 1;
            } else {
                idle_ttft.push(ttft);
            }
        }
    }
    if busy == 0 {
        return Err("every request found the engine idle (one request in flight at a time): the front-end time adds to the prefill cost in every TTFT and cannot be told apart from it".into());
    }
    let pick = if idle_ttft.is_empty() {
        all_ttft
    } else {
        idle_ttft
    };
    let max = super::render::median_of(pick).unwrap_or(0.0);
    if max.is_finite() && max > 0.0 {
        Ok(max)
    } else {
        Err("no request took any time to its first token".into())
    }
}

/// Golden-section rounds of the front-end search.
const FRONTEND_ROUNDS: usize = 6;
/// Intervals of the coarse scan before the golden-section search.
const FRONTEND_GRID: usize = 6;
/// A model within this of every measured median TTFT and TPOT has nothing a
/// front-end time could improve.
const FRONTEND_EXACT: f64 = 0.02;

/// The front-end time that brings the fitted model's median TTFT and TPOT closest
/// to the measured ones at every measured point (each candidate refits the step
/// costs, since the front-end time moves when an idle engine's step began): 0
/// when that model is within [`FRONTEND_EXACT`] everywhere, else golden-section
/// search over `0..=max_ms`, kept only when it fits strictly better than 0.
pub(super) fn search_frontend(
    trials: &Trials<'_>,
    ctx: &FitContext,
    max_ms: f64,
) -> Result<(Param, Candidate), String> {
    let zero = fit_at(trials, ctx, 0.0)?;
    let exact = zero.residuals.iter().all(|r| {
        [r.error(0), r.error(1)]
            .iter()
            .all(|e| e.is_none_or(|e| e.abs() < FRONTEND_EXACT))
    });
    let (mut best, mut best_ms, mut resolution) = (zero, 0.0, 0.0);
    if !exact {
        let loss = |ms: f64| fit_at(trials, ctx, ms).map_or(f64::INFINITY, |c| c.loss);
        let phi = (5f64.sqrt() - 1.0) / 2.0;
        // A coarse scan first: the loss need not be unimodal over the whole span
        // (a step-cost refit can trade the front-end time for the prefill cost).
        let grid: Vec<f64> = (0..=FRONTEND_GRID)
            .map(|i| max_ms * i as f64 / FRONTEND_GRID as f64)
            .collect();
        let best_i = (1..FRONTEND_GRID)
            .map(|i| (i, loss(grid[i])))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(1, |b| b.0);
        let (mut lo, mut hi) = (grid[best_i - 1], grid[best_i + 1]);
        let (mut a, mut b) = (hi - phi * (hi - lo), lo + phi * (hi - lo));
        let (mut la, mut lb) = (loss(a), loss(b));
        for _ in 0..FRONTEND_ROUNDS {
            if la <= lb {
                (hi, b, lb) = (b, a, la);
                a = hi - phi * (hi - lo);
                la = loss(a);
            } else {
                (lo, a, la) = (a, b, lb);
                b = lo + phi * (hi - lo);
                lb = loss(b);
            }
        }
        let ms = (lo + hi) / 2.0;
        if let Ok(c) = fit_at(trials, ctx, ms) {
            if c.loss < best.loss * (1.0 - 1e-9) - 1e-12 {
                (best, best_ms, resolution) = (c, ms, (hi - lo) / 2.0);
            }
        }
    }
    if best_ms == 0.0 {
        best.notes.push(if exact {
            "frontend_ms: the model without a front-end time is within 2% of every measured median TTFT and TPOT: not searched, 0".into()
        } else {
            format!("frontend_ms: no front-end time up to {} ms brought the model closer to the measured medians than none: 0", crate::render::text::num(max_ms))
        });
    }
    // The ± is the search's resolution (no standard error: not least squares).
    let param = Param {
        name: "frontend_ms".into(),
        value: best_ms,
        status: Status::Fitted { stderr: resolution },
    };
    Ok((param, best))
}
