//! `goodput fit`: the simulator's engine configuration fitted to a measured run.
//!
//! From the raw request records (every chunk's arrival, tokens, send and done
//! times) the engine's steps are reconstructed ([`steps`]) and the step cost
//! solved by robust least squares ([`solve`]). The rest of the configuration:
//! - `max_num_seqs`: the engine's own limit when its command line says it
//!   (llama.cpp's `-np`/`--parallel`, vLLM's `--max-num-seqs`); else the largest
//!   batch seen, when requests waited beside it in a quarter of the steps or more
//!   (else not identifiable: held at the prior, "at least N");
//! - `kv_pool_tokens`: the report's detected KV pool (else held at the prior);
//! - speculative decoding: off when the engine's metrics were scraped and counted
//!   no draft (chunks of several tokens are then coalesced delivery, each counted
//!   as the engine steps it spans); else on when decoding requests got more than
//!   1.1 tokens a step on average; `num_speculative_tokens` from the most tokens one step gave,
//!   the acceptance rate `a` from the mean tokens a step (`1 + Σ_{i≤k} aⁱ`);
//!   its costs are held at 0 (they move with the decode cost, which carries them);
//! - `frontend_ms`, the API server's time per request before the engine can
//!   schedule it (one shared first-come-first-served queue in the model): 0 when
//!   every request found the engine idle (alone, it adds to the prefill cost in
//!   every TTFT: not identifiable, said); else the value whose model (step costs
//!   refitted with it, since it moves when an idle engine's step began) comes
//!   closest to the measured median TTFT and TPOT of every point, by
//!   golden-section search ([`search_frontend`]); 0 when the model without it is
//!   within 2% everywhere;
//! - async scheduling on with no CPU cost (the fixed cost carries it), no thermal
//!   model (a throttled run is said to be one), chunking and block size at the
//!   simulator's defaults.
//!
//! Then the fitted model is run in virtual time on every measured load level with
//! the measured requests' lengths, and the residuals per point (median TTFT, median
//! TPOT, output throughput) say how well it fits ([`render`]).

pub mod render;
pub mod solve;
pub mod steps;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use goodput_sim::config::{Acceptance, SpeculativeConfig};
use goodput_sim::SimConfig;

use crate::record::RequestRecord;
use solve::{Solution, Status};
use steps::Step;

/// The header line of a fitted configuration that names the report it came from.
pub const FITTED_FROM_HEADER: &str = "# fitted from: ";
/// A batch this far below the requests in flight in this share of steps means the
/// engine capped its batch (`max_num_seqs`).
const CAPPED_SHARE: f64 = 0.25;
/// Decoding requests must get more than this many tokens a step on average for the
/// fit to turn speculative decoding on.
const SPEC_MIN_TOKENS: f64 = 1.1;
/// Most speculative tokens a fit proposes.
const MAX_SPEC_TOKENS: u32 = 16;

/// What the report says about the engine besides its records.
#[derive(Debug, Clone, Default)]
pub struct FitContext {
    /// The engine's name.
    pub engine: String,
    /// Where the records came from (for messages and the header).
    pub source: String,
    /// The KV pool the run detected, tokens.
    pub kv_pool_tokens: Option<u64>,
    /// Open loop (rate): the residual runs replay the measured send times.
    pub rate_mode: bool,
    /// Draft acceptance the engine's counters reported, when they did.
    pub spec_acceptance: Option<f64>,
    /// A GPU was thermally throttled during the run.
    pub throttled: bool,
    /// The engine's batch limit as its command line set it, with the flag.
    pub max_num_seqs: Option<(u32, String)>,
    /// The engine's metrics were scraped and counted no speculative draft: a chunk
    /// of several tokens is delivery that fell behind the engine (vLLM's API
    /// server coalesces the outputs of several steps), not speculation.
    pub no_drafts_counted: bool,
}

/// The batch limit an engine's command line sets, with the flag that set it:
/// llama.cpp's slots (`-np N`, `--parallel N`) or vLLM's `--max-num-seqs N`
/// (also `--flag=N`). The last one given wins, as in both engines' parsers.
pub fn slots_from_command(argv: &[String]) -> Option<(u32, String)> {
    const FLAGS: [&str; 3] = ["-np", "--parallel", "--max-num-seqs"];
    let mut found = None;
    for (i, a) in argv.iter().enumerate() {
        let (flag, value) = match a.split_once('=') {
            Some((f, v)) if FLAGS.contains(&f) => (f, Some(v)),
            _ if FLAGS.contains(&a.as_str()) => (a.as_str(), argv.get(i + 1).map(String::as_str)),
            _ => continue,
        };
        if let Some(n) = value.and_then(|v| v.parse::<u32>().ok()).filter(|n| *n > 0) {
            found = Some((n, format!("{flag} {n} on the engine's command line")));
        }
    }
    found
}

