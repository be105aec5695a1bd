use super::*;
use crate::define::profile::Profile;

const HEAD: &str = r#"
name = "t"
[slo]
ttft_ms = 100
[load]
points = [1]
[workload]
input_tokens = 8
output_tokens = 8
[engines.vllm]
kind = "sim"
args = ["--time-scale", "10"]
[engines.far]
url = "http://127.0.0.1:9"
"#;

fn space(tune: &str) -> Result<Space, ProfileError> {
    let text = format!("{HEAD}{tune}");
    let p = Profile::parse(&text, "p.toml")?;
    p.tune
        .expect("a [tune] table")
        .space(&p.engines, p.source.as_deref(), "p.toml")
}

fn err(tune: &str) -> String {
    space(tune).expect_err("an error").to_string()
}

#[test]
fn the_space_is_the_product_of_the_values_last_flag_fastest() {
    let s = space(
        "[tune]\nengine = \"vllm\"\n[tune.flags]\n\"--max-num-seqs\" = [2, 4, 8]\n\"--max-num-batched-tokens\" = [256, 2048]\n",
    )
    .unwrap();
    assert_eq!(s.candidates.len(), 6);
    let labels: Vec<String> = s.candidates.iter().map(Candidate::label).collect();
    assert_eq!(labels[0], "--max-num-seqs 2 --max-num-batched-tokens 256");
    assert_eq!(labels[1], "--max-num-seqs 2 --max-num-batched-tokens 2048");
    assert_eq!(labels[5], "--max-num-seqs 8 --max-num-batched-tokens 2048");
    assert_eq!(s.objective, Objective::Capacity);
    assert_eq!(s.max_measured, DEFAULT_MAX_MEASURED);
    assert_eq!((s.max_trials, s.max_minutes, s.speaks), (None, None, None));
    let s = space(
        "[tune]\nengine = \"vllm\"\nspeaks = \"vllm\"\nmax_trials = 40\nmax_minutes = 2.5\nobjective = \"cost\"\nload = 4\nusd_per_hour_per_gpu = 1.5\n[tune.flags]\n\"-tp\" = [1, 2]\n",
    )
    .unwrap();
    assert_eq!(s.speaks, Some(FlagDialect::Vllm));
    assert_eq!((s.max_trials, s.max_minutes), (Some(40), Some(2.5)));
    assert_eq!((s.objective, s.load), (Objective::Cost, Some(4.0)));
}

#[test]
fn true_is_the_bare_flag_and_false_leaves_it_out() {
    let s = space(
        "[tune]\nengine = \"vllm\"\nmax_candidates_measured = 3\n[tune.flags]\n\"--async-scheduling\" = [true, false]\n\"--speculative-config\" = ['{\"method\": \"ngram\"}']\n\"--x\" = [0.5]\n",
    )
    .unwrap();
    assert_eq!(s.max_measured, 3);
    assert_eq!(
        s.candidates[0].args(),
        vec![
            "--async-scheduling",
            "--speculative-config",
            r#"{"method": "ngram"}"#,
            "--x",
            "0.5"
        ]
    );
    assert_eq!(
        s.candidates[1].args(),
        vec![
            "--speculative-config",
            r#"{"method": "ngram"}"#,
            "--x",
            "0.5"
        ]
    );
    let off = product(&[("--a".into(), vec![FlagValue::Switch(false)])]);
    assert_eq!(off[0].label(), "(no flags)");
}

#[test]
fn flags_go_where_each_kind_takes_them() {
    let extra = vec!["--max-num-seqs".to_string(), "{\"a\": 1}".to_string()];
    let sim = EngineSpec {
        kind: Some(EngineKind::Sim),
        args: vec!["--time-scale".into(), "10".into()],
        ..Default::default()
    };
    assert_eq!(
        with_flags(&sim, &extra).args,
        vec!["--time-scale", "10", "--max-num-seqs", "{\"a\": 1}"]
    );
    let argv = EngineSpec {
        command: Some(vec!["serve".into(), "--port".into(), "{port}".into()]),
        ..Default::default()
    };
    assert_eq!(
        with_flags(&argv, &extra).command.unwrap(),
        vec!["serve", "--port", "{port}", "--max-num-seqs", "{\"a\": 1}"]
    );
    let shell = EngineSpec {
        shell: Some("serve --port {port}".into()),
        ..Default::default()
    };
    assert_eq!(
        with_flags(&shell, &extra).shell.unwrap(),
        r#"serve --port {port} --max-num-seqs '{"a": 1}'"#
    );
}

