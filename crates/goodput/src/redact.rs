//! No secret in any output: what goodput writes (report, requests file, HTML,
//! fitted engines, merged shards, vLLM-format results) and prints passes through
//! [`text`], which replaces every secret goodput knows, and the secret-shaped parts
//! of any text, by `***`.
//!
//! JSON is redacted before it is encoded, never as encoded text: [`json_value`]
//! redacts every string (and key) of the value tree, which is then written, so a
//! redaction can only change what a string says, never where it ends. Text cut to a
//! length before it is kept (an error body's start, an excerpt) is redacted first,
//! then cut ([`cut`], [`cut_chars`]), so a secret across the cut keeps no part.
//!
//! What goodput knows ([`remember`]): every API key it read (`api_key_env`), the
//! value of every environment variable whose name is secret ([`is_secret_name`]),
//! its own ([`remember_environment`], which launched engines inherit) and those a
//! profile passes to an engine, and what a profile's engines carry in their
//! arguments and URLs ([`remember_argv`], [`remember_shaped`]): the value after a
//! secret flag (`"--api-key", "X"` as two elements too), a URL's password and its
//! secret query values. An engine that prints its arguments (vLLM does, API key
//! included), a shell that echoes `$HF_TOKEN`, a server that echoes
//! `Authorization` in a 401 body: all of it is text goodput may keep, so it is
//! redacted where it is written, not where it is read.
//!
//! What looks secret in any text: `Bearer X` and `Authorization: X` (and
//! `Cookie:`, `X-Api-Key:`), the user information of a URL (`http://user:KEY@host`
//! -> `http://***@host`), and the value after a secret flag, assignment or query
//! parameter (`--api-key X`, `HF_TOKEN=X`, `?access_token=X`, `"token": "X"`), a
//! name being secret by [`is_secret_name`], the one rule `drive::engine::command`
//! uses for command lines too.
//!
//! The known values are process-wide (a registry, not a parameter): they are
//! learnt where a key is read, deep in an engine's launch, and needed wherever
//! text leaves the process.

use std::borrow::Cow;
use std::path::Path;
use std::sync::{LazyLock, RwLock};

use regex::{Captures, Regex};

mod json;
mod names;

pub use json::{json_value, jsonl, to_json_line};
pub use names::{is_secret_env, is_secret_flag, is_secret_name};

/// What a redacted secret reads.
pub const REDACTED: &str = "***";

/// Shortest value taken as a secret: shorter ones (`1`, `true`) would redact
/// ordinary words.
pub const MIN_SECRET_LEN: usize = 6;

static KNOWN: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Remembers `value` as a secret (trimmed; ignored when shorter than
/// [`MIN_SECRET_LEN`]).
pub fn remember(value: &str) {
    let v = value.trim();
    if v.len() < MIN_SECRET_LEN {
        return;
    }
    let mut known = KNOWN.write().unwrap_or_else(|e| e.into_inner());
    if !known.iter().any(|k| k == v) {
        known.push(v.to_string());
        // Longest first, so that a secret containing another is replaced whole.
        known.sort_by_key(|k| std::cmp::Reverse(k.len()));
    }
}

/// Remembers the value of every variable of this process's environment whose
/// name is secret.
pub fn remember_environment() {
    for (k, v) in std::env::vars_os() {
        if let (Some(k), Some(v)) = (k.to_str(), v.to_str()) {
            if is_secret_env(k) {
                remember(v);
            }
        }
    }
}

/// Remembers the secrets of an argument list: the element after a secret flag
/// (`"--api-key", "X"`; not one that is itself a flag), the value of
/// `--secret-flag=X`, and every secret-shaped value inside an element (a shell
/// line's `HF_TOKEN=X`, a URL's password).
pub fn remember_argv(args: &[String]) {
    let mut next = false;
    for a in args {
        if next && !a.starts_with("--") {
            remember(a);
        }
        next = false;
        match a.split_once('=') {
            Some((flag, value)) if is_secret_flag(flag) => remember(value),
            Some(_) => {}
            None => next = is_secret_flag(a),
        }
        remember_shaped(a);
    }
}

/// Remembers every value [`text`] would redact by its shape in `s` (a URL's
/// password and secret query values, `--api-key X` within a shell line), so that
/// it is redacted wherever else it appears, whatever surrounds it there.
pub fn remember_shaped(s: &str) {
    for c in names::VALUED.iter().flat_map(|re| re.captures_iter(s)) {
        if let Some(v) = c.name("value") {
            if c.name("name").is_none_or(|n| is_secret_name(n.as_str())) {
                remember(v.as_str());
            }
        }
    }
}

static AUTHORIZATION: LazyLock<Regex> = LazyLock::new(|| {
    // `Authorization: Basic abc`, `authorization=xyz`, `"Authorization":"Bearer ..."`,
    // `Cookie: sid=abc`, `X-Api-Key: abc`.
    Regex::new(&format!(
        r#"(?i)((?:proxy-)?(?:authorization|x-api-key|set-cookie|cookie)"?\s*[:=]\s*"?)((?:bearer|basic|token)\s+)?{}"#,
        names::VALUE
    ))
    .expect("a valid static pattern")
});

static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{4,}").expect("a valid static pattern")
});

