//! The profile: what to benchmark, under which load, against which SLO.
//!
//! Two stages, as in ripgrep: [`Profile`] is the TOML file as written (every table
//! rejects unknown keys, and the error names the key and its line), and
//! [`Profile::into_plan`] turns it, with the command-line overrides, into a
//! validated [`Plan`](crate::define::plan::Plan) in which nothing is left to a silent default.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

mod engine;
mod flags;
mod server_metrics;
mod tune;
mod workload;

pub use engine::*;
pub use flags::*;
pub use server_metrics::ServerMetricsSpec;
pub use tune::{product, with_flags, Candidate, FlagDialect, FlagValue, Space, TuneSpec};
pub use workload::*;

/// Errors in a profile or its overrides.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The file could not be read.
    #[error("cannot read profile {path}: {error}")]
    Read {
        /// The profile path.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// The TOML is malformed or has an unknown or mistyped key (the message names
    /// the line and column).
    #[error("profile {path}: {message}")]
    Parse {
        /// The profile path.
        path: String,
        /// toml's message, with line and column.
        message: String,
    },
    /// A value is out of range or inconsistent.
    #[error("profile {path}{}: {field}: {message}", line.map_or(String::new(), |l| format!(", line {l}")))]
    Invalid {
        /// The profile path.
        path: String,
        /// The offending field, dotted (`load.points`), or the flag that set it.
        field: String,
        /// The line of the profile where the field is written, when it is.
        line: Option<usize>,
        /// What is wrong and what is allowed.
        message: String,
    },
}

/// A profile file as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Name of the profile; becomes `profile` in the report.
    pub name: String,
    /// `[slo]`: the report's SLO (`ttft_ms`, ...), unknown keys refused.
    #[serde(deserialize_with = "report::Slo::deserialize_strict")]
    pub slo: report::Slo,
    /// Quantile grid for the `*_quantiles_ms` arrays; default 0.0..=1.0 step 0.02.
    #[serde(default)]
    pub quantiles: Option<Vec<f64>>,
    /// The load to apply.
    pub load: LoadSpec,
    /// The requests to send.
    pub workload: WorkloadSpec,
    /// GPU telemetry.
    #[serde(default)]
    pub telemetry: TelemetrySpec,
    /// The engines (configurations) to compare, run in the order written.
    pub engines: IndexMap<String, EngineSpec>,
    /// `[search]`: bounds of `goodput search` (used only by that command).
    #[serde(default)]
    pub search: Option<SearchSpec>,
    /// `[tune]`: the flag space of `goodput tune` (used only by that command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tune: Option<TuneSpec>,
    /// The TOML text it was read from, to name the line of a bad value.
    #[serde(skip)]
    pub source: Option<String>,
    /// `[server_metrics]`: the engine's `/metrics`, sampled during every trial.
    #[serde(default)]
    pub server_metrics: ServerMetricsSpec,
}

/// Closed or open loop.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum LoadMode {
    /// x requests in flight; a new one is sent as soon as one finishes.
    #[default]
    Concurrency,
    /// x requests per second, Gamma-distributed gaps.
    Rate,
    /// The trace's own arrival times (`kind = "trace"`); x is the speedup.
    Trace,
}

impl LoadMode {
    /// Name as in the profile and the report.
    pub fn name(self) -> &'static str {
        match self {
            LoadMode::Concurrency => "concurrency",
            LoadMode::Rate => "rate",
            LoadMode::Trace => "trace",
        }
    }

    /// True when send times are fixed before the trial (rate and trace).
    pub fn open_loop(self) -> bool {
        self != LoadMode::Concurrency
    }
}

/// The report's word for a profile's mode.
impl From<LoadMode> for report::LoadMode {
    fn from(m: LoadMode) -> Self {
        match m {
            LoadMode::Concurrency => report::LoadMode::Concurrency,
            LoadMode::Rate => report::LoadMode::Rate,
            LoadMode::Trace => report::LoadMode::Trace,
        }
    }
}

