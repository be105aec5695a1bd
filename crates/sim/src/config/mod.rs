//! The simulator's configuration: one TOML table, [`SimConfig`], plus named presets.
//!
//! Every field has a default, so a file only names what it changes. Unknown
//! fields are an error (a typo must not silently fall back to a default), and
//! [`SimConfig::validate`] names the field and its allowed range.

pub mod adapters;
mod embeddings;
mod presets;
mod validate;
pub mod vllm;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::faults::FaultSpec;

pub use embeddings::EmbeddingsConfig;
pub use presets::{preset, PRESETS};
pub use vllm::VllmFlags;

/// Why a configuration could not be loaded or is not valid.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read sim config {path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        error: std::io::Error,
    },
    /// The file is not valid TOML, or names an unknown field.
    #[error("invalid sim config {path}: {error}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (it names the offending key).
        error: Box<toml::de::Error>,
    },
    /// A numeric field is outside its range.
    #[error("{field} = {value} is out of range: must be {allowed}")]
    OutOfRange {
        /// Dotted field name, e.g. `thermal.heat_after_s`.
        field: String,
        /// The value given.
        value: String,
        /// The allowed range, e.g. `1..=1024`.
        allowed: String,
    },
    /// A field is invalid for another reason.
    #[error("{field} is invalid: {reason}")]
    Invalid {
        /// Dotted field name.
        field: String,
        /// What is wrong.
        reason: String,
    },
}

/// Everything that shapes the simulated engine.
///
/// Durations are in simulated milliseconds or seconds; the server divides all
/// of them by [`SimConfig::time_scale`] when it maps them onto the wall clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// Served model id (what `/v1/models` lists and responses carry).
    pub model: String,
    /// Longest prompt + completion a request may have, in tokens.
    pub max_model_len: u32,
    /// KV-cache capacity in tokens (rounded down to whole blocks).
    pub kv_pool_tokens: u32,
    /// Tokens per KV block.
    pub block_size: u32,
    /// Automatic prefix caching (vLLM's default): a prompt's leading blocks
    /// computed before for another request are not prefilled again.
    pub prefix_caching: bool,
    /// Most requests running (admitted) at once.
    pub max_num_seqs: u32,
    /// Token budget of one scheduler step (decodes + prefill chunks).
    pub max_num_batched_tokens: u32,
    /// How long `/health` answers 503 after start, in ms.
    pub load_time_ms: f64,
    /// Speed-up factor: every simulated duration is divided by it on the wall clock.
    pub time_scale: f64,
    /// Fixed cost of one step, ms (at the boost clock).
    pub step_fixed_ms: f64,
    /// Cost per prefill token in a step, ms.
    pub per_prefill_token_ms: f64,
    /// Cost per decoding sequence in a step, ms.
    pub per_decode_seq_ms: f64,
    /// Cost per KV token attended (context of every scheduled request), ms.
    pub per_kv_token_ms: f64,
    /// Extra cost of a step that prefills anything, ms.
    pub prefill_step_ms: f64,
    /// Cost per request prefilled in a step (request handling), ms.
    pub per_prefill_seq_ms: f64,
    /// The API server's front-end time per request, ms: one shared server,
    /// first come first served (HTTP, tokenisation, hand-over to the engine),
    /// before the request joins the engine's waiting queue. Not a step cost: the
    /// engine keeps stepping meanwhile; requests arriving together queue for it.
    pub frontend_ms: f64,
    /// The API server's time per output chunk it streams (detokenising and
    /// sending one request's outputs of one step), ms, on the same queue as
    /// `frontend_ms`: a request arriving while the server works through the
    /// running streams' chunks waits for them. The chunk itself is delivered at
    /// its step's end (the model does not delay it).
    pub frontend_chunk_ms: f64,
    /// Hide the scheduler's CPU time behind the GPU step (`max`) instead of adding it.
    pub async_scheduling: bool,
    /// CPU scheduling cost of one step, ms (not scaled by the SM clock).
    pub sched_cpu_ms: f64,
    /// Speculative decoding (n-gram style), if any.
    pub speculative: Option<SpeculativeConfig>,
    /// A reasoning phase, if any: chat answers think first (`delta.reasoning`).
    pub reasoning: Option<ReasoningConfig>,
    /// An embedding model: `/v1/embeddings` is served with these costs (without
    /// it the route answers as vLLM does for a generative model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<EmbeddingsConfig>,
    /// Thermal model, if any; without it the GPU stays at its boost clock.
    pub thermal: Option<ThermalConfig>,
    /// Seed for every random draw (acceptance rates, pseudo-EOS points).
    pub seed: u64,
    /// Fixed-schedule mode: no model, every request gets exactly this timing.
    pub schedule: Option<ScheduleConfig>,
    /// Add `goodput_probe_ns` (CLOCK_MONOTONIC send time) to every SSE chunk.
    pub probe: bool,
    /// Faults injected into requests (first matching rule wins).
    pub faults: Vec<FaultRule>,
    /// Seeded noise per step and per request ([`JitterConfig`]); none: the model is
    /// exactly repeatable for a workload.
    pub jitter: Option<JitterConfig>,
    /// LoRA adapters served beside the model ([`adapters::AdaptersConfig`]).
    pub adapters: Option<adapters::AdaptersConfig>,
    /// Share of tool calls whose arguments are not valid JSON (cut short before
    /// their closing brace), drawn per request from `seed` and the prompt
    /// (`server::tools`).
    #[serde(skip_serializing_if = "is_zero")]
    pub tool_call_invalid_share: f64,
    /// Share of tool calls whose arguments are valid JSON but not valid against
    /// the function's schema (a required property left out, or given the wrong
    /// type), drawn beside `tool_call_invalid_share`.
    #[serde(skip_serializing_if = "is_zero")]
    pub tool_call_schema_invalid_share: f64,
    /// What `goodput fit` knew about these values (their errors, the loads they
    /// were fitted at, what the engine stated): read by `goodput run --predict`
    /// for its intervals, ignored by the simulator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<toml::Table>,
}

