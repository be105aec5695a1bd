//! The client's rules for streams that bend the protocol (issue #37, items 10, 14,
//! 15, 16): timeouts that fire whatever the bytes, output beyond `max_tokens` and
//! choices past index 0, tool-call deltas as output, and what follows `[DONE]`.

use crate::common;

use std::time::{Duration, Instant};

use common::request::send;
use common::script::*;
use common::server::spawn;
use goodput::drive::client::{http_client, Limits, SseLimits, Target};
use goodput::drive::record::{ErrorKind, RequestRecord};
use goodput::measure::metrics::{point_summary, request_metrics, trial_metrics};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long an endless server writes before it gives up: far past the timeouts
/// the tests set, so a client that ignores them shows it (and the test still ends).
const ENDLESS_FOR: Duration = Duration::from_secs(12);

fn limits(request_ms: u64, stall_ms: Option<u64>) -> Limits {
    Limits {
        request_timeout: Duration::from_millis(request_ms),
        stall_timeout: stall_ms.map(Duration::from_millis),
        sse: SseLimits::default(),
    }
}

/// A server answering every connection with `head`, then `unit` over and over
/// until the client goes or [`ENDLESS_FOR`] has passed.
async fn endless(head: &'static [u8], unit: Vec<u8>) -> common::server::Server {
    spawn(|listener| async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let unit = unit.clone();
            tokio::spawn(async move {
                let mut req = [0u8; 4096];
                let _ = sock.read(&mut req).await;
                if sock.write_all(head).await.is_err() {
                    return;
                }
                let start = Instant::now();
                while start.elapsed() < ENDLESS_FOR {
                    if sock.write_all(&unit).await.is_err() {
                        return;
                    }
                }
            });
        }
    })
    .await
}

async fn one(url: &str, limits: Limits, max_tokens: Option<u32>) -> (RequestRecord, Duration) {
    let client = http_client(2).unwrap();
    let target = Target::new(url, "/v1/completions", None);
    let start = Instant::now();
    let rec = tokio::time::timeout(
        ENDLESS_FOR + Duration::from_secs(5),
        send(&client, &target, b"{}", max_tokens, &limits),
    )
    .await
    .expect("the request ended");
    (rec, start.elapsed())
}

const CHUNKED_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
const CLOSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

