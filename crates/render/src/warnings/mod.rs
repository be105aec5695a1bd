//! Warnings: results a reader should not take at face value. Each rule looks at
//! one engine (and load level) and says what happened, why it matters and what to
//! do. Printed by `show`, at the end of `goodput run`, and in the HTML page.
//!
//! [`rules`] and [`load`] hold the rules; this file the types, the list and its text.

pub mod adapters;
pub mod cache;
pub mod judgement;
pub mod load;
pub mod rules;
pub mod server;

use report::Report;

use super::text::{x_label, Style};
use load::{client_lag, client_stall, kv_overflow, load_not_reached};
use rules::*;

/// A p99 from fewer requests per trial than this is close to the maximum.
pub const MIN_REQUESTS_FOR_P99: u64 = 100;
/// Share of GPU samples with a thermal slowdown above which a point is throttled.
pub const THERMAL_SHARE_LIMIT: f64 = 0.05;
/// Median SM clock below this share of the maximum means throttled.
pub const CLOCK_SHARE_LIMIT: f64 = 0.7;
/// Achieved rate below this share of the trial's scheduled rate means the client lagged.
pub const ACHIEVED_RATE_LIMIT: f64 = 0.9;
/// Mean requests in flight below this share of a concurrency x: the load was not reached.
pub const ACHIEVED_CONCURRENCY_LIMIT: f64 = 0.5;
/// p99 send lag above this many ms means the client lagged.
pub const SEND_LAG_LIMIT_MS: f64 = 10.0;
/// A client timer that woke more than this many ms late (a trial's
/// `client_stall_ms`) means the client was paused or starved of CPU.
pub use report::CLIENT_STALL_LIMIT_MS;

/// What a warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WarningKind {
    /// The engine failed to launch, become ready, or died.
    EngineFailed,
    /// Every request of a load level failed.
    NoRequestSucceeded,
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
    /// One request's outcome decided whether the point meets the SLO.
    DecidedByOne,
    /// Fewer requests were in flight than the concurrency x names.
    LoadNotReached,
    /// The requests in flight need more tokens than the KV pool holds.
    KvPoolOverflow,
    /// The client did not send at the rate its schedule asked for.
    ClientLag,
    /// The client was paused or starved of CPU during a trial.
    ClientStall,
    /// A workload meant to be uncached was served from the engine's prefix cache.
    CacheWarm,
    /// A request far out of the others' spread (usually the first after start).
    Outliers,
    /// Output token counts were estimated from stream chunks.
    EstimatedTokens,
    /// Answers shorter than the exact length asked for.
    ShortOutputs,
    /// Answers longer than `max_tokens` allows.
    LongOutputs,
    /// Requests reasoned up to their limit and gave no answer.
    NoAnswer,
    /// One LoRA adapter's latency differs from the other adapters'.
    AdapterDiffers,
    /// From the engine's own metrics: queueing, preemption, full KV cache, counts.
    Server(server::ServerWarning),
}

