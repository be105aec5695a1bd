//! `[workload.adapters]`: LoRA adapter name -> weight, checked; and vLLM's
//! `--lora-modules` spellings read (the names of `name=path`, JSON
//! `{"name": ..., "path": ...}`, or bare names as `vllm bench serve` takes them).
//!
//! What is decided here (docs/profile.md, "LoRA adapters"):
//! - The workload names the adapters, so every engine of a run gets the same
//!   requests. An engine's own `--lora-modules` does not add adapters; when a
//!   launched vLLM engine lists some, every adapter the workload draws must be
//!   among them, and a launched vLLM engine without `--enable-lora` is refused
//!   (else an error names the adapter and the engine).
//! - `base` is the engine's own model: `base = 1` draws it beside the adapters.
//! - A conversation workload is refused with adapters (a session would have to keep
//!   one adapter over turns built during the trial: not yet).

use indexmap::IndexMap;

use super::check::Checker;
use crate::define::profile::{EngineKind, EngineSpec, ProfileError, WorkloadSpec};
use crate::define::requests::adapters::{Adapters, BASE};

/// Most adapters a run draws from.
pub const MAX_ADAPTERS: usize = 256;

/// The run's adapters, checked: `None` when the workload names none.
pub(super) fn check_adapters(
    check: &Checker,
    workload: &WorkloadSpec,
    engines: &IndexMap<String, EngineSpec>,
) -> Result<Option<Adapters>, ProfileError> {
    let Some(table) = &workload.chat().adapters else {
        return Ok(None);
    };
    if table.is_empty() {
        return Err(check.bad(
            "workload.adapters",
            "names no adapter: give `name = weight` lines, or leave the table out".into(),
        ));
    }
    if table.len() > MAX_ADAPTERS {
        return Err(check.bad(
            "workload.adapters",
            format!("names {} adapters; at most {MAX_ADAPTERS}", table.len()),
        ));
    }
    if matches!(workload, WorkloadSpec::Conversation(_)) {
        return Err(check.bad(
            "workload.adapters",
            "adapters with a conversation workload are not supported yet \
             (a session would keep one adapter over its turns)"
                .into(),
        ));
    }
    for (name, weight) in table {
        let field = format!("workload.adapters.{name}");
        if let Some(why) = bad_name(name) {
            return Err(check.bad(&field, format!("`{name}` {why}")));
        }
        if !(weight.is_finite() && *weight > 0.0) {
            return Err(check.bad(
                &field,
                format!("weight {weight} must be a positive finite number"),
            ));
        }
    }
    let drawn = table.keys().find(|n| n.as_str() != BASE);
    for (engine, spec) in engines {
        let launched_vllm = spec.effective_kind() == EngineKind::Vllm;
        if let Some(name) = drawn.filter(|_| launched_vllm) {
            if !spec.args.iter().any(|a| a == "--enable-lora") {
                return Err(check.bad(
                    &format!("workload.adapters.{name}"),
                    format!(
                        "engine `{engine}` is launched without --enable-lora: vLLM would \
                         answer every adapter's request with a 404; add \
                         \"--enable-lora\", \"--lora-modules\", \"{name}=PATH\", ... to its args"
                    ),
                ));
            }
        }
        let Some(served) = served_modules(spec) else {
            continue;
        };
        if let Some(name) = table
            .keys()
            .find(|n| n.as_str() != BASE && !served.contains(n))
        {
            return Err(check.bad(
                &format!("workload.adapters.{name}"),
                format!(
                    "engine `{engine}` serves --lora-modules {}, not `{name}`",
                    served.join(", ")
                ),
            ));
        }
    }
    let entries: Vec<(String, f64)> = table.iter().map(|(n, w)| (n.clone(), *w)).collect();
    Adapters::new(&entries).map(Some).ok_or_else(|| {
        check.bad(
            "workload.adapters",
            "the weights do not sum to a finite number".into(),
        )
    })
}

/// Why `name` cannot be an adapter's name sent in `model`; `None` when it can.
fn bad_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if name.len() > super::MAX_MODEL_ID_BYTES {
        return Some("is too long to send as a model id");
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Some("has spaces or control characters");
    }
    None
}

/// The adapter names a launched vLLM engine is started with (`--lora-modules`);
/// `None` for other engines and a vLLM engine without the flag.
fn served_modules(spec: &EngineSpec) -> Option<Vec<String>> {
    if spec.effective_kind() != EngineKind::Vllm {
        return None;
    }
    let i = spec
        .args
        .iter()
        .position(|a| a == "--lora-modules" || a.starts_with("--lora-modules="))?;
    let first = spec.args[i].strip_prefix("--lora-modules=");
    let rest = spec.args[i + 1..]
        .iter()
        .take_while(|a| !a.starts_with("--"))
        .map(String::as_str);
    let names: Vec<String> = first
        .into_iter()
        .chain(rest)
        .filter_map(|m| module_name(m).ok())
        .collect();
    Some(names)
}