/// `[load]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// `concurrency` or `rate`.
    #[serde(default)]
    pub mode: LoadMode,
    /// Load levels (concurrency, or requests/s).
    pub points: Vec<f64>,
    /// Measured requests per trial (required, except in trace mode: the trace's
    /// window sets it, and a value given caps it).
    #[serde(default)]
    pub requests_per_trial: u32,
    /// Trials per point: a number, or `"auto"` (adaptive: from `min_trials` up to
    /// `max_trials`, until the point's SLO judgement is decisive or its key metrics
    /// settle within `trials_width`; docs/statistics.md).
    #[serde(default = "default_trials")]
    pub trials: TrialsSpec,
    /// `trials = "auto"`: trials every point gets (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_trials: Option<u32>,
    /// `trials = "auto"`: most trials at one point (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_trials: Option<u32>,
    /// `trials = "auto"`: the relative half-width of the 95% interval of the median
    /// TTFT and TPOT over trials that settles a point (default 0.02, ±2%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials_width: Option<f64>,
    /// Requests sent before each trial, not measured (default 1: the first request
    /// after an engine starts is often far slower, compilation and cache warm-up,
    /// and would otherwise be one of the measured ones).
    #[serde(default = "default_warmup")]
    pub warmup_requests: u32,
    /// Whole-request timeout, seconds.
    #[serde(default = "default_request_timeout")]
    pub request_timeout_s: f64,
    /// A stream with no chunk for this long is failed as `stall`, seconds.
    #[serde(default)]
    pub stall_timeout_s: Option<f64>,
    /// Seed for workload and arrivals.
    #[serde(default)]
    pub seed: u64,
    /// Rate mode: Gamma shape of the gaps (1.0 = Poisson, lower = burstier).
    #[serde(default = "one")]
    pub burstiness: f64,
    /// Rate mode: most requests in flight; later ones wait (never dropped).
    #[serde(default)]
    pub max_concurrency: Option<u32>,
    /// Upper bound on one trial's wall time, seconds; requests still in flight
    /// then are failed as `trial_timeout`.
    #[serde(default)]
    pub trial_timeout_s: Option<f64>,
    /// Several engines: run their trials interleaved (rounds in a seeded order,
    /// every engine up at once) or one engine after the other. Default: interleaved
    /// when no engine is launched on a GPU (kinds `url` and `sim`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave: Option<bool>,
}

fn default_trials() -> TrialsSpec {
    TrialsSpec::Count(1)
}

/// `[load] trials` and `--trials`: a number of trials per point, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrialsSpec {
    /// This many trials at every point.
    Count(u32),
    /// Adaptive trials (the `min_trials`, `max_trials` and `trials_width` keys).
    Auto,
}

impl std::str::FromStr for TrialsSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<TrialsSpec, String> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(TrialsSpec::Auto);
        }
        s.trim()
            .parse()
            .map(TrialsSpec::Count)
            .map_err(|_| format!("`{s}` is neither a number of trials nor `auto`"))
    }
}

impl std::fmt::Display for TrialsSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrialsSpec::Count(n) => write!(f, "{n}"),
            TrialsSpec::Auto => f.write_str("auto"),
        }
    }
}

