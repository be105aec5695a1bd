//! Applying overrides and checking every value of a profile: [`Checker`] names a bad
//! value by key and line (or the flag that set it).

use std::time::Duration;

use indexmap::IndexMap;

use crate::profile::{
    EngineSpec, LoadMode, Overrides, Profile, ProfileError, SloSpec, TelemetrySpec, WorkloadKind,
};

use super::engines::{expand_engine, validate_engine};
use super::jsonl::read_jsonl;
use super::{Plan, Workload};

/// Names a bad value: the field (or the flag that set it) and the profile line.
struct Checker<'a> {
    origin: &'a str,
    source: Option<&'a str>,
    /// Fields set by a flag, and the flag: their errors name the flag, not a line.
    flags: Vec<(&'static str, &'static str)>,
}

impl Checker<'_> {
    fn bad(&self, field: &str, message: String) -> ProfileError {
        let flag = self
            .flags
            .iter()
            .find(|(f, _)| field == *f || field.starts_with(&format!("{f}.")))
            .map(|(_, flag)| *flag);
        ProfileError::Invalid {
            path: self.origin.to_string(),
            field: flag.map_or_else(|| field.to_string(), |f| format!("{f} ({field})")),
            line: match flag {
                Some(_) => None,
                None => self.source.and_then(|s| crate::profile::line_of(s, field)),
            },
            message,
        }
    }

    /// A finite number in `range`.
    fn number(
        &self,
        field: &str,
        v: f64,
        range: std::ops::RangeInclusive<f64>,
        unit: &str,
    ) -> Result<f64, ProfileError> {
        if v.is_finite() && range.contains(&v) {
            Ok(v)
        } else {
            Err(self.bad(
                field,
                format!(
                    "{v} is out of range: give a number of {unit} in {}..={}",
                    range.start(),
                    range.end()
                ),
            ))
        }
    }

    /// A whole number in `range`.
    fn count<T: Into<u64> + Copy + std::fmt::Display>(
        &self,
        field: &str,
        v: T,
        range: std::ops::RangeInclusive<u64>,
    ) -> Result<T, ProfileError> {
        if range.contains(&v.into()) {
            Ok(v)
        } else {
            Err(self.bad(
                field,
                format!("{v} is out of range {}..={}", range.start(), range.end()),
            ))
        }
    }

    /// A positive number of seconds, at most about four months (so that every
    /// `Duration` built from it, and sums of them, stay far from overflow).
    fn seconds(&self, field: &str, v: f64) -> Result<Duration, ProfileError> {
        if v.is_finite() && v > 0.0 && v <= MAX_SECONDS {
            Ok(Duration::from_secs_f64(v))
        } else {
            Err(self.bad(
                field,
                format!("{v} must be a positive number of seconds, at most {MAX_SECONDS}"),
            ))
        }
    }
}

/// Longest duration any profile field may give, seconds (10^7, about 4 months).
pub(super) const MAX_SECONDS: f64 = 1e7;

