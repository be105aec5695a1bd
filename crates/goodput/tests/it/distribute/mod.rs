//! Work spread over machines: shards and their merge, one load level shared by clients,
//! Slurm and Kubernetes, and the release build that ships (`cargo install`, the wheel).

mod k8s;
mod load_shard;
mod packaging;
mod shard;
mod slurm;
