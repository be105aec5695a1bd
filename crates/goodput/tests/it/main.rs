//! goodput's integration tests, one binary with a module per area of the pipeline
//! (one link instead of one per file). Run one area with its path as the filter, for
//! example `cargo test -p goodput --test it engines::llama_cpp`.
//!
//! - [`engines`]: engines launched, watched and stopped (simulator, fake vLLM, real
//!   llama.cpp and vLLM CPU), their `/metrics`, telemetry sources, vLLM users' flags;
//! - [`drive`]: the SSE client, workloads, reasoning streams, hostile servers and input;
//! - [`runs`]: whole runs of the binary: sweep, resume, search, fit/predict, cost;
//! - [`distribute`]: shards and merge, shared load levels, Slurm and Kubernetes;
//! - [`present`]: show in every format, the HTML page, warnings, verdict, compare;
//! - [`layout`]: the crate's own map: families import only earlier ones, no circle;
//! - [`common`]: what they share (servers on loopback, the binary, external programs).

mod common;
mod distribute;
mod drive;
mod engines;
mod layout;
mod present;
mod runs;
