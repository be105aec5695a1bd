//! `[workload] tools = N` and `tool_choice`: the function definitions every chat
//! request carries, N of a catalogue of realistic ones (JSON schemas,
//! [`crate::define::tools`]), chosen and ordered by the run's seed, the same for
//! every engine and trial.

pub use crate::define::tools::{definitions, MAX_TOOLS};

use serde_json::Value;

use super::check::Checker;
use crate::define::profile::{Api, EngineSpec, ProfileError, WorkloadSpec};
use indexmap::IndexMap;

/// The tools a run's requests carry.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    /// How many function definitions.
    pub count: u32,
    /// `tool_choice`: `auto`, `required` or `none`.
    pub choice: String,
    /// The OpenAI `tools` list.
    pub definitions: Value,
}

/// `tool_choice` values accepted.
const CHOICES: [&str; 3] = ["auto", "required", "none"];

/// The workload's tools, checked: a count of 1 to [`MAX_TOOLS`], a known
/// `tool_choice`, every engine on the chat API, and no conversation workload.
pub(super) fn check_tools(
    check: &Checker,
    workload: &WorkloadSpec,
    engines: &IndexMap<String, EngineSpec>,
    seed: u64,
) -> Result<Option<ToolUse>, ProfileError> {
    let chat = workload.chat();
    let Some(count) = chat.tools else {
        if chat.tool_choice.is_some() {
            return Err(check.bad("workload.tool_choice", "goes with `tools = N`".into()));
        }
        return Ok(None);
    };
    let count = check.count("workload.tools", count, 1..=u64::from(MAX_TOOLS))?;
    let choice = chat.tool_choice.clone().unwrap_or_else(|| "auto".into());
    if !CHOICES.contains(&choice.as_str()) {
        return Err(check.bad(
            "workload.tool_choice",
            format!("`{choice}` is not one of auto, required or none"),
        ));
    }
    if matches!(workload, WorkloadSpec::Conversation(_)) {
        return Err(check.bad(
            "workload.tools",
            "is not for a conversation workload (a tool call's turn needs the tool's result)"
                .into(),
        ));
    }
    if let Some((name, _)) = engines.iter().find(|(_, e)| e.api != Api::Chat) {
        return Err(check.bad(
            "workload.tools",
            format!(
                "tool calls go with the chat API: engine `{name}` uses completions; \
                 set api = \"chat\""
            ),
        ));
    }
    Ok(Some(ToolUse {
        count,
        choice,
        definitions: definitions(count, seed),
    }))
}

/// `[slo] min_valid_tool_calls` and `min_schema_valid_tool_calls`: each a share in
/// (0, 1], and only where requests ask for tool calls.
pub(super) fn check_requirements(
    check: &Checker,
    slo: &report::Slo,
    calls_asked: bool,
) -> Result<(), ProfileError> {
    for (key, _, v) in slo.tool_calls.iter() {
        let field = format!("slo.{key}");
        check.number(&field, v, 1e-6..=1.0, "a share of tool calls (0.99 = 99%)")?;
        if !calls_asked {
            return Err(check.bad(
                &field,
                "judges the tool calls' arguments: it needs `[workload] tools = N` (and a \
                 tool_choice other than \"none\")"
                    .into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::define::plan::{chat_fields, Plan};
    use crate::define::profile::{Overrides, Profile};
    use crate::define::requests::Builder;

    fn plan(slo: &str, workload: &str) -> Result<Plan, ProfileError> {
        let text = format!(
            "name = \"t\"\n[slo]\n{slo}\n[load]\npoints = [1]\nrequests_per_trial = 3\n\
             [workload]\ninput_tokens = 10\noutput_tokens = 5\n{workload}\n\
             [engines.a]\nurl = \"http://127.0.0.1:1\"\napi = \"chat\"\n"
        );
        Profile::parse(&text, "p.toml")?.into_plan("p.toml", &Overrides::default())
    }

    fn builder(p: &Plan) -> Builder {
        Builder {
            workload: p.workload.clone(),
            model: "m".into(),
            api: Api::Chat,
            tokens_per_word: 1.0,
            chat_fields: chat_fields(&p.engines["a"], p.tools.as_ref()),
            salt: None,
            images: None,
        }
    }

    #[test]
    fn the_profile_bounds_ttftc_only_with_tools_and_bodies_carry_them() {
        let p = plan("ttftc_ms = 500", "tools = 3\ntool_choice = \"required\"").unwrap();
        assert_eq!(p.slo.bound(report::SloMetric::Ttftc), Some(500.0));
        let b = builder(&p);
        let req = &b.build(1, p.seed, 0)[0];
        let body: Value = serde_json::from_slice(&req.body).unwrap();
        assert_eq!(body["tools"].as_array().map(Vec::len), Some(3));
        assert_eq!(body["tool_choice"], "required");
        assert!(
            body.get("min_tokens").is_none(),
            "a tool call ends the turn"
        );
        assert_eq!((req.asked.tools, req.asked.exact), (Some(3), false));
        // `none`: the tools go along, no call is asked for.
        let p = plan("ttft_ms = 500", "tools = 1\ntool_choice = \"none\"").unwrap();
        assert_eq!(builder(&p).build(1, p.seed, 0)[0].asked.tools, None);
        for workload in ["", "tools = 1\ntool_choice = \"none\""] {
            let e = plan("ttftc_ms = 500", workload).unwrap_err().to_string();
            assert!(e.contains("slo.ttftc_ms") && e.contains("tools"), "{e}");
        }
        let e = plan("ttft_ms = 500", "tools = 2\ntool_choice = \"any\"").unwrap_err();
        assert!(e.to_string().contains("workload.tool_choice"), "{e}");
        let e = plan("ttft_ms = 500", "tool_choice = \"auto\"").unwrap_err();
        assert!(e.to_string().contains("goes with `tools"), "{e}");
    }

    #[test]
    fn a_valid_share_is_required_only_with_tool_calls() {
        let p = plan(
            "ttft_ms = 500\nmin_valid_tool_calls = 0.99\nmin_schema_valid_tool_calls = 0.9",
            "tools = 2",
        )
        .unwrap();
        assert_eq!(p.slo.tool_calls.valid, Some(0.99));
        assert_eq!(p.slo.tool_calls.schema_valid, Some(0.9));
        let e = plan("ttft_ms = 500\nmin_valid_tool_calls = 0.99", "")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("slo.min_valid_tool_calls") && e.contains("tools = N"),
            "{e}"
        );
        let e = plan("ttft_ms = 500\nmin_valid_tool_calls = 1.5", "tools = 2")
            .unwrap_err()
            .to_string();
        assert!(e.contains("slo.min_valid_tool_calls"), "{e}");
    }

    #[test]
    fn definitions_are_seeded_and_well_formed() {
        let a = definitions(3, 1);
        assert_eq!(a, definitions(3, 1));
        assert_ne!(definitions(12, 1), definitions(12, 2));
        let tools = a.as_array().unwrap();
        assert_eq!(tools.len(), 3);
        for t in tools {
            assert_eq!(t["type"], "function");
            let params = &t["function"]["parameters"];
            assert_eq!(params["type"], "object");
            assert!(!params["required"].as_array().unwrap().is_empty());
        }
    }
}
