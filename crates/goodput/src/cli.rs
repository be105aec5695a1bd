//! The command line: parse, build a plan, call the library, choose the exit code.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::render::{self, Format};

mod cluster;
mod history;
mod options;
mod parse;
mod peer;
mod peer_output;
mod resolve;
mod runs;
mod sim;
#[cfg(test)]
mod tests;
mod tune;

use crate::store::Kind;
pub use cluster::{K8sArgs, SlurmArgs, SweepArgs};
use history::Recording;
pub use history::{GateArgs, HistoryArgs, RecordArgs, StoreArg};
pub use options::Levels;
pub use parse::{parse_or_exit, peer_hint};
pub use peer::{ApiArg, DatasetName, PeerArgs, VllmArgs};
pub use resolve::{DEFAULT_LOAD, DEFAULT_SLO, DEFAULT_WORKLOAD};
use runs::{run_command, search_command};
use sim::sim_command;
pub use sim::{SimArgs, VllmEngineArgs};
pub use tune::TuneArgs;

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
    /// Find which flags of one engine serve the most load under the SLO: the
    /// profile's `[tune]` space, a few candidates measured, the engine model fitted
    /// and every candidate predicted, the most promising measured (docs/tune.md).
    Tune(TuneArgs),
    /// Serve the built-in simulated engine (OpenAI-compatible, vLLM-style metrics).
    Sim(SimArgs),
    /// Print a report as a table (or markdown, csv, json).
    Show {
        /// The report file.
        report: PathBuf,
        /// Output format.
        #[arg(long, short, value_enum, default_value = "table")]
        format: ShowFormat,
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
        /// Accepted for old scripts; compare's tests are exact and draw nothing.
        #[arg(long, default_value_t = crate::stats::DEFAULT_SEED)]
        seed: u64,
    },
    /// A CI gate: exit 1 when the candidate is worse than the baseline in any
    /// gated row of `compare`'s table (beyond noise, Holm-corrected, at least
    /// --min-effect), 0 when none is, 2 when nothing could be tested or on usage
    /// errors; a Markdown summary for the job's page. The baseline is a file, or
    /// `--baseline last|TAG` from the results store.
    Gate(GateArgs),
    /// List the runs recorded in the results store (newest first), or with
    /// `--metric M --engine E` that metric's trend over them (`--html` a chart).
    History(HistoryArgs),
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
    Slurm(SlurmArgs),
    /// Write Kubernetes manifests that run a profile's shards as an Indexed Job,
    /// and the merge as a Job after it.
    K8s(K8sArgs),
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
    /// Where the merged run is recorded.
    #[command(flatten)]
    pub record: RecordArgs,
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
    /// Where the run is recorded.
    #[command(flatten)]
    pub record: RecordArgs,
}

/// The load levels of `run` (and of a cluster job's shards), overriding the
/// profile's.
#[derive(Debug, Args, Clone, Default)]
pub struct LevelArgs {
    /// Closed-loop load levels, e.g. `1,4,16` (overrides the profile).
    #[arg(long, value_name = "LIST", conflicts_with = "rate")]
    pub concurrency: Option<Levels>,
    /// Open-loop request rates per second, e.g. `0.5,2`.
    #[arg(long, value_name = "LIST")]
    pub rate: Option<Levels>,
}

/// What each trial is: how many, how large, judged against which SLO, on which
/// engines, with which seed (shared by `run`, `search` and the cluster jobs).
#[derive(Debug, Args, Clone, Default)]
pub struct TrialArgs {
    /// Trials per load level: a number, or `auto` (adaptive: `[load] min_trials`
    /// to `max_trials`, until each point is settled; docs/statistics.md).
    #[arg(long, value_name = "N|auto")]
    pub trials: Option<crate::define::profile::TrialsSpec>,
    /// Measured requests per trial.
    #[arg(long)]
    pub requests: Option<u32>,
    /// SLO, e.g. `ttft:1000,tpot:100` (ms; also e2el and ttfat).
    #[arg(long, value_parser = crate::define::profile::parse_slo)]
    pub slo: Option<report::Slo>,
    /// Run only this engine (repeatable).
    #[arg(long = "engine", value_name = "NAME")]
    pub engines: Vec<String>,
    /// Seed of prompts and arrivals.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Price of an engine's GPUs, US dollars per hour: `2.5` for every engine or
    /// `NAME=2.5` for one (repeatable; over the profile's `usd_per_hour`).
    #[arg(long, value_name = "[ENGINE=]USD", value_parser = crate::define::plan::price::parse_usd_per_hour)]
    pub usd_per_hour: Vec<(Option<String>, f64)>,
    /// Interleave the engines' trials (rounds in a seeded order, every engine up
    /// at once), over `[load] interleave`; the default when no engine is launched
    /// on a GPU.
    #[arg(long, conflicts_with = "no_interleave")]
    pub interleave: bool,
    /// Run the engines one after the other (each started, measured, stopped).
    #[arg(long)]
    pub no_interleave: bool,
    /// Start every prompt with a random string drawn for the run (`[workload] salt
    /// = true`), so the engine's prefix cache holds none of them from an earlier
    /// run; `--prompt-salt=SALT` uses SALT (what the shards of one sweep share).
    #[arg(long, value_name = "SALT", num_args = 0..=1, require_equals = true,
          default_missing_value = "", value_parser = crate::define::profile::parse_prompt_salt)]
    pub prompt_salt: Option<crate::define::profile::PromptSalt>,
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
    #[arg(long, value_name = "ENGINE.toml", conflicts_with_all = ["shard", "load_shard", "save_result"])]
    pub predict: Option<PathBuf>,
    /// Run only slice I of N of the plan (I from 0), e.g. `--shard 2/8`: whole
    /// engines first, load levels when there are fewer engines than shards;
    /// `goodput merge` joins the shard reports.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<crate::distribute::shard::Part>,
    /// Be client I of N (I from 0) that share every load level, e.g. as the tasks
    /// of `srun -n N goodput run --load-shard $SLURM_PROCID/$SLURM_NTASKS`: each
    /// sends its share of the concurrency or rate; `goodput merge` pools them.
    #[arg(long, value_name = "I/N", conflicts_with = "shard")]
    pub load_shard: Option<crate::distribute::shard::Part>,
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
    /// Also trust the CA certificates of this PEM file for `https` engines (a
    /// private CA; repeatable). `SSL_CERT_FILE` and `SSL_CERT_DIR` are read too.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Vec<PathBuf>,
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
    pub objective: Option<ObjectiveArg>,
    /// Flags `run` and `search` share (`--trials`: trials each probe gets first).
    #[command(flatten)]
    pub common: CommonArgs,
    /// Where the search is recorded.
    #[command(flatten)]
    pub record: RecordArgs,
}

