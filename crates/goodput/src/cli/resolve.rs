//! The profile a run uses: the file given (the built-in quick profile when there is
//! neither a file nor a server), its missing tables filled with the defaults a vLLM
//! user expects, then the server flags and vLLM's spellings applied on top.
//!
//! Flags work on the profile's TOML table before it is typed, so a profile and flags
//! mix freely, and what ran is one ordinary profile (the report records it).

use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::peer::{ApiArg, DatasetName, PeerArgs};
use crate::define::profile::{parse_slo, Profile, ProfileError};
use crate::UsageError;

/// The SLO of a profile with no `[slo]`: vLLM's usual `--goodput ttft:1000 tpot:100`.
pub const DEFAULT_SLO: &str = "ttft_ms = 1000\ntpot_ms = 100\n";
/// The SLO of a profile with no `[slo]` whose server answers embeddings (`--api
/// embeddings`), which have no TTFT or TPOT: the whole answer within a second.
pub const DEFAULT_EMBEDDINGS_SLO: &str = "e2el_ms = 1000\n";
/// The load of a profile with no `[load]`: a short sweep of closed-loop levels.
pub const DEFAULT_LOAD: &str =
    "mode = \"concurrency\"\npoints = [1, 4, 16]\nrequests_per_trial = 100\n";
/// The workload of a profile with no `[workload]`: vLLM's `--dataset-name random`
/// defaults (1024 prompt tokens, 128 output tokens).
pub const DEFAULT_WORKLOAD: &str =
    "kind = \"synthetic\"\ninput_tokens = 1024\noutput_tokens = 128\n";

/// A profile and where it came from (for errors and the report).
pub struct Resolved {
    /// The typed profile.
    pub profile: Profile,
    /// Its name in messages: the file, `--url`, or the quick profile.
    pub origin: String,
    /// Tables filled with defaults, for the run's header.
    pub filled: Vec<&'static str>,
}

/// Reads the profile (if any) and applies `peer`'s flags; `levels` says whether
/// goodput's own `--concurrency`/`--rate` were given (they conflict with vLLM's).
pub fn resolve(path: Option<&Path>, peer: &PeerArgs, levels: bool) -> anyhow::Result<Resolved> {
    let url = peer.target_url();
    // A password or key in `--url` is printed (the first line names it) and kept
    // nowhere: it is redacted wherever it shows.
    if let Some(u) = &url {
        crate::redact::remember_shaped(u);
    }
    check_conflicts(peer, levels)?;
    let (text, origin) = match (path, &url) {
        (Some(p), _) => (read(p)?, p.display().to_string()),
        (None, Some(u)) => (String::new(), u.clone()),
        (None, None) => (
            super::QUICK_PROFILE.to_string(),
            "built-in quick profile".into(),
        ),
    };
    let mut doc: Table = toml::from_str(&text).map_err(|e| ProfileError::Parse {
        path: origin.clone(),
        message: e.to_string().trim_end().to_string(),
    })?;
    let filled = fill_defaults(&mut doc, path, &origin, peer)?;
    if let Some(dir) = path.and_then(Path::parent) {
        relative_to(&mut doc, dir);
    }
    let before = doc.clone();
    apply_server(&mut doc, peer, url.as_deref())?;
    apply_load(&mut doc, peer)?;
    apply_slo(&mut doc, peer)?;
    apply_workload(&mut doc, peer)?;
    let profile = if filled.is_empty() && doc == before {
        // Nothing changed: read it as ever, so errors name the profile's lines.
        match path {
            Some(p) => Profile::load(p)?,
            None => Profile::parse(&text, &origin)?,
        }
    } else {
        let mut p: Profile =
            Value::Table(doc)
                .try_into()
                .map_err(|e: toml::de::Error| ProfileError::Parse {
                    path: origin.clone(),
                    message: e.message().trim_end().to_string(),
                })?;
        p.source = Some(text);
        p
    };
    Ok(Resolved {
        profile,
        origin,
        filled,
    })
}

fn read(path: &Path) -> Result<String, ProfileError> {
    crate::files::read_text(path).map_err(|error| ProfileError::Read {
        path: path.to_path_buf(),
        error,
    })
}

fn usage(message: String) -> anyhow::Error {
    UsageError(message).into()
}

