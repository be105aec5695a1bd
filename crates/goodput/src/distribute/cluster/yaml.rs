//! A JSON value written as block YAML, for Kubernetes manifests. Every string is
//! written as a JSON string literal, which is also a valid YAML double-quoted
//! scalar, so no value needs YAML's own quoting rules (`no`, `1e3`, `: `...). The
//! one maintained serde YAML crate (`serde_yaml`) is deprecated, and this is all
//! goodput needs of YAML: it never reads it.

use serde_json::Value;

/// `v` as a YAML document (without the `---` line).
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    block(v, 0, &mut out);
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Object(m) if m.is_empty() => "{}".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        // Strings as JSON literals; numbers, booleans and null as JSON writes them.
        other => other.to_string(),
    }
}

/// A key as written: bare when it is a plain name (`metadata`, `nvidia.com/gpu`),
/// else a JSON string literal.
fn key(k: &str) -> String {
    let plain = k.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'));
    if plain {
        k.to_string()
    } else {
        Value::String(k.to_string()).to_string()
    }
}

fn is_block(v: &Value) -> bool {
    matches!(v, Value::Object(m) if !m.is_empty()) || matches!(v, Value::Array(a) if !a.is_empty())
}

fn block(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, val) in m {
                let key = key(k);
                if is_block(val) {
                    out.push_str(&format!("{pad}{key}:\n"));
                    let inner = if val.is_array() { indent } else { indent + 2 };
                    block(val, inner, out);
                } else {
                    out.push_str(&format!("{pad}{key}: {}\n", scalar(val)));
                }
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for item in a {
                if is_block(item) {
                    // The item's first line follows `- `, the rest align under it.
                    let mut inner = String::new();
                    block(item, indent + 2, &mut inner);
                    let trimmed = inner.trim_start_matches(' ');
                    out.push_str(&format!("{pad}- {trimmed}"));
                } else {
                    out.push_str(&format!("{pad}- {}\n", scalar(item)));
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", scalar(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::to_yaml;
    use serde_json::json;

    #[test]
    fn nested_maps_and_lists_as_block_yaml() {
        let v = json!({
            "a": 1, "b": "no", "c": {"d": [1, {"e": "x: y", "f": []}], "g": {}},
            "h": [[1, 2]], "i": null, "nvidia.com/gpu": 1, "a b": true
        });
        assert_eq!(
            to_yaml(&v),
            "a: 1\nb: \"no\"\nc:\n  d:\n  - 1\n  - e: \"x: y\"\n    f: []\n  g: {}\nh:\n- - 1\n  - 2\ni: null\nnvidia.com/gpu: 1\n\"a b\": true\n"
        );
    }
}
