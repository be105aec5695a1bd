//! Workload kinds against a server that records what it received: a trace is sent
//! at its own times (speedup 1 and 10), shared hash ids reach the server as shared
//! prefixes, prefix groups share their prefix, and a whole `goodput run` of a trace
//! keeps what each request asked in its record and documents the workload.

use crate::common;

use std::time::Duration;

use goodput::define::profile::{Overrides, Profile};
use goodput::define::requests::Builder;
use goodput::drive::client::Target;
use goodput::drive::load::run_trial;

/// 12 requests over 1.1 s, with blocks shared as the hash ids say.
fn mooncake_trace() -> String {
    let mut s = String::new();
    for i in 0..12u64 {
        let ids = if i % 2 == 0 {
            format!("[1, 2, {}]", 100 + i)
        } else {
            format!("[7, {}]", 200 + i)
        };
        s.push_str(&format!(
            "{{\"timestamp\": {}, \"input_length\": 24, \"output_length\": 3, \"hash_ids\": {ids}}}\n",
            5000 + i * i * 8
        ));
    }
    s
}

fn plan(dir: &std::path::Path, trace: &str) -> goodput::define::plan::Plan {
    let path = dir.join("trace.jsonl");
    std::fs::write(&path, trace).unwrap();
    let toml = format!(
        "name = \"t\"\n[slo]\nttft_ms = 1000\n[load]\nmode = \"trace\"\npoints = [1, 10]\n\
         [workload]\nkind = \"trace\"\npath = \"{}\"\nblock_tokens = 8\ncalibrate = false\n\
         [engines.r]\nurl = \"http://127.0.0.1:1\"\nmodel = \"m\"\n",
        path.display()
    );
    Profile::parse(&toml, "t.toml")
        .unwrap()
        .into_plan("t.toml", &Overrides::default())
        .unwrap()
}

fn builder(plan: &goodput::define::plan::Plan) -> Builder {
    Builder {
        workload: plan.workload.clone(),
        model: "m".into(),
        api: goodput::define::profile::Api::Completions,
        tokens_per_word: 1.0,
        chat_fields: Default::default(),
        salt: None,
        images: plan.images,
    }
}

/// The prompts the plan's trial sends, in request order.
fn planned_prompts(plan: &goodput::define::plan::Plan) -> Vec<String> {
    builder(plan)
        .build(plan.requests_per_trial, 1, 0)
        .iter()
        .map(|p| {
            let v: serde_json::Value = serde_json::from_slice(&p.body).unwrap();
            v["prompt"].as_str().unwrap().to_string()
        })
        .collect()
}

