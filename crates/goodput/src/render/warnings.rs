//! Warnings: results a reader should not take at face value. Each rule looks at
//! one engine (and load level) and says what happened, why it matters and what to
//! do. Printed by `show`, at the end of `goodput run`, and in the HTML page.

use report::{EngineResult, Point, Report, RunStatus};

use super::rows::{expected_trials, planned_trials, total, trials_with_results};
use super::text::{num, x_label, Style};

/// A p99 from fewer requests per trial than this is close to the maximum.
pub const MIN_REQUESTS_FOR_P99: u64 = 100;
/// Share of GPU samples with a thermal slowdown above which a point is throttled.
pub const THERMAL_SHARE_LIMIT: f64 = 0.05;
/// Median SM clock below this share of the maximum means throttled.
pub const CLOCK_SHARE_LIMIT: f64 = 0.7;
/// Achieved rate below this share of the offered rate means the client lagged.
pub const ACHIEVED_RATE_LIMIT: f64 = 0.9;
/// p99 send lag above this many ms means the client lagged.
pub const SEND_LAG_LIMIT_MS: f64 = 10.0;

/// What a warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WarningKind {
    /// The engine failed to launch, become ready, or died.
    EngineFailed,
    /// The GPU was thermally throttled.
    ThermalThrottle,
    /// Fewer trials produced results than planned.
    MissingTrials,
    /// Requests failed.
    FailedRequests,
    /// p99 computed from fewer than [`MIN_REQUESTS_FOR_P99`] requests per trial.
    FewRequestsForP99,
    /// No request met the SLO.
    GoodputZero,
    /// The requests in flight need more tokens than the KV pool holds.
    KvPoolOverflow,
    /// The client did not send at the offered rate.
    ClientLag,
    /// Output token counts were estimated from stream chunks.
    EstimatedTokens,
}

impl WarningKind {
    /// A short title.
    pub fn title(self) -> &'static str {
        match self {
            WarningKind::EngineFailed => "Engine failed",
            WarningKind::ThermalThrottle => "GPU thermally throttled",
            WarningKind::MissingTrials => "Missing trials",
            WarningKind::FailedRequests => "Failed requests",
            WarningKind::FewRequestsForP99 => "p99 from too few requests",
            WarningKind::GoodputZero => "No request met the SLO",
            WarningKind::KvPoolOverflow => "Load does not fit the KV pool",
            WarningKind::ClientLag => "Client could not keep up",
            WarningKind::EstimatedTokens => "Token counts estimated",
        }
    }

    /// Why it matters.
    pub fn why(self) -> &'static str {
        match self {
            WarningKind::EngineFailed => "this engine has no results, or fewer than planned.",
            WarningKind::ThermalThrottle => {
                "a throttled GPU runs far below its clock: the results measure the cooling, \
                 not the engine, and change from run to run."
            }
            WarningKind::MissingTrials => {
                "a median over fewer trials is less reliable, and a trial that vanished may \
                 hide a crash."
            }
            WarningKind::FailedRequests => {
                "failed requests are left out of the latency statistics and count as not \
                 good: latencies look better than the service was."
            }
            WarningKind::FewRequestsForP99 => {
                "below 100 requests a p99 is about the single slowest request, not a \
                 percentile; it swings from run to run."
            }
            WarningKind::GoodputZero => "at this load the configuration does not serve the SLO.",
            WarningKind::KvPoolOverflow => {
                "requests that do not fit in the KV cache wait in the queue: TTFT grows with \
                 the wait, not with the engine's speed."
            }
            WarningKind::ClientLag => {
                "the server saw less load than x says: the latencies belong to a lighter load."
            }
            WarningKind::EstimatedTokens => {
                "counts from chunks are wrong when a chunk carries several tokens \
                 (speculative decoding): TPOT and token throughput are approximate."
            }
        }
    }
}

/// One warning about one engine, at one load level (`x`) or for the whole engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    /// The engine.
    pub engine: String,
    /// The load level, `None` when the warning is about the whole engine.
    pub x: Option<f64>,
    /// What kind of problem.
    pub kind: WarningKind,
    /// What happened, with the numbers.
    pub message: String,
    /// What to do about it.
    pub advice: String,
}

/// All warnings of a report: engines in run order, then load levels, then kinds.
pub fn warnings(report: &Report) -> Vec<Warning> {
    let mut out = Vec::new();
    for (engine, result) in &report.load {
        if let Some(w) = engine_failed(engine, result) {
            out.push(w);
        }
        for p in &result.points {
            let mut ws: Vec<(WarningKind, String, String)> = [
                thermal(report, p),
                missing_trials(report, p),
                failed_requests(p),
                few_requests(p),
                goodput_zero(report, p),
                kv_overflow(report, result, p),
                client_lag(p),
                estimated_tokens(p),
            ]
            .into_iter()
            .flatten()
            .collect();
            ws.sort_by_key(|w| w.0);
            out.extend(ws.into_iter().map(|(kind, message, advice)| Warning {
                engine: engine.clone(),
                x: Some(p.x),
                kind,
                message,
                advice,
            }));
        }
    }
    out
}

