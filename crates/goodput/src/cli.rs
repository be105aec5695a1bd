//! The command line: parse, build a plan, call the library, choose the exit code.

use std::io::{IsTerminal, Write};
use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::profile::{parse_points, parse_slo, Overrides, Profile};
use crate::render::{self, Format};
use crate::run::{run, RunOptions};

mod peer;
mod peer_output;
mod resolve;
mod suggest;

pub use peer::{ApiArg, DatasetName, PeerArgs, VllmArgs};
pub use resolve::{DEFAULT_LOAD, DEFAULT_SLO, DEFAULT_WORKLOAD};
pub use suggest::{parse_or_exit, peer_hint};

/// The profile `goodput run` uses when given none: the three simulator presets
/// modelled on the reference report, on an unthrottled clock, ten times faster than
/// real time.
pub const QUICK_PROFILE: &str = include_str!("cli/quick.toml");

/// goodput: which LLM serving configuration meets your latency SLO, and at what load.
#[derive(Debug, Parser)]
#[command(name = "goodput", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark the engines of a profile (the built-in quick profile on the simulator
    /// when none is given) and write a report.
    Run(RunArgs),
    /// Find, per engine, the largest load (concurrency or rate, from the profile's
    /// `[load] mode`) at which the SLO is met: bracket, then narrow; every probe is
    /// an ordinary point of the report, and a killed search resumes.
    Search(SearchArgs),
    /// Serve the built-in simulated engine (OpenAI-compatible, vLLM-style metrics).
    Sim(SimArgs),
    /// Print a report as a table (or markdown, csv, json).
    Show {
        /// The report file.
        report: PathBuf,
        /// Output format.
        #[arg(long, short, value_enum, default_value = "table")]
        format: Format,
    },
    /// Compare reports (or, given one, its engines against the first).
    Compare {
        /// Report files; the first is the baseline. Each report's requests file
        /// (`<report>.requests.jsonl`) is read when it is there.
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// The smallest relative change called better or worse (0.02: 2%).
        #[arg(long, default_value_t = 0.02, value_parser = parse_min_effect)]
        min_effect: f64,
        /// `table` (text) or `json` (`{"conclusion", "rows": [...]}`).
        #[arg(long, short, value_enum, default_value = "table")]
        format: CompareFormat,
        /// The bootstrap's seed (the same seed gives the same intervals).
        #[arg(long, default_value_t = crate::stats::DEFAULT_SEED)]
        seed: u64,
    },
    /// Write a self-contained HTML page with charts for a report.
    Report {
        /// The report file.
        report: PathBuf,
        /// Where to write the HTML (default: beside the report, `.html`).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Fit the simulator's engine model to a measured run (its raw records) and write
    /// an ordinary simulator config: `goodput sim --config`, `kind = "sim"`, or
    /// `run --predict`.
    Fit(FitArgs),
    /// Internal: the leader of a launched engine's process group, which kills the
    /// group when goodput dies (`engine::guard`).
    #[command(hide = true)]
    EngineGuard {
        /// The engine's command line.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        argv: Vec<String>,
    },
    /// Merge shard reports (`run --shard I/N`) of one plan into one report.
    Merge(MergeArgs),
    /// Write (and with --submit, submit) a Slurm job array that runs a profile's
    /// shards, and a merge job after it; or, with --status, say how its shards stand.
    Slurm(crate::cluster::slurm::SlurmArgs),
    /// Write Kubernetes manifests that run a profile's shards as an Indexed Job,
    /// and the merge as a Job after it.
    K8s(crate::cluster::k8s::K8sArgs),
}

/// `goodput fit`.
#[derive(Debug, Args)]
pub struct FitArgs {
    /// The measured report (its `.requests.jsonl` beside it).
    pub report: PathBuf,
    /// The engine to fit (default: the report's first).
    #[arg(long)]
    pub engine: Option<String>,
    /// Where to write the engine configuration (TOML).
    #[arg(long, short)]
    pub output: PathBuf,
    /// Overwrite an existing output.
    #[arg(long)]
    pub force: bool,
}

/// `goodput merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard reports, in any order.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// The merged report.
    #[arg(long, short, default_value = "goodput-report.json")]
    pub output: PathBuf,
    /// Overwrite an existing report at the output.
    #[arg(long)]
    pub force: bool,
    /// Do not write the HTML page beside the report.
    #[arg(long)]
    pub no_html: bool,
}

/// `goodput run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Profile TOML; default: the built-in quick profile on the simulator.
    pub profile: Option<PathBuf>,
    /// Report file.
    #[arg(long, short, default_value = "goodput-report.json")]
    pub output: PathBuf,
    /// The load levels.
    #[command(flatten)]
    pub levels: LevelArgs,
    /// Flags `run` and `search` share.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The load levels of `run` (and of a cluster job's shards), overriding the
