//! `[tune]`: the flag space `goodput tune` searches, one engine's command line
//! varied. The space is the product of every flag's values, in the order written
//! (the last flag varies fastest); `true` is the bare flag, `false` leaves it out.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::{line_of, EngineKind, EngineSpec, Objective, ProfileError};

/// The most candidates a space may hold (a typo such as a 1..1000 list is refused,
/// not run).
pub const MAX_CANDIDATES: usize = 4096;

/// `[tune]` as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneSpec {
    /// The `[engines.*]` entry whose command line varies.
    pub engine: String,
    /// What is optimised: `capacity` (the default: the most load under the SLO)
    /// or `cost` (the least dollars per million good tokens at `load`).
    #[serde(default)]
    pub objective: Option<Objective>,
    /// With `objective = "cost"`: the load that must be served (the plan's load
    /// mode: concurrent requests or requests per second).
    #[serde(default)]
    pub load: Option<f64>,
    /// With `objective = "cost"` and a flag that sets the GPU count
    /// (`--tensor-parallel-size`/`-tp`, `--pipeline-parallel-size`/`-pp`): the
    /// price of one GPU an hour; a candidate costs it times its GPUs.
    #[serde(default)]
    pub usd_per_hour_per_gpu: Option<f64>,
    /// `"vllm"`: the engine takes vLLM's flags (a `command` engine that wraps
    /// vLLM or a server that speaks its flags), so the engine model applies to
    /// it; without it only `kind = "vllm"` and `"sim"` are taken to.
    #[serde(default)]
    pub speaks: Option<FlagDialect>,
    /// Most candidates measured on the real engine, every scheme and phase
    /// together (default 6).
    #[serde(default)]
    pub max_candidates_measured: Option<u32>,
    /// Most real trials over every search; a search is started only while the
    /// tune has used fewer (it then runs to its end).
    #[serde(default)]
    pub max_trials: Option<u32>,
    /// Most minutes of measuring; a search is started only before they are up.
    #[serde(default)]
    pub max_minutes: Option<f64>,
    /// `[tune.flags]`: each flag's values.
    pub flags: IndexMap<String, Vec<FlagValue>>,
}

/// Whose flags an engine takes, for `[tune] speaks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagDialect {
    /// vLLM's engine flags (`--max-num-seqs`, ...), which the engine model speaks.
    Vllm,
}

/// One value of a flag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FlagValue {
    /// `true`: the bare flag; `false`: the flag left out.
    Switch(bool),
    /// `--flag N`.
    Int(i64),
    /// `--flag X` (a decimal).
    Float(f64),
    /// `--flag TEXT`.
    Text(String),
}

impl FlagValue {
    /// The value as a command line writes it (`None` for a switch).
    pub fn word(&self) -> Option<String> {
        match self {
            FlagValue::Switch(_) => None,
            FlagValue::Int(n) => Some(n.to_string()),
            FlagValue::Float(x) => Some(x.to_string()),
            FlagValue::Text(s) => Some(s.clone()),
        }
    }
}

/// One point of the space: every flag with one of its values, in the space's
/// flag order.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// (flag, value), as written in `[tune.flags]`.
    pub flags: Vec<(String, FlagValue)>,
}

impl Candidate {
    /// The words appended to the engine's command line: `--flag N`, a bare
    /// `--flag` for `true`, nothing for `false`.
    pub fn args(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (flag, v) in &self.flags {
            match v {
                FlagValue::Switch(false) => {}
                FlagValue::Switch(true) => out.push(flag.clone()),
                other => {
                    out.push(flag.clone());
                    out.extend(other.word());
                }
            }
        }
        out
    }

    /// The flags as one line for people (`--max-num-seqs 8 --async-scheduling`;
    /// `(no flags)` when every switch is off).
    pub fn label(&self) -> String {
        let a = self.args();
        if a.is_empty() {
            "(no flags)".into()
        } else {
            a.join(" ")
        }
    }
}

