//! An engine's spec: `${NAME}` expanded from the environment, then checked.

use std::path::PathBuf;

use super::check::MAX_SECONDS;
use crate::define::profile::{EngineKind, EngineSpec};

/// Longest model id goodput uses: an id is copied into every request's body, so a
/// server listing a 20 MB "id" must not multiply it by the requests of a run.
pub const MAX_MODEL_ID_BYTES: usize = 1024;

pub(super) fn expand_engine(e: &mut EngineSpec) -> Result<(), (&'static str, String)> {
    fn one(field: &'static str, s: &mut String) -> Result<(), (&'static str, String)> {
        *s = expand_vars(s).map_err(|m| (field, m))?;
        Ok(())
    }
    for (field, v) in [
        ("model", e.model.as_mut()),
        ("url", e.url.as_mut()),
        ("shell", e.shell.as_mut()),
        ("python", e.python.as_mut()),
    ] {
        if let Some(v) = v {
            one(field, v)?;
        }
    }
    for a in e.args.iter_mut() {
        one("args", a)?;
    }
    for a in e.command.iter_mut().flatten() {
        one("command", a)?;
    }
    for v in e.env.values_mut() {
        one("env", v)?;
    }
    if let Some(cwd) = e.cwd.as_mut() {
        let mut s = cwd.to_string_lossy().into_owned();
        one("cwd", &mut s)?;
        *cwd = PathBuf::from(s);
    }
    Ok(())
}

/// Expands `${NAME}` from the environment; an unset variable is an error naming it.
pub fn expand_vars(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(j) = after.find('}') else {
            return Err(format!("`{text}`: `${{` without a closing `}}`"));
        };
        let name = &after[..j];
        match std::env::var(name) {
            Ok(v) => out.push_str(&v),
            Err(_) => {
                return Err(format!(
                    "environment variable `{name}` (used in `{text}`) is not set"
                ))
            }
        }
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

pub(super) fn validate_engine(_name: &str, e: &EngineSpec) -> Result<(), (&'static str, String)> {
    check_launch(e)?;
    check_limits(e)
}

/// What reaches or launches the engine: its URL, what its kind requires, the
/// interpreter, the command.
fn check_launch(e: &EngineSpec) -> Result<(), (&'static str, String)> {
    let kind = e.effective_kind();
    if let Some(url) = &e.url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err((
                "url",
                format!("`{url}` must start with http:// or https://"),
            ));
        }
    }
    if e.model
        .as_ref()
        .is_some_and(|m| m.len() > MAX_MODEL_ID_BYTES)
    {
        return Err((
            "model",
            format!("is longer than {MAX_MODEL_ID_BYTES} bytes (it is sent in every request)"),
        ));
    }
    match kind {
        EngineKind::Url if e.url.is_none() => {
            return Err((
                "url",
                "is required for an engine that goodput does not launch (or give kind and command)"
                    .into(),
            ))
        }
        EngineKind::Vllm | EngineKind::Sglang | EngineKind::LlamaCpp if e.model.is_none() => {
            return Err(("model", "is required to launch this kind of engine".into()))
        }
        EngineKind::Command if e.command.is_none() && e.shell.is_none() => {
            return Err((
                "command",
                "kind = \"command\" needs `command` (argv list) or `shell`".into(),
            ))
        }
        _ => {}
    }
    if e.python.is_some() && !matches!(kind, EngineKind::Vllm | EngineKind::Sglang) {
        return Err((
            "python",
            "names the interpreter of a launched vLLM or SGLang only".into(),
        ));
    }
    if e.command.is_some() && e.shell.is_some() {
        return Err(("shell", "give either `command` or `shell`, not both".into()));
    }
    if let Some(cmd) = &e.command {
        if cmd.is_empty() {
            return Err(("command", "must not be empty".into()));
        }
    }
    Ok(())
}

/// The port, timeouts, KV pool, restarts and API-key variable.
fn check_limits(e: &EngineSpec) -> Result<(), (&'static str, String)> {
    if let Some(crate::define::profile::PortSpec::Auto(s)) = &e.port {
        if s != "auto" {
            return Err((
                "port",
                format!("`{s}` is not a port: use a number or \"auto\""),
            ));
        }
    }
    for (field, v, min) in [
        ("ready_timeout_s", e.ready_timeout_s, f64::MIN_POSITIVE),
        ("stop_grace_s", e.stop_grace_s, 0.0),
    ] {
        if let Some(t) = v {
            if !(t.is_finite() && t >= min && t <= MAX_SECONDS) {
                return Err((
                    field,
                    format!("{t} must be a positive number of seconds, at most {MAX_SECONDS}"),
                ));
            }
        }
    }
    if let Some(crate::define::profile::PortSpec::Fixed(0)) = &e.port {
        return Err((
            "port",
            "0 is not a port goodput can reach: give a number or \"auto\"".into(),
        ));
    }
    if e.kv_pool_tokens == Some(0) {
        return Err(("kv_pool_tokens", "must be at least 1".into()));
    }
    if let Some(usd) = e
        .usd_per_hour
        .filter(|v| !(v.is_finite() && *v >= 0.0 && *v <= 1e9))
    {
        return Err((
            "usd_per_hour",
            format!("{usd} must be a price in 0..=1e9 US dollars per hour"),
        ));
    }
    if e.max_restarts > 100 {
        return Err((
            "max_restarts",
            format!("{} is out of range 0..=100", e.max_restarts),
        ));
    }
    if let Some(var) = &e.api_key_env {
        if var.is_empty() || var.contains(char::is_whitespace) {
            return Err((
                "api_key_env",
                "must be the NAME of an environment variable, not the key".into(),
            ));
        }
    }
    Ok(())
}