/// Seeded noise of the simulated engine (see `model/noise.rs`): log-normal factors
/// of median 1. `step = 0.05` varies each step's duration by about 5%;
/// `request = 0.1` each request's share of the work by about 10%.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JitterConfig {
    /// Log-standard-deviation of each step's duration factor (0: none).
    #[serde(default)]
    pub step: f64,
    /// Log-standard-deviation of each request's work factor (0: none).
    #[serde(default)]
    pub request: f64,
}

/// A reasoning model: each chat request's first `tokens` (drawn per request) are
/// thinking, streamed as `delta.reasoning` and counted in
/// `usage.completion_tokens_details.reasoning_tokens`; the answer follows as
/// `delta.content`. They are ordinary generated tokens (same step cost), part of
/// `max_tokens`: a request whose limit comes first ends without an answer. The
/// pseudo end of sequence falls in the answer. A request's `chat_template_kwargs`
/// `enable_thinking = false` (or `thinking = false`) turns the phase off;
/// `reasoning_effort` scales it (`none` 0, `minimal` 0.25, `low` 0.5, `medium` 1,
/// `high` 2). The completions endpoint does not think.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReasoningConfig {
    /// Mean reasoning tokens per request.
    pub tokens: u32,
    /// Each request's count is drawn uniformly from `tokens × [1 − spread,
    /// 1 + spread]` (0: every request thinks `tokens`).
    #[serde(default)]
    pub spread: f64,
}

/// Speculative decoding: `num_speculative_tokens` drafts per decode step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeculativeConfig {
    /// Draft tokens proposed per decoding step (k).
    pub num_speculative_tokens: u32,
    /// Distribution of each request's per-token acceptance rate.
    pub acceptance: Acceptance,
    /// Extra cost of a step that verifies drafts, ms (at the boost clock):
    /// proposing, rejection sampling, bookkeeping.
    #[serde(default)]
    pub verify_cost_ms: f64,
    /// Extra step cost per draft token verified, ms (at the boost clock).
    #[serde(default)]
    pub per_draft_token_ms: f64,
}

