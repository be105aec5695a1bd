//! `goodput sim`: the simulated engine on its own, from a preset or a config file.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Args;

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
}

pub(super) async fn sim_command(args: SimArgs) -> anyhow::Result<i32> {
    let mut config = match (&args.config, &args.preset) {
        (Some(path), _) => goodput_sim::SimConfig::load(path)?,
        (None, Some(name)) => goodput_sim::preset(name).ok_or_else(|| {
            anyhow::anyhow!(
                "no preset `{name}`; presets: {}",
                goodput_sim::PRESETS.join(", ")
            )
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
    config.validate()?;
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
