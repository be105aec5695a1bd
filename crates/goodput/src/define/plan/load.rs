//! `[load]`: the command-line overrides applied, then every value checked.

use std::time::Duration;

use crate::define::profile::{LoadMode, LoadSpec, Overrides, ProfileError, TrialsSpec};

use super::check::Checker;

/// Defaults of `trials = "auto"`.
pub const AUTO_MIN_TRIALS: u32 = 2;
/// Slowest request rate (requests per second, and a trace's slowest speedup): one
/// request in about 17 minutes. Slower ones wait longer than any run is watched,
/// and 1e-300 would put the first arrival past the end of time.
pub const MIN_RATE: f64 = 1e-3;
/// Fastest request rate, requests per second (and a trace's fastest speedup).
pub const MAX_RATE: f64 = 1_000_000.0;
/// Most trials at a point with `trials = "auto"`, by default.
pub const AUTO_MAX_TRIALS: u32 = 10;
/// Relative half-width of the key metrics' 95% interval that is narrow enough, by
/// default (±2%, `compare`'s smallest practical effect).
pub const AUTO_WIDTH: f64 = 0.02;

/// The trial budget of a point and when it is settled (the rule itself is the
/// search's: `search::trials`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrialRule {
    /// Trials every point gets.
    pub min: u32,
    /// Most trials at one point.
    pub max: u32,
    /// Relative half-width of the key metrics' interval that stops the point
    /// (`None`: only the judgement and the budget stop it).
    pub width: Option<f64>,
}

/// The checked load values that the plan holds in another form than written.
pub(super) struct CheckedLoad {
    pub points: Vec<f64>,
    pub request_timeout: Duration,
    pub stall_timeout: Option<Duration>,
    pub trial_timeout: Option<Duration>,
    /// Trials every point gets (`trials = N`, or `min_trials` with `auto`).
    pub trials: u32,
    /// `trials = "auto"`: the rule that adds trials to a point.
    pub adaptive: Option<TrialRule>,
}

/// Requests per trial: the profile's (required), or in trace mode the trace's
/// (capped by the profile's when given). A trace workload needs trace mode and
/// trace mode a trace.
pub(super) fn requests_per_trial(
    check: &Checker,
    load: &LoadSpec,
    workload: &super::Workload,
    ov: &Overrides,
) -> Result<u32, ProfileError> {
    let trace = match workload {
        super::Workload::Trace(t) => Some(t.requests.len() as u32),
        _ => None,
    };
    match (load.mode, trace) {
        (LoadMode::Trace, Some(_)) if ov.search.is_some() => Err(check.bad(
            "load.mode",
            "a capacity search needs concurrency or rate mode; a trace sets its own arrivals (sweep speedups with `points`)".into(),
        )),
        (LoadMode::Trace, Some(n)) => Ok(match load.requests_per_trial {
            0 => n,
            r => r.min(n),
        }),
        (LoadMode::Trace, None) => Err(check.bad(
            "load.mode",
            "\"trace\" replays a trace: it needs [workload] kind = \"trace\"".into(),
        )),
        (_, Some(_)) => Err(check.bad(
            "workload.kind",
            "a trace is replayed at its own times: set [load] mode = \"trace\" (points = speedups)".into(),
        )),
        (_, None) if load.requests_per_trial == 0 => Err(check.bad(
            "load.requests_per_trial",
            "is required (measured requests per trial, 1..=10000000)".into(),
        )),
        (_, None) => Ok(load.requests_per_trial),
    }
}