fn check_conflicts(peer: &PeerArgs, levels: bool) -> anyhow::Result<()> {
    let v = &peer.vllm;
    if levels && (v.request_rate.is_some() || v.max_concurrency.is_some()) {
        return Err(usage(
            "--request-rate and --max-concurrency are vLLM's spellings of --rate and --concurrency: give one spelling".into(),
        ));
    }
    if let Some(t) = v.temperature {
        if t != 0.0 {
            return Err(usage(format!(
                "--temperature {t}: goodput always samples greedily (temperature 0), so that output lengths and speculative acceptance repeat; drop the flag"
            )));
        }
    }
    if let Some(e) = &peer.endpoint {
        endpoint_api(e)?;
    }
    for m in v.percentile_metrics.iter().flat_map(|l| l.split(',')) {
        if !["ttft", "tpot", "itl", "e2el"].contains(&m.trim()) {
            return Err(usage(format!(
                "--percentile-metrics: `{m}` is not one of ttft, tpot, itl, e2el"
            )));
        }
    }
    for p in v.metric_percentiles.iter().flat_map(|l| l.split(',')) {
        if !p
            .trim()
            .parse::<f64>()
            .is_ok_and(|x| (0.0..=100.0).contains(&x))
        {
            return Err(usage(format!(
                "--metric-percentiles: `{p}` is not a percentile in 0..=100"
            )));
        }
    }
    Ok(())
}

/// Fills each missing table with its default; a missing `[engines]` without `--url`
/// (or a table that is not a table) is reported with every other such problem at once.
fn fill_defaults(
    doc: &mut Table,
    path: Option<&Path>,
    origin: &str,
    peer: &PeerArgs,
) -> anyhow::Result<Vec<&'static str>> {
    let has_url = peer.target_url().is_some();
    let mut filled = Vec::new();
    let mut problems = Vec::new();
    if !doc.contains_key("name") {
        let stem = path
            .and_then(Path::file_stem)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| engine_name(peer.model.as_deref()));
        doc.insert("name".into(), Value::String(stem));
        filled.push("name");
    }
    let slo = match peer_api(peer)? {
        Some("embeddings") => DEFAULT_EMBEDDINGS_SLO,
        _ => DEFAULT_SLO,
    };
    for (key, default) in [
        ("slo", slo),
        ("load", DEFAULT_LOAD),
        ("workload", DEFAULT_WORKLOAD),
    ] {
        match doc.get(key) {
            None => {
                let table: Table = toml::from_str(default).unwrap_or_default();
                doc.insert(key.into(), Value::Table(table));
                filled.push(key);
            }
            Some(Value::Table(_)) => {}
            Some(_) => problems.push(format!("`{key}` must be a table ([{key}])")),
        }
    }
    match doc.get("engines") {
        None if !has_url => problems.push(
            "no [engines.NAME] table: add one, or name a running server with --url URL".into(),
        ),
        Some(Value::Table(_)) | None => {}
        Some(_) => problems.push("`engines` must be a table ([engines.NAME])".into()),
    }
    if problems.is_empty() {
        Ok(filled)
    } else {
        Err(ProfileError::Invalid {
            path: origin.to_string(),
            field: "profile".into(),
            line: None,
            message: problems.join("; "),
        }
        .into())
    }
}

/// A profile's relative workload paths are relative to its folder (as
/// [`Profile::load`] has them); a flag's stay relative to the current one.
fn relative_to(doc: &mut Table, dir: &Path) {
    let Some(Value::Table(w)) = doc.get_mut("workload") else {
        return;
    };
    for key in ["path", "tokenizer"] {
        if let Some(Value::String(p)) = w.get_mut(key) {
            if Path::new(p.as_str()).is_relative() {
                *p = dir.join(&*p).to_string_lossy().into_owned();
            }
        }
    }
}

/// `table[key]` as a table, made when absent.
fn table<'a>(doc: &'a mut Table, key: &str) -> anyhow::Result<&'a mut Table> {
    let entry = doc
        .entry(key.to_string())
        .or_insert_with(|| Value::Table(Table::new()));
    entry
        .as_table_mut()
        .ok_or_else(|| usage(format!("profile: `{key}` must be a table")))
}

fn endpoint_api(endpoint: &str) -> anyhow::Result<&'static str> {
    match endpoint.trim_end_matches('/') {
        "/v1/completions" | "v1/completions" => Ok("completions"),
        "/v1/chat/completions" | "v1/chat/completions" => Ok("chat"),
        "/v1/embeddings" | "v1/embeddings" => Ok("embeddings"),
        other => Err(usage(format!(
            "--endpoint {other}: goodput sends to /v1/completions, /v1/chat/completions or /v1/embeddings (--api completions|chat|embeddings)"
        ))),
    }
}

