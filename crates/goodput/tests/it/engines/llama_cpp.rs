//! goodput against a real inference engine: llama.cpp's llama-server on CPU with
//! SmolLM2-135M, running `examples/llama-cpp-smollm2.toml` for real.
//!
//! The engine comes from `scripts/install-llama-server.sh` (cached; built on first
//! use). If it cannot be installed, these tests fail with the reason, unless
//! `GOODPUT_SKIP_LLAMA=1` (see `common/require.rs`).
//!
//! What goodput measured is checked against truths it did not compute: the raw
//! request records, re-read as plain JSON and reduced here with formulas written
//! for the test; the asked length; and llama-server's own `/metrics` counters.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::cli::{goodput, goodput_run};
use common::procs;
use common::records::{check_points_against_records, raw_records, same_trials, truth};
use common::require;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Pids of live processes whose executable is `exe` and that inherited `marker`
/// from the goodput run of this test (other llama-servers on the machine don't count).
fn running(exe: &str, marker: &str) -> Vec<u32> {
    let target = std::fs::canonicalize(exe).unwrap_or_else(|_| PathBuf::from(exe));
    procs::marked(marker)
        .into_iter()
        .filter(|p| p.exe().is_some_and(|e| e == target))
        .map(|p| p.pid as u32)
        .collect()
}

#[test]
fn the_llama_cpp_example_runs_for_real_and_measures_right() {
    let Some((server, model)) = require::llama_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("llama.json");
    let marker = procs::marker(&out);
    let o = goodput()
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
            .any(|n| n.kind == report::NoticeKind::Telemetry
                || n.text.to_lowercase().contains("gpu")),
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

    // Every request, from the raw records read as plain JSON, against the report.
    let records = raw_records(&dir.path().join("llama.requests.jsonl"));
    assert_eq!(records.len(), 3 * 2 * 2 * 8);
    for rec in &records {
        assert_eq!(rec.error, None, "{rec:?}");
        // The server's usage against the asked length (ignore_eos): 32 tokens.
        assert_eq!(rec.completion_tokens, Some(32), "{rec:?}");
        assert!(rec.sent >= rec.scheduled, "{rec:?}");
        assert!(
            rec.chunks.windows(2).all(|w| w[0] <= w[1]),
            "chunks in arrival order: {rec:?}"
        );
        // No more content chunks than tokens, and the stream was not one lump.
        assert!(
            (2..=32).contains(&rec.chunks.len()),
            "{} chunks",
            rec.chunks.len()
        );
        assert!(rec.done.is_some_and(|d| d >= *rec.chunks.last().unwrap()));
    }
    check_points_against_records(&r, &records, 2, 8, 32);
}