/// Distribution each request draws its draft acceptance rate from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum Acceptance {
    /// Beta(alpha, beta).
    Beta {
        /// Beta's alpha (> 0).
        alpha: f64,
        /// Beta's beta (> 0).
        beta: f64,
    },
    /// Uniform on `[mean - spread, mean + spread]`, clamped to `[0, 1]`.
    Uniform {
        /// Centre of the range.
        mean: f64,
        /// Half-width of the range.
        spread: f64,
    },
}

/// Thermal model: the SM clock falls under sustained load and recovers when idle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThermalConfig {
    /// SM clock of a cool card, MHz.
    pub boost_mhz: f64,
    /// SM clock while thermally throttled, MHz.
    pub throttled_mhz: f64,
    /// Busy seconds from cool until the card throttles.
    pub heat_after_s: f64,
    /// Idle seconds from hot until the card is cool (and unthrottled) again.
    pub recover_after_s: f64,
    /// Temperature of a cool card, °C.
    #[serde(default = "default_idle_temp")]
    pub idle_temp_c: f64,
    /// Temperature of a hot (throttling) card, °C.
    #[serde(default = "default_hot_temp")]
    pub hot_temp_c: f64,
}

fn default_idle_temp() -> f64 {
    45.0
}

fn default_hot_temp() -> f64 {
    88.0
}

/// Fixed-schedule mode timing.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleConfig {
    /// Time to first token, ms.
    pub ttft_ms: f64,
    /// Time between tokens, ms.
    pub itl_ms: f64,
}

/// One fault-injection rule: `spec` applies to every `every`-th request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRule {
    /// The fault, in the `x-goodput-fault` header syntax (e.g. `drop_after=5`).
    pub spec: FaultSpec,
    /// Apply to requests number `every`, `2*every`, ... (1 = every request).
    #[serde(default = "default_every")]
    pub every: u64,
}

fn default_every() -> u64 {
    1
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            model: "goodput-sim".to_string(),
            max_model_len: 4096,
            kv_pool_tokens: 65_536,
            block_size: 16,
            prefix_caching: true,
            max_num_seqs: 256,
            max_num_batched_tokens: 8192,
            load_time_ms: 0.0,
            time_scale: 1.0,
            step_fixed_ms: 12.0,
            per_prefill_token_ms: 0.02,
            per_decode_seq_ms: 0.05,
            per_kv_token_ms: 0.000_02,
            prefill_step_ms: 0.0,
            per_prefill_seq_ms: 0.0,
            frontend_ms: 0.0,
            frontend_chunk_ms: 0.0,
            async_scheduling: true,
            sched_cpu_ms: 1.0,
            speculative: None,
            reasoning: None,
            embeddings: None,
            thermal: None,
            seed: 0,
            schedule: None,
            probe: false,
            faults: Vec::new(),
            jitter: None,
            adapters: None,
            tool_call_invalid_share: 0.0,
            tool_call_schema_invalid_share: 0.0,
            fit: None,
        }
    }
}

