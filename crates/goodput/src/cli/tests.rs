//! The command line's own tests: typed values, the options each command gets, and
//! the cluster writers' argument vector read back.

use clap::Parser;

use super::{Cli, Command};
use crate::define::profile::Overrides;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("goodput").chain(args.iter().copied()))
}

/// The sweep options `goodput run ARGS` gives.
fn run_sweep(args: &[String]) -> Overrides {
    let mut argv = vec!["run", "p.toml"];
    argv.extend(args.iter().map(String::as_str));
    match parse(&argv)
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
        .command
    {
        Command::Run(a) => a.common.trial.with_levels(&a.levels),
        other => panic!("{other:?}"),
    }
}

#[test]
fn cluster_argv_reads_back_as_the_same_options() {
    for flags in [
        &[][..],
        &[
            "--concurrency",
            "1,8,64",
            "--trials",
            "3",
            "--requests",
            "40",
        ][..],
        &["--concurrency", "2", "--trials", "auto"][..],
        &["--concurrency", "2", "--interleave"][..],
        &["--rate", "1", "--no-interleave"][..],
        &["--concurrency", "2", "--trials", "auto", "--prompt-salt"][..],
        &[
            "--rate",
            "0.5, 2.25,1e-3",
            "--slo",
            "ttft:1000,tpot:100,e2el:5000,ttfat:2000",
            "--seed",
            "18446744073709551615",
            "--engine",
            "a b",
            "--engine",
            "x=y",
            "--usd-per-hour",
            "2.5",
            "--usd-per-hour",
            "x=y=$0.125",
            "--prompt-salt=k3x9-Q_",
        ][..],
    ] {
        let mut argv = vec!["k8s", "p.toml"];
        argv.extend(flags);
        let Command::K8s(k) = parse(&argv).unwrap().command else {
            panic!("not k8s")
        };
        let opts = k.sweep.options();
        let again = run_sweep(&opts.argv());
        assert_eq!(again, opts, "{flags:?} -> {:?}", opts.argv());
        assert_eq!(again.argv(), opts.argv());
    }
}

#[test]
fn bad_values_are_usage_errors_naming_the_flag() {
    for (flag, value) in [
        ("--shard", "4/4"),
        ("--shard", "a/b"),
        ("--load-shard", "1"),
        ("--concurrency", "1,x"),
        ("--rate", "nan"),
        ("--slo", "ttft:-1"),
        ("--usd-per-hour", "a=cheap"),
    ] {
        let e = parse(&["run", "p.toml", flag, value]).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{flag} {value}");
        let text = e.to_string();
        assert!(
            text.contains(flag) && text.contains(value),
            "{flag} {value}: {text}"
        );
    }
}

#[test]
fn predict_with_a_flag_it_would_ignore_is_refused_naming_both() {
    for cmd in ["run", "search"] {
        for extra in [
            &["--shard", "0/2"][..],
            &["--load-shard", "0/2"][..],
            &["--save-result"][..],
        ] {
            let mut argv = vec![cmd, "p.toml", "--predict", "m.toml"];
            argv.extend(extra);
            let e = parse(&argv).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{argv:?}");
            let text = e.to_string();
            assert!(
                text.contains("--predict") && text.contains(extra[0]),
                "{argv:?}: {text}"
            );
        }
    }
    for flags in [
        &["--fresh"][..],
        &["--ttft-includes-connect"][..],
        &["--client-threads", "2"][..],
    ] {
        let flag = flags[0];
        let mut argv = vec!["run", "p.toml", "--predict", "m.toml"];
        argv.extend(flags);
        let Command::Run(a) = parse(&argv).unwrap().command else {
            panic!("not run")
        };
        let e = a.refuse_unsupported().unwrap_err().to_string();
        assert!(e.contains("--predict") && e.contains(flag), "{e}");
        // Without --predict the flag is fine.
        let Command::Run(a) = parse(&[&["run", "p.toml"][..], flags].concat())
            .unwrap()
            .command
        else {
            panic!("not run")
        };
        assert!(a.refuse_unsupported().is_ok());
    }
}

#[test]
fn each_command_gets_its_options() {
    let Command::Merge(m) = parse(&["merge", "a.json", "b.json", "--no-html"])
        .unwrap()
        .command
    else {
        panic!("not merge")
    };
    let m = m.options();
    assert_eq!(m.shards.len(), 2);
    assert!(!m.html && !m.force);
    let Command::Run(r) = parse(&["run", "--shard", "1/4", "-o", "r.json", "--quiet"])
        .unwrap()
        .command
    else {
        panic!("not run")
    };
    assert_eq!(
        r.common.shard,
        Some(crate::distribute::shard::Part { index: 1, count: 4 })
    );
    let e = r.common.execution(&r.output);
    assert!(e.quiet && e.html && !e.fresh);
    assert_eq!(e.output, std::path::Path::new("r.json"));
}

#[test]
fn slurm_status_takes_none_of_the_flags_that_write_a_job() {
    assert!(parse(&["slurm", "--status", "dir"]).is_ok());
    for extra in [
        &["p.toml"][..],
        &["--partition", "gpu"][..],
        &["--shards", "2"][..],
        &["--concurrency", "1,2"][..],
        &["--slo", "ttft:100"][..],
        &["-o", "elsewhere"][..],
    ] {
        let argv = [&["slurm", "--status", "dir"][..], extra].concat();
        let e = parse(&argv).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{argv:?}");
        assert!(e.to_string().contains("--status"), "{argv:?}: {e}");
    }
}

