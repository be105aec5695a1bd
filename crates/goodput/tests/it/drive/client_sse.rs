//! The client against real HTTP servers on loopback that stream SSE with known
//! timings: computed TTFT, TPOT, ITL and goodput must match the timings the server
//! used, within a tolerance a loaded machine meets (late by at most TOL, never early).

use crate::common;

use std::time::Duration;

use common::request::send;
use common::script::*;
use goodput::drive::client::{http_client, max_content_chunks, Limits, SseLimits, Target};
use goodput::drive::record::{ErrorKind, RequestRecord};
use goodput::measure::metrics::{request_metrics, trial_metrics};

/// Slack for a loaded 2-core machine.
const TOL_MS: f64 = 40.0;

pub(super) fn limits() -> Limits {
    Limits {
        request_timeout: Duration::from_secs(10),
        stall_timeout: Some(Duration::from_millis(800)),
        sse: SseLimits::default(),
    }
}

fn slo() -> report::Slo {
    report::Slo::bounded([
        (report::SloMetric::Ttft, 1000.0),
        (report::SloMetric::Tpot, 100.0),
    ])
}

async fn one(server: &ScriptServer, limits: Limits) -> RequestRecord {
    one_asking(server, limits, None).await
}

/// One request that asked for `max_tokens`.
async fn one_asking(
    server: &ScriptServer,
    limits: Limits,
    max_tokens: Option<u32>,
) -> RequestRecord {
    let client = http_client(4).unwrap();
    let target = Target::new(&server.url, "/v1/completions", None);
    send(&client, &target, b"{}", max_tokens, &limits).await
}

fn near(measured: f64, truth: f64) {
    assert!(
        measured >= truth - 2.0 && measured <= truth + TOL_MS,
        "measured {measured:.2} ms, truth {truth} ms"
    );
}

#[tokio::test]
async fn ttft_tpot_itl_match_the_server_timings() {
    // TTFT 150 ms, then 4 more tokens every 50 ms; usage-only final chunk.
    let mut steps = vec![step(150, text_chunk(" a"))];
    for _ in 0..4 {
        steps.push(step(50, text_chunk(" b")));
    }
    steps.push(step(0, usage_chunk(7, 5)));
    steps.push(step(0, DONE));
    let s = serve(sse_head(), steps, true).await;
    let rec = one(&s, limits()).await;
    assert!(rec.ok(), "{:?}", rec.error_detail);
    assert_eq!(rec.completion_tokens, Some(5));
    assert_eq!(rec.prompt_tokens, Some(7));
    assert!(!rec.tokens_estimated);
    let m = request_metrics(&rec, &slo()).unwrap();
    near(m.ttft_ms.unwrap(), 150.0);
    near(m.e2el_ms, 350.0);
    // TPOT = (350 - 150) / 4 = 50; both ends are late by similar amounts
    assert!(
        (m.tpot_ms.unwrap() - 50.0).abs() < TOL_MS / 2.0,
        "{:?}",
        m.tpot_ms
    );
    let t = trial_metrics(&[rec], &slo());
    assert!((t.median_itl_ms.unwrap() - 50.0).abs() < TOL_MS / 2.0);
    assert_eq!(t.good, 1);
}

#[tokio::test]
async fn multi_token_chunks_tpot_counts_tokens_itl_counts_chunks() {
    // speculative decoding: 3 chunks, 1 + 4 + 4 tokens, 120 ms apart
    let steps = vec![
        step(100, text_chunk(" a")),
        step(120, text_chunk(" b c d e")),
        step(120, text_chunk(" f g h i")),
        step(0, usage_chunk(3, 9)),
        step(0, DONE),
    ];
    let s = serve(sse_head(), steps, true).await;
    let rec = one(&s, limits()).await;
    let m = request_metrics(&rec, &slo()).unwrap();
    // TPOT = 240 / 8 = 30 ms; ITL = 120 ms
    assert!(
        (m.tpot_ms.unwrap() - 30.0).abs() < TOL_MS / 4.0,
        "{:?}",
        m.tpot_ms
    );
    let t = trial_metrics(&[rec], &slo());
    assert!(
        (t.median_itl_ms.unwrap() - 120.0).abs() < TOL_MS / 2.0,
        "{:?}",
        t.median_itl_ms
    );
}

