use super::*;
use proptest::prelude::*;

#[test]
fn known_values_and_secret_shapes_are_redacted() {
    remember("sk-unit-test-known-4411");
    remember("tiny");
    let t = text("vLLM args: api_key='sk-unit-test-known-4411' model=m tiny");
    assert_eq!(t, "vLLM args: api_key='***' model=m tiny");
    assert_eq!(
        text("curl -H 'Authorization: Bearer abcdef123' http://u:pw123456@h:80/v1"),
        "curl -H 'Authorization: Bearer ***' http://***@h:80/v1"
    );
    assert_eq!(
        text(r#"{"error":"bad key","authorization":"Bearer zzzz9999"}"#),
        r#"{"error":"bad key","authorization":"Bearer ***"}"#
    );
    assert_eq!(
        text("--api-key abc123 --port 8000"),
        "--api-key *** --port 8000"
    );
    assert_eq!(text("HF_TOKEN=hf_abcdef echo"), "HF_TOKEN=*** echo");
    assert_eq!(
        text("--max-num-batched-tokens 2048 tokens=5"),
        "--max-num-batched-tokens 2048 tokens=5"
    );
    assert_eq!(
        text("more than the 2928-token KV pool; a 16-key table"),
        "more than the 2928-token KV pool; a 16-key table"
    );
    assert_eq!(text("'--api-key', 'sk1234'"), "'--api-key', 'sk1234'");
    assert_eq!(text("[\"--api-key=sk1234\"]"), "[\"--api-key=***\"]");
    assert!(matches!(text("nothing here"), Cow::Borrowed(_)));
}

/// A report with nothing in it but its name, for the writers below.
fn bare_report() -> report::Report {
    report::io::parse_report(
        r#"{"profile": "p", "slo": {}, "environment": null, "quantiles": [], "load": {}}"#,
    )
    .expect("a minimal report")
}

/// Writes a report holding `s` in a free-text field, an unknown field's key and
/// value, and the run's profile text; reads it back.
fn round_trip(dir: &Path, s: &str) -> Result<report::Report, String> {
    let mut r = bare_report();
    r.profile = s.to_string();
    r.extra
        .insert(s.to_string(), serde_json::Value::String(s.into()));
    r.run = Some(report::RunInfo {
        profile: Some(s.to_string()),
        ..Default::default()
    });
    let path = dir.join("r.json");
    write_report(&path, &r).map_err(|e| format!("cannot write: {e}"))?;
    report::read_report(&path).map_err(|e| format!("cannot read back: {e}"))
}

#[test]
fn a_secret_before_an_escaped_quote_leaves_the_report_readable() {
    let dir = tempfile::tempdir().unwrap();
    for s in [
        "engine failed: vllm serve m --api-key=sk-eq-form-3f9a8b7c\" next",
        "<a href=\"/login?token=abc123\">log in</a>",
        "http://h/v1?api_key=sk-query-1234\"",
        "Authorization: Bearer abcdef\\\"x",
        "HF_TOKEN=hf_abcdef\\",
    ] {
        let back = round_trip(dir.path(), s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        for secret in ["sk-eq-form", "abc123", "sk-query", "abcdef"] {
            assert!(!back.profile.contains(secret), "{s:?} -> {}", back.profile);
        }
    }
}

/// The pieces the generated strings are made of: JSON's and TOML's special
/// characters, control characters, wide characters, and secret-shaped fragments.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just("'".to_string()),
        Just("\u{0}\u{7}\n\r\t\u{1b}[2J".to_string()),
        Just("é✓😀\u{2028}".to_string()),
        Just("--api-key=".to_string()),
        Just("--api-key ".to_string()),
        Just("--db-pass ".to_string()),
        Just("HF_TOKEN=".to_string()),
        Just("?api_key=".to_string()),
        Just("&access_token=".to_string()),
        Just("<a href=\"/login?token=".to_string()),
        Just("Bearer ".to_string()),
        Just("Authorization: ".to_string()),
        Just("\"authorization\":\"".to_string()),
        Just("http://user:pw@".to_string()),
        Just("sk-proptest-known-5150".to_string()),
        Just("=,;&#<>()[]{}".to_string()),
        "[a-z0-9_-]{1,12}",
        any::<String>(),
    ]
}

