//! `goodput sim`: the simulated engine on its own, from a preset or a config file.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Args;
use goodput_sim::config::vllm::{parse_human_int, parse_speculative_config, SpeculativeFlag};
use goodput_sim::VllmFlags;

/// `goodput sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Engine configuration TOML.
    #[arg(long, conflicts_with = "preset")]
    pub config: Option<PathBuf>,
    /// A built-in preset (vllm-fast-b, vllm-ngram, vllm-no-async, default, fixed).
    #[arg(long)]
    pub preset: Option<String>,
    /// Address to bind; loopback unless told otherwise.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to listen on.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Run simulated time this many times faster than real time.
    #[arg(long)]
    pub time_scale: Option<f64>,
    /// Turn the thermal model off (steady boost clock).
    #[arg(long)]
    pub no_thermal: bool,
    /// Add the timing probe to every chunk.
    #[arg(long)]
    pub probe: bool,
    /// Seeded noise: `STEP` or `STEP,REQUEST`, the log-standard-deviations of
    /// each step's duration and each request's work (0.05,0.1: about 5% and 10%).
    #[arg(long, value_name = "STEP[,REQUEST]", value_parser = parse_jitter)]
    pub jitter: Option<goodput_sim::config::JitterConfig>,
    /// The simulator's seed (its noise and random draws).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Runtime threads (1: a single-threaded runtime, one core's worth); default:
    /// one per CPU.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Think before answering: about N reasoning tokens per chat request (± half),
    /// streamed as `delta.reasoning` (the config's `[reasoning]`; docs/reasoning.md).
    #[arg(long, value_name = "N")]
    pub reasoning_tokens: Option<u32>,
    /// vLLM's engine flags, each overriding its key of the config.
    #[command(flatten)]
    pub vllm: VllmEngineArgs,
    /// vLLM's LoRA flags (the config's `[adapters]`).
    #[command(flatten)]
    pub lora: LoraArgs,
}

/// vLLM's LoRA flags: `--enable-lora --lora-modules NAME=PATH ... --max-loras N`
/// serve adapters as the config's `[adapters]` does (docs/simulator.md).
#[derive(Debug, Args)]
#[command(next_help_heading = "vLLM LoRA flags (the config's [adapters])")]
pub struct LoraArgs {
    /// Serve LoRA adapters (needed with `--lora-modules`, as in vLLM).
    #[arg(long, alias = "enable_lora")]
    pub enable_lora: bool,
    /// Adapters served: `NAME=PATH` (the path is not read), a bare name or vLLM's
    /// JSON; each at the slowdown the config gives it, else 1.
    #[arg(long, value_name = "NAME=PATH", num_args = 1.., alias = "lora_modules")]
    pub lora_modules: Vec<String>,
    /// Adapters resident at once (`adapters.max_loras`).
    #[arg(long, value_name = "N", alias = "max_loras")]
    pub max_loras: Option<u32>,
}

impl LoraArgs {
    /// `config` with the flags' adapters and slots; a usage error names the flag.
    pub(super) fn apply(
        &self,
        mut config: goodput_sim::SimConfig,
    ) -> Result<goodput_sim::SimConfig, String> {
        if !self.lora_modules.is_empty() && !self.enable_lora {
            return Err(
                "--lora-modules needs --enable-lora (vLLM serves no adapter without it)".into(),
            );
        }
        let mut names = Vec::new();
        for m in &self.lora_modules {
            names.push(crate::define::plan::adapters::module_name(m)?);
        }
        let given = config.adapters.take();
        let mut adapters = match (given, names.is_empty()) {
            (given, true) => given,
            (given, false) => {
                let mut a = goodput_sim::config::adapters::AdaptersConfig::named(
                    names.iter().map(String::as_str),
                    given.as_ref().map_or(1, |g| g.max_loras),
                );
                if let Some(g) = given {
                    a.load_ms = g.load_ms;
                    for (name, speed) in a.modules.iter_mut() {
                        *speed = g.modules.get(name).copied().unwrap_or(1.0);
                    }
                }
                Some(a)
            }
        };
        if let Some(n) = self.max_loras {
            match adapters.as_mut() {
                Some(a) => a.max_loras = n,
                None => return Err("--max-loras: no adapter is served (--lora-modules)".into()),
            }
        }
        config.adapters = adapters;
        config.validate().map_err(|e| {
            let flags = if self.max_loras.is_some() {
                "--max-loras, --lora-modules"
            } else {
                "--lora-modules"
            };
            format!("{flags}: {e}")
        })?;
        Ok(config)
    }
}