#[test]
fn interleave_flags_are_typed_and_exclusive() {
    let trial =
        |flags: &[&str]| run_sweep(&flags.iter().map(|f| f.to_string()).collect::<Vec<_>>());
    assert_eq!(trial(&[]).interleave, None);
    assert_eq!(trial(&["--interleave"]).interleave, Some(true));
    assert_eq!(trial(&["--no-interleave"]).interleave, Some(false));
    assert!(parse(&["run", "p.toml", "--interleave", "--no-interleave"]).is_err());
    assert!(parse(&["search", "p.toml", "--no-interleave"]).is_ok());
}

#[test]
fn a_bad_prompt_salt_is_a_usage_error_naming_the_flag() {
    let e = parse(&["run", "p.toml", "--prompt-salt=a b"]).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let text = e.to_string();
    assert!(
        text.contains("--prompt-salt") && text.contains("a b"),
        "{text}"
    );
}

/// The vLLM engine flags `goodput sim ARGS` gives.
fn sim_flags(args: &[&str]) -> goodput_sim::VllmFlags {
    let argv = [&["sim"][..], args].concat();
    match parse(&argv)
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
        .command
    {
        Command::Sim(a) => a.vllm.flags(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn sim_takes_vllms_engine_flags_in_vllms_spellings() {
    use goodput_sim::config::vllm::SpeculativeFlag;
    assert!(sim_flags(&[]).is_empty());
    let f = sim_flags(&[
        "--max-num-seqs",
        "8",
        "--max-num-batched-tokens=512",
        "--num_gpu_blocks_override",
        "100",
        "--block-size=32",
        "--speculative-config",
        r#"{"method": "ngram", "num_speculative_tokens": 3}"#,
        "--max-model-len",
        "2k",
        "--no-async-scheduling",
        "--enable-prefix-caching",
    ]);
    assert_eq!(
        f,
        goodput_sim::VllmFlags {
            max_num_seqs: Some(8),
            max_num_batched_tokens: Some(512),
            async_scheduling: Some(false),
            block_size: Some(32),
            num_gpu_blocks_override: Some(100),
            max_model_len: Some(2000),
            enable_prefix_caching: Some(true),
            speculative_config: Some(SpeculativeFlag {
                num_speculative_tokens: 3
            }),
        }
    );
    // The last of a switch's two spellings wins, as in vLLM's argparse.
    let f = sim_flags(&[
        "--async-scheduling",
        "--no-async-scheduling",
        "--async-scheduling",
        "--no-enable-prefix-caching",
    ]);
    assert_eq!(
        (f.async_scheduling, f.enable_prefix_caching),
        (Some(true), Some(false))
    );
}

#[test]
fn a_bad_vllm_flag_value_on_sim_names_the_flag() {
    for (flag, value, says) in [
        ("--max-num-seqs", "-1", "-1"),
        ("--block-size", "x", "x"),
        ("--max-model-len", "1.5K", "did you mean 1.5k"),
        (
            "--speculative-config",
            r#"{"method": "eagle", "num_speculative_tokens": 3}"#,
            "supported: ngram",
        ),
        ("--speculative-config", "5", "must be a JSON object"),
    ] {
        let e = parse(&["sim", &format!("{flag}={value}")]).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{flag} {value}");
        let text = e.to_string();
        assert!(
            text.contains(flag) && text.contains(says),
            "{flag} {value}: {text}"
        );
    }
}

/// `goodput sim ARGS`'s LoRA flags applied to `config`.
fn sim_lora(
    args: &[&str],
    config: goodput_sim::SimConfig,
) -> Result<goodput_sim::SimConfig, String> {
    let argv = [&["sim"][..], args].concat();
    match parse(&argv)
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
        .command
    {
        Command::Sim(a) => a.lora.apply(config),
        other => panic!("{other:?}"),
    }
}

#[test]
fn sim_takes_vllms_lora_flags() {
    use goodput_sim::config::adapters::AdaptersConfig;
    let c = sim_lora(
        &[
            "--enable-lora",
            "--lora-modules",
            "a=/x",
            "b",
            "--max-loras",
            "2",
        ],
        goodput_sim::SimConfig::default(),
    )
    .unwrap();
    let a = c.adapters.unwrap();
    assert_eq!(a.modules.keys().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!((a.max_loras, a.load_ms), (2, 0.0));
    // The config's slowdowns and load cost stay for the adapters the flags name.
    let mut slow = AdaptersConfig::named(["b"], 1);
    slow.load_ms = 50.0;
    slow.modules.insert("b".into(), 3.0);
    let config = goodput_sim::SimConfig {
        adapters: Some(slow),
        ..goodput_sim::SimConfig::default()
    };
    let a = sim_lora(&["--enable-lora", "--lora-modules", "a=/x", "b=/y"], config)
        .unwrap()
        .adapters
        .unwrap();
    assert_eq!(
        (a.modules["a"], a.modules["b"], a.load_ms),
        (1.0, 3.0, 50.0)
    );
    let e = sim_lora(
        &["--lora-modules", "a=/x"],
        goodput_sim::SimConfig::default(),
    )
    .unwrap_err();
    assert!(e.contains("--enable-lora"), "{e}");
    let e = sim_lora(
        &["--enable-lora", "--lora-modules", "a", "--max-loras", "0"],
        goodput_sim::SimConfig::default(),
    )
    .unwrap_err();
    assert!(
        e.contains("--max-loras") && e.contains("adapters.max_loras"),
        "{e}"
    );
    assert!(sim_lora(&[], goodput_sim::SimConfig::default())
        .unwrap()
        .adapters
        .is_none());
}