/// profile's.
#[derive(Debug, Args, Clone, Default)]
pub struct LevelArgs {
    /// Closed-loop load levels, e.g. `1,4,16` (overrides the profile).
    #[arg(long, value_name = "LIST", conflicts_with = "rate")]
    pub concurrency: Option<String>,
    /// Open-loop request rates per second, e.g. `0.5,2`.
    #[arg(long, value_name = "LIST")]
    pub rate: Option<String>,
}

/// What each trial is: how many, how large, judged against which SLO, on which
/// engines, with which seed (shared by `run`, `search` and the cluster jobs).
#[derive(Debug, Args, Clone, Default)]
pub struct TrialArgs {
    /// Trials per load level.
    #[arg(long)]
    pub trials: Option<u32>,
    /// Measured requests per trial.
    #[arg(long)]
    pub requests: Option<u32>,
    /// SLO, e.g. `ttft:1000,tpot:100` (ms; also e2el).
    #[arg(long)]
    pub slo: Option<String>,
    /// Run only this engine (repeatable).
    #[arg(long = "engine", value_name = "NAME")]
    pub engines: Vec<String>,
    /// Seed of prompts and arrivals.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Price of an engine's GPUs, US dollars per hour: `2.5` for every engine or
    /// `NAME=2.5` for one (repeatable; over the profile's `usd_per_hour`).
    #[arg(long, value_name = "[ENGINE=]USD")]
    pub usd_per_hour: Vec<String>,
}

/// The flags `run` and `search` share: what each trial is, where it goes.
#[derive(Debug, Args, Default)]
pub struct CommonArgs {
    /// What each trial is.
    #[command(flatten)]
    pub trial: TrialArgs,
    /// Start over instead of resuming an incomplete report at the output.
    #[arg(long)]
    pub fresh: bool,
    /// Overwrite whatever is at the output, a complete report included.
    #[arg(long)]
    pub force: bool,
    /// No progress bars or status lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Do not write the HTML page beside the report.
    #[arg(long)]
    pub no_html: bool,
    /// Predict instead of measuring: run every selected engine as this simulator
    /// config (e.g. from `goodput fit`) in virtual time; the report is marked
    /// predicted. With `search`: search the model, then confirm the knee for real.
    #[arg(long, value_name = "ENGINE.toml")]
    pub predict: Option<PathBuf>,
    /// Run only slice I of N of the plan (I from 0), e.g. `--shard 2/8`: whole
    /// engines first, load levels when there are fewer engines than shards;
    /// `goodput merge` joins the shard reports.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Be client I of N (I from 0) that share every load level, e.g. as the tasks
    /// of `srun -n N goodput run --load-shard $SLURM_PROCID/$SLURM_NTASKS`: each
    /// sends its share of the concurrency or rate; `goodput merge` pools them.
    #[arg(long, value_name = "I/N", conflicts_with = "shard")]
    pub load_shard: Option<String>,
    /// With --load-shard: a folder all N clients see (on the shared file system),
    /// where they agree on a common start instant for every trial.
    #[arg(long, value_name = "DIR", requires = "load_shard")]
    pub load_barrier: Option<PathBuf>,
    /// Count a request's connection set-up in its TTFT when it needed a new
    /// connection, as most peers do (by default connections are opened before each
    /// trial and TTFT starts when the request is sent; `connect` is recorded apart).
    #[arg(long)]
    pub ttft_includes_connect: bool,
    /// Runtime threads of the client (default: one per CPU; at most 1024). Ingest
    /// grows with threads; a benchmark on one core uses 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub client_threads: Option<u32>,
    /// A running server instead of a profile's engines, and vLLM's spellings.
    #[command(flatten)]
    pub peer: PeerArgs,
}

/// `goodput search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Profile TOML; default: the built-in quick profile on the simulator.
    pub profile: Option<PathBuf>,
    /// Report file.
    #[arg(long, short, default_value = "goodput-search.json")]
    pub output: PathBuf,
    /// Search in this load mode instead of the profile's `[load] mode`.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Lowest load probed (default 1, or 0.5 requests/s).
    #[arg(long)]
    pub min: Option<f64>,
    /// Highest load probed (default 64).
    #[arg(long)]
    pub max: Option<f64>,
    /// Rate mode: relative resolution of the answer (default 0.05).
    #[arg(long)]
    pub resolution: Option<f64>,
    /// Share of requests that must be good (default: `[slo] attainment`, else 0.9).
    #[arg(long)]
    pub attainment: Option<f64>,
    /// Most load levels probed per engine (default 16).
    #[arg(long)]
    pub max_probes: Option<u32>,
    /// Most trials at one probe while its attainment's interval straddles the
    /// target (default: trials + 2).
    #[arg(long)]
    pub max_trials_per_probe: Option<u32>,
    /// `capacity`: the largest load that meets the SLO; `cost`: that, then the load
    /// whose good tokens cost least (default: `[search] objective`, else capacity).
    #[arg(long, value_enum)]
    pub objective: Option<crate::search::Objective>,
    /// Flags `run` and `search` share (`--trials`: trials each probe gets first).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// A load mode on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    /// Closed loop: x requests in flight.
    Concurrency,
    /// Open loop: x requests per second.
    Rate,
}

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

