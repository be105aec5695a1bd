//! goodput against a real inference engine: llama.cpp's llama-server on CPU with
//! SmolLM2-135M, running `examples/llama-cpp-smollm2.toml` for real.
//!
//! The engine comes from `scripts/install-llama-server.sh` (cached; built on first
//! use). If it cannot be installed, this test fails with the reason: it never skips.

use std::path::{Path, PathBuf};
use std::process::Command;

use goodput::record::{read_records, RequestRecord};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `(llama-server, model)` from the environment, or from the install script.
fn engine() -> (String, String) {
    if let (Ok(s), Ok(m)) = (
        std::env::var("LLAMA_SERVER"),
        std::env::var("GOODPUT_SMOLLM2"),
    ) {
        if Path::new(&s).exists() && Path::new(&m).exists() {
            return (s, m);
        }
    }
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/install-llama-server.sh"))
        .output()
        .expect("cannot run scripts/install-llama-server.sh");
    assert!(
        out.status.success(),
        "llama-server could not be installed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .map(|v| v.trim_matches('\'').to_string())
            .unwrap_or_else(|| panic!("install script printed no {k}: {text}"))
    };
    (get("LLAMA_SERVER"), get("GOODPUT_SMOLLM2"))
}

/// Pids of live processes whose executable is `exe` and that inherited `marker`
/// from the goodput run of this test (other llama-servers on the machine don't count).
fn running(exe: &str, marker: &str) -> Vec<u32> {
    let target = std::fs::canonicalize(exe).unwrap_or_else(|_| PathBuf::from(exe));
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let ours = std::fs::read(entry.path().join("environ"))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == marker.as_bytes()));
        if let Ok(p) = std::fs::read_link(entry.path().join("exe")) {
            if p == target && ours {
                pids.push(pid);
            }
        }
    }
    pids
}

#[test]
fn the_llama_cpp_example_runs_for_real_and_measures_right() {
    let (server, model) = engine();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("llama.json");
    let marker = format!("GOODPUT_TEST_MARKER={}", out.display());
    let o = Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args([
            "run",
            repo_root()
                .join("examples/llama-cpp-smollm2.toml")
                .to_str()
                .unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .env("LLAMA_SERVER", &server)
        .env("GOODPUT_TEST_MARKER", &out)
        .env("GOODPUT_SMOLLM2", &model)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "goodput run failed ({:?}): {stderr}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        running(&server, &marker).is_empty(),
        "llama-server still running: {:?}",
        running(&server, &marker)
    );

    let r = report::read_report(&out).unwrap();
    assert_eq!(
        r.load.keys().collect::<Vec<_>>(),
        vec!["baseline", "ngram", "single-slot"]
    );
    for (name, e) in &r.load {
        assert!(e.error.is_none(), "{name}: {:?}", e.error);
        // -c 2048 is the whole KV pool, shared by the slots.
        assert_eq!(e.kv_pool_tokens, Some(2048), "{name}");
        assert_eq!(e.points.len(), 2);
        for p in &e.points {
            assert_eq!(
                p.completed,
                vec![8, 8],
                "{name} x={}: errors {:?}, trials {:?}",
                p.x,
                p.errors,
                p.trials
            );
            assert!(p.gpu.is_none(), "no GPU here");
            assert!(
                p.mean_input_tokens.unwrap().median.unwrap() > 50.0,
                "actual prompt tokens reported"
            );
        }
    }
    let notices = &r.run.as_ref().unwrap().notices;
    assert!(
        notices
            .iter()
            .any(|n| n.to_lowercase().contains("telemetry") || n.to_lowercase().contains("gpu")),
        "{notices:?}"
    );
    let env = r.environment.as_ref().unwrap();
    for name in ["baseline", "ngram", "single-slot"] {
        let e = &env.engines[name];
        assert_eq!(e.kind, "llama-cpp");
        assert!(
            e.version.as_deref().unwrap_or("").contains("b11434"),
            "{:?}",
            e.version
        );
        assert!(
            e.model.as_deref().unwrap_or("").contains("SmolLM2"),
            "{:?}",
            e.model
        );
    }
    // n-gram drafting ran and its acceptance is reported.
    let spec = r.load["ngram"].points[0]
        .spec_decode
        .as_ref()
        .expect("spec decode counters of the ngram engine");
    assert!(spec.draft_tokens > 0.0 && spec.acceptance_rate.is_some());
    assert!(r.load["baseline"].points[0].spec_decode.is_none());

    // Every request, from the raw records.
    let records: Vec<RequestRecord> =
        read_records(&dir.path().join("llama.requests.jsonl")).unwrap();
    assert_eq!(records.len(), 3 * 2 * 2 * 8);
    for rec in &records {
        assert!(rec.ok(), "{rec:?}");
        assert_eq!(
            rec.completion_tokens,
            Some(32),
            "usage.completion_tokens = requested length"
        );
        assert!(!rec.tokens_estimated);
        let first = rec.chunks.first().unwrap().t;
        let last = rec.chunks.last().unwrap().t;
        let ttft = first - rec.sent;
        let e2el = last - rec.sent;
        assert!(ttft < e2el, "TTFT < E2EL");
        let itl_sum: u64 = rec.chunks.windows(2).map(|w| w[1].t - w[0].t).sum();
        assert_eq!(itl_sum, e2el - ttft, "ITLs add up to E2EL - TTFT");
        let m = goodput::metrics::request_metrics(
            rec,
            &goodput::profile::SloSpec {
                ttft_ms: Some(1e9),
                tpot_ms: Some(1e9),
                e2el_ms: None,
                ..Default::default()
            },
        )
        .unwrap();
        let tpot = m.tpot_ms.unwrap();
        assert!(tpot > 0.0);
        assert!((tpot * 31.0 - (m.e2el_ms - m.ttft_ms)).abs() < 1e-6);
    }
}
