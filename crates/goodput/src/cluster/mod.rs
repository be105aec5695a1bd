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

use crate::cli::{CommonArgs, RunArgs};
use crate::plan::Plan;

/// The flags of `goodput run` a cluster job passes on to every shard.
#[derive(Debug, Args, Clone, Default)]
pub struct SweepFlags {
    /// Closed-loop load levels, e.g. `1,4,16` (overrides the profile).
    #[arg(long, value_name = "LIST", conflicts_with = "rate")]
    pub concurrency: Option<String>,
    /// Open-loop request rates per second, e.g. `0.5,2`.
    #[arg(long, value_name = "LIST")]
    pub rate: Option<String>,
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
            concurrency: self.concurrency.clone(),
            rate: self.rate.clone(),
            common: CommonArgs {
                trials: self.trials,
                requests: self.requests,
                slo: self.slo.clone(),
                engines: self.engines.clone(),
                seed: self.seed,
                fresh: false,
                force: false,
                quiet: false,
                no_html: false,
                shard: None,
                load_shard: None,
                load_barrier: None,
                predict: None,
                ttft_includes_connect: false,
                client_threads: None,
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
        opt("--concurrency", self.concurrency.clone());
        opt("--rate", self.rate.clone());
        opt("--trials", self.trials.map(|v| v.to_string()));
        opt("--requests", self.requests.map(|v| v.to_string()));
        opt("--slo", self.slo.clone());
        opt("--seed", self.seed.map(|v| v.to_string()));
        for e in &self.engines {
            a.push("--engine".into());
            a.push(e.clone());
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
