//! `[adapters]`: LoRA adapters the simulated engine serves, as vLLM serves them with
//! `--enable-lora --lora-modules NAME=PATH ... --max-loras N`: a request whose
//! `model` names one is served by it, a name neither the model's nor an adapter's
//! is a 404 ("The model `x` does not exist."). The server
//! ([`crate::server`]'s `adapters`) keeps `max_loras` adapters resident, least
//! recently used evicted, and an adapter that is not resident is loaded first
//! (`load_ms`); an adapter's `modules` value slows its requests down.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Most adapters a configuration names.
pub const MAX_ADAPTERS: usize = 1024;

/// The adapters served, their slots and their load cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptersConfig {
    /// Adapter name -> slowdown of its requests: 1 serves them as the base model
    /// does; 3 makes every token of theirs (the first included) due 3 times as
    /// long after the request started (after its adapter was loaded). 1..=100.
    pub modules: BTreeMap<String, f64>,
    /// Adapters resident at once (vLLM's `--max-loras`, default 1).
    #[serde(default = "one")]
    pub max_loras: u32,
    /// Time to load an adapter that is not resident, simulated ms (default 0).
    /// A request naming it waits for the load; requests arriving while it loads
    /// wait for the same load.
    #[serde(default)]
    pub load_ms: f64,
}

fn one() -> u32 {
    1
}

impl AdaptersConfig {
    /// Adapters named `names`, each at speed 1, `max_loras` of them resident.
    pub fn named<'a>(names: impl IntoIterator<Item = &'a str>, max_loras: u32) -> AdaptersConfig {
        AdaptersConfig {
            modules: names.into_iter().map(|n| (n.to_string(), 1.0)).collect(),
            max_loras,
            load_ms: 0.0,
        }
    }

    /// Range checks: each error names the field.
    pub fn validate(&self, model: &str) -> Result<(), ConfigError> {
        let invalid = |field: String, reason: String| ConfigError::Invalid { field, reason };
        if self.modules.is_empty() || self.modules.len() > MAX_ADAPTERS {
            return Err(invalid(
                "adapters.modules".into(),
                format!("names {} adapters: 1 to {MAX_ADAPTERS}", self.modules.len()),
            ));
        }
        for (name, speed) in &self.modules {
            let field = format!("adapters.modules.{name}");
            if name.is_empty() || name.chars().any(|c| c.is_control() || c.is_whitespace()) {
                return Err(invalid(
                    field,
                    "a name with no spaces or control characters".into(),
                ));
            }
            if name == model {
                return Err(invalid(field, "is the base model's name".into()));
            }
            if !(speed.is_finite() && (1.0..=100.0).contains(speed)) {
                return Err(ConfigError::OutOfRange {
                    field,
                    value: speed.to_string(),
                    allowed: "1..=100".into(),
                });
            }
        }
        if !(1..=MAX_ADAPTERS as u32).contains(&self.max_loras) {
            return Err(ConfigError::OutOfRange {
                field: "adapters.max_loras".into(),
                value: self.max_loras.to_string(),
                allowed: format!("1..={MAX_ADAPTERS}"),
            });
        }
        if !(self.load_ms.is_finite() && (0.0..=600_000.0).contains(&self.load_ms)) {
            return Err(ConfigError::OutOfRange {
                field: "adapters.load_ms".into(),
                value: self.load_ms.to_string(),
                allowed: "0..=600000".into(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::SimConfig;

    #[test]
    fn a_config_file_names_adapters_and_bad_values_name_the_field() {
        let c: SimConfig = toml::from_str(
            "[adapters]\nmax_loras = 2\nload_ms = 150\n[adapters.modules]\nlora-a = 1\nlora-b = 3.0\n",
        )
        .unwrap();
        c.validate().unwrap();
        let a = c.adapters.unwrap();
        assert_eq!(
            (a.max_loras, a.load_ms, a.modules["lora-b"]),
            (2, 150.0, 3.0)
        );
        for (toml, field) in [
            ("[adapters]\n[adapters.modules]\n", "adapters.modules"),
            ("[adapters.modules]\nx = 0.5\n", "adapters.modules.x"),
            (
                "[adapters]\nmax_loras = 0\n[adapters.modules]\nx = 1\n",
                "adapters.max_loras",
            ),
            (
                "[adapters]\nload_ms = -1\n[adapters.modules]\nx = 1\n",
                "adapters.load_ms",
            ),
        ] {
            let c: SimConfig = toml::from_str(toml).unwrap();
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(field), "{toml}: {e}");
        }
    }
}
