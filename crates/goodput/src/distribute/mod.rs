//! **Distribute**: a plan cut into slices and shard reports merged ([`shard`]), and
//! the jobs that run the shards on a cluster: `goodput slurm`, `goodput k8s`
//! ([`cluster`]).

pub mod cluster;
pub mod shard;