/// A load mode on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    /// Closed loop: x requests in flight.
    Concurrency,
    /// Open loop: x requests per second.
    Rate,
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
        // Each records its file in the results store after writing it.
        Command::Run(args) => {
            let rec = Recording::new(Kind::Run, &args.output, &args.record, args.profile.clone())
                .of_sweep(&args.common);
            let code = run_command(args).await?;
            rec.record();
            Ok(code)
        }
        Command::Search(args) => {
            let rec = Recording::new(
                Kind::Search,
                &args.output,
                &args.record,
                args.profile.clone(),
            )
            .of_sweep(&args.common);
            let code = search_command(args).await?;
            rec.record();
            Ok(code)
        }
        Command::Tune(args) => {
            let mut rec = Recording::new(
                Kind::Tune,
                &args.output,
                &args.record,
                Some(args.profile.clone()),
            );
            rec.quiet = args.quiet;
            let code = tune::tune_command(args).await?;
            rec.record();
            Ok(code)
        }
        Command::Sim(args) => sim_command(args).await,
        Command::EngineGuard { argv } => Ok(crate::drive::engine::guard::run(&argv)),
        Command::Show { report, format } => {
            if let Some(done) = tune::show_tune(&report) {
                return done;
            }
            let r = crate::import::read(&report)?;
            let format = format.format();
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
                loaded.push(crate::judge::compare::read(p)?);
            }
            let opts = crate::judge::compare::Options {
                min_effect,
                seed,
                ..Default::default()
            };
            if format == CompareFormat::Json {
                return print_out(&crate::judge::compare::json(&loaded, &opts));
            }
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            print_out(&crate::judge::compare::text(&loaded, &opts, color))
        }
        Command::Gate(args) => history::gate_command(args),
        Command::History(args) => history::history_command(args),
        Command::Report { report, output } => {
            let r = crate::import::read(&report)?;
            let out = output.unwrap_or_else(|| report.with_extension("html"));
            crate::redact::write_html(&out, &r)?;
            eprintln!("wrote {}", out.display());
            Ok(0)
        }
        Command::Fit(args) => crate::model::fit::command(&args.options()),
        Command::Merge(args) => {
            let rec = Recording::new(Kind::Merge, &args.output, &args.record, None);
            let code = crate::distribute::shard::merge::command(&args.options())?;
            rec.record();
            Ok(code)
        }
        Command::Slurm(args) => cluster::slurm_command(args),
        Command::K8s(args) => cluster::k8s_command(args),
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

/// `show`'s output formats ([`Format`] on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShowFormat {
    /// Aligned text table for a terminal, followed by the warnings.
    Table,
    /// Markdown table (for READMEs and pull requests), followed by the warnings.
    Markdown,
    /// CSV export: one row per engine x load level, full-precision numbers.
    Csv,
    /// JSON export: a flat array of row objects with the same keys as the CSV.
    Json,
}

impl ShowFormat {
    fn format(self) -> Format {
        match self {
            ShowFormat::Table => Format::Table,
            ShowFormat::Markdown => Format::Markdown,
            ShowFormat::Csv => Format::Csv,
            ShowFormat::Json => Format::Json,
        }
    }
}

/// A search objective ([`crate::define::profile::Objective`]) on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ObjectiveArg {
    /// The largest load that meets the SLO.
    Capacity,
    /// That, and then the load with the least cost per good token.
    Cost,
}

impl ObjectiveArg {
    pub(super) fn objective(self) -> crate::define::profile::Objective {
        match self {
            ObjectiveArg::Capacity => crate::define::profile::Objective::Capacity,
            ObjectiveArg::Cost => crate::define::profile::Objective::Cost,
        }
    }
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