/// The adapter's name in one `--lora-modules` value: `name=path`, vLLM's JSON
/// `{"name": "...", "path": "..."}`, or a bare name (`vllm bench serve`'s form).
pub fn module_name(value: &str) -> Result<String, String> {
    let value = value.trim();
    let name = if value.starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(value)
            .map_err(|e| format!("`{value}` is not a JSON LoRA module: {e}"))?;
        v.get("name")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| format!("`{value}` has no string `name`"))?
            .to_string()
    } else {
        value.split_once('=').map_or(value, |(n, _)| n).to_string()
    };
    match bad_name(&name) {
        Some(why) => Err(format!("--lora-modules `{value}`: the name `{name}` {why}")),
        None => Ok(name),
    }
}

/// `--lora-modules` as given to `goodput run`/`search` (vLLM's spellings): the
/// `[workload.adapters]` table, each adapter at weight 1 (vLLM's benchmark draws
/// them uniformly). A name given twice is an error.
pub fn lora_modules_table(values: &[String]) -> Result<toml::Table, String> {
    let mut t = toml::Table::new();
    for v in values {
        let name = module_name(v)?;
        if t.insert(name.clone(), toml::Value::Float(1.0)).is_some() {
            return Err(format!("--lora-modules names `{name}` twice"));
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::define::plan::Plan;
    use crate::define::profile::{Overrides, Profile};

    fn plan(workload: &str, engine: &str) -> Result<Plan, ProfileError> {
        let text = format!(
            "name = \"t\"\n[slo]\nttft_ms = 100\n[load]\npoints = [1]\nrequests_per_trial = 3\n\
             [workload]\n{workload}\n[engines.a]\n{engine}\n"
        );
        Profile::parse(&text, "p.toml")?.into_plan("p.toml", &Overrides::default())
    }

    const SYNTHETIC: &str = "input_tokens = 10\noutput_tokens = 5";
    const URL: &str = "url = \"http://127.0.0.1:1\"";

    #[test]
    fn a_table_of_weights_becomes_the_mix() {
        let p = plan(
            &format!("{SYNTHETIC}\n[workload.adapters]\nlora-a = 3\nlora-b = 1.0\nbase = 1"),
            URL,
        )
        .unwrap();
        let a = p.adapters.unwrap();
        assert_eq!(
            a.shares(),
            vec![("lora-a", 0.6), ("lora-b", 0.2), ("base", 0.2)]
        );
        assert!(plan(SYNTHETIC, URL).unwrap().adapters.is_none());
    }

    #[test]
    fn bad_tables_say_what_and_where() {
        let e = plan(
            &format!("{SYNTHETIC}\n[workload.adapters]\nlora-a = 0"),
            URL,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("workload.adapters.lora-a") && e.contains("positive"),
            "{e}"
        );
        assert!(e.contains("line 11"), "{e}");
        let e = plan(&format!("{SYNTHETIC}\n[workload.adapters]\n"), URL)
            .unwrap_err()
            .to_string();
        assert!(e.contains("names no adapter"), "{e}");
        let e = plan(
            &format!("{SYNTHETIC}\n[workload.adapters]\n\"a b\" = 1"),
            URL,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("spaces"), "{e}");
        let e = plan(
            &format!("{SYNTHETIC}\n[workload.adapters]\nx = \"heavy\""),
            URL,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 11"), "{e}");
        let e = plan(
            "kind = \"conversation\"\nturns = 2\ninput_tokens = 8\noutput_tokens = 4\n\
             [workload.adapters]\nx = 1",
            URL,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("conversation"), "{e}");
    }

    #[test]
    fn a_vllm_engine_must_serve_the_adapters_it_lists() {
        let engine = "kind = \"vllm\"\nmodel = \"m\"\n\
                      args = [\"--enable-lora\", \"--lora-modules\", \"lora-a=/x\", \
                      '{\"name\": \"lora-b\", \"path\": \"/y\"}', \"--max-loras\", \"2\"]";
        let ok = format!("{SYNTHETIC}\n[workload.adapters]\nlora-a = 1\nlora-b = 1\nbase = 1");
        assert!(plan(&ok, engine).is_ok());
        let e = plan(
            &format!("{SYNTHETIC}\n[workload.adapters]\nlora-c = 1"),
            engine,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("engine `a` serves --lora-modules lora-a, lora-b, not `lora-c`"),
            "{e}"
        );
        let e = plan(
            &format!("{SYNTHETIC}\n[workload.adapters]\nlora-a = 1"),
            "kind = \"vllm\"\nmodel = \"m\"",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("without --enable-lora"), "{e}");
        // The base model alone needs no adapters served.
        let base_only = format!("{SYNTHETIC}\n[workload.adapters]\nbase = 1");
        assert!(plan(&base_only, "kind = \"vllm\"\nmodel = \"m\"").is_ok());
    }

    #[test]
    fn lora_modules_spellings_give_names() {
        let t = lora_modules_table(&[
            "a=/p".into(),
            "b".into(),
            r#"{"name": "c", "path": "/q", "base_model_name": "m"}"#.into(),
        ])
        .unwrap();
        assert_eq!(t.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!(lora_modules_table(&["a".into(), "a=/p".into()])
            .unwrap_err()
            .contains("twice"));
        assert!(lora_modules_table(&["{".into()])
            .unwrap_err()
            .contains("JSON"));
        assert!(lora_modules_table(&["=/p".into()])
            .unwrap_err()
            .contains("empty"));
    }
}