/// vLLM's engine flags, in vLLM's spellings (`--flag N`, `--flag=N`,
/// `--flag_name`), each overriding one key of `--config`/`--preset`
/// (docs/simulator.md has the table).
#[derive(Debug, Args)]
#[command(next_help_heading = "vLLM engine flags (override the config's keys)")]
pub struct VllmEngineArgs {
    /// Most requests running at once (`max_num_seqs`).
    #[arg(long, value_name = "N", alias = "max_num_seqs")]
    pub max_num_seqs: Option<u32>,
    /// Token budget of one scheduler step (`max_num_batched_tokens`).
    #[arg(long, value_name = "N", alias = "max_num_batched_tokens")]
    pub max_num_batched_tokens: Option<u32>,
    /// Hide the scheduler's CPU time behind the GPU step (`async_scheduling`).
    #[arg(
        long,
        alias = "async_scheduling",
        overrides_with = "no_async_scheduling"
    )]
    pub async_scheduling: bool,
    /// Pay the scheduler's CPU time serially with each step.
    #[arg(
        long,
        alias = "no_async_scheduling",
        overrides_with = "async_scheduling"
    )]
    pub no_async_scheduling: bool,
    /// KV pool of N blocks (`kv_pool_tokens` = N × block size).
    #[arg(long, value_name = "N", alias = "num_gpu_blocks_override")]
    pub num_gpu_blocks_override: Option<u32>,
    /// Tokens per KV block (`block_size`); the pool keeps its tokens.
    #[arg(long, value_name = "N", alias = "block_size")]
    pub block_size: Option<u32>,
    /// `{"method": "ngram", "num_speculative_tokens": K}` (`speculative`).
    #[arg(long, value_name = "JSON", alias = "speculative_config",
          value_parser = parse_speculative_config)]
    pub speculative_config: Option<SpeculativeFlag>,
    /// Longest prompt + completion, in tokens: 2048, 2k, 2K (`max_model_len`).
    #[arg(long, value_name = "N", alias = "max_model_len", value_parser = parse_human_int)]
    pub max_model_len: Option<u32>,
    /// Automatic prefix caching (`prefix_caching`).
    #[arg(
        long,
        alias = "enable_prefix_caching",
        overrides_with = "no_enable_prefix_caching"
    )]
    pub enable_prefix_caching: bool,
    /// No prefix caching: every prompt is prefilled in full.
    #[arg(
        long,
        alias = "no_enable_prefix_caching",
        overrides_with = "enable_prefix_caching"
    )]
    pub no_enable_prefix_caching: bool,
}

impl VllmEngineArgs {
    /// The flags as the simulator's config takes them.
    pub fn flags(&self) -> VllmFlags {
        let switch = |on: bool, off: bool| (on || off).then_some(on);
        VllmFlags {
            max_num_seqs: self.max_num_seqs,
            max_num_batched_tokens: self.max_num_batched_tokens,
            async_scheduling: switch(self.async_scheduling, self.no_async_scheduling),
            block_size: self.block_size,
            num_gpu_blocks_override: self.num_gpu_blocks_override,
            max_model_len: self.max_model_len,
            enable_prefix_caching: switch(
                self.enable_prefix_caching,
                self.no_enable_prefix_caching,
            ),
            speculative_config: self.speculative_config,
        }
    }
}

pub(super) async fn sim_command(args: SimArgs) -> anyhow::Result<i32> {
    let mut config = match (&args.config, &args.preset) {
        // A bad config file or preset name is bad input: exit 2.
        (Some(path), _) => {
            goodput_sim::SimConfig::load(path).map_err(|e| crate::UsageError(format!("{e:#}")))?
        }
        (None, Some(name)) => goodput_sim::preset(name).ok_or_else(|| {
            crate::UsageError(format!(
                "no preset `{name}`; presets: {}",
                goodput_sim::PRESETS.join(", ")
            ))
        })?,
        (None, None) => goodput_sim::preset("default")
            .ok_or_else(|| anyhow::anyhow!("the default preset is missing"))?,
    };
    if let Some(s) = args.time_scale {
        config.time_scale = s;
    }
    if args.no_thermal {
        config.thermal = None;
    }
    if args.probe {
        config.probe = true;
    }
    if let Some(tokens) = args.reasoning_tokens {
        config.reasoning = Some(goodput_sim::ReasoningConfig {
            tokens,
            spread: 0.5,
        });
    }
    if let Some(j) = args.jitter {
        config.jitter = Some(j);
    }
    if let Some(seed) = args.seed {
        config.seed = seed;
    }
    config
        .validate()
        .map_err(|e| crate::UsageError(format!("{e:#}")))?;
    // vLLM's flags last: a value they make invalid is the flag's fault, named.
    let config = args
        .vllm
        .flags()
        .apply(config)
        .map_err(|e| crate::UsageError(e.to_string()))?;
    let config = args.lora.apply(config).map_err(crate::UsageError)?;
    let opts = goodput_sim::SimOptions {
        config,
        host: args.host,
        port: args.port,
        threads: args.threads,
    };
    // The simulator runs on a runtime of its own, sized by `--threads`.
    tokio::task::spawn_blocking(move || goodput_sim::run_standalone(opts)).await??;
    Ok(0)
}

/// `--jitter STEP[,REQUEST]`.
fn parse_jitter(s: &str) -> Result<goodput_sim::config::JitterConfig, String> {
    let mut parts = s
        .split(',')
        .map(|p| p.trim().parse::<f64>().map_err(|e| format!("{p}: {e}")));
    let step = parts.next().ok_or("empty")??;
    let request = parts.next().transpose()?.unwrap_or(0.0);
    if parts.next().is_some() {
        return Err(format!("{s}: STEP or STEP,REQUEST"));
    }
    Ok(goodput_sim::config::JitterConfig { step, request })
}
