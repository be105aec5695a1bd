//! `goodput fit`: the simulator's engine configuration fitted to a measured run.
//!
//! From the raw request records (every chunk's arrival, tokens, send and done
//! times) the engine's steps are reconstructed ([`steps`]) and the step cost
//! solved by robust least squares ([`solve`]). The rest of the configuration:
//! - `max_num_seqs`, `max_num_batched_tokens`, `block_size`: known where the
//!   engine stated them (the report's `environment.engines.*.limits`, read by
//!   [`crate::drive::engine::limits`]; `max_num_seqs` also from an older report's command
//!   line: llama.cpp's `-np`/`--parallel`, vLLM's `--max-num-seqs`); else the largest
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
//!   golden-section search (`search_frontend`); 0 when the model without it is
//!   within 2% everywhere;
//! - `frontend_chunk_ms`, the API server's time per output chunk on that same
//!   queue (a request arriving while it streams the running requests' chunks
//!   waits for them): searched the same way beside the front-end time, and kept
//!   only when the pair lowers the residuals beyond the measured points' noise
//!   (a chi-square test of one more parameter, `search_chunk`); else 0, and
//!   the fit's notes say which and why;
//! - async scheduling on with no CPU cost (the fixed cost carries it), no thermal
//!   model (a throttled run is said to be one), chunking and block size at the
//!   simulator's defaults.
//!
//! Then the fitted model is run in virtual time on every measured load level with
//! the measured requests' lengths, and the residuals per point (median TTFT, median
//! TPOT, output throughput) say how well it fits ([`output`]). What the fit knows
//! of its own uncertainty (the step costs' joint covariance among it,
//! [`covariance`]) goes into the file's `[fit]` table ([`evidence`]), from which
//! `run --predict` draws its intervals.

pub mod covariance;
pub mod evidence;
mod frontend;
mod limits;
pub mod output;
pub mod solve;
mod speculative;
pub mod steps;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use goodput_sim::SimConfig;

