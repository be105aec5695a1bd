//! The flags of a profile-free run (`--url`, `--model`, `--api`) and vLLM's
//! `bench serve` spellings, each mapped onto goodput's own profile fields.
//!
//! | vLLM `bench serve`            | goodput                                        |
//! |-------------------------------|------------------------------------------------|
//! | `--base-url URL`              | `--url URL` (`[engines.NAME] url`)             |
//! | `--host H --port P`           | `--url http://H:P`                             |
//! | `--endpoint /v1/chat/completions` | `--api chat` (`[engines.NAME] api`)        |
//! | `--endpoint /v1/embeddings`   | `--api embeddings`                             |
//! | `--model M`                   | `[engines.NAME] model`                         |
//! | `--tokenizer DIR`             | `[workload] tokenizer` (its `tokenizer.json`)  |
//! | `--request-rate R`            | `--rate R` (`inf`: closed loop)                |
//! | `--burstiness B`              | `[load] burstiness`                            |
//! | `--max-concurrency N`         | `--concurrency N`, or with a rate `[load] max_concurrency` |
//! | `--num-prompts N`             | `--requests N` (`[load] requests_per_trial`)   |
//! | `--dataset-name random`       | `[workload] kind = "synthetic"`                |
//! | `--dataset-name sharegpt`     | `kind = "sharegpt"`                            |
//! | `--dataset-name prefix_repetition` | `kind = "prefix"`                         |
//! | `--dataset-name custom`       | `kind = "jsonl"`                               |
//! | `--dataset-path P`            | `[workload] path`                              |
//! | `--random-input-len N`        | `[workload] input_tokens` (prefix: `suffix_tokens`) |
//! | `--random-output-len N`       | `[workload] output_tokens`                     |
//! | `--random-range-ratio R`      | `[workload] range_ratio`                       |
//! | `--random-prefix-len N`       | `kind = "prefix"`, `prefix_tokens`             |
//! | `--dataset-name random-mm`    | `kind = "synthetic"` with `images` (chat API)  |
//! | `--random-mm-base-items-per-request N` | `[workload] images = N` (default 1) |
//! | `--random-mm-bucket-config '{(H, W, 1): 1.0}'` | `image_size = [W, H]` (one image bucket) |
//! | `--random-mm-limit-mm-per-prompt '{"image": N, "video": 0}'` | checked: images ≤ N, no video |
//! | `--random-mm-num-mm-items-range-ratio 0` | accepted only as 0 (every request N images) |
//! | `--ignore-eos`                | always on for generated prompts                |
//! | `--seed N`                    | `--seed N`                                     |
//! | `--goodput ttft:1000 tpot:100`| `--slo ttft:1000,tpot:100` (every bound, goodput's own too) |
//! | `--num-warmups N`             | `[load] warmup_requests` (goodput: 1 by default) |
//! | `--temperature 0`             | always 0 (greedy)                              |
//! | `--lora-modules a b` (or `a=PATH`, JSON) | `[workload.adapters]`, each name at weight 1 |
//! | `--save-result`, `--result-dir`, `--result-filename`, `--percentile-metrics`, `--metric-percentiles` | a vLLM-format result file beside the report |

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Flags that name a running server and vLLM's `bench serve` spellings (shared by
/// `run` and `search`); each maps onto a profile field (see the module's table).
#[derive(Debug, Args, Clone, Default)]
pub struct PeerArgs {
    /// An already running OpenAI-compatible server (`http://host:port`; a trailing
    /// `/v1` is dropped, with a notice): benchmark it with no profile, or in place
    /// of the profile's engines.
    #[arg(
        long,
        visible_alias = "base-url",
        value_name = "URL",
        help_heading = "Server"
    )]
    pub url: Option<String>,
    /// vLLM's spelling: the server's host (with `--port`; default 127.0.0.1).
    #[arg(
        long,
        value_name = "HOST",
        conflicts_with = "url",
        help_heading = "Server"
    )]
    pub host: Option<String>,
    /// vLLM's spelling: the server's port (with `--host`; default 8000).
    #[arg(
        long,
        value_name = "PORT",
        conflicts_with = "url",
        help_heading = "Server"
    )]
    pub port: Option<u16>,
    /// The model id sent in requests (default: the first of the server's `/v1/models`).
    #[arg(long, value_name = "MODEL", help_heading = "Server")]
    pub model: Option<String>,
    /// Which OpenAI API to send to (default: completions; `embeddings`: answered
    /// whole, `[workload] inputs` texts a request).
    #[arg(long, value_enum, help_heading = "Server")]
    pub api: Option<ApiArg>,
    /// vLLM's spelling of `--api`: `/v1/completions`, `/v1/chat/completions` or
    /// `/v1/embeddings`.
    #[arg(
        long,
        value_name = "PATH",
        conflicts_with = "api",
        help_heading = "Server"
    )]
    pub endpoint: Option<String>,
    /// The environment variable that holds the server's API key (never the key;
    /// default: `OPENAI_API_KEY`, when set, for a server given by URL).
    #[arg(long, value_name = "VAR", help_heading = "Server")]
    pub api_key_env: Option<String>,
    /// A Hugging Face `tokenizer.json` (or a folder holding one) that counts
    /// ShareGPT tokens when the server has no `/tokenize`.
    #[arg(long, value_name = "PATH", help_heading = "Server")]
    pub tokenizer: Option<PathBuf>,
    /// vLLM's load, workload and result flags.
    #[command(flatten)]
    pub vllm: VllmArgs,
}

