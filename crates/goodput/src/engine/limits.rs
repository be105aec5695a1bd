//! Engine limits as the engine states them: what bounds its queueing
//! (`max_num_seqs`, `max_num_batched_tokens`, `block_size`), read where each engine
//! says it, so that `goodput fit` takes them as known instead of guessing them
//! from the load (a limit the measured loads never reached cannot be fitted).
//!
//! Sources, the engine's own answer first, then its command line:
//! - the simulator: `GET /version`, `limits` (`sim /version`);
//! - llama.cpp: `GET /props`, `total_slots` (`llama.cpp /props total_slots`);
//! - SGLang: `GET /get_server_info`, `max_running_requests`,
//!   `chunked_prefill_size`, `page_size` (anywhere in the document);
//! - vLLM: `GET /metrics`, the labels of `vllm:cache_config_info` (`block_size`,
//!   and `max_num_seqs` / `max_num_batched_tokens` where a version adds them);
//! - the command line goodput launched it with: `-np`/`--parallel`,
//!   `--max-num-seqs`, `--max-running-requests`, `--max-num-batched-tokens`,
//!   `--block-size` (the last one given wins, as in the engines' parsers).
//!
//! Every answer is read through [`bounded_text`], at most [`MAX_BODY_BYTES`]: a
//! small local reader, to be swapped for the shared bounded reader (issue #24).

use indexmap::IndexMap;
use report::StatedLimit;
use serde_json::Value;

use super::probe::Probe;
use super::prom;
use crate::profile::EngineKind;

/// The most of one answer read (a `/metrics` page of a large deployment fits).
pub const MAX_BODY_BYTES: usize = 4 << 20;

/// The limits, by name: `max_num_seqs`, `max_num_batched_tokens`, `block_size`.
pub type Limits = IndexMap<String, StatedLimit>;

fn put(into: &mut Limits, name: &str, value: Option<u64>, source: &str) {
    if let Some(v) = value.filter(|v| *v > 0 && *v < 1 << 40) {
        into.entry(name.to_string()).or_insert(StatedLimit {
            value: v,
            source: source.to_string(),
        });
    }
}

fn count(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    v.as_u64()
        .or_else(|| {
            v.as_f64()
                .filter(|f| f.is_finite() && *f >= 1.0)
                .map(|f| f as u64)
        })
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

/// The first value of `key` anywhere in a JSON document (depth first).
fn find<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m.get(key).or_else(|| m.values().find_map(|x| find(x, key))),
        Value::Array(a) => a.iter().find_map(|x| find(x, key)),
        _ => None,
    }
}

/// The simulator's `/version`.
pub fn from_sim_version(v: &Value) -> Limits {
    let mut out = Limits::new();
    for name in ["max_num_seqs", "max_num_batched_tokens", "block_size"] {
        put(
            &mut out,
            name,
            count(v.pointer(&format!("/limits/{name}"))),
            "sim /version",
        );
    }
    out
}

/// llama.cpp's `/props`: one sequence per slot.
pub fn from_llama_props(v: &Value) -> Limits {
    let mut out = Limits::new();
    put(
        &mut out,
        "max_num_seqs",
        count(v.get("total_slots")),
        "llama.cpp /props total_slots",
    );
    out
}

/// SGLang's `/get_server_info`.
pub fn from_sglang_info(v: &Value) -> Limits {
    let mut out = Limits::new();
    for (name, key) in [
        ("max_num_seqs", "max_running_requests"),
        ("max_num_batched_tokens", "chunked_prefill_size"),
        ("block_size", "page_size"),
    ] {
        let source = format!("sglang /get_server_info {key}");
        put(&mut out, name, count(find(v, key)), &source);
    }
    out
}

/// vLLM's `/metrics`: the labels of `vllm:cache_config_info`.
pub fn from_vllm_metrics(text: &str) -> Limits {
    let mut out = Limits::new();
    for s in prom::samples(text).filter(|s| s.name == "vllm:cache_config_info") {
        for name in ["max_num_seqs", "max_num_batched_tokens", "block_size"] {
            let v = s.label(name).and_then(|l| l.parse().ok());
            put(
                &mut out,
                name,
                v,
                &format!("vllm /metrics cache_config_info {name}"),
            );
        }
    }
    out
}

