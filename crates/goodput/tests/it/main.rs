//! goodput's integration tests, one binary with a module per area of the pipeline
//! (one link instead of one per file). Run one area with its path as the filter, for
//! example `cargo test -p goodput --test it engines::llama_cpp`.
//!
//! - [`engines`]: engines launched, watched and stopped (simulator, fake vLLM, real
//!   llama.cpp and vLLM CPU), their `/metrics`, telemetry sources, vLLM users' flags;
//! - [`drive`]: the SSE client, workloads, reasoning streams, hostile servers and input;
//! - [`runs`]: whole runs of the binary: sweep, resume, search, fit/predict, cost,
//!   the results store and `history`;
//! - [`distribute`]: shards and merge, shared load levels, Slurm and Kubernetes;
//! - [`present`]: show in every format, the HTML page, warnings, verdict, compare;
//! - [`layout`]: the crate's own map: families import only earlier ones, no circle;
//! - [`common`]: what they share (servers on loopback, the binary, external programs).

/// Every goodput these tests start records its runs in a store under the target
/// folder, never in the user's data directory: `GOODPUT_STORE` is set for this
/// process (and so inherited by every child) before any thread starts. A test of
/// the store itself points its commands at its own scratch store.
#[ctor::ctor]
fn scratch_results_store() {
    let path = concat!(env!("CARGO_TARGET_TMPDIR"), "/goodput-it-store.sqlite");
    // A constructor runs before main, while this is the only thread: nothing
    // reads the environment at the same time.
    std::env::set_var("GOODPUT_STORE", path);
}

mod common;
mod distribute;
mod drive;
mod engines;
mod layout;
mod present;
mod runs;
