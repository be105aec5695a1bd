//! `[search]` and the search flags, checked against the load mode.

use crate::define::profile::{LoadMode, LoadSpec, Objective, ProfileError, SearchSpec};

use super::check::Checker;
use super::load::TrialRule;

/// The search's bounds, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    /// What the load counts.
    pub mode: LoadMode,
    /// Lowest load probed.
    pub min: f64,
    /// Highest load probed.
    pub max: f64,
    /// Rate mode: relative resolution of the answer.
    pub resolution: f64,
    /// Attainment a point needs (also the level the confidence interval is judged
    /// against).
    pub target: f64,
    /// Most load levels probed.
    pub max_probes: u32,
    /// Trials each probe gets first.
    pub base_trials: u32,
    /// Most trials at one probe.
    pub max_trials_per_probe: u32,
    /// `trials = "auto"`: the relative width of the key metrics' interval that
    /// settles a deciding probe ([`TrialRule::width`]); `None` otherwise.
    pub width: Option<f64>,
    /// Growth factor while bracketing (> 1).
    pub growth: f64,
    /// What the search looks for.
    pub objective: Objective,
}

/// The `[search]` table (with its flags) checked against the load mode.
pub(super) fn check_search(
    check: &Checker,
    table: &SearchSpec,
    flags: &SearchSpec,
    load: &LoadSpec,
    trials: (u32, Option<TrialRule>),
    profile_mode: LoadMode,
    slo: &report::Slo,
) -> Result<SearchConfig, ProfileError> {
    let (base_trials, adaptive) = trials;
    let s = table.overridden_by(flags);
    let mode = load.mode;
    check_bounds_unit(check, table, flags, mode, profile_mode)?;
    let (min, max) = bounds(check, &s, mode)?;
    let resolution = check.number(
        "search.resolution",
        s.resolution.unwrap_or(0.05),
        1e-6..=1.0,
        "a share of the load",
    )?;
    let target = match s.attainment {
        Some(a) => check.number("search.attainment", a, 1e-6..=1.0, "a share of requests")?,
        None => slo.attainment.unwrap_or(report::slo::DEFAULT_ATTAINMENT),
    };
    let max_probes = check.count("search.max_probes", s.max_probes.unwrap_or(16), 1..=1000)?;
    let max_trials_per_probe = check.count(
        "search.max_trials_per_probe",
        s.max_trials_per_probe
            .unwrap_or(adaptive.map_or(base_trials + 2, |r| r.max)),
        u64::from(base_trials)..=1000,
    )?;
    let growth = check.number(
        "search.growth",
        s.growth.unwrap_or(2.0),
        1.01..=100.0,
        "a factor",
    )?;
    Ok(SearchConfig {
        mode,
        min,
        max,
        resolution,
        target,
        max_probes,
        base_trials,
        max_trials_per_probe,
        width: adaptive.and_then(|r| r.width),
        growth,
        objective: s.objective.unwrap_or_default(),
    })
}

/// Bounds written for the profile's own mode are refused when a flag runs the
/// search in the other mode: they would be read in the wrong unit.
fn check_bounds_unit(
    check: &Checker,
    table: &SearchSpec,
    flags: &SearchSpec,
    mode: LoadMode,
    profile_mode: LoadMode,
) -> Result<(), ProfileError> {
    if mode == profile_mode {
        return Ok(());
    }
    for (field, written, flag) in [
        ("search.min", table.min.is_some(), flags.min.is_some()),
        ("search.max", table.max.is_some(), flags.max.is_some()),
    ] {
        if written && !flag {
            return Err(check.bad(
                field,
                format!(
                    "is written for [load] mode = \"{}\", but the search runs in {} mode: give --min and --max in its unit",
                    mode_name(profile_mode),
                    mode_name(mode)
                ),
            ));
        }
    }
    Ok(())
}

/// `search.min` and `search.max` in the mode's unit, whole in concurrency mode.
fn bounds(check: &Checker, s: &SearchSpec, mode: LoadMode) -> Result<(f64, f64), ProfileError> {
    let (lo, hi, unit, dmin, dmax): (f64, f64, &str, f64, f64) = match mode {
        LoadMode::Concurrency => (1.0, 100_000.0, "requests in flight", 1.0, 64.0),
        LoadMode::Rate | LoadMode::Trace => (
            super::load::MIN_RATE,
            super::load::MAX_RATE,
            "requests per second",
            0.5,
            64.0,
        ),
    };
    let min = check.number("search.min", s.min.unwrap_or(dmin), lo..=hi, unit)?;
    let max = check.number("search.max", s.max.unwrap_or(dmax.max(min)), lo..=hi, unit)?;
    if mode == LoadMode::Concurrency {
        for (field, v) in [("search.min", min), ("search.max", max)] {
            if v.fract() != 0.0 {
                return Err(check.bad(
                    field,
                    format!("{v} is not a whole number of requests in flight"),
                ));
            }
        }
    }
    if max < min {
        return Err(check.bad(
            "search.max",
            format!("{max} is below search.min ({min}): the search needs min <= max"),
        ));
    }
    Ok((min, max))
}

fn mode_name(m: LoadMode) -> &'static str {
    m.name()
}
