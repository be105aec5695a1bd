//! Unit tests of the plan: defaults, overrides, and every check's key and line.

use super::*;
use crate::define::profile::{Overrides, Profile, ProfileError};

const BASE: &str = "name = \"t\"\n[slo]\nttft_ms = 100\ntpot_ms = 10\n[load]\npoints = [4, 1]\nrequests_per_trial = 3\n[workload]\ninput_tokens = 10\noutput_tokens = 5\n";

fn plan(extra: &str) -> Result<Plan, ProfileError> {
    Profile::parse(&format!("{BASE}{extra}"), "p.toml")?.into_plan("p.toml", &Overrides::default())
}

#[test]
fn defaults_and_sorting() {
    let p = plan("[engines.a]\nurl = \"http://127.0.0.1:1\"\n").unwrap();
    assert_eq!(p.points, vec![1.0, 4.0]);
    assert_eq!(p.trials, 1);
    assert_eq!(p.quantiles.len(), 51);
    assert_eq!(p.quantiles[1], 0.02);
}

#[test]
fn env_vars_expand_and_a_missing_one_is_named() {
    std::env::set_var("GOODPUT_TEST_MODEL_PATH", "/m.gguf");
    let p = plan("[engines.a]\nkind = \"llama-cpp\"\nmodel = \"${GOODPUT_TEST_MODEL_PATH}\"\n")
        .unwrap();
    assert_eq!(p.engines["a"].model.as_deref(), Some("/m.gguf"));
    let e = plan("[engines.a]\nkind = \"llama-cpp\"\nmodel = \"${GOODPUT_NOT_SET_X}\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("engines.a.model") && e.contains("GOODPUT_NOT_SET_X"),
        "{e}"
    );
}

