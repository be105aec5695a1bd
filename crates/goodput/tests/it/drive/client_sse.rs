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

fn limits() -> Limits {
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
async fn a_connection_closed_before_any_response_is_retried_once_on_a_fresh_one() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // The first connection reads the request and closes without answering (a stale
    // keep-alive connection); later connections answer normally.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let mut n = 0;
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            n += 1;
            let first = n == 1;
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                if first {
                    return; // dropped: closed with no response
                }
                let body = format!("{}{}{}", text_chunk("a"), usage_chunk(1, 1), DONE);
                let _ = sock.write_all(&sse_head()).await;
                let _ = sock.write_all(body.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    let client = http_client(1).unwrap();
    let target = Target::new(&format!("http://{addr}"), "/v1/completions", None);
    let rec = send(&client, &target, b"{}", None, &limits()).await;
    server.abort();
    assert!(rec.ok(), "{:?} {:?}", rec.error, rec.error_detail);
    assert_eq!(rec.chunks.len(), 1);
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

/// The simulator's fixed schedule (TTFT 5 ms, ITL 1 ms) on a free port.
async fn fixed_sim() -> (String, tokio::task::JoinHandle<std::io::Result<()>>) {
    let listener = goodput_sim::listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let config = goodput_sim::SimConfig {
        schedule: Some(goodput_sim::config::ScheduleConfig {
            ttft_ms: 5.0,
            itl_ms: 1.0,
        }),
        ..goodput_sim::SimConfig::default()
    };
    let task = tokio::spawn(goodput_sim::serve(listener, config, std::future::pending()));
    (url, task)
}

async fn one_on(target: &Target) -> RequestRecord {
    let client = http_client(4).unwrap();
    let body = br#"{"model":"goodput-sim","prompt":"x","max_tokens":3,"stream":true}"#;
    let rec = send(&client, target, body, Some(3), &limits()).await;
    assert!(rec.ok(), "{:?} {:?}", rec.error, rec.error_detail);
    rec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preconnected_requests_wait_for_no_connection_and_new_ones_record_theirs() {
    let (url, sim) = fixed_sim().await;
    let target = Target::new(&url, "/v1/completions", None);
    target.preconnect(2).await.unwrap();
    assert_eq!(target.idle_connections(), 2);
    // Two at once find a connection each, and give it back.
    let (a, b) = tokio::join!(one_on(&target), one_on(&target));
    assert_eq!((a.connect, b.connect), (None, None));
    assert_eq!(target.idle_connections(), 2);
    // A third at once needs one of its own: its set-up is recorded, apart from TTFT
    // (sent is stamped once connected, so the first chunk follows the TTFT of the
    // schedule from there).
    let (a, b, c) = tokio::join!(one_on(&target), one_on(&target), one_on(&target));
    let fresh: Vec<&RequestRecord> = [&a, &b, &c]
        .into_iter()
        .filter(|r| r.connect.is_some())
        .collect();
    assert_eq!(fresh.len(), 1, "{:?}", [a.connect, b.connect, c.connect]);
    assert_eq!(target.idle_connections(), 3);
    // Counted in TTFT when asked: `sent` is then taken before connecting, so the
    // connection's set-up lies between `sent` and the first chunk.
    let peer_like = Target::new(&url, "/v1/completions", None).with_connect_in_ttft(true);
    let r = one_on(&peer_like).await;
    let connect = r.connect.expect("a fresh target opens a connection");
    assert!(r.chunks[0].t >= r.sent + connect + 5_000_000, "{r:?}");
    sim.abort();
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

/// Reads one request (head and `content-length` body) from `sock`; false when the
/// peer closed first.
async fn read_request(sock: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return true;
            }
        }
        match sock.read(&mut tmp).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

/// A kept-alive connection that the server closes as the next request arrives
/// (as llama.cpp closes one after a few requests) is noticed before any answer,
/// and the request is sent once more on a fresh connection; a clean chunked
/// answer gives its connection back to the pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_alive_connection_closed_by_the_server_is_replaced_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (connections, requests) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (c2, r2) = (connections.clone(), requests.clone());
    let server = tokio::spawn(async move {
        let chunk = |s: &str| format!("{:x}\r\n{s}\r\n", s.len());
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{}{}0\r\n\r\n",
            chunk(&text_chunk("a")),
            chunk(DONE)
        );
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            let (answer, c2, r2) = (answer.clone(), c2.clone(), r2.clone());
            tokio::spawn(async move {
                let first = c2.fetch_add(1, Ordering::SeqCst) == 0;
                while read_request(&mut sock).await {
                    let n = r2.fetch_add(1, Ordering::SeqCst);
                    // The first connection's second request: closed unanswered.
                    if first && n > 0 {
                        return;
                    }
                    if sock.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let client = http_client(2).unwrap();
    let target = Target::new(&url, "/v1/completions", None);
    let first = send(&client, &target, b"{}", Some(1), &limits()).await;
    assert!(first.ok(), "{:?}", first.error_detail);
    assert!(first.connect.is_some(), "a fresh target opens a connection");
    assert_eq!(
        target.idle_connections(),
        1,
        "a clean answer keeps its connection"
    );
    let second = send(&client, &target, b"{}", Some(1), &limits()).await;
    assert!(second.ok(), "{:?} {:?}", second.error, second.error_detail);
    assert!(
        second.connect.is_some(),
        "the resend opened a connection of its own"
    );
    assert_eq!(second.chunks.len(), 1);
    assert_eq!(
        (
            connections.load(Ordering::SeqCst),
            requests.load(Ordering::SeqCst)
        ),
        (2, 3),
        "one pooled try closed unanswered, one resend"
    );
    server.abort();
}

/// A server that answers before it has read the whole request (a 413 for a body
/// too large) and closes: its answer is the request's outcome (HTTP 413, its body
/// in the detail), not a connection failure, though the rest of the body could not
/// be written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_sent_before_the_whole_body_was_read_is_the_outcome() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if sock.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let body = "{\"error\":\"too large\"}";
                let answer = format!(
                    "HTTP/1.1 413 Payload Too Large\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(answer.as_bytes()).await;
                // Closed with the body unread.
            });
        }
    });
    let big: &'static [u8] = Box::leak(vec![b'x'; 32 << 20].into_boxed_slice());
    let client = http_client(2).unwrap();
    let target = Target::new(&url, "/v1/completions", None);
    let r = send(&client, &target, big, Some(1), &limits()).await;
    assert_eq!(
        (r.error, r.status),
        (Some(ErrorKind::Http), Some(413)),
        "{:?}",
        r.error_detail
    );
    assert!(r.error_detail.unwrap().contains("too large"));
    server.abort();
}
