//! The validated plan: a [`Profile`](crate::define::profile::Profile) with overrides applied and every value checked.

use std::time::Duration;

use indexmap::IndexMap;

use crate::define::profile::{EngineSpec, LoadMode, TelemetrySpec};

pub mod adapters;
mod chat;
mod check;
mod embeddings;
mod engines;
pub mod images;
mod jsonl;
mod load;
pub mod price;
mod search;
pub mod tools;

pub use load::{TrialRule, AUTO_MAX_TRIALS, AUTO_MIN_TRIALS, AUTO_WIDTH, MAX_RATE, MIN_RATE};
pub use search::SearchConfig;
#[cfg(test)]
mod tests;
mod workload;

pub use crate::define::requests::{JsonlPrompt, Workload};
pub use chat::chat_fields;
pub use engines::{expand_vars, MAX_MODEL_ID_BYTES};

/// A validated benchmark plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Profile name.
    pub name: String,
    /// The SLO.
    pub slo: report::Slo,
    /// Quantile grid.
    pub quantiles: Vec<f64>,
    /// Closed or open loop.
    pub mode: LoadMode,
    /// Load levels, ascending.
    pub points: Vec<f64>,
    /// Measured requests per trial.
    pub requests_per_trial: u32,
    /// Trials per point (with `trials = "auto"`, the minimum every point gets).
    pub trials: u32,
    /// `trials = "auto"`: the rule that adds trials to a point until it is settled
    /// ([`crate::judge::search::trials`]); `None` with a fixed count.
    pub adaptive: Option<TrialRule>,
    /// Unmeasured requests before each trial.
    pub warmup_requests: u32,
    /// Whole-request timeout.
    pub request_timeout: Duration,
    /// Longest silence inside a stream.
    pub stall_timeout: Option<Duration>,
    /// Longest trial.
    pub trial_timeout: Option<Duration>,
    /// Seed of the prompts and of the rate-mode arrival gaps (`load.seed`).
    pub seed: u64,
    /// Gamma shape for rate mode.
    pub burstiness: f64,
    /// Rate mode cap on requests in flight.
    pub max_concurrency: Option<u32>,
    /// `[load] interleave` (or `--interleave`, `--no-interleave`) as given;
    /// [`Plan::interleaves`] applies the default.
    pub interleave: Option<bool>,
    /// What to send.
    pub workload: Workload,
    /// GPU telemetry.
    pub telemetry: TelemetrySpec,
    /// Engines in order.
    pub engines: IndexMap<String, EngineSpec>,
    /// The workload section as written, for the report.
    pub workload_description: serde_json::Value,
    /// `goodput search`: the capacity search to run instead of the load levels
    /// (`points` is then empty: the search chooses them).
    pub search: Option<SearchConfig>,
    /// The engine's `/metrics`, sampled during every trial.
    pub server_metrics: crate::define::profile::ServerMetricsSpec,
    /// The profile as run, flags applied (TOML), for the report: running it again
    /// repeats the run.
    pub profile_toml: Option<String>,
    /// `[workload] salt = true` or `--prompt-salt`: every prompt starts with the
    /// run's salt, drawn when the run starts unless given; `None`: no salt. Not in
    /// the fingerprints (the description's `salt = true` is).
    pub prompt_salt: Option<crate::define::profile::PromptSalt>,
    /// `[workload] tools`: the function definitions every chat request carries.
    pub tools: Option<tools::ToolUse>,
    /// `[workload.adapters]`: the LoRA adapters requests name, drawn by weight.
    pub adapters: Option<crate::define::requests::adapters::Adapters>,
    /// `[workload] images`: the images every chat request carries.
    pub images: Option<crate::define::requests::images::ImageSpec>,
}

impl Plan {
    /// Whether the engines' trials interleave: as `[load] interleave` says, else
    /// when there are several engines and every one can be up beside the others
    /// (reached at a `url`, or goodput's simulator); an engine launched on a GPU
    /// runs alone. One engine never interleaves.
    pub fn interleaves(&self) -> bool {
        self.engines.len() > 1
            && self
                .interleave
                .unwrap_or_else(|| self.engines.values().all(coexists))
    }