impl Profile {
    /// Applies overrides and validates: the result has no unchecked value. Every
    /// numeric field is checked to be finite and in range here, with an error
    /// naming the key and its line (or the flag that set it).
    pub fn into_plan(self, origin: &str, ov: &Overrides) -> Result<Plan, ProfileError> {
        let check = Checker {
            origin,
            source: self.source.as_deref(),
            flags: override_flags(ov),
        };
        let load = self.load.clone().with_overrides(ov);
        // `--slo` replaces the bounds; the attainment target and form stay the profile's.
        let slo = match ov.slo.clone() {
            Some(mut s) => {
                s.attainment = s.attainment.or(self.slo.attainment);
                s.percentile = s.percentile.or(self.slo.percentile);
                s
            }
            None => self.slo.clone(),
        };
        let slo = check_slo(&check, slo)?;
        // A search chooses its own load levels: the profile's are not used.
        let points = if ov.search.is_some() {
            Vec::new()
        } else {
            check_points(&check, &load)?
        };
        check.count(
            "load.requests_per_trial",
            load.requests_per_trial,
            1..=10_000_000,
        )?;
        check.count("load.trials", load.trials, 1..=1000)?;
        check.count("load.warmup_requests", load.warmup_requests, 0..=1_000_000)?;
        let request_timeout = check.seconds("load.request_timeout_s", load.request_timeout_s)?;
        let stall_timeout = load
            .stall_timeout_s
            .map(|v| check.seconds("load.stall_timeout_s", v))
            .transpose()?;
        let trial_timeout = load
            .trial_timeout_s
            .map(|v| check.seconds("load.trial_timeout_s", v))
            .transpose()?;
        if !(load.burstiness.is_finite() && load.burstiness > 0.0 && load.burstiness <= 1000.0) {
            return Err(check.bad(
                "load.burstiness",
                format!("{} must be in (0, 1000] (1.0 = Poisson)", load.burstiness),
            ));
        }
        if let Some(c) = load.max_concurrency {
            check.count("load.max_concurrency", c, 1..=100_000)?;
        }
        let quantiles = self
            .quantiles
            .clone()
            .unwrap_or_else(report::default_quantiles);
        if quantiles.is_empty() || quantiles.iter().any(|q| !(0.0..=1.0).contains(q)) {
            return Err(check.bad("quantiles", "every quantile must be in 0.0..=1.0".into()));
        }
        let workload_description = serde_json::to_value(&self.workload).unwrap_or_default();
        let workload = check_workload(&check, &self.workload)?;
        check_telemetry(&check, &self.telemetry)?;
        check_server_metrics(&check, &self.server_metrics)?;
        let engines = select_engines(&check, self.engines, &ov.engines)?;
        let search = match &ov.search {
            None => None,
            Some(flags) => Some(check_search(
                &check,
                &self.search.clone().unwrap_or_default(),
                flags,
                &load,
                self.load.mode,
                &slo,
            )?),
        };
        Ok(Plan {
            name: self.name,
            slo,
            quantiles,
            mode: load.mode,
            points,
            requests_per_trial: load.requests_per_trial,
            trials: load.trials,
            warmup_requests: load.warmup_requests,
            request_timeout,
            stall_timeout,
            trial_timeout,
            seed: load.seed,
            burstiness: load.burstiness,
            max_concurrency: load.max_concurrency,
            workload,
            telemetry: self.telemetry,
            engines,
            workload_description,
            search,
            server_metrics: self.server_metrics,
        })
    }
}

/// Which fields the command line set, and by which flag.
fn override_flags(ov: &Overrides) -> Vec<(&'static str, &'static str)> {
    let mut flags = Vec::new();
    if ov.concurrency.is_some() {
        flags.push(("load.points", "--concurrency"));
    }
    if ov.rate.is_some() {
        flags.push(("load.points", "--rate"));
    }
    if ov.trials.is_some() {
        flags.push(("load.trials", "--trials"));
    }
    if ov.requests.is_some() {
        flags.push(("load.requests_per_trial", "--requests"));
    }
    if ov.slo.is_some() {
        flags.push(("slo", "--slo"));
    }
    if !ov.engines.is_empty() {
        flags.push(("engines", "--engine"));
    }
    if let Some(s) = &ov.search {
        for (set, field, flag) in [
            (s.min.is_some(), "search.min", "--min"),
            (s.max.is_some(), "search.max", "--max"),
            (s.resolution.is_some(), "search.resolution", "--resolution"),
            (s.attainment.is_some(), "search.attainment", "--attainment"),
            (s.max_probes.is_some(), "search.max_probes", "--max-probes"),
            (
                s.max_trials_per_probe.is_some(),
                "search.max_trials_per_probe",
                "--max-trials-per-probe",
            ),
        ] {
            if set {
                flags.push((field, flag));
            }
        }
    }
    if ov.mode.is_some() {
        flags.push(("load.mode", "--mode"));
    }
    flags
}

