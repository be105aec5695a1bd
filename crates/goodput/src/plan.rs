//! The validated plan: a [`Profile`] with overrides applied and every value checked.

use std::path::PathBuf;
use std::time::Duration;

use indexmap::IndexMap;
use serde::Deserialize;

use crate::profile::{
    EngineKind, EngineSpec, LoadMode, Overrides, Profile, ProfileError, SloSpec, TelemetrySpec,
    TextStyle, WorkloadKind,
};

/// A validated benchmark plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Profile name.
    pub name: String,
    /// The SLO.
    pub slo: SloSpec,
    /// Quantile grid.
    pub quantiles: Vec<f64>,
    /// Closed or open loop.
    pub mode: LoadMode,
    /// Load levels, ascending.
    pub points: Vec<f64>,
    /// Measured requests per trial.
    pub requests_per_trial: u32,
    /// Trials per point.
    pub trials: u32,
    /// Unmeasured requests before each trial.
    pub warmup_requests: u32,
    /// Whole-request timeout.
    pub request_timeout: Duration,
    /// Longest silence inside a stream.
    pub stall_timeout: Option<Duration>,
    /// Longest trial.
    pub trial_timeout: Option<Duration>,
    /// Seed.
    pub seed: u64,
    /// Gamma shape for rate mode.
    pub burstiness: f64,
    /// Rate mode cap on requests in flight.
    pub max_concurrency: Option<u32>,
    /// What to send.
    pub workload: Workload,
    /// GPU telemetry.
    pub telemetry: TelemetrySpec,
    /// Engines in order.
    pub engines: IndexMap<String, EngineSpec>,
    /// The workload section as written, for the report.
    pub workload_description: serde_json::Value,
    /// `goodput search`: the capacity search to run instead of the load levels
    /// (`points` is then empty: the search chooses them).
    pub search: Option<crate::search::SearchConfig>,
    /// The engine's `/metrics`, sampled during every trial.
    pub server_metrics: crate::server_metrics::ServerMetricsSpec,
}

/// The validated workload.
#[derive(Debug, Clone)]
pub enum Workload {
    /// Generated prompts.
    Synthetic {
        /// Prompt tokens (centre of the range).
        input_tokens: u32,
        /// Output tokens (centre of the range).
        output_tokens: u32,
        /// Relative spread of lengths.
        range_ratio: f64,
        /// Text style.
        text: TextStyle,
        /// Use `/tokenize` to hit the length.
        calibrate: bool,
    },
    /// Prompts from a file.
    Jsonl {
        /// The file.
        path: PathBuf,
        /// The prompts.
        prompts: Vec<JsonlPrompt>,
    },
}

/// One line of a JSONL workload.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct JsonlPrompt {
    /// The prompt text.
    pub prompt: String,
    /// Output limit for this prompt.
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

impl Plan {
    /// SHA-256 fingerprints (16 hex digits) of the parts of the plan that decide
    /// what a trial measures: `slo`, `load` (mode, requests, warm-up, timeouts,
    /// seed, burstiness, cap), `workload` (as described, plus every JSONL prompt),
    /// `telemetry`, and `engine.<name>` per engine (its whole spec). Load levels,
    /// the number of trials and which engines run are left out: a resumed run may
    /// add trials, levels or engines without mixing plans.
    pub fn fingerprints(&self) -> IndexMap<String, String> {
        use serde_json::json;
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
        let mut parts: Vec<(String, serde_json::Value)> = vec![
            ("slo".into(), json!(self.slo)),
            (
                "load".into(),
                json!({
                    "mode": self.mode,
                    "requests_per_trial": self.requests_per_trial,
                    "warmup_requests": self.warmup_requests,
                    "request_timeout_s": self.request_timeout.as_secs_f64(),
                    "stall_timeout_s": secs(self.stall_timeout),
                    "trial_timeout_s": secs(self.trial_timeout),
                    "seed": self.seed,
                    "burstiness": self.burstiness,
                    "max_concurrency": self.max_concurrency,
                }),
            ),
            (
                "workload".into(),
                match &self.workload {
                    Workload::Synthetic { .. } => json!({"spec": self.workload_description}),
                    Workload::Jsonl { prompts, .. } => {
                        json!({"spec": self.workload_description, "prompts": prompts})
                    }
                },
            ),
            ("telemetry".into(), json!(self.telemetry)),
        ];
        // A search's report holds probes judged against its target; a run and a
        // search (or searches for different targets) do not resume each other.
        if let Some(s) = &self.search {
            parts.push(("search".into(), json!({"target": s.target})));
        }
        for (name, e) in &self.engines {
            parts.push((format!("engine.{name}"), json!(e)));
        }
        parts
            .into_iter()
            .map(|(k, v)| (k, fingerprint(&v)))
            .collect()
    }
}

