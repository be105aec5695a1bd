//! What a run says and writes for vLLM's users: the one header line on where
//! goodput measures differently, and `--save-result`'s vLLM-format file.

use std::path::Path;

use report::Report;

use super::{CommonArgs, PeerArgs};
use crate::define::plan::Plan;
use crate::measure::peers::vllm_write::{self, VllmResultOptions};

/// Prints, once, where goodput measures differently from `vllm bench serve`, when
/// the run was asked for in vLLM's terms (a `--url`, or any of its spellings).
pub(super) fn header(plan: &Plan, flags: &CommonArgs) {
    let peer = &flags.peer;
    if flags.quiet || !(peer.target_url().is_some() || peer.uses_vllm_spellings()) {
        return;
    }
    let ttft = if flags.ttft_includes_connect {
        "TTFT includes connection set-up, as vLLM's does (--ttft-includes-connect)"
    } else {
        "TTFT runs from the request's write on an open connection to the kernel's receive time of the first token (vLLM's includes connection set-up and stamps both ends in its own thread; --ttft-includes-connect to count set-up)"
    };
    let warm = match plan.warmup_requests {
        0 => "no warm-up requests (--num-warmups 0)".to_string(),
        n => format!("{n} unmeasured warm-up request(s) before each trial (vLLM: none unless --num-warmups; --num-warmups 0 to match)"),
    };
    eprintln!("note: goodput measures differently from `vllm bench serve`: {ttft}; {warm}; every request is kept (REPORT.requests.jsonl).");
}

/// `--save-result`: the vLLM-format file(s) beside the report.
pub(super) fn save_result(report: &Report, output: &Path, peer: &PeerArgs) -> anyhow::Result<()> {
    let v = &peer.vllm;
    if !v.save_result {
        return Ok(());
    }
    let list = |s: &Option<String>, default: &str| -> Vec<String> {
        s.as_deref()
            .unwrap_or(default)
            .split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect()
    };
    let mut percentiles = Vec::new();
    for p in list(&v.metric_percentiles, "99") {
        match p.parse::<f64>() {
            Ok(x) if (0.0..=100.0).contains(&x) => percentiles.push(x),
            _ => {
                return Err(crate::UsageError(format!(
                    "--metric-percentiles: `{p}` is not a percentile in 0..=100"
                ))
                .into())
            }
        }
    }
    let opts = VllmResultOptions {
        metrics: list(&v.percentile_metrics, "ttft,tpot,itl"),
        percentiles,
        dir: v.result_dir.clone(),
        filename: v.result_filename.clone(),
    };
    for path in vllm_write::write(report, output, &opts)? {
        eprintln!("vLLM-format result: {}", path.display());
    }
    Ok(())
}