/// Every `[load]` value checked; a search chooses its own load levels, so the
/// profile's are not used (`points` empty).
pub(super) fn check_load(
    check: &Checker,
    load: &LoadSpec,
    search: bool,
) -> Result<CheckedLoad, ProfileError> {
    let points = if search {
        Vec::new()
    } else {
        check_points(check, load)?
    };
    check.count(
        "load.requests_per_trial",
        load.requests_per_trial,
        1..=10_000_000,
    )?;
    let (trials, adaptive) = check_trials(check, load)?;
    check.count("load.warmup_requests", load.warmup_requests, 0..=1_000_000)?;
    let optional = |field: &str, v: Option<f64>| v.map(|v| check.seconds(field, v)).transpose();
    let request_timeout = check.seconds("load.request_timeout_s", load.request_timeout_s)?;
    let stall_timeout = optional("load.stall_timeout_s", load.stall_timeout_s)?;
    let trial_timeout = optional("load.trial_timeout_s", load.trial_timeout_s)?;
    if !(load.burstiness.is_finite() && load.burstiness > 0.0 && load.burstiness <= 1000.0) {
        return Err(check.bad(
            "load.burstiness",
            format!("{} must be in (0, 1000] (1.0 = Poisson)", load.burstiness),
        ));
    }
    if let Some(c) = load.max_concurrency {
        check.count("load.max_concurrency", c, 1..=100_000)?;
    }
    Ok(CheckedLoad {
        points,
        request_timeout,
        stall_timeout,
        trial_timeout,
        trials,
        adaptive,
    })
}

/// `trials`: a count, or `auto` with its budget and width (keys refused with a
/// count, where they would be silently ignored).
fn check_trials(
    check: &Checker,
    load: &LoadSpec,
) -> Result<(u32, Option<TrialRule>), ProfileError> {
    match load.trials {
        TrialsSpec::Count(n) => {
            let given = [
                ("load.min_trials", load.min_trials.is_some()),
                ("load.max_trials", load.max_trials.is_some()),
                ("load.trials_width", load.trials_width.is_some()),
            ];
            if let Some((key, _)) = given.iter().find(|(_, set)| *set) {
                return Err(check.bad(
                    key,
                    format!("applies to `trials = \"auto\"` only (trials is {n})"),
                ));
            }
            Ok((check.count("load.trials", n, 1..=1000)?, None))
        }
        TrialsSpec::Auto => {
            let min = check.count(
                "load.min_trials",
                load.min_trials.unwrap_or(AUTO_MIN_TRIALS),
                1..=1000,
            )?;
            let max = check.count(
                "load.max_trials",
                load.max_trials.unwrap_or(AUTO_MAX_TRIALS.max(min)),
                u64::from(min)..=1000,
            )?;
            let width = check.number(
                "load.trials_width",
                load.trials_width.unwrap_or(AUTO_WIDTH),
                1e-9..=10.0,
                "a share of the mean",
            )?;
            Ok((
                min,
                Some(TrialRule {
                    min,
                    max,
                    width: Some(width),
                }),
            ))
        }
    }
}

impl LoadSpec {
    pub(super) fn with_overrides(mut self, ov: &Overrides) -> Self {
        if let Some(points) = &ov.concurrency {
            self.mode = LoadMode::Concurrency;
            self.points = points.clone();
        }
        if let Some(points) = &ov.rate {
            self.mode = LoadMode::Rate;
            self.points = points.clone();
        }
        if let Some(t) = ov.trials {
            self.trials = t;
        }
        if let Some(r) = ov.requests {
            self.requests_per_trial = r;
        }
        if let Some(s) = ov.seed {
            self.seed = s;
        }
        if let Some(m) = ov.mode {
            self.mode = m;
        }
        if let Some(i) = ov.interleave {
            self.interleave = Some(i);
        }
        self
    }
}

/// The load levels, checked, sorted and without duplicates.
fn check_points(check: &Checker, load: &LoadSpec) -> Result<Vec<f64>, ProfileError> {
    if load.points.is_empty() {
        return Err(check.bad("load.points", "needs at least one load level".into()));
    }
    for &x in &load.points {
        let ok = x.is_finite()
            && x > 0.0
            && match load.mode {
                LoadMode::Concurrency => x.fract() == 0.0 && x <= 100_000.0,
                LoadMode::Rate | LoadMode::Trace => (MIN_RATE..=MAX_RATE).contains(&x),
            };
        if !ok {
            let what = match load.mode {
                LoadMode::Concurrency => "a whole number of requests in flight, 1..=100000".into(),
                LoadMode::Rate => format!("a request rate per second in [{MIN_RATE}, {MAX_RATE}]"),
                LoadMode::Trace => format!("a speedup of the trace in [{MIN_RATE}, {MAX_RATE}]"),
            };
            return Err(check.bad("load.points", format!("{x} is not {what}")));
        }
    }
    let mut points = load.points.clone();
    points.sort_by(f64::total_cmp);
    points.dedup();
    Ok(points)
}
