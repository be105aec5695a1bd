//! API keys are read from the environment variable the profile names and never
//! written anywhere: not to the report, the requests file, the HTML, engine logs,
//! stdout or stderr, and not into error messages. A planted key is grepped for in
//! every output, on a run that succeeds and on one that fails.

use crate::common;

use common::cli::goodput;
use common::server::closed_port;

const KEY: &str = "sk-planted-4f1e9c0b7d2a6e35";

pub(super) fn outputs_of(
    dir: &std::path::Path,
    stdout: &[u8],
    stderr: &[u8],
) -> Vec<(String, Vec<u8>)> {
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

/// Secrets goodput never saw as a key, but knows: an engine that prints its
/// environment (`HF_TOKEN`, `OPENAI_API_KEY`), a URL with a password in it, and a
/// server that echoes the `Authorization` header of a refused request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_printed_by_engines_or_echoed_by_servers_are_redacted_everywhere() {
    use common::fake_engine::{self, Behaviour, Completions};
    const HF: &str = "hf_planted_token_77aa01";
    const OPENAI: &str = "sk-planted-openai-5521";
    const URL_PASSWORD: &str = "pw-planted-in-url-0042";
    let fake = fake_engine::start(Behaviour {
        completions: Completions::Error(
            401,
            format!("{{\"error\": \"bad key\", \"authorization\": \"Bearer {KEY}\"}}"),
        ),
        ..Behaviour::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    let profile = format!(
        r#"
name = "secrets2"
[slo]
ttft_ms = 500
[load]
points = [1]
requests_per_trial = 2
warmup_requests = 0
[workload]
input_tokens = 8
output_tokens = 4
[engines.echoes]
kind = "command"
shell = "echo starting with token=$HF_TOKEN key $OPENAI_API_KEY; exit 3"
ready_timeout_s = 20
[engines.password-url]
url = "http://user:{URL_PASSWORD}@127.0.0.1:{port}"
model = "m"
[engines.echoing-server]
url = "{url}"
model = "m"
api_key_env = "GOODPUT_TEST_API_KEY"
"#,
        url = fake.url
    );
    // The profile (which holds the URL's password) lives apart from the outputs.
    let profile_dir = tempfile::tempdir().unwrap();
    let p = profile_dir.path().join("p.toml");
    std::fs::write(&p, profile).unwrap();
    let out = dir.path().join("r.json");
    let mut cmd = goodput();
    cmd.args(["run", p.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .env("GOODPUT_TEST_API_KEY", KEY)
        .env("HF_TOKEN", HF)
        .env("OPENAI_API_KEY", OPENAI)
        .timeout(std::time::Duration::from_secs(120));
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let r = report::read_report(&out).unwrap();
    // The secrets reached goodput: the echoing engine's log tail and the server's
    // error are in the report, redacted.
    let tail = r.load["echoes"].error.clone().unwrap().log_tail.join("\n");
    assert!(
        tail.contains("token=***") && tail.contains("key ***"),
        "{tail}"
    );
    assert!(r.load["echoing-server"].points[0]
        .errors
        .contains_key("http_401"));
    // The engine's own log (`echoes.log`) is what the engine wrote, verbatim, for
    // whoever debugs it; everything goodput writes or prints is checked.
    let outputs: Vec<_> = outputs_of(dir.path(), &o.stdout, &o.stderr)
        .into_iter()
        .filter(|(name, _)| !name.ends_with(".log"))
        .collect();
    for secret in [KEY, HF, OPENAI, URL_PASSWORD] {
        for (name, bytes) in &outputs {
            let text = String::from_utf8_lossy(bytes);
            assert!(!text.contains(secret), "{secret} leaked into {name}");
        }
    }
}