impl Cli {
    /// Runtime threads the command asks for (`--client-threads`; `None`: one per CPU).
    pub fn runtime_threads(&self) -> Option<usize> {
        match &self.command {
            Command::Run(a) => a.common.client_threads.map(|n| n as usize),
            Command::Search(a) => a.common.client_threads.map(|n| n as usize),
            _ => None,
        }
    }
}

/// Runs a parsed command line; returns the process exit code.
pub async fn main(cli: Cli) -> anyhow::Result<i32> {
    // Secrets this process was given are never written or printed.
    crate::redact::remember_environment();
    match cli.command {
        Command::Run(args) => run_command(args).await,
        Command::Search(args) => search_command(args).await,
        Command::Sim(args) => sim_command(args).await,
        Command::EngineGuard { argv } => Ok(crate::engine::guard::run(&argv)),
        Command::Show { report, format } => {
            let r = crate::peers::read(&report)?;
            let color = format == Format::Table
                && std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none();
            print_out(&render::show(&r, format, color))
        }
        Command::Compare {
            reports,
            min_effect,
            format,
            seed,
        } => {
            let mut loaded = Vec::new();
            for p in &reports {
                loaded.push(crate::compare::load(p)?);
            }
            let opts = crate::compare::Options {
                min_effect,
                seed,
                ..Default::default()
            };
            if format == CompareFormat::Json {
                return print_out(&render::compare::compare_json(&loaded, &opts));
            }
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            print_out(&render::compare::compare_text(&loaded, &opts, color))
        }
        Command::Report { report, output } => {
            let r = crate::peers::read(&report)?;
            let out = output.unwrap_or_else(|| report.with_extension("html"));
            crate::redact::write_file(&out, &render::html(&r))?;
            eprintln!("wrote {}", out.display());
            Ok(0)
        }
        Command::Fit(args) => crate::fit::command(&args),
        Command::Merge(args) => crate::shard::merge::command(&args),
        Command::Slurm(args) => crate::cluster::slurm::command(&args),
        Command::K8s(args) => crate::cluster::k8s::command(&args),
    }
}

/// Prints to stdout; a closed pipe (`goodput show r.json | head`) is not an error.
/// What a server or a foreign report put in the text is shown, not obeyed
/// ([`crate::term::safe`]: control sequences escaped, secrets redacted).
fn print_out(text: &str) -> anyhow::Result<i32> {
    let text = crate::term::safe(text);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(0),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(e.into()),
    }
}

async fn run_command(args: RunArgs) -> anyhow::Result<i32> {
    let plan = run_plan(&args)?;
    execute(&plan, &args.output, &args.common).await
}

/// The plan `goodput run` would run with these flags (before any `--shard`).
pub(crate) fn run_plan(args: &RunArgs) -> anyhow::Result<crate::plan::Plan> {
    let levels = args.levels.concurrency.is_some() || args.levels.rate.is_some();
    let (profile, origin) = load_profile(&args.profile, &args.common, levels)?;
    let usage = |e: String| anyhow::Error::from(crate::UsageError(e));
    let overrides = Overrides {
        concurrency: args
            .levels
            .concurrency
            .as_deref()
            .map(parse_points)
            .transpose()
            .map_err(|e| usage(format!("--concurrency: {e}")))?,
        rate: args
            .levels
            .rate
            .as_deref()
            .map(parse_points)
            .transpose()
            .map_err(|e| usage(format!("--rate: {e}")))?,
        search: None,
        mode: None,
        ..args.common.overrides()?
    };
    Ok(profile.into_plan(&origin, &overrides)?)
}

impl CommonArgs {
    /// The profile overrides these flags give (the rest left unset).
    fn overrides(&self) -> anyhow::Result<Overrides> {
        self.trial.overrides()
    }
}

