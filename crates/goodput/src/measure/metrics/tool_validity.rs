//! Whether a tool call's arguments are valid: **valid JSON** when they parse as
//! JSON; **valid against the schema** when, besides, the call names a function of
//! goodput's catalogue ([`crate::define::tools`]) that its request offered and
//! the arguments satisfy that function's parameters schema (JSON Schema, checked
//! by the `jsonschema` crate: types, `enum`, `required`). The schemas are compiled
//! once per process; a record from before the offered functions were kept
//! (`tools_offered` absent) is judged against the whole catalogue.

use std::sync::OnceLock;

use serde_json::Value;

use crate::drive::record::tool_calls::ToolCall;

/// The catalogue's functions in order: name and compiled parameters schema
/// (`None` if one failed to compile: then no call to it is schema-valid).
fn validators() -> &'static [(&'static str, Option<jsonschema::Validator>)] {
    static V: OnceLock<Vec<(&'static str, Option<jsonschema::Validator>)>> = OnceLock::new();
    V.get_or_init(|| {
        crate::define::tools::catalogue()
            .map(|(name, schema)| (name, jsonschema::validator_for(&schema).ok()))
            .collect()
    })
}

/// What a call's arguments are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Validity {
    /// They parse as JSON.
    pub json: bool,
    /// And they are valid against the schema of the function named, which the
    /// request offered.
    pub schema: bool,
}

/// Judges one call kept whole (the caller leaves out calls cut short); `offered`
/// is the request's mask of the catalogue's functions.
pub fn judge(call: &ToolCall, offered: Option<u32>) -> Validity {
    let Ok(args) = serde_json::from_str::<Value>(&call.arguments) else {
        return Validity::default();
    };
    let schema = validators()
        .iter()
        .enumerate()
        .find(|(_, (name, _))| *name == call.name)
        .filter(|(i, _)| offered.is_none_or(|m| *i < 32 && m & (1 << i) != 0))
        .and_then(|(_, (_, v))| v.as_ref())
        .is_some_and(|v| v.is_valid(&args));
    Validity { json: true, schema }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            name: name.into(),
            arguments: arguments.into(),
            ..ToolCall::default()
        }
    }

    #[test]
    fn arguments_are_judged_as_json_then_against_the_named_schema() {
        let both = Validity {
            json: true,
            schema: true,
        };
        let json_only = Validity {
            json: true,
            schema: false,
        };
        let good = r#"{"city": "Oslo", "unit": "celsius"}"#;
        assert_eq!(judge(&call("get_weather", good), None), both);
        // The catalogue's first function is get_weather: offered by bit 0.
        assert_eq!(judge(&call("get_weather", good), Some(1)), both);
        assert_eq!(judge(&call("get_weather", good), Some(2)), json_only);
        for (name, args) in [
            ("get_weather", r#"{"city": "Oslo"}"#),
            ("get_weather", r#"{"city": 12, "unit": "celsius"}"#),
            ("get_weather", r#"{"city": "Oslo", "unit": "kelvin"}"#),
            ("no_such_function", "{}"),
        ] {
            assert_eq!(judge(&call(name, args), None), json_only, "{name} {args}");
        }
        assert_eq!(
            judge(&call("get_weather", r#"{"city": "Os"#), None),
            Validity::default()
        );
    }
}
