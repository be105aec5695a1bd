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
//! - vLLM's startup log (`vllm-startup-log`, [`from_vllm_log`]): the arguments it
//!   states (`non-default args: {...}` from 0.9 on, `args: Namespace(...)` before:
//!   `max_num_seqs`, `max_num_batched_tokens`, `block_size`) and the KV pool
//!   (`GPU KV cache size: N tokens`, `CPU KV cache size: ...` on the CPU build; else
//!   V0's `# GPU blocks: N` times the block size; else `Maximum concurrency for L
//!   tokens per request: Xx`, L × X, rounded as vLLM rounds X);
//! - the command line goodput launched it with: `-np`/`--parallel`,
//!   `--max-num-seqs`, `--max-running-requests`, `--max-num-batched-tokens`,
//!   `--block-size` (the last one given wins, as in the engines' parsers).
//!
//! Every answer is read through [`bounded_text`], at most [`MAX_BODY_BYTES`]: a
//! small local reader, to be swapped for the shared bounded reader (issue #24).

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::sync::OnceLock;

use indexmap::IndexMap;
use regex::Regex;
use report::StatedLimit;
use serde_json::Value;

use super::logs::LogSection;
use super::probe::Probe;
use super::prom;
use crate::define::profile::EngineKind;

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

/// Where vLLM's startup log is named as a source.
pub const VLLM_LOG: &str = "vllm-startup-log";
/// The most of a launch's log read for its startup lines.
const MAX_LOG_SCAN_BYTES: u64 = 64 << 20;
/// The arguments the startup log states, as vLLM names them.
const VLLM_ARGS: [&str; 3] = ["max_num_seqs", "max_num_batched_tokens", "block_size"];
/// V0's block size when its arguments do not say one (`--block-size` default).
const VLLM_V0_BLOCK: u64 = 16;

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("static regex"))
}

fn digits(text: &str) -> Option<u64> {
    let clean: String = text.chars().filter(|c| c.is_ascii_digit()).collect();
    clean.parse().ok()
}

/// What one startup-log line states (see [`from_vllm_log`]).
#[derive(Debug, Default)]
struct VllmLog {
    args: Limits,
    kv_tokens: Option<(u64, String)>,
    gpu_blocks: Option<u64>,
    concurrency: Option<(u64, f64)>,
}

impl VllmLog {
    fn line(&mut self, line: &str) {
        static ARG_DICT: OnceLock<Regex> = OnceLock::new();
        static ARG_NS: OnceLock<Regex> = OnceLock::new();
        static KV: OnceLock<Regex> = OnceLock::new();
        static BLOCKS: OnceLock<Regex> = OnceLock::new();
        static CONC: OnceLock<Regex> = OnceLock::new();
        let args = if line.contains("non-default args:") {
            Some((re(&ARG_DICT, r"'(\w+)': (\d+)\b"), "non-default args"))
        } else if line.contains("args: Namespace(") {
            Some((re(&ARG_NS, r"\b(\w+)=(\d+)\b"), "args"))
        } else {
            None
        };
        if let Some((args, form)) = args {
            for c in args.captures_iter(line) {
                if VLLM_ARGS.contains(&&c[1]) {
                    let source = format!("{VLLM_LOG} ({form}: {} {})", &c[1], &c[2]);
                    // The first statement of a launch wins (put keeps the first).
                    put(&mut self.args, &c[1], c[2].parse().ok(), &source);
                }
            }
            return;
        }
        let kv = re(&KV, r"(\b[A-Z]+ )?KV cache size: ([\d,]+) tokens");
        if let Some(c) = kv.captures(line) {
            if self.kv_tokens.is_none() {
                let what = format!("{}KV cache size", c.get(1).map_or("", |m| m.as_str()));
                self.kv_tokens =
                    digits(&c[2]).map(|n| (n, format!("{VLLM_LOG} ({what}: {} tokens)", &c[2])));
            }
        }
        let blocks = re(&BLOCKS, r"# GPU blocks: (\d+)");
        if let Some(c) = blocks.captures(line) {
            self.gpu_blocks = self.gpu_blocks.or(c[1].parse().ok());
        }
        let conc = re(
            &CONC,
            r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x",
        );
        if let Some(c) = conc.captures(line) {
            if self.concurrency.is_none() {
                let x: Option<f64> = c[2].parse().ok();
                self.concurrency = digits(&c[1]).zip(x.filter(|x| x.is_finite() && *x > 0.0));
            }
        }
    }

    fn limits(self) -> Limits {
        let mut out = self.args;
        let kv = self.kv_tokens.or_else(|| {
            let block = out.get("block_size").map_or(VLLM_V0_BLOCK, |l| l.value);
            self.gpu_blocks
                .and_then(|b| b.checked_mul(block))
                .map(|n| (n, format!("{VLLM_LOG} (# GPU blocks × block size {block})")))
        });
        let kv = kv.or_else(|| {
            let (len, x) = self.concurrency?;
            let n = (len as f64 * x).round();
            (1.0..1e15).contains(&n).then(|| {
                (
                    n as u64,
                    format!(
                        "{VLLM_LOG} (Maximum concurrency {x}x for {len} tokens a request, ±0.5%)"
                    ),
                )
            })
        });
        if let Some((n, source)) = kv {
            put(&mut out, "kv_pool_tokens", Some(n), &source);
        }
        out
    }
}

