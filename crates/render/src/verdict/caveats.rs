//! What the verdict says beside the answer: extrapolated predictions, what the
//! engine's own metrics say about a miss, and the warnings that limit the claim.

use super::*;

/// `Extrapolated (trust less): e at x=8, 12; ...` for a predicted report.
pub(super) fn extrapolated(report: &Report) -> Option<String> {
    let parts: Vec<String> = report
        .load
        .iter()
        .filter_map(|(engine, r)| {
            let xs: Vec<f64> = r
                .points
                .iter()
                .filter(|p| p.extrapolated)
                .map(|p| p.x)
                .collect();
            (!xs.is_empty()).then(|| format!("{engine} at x={}", self::xs(&xs)))
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "EXTRAPOLATED, trust less: {} (beyond what the fit measured or could identify; the intervals say how far).",
            parts.join("; ")
        )
    })
}

/// The sentence that says a report was predicted, not measured.
pub(super) fn predicted(p: &report::Predicted) -> String {
    let from = p
        .fitted_from
        .as_ref()
        .map_or(String::new(), |f| format!(", fitted from {f}"));
    format!(
        "PREDICTED, not measured: every figure below comes from the engine model {}{from} ({}).",
        p.engine_config, p.method
    )
}

/// Why the lowest failing load of each engine fails, as the engine's own metrics
/// tell it (when they were sampled): requests waiting in its queue make TTFT queue
/// time; preemptions mean the KV pool is too small for that load.
pub(super) fn server_reasons(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for (engine, result) in &report.load {
        let failing = result
            .points
            .iter()
            .find(|p| point_meets(report, p) == Some(false));
        let Some(p) = failing else { continue };
        let Some(s) = &p.server else { continue };
        let mut why = Vec::new();
        if let (Some(share), Some(max)) = (s.waiting_share, s.max_waiting) {
            if share >= 0.2 && max >= 1.0 {
                why.push(format!(
                    "up to {} waited in the engine's queue ({}% of samples): TTFT there is queueing",
                    if max == 1.0 {
                        "1 request".to_string()
                    } else {
                        format!("{} requests", num(max))
                    },
                    num((share * 100.0).round())
                ));
            }
        }
        if let Some(n) = s.counts.preemptions.filter(|n| *n > 0.0) {
            why.push(format!(
                "{} preemptions: the KV pool is too small for this load",
                num(n)
            ));
        }
        if !why.is_empty() {
            out.push(format!(
                "Why {engine} fails at x={}: {}.",
                num(p.x),
                why.join("; ")
            ));
        }
    }
    out
}

/// What weakens the answer, from the warnings.
pub(super) fn caveats(report: &Report) -> Vec<String> {
    let ws = warnings(report);
    let mut out = Vec::new();
    let engines_with = |k: WarningKind| {
        let mut v: Vec<&str> = ws
            .iter()
            .filter(|w| w.kind == k)
            .map(|w| w.engine.as_str())
            .collect();
        v.dedup();
        v
    };
    let throttled = engines_with(WarningKind::ThermalThrottle);
    if !throttled.is_empty() {
        out.push(if crate::warnings::rules::simulated_gpu(report) {
            format!(
                "But the simulated GPU was thermally throttled ({}): the simulator's thermal model slowed it on purpose; `goodput sim --no-thermal` measures without it.",
                throttled.join(", ")
            )
        } else {
            format!(
                "But the GPU was thermally throttled ({}): these figures measure the cooling as much as the engine; rerun on a cool GPU before relying on them.",
                throttled.join(", ")
            )
        });
    }
    let missing = engines_with(WarningKind::MissingTrials);
    if !missing.is_empty() {
        out.push(format!(
            "Some trials are missing ({}): the answer there rests on fewer trials than planned.",
            missing.join(", ")
        ));
    }
    let failed = engines_with(WarningKind::EngineFailed);
    let kind_of = |name: &str| {
        report
            .load
            .get(name)
            .and_then(|r| r.error.as_ref())
            .map(|e| &e.kind)
    };
    // An engine the run never reached did not fail: say what happened to each.
    let mut by_words: Vec<(&str, Vec<&str>)> = Vec::new();
    for name in failed.iter().copied() {
        let words = match kind_of(name) {
            Some(FailureKind::NotRun) => "did not run (the run ended before them)",
            Some(FailureKind::Interrupted) => "were interrupted while starting",
            Some(
                FailureKind::Launch
                | FailureKind::Unreachable
                | FailureKind::ReadyTimeout
                | FailureKind::Exited
                | FailureKind::DiedDuringTrial
                | FailureKind::Stop
                | FailureKind::Workload
                | FailureKind::Unknown(_),
            )
            | None => "failed",
        };
        match by_words.iter_mut().find(|(w, _)| *w == words) {
            Some((_, names)) => names.push(name),
            None => by_words.push((words, vec![name])),
        }
    }
    for (words, names) in by_words {
        out.push(format!(
            "Not judged, or judged on partial results: {} {words} (see the warnings).",
            names.join(", ")
        ));
    }
    out
}
