//! The warning rules, one function per rule: each looks at one point (or engine)
//! and returns what it found, or `None`.

use report::{EngineResult, Point, Report, RunStatus};

use super::{
    Warning, WarningKind, ACHIEVED_RATE_LIMIT, CLOCK_SHARE_LIMIT, MIN_REQUESTS_FOR_P99,
    SEND_LAG_LIMIT_MS, THERMAL_SHARE_LIMIT,
};
use crate::render::rows::{expected_trials, planned_trials, total, trials_with_results};
use crate::render::text::{num, x_label};

/// What a rule found: the kind, the message and the advice.
pub type Found = Option<(WarningKind, String, String)>;

/// The engine failed to launch, become ready, or died: kind, message, exit status.
pub fn engine_failed(engine: &str, result: &EngineResult) -> Option<Warning> {
    let e = result.error.as_ref()?;
    let mut message = format!("{} ({})", e.message, e.kind);
    match &e.exit_status {
        Some(st) if !e.message.contains(st.as_str()) => {
            message.push_str(&format!("; exit status {st}"))
        }
        _ => {}
    }
    if let Some(last) = e.log_tail.iter().rev().find(|l| !l.trim().is_empty()) {
        message.push_str(&format!("; last log line: {}", last.trim()));
    }
    Some(Warning {
        engine: engine.to_string(),
        x: None,
        kind: WarningKind::EngineFailed,
        message,
        advice: "Read the engine's log (its log file is named in the environment), fix the \
                 command line or free the GPU memory it needs, and rerun this engine."
            .into(),
    })
}

/// The GPU's maximum SM clock: the point's, else the largest of the environment's GPUs.
pub fn max_sm_clock(report: &Report, p: &Point) -> Option<f64> {
    p.gpu
        .as_ref()
        .and_then(|g| g.max_sm_clock_mhz)
        .or_else(|| {
            let env = report.environment.as_ref()?;
            env.gpus
                .iter()
                .filter_map(|g| g.max_sm_clock_mhz)
                .reduce(f64::max)
        })
        .filter(|m| *m > 0.0)
}

/// Thermal slowdown in more than 5% of samples, or a median SM clock below 70% of
/// the maximum (when known).
pub fn thermal(report: &Report, p: &Point) -> Found {
    let g = p.gpu.as_ref()?;
    let share = g.thermal_share.filter(|s| *s > THERMAL_SHARE_LIMIT);
    let clock = g.median_sm_mhz.median;
    let max = max_sm_clock(report, p);
    let slow = match (clock, max) {
        (Some(c), Some(m)) => c < CLOCK_SHARE_LIMIT * m,
        _ => false,
    };
    if share.is_none() && !slow {
        return None;
    }
    let mut parts = Vec::new();
    if let Some(s) = g.thermal_share {
        parts.push(format!(
            "thermal slowdown in {}% of GPU samples",
            num(s * 100.0)
        ));
    }
    if let Some(c) = clock {
        let mut s = format!("median SM clock {} MHz", num(c));
        if let Some(m) = max {
            s.push_str(&format!(
                " ({}% of its {} MHz maximum)",
                num((c / m * 100.0).round()),
                num(m)
            ));
        }
        parts.push(s);
    }
    if let Some(t) = g.max_temp_c {
        parts.push(format!("up to {} °C", num(t)));
    }
    Some((
        WarningKind::ThermalThrottle,
        parts.join(", "),
        "Fix the cooling (airflow, fans, room temperature) or wait for the GPU to cool \
         between trials, then rerun; compare engines only on runs without throttling."
            .into(),
    ))
}

/// Fewer trials with results than planned (or than the other points have).
pub fn missing_trials(report: &Report, p: &Point) -> Found {
    let got = trials_with_results(p);
    let expected = expected_trials(report, p)?;
    let partial = p.status == Some(RunStatus::Partial);
    if got >= expected && !partial {
        return None;
    }
    let mut message = format!("{got} of {expected} trials produced results");
    if planned_trials(report, p).is_none() {
        message.push_str(&format!(
            "; the report records neither the plan (other points have {expected}) nor why"
        ));
    }
    for t in &p.trials {
        if let Some(e) = &t.error {
            message.push_str(&format!("; trial {}: {e}", t.index + 1));
        }
    }
    Some((
        WarningKind::MissingTrials,
        message,
        "Check the engine log around the missing trial (crash, out of memory, timeout) \
         and rerun this load level."
            .into(),
    ))
}

/// Failed requests, with their error kinds.
pub fn failed_requests(p: &Point) -> Found {
    let from_errors: u64 = p.errors.values().sum();
    let failed = total(&p.failed).unwrap_or(0).max(from_errors);
    if failed == 0 {
        return None;
    }
    let all = p.completed.iter().sum::<u64>() + failed;
    let mut message = format!("{failed} of {all} requests failed");
    if !p.errors.is_empty() {
        let kinds: Vec<String> = p.errors.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        message.push_str(&format!(" ({})", kinds.join(", ")));
    }
    Some((
        WarningKind::FailedRequests,
        message,
        "Look at the error kinds and the engine log; lower the load, or raise the request \
         timeout if requests timed out."
            .into(),
    ))
}

/// A p99 from fewer than 100 requests per trial.
pub fn few_requests(p: &Point) -> Found {
    let per_trial: Vec<u64> = if p.completed.is_empty() {
        p.trials.iter().map(|t| t.completed).collect()
    } else {
        p.completed.clone()
    };
    let fewest = per_trial.iter().copied().filter(|n| *n > 0).min()?;
    if fewest >= MIN_REQUESTS_FOR_P99 {
        return None;
    }
    let most = per_trial.iter().copied().max().unwrap_or(fewest);
    let count = if most == fewest {
        fewest.to_string()
    } else {
        format!("{fewest}-{most}")
    };
    Some((
        WarningKind::FewRequestsForP99,
        format!("p99 TTFT and TPOT come from {count} requests per trial"),
        format!(
            "Run at least {MIN_REQUESTS_FOR_P99} requests per trial (1000 for a stable p99), \
             or judge by the medians."
        ),
    ))
}