/// A llama-server this test started itself (so it can read the server's own
/// counters afterwards); killed by its pid when dropped.
struct Server {
    child: std::process::Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` on 127.0.0.1:`port`: `(status, body)`, `None` when nothing answers.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

/// The value of counter `name` in a Prometheus text body.
fn counter(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name).then(|| v.trim().parse::<f64>().ok())?
        })
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{metrics}"))
}

/// goodput against a llama-server it did not start: what goodput counted and timed
/// from the stream must agree with the server's own counters (`--metrics`, read by
/// this test after the run), and so must the deltas goodput's server-metrics sampler
/// took during the trial.
#[test]
fn token_counts_and_decode_time_agree_with_llama_servers_own_counters() {
    let Some((server, model)) = require::llama_server() else {
        return;
    };
    let port = goodput::drive::engine::command::free_port().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = std::fs::File::create(dir.path().join("llama-server.log")).unwrap();
    let mut srv = Server {
        child: Command::new(&server)
            .args(["-m", &model, "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .args(["-c", "1024", "-np", "1", "-t", "1", "--metrics"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
        port,
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while http_get(srv.port, "/health").map(|(s, _)| s) != Some(200) {
        if let Some(status) = srv.child.try_wait().unwrap() {
            panic!(
                "llama-server exited ({status}): {}",
                std::fs::read_to_string(dir.path().join("llama-server.log")).unwrap()
            );
        }
        assert!(Instant::now() < deadline, "llama-server not ready in 120 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    // One request at a time, no warm-up: every token the server generated belongs
    // to exactly one record.
    let profile = dir.path().join("p.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"counters\"\n[slo]\nttft_ms = 10000\ntpot_ms = 1000\n\
             [load]\npoints = [1]\nrequests_per_trial = 6\ntrials = 1\nwarmup_requests = 0\n\
             request_timeout_s = 300\n[workload]\ninput_tokens = 64\noutput_tokens = 24\n\
             [engines.llama]\nurl = \"http://127.0.0.1:{port}\"\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("r.json");
    let o = goodput_run(&profile, &out).arg("--quiet").output().unwrap();
    assert!(
        o.status.success(),
        "goodput run failed ({}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let (status, metrics) = http_get(srv.port, "/metrics").expect("/metrics answers");
    assert_eq!(status, 200, "{metrics}");
    let records = raw_records(&dir.path().join("r.requests.jsonl"));
    assert_eq!(records.len(), 6);
    assert!(records.iter().all(|r| r.error.is_none()), "{records:?}");

    // Tokens: goodput's records against the server's totals.
    let completion: u64 = records.iter().map(|r| r.completion_tokens.unwrap()).sum();
    assert_eq!(completion, 6 * 24, "the asked length, ignore_eos");
    assert_eq!(
        completion as f64,
        counter(&metrics, "llamacpp:tokens_predicted_total"),
        "completion tokens recorded vs generated by the server"
    );
    let prompt: u64 = records.iter().map(|r| r.prompt_tokens.unwrap()).sum();
    assert_eq!(
        prompt as f64,
        counter(&metrics, "llamacpp:prompt_tokens_total")
            + counter(&metrics, "llamacpp:prompt_tokens_cached_total"),
        "prompt tokens recorded vs the server's processed + cached"
    );
    let r = report::read_report(&out).unwrap();
    let p = &r.load["llama"].points[0];
    assert_eq!(p.completed, vec![6]);
    assert_eq!(p.mean_output_tokens.as_ref().unwrap().median, Some(24.0));

    // Time: with one request at a time, the client's first-to-last-token time, summed,
    // is the server's generation time give or take delivery: a factor of 2, and
    // 100 ms (600 ms above) for late wake-ups, hold on a loaded machine; a unit
    // error, or a span from the wrong chunks, does not.
    let client_s: f64 = records
        .iter()
        .map(|r| (r.chunks.last().unwrap() - r.chunks[0]) as f64 / 1e9)
        .sum();
    let server_s = counter(&metrics, "llamacpp:tokens_predicted_seconds_total");
    assert!(server_s > 0.0, "{metrics}");
    assert!(
        client_s > 0.5 * server_s - 0.1 && client_s < 2.0 * server_s + 0.6,
        "goodput saw {client_s:.3} s of decoding, llama-server spent {server_s:.3} s"
    );
    // goodput's own sampler of the engine's /metrics read the same counters during
    // the trial: its deltas must be the server's totals (nothing else ran on it).
    let server = p.server.as_ref().expect("server metrics sampled");
    assert_eq!(server.catalogue, "llama-cpp");
    assert!(server.samples >= 2, "{server:?}");
    assert_eq!(
        server.counts.generation_tokens,
        Some(counter(&metrics, "llamacpp:tokens_predicted_total")),
        "{server:?}"
    );
    let trial = p.trials[0]
        .server
        .as_ref()
        .expect("per-trial server counters");
    assert_eq!(trial.error, None);
    let disagree: Vec<_> = goodput::render::warnings::warnings(&r)
        .into_iter()
        .filter(|w| w.message.contains("server") && w.message.contains("client"))
        .collect();
    assert!(disagree.is_empty(), "server and client agree: {disagree:?}");
    let truth = truth(&records.iter().collect::<Vec<_>>(), 24);
    same_trials(&p.median_tpot_ms, &[truth], |t| t.tpot, "TPOT");
    same_trials(&p.median_ttft_ms, &[truth], |t| t.ttft, "TTFT");
}