fn generated() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..14).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Whatever a string holds, the report and the requests file that hold it stay
    /// readable once redacted, and hold no known secret.
    #[test]
    fn redaction_never_makes_a_written_file_unreadable(s in generated()) {
        remember("sk-proptest-known-5150");
        let dir = tempfile::tempdir().unwrap();
        let back = round_trip(dir.path(), &s);
        prop_assert!(back.is_ok(), "{:?}: {:?}", s, back.err());
        let written = std::fs::read_to_string(dir.path().join("r.json")).unwrap();
        prop_assert!(!written.contains("sk-proptest-known-5150"));

        let path = dir.path().join("r.requests.jsonl");
        let mut rec = crate::drive::record::RequestRecord::new(&s, 1.0, 0, 0, 0);
        rec.error_detail = Some(s.clone());
        rec.finish_reason = Some(s.clone());
        let mut file = crate::drive::record::RecordsFile::open(&path).unwrap();
        file.append(&[rec.clone(), rec]).unwrap();
        let lines = std::fs::read_to_string(&path).unwrap();
        for line in lines.lines() {
            let parsed = serde_json::from_str::<serde_json::Value>(line);
            prop_assert!(parsed.is_ok(), "{:?}: {:?}", line, parsed.err());
        }
        prop_assert!(!lines.contains("sk-proptest-known-5150"));
        let read = crate::drive::record::read_records(&path);
        prop_assert!(matches!(&read, Ok(v) if v.len() == 2), "{:?}", read.err());
    }
}

#[test]
fn secret_names_beyond_key_token_secret_and_password() {
    for name in [
        "DB_PASS",
        "SERVICE_AUTH",
        "GITHUB_PAT",
        "AWS_CREDENTIALS",
        "SESSION_COOKIE",
        "PRIVATE_PEM",
        "MYSQL_PWD",
        "DB_PASSWD",
        "OPENAI_APIKEY",
        "HF_TOKEN",
    ] {
        assert!(is_secret_env(name), "{name}");
    }
    for name in [
        "PWD",
        "OLDPWD",
        "SSH_AUTH_SOCK",
        "SESSION_ID",
        "AUTHOR",
        "TOKENIZERS_PARALLELISM",
        "PATH",
        "CUDA_VISIBLE_DEVICES",
    ] {
        assert!(!is_secret_env(name), "{name}");
    }
    assert_eq!(
        text("--db-pass hunter2222 --port 1"),
        "--db-pass *** --port 1"
    );
    assert_eq!(text("--auth=abcdef99"), "--auth=***");
    assert_eq!(text("GITHUB_PAT=ghp_abcdef1234"), "GITHUB_PAT=***");
    assert_eq!(text("SESSION_COOKIE=abcdef99 x"), "SESSION_COOKIE=*** x");
    assert_eq!(text("AWS_CREDENTIALS=abcdef99"), "AWS_CREDENTIALS=***");
    for ordinary in [
        "--author someone",
        "--max-num-batched-tokens 2048",
        "--enable-prefix-caching --port 8000",
        "--session-id 42",
        "max_tokens=100",
    ] {
        assert_eq!(text(ordinary), ordinary);
    }
}

#[test]
fn query_parameters_that_name_a_secret_are_redacted() {
    assert_eq!(
        text("GET http://h/v1?api_key=sk-q-123456&x=1"),
        "GET http://h/v1?api_key=***&x=1"
    );
    assert_eq!(
        text("http://h/v1?model=m&token=abc123#top"),
        "http://h/v1?model=m&token=***#top"
    );
    assert_eq!(
        text("https://h/cb?access_token=xyz789&state=s"),
        "https://h/cb?access_token=***&state=s"
    );
    assert_eq!(
        text("<a href=\"/login?token=abc123\">"),
        "<a href=\"/login?token=***\">"
    );
    assert_eq!(text("http://admin:pw@h:1/?x=1"), "http://***@h:1/?x=1");
}