impl WarningKind {
    /// A short title.
    pub fn title(self) -> &'static str {
        match self {
            WarningKind::EngineFailed => "Engine failed",
            WarningKind::NoRequestSucceeded => "No request succeeded",
            WarningKind::ThermalThrottle => "GPU thermally throttled",
            WarningKind::MissingTrials => "Missing trials",
            WarningKind::FailedRequests => "Failed requests",
            WarningKind::FewRequestsForP99 => "p99 from too few requests",
            WarningKind::GoodputZero => "No request met the SLO",
            WarningKind::DecidedByOne => "One request decided this point",
            WarningKind::LoadNotReached => "Load level not reached",
            WarningKind::KvPoolOverflow => "Load does not fit the KV pool",
            WarningKind::ClientLag => "Client could not keep up",
            WarningKind::ClientStall => "Client stalled",
            WarningKind::CacheWarm => "Prompts served from the prefix cache",
            WarningKind::Outliers => "Outlier requests",
            WarningKind::EstimatedTokens => "Token counts estimated",
            WarningKind::ShortOutputs => "Answers shorter than asked",
            WarningKind::LongOutputs => "Answers longer than asked",
            WarningKind::NoAnswer => "Requests without an answer",
            WarningKind::AdapterDiffers => "An adapter's latency differs",
            WarningKind::Server(k) => k.title(),
        }
    }

    /// Why it matters.
    pub fn why(self) -> &'static str {
        match self {
            WarningKind::EngineFailed => "this engine has no results, or fewer than planned.",
            WarningKind::NoRequestSucceeded => {
                "nothing was measured at this load level: no latency, and zero goodput \
                 because of the errors, not because the engine is slow."
            }
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
            WarningKind::DecidedByOne => {
                "whether this load level meets the SLO rests on a single request: another \
                 run may well say the opposite."
            }
            WarningKind::LoadNotReached => {
                "the server saw less load than x says: the latencies and throughput belong \
                 to the load that was in flight."
            }
            WarningKind::KvPoolOverflow => {
                "requests that do not fit in the KV cache wait in the queue: TTFT grows with \
                 the wait, not with the engine's speed."
            }
            WarningKind::ClientLag => {
                "the server saw less load than x says: the latencies belong to a lighter load."
            }
            WarningKind::ClientStall => {
                "while the client was paused or starved, chunks waited unread: the TTFT, TPOT \
                 and ITL of the requests in flight include the stall, which the server never \
                 caused."
            }
            WarningKind::CacheWarm => {
                "a cached prompt skips its prefill: TTFT and goodput are better than a fresh \
                 workload would see, and a comparison with a run that started cold shows the \
                 cache, not the engine."
            }
            WarningKind::Outliers => {
                "one request far slower than the rest moves a p99 (and, in a short trial, \
                 the throughput) by itself: the numbers describe that request, not the \
                 engine's steady state."
            }
            WarningKind::EstimatedTokens => {
                "counts from chunks are wrong when a chunk carries several tokens \
                 (speculative decoding): TPOT and token throughput are approximate."
            }
            WarningKind::ShortOutputs => {
                "an engine that stops before the length asked for generates less and looks \
                 faster: its TPOT, E2E latency and throughput are not comparable with an \
                 engine's that generated every token."
            }
            WarningKind::LongOutputs => {
                "a stream of more chunks than `max_tokens` allows is an engine that ignored \
                 the limit, or one that splits tokens over chunks: without a usage block its \
                 tokens are counted at the limit, so its TPOT and throughput are approximate."
            }
            WarningKind::NoAnswer => {
                "the model thought until the token limit and never answered: the request \
                 succeeded and is fast, but the user got nothing (never counted good)."
            }
            WarningKind::AdapterDiffers => {
                "the pooled figures mix the adapters: a user of the slow adapter sees its \
                 latency, not the pooled one, and an SLO met on the pool may be missed for it."
            }
            WarningKind::Server(k) => k.why(),
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
                all_failed(p),
                failed_requests(p),
                few_requests(p),
                goodput_zero(report, p),
                judgement::decided_by_one(report, p),
                load_not_reached(report, p),
                kv_overflow(report, result, p),
                client_lag(p),
                client_stall(p),
                cache::cache_warm(report, p),
                outliers(p),
                estimated_tokens(p),
                short_outputs(p),
                long_outputs(p),
                rules::no_answer(p),
            ]
            .into_iter()
            .flatten()
            .collect();
            ws.extend(server::rules(p));
            ws.extend(adapters::rules(p));
            queueing_explains_outliers(&mut ws);
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

/// Where the same point's requests queued (on the KV pool, at the server, or were
/// preempted), its slow outliers are those waits: the outlier advice says so
/// instead of asking for more warm-up, so the two warnings do not contradict.
fn queueing_explains_outliers(ws: &mut [(WarningKind, String, String)]) {
    let queued = ws.iter().any(|w| {
        matches!(
            w.0,
            WarningKind::KvPoolOverflow
                | WarningKind::Server(
                    server::ServerWarning::Queued
                        | server::ServerWarning::Preempted
                        | server::ServerWarning::KvFull
                )
        )
    });
    if !queued {
        return;
    }
    for w in ws.iter_mut().filter(|w| w.0 == WarningKind::Outliers) {
        w.2 = "These are requests that waited: at this load the requests queued for the \
               KV cache (see the queueing warning of the same load level), so more warm-up \
               will not remove them; lower the load, or give the engine a larger KV pool."
            .into();
    }
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

/// `Warnings: 4 kinds, 10 in all`: the headings below are kinds, each with its
/// lines (one per engine and load level).
fn warnings_title(ws: &[Warning]) -> String {
    let kinds = grouped(ws).len();
    format!(
        "Warnings: {}, {} in all",
        crate::text::count(kinds as u64, "kind"),
        ws.len()
    )
}

/// The warnings as text, grouped by kind: the title and why it matters, one line per
/// engine and load level, then what to do. `No warnings.` when there are none.
pub fn warnings_text(report: &Report, color: bool) -> String {
    let ws = warnings(report);
    if ws.is_empty() {
        return "No warnings.\n".into();
    }
    let mut out = Style::Bold.paint(&warnings_title(&ws), color);
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
    use crate::markdown::md_escape;
    let ws = warnings(report);
    if ws.is_empty() {
        return "No warnings.\n".into();
    }
    let mut out = format!("### {}\n", warnings_title(&ws));
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