/// The API `--api` or `--endpoint` names, in the profile's words.
fn peer_api(peer: &PeerArgs) -> anyhow::Result<Option<&'static str>> {
    Ok(match (&peer.api, &peer.endpoint) {
        (Some(ApiArg::Chat), _) => Some("chat"),
        (Some(ApiArg::Completions), _) => Some("completions"),
        (Some(ApiArg::Embeddings), _) => Some("embeddings"),
        (None, Some(e)) => Some(endpoint_api(e)?),
        (None, None) => None,
    })
}

/// `--url` replaces the profile's engines with the running server; `--model`, `--api`
/// and `--api-key-env` apply to every engine.
fn apply_server(doc: &mut Table, peer: &PeerArgs, url: Option<&str>) -> anyhow::Result<()> {
    if let Some(url) = url {
        let name = engine_name(peer.model.as_deref());
        let mut engine = Table::new();
        engine.insert("kind".into(), Value::String("url".into()));
        engine.insert("url".into(), Value::String(url.to_string()));
        let mut engines = Table::new();
        engines.insert(name, Value::Table(engine));
        doc.insert("engines".into(), Value::Table(engines));
    }
    let api = peer_api(peer)?;
    let engines = table(doc, "engines")?;
    for (name, engine) in engines.iter_mut() {
        let engine = engine
            .as_table_mut()
            .ok_or_else(|| usage(format!("profile: engines.{name} must be a table")))?;
        let mut set = |k: &str, v: Option<&str>| {
            if let Some(v) = v {
                engine.insert(k.into(), Value::String(v.to_string()));
            }
        };
        set("model", peer.model.as_deref());
        set("api", api);
        set("api_key_env", peer.api_key_env.as_deref());
    }
    Ok(())
}

/// The engine's name in the report: the model's last path part, else `server`.
fn engine_name(model: Option<&str>) -> String {
    let base = model
        .and_then(|m| m.trim_end_matches('/').rsplit('/').next())
        .unwrap_or("server");
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    if clean.is_empty() {
        "server".into()
    } else {
        clean
    }
}

fn int(v: u32) -> Value {
    Value::Integer(i64::from(v))
}

fn apply_load(doc: &mut Table, peer: &PeerArgs) -> anyhow::Result<()> {
    let v = &peer.vllm;
    let load = table(doc, "load")?;
    if let Some(n) = v.num_prompts {
        load.insert("requests_per_trial".into(), int(n));
    }
    if let Some(n) = v.num_warmups {
        load.insert("warmup_requests".into(), int(n));
    }
    if let Some(b) = v.burstiness {
        load.insert("burstiness".into(), Value::Float(b));
    }
    let closed = |load: &mut Table, n: i64| {
        load.insert("mode".into(), Value::String("concurrency".into()));
        load.insert("points".into(), Value::Array(vec![Value::Integer(n)]));
        load.remove("max_concurrency");
    };
    match (v.request_rate, v.max_concurrency) {
        (Some(r), c) if r.is_infinite() && r > 0.0 => {
            // vLLM's default: every prompt at once, gated by --max-concurrency.
            let all = load
                .get("requests_per_trial")
                .and_then(Value::as_integer)
                .unwrap_or(1);
            closed(load, c.map_or(all, i64::from));
        }
        (Some(r), c) => {
            load.insert("mode".into(), Value::String("rate".into()));
            load.insert("points".into(), Value::Array(vec![Value::Float(r)]));
            match c {
                Some(c) => load.insert("max_concurrency".into(), int(c)),
                None => load.remove("max_concurrency"),
            };
        }
        (None, Some(c)) => closed(load, i64::from(c)),
        (None, None) => {}
    }
    Ok(())
}

fn apply_slo(doc: &mut Table, peer: &PeerArgs) -> anyhow::Result<()> {
    if peer.vllm.goodput.is_empty() {
        return Ok(());
    }
    let parsed =
        parse_slo(&peer.vllm.goodput.join(",")).map_err(|e| usage(format!("--goodput: {e}")))?;
    let slo = table(doc, "slo")?;
    for m in report::SloMetric::ALL {
        match parsed.bound(m) {
            Some(ms) => slo.insert(m.field().into(), Value::Float(ms)),
            None => slo.remove(m.field()),
        };
    }
    Ok(())
}

