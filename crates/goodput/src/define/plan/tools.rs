//! `[workload] tools = N` and `tool_choice`: the function definitions every chat
//! request carries, N of a catalogue of realistic ones (JSON schemas), chosen and
//! ordered by the run's seed, the same for every engine and trial.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::{json, Value};

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

/// One function: name, description, and its parameters (name, JSON type,
/// description, an `enum` where the value is one of a few).
type Param = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
);
const CATALOGUE: [(&str, &str, &[Param]); 12] = [
    (
        "get_weather",
        "Current weather in a city",
        &[
            ("city", "string", "City name, e.g. Oslo", &[]),
            (
                "unit",
                "string",
                "Temperature unit",
                &["celsius", "fahrenheit"],
            ),
        ],
    ),
    (
        "search_flights",
        "Search flights between two airports",
        &[
            (
                "origin",
                "string",
                "IATA code of the departure airport",
                &[],
            ),
            (
                "destination",
                "string",
                "IATA code of the arrival airport",
                &[],
            ),
            ("date", "string", "Departure date, YYYY-MM-DD", &[]),
            ("passengers", "integer", "Number of passengers", &[]),
        ],
    ),
    (
        "book_hotel",
        "Book a hotel room",
        &[
            ("city", "string", "City of the hotel", &[]),
            ("check_in", "string", "Check-in date, YYYY-MM-DD", &[]),
            ("nights", "integer", "Number of nights", &[]),
        ],
    ),
    (
        "get_stock_price",
        "Latest price of a stock",
        &[("ticker", "string", "Ticker symbol, e.g. NVDA", &[])],
    ),
    (
        "send_email",
        "Send an email",
        &[
            ("to", "string", "Recipient address", &[]),
            ("subject", "string", "Subject line", &[]),
            ("body", "string", "Message text", &[]),
        ],
    ),
    (
        "create_calendar_event",
        "Add an event to the calendar",
        &[
            ("title", "string", "Event title", &[]),
            ("start", "string", "Start time, ISO 8601", &[]),
            ("duration_minutes", "integer", "Length in minutes", &[]),
        ],
    ),
    (
        "convert_currency",
        "Convert an amount between currencies",
        &[
            ("amount", "number", "Amount to convert", &[]),
            (
                "from",
                "string",
                "ISO 4217 code of the source currency",
                &[],
            ),
            ("to", "string", "ISO 4217 code of the target currency", &[]),
        ],
    ),
    (
        "search_web",
        "Search the web",
        &[
            ("query", "string", "Search terms", &[]),
            ("max_results", "integer", "Most results to return", &[]),
        ],
    ),
    (
        "get_directions",
        "Route between two places",
        &[
            ("from", "string", "Start address", &[]),
            ("to", "string", "Destination address", &[]),
            (
                "mode",
                "string",
                "Travel mode",
                &["driving", "walking", "transit"],
            ),
        ],
    ),
    (
        "translate_text",
        "Translate text",
        &[
            ("text", "string", "Text to translate", &[]),
            (
                "target_language",
                "string",
                "ISO 639-1 code of the target language",
                &[],
            ),
        ],
    ),
    (
        "lookup_order",
        "Status of a customer order",
        &[("order_id", "string", "Order number", &[])],
    ),
    (
        "set_thermostat",
        "Set a room's temperature",
        &[
            ("room", "string", "Room name", &[]),
            (
                "temperature",
                "number",
                "Target temperature in celsius",
                &[],
            ),
        ],
    ),
];

/// Most tools a request carries: the catalogue's size.
pub const MAX_TOOLS: u32 = CATALOGUE.len() as u32;

/// `count` function definitions in the OpenAI `tools` shape, chosen and ordered
/// by `seed`.
pub fn definitions(count: u32, seed: u64) -> Value {
    let mut order: Vec<usize> = (0..CATALOGUE.len()).collect();
    order.shuffle(&mut StdRng::seed_from_u64(seed ^ 0x7001_5EED));
    let tools: Vec<Value> = order
        .into_iter()
        .take(count as usize)
        .map(|i| {
            let (name, description, params) = CATALOGUE[i];
            let mut properties = serde_json::Map::new();
            for (p, ty, what, choices) in params {
                let mut schema = json!({"type": ty, "description": what});
                if !choices.is_empty() {
                    schema["enum"] = json!(choices);
                }
                properties.insert((*p).into(), schema);
            }
            let required: Vec<&str> = params.iter().map(|p| p.0).collect();
            json!({"type": "function", "function": {
                "name": name,
                "description": description,
                "parameters": {"type": "object", "properties": properties, "required": required},
            }})
        })
        .collect();
    Value::Array(tools)
}

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