#[test]
fn engine_errors_name_the_field() {
    let e = plan("[engines.a]\nkind = \"vllm\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("engines.a.model"), "{e}");
    let e = plan("[engines.a]\nurl = \"localhost:8000\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("engines.a.url"), "{e}");
    let e = plan("[engines.a]\nurl = \"http://x\"\nport = \"any\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("engines.a.port"), "{e}");
    let e = plan("[engines.a]\nkind = \"llama-cpp\"\nmodel = \"m\"\npython = \"/py\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("engines.a.python"), "{e}");
    std::env::set_var("GOODPUT_TEST_VENV_PY", "/venv/bin/python");
    let p =
        plan("[engines.a]\nkind = \"vllm\"\nmodel = \"m\"\npython = \"${GOODPUT_TEST_VENV_PY}\"\n")
            .unwrap();
    assert_eq!(p.engines["a"].python.as_deref(), Some("/venv/bin/python"));
}

#[test]
fn unknown_keys_name_key_and_line() {
    let e = Profile::parse(
        &format!("{BASE}[engines.a]\nurl = \"http://x\"\nmodle = \"m\"\n"),
        "p.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("modle") && e.contains("line 13"), "{e}");
}

#[test]
fn overrides_apply() {
    let prof = Profile::parse(
        &format!("{BASE}[engines.a]\nurl = \"http://x\"\n[engines.b]\nurl = \"http://y\"\n"),
        "p",
    )
    .unwrap();
    let ov = Overrides {
        rate: Some(vec![2.5]),
        trials: Some(crate::define::profile::TrialsSpec::Count(3)),
        requests: Some(9),
        slo: Some(crate::define::profile::parse_slo("ttft:1000,tpot:100,e2el:5000").unwrap()),
        engines: vec!["b".into()],
        ..Default::default()
    };
    let p = prof.into_plan("p", &ov).unwrap();
    assert_eq!(p.mode, crate::define::profile::LoadMode::Rate);
    assert_eq!(p.points, vec![2.5]);
    assert_eq!((p.trials, p.requests_per_trial), (3, 9));
    assert_eq!(p.slo.bound(report::SloMetric::E2el), Some(5000.0));
    assert_eq!(p.engines.keys().collect::<Vec<_>>(), vec!["b"]);
    assert!(crate::define::profile::parse_slo("ttft:x").is_err());
    assert!(crate::define::profile::parse_slo("foo:1").is_err());
}

#[test]
fn dcgm_telemetry_needs_its_url_and_nothing_else_takes_one() {
    let engine = "[engines.a]\nurl = \"http://127.0.0.1:1\"\n";
    for (telemetry, key, says) in [
        ("source = \"dcgm\"\n", "telemetry.url", "needs `url`"),
        (
            "source = \"nvml\"\nurl = \"http://h:9400/metrics\"\n",
            "telemetry.url",
            "only by source = \"dcgm\"",
        ),
        (
            "source = \"dcgm\"\nurl = \"h:9400\"\n",
            "telemetry.url",
            "http://",
        ),
        (
            "gpus = [0]\n",
            "telemetry.gpus",
            "only by source = \"dcgm\"",
        ),
    ] {
        let e = plan(&format!("{engine}[telemetry]\n{telemetry}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(key) && e.contains(says), "{telemetry}: {e}");
    }
    let p = plan(&format!(
        "{engine}[telemetry]\nsource = \"dcgm\"\nurl = \"http://h:9400\"\n\
         gpus = [1, \"GPU-8c16e996\"]\n"
    ))
    .unwrap();
    use crate::define::profile::GpuSelector;
    assert_eq!(
        p.telemetry.gpus,
        [
            GpuSelector::Index(1),
            GpuSelector::Uuid("GPU-8c16e996".into())
        ]
    );
    // Without them the telemetry's JSON (part of the plan's fingerprint) is as before.
    let p = plan(engine).unwrap();
    let json = serde_json::to_string(&p.telemetry).unwrap();
    assert!(!json.contains("url") && !json.contains("gpus"), "{json}");
}

#[test]
fn every_numeric_field_is_checked_with_its_key_and_line() {
    let engine = "[engines.a]\nurl = \"http://127.0.0.1:1\"\n";
    // BASE has 10 lines, the engine 2 more; the bad key follows.
    for (extra, key) in [
        (
            "[telemetry.cooldown]\nmax_wait_s = inf\n",
            "telemetry.cooldown.max_wait_s",
        ),
        (
            "[telemetry.cooldown]\nmax_temp_c = nan\n",
            "telemetry.cooldown.max_temp_c",
        ),
        (
            "[telemetry]\ninterval_ms = 9223372036854775807\n",
            "telemetry.interval_ms",
        ),
    ] {
        let e = plan(&format!("{engine}{extra}")).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains("line 14"), "{extra}: {e}");
    }
    for (extra, key) in [
        ("ready_timeout_s = inf\n", "engines.a.ready_timeout_s"),
        ("stop_grace_s = 1e300\n", "engines.a.stop_grace_s"),
        ("port = 0\n", "engines.a.port"),
        ("kv_pool_tokens = 0\n", "engines.a.kv_pool_tokens"),
    ] {
        let e = plan(&format!("{engine}{extra}")).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains("line 13"), "{extra}: {e}");
    }
    let over = |load: &str| {
        BASE.replace(
            "requests_per_trial = 3\n",
            &format!("requests_per_trial = 3\n{load}\n"),
        )
    };
    for (load, key) in [
        ("request_timeout_s = 1e300", "load.request_timeout_s"),
        ("burstiness = inf", "load.burstiness"),
        ("max_concurrency = 0", "load.max_concurrency"),
        ("warmup_requests = 4000000000", "load.warmup_requests"),
    ] {
        let e = Profile::parse(&format!("{}{engine}", over(load)), "p.toml")
            .unwrap()
            .into_plan("p.toml", &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(key) && e.contains("line 8"), "{load}: {e}");
    }
}

#[test]
fn a_bad_value_from_a_flag_names_the_flag_not_a_line() {
    let prof = Profile::parse(&format!("{BASE}[engines.a]\nurl = \"http://x\"\n"), "p").unwrap();
    let ov = Overrides {
        trials: Some(crate::define::profile::TrialsSpec::Count(0)),
        ..Default::default()
    };
    let e = prof.into_plan("p", &ov).unwrap_err().to_string();
    assert!(e.contains("--trials") && !e.contains("line"), "{e}");
}

#[test]
fn jsonl_requests_that_cannot_succeed_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    for (body, needle) in [
        (
            "{\"prompt\": \"hi\"}\n{\"prompt\": \"x\", \"max_tokens\": 0}\n",
            ":2: max_tokens 0",
        ),
        (
            "{\"prompt\": \"hi\"}\n\n{\"prompt\": \"  \"}\n",
            ":3: the prompt is empty",
        ),
    ] {
        let path = dir.path().join("w.jsonl");
        std::fs::write(&path, body).unwrap();
        let text = format!(
            "name = \"t\"\n[slo]\nttft_ms = 1\n[load]\npoints = [1]\nrequests_per_trial = 1\n[workload]\nkind = \"jsonl\"\npath = \"{}\"\n[engines.a]\nurl = \"http://x\"\n",
            path.display()
        );
        let e = Profile::parse(&text, "p.toml")
            .unwrap()
            .into_plan("p.toml", &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("workload.path") && e.contains(needle), "{e}");
    }
}

#[test]
fn auto_trials_have_a_budget_and_refuse_its_keys_with_a_count() {
    use crate::define::plan::{AUTO_MAX_TRIALS, AUTO_MIN_TRIALS, AUTO_WIDTH};
    use crate::define::profile::TrialsSpec;
    let text = |load: &str| {
        format!(
            "name = \"t\"\n[slo]\nttft_ms = 100\n[load]\npoints = [1]\nrequests_per_trial = 4\n{load}\n[workload]\ninput_tokens = 10\noutput_tokens = 5\n[engines.e]\nurl = \"http://127.0.0.1:1\"\n"
        )
    };
    let parse = |load: &str, ov: &Overrides| {
        Profile::parse(&text(load), "p.toml")
            .map_err(|e| e.to_string())
            .and_then(|p| p.into_plan("p.toml", ov).map_err(|e| e.to_string()))
    };
    let p = parse("trials = \"auto\"", &Overrides::default()).unwrap();
    assert_eq!(p.trials, AUTO_MIN_TRIALS);
    let rule = p.adaptive.unwrap();
    assert_eq!(
        (rule.min, rule.max, rule.width),
        (AUTO_MIN_TRIALS, AUTO_MAX_TRIALS, Some(AUTO_WIDTH))
    );
    let p = parse(
        "trials = \"auto\"\nmin_trials = 3\nmax_trials = 4\ntrials_width = 0.1",
        &Overrides::default(),
    )
    .unwrap();
    let rule = p.adaptive.unwrap();
    assert_eq!(
        (p.trials, rule.min, rule.max, rule.width),
        (3, 3, 4, Some(0.1))
    );
    // --trials auto over a profile's count.
    let ov = Overrides {
        trials: Some(TrialsSpec::Auto),
        ..Default::default()
    };
    assert!(parse("trials = 3", &ov).unwrap().adaptive.is_some());
    // A budget key beside a count would be ignored: refused, naming it and its line.
    let e = parse("trials = 3\nmax_trials = 5", &Overrides::default()).unwrap_err();
    assert!(
        e.contains("load.max_trials") && e.contains("line 8") && e.contains("auto"),
        "{e}"
    );
    let e = parse(
        "trials = \"auto\"\nmin_trials = 5\nmax_trials = 4",
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(e.contains("load.max_trials"), "{e}");
    let e = parse("trials = \"many\"", &Overrides::default()).unwrap_err();
    assert!(e.contains("auto"), "{e}");
    assert_eq!("auto".parse::<TrialsSpec>(), Ok(TrialsSpec::Auto));
    assert_eq!("4".parse::<TrialsSpec>(), Ok(TrialsSpec::Count(4)));
    assert!("x".parse::<TrialsSpec>().is_err());
}

/// The workload part of the plan's fingerprint, for profiles of every kind written
/// before workloads were typed by kind: unchanged, so their runs still resume.
#[test]
fn workload_fingerprints_of_old_profiles_do_not_change() {
    // Relative, as cargo runs tests in the crate's folder: a trace's path is in
    // its fingerprint, and the same on every checkout.
    let dir = "../../examples/";
    for (file, want) in [
        ("quick.toml", "607e309a0bd896bd"),
        ("prefix-sim.toml", "f7c16cda9ec03cdf"),
        ("conversation-sim.toml", "5ca57e600def6b15"),
        ("trace-mooncake.toml", "fce5b815e9c6cc59"),
        ("trace-azure.toml", "a1f294d4d91787a1"),
        ("reasoning-sim.toml", "46071e015db0f88c"),
    ] {
        let path = std::path::PathBuf::from(dir).join(file);
        let plan = Profile::load(&path)
            .and_then(|p| p.into_plan(file, &Overrides::default()))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let got = plan.fingerprints()["workload"].clone();
        assert_eq!(got, want, "{file}");
    }
    let url = "[engines.a]\nurl = \"http://127.0.0.1:1\"\n";
    for (extra, want) in [
        (
            "text = \"repetitive\"\nrange_ratio = 0.25\ncalibrate = false\n",
            "463a7d13a560f6ac",
        ),
        ("reasoning_effort = \"low\"\n", "7826871d9ebd5911"),
    ] {
        let mut p = Profile::parse(&format!("{BASE}{extra}{url}"), "p.toml").unwrap();
        for e in p.engines.values_mut() {
            e.api = crate::define::profile::Api::Chat;
        }
        let got = p
            .into_plan("p.toml", &Overrides::default())
            .unwrap()
            .fingerprints()["workload"]
            .clone();
        assert_eq!(got, want, "{extra}");
    }
}

#[test]
fn a_key_of_another_kind_is_refused_naming_key_kind_and_line() {
    // BASE's [workload] is synthetic; line 11 is the stray key.
    let e = plan("turns = 3\n[engines.a]\nurl = \"http://127.0.0.1:1\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`turns`") && e.contains("synthetic workload") && e.contains("line 11"),
        "{e}"
    );
    let trace = "name = \"t\"\n[slo]\nttft_ms = 100\n[load]\nmode = \"trace\"\n[workload]\nkind = \"trace\"\npath = \"t.jsonl\"\ninput_tokens = 10\n[engines.a]\nurl = \"http://127.0.0.1:1\"\n";
    let e = Profile::parse(trace, "p.toml").unwrap_err().to_string();
    assert!(
        e.contains("`input_tokens`") && e.contains("trace workload") && e.contains("line 9"),
        "{e}"
    );
    // Each kind's own keys, and the chat controls, are accepted.
    for kind in [
        "synthetic",
        "jsonl",
        "prefix",
        "trace",
        "conversation",
        "sharegpt",
    ] {
        let k = toml::Value::String(kind.into()).try_into().unwrap();
        for key in crate::define::profile::keys(k) {
            assert_eq!(
                crate::define::profile::stray_key(k, [*key, "reasoning_effort"]),
                None
            );
        }
    }
}

#[test]
fn engines_interleave_by_default_only_when_none_is_launched_on_a_gpu() {
    let url = |n: &str| format!("[engines.{n}]\nurl = \"http://127.0.0.1:1\"\n");
    let sim = |n: &str| format!("[engines.{n}]\nkind = \"sim\"\npreset = \"fixed\"\n");
    let vllm = |n: &str| format!("[engines.{n}]\nkind = \"vllm\"\nmodel = \"m\"\n");
    let cmd = |n: &str| format!("[engines.{n}]\ncommand = [\"server\", \"{{port}}\"]\n");
    assert!(plan(&format!("{}{}", url("a"), sim("b")))
        .unwrap()
        .interleaves());
    assert!(!plan(&url("a")).unwrap().interleaves(), "one engine");
    assert!(!plan(&format!("{}{}", sim("a"), vllm("b")))
        .unwrap()
        .interleaves());
    assert!(!plan(&format!("{}{}", url("a"), cmd("b")))
        .unwrap()
        .interleaves());
    // The key, and the flags over it, force either way.
    let keyed = |v: &str, engines: String| {
        let text = format!("{BASE}{engines}").replace(
            "requests_per_trial = 3\n",
            &format!("requests_per_trial = 3\ninterleave = {v}\n"),
        );
        Profile::parse(&text, "p.toml").unwrap()
    };
    let ov = |i: Option<bool>| Overrides {
        interleave: i,
        ..Default::default()
    };
    let two_sims = || format!("{}{}", sim("a"), sim("b"));
    let two_gpus = || format!("{}{}", vllm("a"), vllm("b"));
    let p = keyed("false", two_sims())
        .into_plan("p", &ov(None))
        .unwrap();
    assert!(!p.interleaves());
    let p = keyed("true", two_gpus()).into_plan("p", &ov(None)).unwrap();
    assert!(p.interleaves());
    let p = keyed("false", two_sims())
        .into_plan("p", &ov(Some(true)))
        .unwrap();
    assert!(p.interleaves());
    let p = keyed("true", two_sims())
        .into_plan("p", &ov(Some(false)))
        .unwrap();
    assert!(!p.interleaves());
    // The profile as run keeps the choice, so running it again repeats it.
    let toml = p.profile_toml.unwrap();
    assert!(toml.contains("interleave = false"), "{toml}");
}
