//! Applying overrides and checking every value of a profile: [`Checker`] names a bad
//! value by key and line (or the flag that set it).

use std::time::Duration;

use indexmap::IndexMap;
use report::{Slo, SloMetric};

use crate::define::profile::{EngineSpec, Overrides, Profile, ProfileError, TelemetrySpec};

use super::engines::{expand_engine, validate_engine};
use super::load::{check_load, requests_per_trial};
use super::search::check_search;
use super::workload::{check_workload, describe};
use super::Plan;

/// Names a bad value: the field (or the flag that set it) and the profile line.
pub(super) struct Checker<'a> {
    origin: &'a str,
    source: Option<&'a str>,
    /// Fields set by a flag, and the flag: their errors name the flag, not a line.
    flags: Vec<(&'static str, &'static str)>,
}

impl Checker<'_> {
    pub(super) fn bad(&self, field: &str, message: String) -> ProfileError {
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
                None => self
                    .source
                    .and_then(|s| crate::define::profile::line_of(s, field)),
            },
            message,
        }
    }

    /// A finite number in `range`.
    pub(super) fn number(
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
    pub(super) fn count<T: Into<u64> + Copy + std::fmt::Display>(
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
    pub(super) fn seconds(&self, field: &str, v: f64) -> Result<Duration, ProfileError> {
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
    pub fn into_plan(mut self, origin: &str, ov: &Overrides) -> Result<Plan, ProfileError> {
        // Before anything is written or printed: the profile's text goes into the
        // report, its engines' secrets with it.
        for e in self.engines.values() {
            e.remember_secrets();
        }
        if ov.prompt_salt.is_some() {
            self.workload.set_salt();
        }
        let prompt_salt = self.workload.chat().salt.then(|| {
            ov.prompt_salt
                .clone()
                .unwrap_or(crate::define::profile::PromptSalt::Draw)
        });
        let check = Checker {
            origin,
            source: self.source.as_deref(),
            flags: override_flags(ov),
        };
        let slo = check_slo(&check, merged_slo(&self.slo, ov))?;
        let workload = check_workload(&check, &self.workload)?;
        let mut spec = self.load.clone().with_overrides(ov);
        spec.requests_per_trial = requests_per_trial(&check, &spec, &workload, ov)?;
        let load = check_load(&check, &spec, ov.search.is_some())?;
        check_plan_size(&check, &workload, spec.requests_per_trial)?;
        let quantiles = check_quantiles(&check, self.quantiles.clone())?;
        let workload_description = describe(&self.workload, &workload, spec.requests_per_trial);
        check_telemetry(&check, &self.telemetry)?;
        check_server_metrics(&check, &self.server_metrics)?;
        let profile_toml = resolved_toml(&self, &spec, &slo, &ov.engines);
        let mut engines = select_engines(&check, self.engines, &ov.engines)?;
        super::price::apply_prices(&mut engines, &ov.usd_per_hour)
            .map_err(|m| check.bad("usd_per_hour", m))?;
        let engines = super::chat::with_chat_controls(&check, &self.workload, engines)?;
        let tools = super::tools::check_tools(&check, &self.workload, &engines, spec.seed)?;
        super::embeddings::check_embeddings(&check, &self.workload, &engines, &slo)?;
        let calls_asked = tools.as_ref().is_some_and(|t| t.choice != "none");
        super::tools::check_requirements(&check, &slo, calls_asked)?;
        let images =
            super::images::check_images(&check, &self.workload, &engines, spec.requests_per_trial)?;
        if !calls_asked && slo.bound(report::SloMetric::Ttftc).is_some() {
            return Err(check.bad(
                "slo.ttftc_ms",
                "bounds the time to first tool call: it needs `[workload] tools = N` \
                 (and a tool_choice other than \"none\")"
                    .into(),
            ));
        }
        let adapters = super::adapters::check_adapters(&check, &self.workload, &engines)?;
        let search = ov
            .search
            .as_ref()
            .map(|flags| {
                let table = self.search.clone().unwrap_or_default();
                let trials = (load.trials, load.adaptive);
                check_search(&check, &table, flags, &spec, trials, self.load.mode, &slo)
            })
            .transpose()?;
        Ok(Plan {
            name: self.name,
            slo,
            quantiles,
            mode: spec.mode,
            points: load.points,
            requests_per_trial: spec.requests_per_trial,
            trials: load.trials,
            adaptive: load.adaptive,
            warmup_requests: spec.warmup_requests,
            request_timeout: load.request_timeout,
            stall_timeout: load.stall_timeout,
            trial_timeout: load.trial_timeout,
            seed: spec.seed,
            burstiness: spec.burstiness,
            max_concurrency: spec.max_concurrency,
            interleave: spec.interleave,
            workload,
            telemetry: self.telemetry,
            engines,
            workload_description,
            search,
            server_metrics: self.server_metrics,
            profile_toml,
            prompt_salt,
            tools,
            adapters,
            images,
        })
    }
}

/// Most memory one trial's request plan may take, bytes (4 GiB): the plan is
/// built whole before the trial starts (bodies serialised, so nothing in the hot
/// path builds prompts), so its size is known when planning and refused here
/// rather than found by the OOM killer mid-run.
pub const MAX_PLAN_BYTES: u64 = 4 << 30;

/// Bytes a generated prompt takes per token (goodput's synthetic text, JSON-escaped:
/// 20,000 requests of 5,000 tokens measured 594 MB, about 5.9 a token).
const PLAN_BYTES_PER_TOKEN: u64 = 6;

/// Bytes a request's body and record take beside its prompt.
const PLAN_BYTES_PER_REQUEST: u64 = 512;

/// The request plan of one trial, estimated from the workload's lengths; `None`
/// for workloads whose prompts are already in memory (a JSONL file, ShareGPT) or
/// grow as replies come (conversations, bounded by their context).
pub fn plan_bytes(workload: &super::Workload, requests: u32) -> Option<u64> {
    use super::Workload as W;
    let prompt_tokens = match workload {
        W::Synthetic {
            input_tokens,
            range_ratio,
            inputs,
            ..
        } => {
            let one = (f64::from(*input_tokens) * (1.0 + range_ratio.clamp(0.0, 1.0))).ceil();
            one as u64 * u64::from(inputs.unwrap_or(1))
        }
        W::Prefix(p) => u64::from(p.prefix_tokens) + u64::from(p.suffix_tokens),
        W::Trace(t) => t.requests.iter().map(|r| u64::from(r.input_tokens)).max()?,
        _ => return None,
    };
    Some(u64::from(requests).saturating_mul(
        prompt_tokens.saturating_mul(PLAN_BYTES_PER_TOKEN) + PLAN_BYTES_PER_REQUEST,
    ))
}

/// Refuses a plan whose trial would not fit [`MAX_PLAN_BYTES`], with the figure.
fn check_plan_size(
    check: &Checker,
    workload: &super::Workload,
    requests: u32,
) -> Result<(), ProfileError> {
    match plan_bytes(workload, requests) {
        Some(b) if b > MAX_PLAN_BYTES => Err(check.bad(
            "load.requests_per_trial",
            format!(
                "{requests} requests of this workload make a request plan of about {:.1} GiB, \
                 above goodput's {} GiB limit for one trial (the plan is built whole before the \
                 trial starts): use fewer requests per trial or shorter prompts",
                b as f64 / f64::from(1u32 << 30),
                MAX_PLAN_BYTES >> 30
            ),
        )),
        _ => Ok(()),
    }
}

/// The profile with the overrides applied, as TOML (`None` if it does not serialise).
fn resolved_toml(
    profile: &Profile,
    load: &crate::define::profile::LoadSpec,
    slo: &Slo,
    only: &[String],
) -> Option<String> {
    let mut p = profile.clone();
    p.load = load.clone();
    p.slo = slo.clone();
    if !only.is_empty() {
        p.engines.retain(|name, _| only.contains(name));
    }
    toml::to_string(&p).ok()
}

/// `--slo` replaces the bounds; the attainment target and form stay the profile's.
fn merged_slo(profile: &Slo, ov: &Overrides) -> Slo {
    match ov.slo.clone() {
        Some(mut s) => {
            s.attainment = s.attainment.or(profile.attainment);
            s.percentile = s.percentile.or(profile.percentile);
            let t = &mut s.tool_calls;
            t.valid = t.valid.or(profile.tool_calls.valid);
            t.schema_valid = t.schema_valid.or(profile.tool_calls.schema_valid);
            s
        }
        None => profile.clone(),
    }
}

/// The SLO bounds, attainment target and percentile form.
fn check_slo(check: &Checker, slo: Slo) -> Result<Slo, ProfileError> {
    for (m, v) in slo.bounds.iter() {
        if !v.is_finite() || v <= 0.0 {
            let field = format!("slo.{}", m.field());
            return Err(check.bad(&field, format!("{v} must be a positive number of ms")));
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
    if slo.bounds.is_empty() {
        let fields = SloMetric::listed(SloMetric::field);
        return Err(check.bad("slo", format!("needs at least one bound ({fields})")));
    }
    Ok(slo)
}

/// The quantile grid: the profile's, else the default.
fn check_quantiles(check: &Checker, q: Option<Vec<f64>>) -> Result<Vec<f64>, ProfileError> {
    let quantiles = q.unwrap_or_else(report::default_quantiles);
    if quantiles.is_empty() || quantiles.iter().any(|q| !(0.0..=1.0).contains(q)) {
        return Err(check.bad("quantiles", "every quantile must be in 0.0..=1.0".into()));
    }
    Ok(quantiles)
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
    if !ov.usd_per_hour.is_empty() {
        flags.push(("usd_per_hour", "--usd-per-hour"));
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

fn check_telemetry(check: &Checker, t: &TelemetrySpec) -> Result<(), ProfileError> {
    check.count("telemetry.interval_ms", t.interval_ms, 1..=3_600_000)?;
    let dcgm = t.source.trim().eq_ignore_ascii_case("dcgm");
    match &t.url {
        None if dcgm => {
            return Err(check.bad(
                "telemetry.url",
                "source = \"dcgm\" needs `url`, the dcgm-exporter's metrics \
                 (e.g. \"http://gpu-node:9400/metrics\")"
                    .into(),
            ))
        }
        Some(_) if !dcgm => {
            return Err(check.bad(
                "telemetry.url",
                format!(
                    "`url` is read only by source = \"dcgm\" (the source is `{}`)",
                    t.source
                ),
            ))
        }
        Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => {
            return Err(check.bad(
                "telemetry.url",
                format!("`{url}` must start with http:// or https://"),
            ))
        }
        _ => {}
    }
    if !t.gpus.is_empty() && !dcgm {
        return Err(check.bad(
            "telemetry.gpus",
            format!(
                "`gpus` is read only by source = \"dcgm\" (the source is `{}`)",
                t.source
            ),
        ));
    }
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

/// `[server_metrics]`: the interval and bounds, each in range.
fn check_server_metrics(
    check: &Checker,
    s: &crate::define::profile::ServerMetricsSpec,
) -> Result<(), ProfileError> {
    check.count("server_metrics.interval_ms", s.interval_ms, 10..=3_600_000)?;
    check.count("server_metrics.max_samples", s.max_samples, 2..=100_000)?;
    check.count("server_metrics.max_bytes", s.max_bytes, 1024..=1 << 30)?;
    Ok(())
}