/// A validated `[tune]`: the engine and every candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    /// The engine whose command line varies.
    pub engine: String,
    /// What is optimised.
    pub objective: Objective,
    /// With `objective = "cost"`: the load that must be served.
    pub load: Option<f64>,
    /// The price of one GPU an hour, when a flag sets the GPU count.
    pub usd_per_hour_per_gpu: Option<f64>,
    /// The engine was declared to take vLLM's flags (`speaks = "vllm"`).
    pub speaks: Option<FlagDialect>,
    /// Most candidates measured on the real engine.
    pub max_measured: u32,
    /// Most real trials over every search.
    pub max_trials: Option<u32>,
    /// Most minutes of measuring.
    pub max_minutes: Option<f64>,
    /// The flags in the order written, each with its values.
    pub flags: Vec<(String, Vec<FlagValue>)>,
    /// The product of the values, the last flag varying fastest.
    pub candidates: Vec<Candidate>,
}

/// The default of `max_candidates_measured`.
pub const DEFAULT_MAX_MEASURED: u32 = 6;

impl TuneSpec {
    /// The space, checked against the profile's engines; `source` is the profile's
    /// text (to name a bad key's line), `origin` its name.
    pub fn space(
        &self,
        engines: &IndexMap<String, EngineSpec>,
        source: Option<&str>,
        origin: &str,
    ) -> Result<Space, ProfileError> {
        let bad = |field: &str, message: String| ProfileError::Invalid {
            path: origin.to_string(),
            field: field.to_string(),
            line: source.and_then(|s| line_of(s, field)),
            message,
        };
        let Some(spec) = engines.get(&self.engine) else {
            let known: Vec<&str> = engines.keys().map(String::as_str).collect();
            return Err(bad(
                "tune.engine",
                format!(
                    "no engine `{}` in [engines] (engines: {})",
                    self.engine,
                    known.join(", ")
                ),
            ));
        };
        if spec.effective_kind() == EngineKind::Url {
            return Err(bad(
                "tune.engine",
                format!(
                    "`{}` is reached by URL: tune varies the command line of an engine goodput launches (kind = \"sim\", \"vllm\", \"sglang\", \"llama-cpp\" or \"command\")",
                    self.engine
                ),
            ));
        }
        let objective = self.objective.unwrap_or_default();
        self.check_cost(spec, objective, &bad)?;
        if let Some(n) = self.max_trials {
            if n < 1 {
                return Err(bad(
                    "tune.max_trials",
                    "0: must be at least 1 (a trial)".into(),
                ));
            }
        }
        if let Some(m) = self.max_minutes {
            if !(m.is_finite() && m > 0.0) {
                return Err(bad(
                    "tune.max_minutes",
                    format!("{m}: must be a number of minutes above 0"),
                ));
            }
        }
        let max_measured = self.max_candidates_measured.unwrap_or(DEFAULT_MAX_MEASURED);
        if max_measured < 2 {
            return Err(bad(
                "tune.max_candidates_measured",
                format!("{max_measured}: must be at least 2 (a best and a runner-up)"),
            ));
        }
        if self.flags.is_empty() {
            return Err(bad(
                "tune.flags",
                "no flag to vary: give each flag its values, `\"--max-num-seqs\" = [8, 16]`".into(),
            ));
        }
        let mut flags = Vec::new();
        let mut count: usize = 1;
        for (flag, values) in &self.flags {
            let field = format!("tune.flags.{flag}");
            if !flag.starts_with('-') || flag.contains(char::is_whitespace) || flag.len() < 2 {
                return Err(bad(
                    &field,
                    format!(
                        "`{flag}` is not a flag: write it as the engine takes it, `--max-num-seqs`"
                    ),
                ));
            }
            if values.is_empty() {
                return Err(bad(&field, "no values: give at least one".into()));
            }
            let switches = values
                .iter()
                .filter(|v| matches!(v, FlagValue::Switch(_)))
                .count();
            if switches != 0 && switches != values.len() {
                return Err(bad(
                    &field,
                    "mixes true/false with values: a switch is [true, false], a flag with a value lists its values".into(),
                ));
            }
            for (i, v) in values.iter().enumerate() {
                if values[..i].contains(v) {
                    return Err(bad(&field, format!("{v:?} is listed twice")));
                }
                if let FlagValue::Text(s) = v {
                    if s.is_empty() {
                        return Err(bad(&field, "an empty value".into()));
                    }
                }
            }
            count = count.saturating_mul(values.len());
            flags.push((flag.clone(), values.clone()));
        }
        if count > MAX_CANDIDATES {
            return Err(bad(
                "tune.flags",
                format!("{count} candidates: at most {MAX_CANDIDATES}"),
            ));
        }
        Ok(Space {
            engine: self.engine.clone(),
            objective,
            load: self.load,
            usd_per_hour_per_gpu: self.usd_per_hour_per_gpu,
            speaks: self.speaks,
            max_measured,
            max_trials: self.max_trials,
            max_minutes: self.max_minutes,
            candidates: product(&flags),
            flags,
        })
    }
}

