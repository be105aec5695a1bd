//! JSON redacted before it is encoded: every string of a value tree, keys
//! included, passes through [`super::text`], so a redaction changes what a string
//! says and never where it ends.

use serde::Serialize;
use serde_json::{Map, Value};

/// Redacts every string of `v`, and every key of its objects (a key that would
/// then repeat another keeps a `#N` suffix, so no entry is lost).
pub fn json_value(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(r) = super::text(s) {
                *s = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(json_value),
        Value::Object(map) => {
            let changed = map
                .keys()
                .any(|k| matches!(super::text(k), std::borrow::Cow::Owned(_)));
            if changed {
                let old = std::mem::take(map);
                let mut new = Map::with_capacity(old.len());
                for (k, val) in old {
                    let mut key = super::text(&k).into_owned();
                    let mut n = 2;
                    while new.contains_key(&key) {
                        key = format!("{}#{n}", super::text(&k));
                        n += 1;
                    }
                    new.insert(key, val);
                }
                *map = new;
            }
            map.values_mut().for_each(json_value);
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `v` as one line of JSON, every string redacted before it is encoded.
pub fn to_json_line<T: Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    let mut value = serde_json::to_value(v)?;
    json_value(&mut value);
    serde_json::to_string(&value)
}

/// `items` as JSON Lines (each line [`to_json_line`], each ended by a newline).
pub fn jsonl<'a, T: Serialize + 'a>(
    items: impl IntoIterator<Item = &'a T>,
) -> serde_json::Result<String> {
    let mut text = String::new();
    for item in items {
        text.push_str(&to_json_line(item)?);
        text.push('\n');
    }
    Ok(text)
}