impl SimConfig {
    /// Read a TOML file and validate it.
    pub fn load(path: impl AsRef<Path>) -> Result<SimConfig, ConfigError> {
        let path = path.as_ref();
        let io = |error| ConfigError::Io {
            path: path.to_path_buf(),
            error,
        };
        // A device or a FIFO is never a config: not read forever, not waited on.
        if !std::fs::metadata(path).map_err(io)?.is_file() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file (a device, a FIFO or a socket)",
            )));
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        let config = SimConfig::from_toml_str(&text).map_err(|e| match e {
            ConfigError::Parse { error, .. } => ConfigError::Parse {
                path: path.to_path_buf(),
                error,
            },
            other => other,
        })?;
        Ok(config)
    }

    /// Parse TOML text and validate it.
    pub fn from_toml_str(text: &str) -> Result<SimConfig, ConfigError> {
        let config: SimConfig = toml::from_str(text).map_err(|error| ConfigError::Parse {
            path: PathBuf::from("<string>"),
            error: Box::new(error),
        })?;
        config.validate()?;
        Ok(config)
    }

    /// The configuration as TOML (for `--dump-config` style output).
    pub fn to_toml_string(&self) -> Result<String, toml::ser::Error> {
        toml::to_string_pretty(self)
    }

    /// Check every field's range; the error names the field and what is allowed.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate::validate(self)
    }

    /// Apply command-line overrides: a time scale, and switching the thermal model off.
    #[must_use]
    pub fn with_overrides(mut self, time_scale: Option<f64>, thermal_off: bool) -> SimConfig {
        if let Some(scale) = time_scale {
            self.time_scale = scale;
        }
        if thermal_off {
            self.thermal = None;
        }
        self
    }

    /// Number of KV blocks in the pool.
    pub fn num_gpu_blocks(&self) -> u32 {
        self.kv_pool_tokens / self.block_size.max(1)
    }

    /// KV capacity as the engine reports it: whole blocks times block size.
    pub fn kv_capacity_tokens(&self) -> u64 {
        u64::from(self.num_gpu_blocks()) * u64::from(self.block_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_roundtrips() {
        let c = SimConfig::default();
        c.validate().unwrap();
        let text = c.to_toml_string().unwrap();
        let back = SimConfig::from_toml_str(&text).unwrap();
        assert_eq!(c, back);
    }

    #[test]
    fn unknown_field_is_rejected() {
        let err = SimConfig::from_toml_str("blocksize = 16").unwrap_err();
        assert!(err.to_string().contains("blocksize"), "{err}");
    }

    #[test]
    fn out_of_range_names_field() {
        let err = SimConfig::from_toml_str("block_size = 0").unwrap_err();
        assert_eq!(
            err.to_string(),
            "block_size = 0 is out of range: must be 1..=1024"
        );
    }

    #[test]
    fn acceptance_forms_parse() {
        let c = SimConfig::from_toml_str(
            "[speculative]\nnum_speculative_tokens = 3\nacceptance = { alpha = 2.0, beta = 1.0 }\n",
        )
        .unwrap();
        let s = c.speculative.unwrap();
        assert_eq!(
            s.acceptance,
            Acceptance::Beta {
                alpha: 2.0,
                beta: 1.0
            }
        );
        let c = SimConfig::from_toml_str(
            "[speculative]\nnum_speculative_tokens = 3\nacceptance = { mean = 0.5, spread = 0.1 }\n",
        )
        .unwrap();
        assert!(matches!(
            c.speculative.unwrap().acceptance,
            Acceptance::Uniform { .. }
        ));
        assert!(SimConfig::from_toml_str(
            "[speculative]\nnum_speculative_tokens = 3\nacceptance = { alpha = 2.0, beta = 1.0, mean = 0.5 }\n",
        )
        .is_err());
    }

    #[test]
    fn faults_parse_from_toml() {
        let c = SimConfig::from_toml_str(
            "[[faults]]\nspec = \"drop_after=3\"\nevery = 2\n[[faults]]\nspec = \"status=429\"\n",
        )
        .unwrap();
        assert_eq!(c.faults.len(), 2);
        assert_eq!(c.faults[0].every, 2);
        assert_eq!(c.faults[0].spec.drop_after, Some(3));
        assert_eq!(c.faults[1].spec.status, Some(429));
    }

    #[test]
    fn overrides() {
        let c = preset("vllm-fast-b")
            .unwrap()
            .with_overrides(Some(10.0), true);
        assert_eq!(c.time_scale, 10.0);
        assert!(c.thermal.is_none());
    }
}