impl Serialize for TrialsSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TrialsSpec::Count(n) => s.serialize_u32(*n),
            TrialsSpec::Auto => s.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for TrialsSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TrialsSpec, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = TrialsSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number of trials or \"auto\"")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<TrialsSpec, E> {
                u32::try_from(v)
                    .map(TrialsSpec::Count)
                    .map_err(|_| E::custom(format!("{v} trials is out of range")))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<TrialsSpec, E> {
                u32::try_from(v)
                    .map(TrialsSpec::Count)
                    .map_err(|_| E::custom(format!("{v} trials is out of range")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TrialsSpec, E> {
                match v {
                    "auto" => Ok(TrialsSpec::Auto),
                    _ => Err(E::custom(format!(
                        "\"{v}\" is neither a number of trials nor \"auto\""
                    ))),
                }
            }
        }
        d.deserialize_any(V)
    }
}
fn default_warmup() -> u32 {
    1
}
fn default_request_timeout() -> f64 {
    300.0
}
fn one() -> f64 {
    1.0
}

/// `[telemetry]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySpec {
    /// `auto` (NVML, then nvidia-smi, then the simulator's GPU, then none), `nvml`,
    /// `nvidia-smi`, `sim`, `dcgm` (a dcgm-exporter's `/metrics` at `url`) or `none`.
    #[serde(default = "auto")]
    pub source: String,
    /// Sampling interval, ms.
    #[serde(default = "default_interval")]
    pub interval_ms: u64,
    /// Before each trial, wait (bounded) for the GPU to cool down.
    #[serde(default)]
    pub cooldown: Option<CooldownSpec>,
    /// `source = "dcgm"`: the dcgm-exporter's metrics URL (`http://host:9400/metrics`;
    /// a URL without a path gets `/metrics`). Left out of the plan's JSON when unset,
    /// so profiles without it keep their fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `source = "dcgm"`: the GPUs to read, by index (`gpus = [0, 1]`) or UUID
    /// (`gpus = ["GPU-..."]`); empty: every GPU the exporter lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuSelector>,
}

impl Default for TelemetrySpec {
    fn default() -> Self {
        TelemetrySpec {
            source: auto(),
            interval_ms: default_interval(),
            cooldown: None,
            url: None,
            gpus: Vec::new(),
        }
    }
}

/// One GPU of `telemetry.gpus`: its index as the driver numbers it, or its UUID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GpuSelector {
    /// `0`, `1`, ...: the exporter's `gpu` label.
    Index(u32),
    /// `GPU-8c16e996-...`: the exporter's `UUID` label.
    Uuid(String),
}

impl std::fmt::Display for GpuSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuSelector::Index(i) => write!(f, "{i}"),
            GpuSelector::Uuid(u) => write!(f, "{u}"),
        }
    }
}

fn auto() -> String {
    "auto".into()
}
fn default_interval() -> u64 {
    200
}

/// `[telemetry.cooldown]`: wait until below `max_temp_c` and (if given) the SM clock
/// is at least `min_sm_mhz`, for at most `max_wait_s`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CooldownSpec {
    /// Wait until the GPU is at or below this temperature.
    #[serde(default)]
    pub max_temp_c: Option<f64>,
    /// Wait until the SM clock is at least this.
    #[serde(default)]
    pub min_sm_mhz: Option<f64>,
    /// Longest wait, seconds.
    #[serde(default = "default_cooldown_wait")]
    pub max_wait_s: f64,
}

fn default_cooldown_wait() -> f64 {
    120.0
}

/// Command-line overrides of the common profile fields: what a command's flags
/// resolve to (one value per command, `crate::cli` makes it), laid over the
/// profile by `Profile::into_plan`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--concurrency 1,4`.
    pub concurrency: Option<Vec<f64>>,
    /// `--rate 2,8`.
    pub rate: Option<Vec<f64>>,
    /// `--trials N` or `--trials auto`.
    pub trials: Option<TrialsSpec>,
    /// `--requests N`.
    pub requests: Option<u32>,
    /// `--slo ttft:1000,tpot:100` (any bounded metric's key).
    pub slo: Option<report::Slo>,
    /// `--engine NAME` (repeatable): run only these.
    pub engines: Vec<String>,
    /// `--seed N`.
    pub seed: Option<u64>,
    /// `goodput search`: its flags (each overrides the profile's `[search]`).
    pub search: Option<SearchSpec>,
    /// `goodput search --mode`: search in this load mode instead of the profile's.
    pub mode: Option<LoadMode>,
    /// `--usd-per-hour [ENGINE=]USD` (repeatable): engine prices, in order.
    pub usd_per_hour: Vec<(Option<String>, f64)>,
    /// `--interleave` (`Some(true)`) or `--no-interleave` (`Some(false)`).
    pub interleave: Option<bool>,
    /// `--prompt-salt[=SALT]`: salt every prompt (`[workload] salt = true`), with
    /// this salt when given.
    pub prompt_salt: Option<crate::define::profile::PromptSalt>,
}

