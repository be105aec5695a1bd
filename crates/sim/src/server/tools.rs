//! Tool calls: a chat request that carries `tools` (and a `tool_choice` other than
//! `none`) is answered with one call of a function in the OpenAI shape
//! (`delta.tool_calls`, `finish_reason: "tool_calls"`): the named function of a
//! `tool_choice` object, else the first; its arguments a JSON object with a
//! plausible value for every property of the function's schema, streamed in one
//! piece per answer token (padded with spaces, still valid JSON, so that every
//! answer token carries a piece).

use serde_json::{Map, Value};

use super::openai::{ApiError, GenerationRequest};
use super::plan::Endpoint;

/// The call a request is answered with.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The function's name.
    pub name: String,
    /// Its arguments, a JSON object.
    pub arguments: String,
}

/// The request's tool call, `None` when it asks for none; a malformed `tools` or
/// `tool_choice` is a 400 naming the field.
pub(crate) fn tool_call(
    req: &GenerationRequest,
    endpoint: Endpoint,
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
    Ok(Some(ToolCall {
        name: chosen.0.to_string(),
        arguments: Value::Object(arguments(chosen.1)).to_string(),
    }))
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
        let c = tool_call(&req(json!({"tools": tools})), Endpoint::Chat)
            .unwrap()
            .unwrap();
        assert_eq!(c.name, "get_weather");
        let args: Value = serde_json::from_str(&c.arguments).unwrap();
        assert_eq!(args["unit"], "celsius");
        let named =
            json!({"tools": tools, "tool_choice": {"type": "function", "function": {"name": "f"}}});
        let c = tool_call(&req(named), Endpoint::Chat).unwrap().unwrap();
        assert_eq!(c.arguments, "{\"n\":2}");
        let p = padded(&c.arguments, 20);
        assert_eq!(p.len(), 20);
        assert_eq!(serde_json::from_str::<Value>(&p).unwrap(), json!({"n": 2}));
        let none = json!({"tools": tools, "tool_choice": "none"});
        assert!(tool_call(&req(none), Endpoint::Chat).unwrap().is_none());
        assert!(
            tool_call(&req(json!({"tools": tools})), Endpoint::Completions)
                .unwrap()
                .is_none()
        );
        let bad = json!({"tools": [{"type": "function"}]});
        assert!(tool_call(&req(bad), Endpoint::Chat).is_err());
    }
}