async fn replay(
    url: &str,
    plan: &goodput::define::plan::Plan,
    speedup: f64,
) -> Vec<goodput::drive::record::RequestRecord> {
    let builder = builder(plan);
    let requests = builder.build(plan.requests_per_trial, 1, 0);
    let trial = common::trial::trial(
        speedup,
        plan.mode,
        builder.trace_offsets(speedup),
        requests,
        Duration::from_secs(30),
    );
    let stop = goodput::stop::Stop::never();
    let client = goodput::drive::client::http_client(16).unwrap();
    run_trial(
        client,
        Target::new(url, "/v1/completions", None),
        trial,
        &stop,
        Box::new(|_| {}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_arrives_at_its_own_times_at_speedup_1_and_10() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(dir.path(), &mooncake_trace());
    assert_eq!(plan.requests_per_trial, 12);
    for speedup in [1.0, 10.0] {
        let server = common::recording::start().await;
        let records = replay(&server.url, &plan, speedup).await;
        assert_eq!(records.len(), 12);
        assert!(
            records.iter().all(|r| r.ok()),
            "{:?}",
            records.iter().find(|r| !r.ok())
        );
        let got = server.bodies();
        assert_eq!(got.len(), 12);
        // The server's arrival times, relative to the first, against the schedule
        // (within 40 ms on a loaded machine; speedup 1 and 10 differ by up to 870 ms).
        for (i, r) in got.iter().enumerate() {
            let planned_ms = (i * i * 8) as f64 / speedup;
            let arrived_ms = (r.at_ns - got[0].at_ns) as f64 / 1e6;
            assert!(
                (arrived_ms - planned_ms).abs() < 40.0,
                "speedup {speedup}: request {i} at {arrived_ms} ms, planned {planned_ms}"
            );
        }
        for r in &records {
            let lag_ms = (r.sent - r.scheduled) as f64 / 1e6;
            assert!(lag_ms < 40.0, "send lag {lag_ms} ms");
            assert_eq!((r.input_tokens, r.requested_tokens), (Some(24), Some(3)));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_hash_ids_reach_the_server_as_identical_prefixes() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(dir.path(), &mooncake_trace());
    let server = common::recording::start().await;
    let records = replay(&server.url, &plan, 10.0).await;
    // Requests a fraction of a millisecond apart may arrive in either order, so each
    // received prompt is put back at its request's place (the prompts are distinct).
    let planned = planned_prompts(&plan);
    let mut received: Vec<String> = server
        .bodies()
        .iter()
        .map(|r| r.body["prompt"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(received.len(), planned.len());
    received.sort_by_key(|p| {
        planned
            .iter()
            .position(|q| q == p)
            .expect("a planned prompt")
    });
    assert_eq!(
        received, planned,
        "the server received each planned prompt once"
    );
    let prompts: Vec<Vec<String>> = received
        .iter()
        .map(|p| p.split(' ').map(str::to_string).collect())
        .collect();
    for (i, p) in prompts.iter().enumerate() {
        assert_eq!(p.len(), 24);
        for (j, q) in prompts.iter().enumerate().skip(i + 1) {
            // Even lines share blocks 1, 2 (16 words), odd lines block 7 (8 words);
            // the blocks after are every line's own.
            let shared = if i % 2 != j % 2 {
                0
            } else if i % 2 == 0 {
                16
            } else {
                8
            };
            let common = p.iter().zip(q).take_while(|(a, b)| a == b).count();
            assert!(
                common >= shared && common < shared + 3,
                "{i} {j}: {common} words in common, {shared} shared"
            );
        }
    }
    let shared: Vec<Option<u32>> = records.iter().map(|r| r.shared_tokens).collect();
    assert_eq!(&shared[..4], &[Some(0), Some(0), Some(16), Some(8)]);
}

#[test]
fn a_trace_run_records_what_was_asked_and_documents_its_workload() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(common::recording::start());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("trace.jsonl"), mooncake_trace()).unwrap();
    let toml = format!(
        "name = \"t\"\n[slo]\nttft_ms = 1000\n[load]\nmode = \"trace\"\npoints = [10]\nwarmup_requests = 0\n\
         [workload]\nkind = \"trace\"\npath = \"trace.jsonl\"\nblock_tokens = 8\nmax_input_tokens = 20\n\
         [engines.r]\nurl = \"{}\"\nmodel = \"m\"\n",
        server.url
    );
    std::fs::write(dir.path().join("p.toml"), toml).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"))
        .current_dir(dir.path())
        .args(["run", "p.toml", "-o", "r.json", "--quiet", "--no-html"])
        .env("GOODPUT_TELEMETRY", "none")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    let run = &report["run"];
    assert_eq!(run["load_mode"], "trace");
    let w = &run["workload"];
    assert_eq!(w["kind"], "trace");
    assert_eq!(w["facts"]["requests"], 12);
    assert_eq!(w["facts"]["clipped"], 12);
    assert_eq!(w["facts"]["sha256"].as_str().unwrap().len(), 64);
    let records = std::fs::read_to_string(dir.path().join("r.requests.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = records
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 12);
    assert!(
        recs.iter()
            .all(|r| r["input_tokens"] == 20 && r["requested_tokens"] == 3),
        "{}",
        records
    );
    assert_eq!(report["load"]["r"]["points"][0]["x"], 10.0);
}
