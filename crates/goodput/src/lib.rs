//! goodput: which LLM serving configuration meets your latency SLO, and at what load.
//!
//! # Layout: the pipeline's families, in order
//!
//! Each family is a folder, and a family imports only the families before it (and
//! the helpers beside every stage), never one after it:
//!
//! 1. [`define`]: what runs: the profile, the validated plan, the workload, the
//!    typed options of a command.
//! 2. [`drive`]: the engines launched (or reached by URL), the load, the HTTP/SSE
//!    client, and the per-request record, the one source of truth.
//! 3. [`measure`]: every metric derived from records, in one place; GPU and server
//!    metrics sampled beside each trial; what ran where.
//! 4. [`import`]: other tools' result files (vLLM, GuideLLM, AIPerf) read as
//!    reports, one reader per format.
//! 5. [`judge`]: the one place a "meets", "better" or "capacity" is decided: the
//!    capacity search's next step and trial rule, a search's answer, and the
//!    comparison's decisions (the verdict and `gate` call them too).
//! 6. [`sweep`]: the runner: engines x load levels x trials over one trial loop
//!    and its backends (an HTTP engine, or the model in virtual time), the report
//!    written after every trial, the lock, resume and progress.
//! 7. [`model`]: an engine configuration fitted from records, what-if predictions
//!    on the simulator's model in virtual time, and `tune` over a flag space.
//! 8. [`distribute`]: a plan cut into shards, shard reports merged, Slurm and
//!    Kubernetes jobs.
//! 9. [`export`]: goodput's runs written in other tools' formats (vLLM's).
//! 10. **Present**: [`render`], the `goodput-render` crate (show, compare, HTML,
//!     charts, warnings, the verdict). It depends on the report crate alone, so it
//!     works on any report file; [`dates`] comes from it.
//!
//! At the door: [`cli`], the command line, the only module that knows clap: flags
//! parsed into typed values, one options value per command
//! ([`define::options`], and each command's own: `FitOptions`, `MergeOptions`,
//! `SlurmOptions`, `K8sOptions`). Beside every stage: [`stats`] (the one median,
//! percentiles and intervals: how sure we are), [`files`] (regular files only,
//! bounded reads), [`bounded`] (bounded HTTP bodies), [`redact`] (secrets out of
//! everything written), [`stop`] (the run's stop signal, the root cancellation
//! token) and [`term`] (terminal-safe printing).
//!
//! The simulated engine lives beside it, in the `goodput-sim` crate; the client's own
//! fidelity benchmark in `goodput-bench` (`crates/bench`).

pub mod cli;
pub use goodput_render as render;
pub use goodput_render::dates;

pub mod define;
pub mod distribute;
pub mod drive;
pub mod export;
pub mod import;
pub mod judge;
pub mod measure;
pub mod model;
pub mod sweep;

pub mod bounded;
pub mod files;
pub mod redact;
pub mod stats;
pub mod stop;
pub mod term;

pub use report;

/// A usage error: a bad flag value, or an output that holds data goodput will not
/// overwrite without being asked. The binary exits 2 for it, as for a bad profile.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);