#[tokio::test]
async fn crlf_comments_and_events_split_across_writes() {
    let steps = vec![
        step(0, ": keep-alive comment\r\n\r\n"),
        step(80, "data: {\"choices\":[{\"index\":0,\"te"),
        step(0, "xt\":\" hello\"}]}\r"),
        step(0, "\n\r\n"),
        step(60, "data: {\"choices\":[{\"index\":0,\"text\":\" world\"}]}\r\n\r\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":2}}\r\n\r\n"),
        step(0, "data: [DO"),
        step(10, "NE]\r\n\r\n"),
    ];
    let s = serve(sse_head(), steps, true).await;
    let rec = one(&s, limits()).await;
    assert!(rec.ok(), "{:?} {:?}", rec.error, rec.error_detail);
    assert_eq!(rec.chunks.len(), 2);
    assert_eq!(rec.chunks[0].len, 6);
    let m = request_metrics(&rec, &slo()).unwrap();
    near(m.ttft_ms.unwrap(), 80.0);
    near(m.e2el_ms, 140.0);
}

#[tokio::test]
async fn no_usage_means_estimated_token_count() {
    let steps = vec![
        step(20, text_chunk("x")),
        step(20, text_chunk("y")),
        step(20, text_chunk("z")),
        step(0, DONE),
    ];
    let s = serve(sse_head(), steps, true).await;
    let rec = one(&s, limits()).await;
    assert!(rec.ok());
    assert_eq!(rec.completion_tokens, Some(3));
    assert!(rec.tokens_estimated);
    assert_eq!(trial_metrics(&[rec], &slo()).estimated, 1);
}

