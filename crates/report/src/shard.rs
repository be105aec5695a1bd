//! goodput additions for sweeps split over machines: the slice a shard report
//! holds (`run.shard`), and where a merged report's parts came from (`run.merged`).

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// goodput addition: the slice of a plan that a shard report holds (`goodput run
/// --shard I/N`). The whole plan is named too, so that `goodput merge` can check
/// that shards belong together and cover the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ShardInfo {
    /// This shard, counted from 0 (as Slurm array task ids and Kubernetes
    /// completion indexes are).
    pub index: u32,
    /// Shards the plan is cut into.
    pub count: u32,
    /// The engines this shard runs, in plan order.
    pub engines: Vec<String>,
    /// The load levels this shard runs on them (every level of the plan when it
    /// holds whole engines; empty for a capacity search, which picks its own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<f64>,
    /// Every engine of the whole plan, in plan order.
    pub plan_engines: Vec<String>,
    /// Every load level of the whole plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan_points: Vec<f64>,
    /// The whole plan's fingerprints (`run.fingerprints` holds this shard's own).
    pub plan_fingerprints: IndexMap<String, String>,
}

/// goodput addition: how a merged report was put together (`goodput merge`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct MergedInfo {
    /// Shards the plan was cut into.
    pub count: u32,
    /// The shards merged, by index.
    pub shards: Vec<MergedShard>,
    /// Indexes of the shards that were not given (a partial merge).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<u32>,
}

/// goodput addition: one shard of a merged report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct MergedShard {
    /// The shard's index.
    pub index: u32,
    /// The shard report, as given to `goodput merge`.
    pub file: String,
    /// The machine it ran on (its host name), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its status: `complete`, `partial` or `running`.
    pub status: crate::RunStatus,
    /// The engines it ran.
    pub engines: Vec<String>,
    /// The load levels it ran (empty: every level of the plan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<f64>,
}

/// goodput addition: one of `count` clients that share every load level of a plan
/// (`goodput run --load-shard I/N`): concurrency split as evenly as integers allow
/// (the remainder to the lowest indexes), rate divided by `count`, the trial's
/// requests split the same way with their indexes kept, so that the records of
/// the `count` reports merge into the whole trial (`goodput merge`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadShardInfo {
    /// This client, from 0.
    pub index: u32,
    /// How many clients share the load.
    pub count: u32,
}