/// What vLLM's startup log states (see the module doc), from a log's text.
pub fn from_vllm_log(text: &str) -> Limits {
    let mut log = VllmLog::default();
    for line in text.lines() {
        log.line(line);
    }
    log.limits()
}

/// [`from_vllm_log`] on one launch's part of a log file (its first 64 MiB; lines
/// read lossily, none longer than that).
pub fn scan_vllm_log(section: &LogSection) -> Limits {
    let Ok(mut file) = std::fs::File::open(&section.path) else {
        return Limits::new();
    };
    if file.seek(SeekFrom::Start(section.start)).is_err() {
        return Limits::new();
    }
    let mut reader = BufReader::new(file.take(MAX_LOG_SCAN_BYTES));
    let (mut log, mut buf) = (VllmLog::default(), Vec::new());
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => log.line(&String::from_utf8_lossy(&buf)),
        }
    }
    log.limits()
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
    let body = crate::bounded::read_bounded(resp, max, &what).await.ok()?;
    String::from_utf8(body.to_vec()).ok()
}

async fn json(probe: &Probe<'_>, path: &str) -> Option<Value> {
    serde_json::from_str(&bounded_text(probe, path, MAX_BODY_BYTES).await?).ok()
}

/// Reads what the engine states (its answer, then, for vLLM, its startup log in
/// `log`), then what its command line sets (the engine's own statement wins
/// where several say).
pub async fn detect(
    kind: EngineKind,
    probe: &Probe<'_>,
    argv: Option<&[String]>,
    log: Option<&LogSection>,
) -> Limits {
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
    if let (EngineKind::Vllm, Some(section)) = (kind, log) {
        let section = section.clone();
        let stated = tokio::task::spawn_blocking(move || scan_vllm_log(&section))
            .await
            .unwrap_or_default();
        for (name, l) in stated {
            out.entry(name).or_insert(l);
        }
    }
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
    fn vllm_states_its_arguments_and_pool_in_its_startup_log() {
        use crate::drive::engine::fixture;
        // 0.32 (the CPU build), as it logged the bench's launch: every argument
        // given, and the pool on the engine core's one line.
        let l = from_vllm_log(&fixture("vllm/cpu-0.32-startup-limits.log"));
        assert_eq!(l["max_num_seqs"].value, 8);
        assert_eq!(l["max_num_batched_tokens"].value, 2048);
        assert_eq!(l["block_size"].value, 32);
        assert!(l["max_num_seqs"]
            .source
            .starts_with("vllm-startup-log (non-default args"));
        assert!(
            l["kv_pool_tokens"].source.contains("CPU KV cache size"),
            "{l:?}"
        );
        // An earlier 0.32 launch with --block-size 32 and 92 blocks (the CPU
        // build refuses 16: cpu-0.32-block-size-16.log).
        let l = from_vllm_log(&fixture("vllm/cpu-0.32-startup.log"));
        assert_eq!(l["block_size"].value, 32);
        assert_eq!(l["kv_pool_tokens"].value, 2944);
        // 0.11: no limit among its non-default args; the GPU pool.
        let l = from_vllm_log(&fixture("vllm/startup-v0.11.log"));
        assert!(!l.contains_key("max_num_seqs") && !l.contains_key("block_size"));
        assert_eq!(l["kv_pool_tokens"].value, 171_008);
        // 0.8: `args: Namespace(...)` with `block_size=None` (not a statement).
        let l = from_vllm_log(&fixture("vllm/startup-v0.8.log"));
        assert!(!l.contains_key("block_size"));
        assert_eq!(l["kv_pool_tokens"].value, 2928);
        // V0: blocks times the block size its arguments state (else 16).
        let v0 = "INFO 06-01 [api_server.py:1] args: Namespace(model='m', block_size=32, max_num_seqs=64)\n\
                  INFO 06-01 [executor_base.py:1] # GPU blocks: 183, # CPU blocks: 512\n";
        let l = from_vllm_log(v0);
        assert_eq!(l["kv_pool_tokens"].value, 183 * 32);
        assert_eq!(l["max_num_seqs"].value, 64);
        assert_eq!(
            from_vllm_log("# GPU blocks: 10, # CPU blocks: 0")["kv_pool_tokens"].value,
            160
        );
        // Only the concurrency line: max_model_len × concurrency.
        let l = from_vllm_log("Maximum concurrency for 2,048 tokens per request: 1.43x");
        assert_eq!(l["kv_pool_tokens"].value, 2929);
        // Nothing stated, or nonsense: nothing, no panic.
        for bad in [
            "",
            "non-default args: {'max_num_seqs': -1}",
            "KV cache size: , tokens",
            "Maximum concurrency for 1 tokens per request: NaNx",
        ] {
            assert!(from_vllm_log(bad).is_empty(), "{bad}");
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
