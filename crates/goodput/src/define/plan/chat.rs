//! The chat API's reasoning controls (`reasoning_effort`, `chat_template_kwargs`):
//! the workload's given to every engine, an engine's own winning key by key.

use indexmap::IndexMap;

use super::check::Checker;
use crate::define::profile::{Api, EngineSpec, ProfileError, WorkloadSpec};

/// Longest `reasoning_effort` accepted (a word such as `high`).
const MAX_EFFORT_CHARS: usize = 32;

/// Each engine with the workload's controls merged in; refused on an engine that
/// uses the completions API (which has no such fields).
pub(super) fn with_chat_controls(
    check: &Checker,
    workload: &WorkloadSpec,
    mut engines: IndexMap<String, EngineSpec>,
) -> Result<IndexMap<String, EngineSpec>, ProfileError> {
    for (name, e) in &mut engines {
        e.reasoning_effort = e
            .reasoning_effort
            .take()
            .or_else(|| workload.chat().reasoning_effort.clone());
        if let Some(base) = &workload.chat().chat_template_kwargs {
            let own = e.chat_template_kwargs.take().unwrap_or_default();
            let mut merged = base.clone();
            merged.extend(own);
            e.chat_template_kwargs = Some(merged);
        }
        let set = e.reasoning_effort.is_some() || e.chat_template_kwargs.is_some();
        if set && e.api != Api::Chat {
            return Err(check.bad(
                &format!("engines.{name}.api"),
                "reasoning_effort and chat_template_kwargs go with the chat API: \
                 set api = \"chat\""
                    .into(),
            ));
        }
        if let Some(effort) = &e.reasoning_effort {
            if effort.is_empty() || effort.chars().count() > MAX_EFFORT_CHARS {
                return Err(check.bad(
                    &format!("engines.{name}.reasoning_effort"),
                    format!("`{effort}` must be a word of 1 to {MAX_EFFORT_CHARS} characters"),
                ));
            }
        }
    }
    Ok(engines)
}

/// The fields an engine's chat requests carry beside the messages: its reasoning
/// controls and the run's tools.
pub fn chat_fields(
    e: &EngineSpec,
    tools: Option<&super::tools::ToolUse>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    if let Some(t) = tools {
        m.insert("tools".into(), t.definitions.clone());
        m.insert("tool_choice".into(), t.choice.clone().into());
    }
    if let Some(effort) = &e.reasoning_effort {
        m.insert("reasoning_effort".into(), effort.clone().into());
    }
    if let Some(kwargs) = &e.chat_template_kwargs {
        m.insert("chat_template_kwargs".into(), kwargs.clone().into());
    }
    m
}

#[cfg(test)]
mod tests {
    use crate::define::plan::{chat_fields, Plan};
    use crate::define::profile::{Overrides, Profile, ProfileError};

    const BASE: &str = "name = \"t\"\n[slo]\nttfat_ms = 2000\n[load]\npoints = [1]\n\
        requests_per_trial = 3\n[workload]\ninput_tokens = 10\noutput_tokens = 5\n";

    fn plan(workload: &str, engines: &str) -> Result<Plan, ProfileError> {
        Profile::parse(&format!("{BASE}{workload}\n{engines}"), "p.toml")?
            .into_plan("p.toml", &Overrides::default())
    }

    #[test]
    fn the_workload_gives_its_controls_and_an_engine_wins_key_by_key() {
        let p = plan(
            "reasoning_effort = \"low\"\nchat_template_kwargs = { enable_thinking = true, x = 1 }",
            "[engines.on]\nurl = \"http://127.0.0.1:1\"\napi = \"chat\"\n\
             [engines.off]\nurl = \"http://127.0.0.1:1\"\napi = \"chat\"\n\
             reasoning_effort = \"high\"\nchat_template_kwargs = { enable_thinking = false }\n",
        )
        .unwrap();
        assert_eq!(p.slo.bound(report::SloMetric::Ttfat), Some(2000.0));
        let on = serde_json::Value::Object(chat_fields(&p.engines["on"], None));
        assert_eq!(
            on,
            serde_json::json!({"reasoning_effort": "low",
                "chat_template_kwargs": {"enable_thinking": true, "x": 1}})
        );
        let off = serde_json::Value::Object(chat_fields(&p.engines["off"], None));
        assert_eq!(
            off,
            serde_json::json!({"reasoning_effort": "high",
                "chat_template_kwargs": {"enable_thinking": false, "x": 1}})
        );
    }

    #[test]
    fn slo_flag_spells_ttfat() {
        let s = crate::define::profile::parse_slo("ttfat:2000,ttft=500").unwrap();
        assert_eq!(
            (
                s.bound(report::SloMetric::Ttfat),
                s.bound(report::SloMetric::Ttft)
            ),
            (Some(2000.0), Some(500.0))
        );
        assert!(crate::define::profile::parse_slo("ttfat:1,ttfat:2").is_err());
        let e = crate::define::profile::parse_slo("ttfa:1").unwrap_err();
        assert!(e.to_string().contains("ttfat"), "{e}");
    }

    #[test]
    fn the_controls_need_the_chat_api_and_a_word() {
        let e = plan(
            "reasoning_effort = \"low\"",
            "[engines.a]\nurl = \"http://127.0.0.1:1\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("engines.a.api") && e.contains("chat"), "{e}");
        let e = plan(
            "",
            "[engines.a]\nurl = \"http://127.0.0.1:1\"\napi = \"chat\"\nreasoning_effort = \"\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("reasoning_effort"), "{e}");
        // Without controls, the completions API stays fine.
        let p = plan("", "[engines.a]\nurl = \"http://127.0.0.1:1\"\n").unwrap();
        assert!(chat_fields(&p.engines["a"], None).is_empty());
    }
}
