//! The flags of `goodput slurm` and `goodput k8s`, made the cluster writers'
//! typed options, and the plan they write jobs for.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{LevelArgs, TrialArgs};
use crate::define::plan::Plan;
use crate::define::profile::Overrides;
use crate::define::requests::salt;
use crate::distribute::cluster::k8s::K8sOptions;
use crate::distribute::cluster::slurm::SlurmOptions;

/// The flags of `goodput run` a cluster job passes on to every shard.
#[derive(Debug, Args, Clone, Default)]
pub struct SweepArgs {
    /// The load levels.
    #[command(flatten)]
    pub levels: LevelArgs,
    /// What each trial is.
    #[command(flatten)]
    pub trial: TrialArgs,
    /// Number of shards (default: one per engine; at most one per engine and
    /// load level).
    #[arg(long)]
    pub shards: Option<u32>,
}

impl SweepArgs {
    pub(super) fn options(&self) -> Overrides {
        self.trial.with_levels(&self.levels)
    }
}

/// What `--status` would ignore: the flags that write a job.
const STATUS_ALONE: [&str; 21] = [
    "profile",
    "partition",
    "gpus_per_task",
    "time",
    "account",
    "extra",
    "goodput",
    "shards",
    "concurrency",
    "rate",
    "trials",
    "requests",
    "slo",
    "engines",
    "seed",
    "usd_per_hour",
    "prompt_salt",
    "output",
    "store",
    "no_store",
    "tags",
];

/// `goodput slurm`.
#[derive(Debug, Args)]
pub struct SlurmArgs {
    /// Profile TOML (not needed with --status).
    #[arg(required_unless_present = "status")]
    pub profile: Option<PathBuf>,
    /// Folder for the job scripts, shard reports, logs and the merged report; it
    /// must be on a file system every node sees.
    #[arg(long, short, default_value = "goodput-slurm")]
    pub output: PathBuf,
    /// Partition (`#SBATCH --partition`).
    #[arg(long)]
    pub partition: Option<String>,
    /// GPUs per task (`#SBATCH --gpus-per-task`; leave out on nodes without GPUs).
    #[arg(long)]
    pub gpus_per_task: Option<u32>,
    /// Time limit per task, e.g. `04:00:00` (`#SBATCH --time`).
    #[arg(long)]
    pub time: Option<String>,
    /// Account to charge (`#SBATCH --account`).
    #[arg(long)]
    pub account: Option<String>,
    /// More directives for both jobs, e.g. `--extra "#SBATCH --qos=high"` (repeatable).
    #[arg(long, value_name = "LINE", allow_hyphen_values = true)]
    pub extra: Vec<String>,
    /// The goodput binary the jobs run (default: this one); it must be at this
    /// path on every node.
    #[arg(long, value_name = "PATH")]
    pub goodput: Option<PathBuf>,
    /// Submit both jobs with `sbatch` and print their ids.
    #[arg(long, conflicts_with = "status")]
    pub submit: bool,
    /// Say which shards of the job folder are done, running or failed (the job's
    /// flags were given when it was written: none is taken with this).
    #[arg(long, value_name = "OUTDIR", conflicts_with_all = STATUS_ALONE)]
    pub status: Option<PathBuf>,
    /// `goodput run` flags every shard gets.
    #[command(flatten)]
    pub sweep: SweepArgs,
    /// Where the merge job records the merged run (shards are not recorded).
    #[command(flatten)]
    pub record: ClusterRecordArgs,
}

/// `goodput k8s`.
#[derive(Debug, Args)]
pub struct K8sArgs {
    /// Profile TOML (copied into a ConfigMap; a JSONL workload must be in the image
    /// or on the results volume, at the path the profile names).
    pub profile: PathBuf,
    /// Folder to write the manifests into.
    #[arg(long, short, default_value = "goodput-k8s")]
    pub output: PathBuf,
    /// Container image with goodput (and the engines) installed.
    #[arg(long, default_value = "goodput:latest")]
    pub image: String,
    /// Name of the Job (and prefix of the ConfigMap and merge Job).
    #[arg(long, default_value = "goodput")]
    pub name: String,
    /// Namespace.
    #[arg(long)]
    pub namespace: Option<String>,
    /// PersistentVolumeClaim (ReadWriteMany) the pods write their reports to.
    #[arg(long, default_value = "goodput-results")]
    pub results_claim: String,
    /// GPUs per pod (`nvidia.com/gpu`); 0 for none.
    #[arg(long, default_value_t = 1)]
    pub gpus_per_pod: u32,
    /// `goodput run` flags every shard gets.
    #[command(flatten)]
    pub sweep: SweepArgs,
    /// Where the merge Job records the merged run (default: `--store
    /// /results/store.sqlite`, on the results volume; shards are not recorded).
    #[command(flatten)]
    pub record: ClusterRecordArgs,
}