/// The `[search]` table (with its flags) checked against the load mode.
fn check_search(
    check: &Checker,
    table: &crate::profile::SearchSpec,
    flags: &crate::profile::SearchSpec,
    load: &crate::profile::LoadSpec,
    profile_mode: LoadMode,
    slo: &SloSpec,
) -> Result<crate::search::SearchConfig, ProfileError> {
    let s = table.overridden_by(flags);
    let mode = load.mode;
    if mode != profile_mode {
        // Bounds written for the other mode would be read in the wrong unit.
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
    }
    let (lo, hi, unit, dmin, dmax): (f64, f64, &str, f64, f64) = match mode {
        LoadMode::Concurrency => (1.0, 100_000.0, "requests in flight", 1.0, 64.0),
        LoadMode::Rate => (1e-6, 1_000_000.0, "requests per second", 0.5, 64.0),
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
    let resolution = check.number(
        "search.resolution",
        s.resolution.unwrap_or(0.05),
        1e-6..=1.0,
        "a share of the load",
    )?;
    let target = match s.attainment {
        Some(a) => check.number("search.attainment", a, 1e-6..=1.0, "a share of requests")?,
        None => slo.attainment.unwrap_or(crate::metrics::DEFAULT_ATTAINMENT),
    };
    let max_probes = check.count("search.max_probes", s.max_probes.unwrap_or(16), 1..=1000)?;
    let max_trials_per_probe = check.count(
        "search.max_trials_per_probe",
        s.max_trials_per_probe.unwrap_or(load.trials + 2),
        load.trials as u64..=1000,
    )?;
    let growth = check.number(
        "search.growth",
        s.growth.unwrap_or(2.0),
        1.01..=100.0,
        "a factor",
    )?;
    Ok(crate::search::SearchConfig {
        mode,
        min,
        max,
        resolution,
        target,
        max_probes,
        base_trials: load.trials,
        max_trials_per_probe,
        growth,
    })
}

fn mode_name(m: LoadMode) -> &'static str {
    match m {
        LoadMode::Concurrency => "concurrency",
        LoadMode::Rate => "rate",
    }
}

impl crate::profile::LoadSpec {
    fn with_overrides(mut self, ov: &Overrides) -> Self {
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
        self
    }
}

fn check_slo(check: &Checker, slo: SloSpec) -> Result<SloSpec, ProfileError> {
    for (field, v) in [
        ("slo.ttft_ms", slo.ttft_ms),
        ("slo.tpot_ms", slo.tpot_ms),
        ("slo.e2el_ms", slo.e2el_ms),
    ] {
        if let Some(v) = v {
            if !v.is_finite() || v <= 0.0 {
                return Err(check.bad(field, format!("{v} must be a positive number of ms")));
            }
        }
    }
    if let Some(a) = slo.attainment {
        check.number(
            "slo.attainment",
            a,
            1e-6..=1.0,
            "a share of requests (0.9 = 90%)",
        )?;
    }
    if let Some(p) = slo.percentile {
        check.number("slo.percentile", p, 1e-6..=100.0, "percent (90 = p90)")?;
    }
    if slo.ttft_ms.is_none() && slo.tpot_ms.is_none() && slo.e2el_ms.is_none() {
        return Err(check.bad(
            "slo",
            "needs at least one bound (ttft_ms, tpot_ms or e2el_ms)".into(),
        ));
    }
    Ok(slo)
}

/// The load levels, checked, sorted and without duplicates.
fn check_points(
    check: &Checker,
    load: &crate::profile::LoadSpec,
) -> Result<Vec<f64>, ProfileError> {
    if load.points.is_empty() {
        return Err(check.bad("load.points", "needs at least one load level".into()));
    }
    for &x in &load.points {
        let ok = x.is_finite()
            && x > 0.0
            && match load.mode {
                LoadMode::Concurrency => x.fract() == 0.0 && x <= 100_000.0,
                LoadMode::Rate => x <= 1_000_000.0,
            };
        if !ok {
            let what = match load.mode {
                LoadMode::Concurrency => "a whole number of requests in flight, 1..=100000",
                LoadMode::Rate => "a request rate per second in (0, 1000000]",
            };
            return Err(check.bad("load.points", format!("{x} is not {what}")));
        }
    }
    let mut points = load.points.clone();
    points.sort_by(f64::total_cmp);
    points.dedup();
    Ok(points)
}

