//! What a report says, on one line each: the names in a report (engines, models,
//! the profile) and its notes came from a server or a file, and a raw newline in
//! one (a model id listed by `/v1/models`, a peer's result file) would start a line
//! of its own in the text output, a fake `Verdict:` say. [`one_line`] shows every
//! control character, newline and tab included, as an escape (`\u{a}`), as goodput's
//! terminal output shows the others; [`report()`] applies it to every string of a
//! report before the text table is written.

use std::borrow::Cow;

use serde_json::Value;

/// `s` with every control character shown as an escape (`\u{a}`).
pub fn one_line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The report with every string in it, and every key, on one line ([`one_line`]);
/// the report itself (borrowed) when none needs it.
pub fn report(r: &report::Report) -> Cow<'_, report::Report> {
    let Ok(mut v) = serde_json::to_value(r) else {
        return Cow::Borrowed(r);
    };
    if !escape(&mut v) {
        return Cow::Borrowed(r);
    }
    serde_json::from_value(v).map_or(Cow::Borrowed(r), Cow::Owned)
}

/// Escapes every string and key under `v`; true when one changed.
fn escape(v: &mut Value) -> bool {
    match v {
        Value::String(s) => match one_line(s) {
            Cow::Owned(o) => {
                *s = o;
                true
            }
            Cow::Borrowed(_) => false,
        },
        Value::Array(items) => items.iter_mut().fold(false, |c, i| escape(i) | c),
        Value::Object(map) => {
            let mut changed = false;
            let entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            for (k, mut val) in entries {
                changed |= escape(&mut val);
                let k = match one_line(&k) {
                    Cow::Owned(o) => {
                        changed = true;
                        o
                    }
                    Cow::Borrowed(_) => k,
                };
                map.insert(k, val);
            }
            changed
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newline_in_a_name_stays_on_its_line() {
        assert_eq!(one_line("m\nVerdict: x\t"), "m\\u{a}Verdict: x\\u{9}");
        assert!(matches!(one_line("plain"), Cow::Borrowed(_)));
    }
}
