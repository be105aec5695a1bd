//! Running a sweep on the cluster scheduler people already have: goodput adds no
//! scheduler of its own. [`slurm`] writes (and submits) a job array whose tasks run
//! `goodput run --shard I/N`, and a merge job after it; [`k8s`] writes the same as a
//! Kubernetes Indexed Job. Both only write jobs; the slicing and the merge are
//! [`crate::shard`]'s.

pub mod k8s;
pub mod slurm;
mod yaml;

use std::path::{Path, PathBuf};

use clap::Args;

use crate::cli::{CommonArgs, LevelArgs, RunArgs, TrialArgs};
use crate::plan::Plan;

/// The flags of `goodput run` a cluster job passes on to every shard.
#[derive(Debug, Args, Clone, Default)]
pub struct SweepFlags {
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

impl SweepFlags {
    /// The plan these flags give with `profile`, checked as `goodput run` checks it,
    /// and the number of shards.
    pub fn plan(&self, profile: &Path) -> anyhow::Result<(Plan, u32)> {
        let args = RunArgs {
            profile: Some(profile.to_path_buf()),
            output: PathBuf::from("unused.json"),
            levels: self.levels.clone(),
            common: CommonArgs {
                trial: self.trial.clone(),
                ..Default::default()
            },
        };
        let plan = crate::cli::run_plan(&args)?;
        let n = self
            .shards
            .unwrap_or_else(|| crate::shard::default_shards(&plan));
        // Checks that N shards fit the plan (the error says how many would).
        crate::shard::slice(&plan, 0, n)?;
        Ok((plan, n))
    }

    /// The same flags as `goodput run` arguments (without `--shards`).
    pub fn argv(&self) -> Vec<String> {
        let mut a = Vec::new();
        let mut opt = |flag: &str, v: Option<String>| {
            if let Some(v) = v {
                a.push(flag.to_string());
                a.push(v);
            }
        };
        let (levels, trial) = (&self.levels, &self.trial);
        opt("--concurrency", levels.concurrency.clone());
        opt("--rate", levels.rate.clone());
        opt("--trials", trial.trials.map(|v| v.to_string()));
        opt("--requests", trial.requests.map(|v| v.to_string()));
        opt("--slo", trial.slo.clone());
        opt("--seed", trial.seed.map(|v| v.to_string()));
        for e in &trial.engines {
            a.push("--engine".into());
            a.push(e.clone());
        }
        for p in &trial.usd_per_hour {
            a.push("--usd-per-hour".into());
            a.push(p.clone());
        }
        a
    }
}

/// `path` made absolute (jobs run elsewhere, from another folder).
pub(crate) fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path)
        .map_err(|e| anyhow::anyhow!("cannot make {} absolute: {e}", path.display()))
}

/// The goodput binary jobs run: `--goodput PATH`, or this one.
pub(crate) fn goodput_exe(given: &Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match given {
        Some(p) => absolute(p),
        None => std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("cannot find goodput's own binary: {e}")),
    }
}

/// A word quoted for a POSIX shell.
pub(crate) fn sh(word: &str) -> String {
    shlex::try_quote(word).map_or_else(
        // Only a NUL byte cannot be quoted; it cannot be in a path or flag either.
        |_| format!("'{}'", word.replace('\0', "")),
        |q| q.into_owned(),
    )
}
