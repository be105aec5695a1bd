//! The rules about the load itself: whether the load x names is the load the server
//! saw. In concurrency mode they reason with the achieved concurrency (mean requests
//! in flight), never with x alone; in rate mode with the trial's own schedule, never
//! with the nominal rate.

use report::{EngineResult, Point, Report};

use super::rules::Found;
use super::{
    WarningKind, ACHIEVED_CONCURRENCY_LIMIT, ACHIEVED_RATE_LIMIT, CLIENT_STALL_LIMIT_MS,
    SEND_LAG_LIMIT_MS,
};
use crate::text::{fixed, num, x_label};

/// True when x is a concurrency: the run says so, or the report is in the reference
/// format (which records no mode and whose x is closed-loop concurrency).
pub fn concurrency_mode(report: &Report) -> bool {
    report
        .run
        .as_ref()
        .is_none_or(|r| r.load_mode == report::LoadMode::Concurrency)
}

/// Requests per trial: the run's plan, else the most any trial of the point sent.
pub fn requests_per_trial(report: &Report, p: &Point) -> Option<u64> {
    let planned = report
        .run
        .as_ref()
        .map(|r| u64::from(r.requests_per_trial))
        .filter(|n| *n > 0);
    planned.or_else(|| {
        let failed = p.failed.as_deref().unwrap_or(&[]);
        (0..p.completed.len().max(failed.len()))
            .map(|i| p.completed.get(i).unwrap_or(&0) + failed.get(i).unwrap_or(&0))
            .max()
            .filter(|n| *n > 0)
    })
}

/// The median over trials of the mean requests in flight, when recorded.
pub fn achieved_concurrency(p: &Point) -> Option<f64> {
    p.achieved_concurrency
        .as_ref()
        .and_then(|s| s.median)
        .filter(|c| c.is_finite())
}

/// The requests in flight to reason with in concurrency mode, and how to say it: the
/// achieved concurrency when recorded, else x bounded by the requests per trial.
fn in_flight(report: &Report, p: &Point) -> (f64, String) {
    if let Some(c) = achieved_concurrency(p) {
        return (
            c,
            format!(
                "{} requests in flight on average (x={})",
                fixed(c, 1),
                x_label(p.x)
            ),
        );
    }
    match requests_per_trial(report, p) {
        Some(n) if (n as f64) < p.x => (
            n as f64,
            format!("at most {n} requests in flight (x={})", x_label(p.x)),
        ),
        _ => (p.x, format!("{} requests in flight", x_label(p.x))),
    }
}

/// Concurrency mode: x above the requests per trial (x can never be reached), or a
/// mean in flight below half of x.
pub fn load_not_reached(report: &Report, p: &Point) -> Found {
    if !concurrency_mode(report) || p.x <= 0.0 {
        return None;
    }
    let achieved = achieved_concurrency(p);
    let mut parts = Vec::new();
    let requests = requests_per_trial(report, p).filter(|n| (*n as f64) < p.x);
    if let Some(n) = requests {
        parts.push(format!(
            "x={} with {n} requests per trial: at most {n} were ever in flight",
            x_label(p.x)
        ));
    }
    if let Some(c) = achieved {
        if requests.is_some() || c < ACHIEVED_CONCURRENCY_LIMIT * p.x {
            parts.push(format!(
                "{} in flight on average, {}% of x",
                fixed(c, 1),
                num((c / p.x * 100.0).round())
            ));
        }
    }
    if parts.is_empty() {
        return None;
    }
    let advice = match requests {
        Some(_) => format!(
            "Send several times x requests per trial (at least {}), or lower x to the \
             load that was reached; report this point by its achieved concurrency.",
            num((p.x * 4.0).ceil())
        ),
        None => "Send more requests per trial so that the start and the drain are a small \
                 part of it, or look for what kept requests from being sent (client CPU, \
                 connection limits)."
            .to_string(),
    };
    Some((WarningKind::LoadNotReached, parts.join("; "), advice))
}

/// Requests in flight x tokens per request above the KV pool (concurrency mode only),
/// with the requests in flight as they were, not as x asked.
pub fn kv_overflow(report: &Report, result: &EngineResult, p: &Point) -> Found {
    let pool = result.kv_pool_tokens.filter(|k| *k > 0)? as f64;
    if !concurrency_mode(report) {
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
    let (load, load_text) = in_flight(report, p);
    let need = load * per_request;
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
            "{load_text} x {tokens} = {} tokens, more than the {}-token KV pool: about {} \
             fit at once and the others wait",
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

/// Rate mode: the client sent below 90% of the trial's own schedule, or its p99 send
/// lag is above 10 ms. Never judged against the nominal rate: a short Poisson draw
/// schedules fewer (or more) requests than x says, and that is the schedule, not the
/// client. A report without the scheduled rate is judged by the send lag alone.
pub fn client_lag(p: &Point) -> Found {
    let mut parts = Vec::new();
    let median = |s: &Option<report::Stat>| s.as_ref().and_then(|s| s.median);
    if let (Some(scheduled), Some(achieved)) = (median(&p.scheduled_rate), median(&p.achieved_rate))
    {
        if scheduled > 0.0 && achieved < ACHIEVED_RATE_LIMIT * scheduled {
            parts.push(format!(
                "the client sent {} req/s of the {} req/s its schedule asked for ({}%)",
                num(achieved),
                num(scheduled),
                num((achieved / scheduled * 100.0).round())
            ));
        }
    }
    if let Some(lag) = median(&p.p99_send_lag_ms) {
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

/// A trial whose client timer woke more than [`CLIENT_STALL_LIMIT_MS`] late: the
/// client was paused (SIGSTOP, a suspended machine) or starved of CPU. Names each
/// such trial and how late.
pub fn client_stall(p: &Point) -> Found {
    let late: Vec<String> = p
        .trials
        .iter()
        .filter_map(|t| {
            let ms = t.client_stall_ms.filter(|ms| *ms > CLIENT_STALL_LIMIT_MS)?;
            Some(format!(
                "trial {}: {} ms late",
                t.index + 1,
                num(ms.round())
            ))
        })
        .collect();
    if late.is_empty() {
        return None;
    }
    Some((
        WarningKind::ClientStall,
        format!(
            "the client's timer woke late ({}; limit {} ms)",
            late.join(", "),
            num(CLIENT_STALL_LIMIT_MS)
        ),
        "Rerun the flagged trials on a client that is not paused or starved: free CPU \
         cores for goodput, no debugger stops, no suspended machine."
            .into(),
    ))
}
