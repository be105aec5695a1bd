//! goodput: which LLM serving configuration meets your latency SLO, and at what load.
//!
//! # Layout: the pipeline's families, in order
//!
//! **Define** what runs:
//! - [`profile`] and [`plan`]: the TOML profile as written, then validated into a plan.
//! - [`workload`]: what each request says (synthetic, JSONL, prefix, trace,
//!   conversation, ShareGPT), built whole before a trial.
//! - [`options`]: what a command was asked, typed ([`cli`] fills it).
//!
//! **Drive** the engines:
//! - [`engine`]: launch an engine process (or use a URL), wait until ready, read its
//!   limits and KV pool, stop it.
//! - [`load`]: when each request is sent (closed-loop concurrency or open-loop rate).
//! - [`client`]: streams one request over HTTP/SSE and records raw facts.
//! - [`stop`]: the run's stop signal (the root cancellation token); waits that end
//!   when it is given.
//!
//! **Measure**:
//! - [`record`]: the per-request record, the one source of truth, and its JSONL file.
//! - [`metrics`]: every metric derived from records, in one place (pure).
//! - [`telemetry`], [`server_metrics`] and [`sampling`]: GPU samples and the engine's
//!   `/metrics` beside each trial, and the samplers' loop.
//!
//! **Judge**:
//! - [`stats`]: the one median; how sure we are: order-statistic intervals, the
//!   hierarchical bootstrap, Welch's t, Holm's correction, the capacity's interval
//!   (pure, seeded).
//! - [`search`]: capacity search: which load to probe next (pure; run by [`run`]), and
//!   the one trial rule (adaptive trials, the search's confirmation trials).
//! - [`compare`]: the data of a comparison (from reports and their requests files)
//!   and its decisions, a `report::compare::Comparison`, which [`render`] shows.
//! - [`run`]: the sweep: engines x points x trials, writing the report after each
//!   trial; one trial loop over a backend (an HTTP engine, or the engine model in
//!   virtual time for [`predict`]).
//!
//! **Model**: [`fit`] (records -> an engine configuration) and [`predict`] (that
//! configuration on the simulator's model in virtual time -> a report marked
//! predicted).
//!
//! **Distribute**: [`shard`] (a plan cut into slices, shard reports merged) and
//! [`cluster`] (`goodput slurm`, `goodput k8s`: jobs that run the shards).
//!
//! **Present**: [`render`] (the `goodput-render` crate: show, compare, HTML,
//! warnings, the verdict; it depends on the report crate alone), [`peers`] (peers'
//! result files read as reports, vLLM's written), [`environment`] (what ran where),
//! [`dates`] (re-exported from `goodput-render`).
//!
//! At the door: [`cli`], the command line, the only module that knows clap: flags
//! parsed into typed values, one options value per command ([`options`], and each
//! command's own: `FitOptions`, `MergeOptions`, `SlurmOptions`, `K8sOptions`).
//! Beside every stage: [`files`] (regular files only, bounded reads), [`redact`]
//! (secrets out of everything written) and [`term`] (terminal-safe printing).
//!
//! The simulated engine lives beside it, in the `goodput-sim` crate; the client's own
//! fidelity benchmark in `goodput-bench` (`crates/bench`).

pub mod cli;
pub mod client;
pub mod cluster;
pub mod compare;
pub use goodput_render::dates;
pub mod engine;
pub mod environment;
pub mod files;
pub mod fit;
pub mod load;
pub mod metrics;
pub mod options;
pub mod peers;
pub mod plan;
pub mod predict;
pub mod profile;
pub mod record;
pub mod redact;
pub use goodput_render as render;
pub mod run;
pub mod sampling;
pub mod search;
pub mod server_metrics;
pub mod shard;
pub mod stats;
pub mod stop;
pub mod telemetry;
pub mod term;
pub mod workload;

pub use report;

/// A usage error: a bad flag value, or an output that holds data goodput will not
/// overwrite without being asked. The binary exits 2 for it, as for a bad profile.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);
