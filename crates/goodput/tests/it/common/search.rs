//! The search tests' set-up (`tests/it/runs/search.rs`, `tests/it/runs/fit_predict.rs`): a
//! simulator of 3 slots, whose knee is known exactly, and a small fast profile
//! around it.

use std::path::{Path, PathBuf};

/// A small fast engine with 3 slots: up to x=3 every request streams at once
/// (TTFT ~ one step, ~12 ms); from x=4 on, a quarter or more of the requests wait
/// for a slot (~10 steps), so fewer than 90% meet TTFT <= 60 ms.
pub const THREE_SLOTS: &str = "max_num_seqs = 3\nstep_fixed_ms = 12.0\n";

/// Writes [`THREE_SLOTS`] to `name` in `dir`; its path.
pub fn write_three_slots(dir: &Path, name: &str) -> PathBuf {
    let cfg = dir.join(name);
    std::fs::write(&cfg, THREE_SLOTS).unwrap_or_else(|e| panic!("write {}: {e}", cfg.display()));
    cfg
}

/// `[engines.NAME]` tables of simulators, one per name, each run with the
/// simulator configuration `cfg`.
pub fn sim_engines(names: &[&str], cfg: &Path) -> String {
    names
        .iter()
        .map(|n| {
            format!(
                "[engines.{n}]\nkind = \"sim\"\nargs = [\"--config\", \"{}\"]\n",
                cfg.display()
            )
        })
        .collect()
}

/// The profile `name` the search tests run: TTFT <= 60 ms, 12 requests a trial,
/// one trial, no warm-up, prompts of 16 tokens and outputs of 10, no telemetry;
/// `points` is the TOML array of `[load] points`, `search` a `[search]` table (or
/// nothing), `engines` the engine tables.
pub fn profile(name: &str, points: &str, search: &str, engines: &str) -> String {
    format!(
        r#"
name = "{name}"
[slo]
ttft_ms = 60
[load]
points = {points}
requests_per_trial = 12
trials = 1
warmup_requests = 0
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 10
calibrate = false
[telemetry]
source = "none"
{search}
{engines}"#
    )
}
