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
        .filter(|(k, v)| old.get(*k).is_some_and(|o| o != *v) || (!k.starts_with("engine.") && !old.contains_key(*k)))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Largest JSONL line accepted, bytes.
const MAX_JSONL_LINE: usize = 16 * 1024 * 1024;

impl Profile {
    /// Applies overrides and validates: the result has no unchecked value.
    pub fn into_plan(self, origin: &str, ov: &Overrides) -> Result<Plan, ProfileError> {
        let bad = |field: &str, message: String| ProfileError::Invalid {
            path: origin.to_string(),
            field: field.to_string(),
            message,
        };
        let mut load = self.load;
        if let Some(points) = &ov.concurrency {
            load.mode = LoadMode::Concurrency;
            load.points = points.clone();
        }
        if let Some(points) = &ov.rate {
            load.mode = LoadMode::Rate;
            load.points = points.clone();
        }
        if let Some(t) = ov.trials {
            load.trials = t;
        }
        if let Some(r) = ov.requests {
            load.requests_per_trial = r;
        }
        if let Some(s) = ov.seed {
            load.seed = s;
        }
        let slo = ov.slo.clone().unwrap_or(self.slo);
        for (field, v) in [
            ("slo.ttft_ms", slo.ttft_ms),
            ("slo.tpot_ms", slo.tpot_ms),
            ("slo.e2el_ms", slo.e2el_ms),
        ] {
            if let Some(v) = v {
                if !v.is_finite() || v <= 0.0 {
                    return Err(bad(field, format!("{v} must be a positive number of ms")));
                }
            }
        }
        if slo.ttft_ms.is_none() && slo.tpot_ms.is_none() && slo.e2el_ms.is_none() {
            return Err(bad(
                "slo",
                "needs at least one bound (ttft_ms, tpot_ms or e2el_ms)".into(),
            ));
        }
        if load.points.is_empty() {
            return Err(bad("load.points", "needs at least one load level".into()));
        }
        for &x in &load.points {
            let ok = x.is_finite()
                && x > 0.0
                && (load.mode == LoadMode::Rate || (x.fract() == 0.0 && x <= 100_000.0));
            if !ok {
                let what = match load.mode {
                    LoadMode::Concurrency => "a whole number of requests in flight, 1..=100000",
                    LoadMode::Rate => "a positive request rate",
                };
                return Err(bad("load.points", format!("{x} is not {what}")));
            }
        }
        let mut points = load.points.clone();
        points.sort_by(f64::total_cmp);
        points.dedup();
        if load.requests_per_trial == 0 {
            return Err(bad("load.requests_per_trial", "must be at least 1".into()));
        }
        if load.trials == 0 || load.trials > 1000 {
            return Err(bad(
                "load.trials",
                format!("{} is out of range 1..=1000", load.trials),
            ));
        }
        let positive_secs = |field: &str, v: f64| -> Result<Duration, ProfileError> {
            if v.is_finite() && v > 0.0 && v < 1e7 {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(bad(
                    field,
                    format!("{v} must be a positive number of seconds"),
                ))
            }
        };
        let request_timeout = positive_secs("load.request_timeout_s", load.request_timeout_s)?;
        let stall_timeout = load
            .stall_timeout_s
            .map(|v| positive_secs("load.stall_timeout_s", v))
            .transpose()?;
        let trial_timeout = load
            .trial_timeout_s
            .map(|v| positive_secs("load.trial_timeout_s", v))
            .transpose()?;
        if !(load.burstiness.is_finite() && load.burstiness > 0.0) {
            return Err(bad(
                "load.burstiness",
                format!("{} must be > 0 (1.0 = Poisson)", load.burstiness),
            ));
        }
        if load.max_concurrency == Some(0) {
            return Err(bad("load.max_concurrency", "must be at least 1".into()));
        }
        let quantiles = self.quantiles.unwrap_or_else(report::default_quantiles);
        if quantiles.is_empty() || quantiles.iter().any(|q| !(0.0..=1.0).contains(q)) {
            return Err(bad(
                "quantiles",
                "every quantile must be in 0.0..=1.0".into(),
            ));
        }
        let w = &self.workload;
        let workload_description = serde_json::to_value(w).unwrap_or_default();
        if !(0.0..1.0).contains(&w.range_ratio) {
            return Err(bad(
                "workload.range_ratio",
                format!("{} is out of range 0.0..1.0", w.range_ratio),
            ));
        }
        let workload = match w.kind {
            WorkloadKind::Synthetic => {
                let input_tokens = w.input_tokens.ok_or_else(|| {
                    bad(
                        "workload.input_tokens",
                        "is required for a synthetic workload".into(),
                    )
                })?;
                let output_tokens = w.output_tokens.ok_or_else(|| {
                    bad(
                        "workload.output_tokens",
                        "is required for a synthetic workload".into(),
                    )
                })?;
                if input_tokens == 0 || input_tokens > 1_000_000 {
                    return Err(bad(
                        "workload.input_tokens",
                        format!("{input_tokens} is out of range 1..=1000000"),
                    ));
                }
                if output_tokens == 0 || output_tokens > 1_000_000 {
                    return Err(bad(
                        "workload.output_tokens",
                        format!("{output_tokens} is out of range 1..=1000000"),
                    ));
                }
                Workload::Synthetic {
                    input_tokens,
                    output_tokens,
                    range_ratio: w.range_ratio,
                    text: w.text,
                    calibrate: w.calibrate,
                }
            }
            WorkloadKind::Jsonl => {
                let path = w.path.clone().ok_or_else(|| {
                    bad("workload.path", "is required for a jsonl workload".into())
                })?;
                let prompts =
                    read_jsonl(&path, w.output_tokens).map_err(|m| bad("workload.path", m))?;
                Workload::Jsonl { path, prompts }
            }
        };
        let mut engines = self.engines;
        if !ov.engines.is_empty() {
            for name in &ov.engines {
                if !engines.contains_key(name) {
                    let known: Vec<&str> = engines.keys().map(String::as_str).collect();
                    return Err(bad(
                        "engines",
                        format!(
                            "no engine named `{name}` (the profile has: {})",
                            known.join(", ")
                        ),
                    ));
                }
            }
            engines.retain(|k, _| ov.engines.contains(k));
        }
        if engines.is_empty() {
            return Err(bad("engines", "needs at least one engine".into()));
        }
        for (name, e) in engines.iter_mut() {
            expand_engine(e).map_err(|(f, m)| bad(&format!("engines.{name}.{f}"), m))?;
            validate_engine(name, e).map_err(|(f, m)| bad(&format!("engines.{name}.{f}"), m))?;
        }
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
        })
    }
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
    if let Some(t) = e.ready_timeout_s {
        if !(t.is_finite() && t > 0.0) {
            return Err((
                "ready_timeout_s",
                format!("{t} must be a positive number of seconds"),
            ));
        }
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
        out.push(p);
        let _ = reader.fill_buf();
    }
    if out.is_empty() {
        return Err(format!("{} holds no prompts", path.display()));
    }
    Ok(out)
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
}