/// `text` with every known secret, and everything secret-shaped, replaced by `***`.
pub fn text(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    {
        let known = KNOWN.read().unwrap_or_else(|e| e.into_inner());
        for k in known.iter() {
            if out.contains(k.as_str()) {
                out = Cow::Owned(out.replace(k.as_str(), REDACTED));
            }
        }
    }
    let mut apply = |re: &Regex, with: &dyn Fn(&Captures) -> String| {
        if let Cow::Owned(s) = re.replace_all(&out, |c: &Captures| with(c)) {
            out = Cow::Owned(s);
        }
    };
    apply(&AUTHORIZATION, &|c| {
        format!("{}{}{REDACTED}", &c[1], c.get(2).map_or("", |m| m.as_str()))
    });
    apply(&BEARER, &|c| format!("{} {REDACTED}", &c[1]));
    for re in names::VALUED.iter() {
        apply(re, &|c| {
            let whole = c.get(0).map_or("", |m| m.as_str());
            let (Some(value), secret) = (
                c.name("value"),
                c.name("name").is_none_or(|n| is_secret_name(n.as_str())),
            ) else {
                return whole.to_string();
            };
            // A value already redacted (`Bearer ***` after `"authorization": `) stays.
            let v = value.as_str();
            let done = v == REDACTED || v.split_once(' ').is_some_and(|(_, r)| r == REDACTED);
            if !secret || done {
                return whole.to_string();
            }
            let start = value.start() - c.get(0).map_or(0, |m| m.start());
            format!(
                "{}{REDACTED}{}",
                &whole[..start],
                &whole[start + value.len()..]
            )
        });
    }
    out
}

/// `s` redacted, then cut to at most `max` bytes (at a character boundary): a
/// secret across the cut keeps none of its characters.
pub fn cut(s: &str, max: usize) -> String {
    let r = text(s);
    let mut end = r.len().min(max);
    while !r.is_char_boundary(end) {
        end -= 1;
    }
    r[..end].to_string()
}

/// `s` redacted, then cut to at most `max` characters.
pub fn cut_chars(s: &str, max: usize) -> String {
    text(s).chars().take(max).collect()
}

/// Writes a report atomically, redacted: every string of it redacted before it is
/// encoded (see [`report::write_report_atomic`]: the text is read back first, and
/// nothing is written when it cannot be).
pub fn write_report(path: &Path, r: &report::Report) -> Result<(), report::ReportError> {
    let fail = |error| report::ReportError::Serialize {
        path: path.to_path_buf(),
        error,
    };
    let mut value = serde_json::to_value(r).map_err(fail)?;
    json_value(&mut value);
    let json = report::io::to_json_of(&value).map_err(fail)?;
    report::io::parse_report(&json).map_err(fail)?;
    report::io::write_atomic(path, json.as_bytes())
}

/// A copy of `r` with every string redacted (`r` itself when it cannot be read
/// back, which [`write_report`] refuses anyway).
pub fn report(r: &report::Report) -> report::Report {
    let Ok(mut value) = serde_json::to_value(r) else {
        return r.clone();
    };
    json_value(&mut value);
    serde_json::from_value(value).unwrap_or_else(|_| r.clone())
}

/// Writes the HTML page of a report, drawn from the redacted report (so nothing
/// the page derives from a string shows a secret), then redacted as text.
pub fn write_html(path: &Path, r: &report::Report) -> Result<(), report::ReportError> {
    write_file(path, &goodput_render::html(&report(r)))
}

/// Writes a text file atomically, redacted.
pub fn write_file(path: &Path, contents: &str) -> Result<(), report::ReportError> {
    report::io::write_atomic(path, text(contents).as_bytes())
}

#[cfg(test)]
mod tests;
