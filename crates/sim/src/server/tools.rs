//! Tool calls: a chat request that carries `tools` (and a `tool_choice` other than
//! `none`) is answered with one call of a function in the OpenAI shape
//! (`delta.tool_calls`, `finish_reason: "tool_calls"`): the named function of a
//! `tool_choice` object, else the first; its arguments a JSON object with a
//! plausible value for every property of the function's schema, streamed in one
//! piece per answer token (padded with spaces, still valid JSON, so that every
//! answer token carries a piece).
//!
//! A share of calls is made invalid on purpose (`tool_call_invalid_share`,
//! `tool_call_schema_invalid_share` in the config): each request draws a number
//! in [0, 1) from the config's seed and its prompt; below the first share its
//! arguments are cut short before the closing brace (not JSON), below the sum of
//! both they stay JSON but break the schema (the first property with a value of
//! the wrong type, or, for an enum, outside it; a property-less function loses
//! nothing and stays valid).

use serde_json::{Map, Value};

use super::openai::{ApiError, GenerationRequest};
use super::plan::Endpoint;
use crate::config::SimConfig;
use crate::text;

/// The call a request is answered with.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The function's name.
    pub name: String,
    /// Its arguments, a JSON object.
    pub arguments: String,
}

/// The request's tool call, `None` when it asks for none; a malformed `tools` or
/// `tool_choice` is a 400 naming the field. `key` (the prompt's hash) draws
/// whether it is made invalid.
pub(crate) fn tool_call(
    req: &GenerationRequest,
    endpoint: Endpoint,
    config: &SimConfig,
    key: u64,
) -> Result<Option<ToolCall>, ApiError> {
    let tools = match &req.tools {
        Some(t) if !t.is_empty() && endpoint == Endpoint::Chat => t,
        _ => return Ok(None),
    };
    let named = match &req.tool_choice {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s == "auto" || s == "required" => None,
        Some(Value::String(s)) if s == "none" => return Ok(None),
        Some(v) => match v.pointer("/function/name").and_then(Value::as_str) {
            Some(name) => Some(name.to_string()),
            None => {
                return Err(ApiError::bad_param(
                    "tool_choice",
                    "`tool_choice` must be \"none\", \"auto\", \"required\" or \
                     {\"type\": \"function\", \"function\": {\"name\": ...}}",
                ))
            }
        },
    };
    let mut functions = Vec::with_capacity(tools.len());
    for t in tools {
        let f = t.get("function");
        let Some(name) = f.and_then(|f| f.get("name")).and_then(Value::as_str) else {
            return Err(ApiError::bad_param(
                "tools",
                "every entry of `tools` needs `function.name`",
            ));
        };
        functions.push((name, f.and_then(|f| f.get("parameters"))));
    }
    let chosen = match &named {
        Some(n) => functions
            .iter()
            .find(|(name, _)| name == n)
            .ok_or_else(|| {
                ApiError::bad_param("tool_choice", format!("no tool named `{n}` in `tools`"))
            })?,
        None => &functions[0],
    };
    let mut args = arguments(chosen.1);
    let draw = (text::mix(key ^ config.seed ^ 0x7001_CA11) >> 11) as f64 / (1u64 << 53) as f64;
    let invalid = draw < config.tool_call_invalid_share;
    if !invalid && draw < config.tool_call_invalid_share + config.tool_call_schema_invalid_share {
        break_schema(&mut args);
    }
    let mut arguments = Value::Object(args).to_string();
    if invalid {
        arguments.pop();
    }
    Ok(Some(ToolCall {
        name: chosen.0.to_string(),
        arguments,
    }))
}

/// Arguments still JSON but against their schema: the first property's value
/// replaced by one of another type (a number for a string, a string otherwise),
/// which is also outside any enum.
fn break_schema(args: &mut Map<String, Value>) {
    if let Some((_, v)) = args.iter_mut().next() {
        *v = if v.is_string() {
            Value::from(12345)
        } else {
            Value::from("not a number")
        };
    }
}

