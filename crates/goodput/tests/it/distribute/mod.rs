//! Work spread over machines: shards and their merge, one load level shared by clients,
//! Slurm and Kubernetes.

mod k8s;
mod load_shard;
mod shard;
mod slurm;
