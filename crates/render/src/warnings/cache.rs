//! The cache-warm warning: a workload whose prompts are not meant to repeat
//! (`synthetic`, `jsonl`, `sharegpt`) that the engine served from its prefix
//! cache. The usual cause is an earlier run with the same seed on the same engine
//! process: its prompts are still cached, so this run's TTFT and goodput are better
//! than a fresh workload's. `prefix`, `trace` and `conversation` workloads share
//! prompt prefixes on purpose and are left alone.
//!
//! Rule: the point's `server.prefix_cache_hit_share` (the engine's own prefix-cache
//! hits over queries, in tokens, over the point's trials) is at least
//! [`WARM_HIT_SHARE`]. A fresh workload of these kinds shares at most a chat
//! template's first block or two between prompts (16-32 tokens, a few percent of a
//! prompt of a few hundred tokens); a cache-warm run measures 88-98%.

use report::{Point, Report, WorkloadKind};

use super::WarningKind;

/// Hit share (0 to 1) at or above which a workload meant to be uncached was served
/// from the cache.
pub const WARM_HIT_SHARE: f64 = 0.2;

/// The workload's prompts are not meant to share prefixes.
fn uncached_kind(kind: &WorkloadKind) -> bool {
    matches!(
        kind,
        WorkloadKind::Synthetic | WorkloadKind::Jsonl | WorkloadKind::Sharegpt
    )
}

/// The run's prompts carried a per-run salt (`[workload] salt`).
fn salted(report: &Report) -> bool {
    report.run.as_ref().is_some_and(|run| {
        run.prompt_salt.is_some() || run.workload.get("salt") == Some(&serde_json::json!(true))
    })
}

/// The cache-warm warning of one point, when it applies.
pub fn cache_warm(report: &Report, p: &Point) -> Option<(WarningKind, String, String)> {
    let kind = report
        .run
        .as_ref()
        .map_or(WorkloadKind::Synthetic, |run| run.workload_kind());
    if !uncached_kind(&kind) {
        return None;
    }
    let share = p
        .server
        .as_ref()?
        .prefix_cache_hit_share
        .filter(|s| *s >= WARM_HIT_SHARE)?;
    let message = format!(
        "the engine's prefix cache served {:.0}% of the prompt tokens of a {} workload, \
         whose prompts are not meant to repeat",
        share * 100.0,
        kind.as_str()
    );
    let advice = if salted(report) {
        "the prompts were salted, so the hits came from this run itself: another engine on \
         the same server, or prompts that repeat (a JSONL file with few or alike prompts)"
            .to_string()
    } else {
        "rerun with a fresh --seed, or with --prompt-salt ([workload] salt = true: every \
         prompt starts with a random string drawn for the run), so that no run finds an \
         earlier run's prompts in the cache; or restart the engine between runs"
            .to_string()
    };
    Some((WarningKind::CacheWarm, message, advice))
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::server::ServerSummary;
    use report::RunInfo;

    fn report(kind: &str, salt: Option<&str>) -> Report {
        let mut r: Report = serde_json::from_value(serde_json::json!({
            "profile": "p", "slo": {}, "environment": null, "quantiles": [], "load": {}
        }))
        .expect("a minimal report");
        r.run = Some(RunInfo {
            workload: serde_json::json!({"kind": kind}),
            prompt_salt: salt.map(str::to_string),
            ..RunInfo::default()
        });
        r
    }

    fn point(share: Option<f64>) -> Point {
        Point {
            x: 1.0,
            server: Some(ServerSummary {
                catalogue: "vllm".into(),
                prefix_cache_hit_share: share,
                ..ServerSummary::default()
            }),
            ..Point::default()
        }
    }

    #[test]
    fn a_synthetic_workload_served_from_the_cache_is_warned_with_the_salt_as_advice() {
        let (kind, message, advice) =
            cache_warm(&report("synthetic", None), &point(Some(0.93))).expect("warned");
        assert_eq!(kind, WarningKind::CacheWarm);
        assert!(message.contains("served 93% of the prompt tokens of a synthetic workload"));
        assert!(
            advice.contains("--seed") && advice.contains("--prompt-salt"),
            "{advice}"
        );
        let salted = cache_warm(&report("sharegpt", Some("k3x9")), &point(Some(0.5)));
        assert!(salted
            .expect("warned")
            .2
            .contains("came from this run itself"));
    }

    #[test]
    fn shared_prefix_workloads_and_low_or_unmeasured_shares_are_not_warned() {
        for kind in ["prefix", "conversation", "trace"] {
            assert_eq!(cache_warm(&report(kind, None), &point(Some(0.95))), None);
        }
        let r = report("jsonl", None);
        assert_eq!(cache_warm(&r, &point(Some(0.19))), None);
        assert_eq!(cache_warm(&r, &point(None)), None);
        assert!(cache_warm(&r, &point(Some(0.2))).is_some());
    }
}