/// One configuration value and how the data set it.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// The simulator config's field name.
    pub name: String,
    /// The value.
    pub value: f64,
    /// How it was set.
    pub status: Status,
}

/// A fitted configuration with its evidence.
#[derive(Debug, Clone)]
pub struct Fit {
    /// The engine fitted.
    pub engine: String,
    /// Where its records came from.
    pub source: String,
    /// The configuration.
    pub config: SimConfig,
    /// Every fitted or held value.
    pub params: Vec<Param>,
    /// Steps the step cost was fitted on.
    pub steps: usize,
    /// Robust scale of the step-time residuals, ms.
    pub step_residual_ms: f64,
    /// Per measured point: measured against the fitted model.
    pub residuals: Vec<render::Residual>,
    /// What the reader should know.
    pub notes: Vec<String>,
}

/// Fits the engine configuration to `records` (the records of one engine).
/// The error says why nothing could be fitted.
pub fn fit(records: &[RequestRecord], ctx: &FitContext) -> Result<Fit, String> {
    let mine: Vec<&RequestRecord> = records.iter().filter(|r| r.engine == ctx.engine).collect();
    if mine.is_empty() {
        return Err(format!(
            "{}: no request of engine `{}`",
            ctx.source, ctx.engine
        ));
    }
    let ok = mine
        .iter()
        .filter(|r| r.ok() && !r.chunks.is_empty())
        .count();
    if ok == 0 {
        let failed = mine.iter().filter(|r| !r.ok()).count();
        return Err(format!(
            "{}: engine `{}` has no successful request with streamed chunks ({} requests, {failed} failed): nothing to fit",
            ctx.source,
            ctx.engine,
            mine.len()
        ));
    }
    let mut trials: BTreeMap<(u64, u32, u32), Vec<&RequestRecord>> = BTreeMap::new();
    for r in &mine {
        trials
            .entry((r.x.to_bits(), r.trial, r.attempt))
            .or_default()
            .push(r);
    }
    let (frontend, mut best) = match frontend_evidence(&trials) {
        Ok(max_ms) => search_frontend(&trials, ctx, max_ms)?,
        Err(why) => (
            Param {
                name: "frontend_ms".into(),
                value: 0.0,
                status: Status::Prior(why),
            },
            fit_at(&trials, ctx, 0.0)?,
        ),
    };
    best.params.push(frontend);
    Ok(Fit {
        engine: ctx.engine.clone(),
        source: ctx.source.clone(),
        config: best.config,
        params: best.params,
        steps: best.steps,
        step_residual_ms: best.step_residual_ms,
        residuals: best.residuals,
        notes: best.notes,
    })
}

/// One trial's records, keyed by (x, trial, attempt).
type Trials<'a> = BTreeMap<(u64, u32, u32), Vec<&'a RequestRecord>>;

/// The fit with a given front-end time, and how far it is from the measurement.
struct Candidate {
    config: SimConfig,
    params: Vec<Param>,
    steps: usize,
    step_residual_ms: f64,
    residuals: Vec<render::Residual>,
    notes: Vec<String>,
    /// Σ over points of ln(fitted / measured)² of median TTFT and median TPOT.
    loss: f64,
}

/// The step costs and the rest of the configuration when every request spends
/// `frontend_ms` in the server's front-end, with the residuals of that model.
fn fit_at(trials: &Trials<'_>, ctx: &FitContext, frontend_ms: f64) -> Result<Candidate, String> {
    let frontend_ns = (frontend_ms * 1e6).round().clamp(0.0, 1e15) as u64;
    let mut all: Vec<Step> = trials
        .values()
        .flat_map(|t| steps::trial_steps_with(t, frontend_ns))
        .collect();
    if all.is_empty() {
        return Err(format!(
            "{}: engine `{}`: no engine step could be reconstructed from the chunk times (all zero length?)",
            ctx.source, ctx.engine
        ));
    }
    let mine: Vec<&RequestRecord> = trials.values().flatten().copied().collect();
    let mut notes = Vec::new();
    if ctx.no_drafts_counted {
        coalesced(&mut all, &mut notes);
    }
    let solution = solve::solve(&all);
    let mut params = cost_params(&solution);
    let mut config = base_config(&solution, &mine);
    config.frontend_ms = frontend_ms;
    params.extend(batch_limit(&all, ctx, &mut config));
    params.push(kv_pool(ctx, &mine, &mut config));
    if !ctx.no_drafts_counted {
        params.extend(speculative(&all, ctx, &mut config, &mut notes));
    }
    if ctx.throttled {
        notes.push("the GPU was thermally throttled during the run: the fitted costs are those of the throttled card (no thermal model is fitted)".into());
    }
    if let Err(e) = config.validate() {
        return Err(format!(
            "{}: the fitted configuration is not valid: {e}",
            ctx.source
        ));
    }
    let residuals = render::residuals(trials, &config, ctx.rate_mode);
    let loss = residuals
        .iter()
        .flat_map(|r| [r.error(0), r.error(1)])
        .map(|e| e.map_or(0.0, |e| (1.0 + e).max(1e-9).ln().powi(2)))
        .sum();
    Ok(Candidate {
        config,
        params,
        steps: all.len(),
        step_residual_ms: solution.residual_ms,
        residuals,
        notes,
        loss,
    })
}