/// A request to `url` ends as `stall` at a 400 ms stall timeout, and as `timeout`
/// at a 1 s request timeout without one, each well within a second more.
async fn ends_at_the_stall_and_request_timeouts(url: &str) {
    let (rec, took) = one(url, limits(2000, Some(400)), Some(8)).await;
    assert_eq!(rec.error, Some(ErrorKind::Stall), "{:?}", rec.error_detail);
    assert!(took < Duration::from_millis(1500), "{took:?}");
    let (rec, took) = one(url, limits(1000, None), Some(8)).await;
    assert_eq!(
        rec.error,
        Some(ErrorKind::Timeout),
        "{:?}",
        rec.error_detail
    );
    assert!(took < Duration::from_millis(2500), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_zeros_in_a_chunk_size_line_end_at_the_stall_and_request_timeouts() {
    let s = endless(CHUNKED_HEAD, vec![b'0'; 64 << 10]).await;
    ends_at_the_stall_and_request_timeouts(&s.url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_role_only_events_ends_at_the_stall_and_request_timeouts() {
    let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
    let unit = role.repeat((64 << 10) / role.len()).into_bytes();
    let s = endless(CLOSE_HEAD, unit).await;
    ends_at_the_stall_and_request_timeouts(&s.url).await;
}

fn slo() -> report::Slo {
    report::Slo::bounded([(report::SloMetric::Ttft, 1000.0)])
}

#[tokio::test]
async fn output_beyond_max_tokens_without_usage_is_capped_and_counted_as_long() {
    // 24 one-token chunks for 8 asked, no usage block.
    let mut steps: Vec<Step> = (0..24).map(|_| step(1, text_chunk("a"))).collect();
    steps.push(step(0, DONE));
    let s = serve(sse_head(), steps, true).await;
    let (mut rec, _) = one(&s.url, limits(5000, Some(2000)), Some(8)).await;
    rec.exact_tokens = true;
    assert!(rec.ok(), "{:?}", rec.error_detail);
    assert_eq!(rec.chunks.len(), 24, "every chunk is kept, as it arrived");
    assert_eq!(
        (rec.completion_tokens, rec.tokens_estimated),
        (Some(8), true),
        "no more tokens than the request allowed are counted"
    );
    let m = trial_metrics(std::slice::from_ref(&rec), &slo());
    assert_eq!(m.long, 1);
    let p = point_summary(1.0, &[m], &[0.5], false);
    let long = p.long_outputs.clone().expect("long outputs counted");
    assert_eq!((long.requests, long.of), (1, 1));
    let (kind, message, _) = goodput_render::warnings::rules::long_outputs(&p).expect("warned");
    assert_eq!(kind, goodput_render::WarningKind::LongOutputs);
    assert!(message.contains("1 of 1 requests"), "{message}");
}

#[tokio::test]
async fn only_choice_0_is_counted_and_other_choices_are_flagged() {
    let two = |i: u32| {
        format!(
            "data: {{\"choices\":[{{\"index\":{i},\"text\":\"ab\",\"finish_reason\":null}}]}}\n\n"
        )
    };
    let mut steps = Vec::new();
    for _ in 0..4 {
        steps.push(step(2, two(0)));
        steps.push(step(0, two(1)));
    }
    steps.push(step(0, DONE));
    let s = serve(sse_head(), steps, true).await;
    let (rec, _) = one(&s.url, limits(5000, Some(2000)), Some(8)).await;
    assert!(rec.ok(), "{:?}", rec.error_detail);
    assert_eq!(rec.chunks.len(), 4, "only index 0's chunks");
    assert_eq!(rec.completion_tokens, Some(4));
    assert!(rec.other_choices);
    assert_eq!(trial_metrics(&[rec], &slo()).other_choices, 1);
}

#[tokio::test]
async fn a_tool_call_delta_is_output_and_times_the_first_token() {
    let chat =
        |delta: &str| format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{delta}}}]}}\n\n");
    let steps = vec![
        step(0, chat(r#"{"role":"assistant"}"#)),
        step(
            100,
            chat(
                r#"{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get","arguments":""}}]}"#,
            ),
        ),
        step(
            50,
            chat(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}"#),
        ),
        step(
            50,
            chat(r#"{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}"#),
        ),
        step(200, chat(r#"{"content":"ok"}"#)),
        step(0, DONE),
    ];
    let s = serve(sse_head(), steps, true).await;
    let (rec, _) = one(&s.url, limits(5000, Some(2000)), Some(16)).await;
    assert!(rec.ok(), "{:?}", rec.error_detail);
    assert_eq!(
        rec.chunks.len(),
        4,
        "three tool-call deltas and the content"
    );
    let m = request_metrics(&rec, &slo()).unwrap();
    assert!(
        (95.0..200.0).contains(&m.ttft_ms.unwrap()),
        "TTFT at the first tool-call delta (100 ms): {} ms",
        m.ttft_ms.unwrap()
    );
    assert!(m.tpot_ms.is_some_and(|t| t > 50.0), "{:?}", m.tpot_ms);
}

#[tokio::test]
async fn data_after_done_is_ignored_however_the_bytes_are_split() {
    let after = text_chunk("late");
    let together = vec![step(0, text_chunk("a")), step(5, format!("{DONE}{after}"))];
    let apart = vec![
        step(0, text_chunk("a")),
        step(5, DONE),
        step(20, after.clone()),
    ];
    for (what, steps) in [("one write", together), ("two writes", apart)] {
        let s = serve(sse_head(), steps, true).await;
        let (rec, _) = one(&s.url, limits(5000, Some(2000)), Some(8)).await;
        assert!(rec.ok(), "{what}: {:?}", rec.error_detail);
        assert_eq!(rec.chunks.len(), 1, "{what}: nothing after [DONE] counts");
        assert!(rec.data_after_done, "{what}: the late data is noticed");
        assert_eq!(trial_metrics(&[rec], &slo()).after_done, 1, "{what}");
    }
    // A clean ending says nothing.
    let s = serve(
        sse_head(),
        vec![step(0, text_chunk("a")), step(0, DONE)],
        true,
    )
    .await;
    let (rec, _) = one(&s.url, limits(5000, Some(2000)), Some(8)).await;
    assert!(rec.ok() && !rec.data_after_done);
}
