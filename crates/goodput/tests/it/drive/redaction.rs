//! Redaction keeps every file goodput writes readable and free of secrets, whatever
//! the secret sits next to: a quote inside JSON, a profile's two-element flag, a
//! cut at an error body's kept length, a URL on the first line printed.

use crate::common;

use common::fake_engine::{self, Behaviour, Completions};
use common::server::closed_port;

use super::secrets::outputs_of;

/// Every output (stdout, stderr, every file under the output folder) holds none of
/// `secrets`; the engines' own logs, which hold what the engine printed verbatim,
/// are checked too (these engines print nothing).
fn assert_none_of(secrets: &[&str], outputs: &[(String, Vec<u8>)]) {
    for secret in secrets {
        for (name, bytes) in outputs {
            let text = String::from_utf8_lossy(bytes);
            assert!(
                !text.contains(secret),
                "{secret} leaked into {name}:\n{text}"
            );
        }
    }
}

/// The report reads back, and every line of the requests file is JSON.
fn assert_readable(dir: &std::path::Path) -> report::Report {
    let r = report::read_report(&dir.join("r.json")).expect("the report reads back");
    let requests = std::fs::read_to_string(dir.join("r.requests.jsonl")).unwrap();
    for line in requests.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    r
}

async fn run(mut cmd: assert_cmd::Command) -> std::process::Output {
    cmd.timeout(std::time::Duration::from_secs(120));
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

/// A vLLM engine whose start fails with keys in its arguments (`--api-key=X`, two
/// elements, `--hf-token X`, `--db-pass X`, `--auth=X`), and a URL engine behind a
/// proxy answering 502 with a login link carrying a token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_launch_and_a_proxy_login_page_leave_readable_files_with_no_secret() {
    const EQ: &str = "sk-eq-form-3f9a8b7c6d5e";
    const TWO: &str = "sk-two-element-77aa88bb";
    const HF: &str = "hf_two_element_1234";
    const DB: &str = "dbpass-secret-9911";
    const AUTH: &str = "auth-secret-5544";
    let proxy = fake_engine::start(Behaviour {
        completions: Completions::Error(
            502,
            "<html><body><h1>502 Bad Gateway</h1><a href=\"/login?token=abc123\">log in</a></body></html>"
                .into(),
        ),
        ..Behaviour::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let profile = format!(
        r#"
name = "redaction"
[slo]
ttft_ms = 500
[load]
points = [1]
requests_per_trial = 2
warmup_requests = 0
[workload]
input_tokens = 8
output_tokens = 4
[engines.vllm]
kind = "vllm"
model = "m"
python = "/bin/false"
ready_timeout_s = 20
args = ["--api-key={EQ}", "--api-key", "{TWO}", "--hf-token", "{HF}", "--db-pass", "{DB}", "--auth={AUTH}"]
[engines.proxy]
url = "{url}"
model = "m"
"#,
        url = proxy.url
    );
    let profile_dir = tempfile::tempdir().unwrap();
    let p = profile_dir.path().join("p.toml");
    std::fs::write(&p, profile).unwrap();
    let out = dir.path().join("r.json");
    let mut cmd = common::cli::goodput();
    cmd.args(["run", p.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let o = run(cmd).await;
    let r = assert_readable(dir.path());
    let stderr = String::from_utf8_lossy(&o.stderr);
    // The run finished: its report is not left at `running`.
    assert_ne!(
        r.run.as_ref().map(|x| x.status),
        Some(report::RunStatus::Running),
        "{stderr}"
    );
    assert!(r.load["vllm"].error.is_some(), "{stderr}");
    assert!(
        r.load["proxy"].points[0].errors.contains_key("http_502"),
        "{stderr}"
    );
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(html.contains("redaction"));
    let outputs = outputs_of(dir.path(), &o.stdout, &o.stderr);
    assert_none_of(&[EQ, TWO, HF, DB, AUTH, "abc123"], &outputs);
}

/// A key across the 300th byte of an error body: redacted before the body is cut,
/// so none of its characters is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_across_the_kept_length_of_an_error_body_is_redacted_whole() {
    const KEY: &str = "sk-straddle-0123456789abcdef0123456789abcdef";
    let fake = fake_engine::start(Behaviour {
        completions: Completions::Error(401, format!("{}{KEY} is not valid", "x".repeat(267))),
        ..Behaviour::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(
        &p,
        format!(
            r#"
name = "cut"
[slo]
ttft_ms = 500
[load]
points = [1]
requests_per_trial = 2
warmup_requests = 0
[workload]
input_tokens = 8
output_tokens = 4
[engines.e]
url = "{}"
model = "m"
api_key_env = "GOODPUT_TEST_CUT_KEY"
"#,
            fake.url
        ),
    )
    .unwrap();
    let out = dir.path().join("r.json");
    let mut cmd = common::cli::goodput();
    cmd.args(["run", p.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .env("GOODPUT_TEST_CUT_KEY", KEY);
    let o = run(cmd).await;
    let r = assert_readable(dir.path());
    assert!(
        r.load["e"].points[0].errors.contains_key("http_401"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let outputs = outputs_of(dir.path(), &o.stdout, &o.stderr);
    assert_none_of(&[&KEY[..12]], &outputs);
}

/// `run --url` with a password and a key in the URL prints neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_urls_password_and_query_key_are_not_printed() {
    const PW: &str = "pw-in-url-4242";
    const QUERY: &str = "sk-query-8080aa";
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "http://admin:{PW}@127.0.0.1:{}/?api_key={QUERY}",
        closed_port()
    );
    let out = dir.path().join("r.json");
    let mut cmd = common::cli::goodput();
    cmd.args([
        "run",
        "--url",
        &url,
        "--model",
        "m",
        "--num-prompts",
        "2",
        "-o",
        out.to_str().unwrap(),
    ]);
    let o = run(cmd).await;
    assert!(!o.stderr.is_empty());
    let outputs = outputs_of(dir.path(), &o.stdout, &o.stderr);
    assert_none_of(&[PW, QUERY], &outputs);
}