/// The first 16 hex digits of the SHA-256 of a value's compact JSON.
fn fingerprint(v: &serde_json::Value) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(v.to_string().as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The parts in which two plans' fingerprints differ (a part present in both with
/// different values); engines present in only one of them are not a difference.
pub fn fingerprint_changes(
    old: &IndexMap<String, String>,
    new: &IndexMap<String, String>,
) -> Vec<String> {
    new.iter()
        .filter(|(k, v)| {
            old.get(*k).is_some_and(|o| o != *v)
                || (!k.starts_with("engine.") && !old.contains_key(*k))
        })
        .map(|(k, _)| k.clone())
        .chain(
            old.keys()
                .filter(|k| *k == "search" && !new.contains_key(*k))
                .cloned(),
        )
        .collect()
}

/// Largest JSONL line accepted, bytes.
const MAX_JSONL_LINE: usize = 16 * 1024 * 1024;

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
const MAX_SECONDS: f64 = 1e7;

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
fn expand_engine(e: &mut EngineSpec) -> Result<(), (&'static str, String)> {
    fn one(field: &'static str, s: &mut String) -> Result<(), (&'static str, String)> {
        *s = expand_vars(s).map_err(|m| (field, m))?;
        Ok(())
    }
    for (field, v) in [
        ("model", e.model.as_mut()),
        ("url", e.url.as_mut()),
        ("shell", e.shell.as_mut()),
    ] {
        if let Some(v) = v {
            one(field, v)?;
        }
    }
    for a in e.args.iter_mut() {
        one("args", a)?;
    }
    for a in e.command.iter_mut().flatten() {
        one("command", a)?;
    }
    for v in e.env.values_mut() {
        one("env", v)?;
    }
    if let Some(cwd) = e.cwd.as_mut() {
        let mut s = cwd.to_string_lossy().into_owned();
        one("cwd", &mut s)?;
        *cwd = PathBuf::from(s);
    }
    Ok(())
}

/// Expands `${NAME}` from the environment; an unset variable is an error naming it.
pub fn expand_vars(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(j) = after.find('}') else {
            return Err(format!("`{text}`: `${{` without a closing `}}`"));
        };
        let name = &after[..j];
        match std::env::var(name) {
            Ok(v) => out.push_str(&v),
            Err(_) => {
                return Err(format!(
                    "environment variable `{name}` (used in `{text}`) is not set"
                ))
            }
        }
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn validate_engine(_name: &str, e: &EngineSpec) -> Result<(), (&'static str, String)> {
    let kind = e.effective_kind();
    if let Some(url) = &e.url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err((
                "url",
                format!("`{url}` must start with http:// or https://"),
            ));
        }
    }
    match kind {
        EngineKind::Url if e.url.is_none() => {
            return Err((
                "url",
                "is required for an engine that goodput does not launch (or give kind and command)"
                    .into(),
            ))
        }
        EngineKind::Vllm | EngineKind::Sglang | EngineKind::LlamaCpp if e.model.is_none() => {
            return Err(("model", "is required to launch this kind of engine".into()))
        }
        EngineKind::Command if e.command.is_none() && e.shell.is_none() => {
            return Err((
                "command",
                "kind = \"command\" needs `command` (argv list) or `shell`".into(),
            ))
        }
        _ => {}
    }
    if e.command.is_some() && e.shell.is_some() {
        return Err(("shell", "give either `command` or `shell`, not both".into()));
    }
    if let Some(cmd) = &e.command {
        if cmd.is_empty() {
            return Err(("command", "must not be empty".into()));
        }
    }
    if let Some(crate::profile::PortSpec::Auto(s)) = &e.port {
        if s != "auto" {
            return Err((
                "port",
                format!("`{s}` is not a port: use a number or \"auto\""),
            ));
        }
    }
    for (field, v, min) in [
        ("ready_timeout_s", e.ready_timeout_s, f64::MIN_POSITIVE),
        ("stop_grace_s", e.stop_grace_s, 0.0),
    ] {
        if let Some(t) = v {
            if !(t.is_finite() && t >= min && t <= MAX_SECONDS) {
                return Err((
                    field,
                    format!("{t} must be a positive number of seconds, at most {MAX_SECONDS}"),
                ));
            }
        }
    }
    if let Some(crate::profile::PortSpec::Fixed(0)) = &e.port {
        return Err((
            "port",
            "0 is not a port goodput can reach: give a number or \"auto\"".into(),
        ));
    }
    if e.kv_pool_tokens == Some(0) {
        return Err(("kv_pool_tokens", "must be at least 1".into()));
    }
    if e.max_restarts > 100 {
        return Err((
            "max_restarts",
            format!("{} is out of range 0..=100", e.max_restarts),
        ));
    }
    if let Some(var) = &e.api_key_env {
        if var.is_empty() || var.contains(char::is_whitespace) {
            return Err((
                "api_key_env",
                "must be the NAME of an environment variable, not the key".into(),
            ));
        }
    }
    Ok(())
}