type Found = Option<(WarningKind, String, String)>;

fn engine_failed(engine: &str, result: &EngineResult) -> Option<Warning> {
    let e = result.error.as_ref()?;
    let mut message = format!("{} ({})", e.message, e.kind);
    if let Some(st) = &e.exit_status {
        message.push_str(&format!("; exit status {st}"));
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
fn max_sm_clock(report: &Report, p: &Point) -> Option<f64> {
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

fn thermal(report: &Report, p: &Point) -> Found {
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

fn missing_trials(report: &Report, p: &Point) -> Found {
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

fn failed_requests(p: &Point) -> Found {
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

fn few_requests(p: &Point) -> Found {
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

fn ratio_text(name: &str, value: Option<f64>, bound: f64) -> Option<String> {
    let v = value?;
    (v > bound && bound > 0.0).then(|| {
        format!(
            "median {name} {} ms is {:.2}x the {} ms SLO",
            num(v),
            v / bound,
            num(bound)
        )
    })
}

fn goodput_zero(report: &Report, p: &Point) -> Found {
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
        missed.extend(ratio_text("E2E latency", s.median, b));
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

fn kv_overflow(report: &Report, result: &EngineResult, p: &Point) -> Found {
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

fn client_lag(p: &Point) -> Found {
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

fn estimated_tokens(p: &Point) -> Found {
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

/// The warnings of one kind, for display.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The kind.
    pub kind: WarningKind,
    /// `(where, message)`: `engine x=1, 4` and what happened there.
    pub lines: Vec<(String, String)>,
    /// The distinct pieces of advice, in order.
    pub advice: Vec<String>,
}

/// Warnings grouped by kind, in kind order; within a group, lines with the same
/// engine and message are merged (`x=1, 4`).
pub fn grouped(ws: &[Warning]) -> Vec<Group> {
    let mut kinds: Vec<WarningKind> = ws.iter().map(|w| w.kind).collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .map(|kind| {
            let mut lines: Vec<(String, Vec<String>, String)> = Vec::new();
            let mut advice: Vec<String> = Vec::new();
            for w in ws.iter().filter(|w| w.kind == kind) {
                let x = w.x.map(x_label);
                match lines
                    .iter_mut()
                    .find(|(e, _, m)| *e == w.engine && *m == w.message)
                {
                    Some((_, xs, _)) => xs.extend(x),
                    None => {
                        lines.push((w.engine.clone(), x.into_iter().collect(), w.message.clone()))
                    }
                }
                if !advice.contains(&w.advice) {
                    advice.push(w.advice.clone());
                }
            }
            let lines = lines
                .into_iter()
                .map(|(e, xs, m)| {
                    let at = if xs.is_empty() {
                        e
                    } else {
                        format!("{e} x={}", xs.join(", "))
                    };
                    (at, m)
                })
                .collect();
            Group {
                kind,
                lines,
                advice,
            }
        })
        .collect()
}

/// The warnings as text, grouped by kind: the title and why it matters, one line per
/// engine and load level, then what to do. `No warnings.` when there are none.
pub fn warnings_text(report: &Report, color: bool) -> String {
    let ws = warnings(report);
    if ws.is_empty() {
        return "No warnings.\n".into();
    }
    let mut out = Style::Bold.paint(&format!("Warnings ({})", ws.len()), color);
    out.push('\n');
    for Group {
        kind,
        lines,
        advice,
    } in grouped(&ws)
    {
        let title = Style::Warn.paint(&format!("! {}", kind.title()), color);
        out.push_str(&format!("{title}: {}\n", kind.why()));
        for (at, m) in lines {
            out.push_str(&format!("    {at}: {m}\n"));
        }
        for a in advice {
            out.push_str(&format!("    -> {a}\n"));
        }
    }
    out
}

/// The warnings as Markdown.
pub fn warnings_markdown(report: &Report) -> String {
    use super::table::md_escape;
    let ws = warnings(report);
    if ws.is_empty() {
        return "No warnings.\n".into();
    }
    let mut out = format!("### Warnings ({})\n", ws.len());
    for Group {
        kind,
        lines,
        advice,
    } in grouped(&ws)
    {
        out.push_str(&format!(
            "\n**{}**: {}\n\n",
            kind.title(),
            md_escape(kind.why())
        ));
        for (at, m) in lines {
            out.push_str(&format!("- {}: {}\n", md_escape(&at), md_escape(&m)));
        }
        for a in advice {
            out.push_str(&format!("- *What to do*: {}\n", md_escape(&a)));
        }
    }
    out
}