impl TrialArgs {
    /// The profile overrides these flags give (the rest left unset).
    fn overrides(&self) -> anyhow::Result<Overrides> {
        let usage = |e: String| anyhow::Error::from(crate::UsageError(e));
        Ok(Overrides {
            trials: self.trials,
            requests: self.requests,
            slo: self
                .slo
                .as_deref()
                .map(parse_slo)
                .transpose()
                .map_err(|e| usage(format!("--slo: {e}")))?,
            engines: self.engines.clone(),
            seed: self.seed,
            usd_per_hour: self
                .usd_per_hour
                .iter()
                .map(|p| crate::plan::price::parse_usd_per_hour(p))
                .collect::<Result<_, _>>()
                .map_err(|e| usage(format!("--usd-per-hour: {e}")))?,
            ..Default::default()
        })
    }
}

fn load_profile(
    path: &Option<PathBuf>,
    flags: &CommonArgs,
    levels: bool,
) -> anyhow::Result<(Profile, String)> {
    let r = resolve::resolve(path.as_deref(), &flags.peer, levels)?;
    if !r.filled.is_empty() && !flags.quiet {
        eprintln!("{}", resolve::filled_note(&r.origin, &r.filled));
    }
    Ok((r.profile, r.origin))
}

async fn search_command(args: SearchArgs) -> anyhow::Result<i32> {
    let (profile, origin) = load_profile(&args.profile, &args.common, false)?;
    let overrides = Overrides {
        search: Some(crate::profile::SearchSpec {
            min: args.min,
            max: args.max,
            resolution: args.resolution,
            attainment: args.attainment,
            max_probes: args.max_probes,
            max_trials_per_probe: args.max_trials_per_probe,
            growth: None,
            objective: args.objective,
        }),
        mode: args.mode.map(|m| match m {
            ModeArg::Concurrency => crate::profile::LoadMode::Concurrency,
            ModeArg::Rate => crate::profile::LoadMode::Rate,
        }),
        ..args.common.overrides()?
    };
    let plan = profile.into_plan(&origin, &overrides)?;
    execute(&plan, &args.output, &args.common).await
}

/// Runs a plan (a sweep or a search), prints the table and the verdict, and
/// returns the exit code.
async fn execute(
    plan: &crate::plan::Plan,
    output: &std::path::Path,
    flags: &CommonArgs,
) -> anyhow::Result<i32> {
    if let Some(engine_config) = &flags.predict {
        return crate::predict::command::execute(plan, output, flags, engine_config).await;
    }
    let (quiet, no_html) = (flags.quiet, flags.no_html);
    let sliced;
    let (plan, shard) = match &flags.shard {
        None => (plan, None),
        Some(s) => {
            let (i, n) = crate::shard::parse_shard(s)?;
            let (p, info) = crate::shard::slice(plan, i, n)?;
            sliced = p;
            (&sliced, Some(info))
        }
    };
    let load_shard = match &flags.load_shard {
        None => None,
        Some(s) => {
            let (index, count) = crate::shard::parse_shard(s)
                .map_err(|e| crate::UsageError(e.0.replacen("--shard", "--load-shard", 1)))?;
            crate::shard::load::check(plan, index, count)?;
            Some(crate::shard::load::LoadShare {
                index,
                count,
                barrier: flags.load_barrier.clone(),
            })
        }
    };
    let opts = RunOptions {
        load_shard,
        output: output.to_path_buf(),
        fresh: flags.fresh,
        force: flags.force,
        progress: !quiet && std::io::stderr().is_terminal(),
        verbose: !quiet,
        html: !no_html,
        grace: std::time::Duration::from_secs(5),
        shard,
        ttft_includes_connect: flags.ttft_includes_connect,
    };
    peer_output::header(plan, flags);
    crate::engine::install_cleanup_hooks();
    let (report, outcome) = run(plan, &opts).await?;
    peer_output::save_result(&report, output, &flags.peer)?;
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    print_out(&render::show(&report, Format::Table, color))?;
    // The answer again, last, where the eye lands when the run ends.
    print_out(&format!("\n{}", render::verdict::verdict_text(&report)))?;
    if !quiet {
        let requests = crate::record::records_path(output);
        eprintln!(
            "report: {} (every request: {})",
            output.display(),
            requests.display()
        );
        if !no_html {
            eprintln!("charts: {}", output.with_extension("html").display());
        }
    }
    if let crate::run::Outcome::Interrupted(sig) = outcome {
        eprintln!("interrupted by {sig}: the report holds what finished");
    }
    Ok(outcome.exit_code())
}

async fn sim_command(args: SimArgs) -> anyhow::Result<i32> {
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

/// `compare`'s output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    /// The text table with its conclusion.
    Table,
    /// `{"conclusion", "rows": [...]}`.
    Json,
}

/// A `--min-effect`: a share in [0, 1).
fn parse_min_effect(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{s}: {e}"))?;
    if (0.0..1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "{s}: a share of the baseline in [0, 1), e.g. 0.02 for 2%"
        ))
    }
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