fn apply_workload(doc: &mut Table, peer: &PeerArgs) -> anyhow::Result<()> {
    let v = &peer.vllm;
    let w = table(doc, "workload")?;
    let kind = match (v.dataset_name, v.random_prefix_len) {
        (Some(DatasetName::Random) | None, Some(p)) if p > 0 => Some(("prefix", Some(1))),
        (Some(DatasetName::Random | DatasetName::RandomMm), _) => Some(("synthetic", None)),
        (Some(DatasetName::Sharegpt), _) => Some(("sharegpt", None)),
        (Some(DatasetName::PrefixRepetition), _) => Some(("prefix", Some(10))),
        (Some(DatasetName::Custom), _) => Some(("jsonl", None)),
        (None, _) => None,
    };
    if let Some((kind, groups)) = kind {
        let current = w.get("kind").and_then(Value::as_str).unwrap_or("synthetic");
        if current != kind {
            // A new kind starts from its own defaults, as vLLM's dataset does.
            w.clear();
            w.insert("kind".into(), Value::String(kind.into()));
            if kind == "prefix" {
                w.insert("prefix_tokens".into(), int(256));
                w.insert("suffix_tokens".into(), int(256));
                w.insert("output_tokens".into(), int(128));
            }
            if kind == "synthetic" {
                w.insert("input_tokens".into(), int(1024));
                w.insert("output_tokens".into(), int(128));
            }
        }
        if let Some(g) = groups.filter(|_| !w.contains_key("groups")) {
            w.insert("groups".into(), int(g));
        }
    }
    if !v.lora_modules.is_empty() {
        let adapters =
            crate::define::plan::adapters::lora_modules_table(&v.lora_modules).map_err(usage)?;
        w.insert("adapters".into(), Value::Table(adapters));
    }
    mm::apply_images(w, v)?;
    let is_prefix = w.get("kind").and_then(Value::as_str) == Some("prefix");
    let input_key = if is_prefix {
        "suffix_tokens"
    } else {
        "input_tokens"
    };
    // Each flag's key, refused (naming the flag) where the kind has no such key.
    let tokenizer = peer.tokenizer.as_deref().map(tokenizer_file);
    let flags = [
        ("--random-input-len", input_key, v.random_input_len.map(int)),
        (
            "--random-output-len",
            "output_tokens",
            v.random_output_len.map(int),
        ),
        (
            "--random-range-ratio",
            "range_ratio",
            v.random_range_ratio.map(Value::Float),
        ),
        (
            "--random-prefix-len",
            "prefix_tokens",
            v.random_prefix_len.filter(|&p| p > 0).map(int),
        ),
        (
            "--dataset-path",
            "path",
            v.dataset_path.as_deref().map(path_value),
        ),
        (
            "--tokenizer",
            "tokenizer",
            tokenizer.as_deref().map(path_value),
        ),
    ];
    for (flag, key, val) in flags {
        let Some(val) = val else { continue };
        w.insert(key.into(), val);
        if let Some((kind, stray)) =
            crate::define::profile::stray_in_table(w).filter(|(_, k)| k == key)
        {
            return Err(usage(format!(
                "{flag}: {}",
                crate::define::profile::stray_key_message(kind, &stray)
            )));
        }
    }
    Ok(())
}

fn path_value(p: &Path) -> Value {
    Value::String(p.to_string_lossy().into_owned())
}

/// vLLM's `--tokenizer` names a folder; goodput reads its `tokenizer.json`.
fn tokenizer_file(p: &Path) -> PathBuf {
    if p.is_dir() {
        p.join("tokenizer.json")
    } else {
        p.to_path_buf()
    }
}

/// The run's header line for tables filled with defaults (what ran, flags applied,
/// is in the header's `workload` line and the report's `run.profile`).
pub fn filled_note(origin: &str, filled: &[&str]) -> String {
    let tables: Vec<String> = filled
        .iter()
        .filter(|t| **t != "name")
        .map(|t| format!("[{t}]"))
        .collect();
    if tables.is_empty() {
        return format!("{origin}: no `name`: named after the file");
    }
    format!(
        "{origin}: no {} given: filled with goodput's defaults (docs/peers.md), then the flags applied; the profile as run is in the report's `run.profile`",
        tables.join(", ")
    )
}

mod mm;
#[cfg(test)]
mod tests;
