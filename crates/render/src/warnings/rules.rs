//! The warning rules, one function per rule: each looks at one point (or engine)
//! and returns what it found, or `None`.

use report::{EngineResult, FailureKind, OutlierMetric, Point, Report, RunStatus};

use super::{Warning, WarningKind, CLOCK_SHARE_LIMIT, MIN_REQUESTS_FOR_P99, THERMAL_SHARE_LIMIT};
use crate::rows::{expected_trials, planned_trials, total, trials_with_results};
use crate::text::{fixed, num};
use report::outlier::{is_outlier, median_and_mad};

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
    // A message that names the cause found in the log (engine::EngineHandle::explain)
    // needs no last line, which is often a warning printed after the cause.
    let last = e.log_tail.iter().rev().find(|l| !l.trim().is_empty());
    if let Some(last) = last.filter(|_| e.cause.is_empty()) {
        message.push_str(&format!("; last log line: {}", last.trim()));
    }
    let advice = match e.kind {
        // A server goodput did not launch: it has no log here and no GPU of ours.
        FailureKind::Unreachable => {
            "Check that the server is running and reachable from this machine \
                          (address, port, firewall, API key), then rerun this engine."
        }
        FailureKind::Interrupted => {
            "The run was interrupted while this engine was starting: rerun \
                          into the same output to resume the run."
        }
        FailureKind::NotRun => {
            "The run was interrupted before this engine started: rerun into the \
                      same output to run it (finished engines are kept)."
        }
        FailureKind::Launch => {
            "Fix the engine's command line in the profile (program path, arguments, \
                     environment), then rerun this engine."
        }
        FailureKind::ReadyTimeout
        | FailureKind::Exited
        | FailureKind::DiedDuringTrial
        | FailureKind::Stop
        | FailureKind::Workload
        | FailureKind::Unknown(_) => {
            "Read the engine's log (its log file is named in the environment), fix the \
              command line or free the GPU memory it needs, and rerun this engine."
        }
    };
    Some(Warning {
        engine: engine.to_string(),
        x: None,
        kind: WarningKind::EngineFailed,
        message,
        advice: advice.into(),
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
    let advice = if simulated_gpu(report) {
        // No hardware advice about a GPU that does not exist.
        "This GPU is goodput's simulator, whose thermal model throttles by design after a \
         while under load: start it with `goodput sim --no-thermal` (for a `kind = \"sim\"` \
         engine, `args = [\"--no-thermal\"]`) to measure without it."
    } else {
        "Fix the cooling (airflow, fans, room temperature) or wait for the GPU to cool \
         between trials, then rerun; compare engines only on runs without throttling."
    };
    Some((
        WarningKind::ThermalThrottle,
        parts.join(", "),
        advice.into(),
    ))
}

/// Whether the report's GPUs are goodput's simulator's (its telemetry names the
/// driver `goodput-sim`): no advice about cooling or hardware applies to them.
pub fn simulated_gpu(report: &Report) -> bool {
    report.environment.as_ref().is_some_and(|env| {
        !env.gpus.is_empty()
            && env
                .gpus
                .iter()
                .all(|g| g.driver.as_deref() == Some("goodput-sim"))
    })
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
    // A deliberate interrupt is not a crash: say how to finish instead.
    let interrupted = report.run.as_ref().is_some_and(|r| r.interrupted())
        || p.trials.iter().any(|t| t.interrupted());
    let advice = if interrupted {
        "The run was interrupted: rerun into the same output to run the missing trials \
         (complete trials are kept)."
    } else {
        "Check the engine log around the missing trial (crash, out of memory, timeout) \
         and rerun this load level."
    };
    Some((WarningKind::MissingTrials, message, advice.into()))
}

/// Failed requests of a point: the per-trial counts, or the by-kind counts when larger.
fn failed_count(p: &Point) -> u64 {
    let from_errors: u64 = p.errors.values().sum();
    total(&p.failed).unwrap_or(0).max(from_errors)
}

/// True when requests were sent and none of them succeeded.
pub fn nothing_succeeded(p: &Point) -> bool {
    failed_count(p) > 0 && p.completed.iter().sum::<u64>() == 0
}

/// `(http_500: 30, stall: 2); first error: http_500: Internal Server Error`: the
/// error kinds and the first error's detail, as the report has them.
fn error_kinds_text(p: &Point) -> String {
    let mut s = String::new();
    if !p.errors.is_empty() {
        let kinds: Vec<String> = p.errors.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        s.push_str(&format!(" ({})", kinds.join(", ")));
    }
    if let Some(e) = p.first_error.as_deref().filter(|e| !e.trim().is_empty()) {
        s.push_str(&format!("; first error: {}", e.trim()));
    }
    s
}

/// Every request failed: nothing was measured, and the SLO and load warnings would
/// only mislead, so this one stands for them.
pub fn all_failed(p: &Point) -> Found {
    if !nothing_succeeded(p) {
        return None;
    }
    let failed = failed_count(p);
    let what = if failed == 1 {
        "the only request failed".to_string()
    } else {
        format!("all {failed} requests failed")
    };
    Some((
        WarningKind::NoRequestSucceeded,
        format!("no request succeeded: {what}{}", error_kinds_text(p)),
        "Fix what makes the requests fail before reading any number: the first error and \
         the engine log say what (wrong model name, API or port; an engine that crashed or \
         is out of memory; a request or stall timeout too short for the first request)."
            .into(),
    ))
}

/// Failed requests, with their error kinds (when some succeeded; see [`all_failed`]).
pub fn failed_requests(p: &Point) -> Found {
    let failed = failed_count(p);
    if failed == 0 || nothing_succeeded(p) {
        return None;
    }
    let all = p.completed.iter().sum::<u64>() + failed;
    let message = format!("{failed} of {all} requests failed{}", error_kinds_text(p));
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
    // Only trials that produced results count (an interrupted trial's requests are
    // in no percentile): the same trials the table counts.
    let per_trial: Vec<u64> = if p.completed.is_empty() {
        p.trials
            .iter()
            .filter(|t| t.status == RunStatus::Complete)
            .map(|t| t.completed)
            .collect()
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
        format!(
            "{} from {count} request{} per trial",
            // An embeddings answer is not streamed: its p99 is E2EL's.
            if p.embeddings.is_some() {
                "p99 E2EL comes"
            } else {
                "p99 TTFT and TPOT come"
            },
            if most == 1 { "" } else { "s" }
        ),
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

/// No good request although some succeeded: which SLO bound the median missed and by
/// how much.
pub fn goodput_zero(report: &Report, p: &Point) -> Found {
    if nothing_succeeded(p) {
        return None;
    }
    let good = total(&p.good);
    let zero = match good {
        Some(g) => g == 0 && (p.completed.iter().sum::<u64>() + total(&p.failed).unwrap_or(0)) > 0,
        None => p.goodput_rps.n > 0 && p.goodput_rps.max == Some(0.0),
    };
    if !zero {
        return None;
    }
    let slo = &report.slo;
    let missed: Vec<String> = slo
        .bounds
        .iter()
        .filter_map(|(m, b)| {
            let median = (m.def().median)(p).and_then(|s| s.median);
            ratio_text(m.label(), median, Some(b))
        })
        .collect();
    let medians_known = p.median_ttft_ms.median.is_some() || p.median_tpot_ms.median.is_some();
    let mut message = if missed.is_empty() && medians_known {
        "the medians meet the SLO but no single request met every bound".to_string()
    } else if missed.is_empty() {
        "no request met every bound (no median latency recorded)".to_string()
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

/// Answers shorter than the exact length asked for.
pub fn short_outputs(p: &Point) -> Found {
    let s = p.short_outputs.as_ref().filter(|s| s.requests > 0)?;
    let reasons: Vec<String> = s
        .finish_reasons
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    Some((
        WarningKind::ShortOutputs,
        format!(
            "{} of {} requests ({:.0}%) got fewer output tokens than the exact length asked \
             for (finish reasons: {})",
            s.requests,
            s.of,
            100.0 * s.requests as f64 / s.of.max(1) as f64,
            reasons.join(", ")
        ),
        "Make the engine honour `min_tokens` and `ignore_eos` (vLLM does; some servers \
         ignore them), or compare engines on throughput of requests of equal length."
            .into(),
    ))
}

/// Answers longer than `max_tokens` allows.
pub fn long_outputs(p: &Point) -> Found {
    let l = p.long_outputs.as_ref().filter(|l| l.requests > 0)?;
    Some((
        WarningKind::LongOutputs,
        format!(
            "{} of {} requests ({:.0}%) streamed more content chunks than their max_tokens \
             allows, with no usage block: their output was counted at max_tokens",
            l.requests,
            l.of,
            100.0 * l.requests as f64 / l.of.max(1) as f64,
        ),
        "Make the server report usage in the stream (stream_options.include_usage) so \
         tokens are counted, not chunks, and check that it honours max_tokens."
            .into(),
    ))
}

/// A far-out request as the report shows it.
struct FarOut {
    /// `TTFT` or `E2E latency`.
    metric: String,
    /// Its value, ms.
    value: f64,
    /// The median of the metric, ms.
    median: f64,
    /// `(trial, index)`, when known.
    at: Option<(u32, u32)>,
}

/// What the report says about far-out requests, worst first: the point's `outliers`,
/// or for a report without them the pooled TTFT grid (the same rule on the grid's
/// values; which request is not known).
fn outlier_list(p: &Point) -> Vec<FarOut> {
    if let Some(list) = &p.outliers {
        return list
            .iter()
            .filter(|o| o.median_ms > 0.0 && o.value_ms.is_finite())
            .map(|o| {
                let name = match &o.metric {
                    OutlierMetric::Ttft => "TTFT".to_string(),
                    OutlierMetric::E2el => "E2E latency".to_string(),
                    other @ OutlierMetric::Unknown(_) => other.to_string(),
                };
                FarOut {
                    metric: name,
                    value: o.value_ms,
                    median: o.median_ms,
                    at: Some((o.trial, o.index)),
                }
            })
            .collect();
    }
    let requests: u64 = p.completed.iter().sum();
    if requests < report::outlier::OUTLIER_MIN_REQUESTS as u64 {
        return Vec::new();
    }
    let mut grid: Vec<f64> = p.ttft_quantiles_ms.clone();
    report::stats::sort_values(&mut grid);
    let (Some((median, mad)), Some(&max)) = (median_and_mad(&grid), grid.last()) else {
        return Vec::new();
    };
    if median > 0.0 && is_outlier(max, median, mad) {
        vec![FarOut {
            metric: "TTFT".into(),
            value: max,
            median,
            at: None,
        }]
    } else {
        Vec::new()
    }
}

/// One request (or a few) far out of the point's spread: the first request after an
/// engine starts (compiling, filling caches) is the usual one.
pub fn outliers(p: &Point) -> Found {
    let list = outlier_list(p);
    let FarOut {
        metric,
        value,
        median,
        at,
    } = list.first()?;
    let who = match at {
        Some((trial, index)) => {
            let first = if *index == 0 {
                ", the first of its trial"
            } else {
                ""
            };
            format!("request {} of trial {}{first}", index + 1, trial + 1)
        }
        None => "the slowest request (which one is not recorded)".to_string(),
    };
    let mut message = format!(
        "{who}: {metric} {} ms, {}x the median {} ms",
        num(*value),
        fixed(value / median, 1),
        num(*median)
    );
    let mut requests: Vec<Option<(u32, u32)>> = list.iter().map(|o| o.at).collect();
    requests.sort();
    requests.dedup();
    if requests.len() > 1 {
        let more = requests.len() - 1;
        let plus = if list.len() >= report::outlier::OUTLIER_MAX_LISTED {
            " or more"
        } else {
            ""
        };
        message.push_str(&format!(
            "; {more}{plus} other {} far out",
            if more == 1 { "request" } else { "requests" }
        ));
    }
    Some((
        WarningKind::Outliers,
        message,
        "Send more warm-up requests before measuring (warmup_requests in the profile: \
         an engine compiles kernels and fills its caches on its first requests), and \
         rerun; an outlier in the middle of a trial points at something else on the \
         machine."
            .into(),
    ))
}

/// Requests that reasoned and gave no answer: how many, and what to do.
pub fn no_answer(p: &Point) -> Option<(WarningKind, String, String)> {
    let n = p.reasoning.as_ref()?.no_answer_total();
    let completed: u64 = p.completed.iter().sum();
    (n > 0).then(|| {
        (
            WarningKind::NoAnswer,
            format!("{n} of {completed} successful requests streamed reasoning and no answer"),
            "Raise max_tokens (the workload's output_tokens) above what the model thinks, \
             or lower reasoning_effort / turn thinking off (chat_template_kwargs)."
                .into(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Report {
        let text = include_str!("../../../goodput/tests/render_fixtures/additive.json");
        report::io::parse_report(text).expect("fixture parses")
    }

    #[test]
    fn a_failure_kind_this_version_does_not_know_is_shown_as_written() {
        let mut r = fixture();
        let e = &mut r.load[0];
        e.error = Some(report::EngineFailure {
            kind: FailureKind::from_word("oom_killed"),
            message: "the engine was killed".into(),
            log_tail: vec!["last words".into()],
            ..Default::default()
        });
        let w = engine_failed("e", &r.load[0]).expect("a warning");
        assert!(w.message.contains("(oom_killed)"), "{}", w.message);
        assert!(
            w.message.contains("last log line: last words"),
            "{}",
            w.message
        );
        assert!(
            w.advice.starts_with("Read the engine's log"),
            "{}",
            w.advice
        );
        // A cause found in the log makes the last line needless.
        let e = r.load[0].error.as_mut().unwrap();
        e.cause = vec!["ValueError: bad".into()];
        let w = engine_failed("e", &r.load[0]).expect("a warning");
        assert!(!w.message.contains("last log line"), "{}", w.message);
    }

    #[test]
    fn an_outlier_metric_this_version_does_not_know_is_named_as_written() {
        let mut p = fixture().load[0].points[0].clone();
        p.outliers = Some(vec![report::Outlier {
            metric: OutlierMetric::from_word("itl"),
            value_ms: 900.0,
            median_ms: 10.0,
            ..Default::default()
        }]);
        let list = outlier_list(&p);
        assert_eq!(list[0].metric, "itl");
    }
}