#[test]
fn a_bad_space_is_refused_naming_the_key_and_its_line() {
    // Unknown keys, as everywhere in the profile.
    let e = Profile::parse(
        &format!("{HEAD}[tune]\nengine = \"vllm\"\nbudget = 3\n[tune.flags]\n\"--a\" = [1]\n"),
        "p.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("unknown field `budget`"), "{e}");
    let e = err("[tune]\nengine = \"nope\"\n[tune.flags]\n\"--a\" = [1]\n");
    assert!(
        e.contains("tune.engine") && e.contains("no engine `nope`") && e.contains("vllm, far"),
        "{e}"
    );
    assert!(e.contains("line 16"), "{e}");
    let e = err("[tune]\nengine = \"far\"\n[tune.flags]\n\"--a\" = [1]\n");
    assert!(e.contains("reached by URL"), "{e}");
    let e = err("[tune]\nengine = \"vllm\"\nobjective = \"cost\"\n[tune.flags]\n\"--a\" = [1]\n");
    assert!(
        e.contains("tune.objective") && e.contains("needs `load`"),
        "{e}"
    );
    let e = err(
        "[tune]\nengine = \"vllm\"\nobjective = \"cost\"\nload = 4\n[tune.flags]\n\"--a\" = [1]\n",
    );
    assert!(
        e.contains("needs a price") && e.contains("usd_per_hour_per_gpu"),
        "{e}"
    );
    let e = err("[tune]\nengine = \"vllm\"\nload = 4\n[tune.flags]\n\"--a\" = [1]\n");
    assert!(
        e.contains("tune.load") && e.contains("only with objective"),
        "{e}"
    );
    let e = err(
        "[tune]\nengine = \"vllm\"\nobjective = \"cost\"\nload = -1\n[tune.flags]\n\"--a\" = [1]\n",
    );
    assert!(e.contains("tune.load") && e.contains("above 0"), "{e}");
    let e = err("[tune]\nengine = \"vllm\"\nmax_trials = 0\n[tune.flags]\n\"--a\" = [1]\n");
    assert!(e.contains("tune.max_trials"), "{e}");
    let e = err("[tune]\nengine = \"vllm\"\nmax_minutes = 0\n[tune.flags]\n\"--a\" = [1]\n");
    assert!(e.contains("tune.max_minutes"), "{e}");
    let e = Profile::parse(
        &format!(
            "{HEAD}[tune]\nengine = \"vllm\"\nspeaks = \"sglang\"\n[tune.flags]\n\"--a\" = [1]\n"
        ),
        "p.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("speaks") || e.contains("vllm"), "{e}");
    let e = err("[tune]\nengine = \"vllm\"\n[tune.flags]\n");
    assert!(e.contains("no flag to vary"), "{e}");
    let e = err("[tune]\nengine = \"vllm\"\n[tune.flags]\n\"max-num-seqs\" = [1]\n");
    assert!(
        e.contains("tune.flags.max-num-seqs") && e.contains("is not a flag"),
        "{e}"
    );
    let e = err("[tune]\nengine = \"vllm\"\n[tune.flags]\n\"--a\" = []\n");
    assert!(e.contains("no values"), "{e}");
    let e = err("[tune]\nengine = \"vllm\"\n[tune.flags]\n\"--a\" = [true, 4]\n");
    assert!(e.contains("mixes true/false"), "{e}");
    let e = err("[tune]\nengine = \"vllm\"\n[tune.flags]\n\"--a\" = [4, 4]\n");
    assert!(e.contains("listed twice"), "{e}");
    let e = err(
        "[tune]\nengine = \"vllm\"\nmax_candidates_measured = 1\n[tune.flags]\n\"--a\" = [4]\n",
    );
    assert!(e.contains("at least 2"), "{e}");
    let many: Vec<String> = (0..65).map(|i| i.to_string()).collect();
    let e = err(&format!(
        "[tune]\nengine = \"vllm\"\n[tune.flags]\n\"--a\" = [{0}]\n\"--b\" = [{0}]\n",
        many.join(", ")
    ));
    assert!(e.contains("4225 candidates"), "{e}");
}
