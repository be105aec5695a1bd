//! `frontend_ms`: the API server's time per request before the engine can schedule
//! it (one shared first-come-first-served queue in the model), found by
//! golden-section search over whole refits ([`search_frontend`]).

use super::solve::Status;
use super::{fit_at, Candidate, FitContext, Param, Trials};
use crate::drive::record::RequestRecord;

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
    let max = super::output::median_of(pick).unwrap_or(0.0);
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
/// The smallest relative trial-to-trial spread the chunk cost's test assumes
/// (a run of one trial per point has no measured spread).
const SPREAD_FLOOR: f64 = 0.01;
/// χ²(1) at 95%: the drop in the residuals' sum of squares (in units of their
/// noise variance) a per-chunk cost must bring to be kept.
const CHI2_1_95: f64 = 3.84;

/// The value in `0..=max` that minimises `loss`: a coarse scan (the loss need
/// not be unimodal over the whole span: a step-cost refit can trade a front-end
/// time for the prefill cost), then golden-section search around the best cell.
/// Returns the value and the search's resolution (half the last bracket).
fn minimise(loss: impl Fn(f64) -> f64, max: f64) -> (f64, f64) {
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let grid: Vec<f64> = (0..=FRONTEND_GRID)
        .map(|i| max * i as f64 / FRONTEND_GRID as f64)
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
    ((lo + hi) / 2.0, (hi - lo) / 2.0)
}

/// Whether a candidate is within [`FRONTEND_EXACT`] of every measured median
/// TTFT and TPOT.
fn exact(c: &Candidate) -> bool {
    c.residuals.iter().all(|r| {
        [r.error(0), r.error(1)]
            .iter()
            .all(|e| e.is_none_or(|e| e.abs() < FRONTEND_EXACT))
    })
}

/// The front-end time that brings the fitted model's median TTFT and TPOT closest
/// to the measured ones at every measured point (each candidate refits the step
/// costs, since the front-end time moves when an idle engine's step began), with
/// the per-chunk cost held at `chunk_ms`: 0 when that model is within
/// [`FRONTEND_EXACT`] everywhere, else golden-section search over `0..=max_ms`,
/// kept only when it fits strictly better than 0.
pub(super) fn search_frontend(
    trials: &Trials<'_>,
    ctx: &FitContext,
    max_ms: f64,
    chunk_ms: f64,
) -> Result<(Param, Candidate), String> {
    let zero = fit_at(trials, ctx, 0.0, chunk_ms)?;
    let exact = exact(&zero);
    let (mut best, mut best_ms, mut resolution) = (zero, 0.0, 0.0);
    if !exact {
        let loss = |ms: f64| fit_at(trials, ctx, ms, chunk_ms).map_or(f64::INFINITY, |c| c.loss);
        let (ms, res) = minimise(loss, max_ms);
        if let Ok(c) = fit_at(trials, ctx, ms, chunk_ms) {
            if c.loss < best.loss * (1.0 - 1e-9) - 1e-12 {
                (best, best_ms, resolution) = (c, ms, res);
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

/// The residuals' sum of squares in units of their noise: Σ over points of
/// ln(fitted / measured)² / σ² for median TTFT and median TPOT, where σ² is the
/// metric's trial-to-trial variance (`spread`, at least [`SPREAD_FLOOR`]) over
/// the point's trials: what the measured medians' own noise explains is ~1 a term.
fn chi2(c: &Candidate, spread: &[f64]) -> f64 {
    c.residuals
        .iter()
        .flat_map(|r| {
            (0..2).filter_map(move |i| {
                let e = r.error(i)?;
                let s = spread.get(i).copied().unwrap_or(0.0).max(SPREAD_FLOOR);
                let var = s * s / r.trials.max(1) as f64;
                Some((1.0 + e).max(1e-9).ln().powi(2) / var)
            })
        })
        .sum()
}

/// The API server's per-output-chunk cost (`frontend_chunk_ms`, on the
/// front-end's queue), and the front-end time refitted beside it, kept only when
/// the pair lowers the residuals beyond noise: the drop in [`chi2`] from the best
/// model without it (`without`, whose front-end time is `without_fe`) must exceed
/// χ²(1) at 95% (a likelihood-ratio test of one more parameter). Searched over
/// `0..=max_chunk_ms` (where the chunks of the median step would take the
/// server as long as the step); the front-end time is searched again beside it
/// (`max_ms`), since both delay requests that arrive together. Returns the two
/// parameters, the chosen model and why it was chosen.
pub(super) fn search_chunk(
    trials: &Trials<'_>,
    ctx: &FitContext,
    max_ms: f64,
    without: (Param, Candidate),
    spread: &[f64],
) -> Result<(Param, Param, Candidate), String> {
    let (without_fe, mut without) = without;
    let max_chunk = without.chunk_ceiling_ms;
    let off = |mut c: Candidate, fe: Param, why: String| {
        c.notes.push(format!("frontend_chunk_ms: off (0): {why}"));
        let p = Param {
            name: "frontend_chunk_ms".into(),
            value: 0.0,
            status: Status::Fitted { stderr: 0.0 },
        };
        Ok((fe, p, c))
    };
    if exact(&without) {
        return off(without, without_fe, "the model without it is within 2% of every measured median TTFT and TPOT: not searched".into());
    }
    if !(max_chunk.is_finite() && max_chunk > 0.0) {
        return off(without, without_fe, "no step to bound it by".into());
    }
    let fe = without_fe.value;
    let loss = |c: f64| fit_at(trials, ctx, fe, c).map_or(f64::INFINITY, |c| c.loss);
    let (chunk, res) = minimise(loss, max_chunk);
    let (fe2, with) = search_frontend(trials, ctx, max_ms, chunk)?;
    let (before, after) = (chi2(&without, spread), chi2(&with, spread));
    let num = crate::render::text::num;
    let test = format!(
        "residuals {} without it, {} with {} ms a chunk (frontend_ms {} -> {}; squared log errors of median TTFT and TPOT over their trial-to-trial variance); kept only when they drop by more than {CHI2_1_95} (chi-square, 1 parameter, 95%)",
        num(before),
        num(after),
        num(chunk),
        num(fe),
        num(fe2.value)
    );
    if before - after > CHI2_1_95 {
        let mut with = with;
        with.notes.push(format!("frontend_chunk_ms: ON: {test}"));
        let p = Param {
            name: "frontend_chunk_ms".into(),
            value: chunk,
            status: Status::Fitted { stderr: res },
        };
        Ok((fe2, p, with))
    } else {
        without
            .notes
            .retain(|n| !n.starts_with("frontend_chunk_ms"));
        off(without, without_fe, test)
    }
}