fn read_jsonl(
    path: &std::path::Path,
    default_max: Option<u32>,
) -> Result<Vec<JsonlPrompt>, String> {
    use std::io::BufRead;
    let f =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut out = Vec::new();
    let mut reader = std::io::BufReader::new(f);
    let mut line = String::new();
    let mut no = 0usize;
    loop {
        line.clear();
        no += 1;
        let n = std::io::Read::take(&mut reader, MAX_JSONL_LINE as u64 + 1)
            .read_line(&mut line)
            .map_err(|e| format!("{}:{no}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        if n > MAX_JSONL_LINE {
            return Err(format!(
                "{}:{no}: line longer than {MAX_JSONL_LINE} bytes",
                path.display()
            ));
        }
        if line.trim().is_empty() {
            continue;
        }
        let mut p: JsonlPrompt =
            serde_json::from_str(&line).map_err(|e| format!("{}:{no}: {e}", path.display()))?;
        if p.max_tokens.is_none() {
            p.max_tokens = default_max;
        }
        // Requests that can never succeed are refused here, not as HTTP 400s later.
        if p.prompt.trim().is_empty() {
            return Err(format!(
                "{}:{no}: the prompt is empty; an engine refuses an empty prompt",
                path.display()
            ));
        }
        if let Some(m) = p.max_tokens {
            if !(1..=1_000_000).contains(&m) {
                return Err(format!(
                    "{}:{no}: max_tokens {m} is out of range 1..=1000000 (a request must ask for at least one token)",
                    path.display()
                ));
            }
        }
        out.push(p);
        let _ = reader.fill_buf();
    }
    if out.is_empty() {
        return Err(format!("{} holds no prompts", path.display()));
    }
    Ok(out)
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    const BASE: &str = "name = \"t\"\n[slo]\nttft_ms = 100\ntpot_ms = 10\n[load]\npoints = [4, 1]\nrequests_per_trial = 3\n[workload]\ninput_tokens = 10\noutput_tokens = 5\n";

    fn plan(extra: &str) -> Result<Plan, ProfileError> {
        Profile::parse(&format!("{BASE}{extra}"), "p.toml")?
            .into_plan("p.toml", &Overrides::default())
    }

    #[test]
    fn defaults_and_sorting() {
        let p = plan("[engines.a]\nurl = \"http://127.0.0.1:1\"\n").unwrap();
        assert_eq!(p.points, vec![1.0, 4.0]);
        assert_eq!(p.trials, 1);
        assert_eq!(p.quantiles.len(), 51);
        assert_eq!(p.quantiles[1], 0.02);
    }

    #[test]
    fn env_vars_expand_and_a_missing_one_is_named() {
        std::env::set_var("GOODPUT_TEST_MODEL_PATH", "/m.gguf");
        let p = plan("[engines.a]\nkind = \"llama-cpp\"\nmodel = \"${GOODPUT_TEST_MODEL_PATH}\"\n")
            .unwrap();
        assert_eq!(p.engines["a"].model.as_deref(), Some("/m.gguf"));
        let e = plan("[engines.a]\nkind = \"llama-cpp\"\nmodel = \"${GOODPUT_NOT_SET_X}\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("engines.a.model") && e.contains("GOODPUT_NOT_SET_X"),
            "{e}"
        );
    }

    #[test]
    fn engine_errors_name_the_field() {
        let e = plan("[engines.a]\nkind = \"vllm\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("engines.a.model"), "{e}");
        let e = plan("[engines.a]\nurl = \"localhost:8000\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("engines.a.url"), "{e}");
        let e = plan("[engines.a]\nurl = \"http://x\"\nport = \"any\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("engines.a.port"), "{e}");
    }

    #[test]
    fn unknown_keys_name_key_and_line() {
        let e = Profile::parse(
            &format!("{BASE}[engines.a]\nurl = \"http://x\"\nmodle = \"m\"\n"),
            "p.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("modle") && e.contains("line 13"), "{e}");
    }

    #[test]
    fn overrides_apply() {
        let prof = Profile::parse(
            &format!("{BASE}[engines.a]\nurl = \"http://x\"\n[engines.b]\nurl = \"http://y\"\n"),
            "p",
        )
        .unwrap();
        let ov = Overrides {
            rate: Some(vec![2.5]),
            trials: Some(3),
            requests: Some(9),
            slo: Some(crate::profile::parse_slo("ttft:1000,tpot:100,e2el:5000").unwrap()),
            engines: vec!["b".into()],
            ..Default::default()
        };
        let p = prof.into_plan("p", &ov).unwrap();
        assert_eq!(p.mode, crate::profile::LoadMode::Rate);
        assert_eq!(p.points, vec![2.5]);
        assert_eq!((p.trials, p.requests_per_trial), (3, 9));
        assert_eq!(p.slo.e2el_ms, Some(5000.0));
        assert_eq!(p.engines.keys().collect::<Vec<_>>(), vec!["b"]);
        assert!(crate::profile::parse_slo("ttft:x").is_err());
        assert!(crate::profile::parse_slo("foo:1").is_err());
    }

    #[test]
    fn every_numeric_field_is_checked_with_its_key_and_line() {
        let engine = "[engines.a]\nurl = \"http://127.0.0.1:1\"\n";
        // BASE has 10 lines, the engine 2 more; the bad key follows.
        for (extra, key) in [
            (
                "[telemetry.cooldown]\nmax_wait_s = inf\n",
                "telemetry.cooldown.max_wait_s",
            ),
            (
                "[telemetry.cooldown]\nmax_temp_c = nan\n",
                "telemetry.cooldown.max_temp_c",
            ),
            (
                "[telemetry]\ninterval_ms = 9223372036854775807\n",
                "telemetry.interval_ms",
            ),
        ] {
            let e = plan(&format!("{engine}{extra}")).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains("line 14"), "{extra}: {e}");
        }
        for (extra, key) in [
            ("ready_timeout_s = inf\n", "engines.a.ready_timeout_s"),
            ("stop_grace_s = 1e300\n", "engines.a.stop_grace_s"),
            ("port = 0\n", "engines.a.port"),
            ("kv_pool_tokens = 0\n", "engines.a.kv_pool_tokens"),
        ] {
            let e = plan(&format!("{engine}{extra}")).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains("line 13"), "{extra}: {e}");
        }
        let over = |load: &str| {
            BASE.replace(
                "requests_per_trial = 3\n",
                &format!("requests_per_trial = 3\n{load}\n"),
            )
        };
        for (load, key) in [
            ("request_timeout_s = 1e300", "load.request_timeout_s"),
            ("burstiness = inf", "load.burstiness"),
            ("max_concurrency = 0", "load.max_concurrency"),
            ("warmup_requests = 4000000000", "load.warmup_requests"),
        ] {
            let e = Profile::parse(&format!("{}{engine}", over(load)), "p.toml")
                .unwrap()
                .into_plan("p.toml", &Overrides::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(key) && e.contains("line 8"), "{load}: {e}");
        }
    }

    #[test]
    fn a_bad_value_from_a_flag_names_the_flag_not_a_line() {
        let prof =
            Profile::parse(&format!("{BASE}[engines.a]\nurl = \"http://x\"\n"), "p").unwrap();
        let ov = Overrides {
            trials: Some(0),
            ..Default::default()
        };
        let e = prof.into_plan("p", &ov).unwrap_err().to_string();
        assert!(e.contains("--trials") && !e.contains("line"), "{e}");
    }

    #[test]
    fn jsonl_requests_that_cannot_succeed_are_refused_with_their_line() {
        let dir = tempfile::tempdir().unwrap();
        for (body, needle) in [
            (
                "{\"prompt\": \"hi\"}\n{\"prompt\": \"x\", \"max_tokens\": 0}\n",
                ":2: max_tokens 0",
            ),
            (
                "{\"prompt\": \"hi\"}\n\n{\"prompt\": \"  \"}\n",
                ":3: the prompt is empty",
            ),
        ] {
            let path = dir.path().join("w.jsonl");
            std::fs::write(&path, body).unwrap();
            let text = format!(
                "name = \"t\"\n[slo]\nttft_ms = 1\n[load]\npoints = [1]\nrequests_per_trial = 1\n[workload]\nkind = \"jsonl\"\npath = \"{}\"\n[engines.a]\nurl = \"http://x\"\n",
                path.display()
            );
            let e = Profile::parse(&text, "p.toml")
                .unwrap()
                .into_plan("p.toml", &Overrides::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains("workload.path") && e.contains(needle), "{e}");
        }
    }
}