/// Where a cluster's merge job records the merged run: `run`'s flags, read from
/// the command line only (a `GOODPUT_STORE` of this machine means nothing on the
/// cluster's nodes; the merge job reads its own).
#[derive(Debug, Args, Clone, Default)]
pub struct ClusterRecordArgs {
    /// The results store the merge job records the merged run in (a path on the
    /// node that runs it).
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// The merge job does not record the run.
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    /// A tag for the merged run in the store (repeatable).
    #[arg(long = "tag", value_name = "TAG", value_parser = super::history::parse_tag)]
    pub tags: Vec<String>,
}

/// The `goodput merge` flags that record the merged run as `record` says; a
/// shard is a slice and never recorded.
fn merge_record(record: &ClusterRecordArgs, default_store: Option<&str>) -> Vec<String> {
    let mut a = Vec::new();
    if record.no_store {
        a.push("--no-store".to_string());
        return a;
    }
    let store = record
        .store
        .as_ref()
        .map(|p| p.display().to_string())
        .or(default_store.map(str::to_string));
    if let Some(store) = store {
        a.extend(["--store".to_string(), store]);
    }
    for t in &record.tags {
        a.extend(["--tag".to_string(), t.clone()]);
    }
    a
}

/// Runs `goodput slurm`.
pub(super) fn slurm_command(args: SlurmArgs) -> anyhow::Result<i32> {
    let profile = match (&args.status, args.profile) {
        (Some(dir), _) => return crate::distribute::cluster::slurm::status_command(dir),
        (None, Some(p)) => p,
        (None, None) => {
            return Err(
                crate::UsageError("goodput slurm: give a profile, or --status DIR".into()).into(),
            )
        }
    };
    let mut opts = SlurmOptions {
        profile,
        output: args.output,
        partition: args.partition,
        gpus_per_task: args.gpus_per_task,
        time: args.time,
        account: args.account,
        extra: args.extra,
        goodput: args.goodput,
        submit: args.submit,
        shards: args.sweep.shards,
        sweep: args.sweep.options(),
        merge_record: merge_record(&args.record, None),
    };
    let plan = sweep_plan(&opts.profile, &opts.sweep)?;
    // Every shard salts its prompts with the one salt drawn here.
    opts.sweep.prompt_salt = salt::for_shards(plan.prompt_salt.as_ref());
    crate::distribute::cluster::slurm::command(&opts, &plan)
}

/// Runs `goodput k8s`.
pub(super) fn k8s_command(args: K8sArgs) -> anyhow::Result<i32> {
    let mut opts = K8sOptions {
        profile: args.profile,
        output: args.output,
        image: args.image,
        name: args.name,
        namespace: args.namespace,
        results_claim: args.results_claim,
        gpus_per_pod: args.gpus_per_pod,
        shards: args.sweep.shards,
        sweep: args.sweep.options(),
        merge_record: merge_record(&args.record, Some("/results/store.sqlite")),
    };
    let plan = sweep_plan(&opts.profile, &opts.sweep)?;
    // Every shard salts its prompts with the one salt drawn here.
    opts.sweep.prompt_salt = salt::for_shards(plan.prompt_salt.as_ref());
    crate::distribute::cluster::k8s::command(&opts, &plan)
}

/// The plan `goodput run PROFILE` would run with `sweep`'s flags (before any
/// `--shard`): what every shard's command line slices.
pub(super) fn sweep_plan(profile: &Path, sweep: &Overrides) -> anyhow::Result<Plan> {
    let levels = sweep.concurrency.is_some() || sweep.rate.is_some();
    let r = super::resolve::resolve(Some(profile), &super::PeerArgs::default(), levels)?;
    if !r.filled.is_empty() {
        eprintln!(
            "{}",
            crate::term::safe(&super::resolve::filled_note(&r.origin, &r.filled))
        );
    }
    Ok(r.profile.into_plan(&r.origin, sweep)?)
}