fn ratio_text(name: &str, value: Option<f64>, bound: Option<f64>) -> Option<String> {
    let (v, bound) = (value?, bound?);
    (v > bound && bound > 0.0).then(|| {
        format!(
            "median {name} {} ms is {:.2}x the {} ms SLO",
            num(v),
            v / bound,
            num(bound)
        )
    })
}

/// No good request: which SLO bound the median missed and by how much.
pub fn goodput_zero(report: &Report, p: &Point) -> Found {
    let good = total(&p.good);
    let zero = match good {
        Some(g) => g == 0 && (p.completed.iter().sum::<u64>() + total(&p.failed).unwrap_or(0)) > 0,
        None => p.goodput_rps.n > 0 && p.goodput_rps.max == Some(0.0),
    };
    if !zero {
        return None;
    }
    let slo = &report.slo;
    let mut missed: Vec<String> = [
        ratio_text("TTFT", p.median_ttft_ms.median, slo.ttft_ms),
        ratio_text("TPOT", p.median_tpot_ms.median, slo.tpot_ms),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let (Some(b), Some(s)) = (slo.e2el_ms, &p.median_e2el_ms) {
        missed.extend(ratio_text("E2E latency", s.median, Some(b)));
    }
    let mut message = if missed.is_empty() {
        "the medians meet the SLO but no single request met every bound".to_string()
    } else {
        missed.join("; ")
    };
    if good.is_none() {
        message.push_str(" (no count of good requests recorded)");
    }
    let advice = "Lower the load until the median request meets the SLO. For TTFT: shorter \
                  prompts, chunked prefill, prefix caching, or more KV cache. For TPOT: \
                  smaller batches, speculative decoding, a smaller or quantized model, or a \
                  faster GPU."
        .to_string();
    Some((WarningKind::GoodputZero, message, advice))
}

/// Concurrency x tokens per request above the KV pool (concurrency mode only).
pub fn kv_overflow(report: &Report, result: &EngineResult, p: &Point) -> Found {
    let concurrency = match &report.run {
        Some(r) => r.load_mode == "concurrency",
        None => true,
    };
    let pool = result.kv_pool_tokens.filter(|k| *k > 0)? as f64;
    if !concurrency {
        return None;
    }
    let input = p.mean_input_tokens.as_ref().and_then(|s| s.median);
    let output = p
        .mean_output_tokens
        .as_ref()
        .and_then(|s| s.median)
        .or_else(|| {
            let (t, r) = (p.output_throughput.median?, p.request_throughput.median?);
            (r > 0.0).then(|| t / r)
        })?;
    let per_request = input.unwrap_or(0.0) + output;
    let need = p.x * per_request;
    if need <= pool || per_request <= 0.0 {
        return None;
    }
    let tokens = match input {
        Some(i) => format!(
            "{} tokens each ({} prompt + {} output)",
            num(per_request.round()),
            num(i.round()),
            num(output.round())
        ),
        None => format!(
            "at least {} output tokens each (prompt length not recorded)",
            num(output.round())
        ),
    };
    let fit = (pool / per_request).floor();
    Some((
        WarningKind::KvPoolOverflow,
        format!(
            "{} requests in flight x {tokens} = {} tokens, more than the {}-token KV pool: \
             about {} fit at once and the others wait",
            x_label(p.x),
            num(need.round()),
            num(pool),
            num(fit)
        ),
        format!(
            "Lower the concurrency to about {}, or give the KV cache more room (more GPU \
             memory for the engine, a shorter maximum context, a quantized KV cache).",
            num(fit.max(1.0))
        ),
    ))
}

/// Achieved rate below 90% of offered, or p99 send lag above 10 ms.
pub fn client_lag(p: &Point) -> Found {
    let mut parts = Vec::new();
    if let (Some(offered), Some(achieved)) = (
        p.offered_rate,
        p.achieved_rate.as_ref().and_then(|s| s.median),
    ) {
        if offered > 0.0 && achieved < ACHIEVED_RATE_LIMIT * offered {
            parts.push(format!(
                "the client sent {} req/s of the {} req/s offered ({}%)",
                num(achieved),
                num(offered),
                num((achieved / offered * 100.0).round())
            ));
        }
    }
    if let Some(lag) = p.p99_send_lag_ms.as_ref().and_then(|s| s.median) {
        if lag > SEND_LAG_LIMIT_MS {
            parts.push(format!(
                "p99 send lag {} ms (limit {} ms)",
                num(lag),
                num(SEND_LAG_LIMIT_MS)
            ));
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some((
        WarningKind::ClientLag,
        parts.join("; "),
        "Give the client free CPU cores (or another machine) and rerun; with \
         max_concurrency, a lag means every slot was busy: the server is saturated at this \
         rate."
            .into(),
    ))
}

/// Output token counts estimated from chunks.
pub fn estimated_tokens(p: &Point) -> Found {
    let n = p.estimated_tokens.filter(|n| *n > 0)?;
    Some((
        WarningKind::EstimatedTokens,
        format!(
            "output tokens of {n} requests were counted from stream chunks: the server sent \
             no usage"
        ),
        "Make the server report usage in the stream (stream_options.include_usage), or \
         use an engine version that does."
            .into(),
    ))
}