use crate::drive::record::RequestRecord;
use frontend::{frontend_evidence, search_chunk, search_frontend};
pub use limits::slots_from_command;
use limits::{batch_limit, kv_pool, stated_limits};
use solve::{Solution, Status};
pub use speculative::acceptance_for;
use speculative::{coalesced, speculative};
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
    /// The engine's batch limit as the engine stated it (or its command line set
    /// it), with where it was read.
    pub max_num_seqs: Option<(u32, String)>,
    /// The other limits the engine stated (`max_num_batched_tokens`,
    /// `block_size`): taken as known.
    pub limits: indexmap::IndexMap<String, report::StatedLimit>,
    /// The engine's metrics were scraped and counted no speculative draft: a chunk
    /// of several tokens is delivery that fell behind the engine (vLLM's API
    /// server coalesces the outputs of several steps), not speculation.
    pub no_drafts_counted: bool,
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
    pub residuals: Vec<output::Residual>,
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
    if mine.iter().any(|r| r.embeddings.is_some()) {
        return Err(format!(
            "{}: engine `{}` answered embeddings: goodput fit models an engine that \
             generates (its steps of tokens), and an embeddings answer has none",
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
    let (frontend, chunk, mut best) = match frontend_evidence(&trials) {
        Ok(max_ms) => {
            let without = search_frontend(&trials, ctx, max_ms, 0.0)?;
            search_chunk(&trials, ctx, max_ms, without, &evidence::spread(&trials))?
        }
        Err(why) => {
            let prior = |name: &str| Param {
                name: name.into(),
                value: 0.0,
                status: Status::Prior(why.clone()),
            };
            (
                prior("frontend_ms"),
                prior("frontend_chunk_ms"),
                fit_at(&trials, ctx, 0.0, 0.0)?,
            )
        }
    };
    best.params.push(frontend);
    best.params.push(chunk);
    let mut ev = evidence::build(&trials, ctx, &best.params, &best.residuals, best.max_batch);
    ev.covariance = best.covariance.clone();
    best.config.fit = ev.to_table();
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
pub(crate) type Trials<'a> = BTreeMap<(u64, u32, u32), Vec<&'a RequestRecord>>;

/// The fit with a given front-end time, and how far it is from the measurement.
pub(crate) struct Candidate {
    config: SimConfig,
    params: Vec<Param>,
    steps: usize,
    step_residual_ms: f64,
    residuals: Vec<output::Residual>,
    notes: Vec<String>,
    /// Σ over points of ln(fitted / measured)² of median TTFT and median TPOT.
    loss: f64,
    /// The largest batch a reconstructed step held.
    max_batch: u32,
    /// The fitted step costs' joint covariance.
    covariance: Option<evidence::Covariance>,
    /// The per-chunk front-end cost at which the chunks of the median step would
    /// take the server as long as the step: median of step time / requests, ms.
    chunk_ceiling_ms: f64,
}

/// The step costs and the rest of the configuration when every request spends
/// `frontend_ms` in the server's front-end and every output chunk `chunk_ms`,
/// with the residuals of that model.
pub(crate) fn fit_at(
    trials: &Trials<'_>,
    ctx: &FitContext,
    frontend_ms: f64,
    chunk_ms: f64,
) -> Result<Candidate, String> {
    let frontend_ns = (frontend_ms * 1e6).round().clamp(0.0, 1e15) as u64;
    let mut all: Vec<Step> = Vec::new();
    // Each trial's steps, in time order, one run after another (the covariance's
    // lags stay inside a trial).
    let mut runs: Vec<usize> = Vec::new();
    for t in trials.values() {
        let s = steps::trial_steps_with(t, frontend_ns);
        runs.push(s.len());
        all.extend(s);
    }
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
    let solution = solve::solve(&all, &runs);
    let mut params = cost_params(&solution);
    let mut config = base_config(&solution, &mine);
    config.frontend_ms = frontend_ms;
    config.frontend_chunk_ms = chunk_ms;
    params.extend(stated_limits(ctx, &mut config));
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
    let residuals = output::residuals(trials, &config, ctx.rate_mode);
    let loss = residuals
        .iter()
        .flat_map(|r| [r.error(0), r.error(1)])
        .map(|e| e.map_or(0.0, |e| (1.0 + e).max(1e-9).ln().powi(2)))
        .sum();
    Ok(Candidate {
        covariance: evidence::Covariance::of(&solution),
        config,
        params,
        steps: all.len(),
        step_residual_ms: solution.residual_ms,
        residuals,
        notes,
        loss,
        max_batch: all.iter().map(|s| s.seqs).max().unwrap_or(0),
        chunk_ceiling_ms: output::median_of(
            all.iter()
                .filter(|s| s.seqs > 0 && s.ms > 0.0)
                .map(|s| s.ms / f64::from(s.seqs))
                .collect(),
        )
        .unwrap_or(0.0),
    })
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

/// What `goodput fit` was asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct FitOptions {
    /// The measured report (its `.requests.jsonl` beside it).
    pub report: std::path::PathBuf,
    /// The engine to fit (default: the report's first).
    pub engine: Option<String>,
    /// Where to write the engine configuration (TOML).
    pub output: std::path::PathBuf,
    /// Overwrite an existing output.
    pub force: bool,
}

/// `goodput fit REPORT [--engine NAME] -o ENGINE.toml`: prints the fit, writes the file.
pub fn command(args: &FitOptions) -> anyhow::Result<i32> {
    if args.output.exists() && !args.force {
        return Err(crate::UsageError(format!(
            "{} exists: pass --force to overwrite it",
            args.output.display()
        ))
        .into());
    }
    let fit = output::fit_report(&args.report, args.engine.as_deref())?;
    print!("{}", output::summary(&fit));
    let text = output::toml_text(&fit).map_err(anyhow::Error::msg)?;
    crate::redact::write_file(&args.output, &text)?;
    eprintln!("wrote {}", args.output.display());
    Ok(0)
}
