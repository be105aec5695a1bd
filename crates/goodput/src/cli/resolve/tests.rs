use clap::Parser;

use crate::cli::runs::run_plan;
use crate::cli::{Cli, Command, RunArgs};
use crate::define::plan::Workload;
use crate::define::profile::LoadMode;

fn run_args(args: &[&str]) -> RunArgs {
    let mut argv = vec!["goodput", "run"];
    argv.extend_from_slice(args);
    match Cli::try_parse_from(argv).expect("flags parse").command {
        Command::Run(a) => a,
        _ => unreachable!("a run"),
    }
}

fn plan(args: &[&str]) -> anyhow::Result<crate::define::plan::Plan> {
    run_plan(&run_args(args))
}

#[test]
fn a_url_alone_runs_with_vllm_like_defaults() {
    let p = plan(&["--url", "http://127.0.0.1:9/"]).expect("a plan");
    assert_eq!(p.slo.bound(report::SloMetric::Ttft), Some(1000.0));
    assert_eq!(p.slo.bound(report::SloMetric::Tpot), Some(100.0));
    assert_eq!(p.mode, LoadMode::Concurrency);
    assert_eq!(p.points, [1.0, 4.0, 16.0]);
    assert!(matches!(
        p.workload,
        Workload::Synthetic {
            input_tokens: 1024,
            output_tokens: 128,
            ..
        }
    ));
    let (name, e) = p.engines.first().expect("one engine");
    assert_eq!(name, "server");
    assert_eq!(e.url.as_deref(), Some("http://127.0.0.1:9"));
    let toml = p.profile_toml.expect("the resolved profile");
    assert!(toml.contains("http://127.0.0.1:9"), "{toml}");
}

#[test]
fn the_issues_command_maps_every_vllm_flag() {
    let p = plan(&[
        "--url",
        "http://127.0.0.1:9",
        "--model",
        "org/tiny-llama",
        "--max-concurrency",
        "2",
        "--num-prompts",
        "20",
        "--random-input-len",
        "64",
        "--random-output-len",
        "16",
        "--goodput",
        "ttft:1000",
        "tpot:100",
        "--endpoint",
        "/v1/chat/completions",
        "--num-warmups",
        "0",
        "--seed",
        "7",
    ])
    .expect("a plan");
    assert_eq!(
        (p.mode, p.points.clone()),
        (LoadMode::Concurrency, vec![2.0])
    );
    assert_eq!(
        (p.requests_per_trial, p.warmup_requests, p.seed),
        (20, 0, 7)
    );
    assert!(matches!(
        p.workload,
        Workload::Synthetic {
            input_tokens: 64,
            output_tokens: 16,
            ..
        }
    ));
    let (name, e) = p.engines.first().expect("one engine");
    assert_eq!(name, "tiny-llama");
    assert_eq!(e.model.as_deref(), Some("org/tiny-llama"));
    assert_eq!(e.api, crate::define::profile::Api::Chat);
}

#[test]
fn a_request_rate_is_the_open_loop_and_inf_is_everything_at_once() {
    let p = plan(&[
        "--port",
        "9",
        "--request-rate",
        "2.5",
        "--max-concurrency",
        "3",
        "--burstiness",
        "0.5",
    ])
    .expect("a plan");
    assert_eq!((p.mode, p.points.clone()), (LoadMode::Rate, vec![2.5]));
    assert_eq!((p.max_concurrency, p.burstiness), (Some(3), 0.5));
    assert_eq!(p.engines[0].url.as_deref(), Some("http://127.0.0.1:9"));
    let p = plan(&[
        "--url",
        "http://h:1",
        "--request-rate",
        "inf",
        "--num-prompts",
        "12",
    ])
    .expect("a plan");
    assert_eq!(
        (p.mode, p.points.clone()),
        (LoadMode::Concurrency, vec![12.0])
    );
}

#[test]
fn a_profile_and_flags_mix_and_missing_tables_take_defaults() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("p.toml");
    std::fs::write(&path, "[workload]\ninput_tokens = 32\noutput_tokens = 8\n").expect("write");
    let p = plan(&[
        path.to_str().unwrap_or_default(),
        "--url",
        "http://127.0.0.1:9",
        "--num-prompts",
        "5",
    ])
    .expect("a plan");
    assert_eq!(p.name, "p");
    assert!(matches!(
        p.workload,
        Workload::Synthetic {
            input_tokens: 32,
            ..
        }
    ));
    assert_eq!(p.requests_per_trial, 5);
    assert_eq!(p.slo.bound(report::SloMetric::Ttft), Some(1000.0));
}

