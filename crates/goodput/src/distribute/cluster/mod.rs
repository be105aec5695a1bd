//! Running a sweep on the cluster scheduler people already have: goodput adds no
//! scheduler of its own. [`slurm`] writes (and submits) a job array whose tasks run
//! `goodput run --shard I/N`, and a merge job after it; [`k8s`] writes the same as a
//! Kubernetes Indexed Job. Both only write jobs; the slicing and the merge are
//! [`crate::distribute::shard`]'s. Both take typed options ([`slurm::SlurmOptions`],
//! [`k8s::K8sOptions`]) and the plan [`crate::cli`] built from the profile and
//! the sweep's flags, which [`crate::define::profile::Overrides::argv`] writes back into
//! every shard's command line.

pub mod k8s;
pub mod slurm;
mod yaml;

use std::path::{Path, PathBuf};

use crate::define::plan::Plan;
use crate::UsageError;

/// The shards a cluster job cuts `plan` into: `requested`, or one per engine;
/// checked against the plan (the error says how many would fit).
pub fn shards(plan: &Plan, requested: Option<u32>) -> Result<u32, UsageError> {
    let n = requested.unwrap_or_else(|| crate::distribute::shard::default_shards(plan));
    crate::distribute::shard::slice(plan, 0, n)?;
    Ok(n)
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
