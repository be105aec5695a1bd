//! No secret in any output: what goodput writes (report, requests file, HTML,
//! fitted engines, merged shards) and prints passes through [`text`], which
//! replaces every secret goodput knows, and the secret-shaped parts of any text,
//! by `***`.
//!
//! What goodput knows ([`remember`]): every API key it read (`api_key_env`), and
//! the value of every environment variable whose name looks secret (`*KEY*`,
//! `*TOKEN*`, `*SECRET*`, `*PASSWORD*`), its own ([`remember_environment`], which
//! launched engines inherit) and those a profile passes to an engine. An engine
//! that prints its arguments (vLLM does, API key included), a shell that echoes
//! `$HF_TOKEN`, a server that echoes `Authorization` in a 401 body: all of it is
//! text goodput may keep, so it is redacted where it is written, not where it is
//! read.
//!
//! What looks secret in any text: `Bearer X` and `Authorization: X`, the user
//! information of a URL (`http://user:KEY@host` -> `http://***@host`), and the
//! value after a secret-looking flag or assignment (`--api-key X`, `HF_TOKEN=X`).
//!
//! The known values are process-wide (a registry, not a parameter): they are
//! learnt where a key is read, deep in an engine's launch, and needed wherever
//! text leaves the process.

use std::borrow::Cow;
use std::path::Path;
use std::sync::{LazyLock, RwLock};

use regex::Regex;

/// What a redacted secret reads.
pub const REDACTED: &str = "***";

/// Whether an environment variable holds a secret: its name contains `KEY`,
/// `TOKEN`, `SECRET` or `PASSWORD`.
pub fn is_secret_env(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD"]
        .iter()
        .any(|w| upper.contains(w))
}

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
/// name looks secret.
pub fn remember_environment() {
    for (k, v) in std::env::vars_os() {
        if let (Some(k), Some(v)) = (k.to_str(), v.to_str()) {
            if is_secret_env(k) {
                remember(v);
            }
        }
    }
}

/// A secret-looking word of a flag or variable name (`--api-key`, `HF_TOKEN`):
/// one of its `-`/`_`-separated words is one of these (so `--max-num-batched-tokens`
/// is not), as [`crate::drive::engine::command`] decides for command lines.
const SECRET_WORD: &str = "(?:key|token|secret|password|apikey)";

static AUTHORIZATION: LazyLock<Regex> = LazyLock::new(|| {
    // `Authorization: Basic abc`, `authorization=xyz`, `"Authorization":"Bearer ..."`.
    Regex::new(r#"(?i)(authorization"?\s*[:=]\s*"?)((?:bearer|basic|token)\s+)?[^\s"',;]+"#)
        .expect("a valid static pattern")
});

static PATTERNS: LazyLock<[(Regex, &'static str); 4]> = LazyLock::new(|| {
    let re = |p: String| Regex::new(&p).expect("a valid static pattern");
    let w = SECRET_WORD;
    [
        (
            re(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{4,}".into()),
            "${1} ***",
        ),
        // User information of a URL.
        (
            re(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@".into()),
            "${1}***@",
        ),
        // `--api-key X`, `--api-key=X`, `--hf-token X`: a flag, so a dash that starts
        // a word (not the one in `2928-token`).
        (
            re(format!(
                r#"(?i)(^|[\s"'(\[,])(--?(?:[a-z0-9]+[-_])*{w}(?:[-_][a-z0-9]+)*(?:=|\s+))[^\s"',;]+"#
            )),
            "${1}${2}***",
        ),
        // `HF_TOKEN=X`, `api_key=X`.
        (
            re(format!(
                r#"(?i)(\b(?:[a-z0-9]+_)*{w}(?:_[a-z0-9]+)*=)[^\s"',;]+"#
            )),
            "${1}***",
        ),
    ]
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
    if let Cow::Owned(s) = AUTHORIZATION.replace_all(&out, |c: &regex::Captures| {
        format!("{}{}{REDACTED}", &c[1], c.get(2).map_or("", |m| m.as_str()))
    }) {
        out = Cow::Owned(s);
    }
    for (re, with) in PATTERNS.iter() {
        if let Cow::Owned(s) = re.replace_all(&out, *with) {
            out = Cow::Owned(s);
        }
    }
    out
}

/// Writes a report atomically, redacted (see [`report::write_report_atomic`]: the
/// text is read back first, and nothing is written when it cannot be).
pub fn write_report(path: &Path, r: &report::Report) -> Result<(), report::ReportError> {
    let fail = |error| report::ReportError::Serialize {
        path: path.to_path_buf(),
        error,
    };
    let json = report::io::to_json(r).map_err(fail)?;
    let json = text(&json);
    report::io::parse_report(&json).map_err(fail)?;
    crate::redact::write_file(path, &json)
}

/// Writes a text file atomically, redacted.
pub fn write_file(path: &Path, contents: &str) -> Result<(), report::ReportError> {
    report::io::write_atomic(path, text(contents).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_and_secret_shapes_are_redacted() {
        remember("sk-unit-test-known-4411");
        remember("tiny");
        let t = text("vLLM args: api_key='sk-unit-test-known-4411' model=m tiny");
        assert_eq!(t, "vLLM args: api_key='***' model=m tiny");
        assert_eq!(
            text("curl -H 'Authorization: Bearer abcdef123' http://u:pw123456@h:80/v1"),
            "curl -H 'Authorization: Bearer ***' http://***@h:80/v1"
        );
        assert_eq!(
            text(r#"{"error":"bad key","authorization":"Bearer zzzz9999"}"#),
            r#"{"error":"bad key","authorization":"Bearer ***"}"#
        );
        assert_eq!(
            text("--api-key abc123 --port 8000"),
            "--api-key *** --port 8000"
        );
        assert_eq!(text("HF_TOKEN=hf_abcdef echo"), "HF_TOKEN=*** echo");
        assert_eq!(
            text("--max-num-batched-tokens 2048 tokens=5"),
            "--max-num-batched-tokens 2048 tokens=5"
        );
        assert_eq!(
            text("more than the 2928-token KV pool; a 16-key table"),
            "more than the 2928-token KV pool; a 16-key table"
        );
        assert_eq!(text("'--api-key', 'sk1234'"), "'--api-key', 'sk1234'");
        assert_eq!(text("[\"--api-key=sk1234\"]"), "[\"--api-key=***\"]");
        assert!(matches!(text("nothing here"), Cow::Borrowed(_)));
    }
}
