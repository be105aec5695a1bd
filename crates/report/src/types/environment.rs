//! What ran where: the host, its GPUs and each engine as it was run.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// goodput addition to the reference: what ran where. `null` in the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Environment {
    /// goodput's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_version: Option<String>,
    /// goodput's git commit, when built from a checkout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// The machine that ran goodput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
    /// GPUs visible to goodput.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuInfo>,
    /// Per engine: how it was started and what it serves.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub engines: IndexMap<String, EngineEnv>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The host that ran goodput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HostInfo {
    /// goodput addition: the host name (`/proc/sys/kernel/hostname`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// CPU model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Logical CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// Memory, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Operating system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// Kernel release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

/// One GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct GpuInfo {
    /// Index as the driver numbers it.
    pub index: u32,
    /// Product name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Driver version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// CUDA version the driver supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_version: Option<String>,
    /// Memory, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<f64>,
    /// Power limit, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// Maximum SM clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sm_clock_mhz: Option<f64>,
    /// Maximum memory clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_mem_clock_mhz: Option<f64>,
}

/// One engine as it was run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct EngineEnv {
    /// `vllm`, `sglang`, `llama-cpp`, `sim` or `url`.
    pub kind: String,
    /// Base URL requests went to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `completions` or `chat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// The command line that started it, secrets redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The engine's own version string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The served model id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Detected KV pool, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_pool_tokens: Option<u64>,
    /// Engine log file, relative to the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<String>,
    /// goodput addition: how synthetic prompt lengths were set on this engine:
    /// `tokenize` (calibrated through the engine's `/tokenize`) or `uncalibrated`
    /// (calibration was asked for and failed; lengths assume one token per word).
    /// Absent when calibration was not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_lengths: Option<String>,
    /// goodput addition, in a merged report: the machine this engine ran on (the
    /// first shard's, when its load levels ran on several; `run.merged` lists each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
    /// goodput addition, in a merged report: the GPUs that machine had.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuInfo>,
    /// goodput addition: what bounds the engine's queueing, as the engine states
    /// it (`max_num_seqs`, `max_num_batched_tokens`, `block_size`), with where
    /// each was read; `goodput fit` takes these as known.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub limits: IndexMap<String, crate::StatedLimit>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