fn check_workload(
    check: &Checker,
    w: &crate::profile::WorkloadSpec,
) -> Result<Workload, ProfileError> {
    if !(0.0..1.0).contains(&w.range_ratio) {
        return Err(check.bad(
            "workload.range_ratio",
            format!("{} is out of range 0.0..1.0", w.range_ratio),
        ));
    }
    if let Some(o) = w.output_tokens {
        check.count("workload.output_tokens", o, 1..=1_000_000)?;
    }
    match w.kind {
        WorkloadKind::Synthetic => {
            let required = |field: &str, v: Option<u32>| {
                v.ok_or_else(|| {
                    check.bad(
                        &format!("workload.{field}"),
                        "is required for a synthetic workload".into(),
                    )
                })
            };
            let input_tokens = required("input_tokens", w.input_tokens)?;
            let output_tokens = required("output_tokens", w.output_tokens)?;
            check.count("workload.input_tokens", input_tokens, 1..=1_000_000)?;
            Ok(Workload::Synthetic {
                input_tokens,
                output_tokens,
                range_ratio: w.range_ratio,
                text: w.text,
                calibrate: w.calibrate,
            })
        }
        WorkloadKind::Jsonl => {
            let path = w.path.clone().ok_or_else(|| {
                check.bad("workload.path", "is required for a jsonl workload".into())
            })?;
            let prompts =
                read_jsonl(&path, w.output_tokens).map_err(|m| check.bad("workload.path", m))?;
            Ok(Workload::Jsonl { path, prompts })
        }
    }
}

fn check_telemetry(check: &Checker, t: &TelemetrySpec) -> Result<(), ProfileError> {
    check.count("telemetry.interval_ms", t.interval_ms, 1..=3_600_000)?;
    if let Some(c) = &t.cooldown {
        if let Some(v) = c.max_temp_c {
            check.number("telemetry.cooldown.max_temp_c", v, 0.0..=150.0, "°C")?;
        }
        if let Some(v) = c.min_sm_mhz {
            check.number("telemetry.cooldown.min_sm_mhz", v, 0.0..=100_000.0, "MHz")?;
        }
        check.number(
            "telemetry.cooldown.max_wait_s",
            c.max_wait_s,
            0.0..=MAX_SECONDS,
            "seconds",
        )?;
    }
    Ok(())
}

/// The engines to run (all, or those named by `--engine`), each expanded and checked.
fn select_engines(
    check: &Checker,
    mut engines: IndexMap<String, EngineSpec>,
    only: &[String],
) -> Result<IndexMap<String, EngineSpec>, ProfileError> {
    for name in only {
        if !engines.contains_key(name) {
            let known: Vec<&str> = engines.keys().map(String::as_str).collect();
            return Err(check.bad(
                "engines",
                format!(
                    "no engine named `{name}` (the profile has: {})",
                    known.join(", ")
                ),
            ));
        }
    }
    if !only.is_empty() {
        engines.retain(|k, _| only.contains(k));
    }
    if engines.is_empty() {
        return Err(check.bad("engines", "needs at least one engine".into()));
    }
    for (name, e) in engines.iter_mut() {
        let bad = |(f, m): (&str, String)| check.bad(&format!("engines.{name}.{f}"), m);
        expand_engine(e).map_err(bad)?;
        validate_engine(name, e).map_err(bad)?;
    }
    Ok(engines)
}

/// Replaces `${NAME}` with the environment variable NAME in every string of an
/// engine that names a path, URL or argument (not in `api_key_env`, which names a
/// variable itself).
/// `[server_metrics]`: the interval and bounds, each in range.
fn check_server_metrics(
    check: &Checker,
    s: &crate::server_metrics::ServerMetricsSpec,
) -> Result<(), ProfileError> {
    check.count("server_metrics.interval_ms", s.interval_ms, 10..=3_600_000)?;
    check.count("server_metrics.max_samples", s.max_samples, 2..=100_000)?;
    check.count("server_metrics.max_bytes", s.max_bytes, 1024..=1 << 30)?;
    Ok(())
}