/// vLLM `bench serve`'s load, workload and result flags.
#[derive(Debug, Args, Clone, Default)]
pub struct VllmArgs {
    /// vLLM's spelling: open-loop requests per second (`inf`: all at once, a closed
    /// loop at `--max-concurrency`).
    #[arg(long, value_name = "R", value_parser = parse_request_rate, help_heading = "vLLM bench serve spellings")]
    pub request_rate: Option<f64>,
    /// vLLM's spelling: Gamma shape of the arrival gaps (1: Poisson).
    #[arg(long, value_name = "B", help_heading = "vLLM bench serve spellings")]
    pub burstiness: Option<f64>,
    /// vLLM's spelling: requests in flight (`--concurrency N`), or with a request
    /// rate, the cap on them.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "vLLM bench serve spellings")]
    pub max_concurrency: Option<u32>,
    /// vLLM's spelling of `--requests`: measured requests per trial.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "requests", help_heading = "vLLM bench serve spellings")]
    pub num_prompts: Option<u32>,
    /// vLLM's spelling: the workload kind.
    #[arg(
        long,
        value_enum,
        value_name = "NAME",
        help_heading = "vLLM bench serve spellings"
    )]
    pub dataset_name: Option<DatasetName>,
    /// vLLM's spelling: the ShareGPT JSON or the custom prompts' JSONL.
    #[arg(long, value_name = "PATH", help_heading = "vLLM bench serve spellings")]
    pub dataset_path: Option<PathBuf>,
    /// vLLM's spelling: prompt tokens of generated prompts.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "vLLM bench serve spellings")]
    pub random_input_len: Option<u32>,
    /// vLLM's spelling: output tokens asked for.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "vLLM bench serve spellings")]
    pub random_output_len: Option<u32>,
    /// vLLM's spelling: lengths drawn from `[L(1-r), L(1+r)]`.
    #[arg(long, value_name = "R", help_heading = "vLLM bench serve spellings")]
    pub random_range_ratio: Option<f64>,
    /// vLLM's spelling: a prefix of N tokens shared by every prompt.
    #[arg(long, value_name = "N", help_heading = "vLLM bench serve spellings")]
    pub random_prefix_len: Option<u32>,
    /// vLLM's spelling (`random-mm`): images per request (`[workload] images`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "vLLM bench serve spellings")]
    pub random_mm_base_items_per_request: Option<u32>,
    /// vLLM's spelling (`random-mm`): `{(H, W, 1): 1.0}`, one image size
    /// (`[workload] image_size = [W, H]`); several buckets or video are refused.
    #[arg(long, value_name = "DICT", help_heading = "vLLM bench serve spellings")]
    pub random_mm_bucket_config: Option<String>,
    /// vLLM's spelling (`random-mm`): `{"image": N, "video": 0}`, the most items a
    /// prompt may have; checked against the images asked for.
    #[arg(long, value_name = "JSON", help_heading = "vLLM bench serve spellings")]
    pub random_mm_limit_mm_per_prompt: Option<String>,
    /// vLLM's spelling (`random-mm`), accepted only as 0: every request carries
    /// the same number of images.
    #[arg(long, value_name = "R", help_heading = "vLLM bench serve spellings")]
    pub random_mm_num_mm_items_range_ratio: Option<f64>,
    /// vLLM's spelling, accepted: goodput's generated prompts always ask for the
    /// exact output length (`ignore_eos`, `min_tokens`).
    #[arg(long, help_heading = "vLLM bench serve spellings")]
    pub ignore_eos: bool,
    /// vLLM's spelling of `--slo`: e.g. `--goodput ttft:1000 tpot:100`.
    #[arg(long, value_name = "NAME:MS", num_args = 1.., conflicts_with = "slo", help_heading = "vLLM bench serve spellings")]
    pub goodput: Vec<String>,
    /// vLLM's spelling: the metrics of the vLLM-format result (`ttft,tpot,itl`).
    #[arg(long, value_name = "LIST", help_heading = "vLLM bench serve spellings")]
    pub percentile_metrics: Option<String>,
    /// vLLM's spelling: the percentiles of the vLLM-format result (`99`).
    #[arg(long, value_name = "LIST", help_heading = "vLLM bench serve spellings")]
    pub metric_percentiles: Option<String>,
    /// Also write a vLLM-format result JSON (one per engine and load level) beside
    /// the report, for dashboards built on `vllm bench serve --save-result`.
    #[arg(long, help_heading = "vLLM bench serve spellings")]
    pub save_result: bool,
    /// vLLM's spelling: the folder of the vLLM-format result (default: the report's).
    #[arg(long, value_name = "DIR", help_heading = "vLLM bench serve spellings")]
    pub result_dir: Option<PathBuf>,
    /// vLLM's spelling: the vLLM-format result's file name (default: the report's
    /// name with `.vllm.json`).
    #[arg(long, value_name = "NAME", help_heading = "vLLM bench serve spellings")]
    pub result_filename: Option<String>,
    /// vLLM's spelling: unmeasured requests before each trial (goodput's default is 1).
    #[arg(long, value_name = "N", help_heading = "vLLM bench serve spellings")]
    pub num_warmups: Option<u32>,
    /// vLLM's spelling: LoRA adapters, each request naming one in `model`, drawn
    /// uniformly by the seed (`[workload.adapters]` at weight 1 each); `NAME`,
    /// `NAME=PATH` (`vllm serve`'s form) or vLLM's JSON.
    #[arg(long, value_name = "NAME[=PATH]", num_args = 1.., help_heading = "vLLM bench serve spellings")]
    pub lora_modules: Vec<String>,
    /// vLLM's spelling, accepted only as 0: goodput always samples greedily, so that
    /// output lengths and speculative acceptance repeat.
    #[arg(long, value_name = "T", help_heading = "vLLM bench serve spellings")]
    pub temperature: Option<f64>,
}