/// The limits an engine's command line sets (see the module doc).
pub fn from_command(argv: &[String]) -> Limits {
    const FLAGS: [(&str, &str); 7] = [
        ("-np", "max_num_seqs"),
        ("--parallel", "max_num_seqs"),
        ("--max-num-seqs", "max_num_seqs"),
        ("--max-running-requests", "max_num_seqs"),
        ("--max-num-batched-tokens", "max_num_batched_tokens"),
        ("--block-size", "block_size"),
        ("--page-size", "block_size"),
    ];
    let mut last: IndexMap<&str, (u64, String)> = IndexMap::new();
    for (i, a) in argv.iter().enumerate() {
        let (flag, value) = match a.split_once('=') {
            Some((f, v)) => (f, Some(v)),
            None => (a.as_str(), argv.get(i + 1).map(String::as_str)),
        };
        let Some(&(_, name)) = FLAGS.iter().find(|(f, _)| *f == flag) else {
            continue;
        };
        if let Some(n) = value.and_then(|v| v.parse::<u64>().ok()).filter(|n| *n > 0) {
            last.insert(
                name,
                (n, format!("{flag} {n} on the engine's command line")),
            );
        }
    }
    let mut out = Limits::new();
    for (name, (v, source)) in last {
        put(&mut out, name, Some(v), &source);
    }
    out
}

/// GETs `path` and reads at most `max` bytes of a successful answer (more is
/// refused, not cut: a cut document would parse wrong).
pub async fn bounded_text(probe: &Probe<'_>, path: &str, max: usize) -> Option<String> {
    let resp = probe.get(path).send().await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let what = format!("GET {}{path}", probe.base);
    let body = crate::client::bounded::read_bounded(resp, max, &what)
        .await
        .ok()?;
    String::from_utf8(body.to_vec()).ok()
}

async fn json(probe: &Probe<'_>, path: &str) -> Option<Value> {
    serde_json::from_str(&bounded_text(probe, path, MAX_BODY_BYTES).await?).ok()
}

/// Reads what the engine states, then what its command line sets (the engine's
/// own answer wins where both say).
pub async fn detect(kind: EngineKind, probe: &Probe<'_>, argv: Option<&[String]>) -> Limits {
    let mut out = match kind {
        EngineKind::Sim => json(probe, "/version")
            .await
            .map(|v| from_sim_version(&v))
            .unwrap_or_default(),
        EngineKind::LlamaCpp => json(probe, "/props")
            .await
            .map(|v| from_llama_props(&v))
            .unwrap_or_default(),
        EngineKind::Sglang => json(probe, "/get_server_info")
            .await
            .map(|v| from_sglang_info(&v))
            .unwrap_or_default(),
        EngineKind::Vllm => bounded_text(probe, "/metrics", MAX_BODY_BYTES)
            .await
            .map(|t| from_vllm_metrics(&t))
            .unwrap_or_default(),
        _ => Limits::new(),
    };
    for (name, l) in from_command(argv.unwrap_or_default()) {
        out.entry(name).or_insert(l);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn each_engine_states_its_limits_where_it_says_them() {
        let sim = serde_json::json!({"limits": {"max_num_seqs": 5, "block_size": 16}});
        let l = from_sim_version(&sim);
        assert_eq!(l["max_num_seqs"].value, 5);
        assert_eq!(l["block_size"].value, 16);
        assert!(!l.contains_key("max_num_batched_tokens"));
        let props = serde_json::json!({"total_slots": 4, "n_ctx": 2048});
        assert_eq!(from_llama_props(&props)["max_num_seqs"].value, 4);
        let info = serde_json::json!({"internal_states": [{"max_running_requests": 48}],
            "chunked_prefill_size": 8192, "page_size": 1});
        let l = from_sglang_info(&info);
        assert_eq!(l["max_num_seqs"].value, 48);
        assert_eq!(l["max_num_batched_tokens"].value, 8192);
        let m = "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"183\"} 1.0\n";
        assert_eq!(from_vllm_metrics(m)["block_size"].value, 16);
        // Hostile answers give nothing, not a panic.
        for bad in [
            serde_json::json!(null),
            serde_json::json!({"total_slots": -3}),
            serde_json::json!({"limits": {"max_num_seqs": "many"}}),
        ] {
            assert!(from_llama_props(&bad).is_empty() && from_sim_version(&bad).is_empty());
        }
    }

    #[test]
    fn the_last_flag_on_the_command_line_wins() {
        let l = from_command(&argv(
            "llama-server -m x.gguf -np 2 --parallel=6 --block-size 32",
        ));
        assert_eq!(l["max_num_seqs"].value, 6);
        assert!(l["max_num_seqs"].source.contains("--parallel 6"));
        assert_eq!(l["block_size"].value, 32);
        assert!(from_command(&argv("vllm serve m --max-num-seqs")).is_empty());
        assert!(from_command(&argv("vllm serve m --max-num-seqs 0")).is_empty());
    }
}
