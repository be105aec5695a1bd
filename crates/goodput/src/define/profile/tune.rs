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
    /// What is maximised: `capacity` (the default; `cost` is not done yet).
    #[serde(default)]
    pub objective: Option<Objective>,
    /// Most candidates measured on the real engine, every scheme and phase
    /// together (default 6).
    #[serde(default)]
    pub max_candidates_measured: Option<u32>,
    /// `[tune.flags]`: each flag's values.
    pub flags: IndexMap<String, Vec<FlagValue>>,
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
    /// What is maximised.
    pub objective: Objective,
    /// Most candidates measured on the real engine.
    pub max_measured: u32,
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
        if objective == Objective::Cost {
            return Err(bad(
                "tune.objective",
                "\"cost\" is not done yet: tune maximises capacity (objective = \"capacity\")"
                    .into(),
            ));
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
            max_measured,
            candidates: product(&flags),
            flags,
        })
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
