//! `kind = "conversation"` against a server that records what it received: each
//! turn carries the earlier user messages and the exact replies the server sent,
//! think time separates a reply from the next turn, a closed loop keeps x sessions
//! (never more) in flight, the metrics come per turn, and a history too long for
//! the context is cut and counted. Then `goodput run` of the example profile on the
//! simulator, whose prefix cache the later turns hit.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use common::cli::Scratch;
use goodput::define::profile::{Api, LoadMode, Overrides, Profile};
use goodput::define::requests::Builder;
use goodput::drive::client::Target;
use goodput::drive::load::{arrival_offsets, run_conversation_trial};
use goodput::drive::record::RequestRecord;

fn plan(workload: &str, mode: &str) -> goodput::define::plan::Plan {
    let toml = format!(
        "name = \"c\"\n[slo]\nttft_ms = 1000\n[load]\nmode = \"{mode}\"\npoints = [1]\n\
         requests_per_trial = 12\n[workload]\nkind = \"conversation\"\ncalibrate = false\n\
         {workload}\n[engines.r]\nurl = \"http://127.0.0.1:1\"\nmodel = \"m\"\napi = \"chat\"\n"
    );
    Profile::parse(&toml, "c.toml")
        .unwrap()
        .into_plan("c.toml", &Overrides::default())
        .unwrap()
}

/// Runs one trial of the plan's conversations at `x` against `url`.
async fn converse(url: &str, plan: &goodput::define::plan::Plan, x: f64) -> Vec<RequestRecord> {
    let builder = Builder {
        workload: plan.workload.clone(),
        model: "m".into(),
        api: Api::Chat,
        tokens_per_word: 1.0,
        chat_fields: Default::default(),
        salt: None,
        images: None,
    };
    let conversations = builder
        .conversations(plan.requests_per_trial, 1, 0)
        .unwrap();
    let offsets = match plan.mode {
        LoadMode::Rate => arrival_offsets(x, 1.0, plan.requests_per_trial as usize, 5),
        _ => Vec::new(),
    };
    let trial = common::trial::trial(x, plan.mode, offsets, Vec::new(), Duration::from_secs(60));
    let stop = goodput::stop::Stop::never();
    let records = run_conversation_trial(
        goodput::drive::client::http_client(16).unwrap(),
        Target::new(url, "/v1/chat/completions", None),
        trial,
        conversations,
        &stop,
        Box::new(|_| {}),
    )
    .await;
    assert!(
        records.iter().all(|r| r.ok()),
        "{:?}",
        records.iter().find(|r| !r.ok())
    );
    records
}

