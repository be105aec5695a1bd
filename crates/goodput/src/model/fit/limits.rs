//! The engine's limits in the fitted configuration: `max_num_seqs` (stated by the
//! engine, else identified when the batch was held below the requests in flight,
//! else held at the prior), `max_num_batched_tokens` and `block_size` (stated, else
//! the simulator's defaults), `kv_pool_tokens` (detected by the run; known where
//! the engine stated it, as vLLM's startup log does).

use goodput_sim::SimConfig;

use super::solve::Status;
use super::steps::Step;
use super::{FitContext, Param, CAPPED_SHARE};
use crate::drive::record::RequestRecord;

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

/// `max_num_seqs`: the engine's own setting when known, else identified when the
/// batch stayed below the requests in flight.
pub(super) fn batch_limit(
    steps: &[Step],
    ctx: &FitContext,
    config: &mut SimConfig,
) -> Option<Param> {
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
pub(super) fn kv_pool(
    ctx: &FitContext,
    records: &[&RequestRecord],
    config: &mut SimConfig,
) -> Param {
    let longest = records
        .iter()
        .map(|r| r.prompt_tokens.unwrap_or(0) + r.completion_tokens.unwrap_or(0))
        .max()
        .unwrap_or(1)
        .clamp(1, 1 << 24) as u32;
    // The pool the engine stated (vLLM's startup log) is known, with where.
    let stated = ctx.limits.get("kv_pool_tokens");
    let (pool, status) = match (ctx.kv_pool_tokens, stated) {
        (Some(k), Some(l)) if k == l.value => {
            (k.min(1 << 31) as u32, Status::Known(l.source.clone()))
        }
        (Some(k), _) if k > 0 => (k.min(1 << 31) as u32, Status::Fitted { stderr: 0.0 }),
        (_, Some(l)) => (l.value.min(1 << 31) as u32, Status::Known(l.source.clone())),
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

/// `max_num_batched_tokens` and `block_size` where the engine stated them (known),
/// else left at the simulator's defaults (not listed: nothing was fitted).
pub(super) fn stated_limits(ctx: &FitContext, config: &mut SimConfig) -> Vec<Param> {
    let mut out = Vec::new();
    for name in ["max_num_batched_tokens", "block_size"] {
        let Some(l) = ctx.limits.get(name) else {
            continue;
        };
        let v = l.value.clamp(1, 1 << 24) as u32;
        match name {
            "block_size" => config.block_size = v,
            _ => config.max_num_batched_tokens = v,
        }
        out.push(Param {
            name: name.into(),
            value: f64::from(v),
            status: Status::Known(l.source.clone()),
        });
    }
    out
}