    /// SHA-256 fingerprints (16 hex digits) of the parts of the plan that decide
    /// what a trial measures: `slo`, `load` (mode, requests, warm-up, timeouts,
    /// seed, burstiness, cap), `workload` (as described, plus every JSONL prompt),
    /// `telemetry`, and `engine.<name>` per engine (its whole spec). Load levels,
    /// the number of trials and which engines run are left out: a resumed run may
    /// add trials, levels or engines without mixing plans.
    pub fn fingerprints(&self) -> IndexMap<String, String> {
        use serde_json::json;
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
        let mut parts: Vec<(String, serde_json::Value)> = vec![
            ("slo".into(), slo_fingerprinted(&self.slo)),
            (
                "load".into(),
                json!({
                    "mode": self.mode,
                    "requests_per_trial": self.requests_per_trial,
                    "warmup_requests": self.warmup_requests,
                    "request_timeout_s": self.request_timeout.as_secs_f64(),
                    "stall_timeout_s": secs(self.stall_timeout),
                    "trial_timeout_s": secs(self.trial_timeout),
                    "seed": self.seed,
                    "burstiness": self.burstiness,
                    "max_concurrency": self.max_concurrency,
                }),
            ),
            (
                "workload".into(),
                match &self.workload {
                    Workload::Jsonl { prompts, .. } => {
                        json!({"spec": self.workload_description, "prompts": prompts})
                    }
                    // The description holds the source's SHA-256 where there is one.
                    _ => json!({"spec": self.workload_description}),
                },
            ),
            ("telemetry".into(), json!(self.telemetry)),
        ];
        // A search's report holds probes judged against its target; a run and a
        // search (or searches for different targets) do not resume each other.
        if let Some(s) = &self.search {
            parts.push(("search".into(), json!({"target": s.target})));
        }
        for (name, e) in &self.engines {
            // The price decides no measurement: a re-priced run resumes.
            let unpriced = EngineSpec {
                usd_per_hour: None,
                ..e.clone()
            };
            parts.push((format!("engine.{name}"), json!(unpriced)));
        }
        parts
            .into_iter()
            .map(|(k, v)| (k, fingerprint(&v)))
            .collect()
    }
}

/// The bounds a plan's fingerprint writes as `null` when absent: the profile's
/// first three, as its `[slo]` was first written; a bound added later is left out
/// when absent, so runs made before it resume.
const NULL_WHEN_ABSENT: [report::SloMetric; 3] = [
    report::SloMetric::Ttft,
    report::SloMetric::Tpot,
    report::SloMetric::E2el,
];

/// The SLO as the fingerprint has always read it: every bound by its field in the
/// table's order, then `attainment` and `percentile` when given.
fn slo_fingerprinted(slo: &report::Slo) -> serde_json::Value {
    let mut v = serde_json::Map::new();
    for m in report::SloMetric::ALL {
        match slo.bound(m) {
            Some(b) => v.insert(m.field().into(), b.into()),
            None if NULL_WHEN_ABSENT.contains(&m) => {
                v.insert(m.field().into(), serde_json::Value::Null)
            }
            None => None,
        };
    }
    for (k, x) in [
        ("attainment", slo.attainment),
        ("percentile", slo.percentile),
    ] {
        if let Some(x) = x {
            v.insert(k.into(), x.into());
        }
    }
    serde_json::Value::Object(v)
}

/// An engine that can run beside others: nothing of it is launched on a GPU.
pub fn coexists(e: &EngineSpec) -> bool {
    use crate::define::profile::EngineKind;
    matches!(e.effective_kind(), EngineKind::Url | EngineKind::Sim)
}

/// The first 16 hex digits of the SHA-256 of a value's compact JSON.
fn fingerprint(v: &serde_json::Value) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(v.to_string().as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The parts in which two plans' fingerprints differ (a part present in both with
/// different values); engines present in only one of them are not a difference.
pub fn fingerprint_changes(
    old: &IndexMap<String, String>,
    new: &IndexMap<String, String>,
) -> Vec<String> {
    new.iter()
        .filter(|(k, v)| {
            old.get(*k).is_some_and(|o| o != *v)
                || (!k.starts_with("engine.") && !old.contains_key(*k))
        })
        .map(|(k, _)| k.clone())
        .chain(
            old.keys()
                .filter(|k| *k == "search" && !new.contains_key(*k))
                .cloned(),
        )
        .collect()
}