/// `[search]`: how `goodput search` looks for the largest load that meets the SLO.
/// Every field is optional; the defaults suit the built-in quick profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchSpec {
    /// Lowest load probed (default 1 in concurrency mode, 0.5 requests/s in rate mode).
    #[serde(default)]
    pub min: Option<f64>,
    /// Highest load probed (default 64 in concurrency mode, 64 requests/s in rate mode).
    #[serde(default)]
    pub max: Option<f64>,
    /// Rate mode: stop when failing − passing ≤ resolution × passing (default 0.05).
    /// Concurrency mode always resolves to the exact integer.
    #[serde(default)]
    pub resolution: Option<f64>,
    /// The attainment target (default: `[slo] attainment`, else 0.9).
    #[serde(default)]
    pub attainment: Option<f64>,
    /// Most load levels probed per engine (default 16).
    #[serde(default)]
    pub max_probes: Option<u32>,
    /// Most trials at one probe while its attainment's confidence interval
    /// straddles the target (default: the profile's trials + 2).
    #[serde(default)]
    pub max_trials_per_probe: Option<u32>,
    /// Load growth factor while bracketing (default 2).
    #[serde(default)]
    pub growth: Option<f64>,
    /// `capacity` (default: the largest load that meets the SLO) or `cost` (then
    /// also the load whose good tokens cost least; docs/cost-energy.md).
    #[serde(default)]
    pub objective: Option<crate::define::profile::Objective>,
}

impl SearchSpec {
    /// `self` with every field `over` gives replaced.
    pub fn overridden_by(&self, over: &SearchSpec) -> SearchSpec {
        SearchSpec {
            min: over.min.or(self.min),
            max: over.max.or(self.max),
            resolution: over.resolution.or(self.resolution),
            attainment: over.attainment.or(self.attainment),
            max_probes: over.max_probes.or(self.max_probes),
            max_trials_per_probe: over.max_trials_per_probe.or(self.max_trials_per_probe),
            growth: over.growth.or(self.growth),
            objective: over.objective.or(self.objective),
        }
    }
}

/// A key of `[workload]` that its kind does not take, as an error naming the key,
/// the kind and the key's line (toml's own error names only the table's).
fn stray_workload_key(text: &str, origin: &str) -> Option<ProfileError> {
    let doc: toml::Table = toml::from_str(text).ok()?;
    let (kind, key) = stray_in_table(doc.get("workload")?.as_table()?)?;
    let field = format!("workload.{key}");
    Some(ProfileError::Invalid {
        path: origin.to_string(),
        line: line_of(text, &field),
        field,
        message: stray_key_message(kind, &key),
    })
}

impl Profile {
    /// Reads and parses a profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = crate::files::read_text(path).map_err(|error| ProfileError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        let mut profile = Profile::parse(&text, &path.display().to_string())?;
        // A workload's files (JSONL, trace, ShareGPT, tokenizer) are relative to the
        // profile's directory.
        if let Some(dir) = path.parent() {
            for p in profile.workload.paths_mut() {
                if p.is_relative() {
                    *p = dir.join(&*p);
                }
            }
        }
        Ok(profile)
    }

    /// Parses profile text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Profile, ProfileError> {
        let mut profile: Profile = toml::from_str(text).map_err(|e| {
            stray_workload_key(text, origin).unwrap_or_else(|| ProfileError::Parse {
                path: origin.to_string(),
                message: e.to_string().trim_end().to_string(),
            })
        })?;
        profile.source = Some(text.to_string());
        Ok(profile)
    }
}

/// What `goodput search` looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// The largest load that meets the SLO.
    #[default]
    Capacity,
    /// That, and then the load (meeting the SLO) with the least cost per good
    /// token: the most good output tokens per second.
    Cost,
}
