//! Tool calls end to end (#40, item 1): a run on the simulator with `tools = 2`
//! sends the seeded function definitions, the simulator streams a call of the
//! first with valid arguments, and the report gives TTFTC and a valid share of
//! 100%; a TTFTC bound below what the simulator gives is missed by every request;
//! the workload refuses tools on the completions API and a TTFTC bound without
//! tools.

use crate::common;

use common::cli::{contains, goodput, PredicateBooleanExt, Scratch};

fn profile(api: &str, tools: &str) -> String {
    format!(
        r#"
name = "tool-sim"
[slo]
ttft_ms = 2000
[load]
points = [2]
requests_per_trial = 6
trials = 1
warmup_requests = 1
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 12
{tools}
[engines.sim]
kind = "sim"
preset = "default"
api = "{api}"
"#
    )
}

#[test]
fn a_run_with_tools_reports_ttftc_and_the_valid_share() {
    let dir = Scratch::new();
    let p = profile("chat", "tools = 2\ntool_choice = \"required\"");
    dir.run(&p, &["--quiet", "--slo", "ttftc:5000"])
        .assert()
        .success();
    let r = dir.report();
    let point = &r.load["sim"].points[0];
    let tc = point.tool_calls.as_ref().expect("a tool-call block");
    assert_eq!((tc.asked.clone(), tc.called.clone()), (vec![6], vec![6]));
    assert_eq!((tc.calls, tc.valid, tc.judged), (6, 6, 6));
    assert_eq!(tc.valid_share, Some(1.0));
    assert_eq!((tc.schema_valid, tc.schema_valid_share), (6, Some(1.0)));
    let ttftc = tc.median_ttftc_ms.median.unwrap();
    assert!(ttftc > 0.0 && ttftc < 5000.0, "TTFTC {ttftc}");
    assert_eq!(point.slo_check.as_ref().unwrap().good, 6);
    // The records hold each call, its arguments as streamed.
    let records = std::fs::read_to_string(dir.path("r.requests.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(records.lines().next().unwrap()).unwrap();
    assert_eq!(first["tools_asked"], 2);
    let args = first["tool_calls"]["calls"][0]["arguments"]
        .as_str()
        .unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(args)
        .unwrap()
        .is_object());

    // The text report has the tool-call table.
    goodput()
        .args(["show", &dir.arg("r.json")])
        .assert()
        .success()
        .stdout(
            contains("Tool calls")
                .and(contains("100% ["))
                .and(contains("(6 of 6)")),
        );

    // A bound far below the simulator's TTFTC: every request misses it.
    let dir = Scratch::new();
    dir.run(&p, &["--quiet", "--slo", "ttftc:0.01"])
        .assert()
        .success();
    let r = dir.report();
    let check = r.load["sim"].points[0].slo_check.as_ref().unwrap();
    assert_eq!(
        (check.good, check.misses.get("ttftc").copied()),
        (0, Some(6))
    );
}

#[test]
fn tools_need_the_chat_api_and_a_ttftc_bound_needs_tools() {
    let dir = Scratch::new();
    dir.run(&profile("completions", "tools = 2"), &["--quiet"])
        .assert()
        .failure()
        .stderr(contains("workload.tools").and(contains("chat API")));
    dir.run(&profile("chat", ""), &["--quiet", "--slo", "ttftc:500"])
        .assert()
        .failure()
        .stderr(contains("ttftc").and(contains("tools")));
    dir.run(&profile("chat", "tools = 99"), &["--quiet"])
        .assert()
        .failure()
        .stderr(contains("workload.tools"));
}

/// The simulator streams every call's first delta at 80 ms and makes a quarter of
/// the calls' arguments invalid JSON and a tenth schema-invalid: the report gives a
/// median TTFTC near 80 ms, a valid share near 75% whose interval holds 75%, a
/// schema-valid share near 65%, and a point that requires 99% valid calls fails.
#[test]
fn invalid_calls_are_counted_and_a_required_valid_share_is_judged() {
    let dir = Scratch::new();
    let config = dir.write(
        "sim.toml",
        "tool_call_invalid_share = 0.25\ntool_call_schema_invalid_share = 0.1\n\
         [schedule]\nttft_ms = 80\nitl_ms = 5\n",
    );
    let p = format!(
        r#"
name = "tool-sim-invalid"
[slo]
ttft_ms = 2000
min_valid_tool_calls = 0.99
[load]
points = [8]
requests_per_trial = 96
trials = 1
warmup_requests = 0
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 12
calibrate = false
tools = 3
tool_choice = "required"
[engines.sim]
kind = "sim"
api = "chat"
args = ["--config", "{}"]
"#,
        config.display()
    );
    dir.run(&p, &["--quiet"]).assert().success();
    let r = dir.report();
    let point = &r.load["sim"].points[0];
    let tc = point.tool_calls.as_ref().expect("a tool-call block");
    assert_eq!((tc.calls, tc.judged), (96, 96));
    let ttftc = tc.median_ttftc_ms.median.unwrap();
    assert!((75.0..=140.0).contains(&ttftc), "TTFTC {ttftc}");
    let valid = tc.valid_share.unwrap();
    let i = tc.valid_interval.unwrap();
    assert!((0.6..=0.88).contains(&valid), "valid share {valid}");
    assert!(i.low <= 0.75 && 0.75 <= i.high, "{i:?}");
    let schema = tc.schema_valid_share.unwrap();
    assert!(schema < valid && (0.5..=0.8).contains(&schema), "{schema}");
    let args = tc.median_argument_tokens.median.unwrap();
    assert!((1.0..=12.0).contains(&args), "argument tokens {args}");
    // 99% valid required: the share's upper end is far below it.
    let check = point.slo_check.as_ref().unwrap();
    assert_eq!(check.tool_calls.len(), 1);
    assert_eq!(check.tool_calls[0].judgement, report::Judgement::Fails);
    assert_eq!(check.judgement, Some(report::Judgement::Fails));
    assert!(!check.meets);
    assert_eq!(check.good, 96, "every request is within its latency bounds");
    goodput()
        .args(["show", &dir.arg("r.json")])
        .assert()
        .success()
        .stdout(contains("schema-valid").and(contains("of 96)")));
}