#[test]
fn every_missing_or_malformed_table_is_reported_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("p.toml");
    std::fs::write(&path, "slo = 3\nload = \"x\"\n").expect("write");
    let e = plan(&[path.to_str().unwrap_or_default()])
        .expect_err("refused")
        .to_string();
    for part in [
        "`slo` must be a table",
        "`load` must be a table",
        "no [engines.NAME] table",
        "--url",
    ] {
        assert!(e.contains(part), "{part} in {e}");
    }
}

#[test]
fn flags_that_cannot_map_are_refused_with_the_reason() {
    for (args, says) in [
        (
            vec!["--url", "http://h:1", "--temperature", "0.7"],
            "greedily",
        ),
        (
            vec!["--url", "http://h:1", "--endpoint", "/v1/rerank"],
            "/v1/embeddings",
        ),
        (
            vec![
                "--url",
                "http://h:1",
                "--concurrency",
                "2",
                "--max-concurrency",
                "2",
            ],
            "one spelling",
        ),
        (
            vec!["--url", "http://h:1", "--metric-percentiles", "99,101"],
            "101",
        ),
        (
            vec![
                "--url",
                "http://h:1",
                "--percentile-metrics",
                "ttft,goodput",
            ],
            "goodput",
        ),
        (
            vec!["--url", "http://h:1", "--goodput", "ttft:-1"],
            "--goodput",
        ),
    ] {
        let e = plan(&args).expect_err("refused").to_string();
        assert!(e.contains(says), "{args:?}: {e}");
    }
}

#[test]
fn an_embeddings_server_gets_an_e2el_slo_when_none_is_given() {
    for args in [
        vec!["--url", "http://h:1", "--endpoint", "/v1/embeddings"],
        vec!["--url", "http://h:1", "--api", "embeddings"],
    ] {
        let p = plan(&args).unwrap();
        assert_eq!(
            p.engines["server"].api,
            crate::define::profile::Api::Embeddings
        );
        let bounded: Vec<_> = p.slo.bounds.iter().collect();
        assert_eq!(bounded, [(report::SloMetric::E2el, 1000.0)], "{args:?}");
    }
    // A TTFT bound given with it is refused, naming e2el_ms.
    let e = plan(&[
        "--url",
        "http://h:1",
        "--api",
        "embeddings",
        "--slo",
        "ttft:100",
    ])
    .expect_err("no TTFT for embeddings")
    .to_string();
    assert!(e.contains("ttft") && e.contains("e2el_ms"), "{e}");
}

#[test]
fn vllm_datasets_map_onto_goodputs_workloads() {
    let p = plan(&[
        "--url",
        "http://h:1",
        "--random-prefix-len",
        "100",
        "--random-input-len",
        "50",
    ])
    .expect("a plan");
    match p.workload {
        Workload::Prefix(w) => {
            assert_eq!((w.groups, w.prefix_tokens, w.suffix_tokens), (1, 100, 50))
        }
        other => panic!("not a prefix workload: {other:?}"),
    }
    let p = plan(&["--url", "http://h:1", "--dataset-name", "prefix_repetition"]).expect("a plan");
    assert!(matches!(p.workload, Workload::Prefix(ref w) if w.groups == 10));
    let e = plan(&["--url", "http://h:1", "--dataset-name", "custom"]).expect_err("needs a path");
    assert!(e.to_string().contains("workload.path"), "{e}");
}

#[test]
fn without_a_url_or_profile_the_quick_profile_runs_as_before() {
    let p = plan(&[]).expect("the quick profile");
    assert_eq!(p.name, "quick-sim");
    assert_eq!(p.engines.len(), 3);
}

#[test]
fn the_quick_profile_says_its_milliseconds_are_ten_times_short() {
    let p = plan(&[]).expect("the quick profile");
    let info = crate::sweep::plan_info(&p);
    assert_eq!(info.notices.len(), 3, "{:?}", info.notices);
    assert!(
        info.notices[0].kind == report::NoticeKind::TimeScale
            && info.notices[0].text.contains("--time-scale 10"),
        "{:?}",
        info.notices
    );
    assert!(info.profile.is_some_and(|t| t.contains("quick-sim")));
}

#[test]
fn a_vllm_flag_the_workload_kind_has_no_key_for_is_refused_naming_it() {
    for (args, flag, kind) in [
        (&["--tokenizer", "t.json"][..], "--tokenizer", "synthetic"),
        (
            &["--dataset-name", "sharegpt", "--random-range-ratio", "0.5"][..],
            "--random-range-ratio",
            "sharegpt",
        ),
    ] {
        let mut all = vec!["--url", "http://h:1"];
        all.extend(args);
        let e = plan(&all).expect_err("refused").to_string();
        assert!(
            e.contains(flag) && e.contains(&format!("{kind} workload")),
            "{e}"
        );
    }
}
