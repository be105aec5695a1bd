use super::*;

fn snap(text: &str) -> Snapshot {
    Snapshot::parse(text)
}

#[test]
fn detects_engines_by_prefix() {
    let names = |t: &str| catalogue::detect(snap(t).values.keys().map(String::as_str)).name;
    assert_eq!(names("vllm:num_requests_running 1\n"), "vllm");
    assert_eq!(names("sglang:num_running_reqs 1\n"), "sglang");
    assert_eq!(names("llamacpp:requests_processing 1\n"), "llama-cpp");
    assert_eq!(names("tgi_queue_size 0\n"), "tgi");
    assert_eq!(names("process_cpu_seconds_total 3\n"), "generic");
}

#[test]
fn a_counter_that_goes_down_is_a_reset() {
    let a = snap("# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total 100\n");
    let b = snap("# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total 7\n");
    assert!(went_down(&a, &b));
    assert!(!went_down(&b, &a));
}

#[test]
fn thinning_keeps_samples_bounded_and_spread() {
    let mut sh = Shared {
        stride: 1,
        ..Shared::default()
    };
    for i in 0..1000 {
        let s = snap(&format!("vllm:num_requests_running {i}\n"));
        record(&mut sh, &catalogue::VLLM, i as f64, s, 10);
    }
    assert!(sh.samples.len() < 10, "{}", sh.samples.len());
    assert!(sh.samples.len() >= 4);
    assert_eq!(sh.samples[0].t_s, 0.0);
    assert!(sh.samples.last().unwrap().t_s > 500.0);
}

#[test]
fn generic_engines_keep_gauge_maxima_bounded() {
    let mut sh = Shared {
        stride: 1,
        ..Shared::default()
    };
    let mut text = String::new();
    for i in 0..(MAX_GENERIC_NAMES + 50) {
        text.push_str(&format!("# TYPE g{i} gauge\ng{i} {i}\n"));
    }
    record(&mut sh, &catalogue::GENERIC, 0.0, snap(&text), 10);
    record(
        &mut sh,
        &catalogue::GENERIC,
        1.0,
        snap("# TYPE g1 gauge\ng1 50\n"),
        10,
    );
    assert_eq!(sh.gauges_max.len(), MAX_GENERIC_NAMES);
    assert_eq!(sh.gauges_max["g1"], 50.0);
}

#[test]
fn cross_check_tolerates_little_and_names_both_numbers() {
    let t = ServerTrial {
        catalogue: "vllm".into(),
        counts: ServerCounts {
            generation_tokens: Some(1005.0),
            requests_finished: Some(10.0),
            prompt_tokens: Some(500.0),
            ..ServerCounts::default()
        },
        client_generation_tokens: Some(1000),
        client_completed: Some(10),
        client_prompt_tokens: Some(400),
        ..ServerTrial::default()
    };
    let m = cross_check(&t, 0);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m[0].what, "prompt tokens");
    assert_eq!((m[0].server, m[0].client), (500.0, 400.0));
    let off = ServerTrial {
        counts: ServerCounts {
            generation_tokens: Some(1100.0),
            requests_finished: Some(12.0),
            ..t.counts.clone()
        },
        ..t.clone()
    };
    let whats: Vec<_> = cross_check(&off, 1).iter().map(|m| m.what).collect();
    assert_eq!(
        whats,
        ["generation tokens", "prompt tokens", "requests finished"]
    );
    // llama.cpp's prompt counter leaves cached tokens out: not checked.
    let llama = ServerTrial {
        catalogue: "llama-cpp".into(),
        ..t.clone()
    };
    assert!(cross_check(&llama, 0).is_empty());
    let reset = ServerTrial {
        counter_reset: true,
        ..off
    };
    assert!(cross_check(&reset, 0).is_empty());
}

#[test]
fn summary_pools_samples_and_sums_counters() {
    let s = |t_s, running, waiting, kv| report::ServerSample {
        t_s,
        running: Some(running),
        waiting: Some(waiting),
        kv_usage: Some(kv),
    };
    let a = ServerTrial {
        catalogue: "vllm".into(),
        counts: ServerCounts {
            preemptions: Some(2.0),
            ..ServerCounts::default()
        },
        prefix_queries: Some(100.0),
        prefix_hits: Some(25.0),
        samples: vec![s(0.0, 4.0, 0.0, 0.5), s(0.5, 4.0, 2.0, 0.9)],
        ..ServerTrial::default()
    };
    let b = ServerTrial {
        counts: ServerCounts {
            preemptions: Some(1.0),
            ..ServerCounts::default()
        },
        samples: vec![s(0.0, 2.0, 0.0, 0.2), s(0.5, 2.0, 0.0, 0.3)],
        ..a.clone()
    };
    let reset = ServerTrial {
        counts: ServerCounts {
            preemptions: Some(1000.0),
            ..ServerCounts::default()
        },
        counter_reset: true,
        samples: vec![],
        ..a.clone()
    };
    let sum = summarize([&a, &b, &reset]).unwrap();
    assert_eq!(sum.samples, 4);
    assert_eq!(sum.mean_running, Some(3.0));
    assert_eq!(sum.max_waiting, Some(2.0));
    assert_eq!(sum.waiting_share, Some(0.25));
    assert_eq!(sum.max_kv_usage, Some(0.9));
    assert_eq!(sum.counts.preemptions, Some(3.0));
    assert_eq!(sum.prefix_cache_hit_share, Some(0.25));
    assert!(summarize(std::iter::empty()).is_none());
}