/// Whether the records can tell a front-end time from the prefill cost: only a
/// request sent while the engine was busy with another one can (alone, the two
/// add up in every TTFT). `Ok`: the largest front-end time to consider, ms (the
/// median TTFT of the requests that found the engine idle, else of all);
/// `Err`: why not.
fn frontend_evidence(trials: &Trials<'_>) -> Result<f64, String> {
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
    let max = render::median_of(pick).unwrap_or(0.0);
    if max.is_finite() && max > 0.0 {
        Ok(max)
    } else {
        Err("no request took any time to its first token".into())
    }
}

/// Golden-section rounds of the front-end search.
const FRONTEND_ROUNDS: usize = 8;
/// A model within this of every measured median TTFT and TPOT has nothing a
/// front-end time could improve.
const FRONTEND_EXACT: f64 = 0.02;

/// The front-end time that brings the fitted model's median TTFT and TPOT closest
/// to the measured ones at every measured point (each candidate refits the step
/// costs, since the front-end time moves when an idle engine's step began): 0
/// when that model is within [`FRONTEND_EXACT`] everywhere, else golden-section
/// search over `0..=max_ms`, kept only when it fits strictly better than 0.
fn search_frontend(
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
        let (mut lo, mut hi) = (0.0, max_ms);
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

fn cost_params(s: &Solution) -> Vec<Param> {
    solve::NAMES
        .iter()
        .zip(s.values.iter().zip(&s.status))
        .map(|(n, (v, st))| Param {
            name: n.to_string(),
            value: *v,
            status: st.clone(),
        })
        .collect()
}

/// The configuration before batch, pool and speculation are decided.
fn base_config(s: &Solution, records: &[&RequestRecord]) -> SimConfig {
    let longest_prompt = records
        .iter()
        .filter_map(|r| r.prompt_tokens)
        .max()
        .unwrap_or(0);
    let d = SimConfig::default();
    SimConfig {
        model: "goodput-fit".into(),
        step_fixed_ms: s.values[0],
        per_prefill_token_ms: s.values[1],
        per_decode_seq_ms: s.values[2],
        per_kv_token_ms: s.values[3],
        prefill_step_ms: s.values[4],
        per_prefill_seq_ms: s.values[5],
        async_scheduling: true,
        sched_cpu_ms: 0.0,
        thermal: None,
        speculative: None,
        load_time_ms: 0.0,
        max_num_batched_tokens: d
            .max_num_batched_tokens
            .max(longest_prompt.min(1 << 24) as u32),
        ..d
    }
}

/// `max_num_seqs`: the engine's own setting when known, else identified when the
/// batch stayed below the requests in flight.
fn batch_limit(steps: &[Step], ctx: &FitContext, config: &mut SimConfig) -> Option<Param> {
    if let Some((n, from)) = &ctx.max_num_seqs {
        config.max_num_seqs = (*n).min(65_536);
        return Some(Param {
            name: "max_num_seqs".into(),
            value: f64::from(config.max_num_seqs),
            status: Status::Known(from.clone()),
        });
    }
    let max_batch = steps.iter().map(|s| s.seqs).max()?;
    let capped = steps.iter().filter(|s| s.in_flight > max_batch).count();
    let share = capped as f64 / steps.len() as f64;
    let prior = SimConfig::default().max_num_seqs;
    let (value, status) = if share >= CAPPED_SHARE {
        (max_batch, Status::Fitted { stderr: 0.0 })
    } else {
        (
            prior.max(max_batch),
            Status::Prior(format!(
                "the batch was never held below the requests in flight: at least {max_batch}"
            )),
        )
    };
    config.max_num_seqs = value;
    Some(Param {
        name: "max_num_seqs".into(),
        value: f64::from(value),
        status,
    })
}

/// `kv_pool_tokens` (and `max_model_len`, which must fit in it).
fn kv_pool(ctx: &FitContext, records: &[&RequestRecord], config: &mut SimConfig) -> Param {
    let longest = records
        .iter()
        .map(|r| r.prompt_tokens.unwrap_or(0) + r.completion_tokens.unwrap_or(0))
        .max()
        .unwrap_or(1)
        .clamp(1, 1 << 24) as u32;
    let (pool, status) = match ctx.kv_pool_tokens {
        Some(k) if k > 0 => (k.min(1 << 31) as u32, Status::Fitted { stderr: 0.0 }),
        _ => (
            config.kv_pool_tokens,
            Status::Prior("the report does not say the KV pool (kv_pool_tokens is null)".into()),
        ),
    };
    // The pool must hold the longest request seen (it did, on the engine).
    let block = config.block_size.max(1);
    config.kv_pool_tokens = pool.max(longest.div_ceil(block) * block);
    config.max_model_len = config
        .max_model_len
        .max(longest)
        .min(config.kv_capacity_tokens() as u32);
    Param {
        name: "kv_pool_tokens".into(),
        value: f64::from(config.kv_pool_tokens),
        status,
    }
}

/// Without speculation, a step where a decoding request got k tokens in one
/// chunk spans k engine steps (the delivery coalesced them): its per-step costs
/// count k times.
fn coalesced(steps: &mut [Step], notes: &mut Vec<String>) {
    let mut spanned = 0usize;
    for s in steps.iter_mut() {
        let most = s
            .decode_tokens
            .iter()
            .fold(1.0f64, |a, &b| a.max(b))
            .round();
        s.spans = most.clamp(1.0, 1e4);
        spanned += usize::from(s.spans > 1.0);
    }
    if spanned > 0 {
        notes.push(format!(
            "{spanned} steps had a chunk of several tokens while the engine counted no speculative draft: delivery coalesced several engine steps (each counted as the steps it spans), not speculation"
        ));
    }
}

/// `E[accepted] = Σ_{i=1..k} aⁱ`: the acceptance rate giving `accepted`, by bisection.
pub fn acceptance_for(accepted: f64, k: u32) -> f64 {
    let expected = |a: f64| (1..=k).map(|i| a.powi(i as i32)).sum::<f64>();
    if accepted <= 0.0 {
        return 0.0;
    }
    if accepted >= f64::from(k) {
        return 1.0;
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if expected(mid) < accepted {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Speculative decoding, when decoding requests got more than a token a step.
fn speculative(
    steps: &[Step],
    ctx: &FitContext,
    config: &mut SimConfig,
    notes: &mut Vec<String>,
) -> Vec<Param> {
    let tokens: Vec<f64> = steps
        .iter()
        .flat_map(|s| s.decode_tokens.iter().copied())
        .collect();
    if tokens.is_empty() {
        return Vec::new();
    }
    let mean = tokens.iter().sum::<f64>() / tokens.len() as f64;
    if mean <= SPEC_MIN_TOKENS {
        return Vec::new();
    }
    let most = tokens.iter().fold(1.0f64, |a, &b| a.max(b)).round();
    let k = ((most - 1.0).max(1.0) as u32).min(MAX_SPEC_TOKENS);
    let a = acceptance_for(mean - 1.0, k);
    config.speculative = Some(SpeculativeConfig {
        num_speculative_tokens: k,
        acceptance: Acceptance::Uniform {
            mean: a,
            spread: 0.0,
        },
        verify_cost_ms: 0.0,
        per_draft_token_ms: 0.0,
    });
    if let Some(r) = ctx.spec_acceptance {
        notes.push(format!(
            "the engine's counters gave a draft acceptance of {:.3}; the model's per-token rate is {a:.3} with {k} drafts a step (the two count differently when drafts are cut short)",
            r
        ));
    }
    let held = "moves with the decode cost (every decode step verifies drafts): held at 0, the decode cost carries it";
    vec![
        Param {
            name: "speculative.num_speculative_tokens".into(),
            value: f64::from(k),
            status: Status::Fitted { stderr: 0.0 },
        },
        Param {
            name: "speculative.acceptance.mean".into(),
            value: a,
            status: Status::Fitted { stderr: 0.0 },
        },
        Param {
            name: "speculative.verify_cost_ms".into(),
            value: 0.0,
            status: Status::Prior(held.into()),
        },
        Param {
            name: "speculative.per_draft_token_ms".into(),
            value: 0.0,
            status: Status::Prior(held.into()),
        },
    ]
}

/// `goodput fit REPORT [--engine NAME] -o ENGINE.toml`: prints the fit, writes the file.
pub fn command(args: &crate::cli::FitArgs) -> anyhow::Result<i32> {
    if args.output.exists() && !args.force {
        return Err(crate::UsageError(format!(
            "{} exists: pass --force to overwrite it",
            args.output.display()
        ))
        .into());
    }
    let fit = render::fit_report(&args.report, args.engine.as_deref())?;
    print!("{}", render::summary(&fit));
    let text = render::toml_text(&fit).map_err(anyhow::Error::msg)?;
    crate::redact::write_file(&args.output, &text)?;
    eprintln!("wrote {}", args.output.display());
    Ok(0)
}