/// A value for each property of a JSON schema's object: the first of an `enum`,
/// else one of the property's type.
fn arguments(schema: Option<&Value>) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(props) = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    else {
        return out;
    };
    for (name, p) in props {
        let first = p.get("enum").and_then(|e| e.get(0)).cloned();
        let v = first.unwrap_or_else(|| match p.get("type").and_then(Value::as_str) {
            Some("integer") => Value::from(2),
            Some("number") => Value::from(1.5),
            Some("boolean") => Value::from(true),
            Some("array") => Value::Array(Vec::new()),
            Some("object") => Value::Object(Map::new()),
            _ => Value::from(format!("{name} value")),
        });
        out.insert(name.clone(), v);
    }
    out
}

/// `arguments` padded with spaces before its closing brace to at least `bytes`
/// bytes (still the same JSON object).
pub(crate) fn padded(arguments: &str, bytes: usize) -> String {
    let pad = bytes.saturating_sub(arguments.len());
    match arguments.strip_suffix('}') {
        Some(body) if pad > 0 => format!("{body}{}}}", " ".repeat(pad)),
        _ => arguments.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(v: Value) -> GenerationRequest {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_first_or_named_tool_is_called_with_valid_arguments() {
        let tools = json!([
            {"type": "function", "function": {"name": "get_weather", "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}}}},
            {"type": "function", "function": {"name": "f", "parameters": {"type": "object",
                "properties": {"n": {"type": "integer"}}}}}
        ]);
        let config = SimConfig::default();
        let call = |v: Value| tool_call(&req(v), Endpoint::Chat, &config, 7);
        let c = call(json!({"tools": tools})).unwrap().unwrap();
        assert_eq!(c.name, "get_weather");
        let args: Value = serde_json::from_str(&c.arguments).unwrap();
        assert_eq!(args["unit"], "celsius");
        let named =
            json!({"tools": tools, "tool_choice": {"type": "function", "function": {"name": "f"}}});
        let c = call(named).unwrap().unwrap();
        assert_eq!(c.arguments, "{\"n\":2}");
        let p = padded(&c.arguments, 20);
        assert_eq!(p.len(), 20);
        assert_eq!(serde_json::from_str::<Value>(&p).unwrap(), json!({"n": 2}));
        let none = json!({"tools": tools, "tool_choice": "none"});
        assert!(call(none).unwrap().is_none());
        let completions = tool_call(
            &req(json!({"tools": tools})),
            Endpoint::Completions,
            &config,
            7,
        );
        assert!(completions.unwrap().is_none());
        let bad = json!({"tools": [{"type": "function"}]});
        assert!(call(bad).is_err());
    }

    #[test]
    fn shares_of_calls_are_made_invalid_by_seed() {
        let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}}}}]);
        let config = SimConfig {
            tool_call_invalid_share: 0.25,
            tool_call_schema_invalid_share: 0.25,
            ..SimConfig::default()
        };
        let (mut bad_json, mut bad_schema) = (0, 0);
        for key in 0..2000u64 {
            let r = req(json!({"tools": tools}));
            let c = tool_call(&r, Endpoint::Chat, &config, key)
                .unwrap()
                .unwrap();
            assert_eq!(
                c,
                tool_call(&r, Endpoint::Chat, &config, key)
                    .unwrap()
                    .unwrap()
            );
            match serde_json::from_str::<Value>(&c.arguments) {
                Err(_) => bad_json += 1,
                Ok(v) if !v["city"].is_string() => bad_schema += 1,
                Ok(_) => {}
            }
        }
        // 500 expected of each; three binomial standard deviations are 58.
        assert!((440..=560).contains(&bad_json), "{bad_json}");
        assert!((440..=560).contains(&bad_schema), "{bad_schema}");
    }
}
