//! API keys are read from the environment variable the profile names and never
//! written anywhere: not to the report, the requests file, the HTML, engine logs,
//! stdout or stderr, and not into error messages. A planted key is grepped for in
//! every output, on a run that succeeds and on one that fails.

mod common;

use common::cli::goodput;
use common::server::closed_port;

const KEY: &str = "sk-planted-4f1e9c0b7d2a6e35";

fn outputs_of(dir: &std::path::Path, stdout: &[u8], stderr: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut all = vec![
        ("stdout".to_string(), stdout.to_vec()),
        ("stderr".to_string(), stderr.to_vec()),
    ];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_dir() {
            // REPORT.logs/: the engine logs.
            all.extend(outputs_of(&e.path(), &[], &[]).into_iter().skip(2));
            continue;
        }
        all.push((
            e.path().display().to_string(),
            std::fs::read(e.path()).unwrap(),
        ));
    }
    all
}

fn assert_no_key(outputs: &[(String, Vec<u8>)]) {
    for (name, bytes) in outputs {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains(KEY), "the API key leaked into {name}");
    }
}

#[test]
fn a_planted_api_key_appears_in_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    let profile = format!(
        r#"
name = "secrets"
[slo]
ttft_ms = 500
tpot_ms = 50
[load]
points = [1]
requests_per_trial = 3
[workload]
input_tokens = 8
output_tokens = 4
[engines.sim]
kind = "sim"
preset = "fixed"
api_key_env = "GOODPUT_TEST_API_KEY"
args = ["--time-scale", "5"]
[engines.with-key-in-args]
kind = "sim"
preset = "fixed"
api_key_env = "GOODPUT_TEST_API_KEY"
args = ["--time-scale", "5"]
env = {{ OPENAI_API_KEY = "${{GOODPUT_TEST_API_KEY}}" }}
[engines.unreachable]
url = "http://127.0.0.1:{port}"
model = "m"
api_key_env = "GOODPUT_TEST_API_KEY"
"#
    );
    let p = dir.path().join("p.toml");
    std::fs::write(&p, profile).unwrap();
    let out = dir.path().join("r.json");
    let o = goodput()
        .args(["run", p.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .env("GOODPUT_TEST_API_KEY", KEY)
        .output()
        .unwrap();
    let r = report::read_report(&out).unwrap();
    assert_eq!(
        r.load["sim"].points[0].completed,
        vec![3],
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(r.load["unreachable"].error.is_some());
    // The key was used: the environment records the engine command line, redacted.
    let env = r.environment.unwrap();
    let cmd = env.engines["with-key-in-args"]
        .command
        .clone()
        .unwrap()
        .join(" ");
    assert!(cmd.contains("***"), "{cmd}");
    assert_no_key(&outputs_of(dir.path(), &o.stdout, &o.stderr));
}
