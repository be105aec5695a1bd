//! The workloads of issue #40 against a server not written for goodput: the
//! stand-in (`tests/fixtures/openai_stand_in.py`, Python's standard library, vLLM's
//! wire shapes) is told what to do, and the report must find it: a tool call
//! streamed at 80 ms with every fourth call's arguments invalid.

use crate::common;

use common::cli::Scratch;
use common::stand_in::StandIn;

fn profile(url: &str, workload: &str, extra: &str) -> String {
    format!(
        r#"
name = "stand-in"
[slo]
e2el_ms = 5000
[load]
points = [4]
requests_per_trial = 40
trials = 1
warmup_requests = 2
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 8
{workload}
[engines.stand-in]
url = "{url}"
model = "base"
api = "chat"
{extra}
"#
    )
}

#[test]
fn a_tool_call_at_80_ms_with_every_fourth_invalid() {
    let Some(server) = StandIn::start(&["--tool-call-ms", "80", "--invalid-every", "4"]) else {
        return;
    };
    let dir = Scratch::new();
    let p = profile(&server.url, "tools = 2\ntool_choice = \"required\"", "");
    dir.run(&p, &["--quiet", "--slo", "ttftc:5000"])
        .assert()
        .success();
    let r = dir.report();
    let point = &r.load["stand-in"].points[0];
    let tc = point.tool_calls.as_ref().expect("a tool-call block");
    assert_eq!(tc.calls, 40, "{tc:?}");
    let ttftc = tc.median_ttftc_ms.median.expect("a median TTFTC");
    assert!(
        (75.0..140.0).contains(&ttftc),
        "median TTFTC {ttftc} ms, the server waits 80"
    );
    let share = tc.valid_share.expect("a valid share");
    assert!(
        (0.65..=0.85).contains(&share),
        "valid share {share}, the server breaks every fourth"
    );
    // Every request carried the two function definitions.
    let sent = server.requests();
    assert_eq!(sent.len(), 42, "40 measured and 2 warm-up requests");
    assert!(sent.iter().all(|q| q["tools"] == 2), "{sent:?}");
}