/// `--api`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiArg {
    /// `POST /v1/completions`.
    Completions,
    /// `POST /v1/chat/completions`.
    Chat,
    /// `POST /v1/embeddings`.
    Embeddings,
}

/// `--dataset-name`, as vLLM spells its workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DatasetName {
    /// Generated prompts of `--random-input-len` tokens (goodput's `synthetic`).
    Random,
    /// ShareGPT conversations from `--dataset-path`.
    Sharegpt,
    /// Groups of prompts sharing a prefix (goodput's `prefix`).
    #[value(name = "prefix_repetition", alias = "prefix-repetition")]
    PrefixRepetition,
    /// JSON Lines prompts from `--dataset-path` (goodput's `jsonl`).
    Custom,
    /// Generated prompts with generated images (goodput's `synthetic` with
    /// `images`).
    #[value(name = "random-mm", alias = "random_mm")]
    RandomMm,
}

impl PeerArgs {
    /// The server's URL, from `--url` or `--host`/`--port`. A `--url` ending in
    /// `/v1`, the base URL OpenAI clients are given, is taken without it: goodput
    /// adds `/v1/...` itself ([`PeerArgs::url_notice`] says so).
    pub fn target_url(&self) -> Option<String> {
        if let Some(u) = &self.url {
            let u = u.trim_end_matches('/');
            return Some(u.strip_suffix("/v1").unwrap_or(u).to_string());
        }
        if self.host.is_none() && self.port.is_none() {
            return None;
        }
        let host = self.host.as_deref().unwrap_or("127.0.0.1");
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        Some(format!("http://{host}:{}", self.port.unwrap_or(8000)))
    }

    /// The notice for a `--url` that ends in `/v1`: what goodput reaches instead.
    pub fn url_notice(&self) -> Option<String> {
        let given = self.url.as_deref()?;
        let root = self.target_url()?;
        (given.trim_end_matches('/') != root).then(|| {
            format!(
                "note: --url {given} ends in /v1, the base URL OpenAI clients add their paths to; goodput adds /v1/... itself, so it reaches the server at {root}"
            )
        })
    }

    /// True when any of vLLM's spellings was given (the run's header then says once
    /// where goodput measures differently).
    pub fn uses_vllm_spellings(&self) -> bool {
        let v = &self.vllm;
        self.host.is_some()
            || self.port.is_some()
            || self.endpoint.is_some()
            || v.request_rate.is_some()
            || v.max_concurrency.is_some()
            || v.num_prompts.is_some()
            || v.dataset_name.is_some()
            || v.random_input_len.is_some()
            || v.random_output_len.is_some()
            || !v.goodput.is_empty()
            || v.num_warmups.is_some()
            || v.save_result
            || !v.lora_modules.is_empty()
    }
}

/// `--request-rate`: `inf`, or requests per second in
/// [`MIN_RATE`, `MAX_RATE`] (a usage error, exit 2, names the range).
fn parse_request_rate(s: &str) -> Result<f64, String> {
    use crate::define::plan::{MAX_RATE, MIN_RATE};
    let r: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of requests per second (or `inf`)"))?;
    if r == f64::INFINITY || (MIN_RATE..=MAX_RATE).contains(&r) {
        Ok(r)
    } else {
        Err(format!(
            "{s} requests per second is out of range: give a rate in [{MIN_RATE}, {MAX_RATE}], or `inf`"
        ))
    }
}