impl TuneSpec {
    /// `objective = "cost"` needs the load that must be served and a price (the
    /// engine's `usd_per_hour`, or `usd_per_hour_per_gpu`); the load and the
    /// per-GPU price are positive numbers, and neither is given without cost.
    fn check_cost(
        &self,
        engine: &EngineSpec,
        objective: Objective,
        bad: &dyn Fn(&str, String) -> ProfileError,
    ) -> Result<(), ProfileError> {
        let positive = |key: &str, v: Option<f64>| match v {
            Some(x) if !(x.is_finite() && x > 0.0) => {
                Err(bad(key, format!("{x}: must be a number above 0")))
            }
            _ => Ok(()),
        };
        positive("tune.load", self.load)?;
        positive("tune.usd_per_hour_per_gpu", self.usd_per_hour_per_gpu)?;
        if objective != Objective::Cost {
            for (key, set) in [
                ("tune.load", self.load.is_some()),
                (
                    "tune.usd_per_hour_per_gpu",
                    self.usd_per_hour_per_gpu.is_some(),
                ),
            ] {
                if set {
                    return Err(bad(
                        key,
                        "is used only with objective = \"cost\" (capacity needs no load and no price)".into(),
                    ));
                }
            }
            return Ok(());
        }
        if self.load.is_none() {
            return Err(bad(
                "tune.objective",
                "\"cost\" needs `load`, the load that must be served (e.g. load = 8): the cheapest candidate that meets the SLO there is the answer".into(),
            ));
        }
        if engine.usd_per_hour.is_none() && self.usd_per_hour_per_gpu.is_none() {
            return Err(bad(
                "tune.objective",
                format!(
                    "\"cost\" needs a price: `usd_per_hour` in [engines.{}] (or --usd-per-hour), or `usd_per_hour_per_gpu` in [tune] when a flag sets the GPU count",
                    self.engine
                ),
            ));
        }
        Ok(())
    }
}

/// Every combination of the flags' values, the last flag varying fastest.
pub fn product(flags: &[(String, Vec<FlagValue>)]) -> Vec<Candidate> {
    let mut out = vec![Candidate { flags: Vec::new() }];
    for (flag, values) in flags {
        out = out
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.flags.push((flag.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    out
}

/// `spec` with `extra` appended to the command line it launches: to `args` for
/// the kinds that build their own command (sim, vllm, sglang, llama-cpp), to the
/// argv or the shell line of a `command` engine.
pub fn with_flags(spec: &EngineSpec, extra: &[String]) -> EngineSpec {
    let mut s = spec.clone();
    match (s.effective_kind(), &mut s.command, &mut s.shell) {
        (EngineKind::Command, Some(argv), _) if !argv.is_empty() => {
            argv.extend(extra.iter().cloned())
        }
        (EngineKind::Command, _, Some(line)) => {
            for w in extra {
                line.push(' ');
                line.push_str(&shell_word(w));
            }
        }
        _ => s.args.extend(extra.iter().cloned()),
    }
    s
}

/// A word quoted for `sh -c` when it needs to be.
fn shell_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=.,/:+@%".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
#[path = "tune_tests.rs"]
mod tests;
