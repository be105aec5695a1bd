//! goodput addition: the answer of `goodput tune` (`tune.json`), which flags of one
//! engine serve the most load under the SLO. Every measured capacity in it comes
//! from an ordinary capacity-search report (`reports`, beside the file); a
//! prediction never stands in for a measurement.

use serde::{Deserialize, Serialize};

use super::Slo;
use super::{CapacityInterval, LoadMode};

/// The value of [`Tune::tune`]: what marks a file as a tune answer.
pub const TUNE_FORMAT: u32 = 1;

/// `tune.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tune {
    /// The format's version ([`TUNE_FORMAT`]); its presence marks the file.
    pub tune: u32,
    /// The profile's name.
    pub profile: String,
    /// The `[engines.*]` entry whose command line varied.
    pub engine: String,
    /// What was optimised ([`TuneObjective`]).
    pub objective: TuneObjective,
    /// How candidates were chosen ([`TuneScheme`]).
    pub scheme: TuneScheme,
    /// What load the capacities count.
    pub mode: LoadMode,
    /// The SLO every capacity is judged against.
    pub slo: Slo,
    /// The best measured candidate; `null` when no measured candidate meets the
    /// SLO at any load.
    pub best: Option<TuneBest>,
    /// The second-best measured candidate and how it compares with the best.
    pub runner_up: Option<TuneRunnerUp>,
    /// Every candidate of the space, in the space's order.
    pub candidates: Vec<TuneCandidate>,
    /// Real trials run by this tune over every search (a resumed tune counts only
    /// the trials it ran itself).
    pub trials_run: u32,
    /// Trials of an earlier, interrupted tune's searches that a resumed tune kept
    /// instead of running them again.
    #[serde(default)]
    pub trials_reused: u32,
    /// What a full search of every candidate would have cost, in trials: the
    /// measured searches' trials, plus for each candidate not measured the trials
    /// the same search took on the fitted model (or, without one, the measured
    /// searches' mean). An estimate, said as one.
    pub full_search_trials_estimate: u32,
    /// The candidates' search reports, relative to the tune file.
    pub reports_dir: String,
    /// The fitted engine model's file (relative to the tune file), when one was fitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What the reader should know: which scheme ran and why, what the model could
    /// not tell apart, what was left unmeasured.
    pub notes: Vec<String>,
}

/// What `goodput tune` optimised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TuneObjective {
    /// The most load under the SLO.
    Capacity,
    /// The least dollars per million good tokens at the load that must be served.
    Cost,
    /// A word this goodput does not know (a newer file), kept as written.
    #[serde(untagged)]
    Other(String),
}

/// One candidate's cost at the load that must be served (`objective = "cost"`):
/// a point run of the profile's trials at that load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneCost {
    /// The load it was measured at (`[tune] load`).
    pub load: f64,
    /// The price of the candidate's GPUs, US dollars an hour (the engine's
    /// `usd_per_hour`, or `usd_per_hour_per_gpu` times its GPUs).
    pub usd_per_hour: f64,
    /// Whether it meets the SLO at that load (the point's judgement).
    pub meets: bool,
    /// US dollars per million good tokens at that load: the median over trials
    /// with the trials' range (`min`-`max`), the interval the judgement uses;
    /// `null` when no good token was served.
    pub usd_per_million_good_tokens: Option<crate::Stat>,
}

/// How `goodput tune` chose what to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TuneScheme {
    /// A few candidates measured, the engine model fitted and every candidate
    /// predicted, the most promising measured.
    ModelGuided,
    /// Every flag is not one the engine model speaks: short searches of every
    /// candidate (within the budget), the better half kept, until full searches
    /// of the last two.
    SuccessiveHalving,
    /// `objective = "cost"`: the candidates measured at the load that must be
    /// served, cheapest price first, within the budget.
    PriceOrder,
}

/// One capacity with its interval, as a search states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneCapacity {
    /// The largest load that meets the SLO (`null`: even the lowest load fails).
    pub max_load: Option<f64>,
    /// Its interval (a measured search's 95% bootstrap interval; a prediction's
    /// loads from where every model draw meets the SLO to where any does).
    pub interval: Option<CapacityInterval>,
    /// What bounds it (the search's `limited_by`).
    pub limited_by: String,
    /// Trials the search took (on the model, for a prediction).
    pub trials: u32,
}

/// One candidate of the space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneCandidate {
    /// Its flags, `{"--max-num-seqs": 8, "--async-scheduling": true}`.
    pub flags: serde_json::Map<String, serde_json::Value>,
    /// The words appended to the engine's command line.
    pub args: Vec<String>,
    /// The engine model's prediction, when one was made.
    pub predicted: Option<TuneCapacity>,
    /// The measured capacity (the full search's), when measured.
    pub measured: Option<TuneCapacity>,
    /// A short search's capacity (successive halving's first rounds), when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screened: Option<TuneCapacity>,
    /// Its cost at the load that must be served (`objective = "cost"`), when
    /// measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<TuneCost>,
    /// Why it has no measurement: it failed to start or to serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Its search report, relative to the tune file, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneBest {
    /// Its flags.
    pub flags: serde_json::Map<String, serde_json::Value>,
    /// The words appended to the engine's command line.
    pub args: Vec<String>,
    /// Its measured capacity, with the interval (with `objective = "cost"`: its
    /// search was not run, `max_load` is null).
    pub capacity: TuneCapacity,
    /// Its cost at the load that must be served (`objective = "cost"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<TuneCost>,
    /// The full launch command (secrets redacted).
    pub command: Vec<String>,
}

/// The runner-up and the judgement between it and the best.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneRunnerUp {
    /// Its flags.
    pub flags: serde_json::Map<String, serde_json::Value>,
    /// The words appended to the engine's command line.
    pub args: Vec<String>,
    /// Its measured capacity, with the interval.
    pub capacity: TuneCapacity,
    /// Its cost at the load that must be served (`objective = "cost"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<TuneCost>,
    /// `best` (the capacity intervals, or the costs' ranges, are apart) or
    /// `within_noise` (they overlap).
    pub judgement: TuneJudgement,
    /// The judgement in words, and what would separate them when it is noise.
    pub note: String,
}

/// The best against the runner-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TuneJudgement {
    /// The best's capacity interval lies wholly above the runner-up's.
    Best,
    /// The intervals overlap: the measurements cannot order them.
    WithinNoise,
}
