//! The goodput report: the file `goodput run` writes and every renderer reads.
//!
//! The shape is that of the reference report (`shared/reference/l4-gpu1-vllm.json`):
//! every field it has keeps its name, type and position. goodput adds facts only in
//! *additive* fields, which are omitted when empty, so a reader of the reference
//! format reads ours, and we read theirs. Unknown fields are kept (`extra`) and
//! written back, so reading and rewriting a report preserves it.
//!
//! This crate knows nothing about how the numbers were measured.
//!
//! # Layout
//! - [`types`]: the report, field by field.
//! - [`metric`]: every metric, one entry each: those an SLO bounds, those
//!   `compare` tests.
//! - [`stats`]: `{median,min,max,n}` summaries, the two quantile rules, and the
//!   tests a renderer repeats on a report (Welch, Holm).
//! - [`slo`]: a point's SLO judgement as the report holds it.
//! - [`outlier`]: the outlier rule.
//! - [`compare`]: a comparison's rows, sections and conclusion.
//! - [`server`]: the engine's own metrics, and their cross-check with the client's.
//! - [`io`]: reading and atomic writing.
//! - [`shard`]: a shard's slice of a plan, and a merged report's parts.

pub mod compare;
pub mod io;
pub mod metric;
pub mod outlier;
pub mod server;
pub mod shard;
pub mod slo;
pub mod stats;
pub mod types;

pub use io::{read_report, write_report_atomic, ReportError};
pub use metric::{SloMetric, SLO_METRICS};
pub use server::{ServerCounts, ServerSample, ServerSummary, ServerTrial};
pub use shard::{LoadShardInfo, MergedInfo, MergedShard, ShardInfo};
pub use stats::{quantile_linear, quantile_lower, Stat};
pub use types::*;