fn messages(body: &serde_json::Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_turn_carries_the_earlier_messages_and_the_replies_the_server_sent() {
    let plan = plan(
        "turns = 3\ninput_tokens = 6\noutput_tokens = 3",
        "concurrency",
    );
    let server = common::recording::start().await;
    let records = converse(&server.url, &plan, 2.0).await;
    assert_eq!(records.len(), 12);
    let got = server.bodies();
    assert_eq!(got.len(), 12);
    // What the server answered to each last user message.
    let reply_to: HashMap<String, String> = got
        .iter()
        .map(|r| (messages(&r.body).last().unwrap().1.clone(), r.reply.clone()))
        .collect();
    assert_eq!(reply_to.len(), 12, "every user message is distinct");
    let mut by_turn = [0; 3];
    for r in &got {
        let m = messages(&r.body);
        assert_eq!(m.len() % 2, 1);
        let turn = m.len() / 2;
        by_turn[turn] += 1;
        for (k, pair) in m[..m.len() - 1].chunks(2).enumerate() {
            assert_eq!(pair[0].0, "user", "turn {k}");
            assert_eq!(pair[1].0, "assistant", "turn {k}");
            assert_eq!(
                pair[1].1, reply_to[&pair[0].1],
                "turn {k}'s reply is the text the server sent"
            );
            assert!(!pair[1].1.is_empty());
        }
    }
    assert_eq!(by_turn, [4, 4, 4], "4 sessions of 3 turns");
    // Records: a session's turns in order, each sent after the one before ended.
    let mut sessions: HashMap<u32, Vec<&RequestRecord>> = HashMap::new();
    for r in &records {
        sessions.entry(r.session.unwrap()).or_default().push(r);
    }
    assert_eq!(sessions.len(), 4);
    for turns in sessions.values_mut() {
        turns.sort_by_key(|r| r.turn);
        let idx: Vec<u32> = turns.iter().map(|r| r.turn.unwrap()).collect();
        assert_eq!(idx, [0, 1, 2]);
        for w in turns.windows(2) {
            assert!(w[1].sent >= w[0].done.unwrap());
            assert!(w[1].shared_tokens.unwrap() > w[0].shared_tokens.unwrap());
        }
        assert_eq!(turns[0].shared_tokens, Some(0));
    }
    // The per-turn metrics of the report's point.
    let m = goodput::measure::metrics::trial_metrics(&records, &plan.slo);
    let p = goodput::measure::metrics::point_summary(1.0, &[m], &[0.5], false);
    let c = p
        .conversation
        .expect("a conversation point has a per-turn table");
    assert_eq!((c.sessions, c.cut_sessions), (4, 0));
    let turns: Vec<(u32, u64)> = c.turns.iter().map(|t| (t.turn, t.completed)).collect();
    assert_eq!(turns, [(1, 4), (2, 4), (3, 4)]);
    let prompt = |i: usize| c.turns[i].mean_input_tokens.unwrap();
    assert!(
        prompt(0) < prompt(1) && prompt(1) < prompt(2),
        "histories grow"
    );
    assert!(c.turns.iter().all(|t| t.median_ttft_ms.is_some()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_turn_waits_the_think_time_after_the_reply() {
    let plan = plan(
        "turns = 3\ninput_tokens = 4\noutput_tokens = 2\nthink_time_ms = 150",
        "concurrency",
    );
    let server = common::recording::start().await;
    let records = converse(&server.url, &plan, 1.0).await;
    assert_eq!(records.len(), 12);
    let mut later = 0;
    for w in records.windows(2) {
        if w[1].session != w[0].session {
            // A new session starts at once.
            continue;
        }
        later += 1;
        let done = w[0].done.unwrap();
        // Planned exactly; sent no earlier (lateness only: a loaded machine).
        assert_eq!(w[1].scheduled, done + 150_000_000);
        assert!(w[1].sent >= w[1].scheduled);
        assert!(
            w[1].sent - done < 5_000_000_000,
            "sent within seconds, not lost"
        );
    }
    assert_eq!(later, 8, "4 sessions x 2 later turns");
    // The server saw the gap too.
    let got = server.bodies();
    for w in got.windows(2) {
        let (a, b) = (messages(&w[0].body), messages(&w[1].body));
        if b.len() > a.len() {
            assert!(b[..a.len()].iter().eq(a.iter()), "same session");
            assert!(w[1].at_ns - w[0].at_ns >= 140_000_000);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_loop_keeps_x_sessions_in_flight_and_no_more() {
    let plan = plan(
        "turns = 2\ninput_tokens = 4\noutput_tokens = 2",
        "concurrency",
    );
    let server = common::recording::start_slow(Duration::from_millis(150)).await;
    let records = converse(&server.url, &plan, 3.0).await;
    assert_eq!(records.len(), 12);
    let most = server
        .max_in_flight
        .load(std::sync::atomic::Ordering::SeqCst);
    assert!(most <= 3, "{most} in flight at x = 3");
    assert!(
        most >= 2,
        "3 sessions started together overlap at a 150 ms server"
    );
    let sessions: std::collections::BTreeSet<u32> =
        records.iter().map(|r| r.session.unwrap()).collect();
    assert_eq!(
        sessions.len(),
        6,
        "a worker starts a new session when one ends"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_starts_sessions_at_the_arrival_times() {
    let plan = plan("turns = 2\ninput_tokens = 4\noutput_tokens = 2", "rate");
    let server = common::recording::start().await;
    let records = converse(&server.url, &plan, 20.0).await;
    assert_eq!(records.len(), 12);
    let offsets = arrival_offsets(20.0, 1.0, 12, 5);
    for r in records.iter().filter(|r| r.turn == Some(0)) {
        assert_eq!(r.scheduled, offsets[r.session.unwrap() as usize]);
    }
    let firsts = records.iter().filter(|r| r.turn == Some(0)).count();
    assert_eq!(firsts, 6, "12 requests of 2-turn sessions");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_too_long_for_the_context_is_cut_and_counted() {
    // Each turn: 10 words in, 4 out; the server counts the words of all messages.
    // A context of 42 holds two turns of history with a third message and reply.
    let plan = plan(
        "turns = 4\ninput_tokens = 10\noutput_tokens = 4\nmax_context_tokens = 42",
        "concurrency",
    );
    let server = common::recording::start().await;
    let records = converse(&server.url, &plan, 1.0).await;
    assert_eq!(records.len(), 12);
    for r in &records {
        let cut = r.context_cut_turns.unwrap_or(0);
        let expected = match r.turn.unwrap() {
            0..=2 => 0,
            t => t - 2,
        };
        assert_eq!(cut, expected, "turn {:?}", r.turn);
        assert!(r.prompt_tokens.unwrap() + 4 <= 42, "{r:?}");
    }
    let got = server.bodies();
    let longest = got.iter().map(|r| messages(&r.body).len()).max().unwrap();
    assert_eq!(longest, 5, "at most 2 turns of history are sent");
    let m = goodput::measure::metrics::trial_metrics(&records, &plan.slo);
    let p = goodput::measure::metrics::point_summary(1.0, &[m], &[0.5], false);
    let c = p.conversation.clone().unwrap();
    assert_eq!((c.sessions, c.cut_sessions), (3, 3));
    // The report says so in every format.
    let report: goodput::report::Report = serde_json::from_value(serde_json::json!({
        "profile": "c", "slo": {"ttft_ms": 1000.0}, "environment": null, "quantiles": [0.5],
        "load": {"r": {"kv_pool_tokens": null, "points": [p]}},
    }))
    .unwrap();
    let text = goodput::render::show(&report, goodput::render::Format::Table, false);
    assert!(text.contains("Per turn"), "{text}");
    assert!(
        text.contains("3 of 3 sessions dropped their oldest turns to fit the context"),
        "{text}"
    );
    let md = goodput::render::show(&report, goodput::render::Format::Markdown, false);
    assert!(
        md.contains("**Per turn**") && md.contains("3 of 3 sessions"),
        "{md}"
    );
    let page = goodput::render::html(&report);
    assert!(page.contains("id=\"turns\"") && page.contains("3 of 3 sessions"));
}

/// `source = "sharegpt"`: each session is one conversation's human turns, read
/// here from the fixture independently of goodput's reader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharegpt_sessions_send_each_conversations_human_turns_in_order() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sharegpt/sharegpt.json"
    );
    let plan = plan(
        &format!(
            "source = \"sharegpt\"\npath = \"{fixture}\"\nturns = 4\ninput_tokens = 4\n\
             output_tokens = 2"
        ),
        "concurrency",
    );
    // The fixture's conversations of two or more turns, as lists of human messages.
    let raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let humans: Vec<Vec<String>> = raw
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["conversations"].as_array())
        .filter(|c| c.len() >= 2)
        .map(|c| {
            c.iter()
                .filter(|t| t["from"] == "human")
                .map(|t| t["value"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .filter(|h| !h.is_empty())
        .collect();
    let total: usize = humans.iter().map(Vec::len).sum();
    assert_eq!(
        (humans.len(), total),
        (11, 12),
        "the fixture as this test reads it"
    );
    let server = common::recording::start().await;
    // One session at a time: 11 sessions, 12 turns, the trial's 12 requests.
    let records = converse(&server.url, &plan, 1.0).await;
    assert_eq!(records.len(), 12);
    let got = server.bodies();
    let mut sent: Vec<String> = got
        .iter()
        .map(|r| messages(&r.body).last().unwrap().1.clone())
        .collect();
    sent.sort();
    let mut want: Vec<String> = humans.iter().flatten().cloned().collect();
    want.sort();
    assert_eq!(sent, want, "every human turn sent once, as the file has it");
    // The one conversation with two human turns: its second turn carries the first
    // and the reply the server sent to it.
    let two = humans.iter().find(|h| h.len() == 2).unwrap();
    let first = got
        .iter()
        .find(|r| messages(&r.body).last().unwrap().1 == two[0])
        .unwrap();
    let second = got
        .iter()
        .find(|r| messages(&r.body).last().unwrap().1 == two[1])
        .unwrap();
    let m = messages(&second.body);
    assert_eq!(m.len(), 3);
    assert_eq!(m[0], ("user".to_string(), two[0].clone()));
    assert_eq!(m[1], ("assistant".to_string(), first.reply.clone()));
    assert!(got.iter().all(|r| r.body["max_tokens"] == 2));
    // The workload names its file and the file's SHA-256, so reports compare.
    let goodput::define::plan::Workload::Conversation(w) = &plan.workload else {
        panic!("a conversation workload");
    };
    let digest = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(std::fs::read(fixture).unwrap());
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    assert_eq!(w.given_file, Some(("sharegpt.json".to_string(), digest)));
}

const EXAMPLE: &str = include_str!("../../../../../examples/conversation-sim.toml");

/// Server-counted prefix-cache hits of every trial of the report's one point.
fn prefix_hits(r: &goodput::report::Report) -> f64 {
    let p = &r.load["sim"].points[0];
    p.trials
        .iter()
        .map(|t| {
            let s = t.server.as_ref().expect("server metrics sampled");
            s.prefix_hits
                .expect("the simulator counts prefix-cache hits")
        })
        .sum()
}

#[test]
fn a_run_of_the_example_on_the_simulator_hits_its_prefix_cache_from_turn_2() {
    let dir = Scratch::new();
    dir.run(EXAMPLE, &["--quiet"]).assert().success();
    let r = dir.report();
    let p = &r.load["sim"].points[0];
    let c = p.conversation.as_ref().expect("per-turn table");
    assert_eq!(c.turns.len(), 4, "{c:?}");
    assert!(
        c.turns.iter().all(|t| t.completed > 0 && t.failed == 0),
        "{c:?}"
    );
    let hits = prefix_hits(&r);
    assert!(hits > 0.0, "later turns repeat their history: {hits}");
    let share = p.server.as_ref().unwrap().prefix_cache_hit_share;
    assert!(share.is_some_and(|s| s > 0.3), "{share:?}");
    // One-turn sessions share nothing: the hits came from the histories.
    let single = Scratch::new();
    single
        .run(&EXAMPLE.replace("turns = 4", "turns = 1"), &["--quiet"])
        .assert()
        .success();
    assert_eq!(prefix_hits(&single.report()), 0.0);
    let shown = common::cli::goodput()
        .args(["show", &dir.arg("r.json")])
        .output()
        .unwrap();
    assert!(common::cli::text(&shown.stdout).contains("Per turn"));
}

/// Without `max_context_tokens`, the history is cut to the context the engine's
/// `/v1/models` listed when it became ready (the simulator's `max_model_len`),
/// and the report says which context was used.
#[test]
fn without_max_context_tokens_histories_are_cut_to_the_engines_max_model_len() {
    let dir = Scratch::new();
    let cfg = dir.write("sim.toml", "max_model_len = 48\nstep_fixed_ms = 5.0\n");
    let profile = format!(
        "name = \"c\"\n[slo]\nttft_ms = 5000\n[load]\nmode = \"concurrency\"\npoints = [2]\n\
         requests_per_trial = 8\ntrials = 1\nwarmup_requests = 0\n[workload]\n\
         kind = \"conversation\"\nturns = 4\ninput_tokens = 10\noutput_tokens = 4\n\
         calibrate = false\n[telemetry]\nsource = \"none\"\n[engines.sim]\nkind = \"sim\"\n\
         api = \"chat\"\nargs = [\"--config\", \"{}\"]\n",
        cfg.display()
    );
    dir.run(&profile, &["--quiet", "--no-html"])
        .assert()
        .success();
    let r = dir.report();
    let notices = &r.run.as_ref().unwrap().notices;
    assert!(
        notices.iter().any(|n| n.kind == report::NoticeKind::Context
            && n.text.contains("cut to the engine's max_model_len = 48")),
        "{notices:?}"
    );
    let c = r.load["sim"].points[0].conversation.as_ref().unwrap();
    assert!(c.cut_sessions > 0, "{c:?}");
    assert!(c.turns.iter().all(|t| t.failed == 0), "{c:?}");
}