#[tokio::test]
async fn failures_are_recorded_with_their_kind() {
    // stream cut before [DONE]
    let s = serve(sse_head(), vec![step(10, text_chunk("a"))], true).await;
    assert_eq!(one(&s, limits()).await.error, Some(ErrorKind::Incomplete));
    // malformed chunk
    let s = serve(
        sse_head(),
        vec![step(10, "data: {oops\n\n"), step(0, DONE)],
        true,
    )
    .await;
    assert_eq!(one(&s, limits()).await.error, Some(ErrorKind::Malformed));
    // chunk without choices
    let s = serve(
        sse_head(),
        vec![step(10, "data: {\"id\":1}\n\n"), step(0, DONE)],
        true,
    )
    .await;
    assert_eq!(one(&s, limits()).await.error, Some(ErrorKind::Malformed));
    // HTTP 429
    let head = b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{\"e\":\"no\"}\n".to_vec();
    let s = serve(head, vec![], true).await;
    let r = one(&s, limits()).await;
    assert_eq!((r.error, r.status), (Some(ErrorKind::Http), Some(429)));
    assert_eq!(r.error_label().as_deref(), Some("http_429"));
    // not SSE
    let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 6\r\nconnection: close\r\n\r\n<html>".to_vec();
    let s = serve(head, vec![], true).await;
    assert_eq!(one(&s, limits()).await.error, Some(ErrorKind::NotSse));
    // stall: one chunk then silence
    let s = serve(sse_head(), vec![step(10, text_chunk("a"))], false).await;
    let r = one(&s, limits()).await;
    assert_eq!(r.error, Some(ErrorKind::Stall));
    assert_eq!(r.chunks.len(), 1, "what arrived before the stall is kept");
    // whole-request timeout
    let l = Limits {
        request_timeout: Duration::from_millis(300),
        stall_timeout: None,
        sse: SseLimits::default(),
    };
    let s = serve(sse_head(), vec![step(10, text_chunk("a"))], false).await;
    assert_eq!(one(&s, l).await.error, Some(ErrorKind::Timeout));
    // line beyond the size limit
    let l = Limits {
        sse: SseLimits {
            max_event_bytes: 1024,
            ..SseLimits::default()
        },
        ..limits()
    };
    let s = serve(sse_head(), vec![step(0, vec![b'a'; 5000])], true).await;
    assert_eq!(one(&s, l).await.error, Some(ErrorKind::TooLarge));
    // error object in the stream
    let s = serve(
        sse_head(),
        vec![step(
            0,
            "data: {\"error\":{\"message\":\"overloaded\"}}\n\n",
        )],
        true,
    )
    .await;
    assert_eq!(one(&s, limits()).await.error, Some(ErrorKind::ServerError));
    // connection refused
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let client = http_client(1).unwrap();
    let target = Target::new(&format!("http://{dead}"), "/v1/completions", None);
    let rec = send(&client, &target, b"", None, &limits()).await;
    assert_eq!(rec.error, Some(ErrorKind::Connect));
}

#[tokio::test]
async fn a_usage_block_that_contradicts_the_stream_is_a_failure() {
    // 3 chunks but usage says 2: impossible.
    let steps = vec![
        step(5, text_chunk("a")),
        step(5, text_chunk("b")),
        step(5, text_chunk("c")),
        step(0, usage_chunk(1, 2)),
        step(0, DONE),
    ];
    let s = serve(sse_head(), steps, true).await;
    assert_eq!(one(&s, limits()).await.error, Some(ErrorKind::BadUsage));
    // More tokens than the request allowed.
    let steps = vec![
        step(5, text_chunk("a")),
        step(0, usage_chunk(1, 9)),
        step(0, DONE),
    ];
    let s = serve(sse_head(), steps, true).await;
    let client = http_client(1).unwrap();
    let target = Target::new(&s.url, "/v1/completions", None);
    let rec = send(&client, &target, b"", Some(4), &limits()).await;
    assert_eq!(rec.error, Some(ErrorKind::BadUsage));
}

#[tokio::test]
async fn content_chunks_past_what_max_tokens_explains_fail_as_overlong() {
    // max_tokens = 4 allows 4 + 64 content chunks; role-only chunks are not counted.
    let allowed = max_content_chunks(Some(4));
    assert_eq!(allowed, 68);
    let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
    let stream = |content: usize| {
        vec![
            step(0, role.repeat(200)),
            step(5, text_chunk("a").repeat(content)),
            step(0, DONE),
        ]
    };
    let s = serve(sse_head(), stream(allowed), true).await;
    let r = one_asking(&s, limits(), Some(4)).await;
    assert!(r.ok(), "{:?} {:?}", r.error, r.error_detail);
    assert_eq!(r.chunks.len(), allowed);
    let s = serve(sse_head(), stream(allowed + 1), true).await;
    let r = one_asking(&s, limits(), Some(4)).await;
    assert_eq!(r.error, Some(ErrorKind::Overlong), "{:?}", r.error_detail);
    assert_eq!(r.chunks.len(), allowed, "the record stops at the bound");
}

#[tokio::test]
async fn a_stream_past_the_byte_limit_fails_as_overlong() {
    let l = Limits {
        sse: SseLimits {
            max_stream_bytes: 4096,
            ..SseLimits::default()
        },
        ..limits()
    };
    let s = serve(
        sse_head(),
        vec![step(0, ": keep-alive\n\n".repeat(400)), step(0, DONE)],
        true,
    )
    .await;
    assert_eq!(one(&s, l).await.error, Some(ErrorKind::Overlong));
}

#[tokio::test]
async fn keep_alive_comments_do_not_hold_off_the_stall_timeout() {
    // One chunk, then nothing but comments every 100 ms for 3 s: stalled.
    let mut steps = vec![step(10, text_chunk("a"))];
    steps.extend((0..30).map(|_| step(100, ": keep-alive\n\n")));
    let s = serve(sse_head(), steps, false).await;
    let r = one(&s, limits()).await;
    assert_eq!(r.error, Some(ErrorKind::Stall), "{:?}", r.error_detail);
    assert_eq!(r.chunks.len(), 1);
}

#[tokio::test]
async fn oversized_headers_and_compressed_streams_are_named_for_what_they_are() {
    let mut head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-big: ".to_vec();
    head.extend(std::iter::repeat_n(b'a', 1 << 20));
    head.extend(b"\r\nconnection: close\r\n\r\n");
    let s = serve(head, vec![step(0, DONE)], true).await;
    let r = one(&s, limits()).await;
    assert_eq!(r.error, Some(ErrorKind::TooLarge), "{:?}", r.error_detail);
    assert!(r.error_detail.unwrap().contains("headers"));

    let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\nconnection: close\r\n\r\n".to_vec();
    let s = serve(head, vec![step(0, vec![0x1f, 0x8b, 8, 0, 0, 0])], true).await;
    let r = one(&s, limits()).await;
    assert_eq!(r.error, Some(ErrorKind::NotSse), "{:?}", r.error_detail);
    assert!(r.error_detail.unwrap().contains("gzip"));
}

/// A busy client thread does not delay what it measures. The server answers at
/// once, writes the first token 100 ms after it read the request and the second
/// 300 ms later; the client's only thread is blocked from when the server read the
/// request until 300 ms after. On an `http://` connection a chunk's time is the
/// kernel's receive time of its read, so TTFT reads about 100 ms and the gap about
/// 300 ms, not 300 and 100 as the read times would say.
#[tokio::test(flavor = "current_thread")]
async fn a_busy_client_thread_stamps_the_arrival_not_the_read() {
    use std::io::{Read, Write};
    use std::sync::Arc;

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let request_read = Arc::new(tokio::sync::Notify::new());
    let notify = request_read.clone();
    // A server on a thread of its own (blocking I/O), so the blocked runtime does
    // not hold it back; it serves one request and ends.
    let server = std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        sock.set_nodelay(true).unwrap();
        let mut buf = Vec::new();
        let mut tmp = [0u8; 1024];
        while !String::from_utf8_lossy(&buf).contains("\r\n\r\n{}") {
            let n = sock.read(&mut tmp).unwrap();
            assert!(n > 0, "the client closed before its request was read");
            buf.extend_from_slice(&tmp[..n]);
        }
        notify.notify_one();
        let pause = Duration::from_millis(100);
        sock.write_all(&sse_head()).unwrap();
        std::thread::sleep(pause);
        sock.write_all(text_chunk(" a").as_bytes()).unwrap();
        std::thread::sleep(3 * pause);
        let end = [text_chunk(" b"), usage_chunk(3, 2), DONE.to_string()].concat();
        sock.write_all(end.as_bytes()).unwrap();
    });
    // Blocks the runtime's one thread once the server has the request.
    let blocker = tokio::spawn(async move {
        request_read.notified().await;
        let start = goodput::drive::record::now_ns();
        std::thread::sleep(Duration::from_millis(300));
        start
    });
    let client = http_client(4).unwrap();
    let target = Target::new(&url, "/v1/completions", None);
    // `send` times the record from its own origin, taken just after this one.
    let origin = goodput::drive::record::now_ns();
    let rec = send(&client, &target, b"{}", None, &limits()).await;
    let blocked_at = blocker.await.unwrap();
    server.join().unwrap();
    assert!(rec.ok(), "{:?}", rec.error_detail);
    // The block began before the first token was written (100 ms after the
    // request was read), else this test shows nothing.
    let since_send_ms = blocked_at.saturating_sub(origin + rec.sent) as f64 / 1e6;
    assert!(
        since_send_ms < 90.0,
        "the block began {since_send_ms:.1} ms after the send"
    );
    let m = request_metrics(&rec, &slo()).unwrap();
    assert!(
        (95.0..200.0).contains(&m.ttft_ms.unwrap()),
        "TTFT {:.1} ms: the first token arrived about 100 ms after the send, and the \
         thread could read it only about 300 ms after",
        m.ttft_ms.unwrap()
    );
    let tpot = m.tpot_ms.unwrap();
    assert!(
        (250.0..350.0).contains(&tpot),
        "TPOT {tpot:.1} ms: the tokens arrived 300 ms apart (the read times: ~100 ms)"
    );
}
