//! The client's own connections (`http://` targets) against servers on loopback:
//! connections opened before a trial and reused, a kept-alive connection the server
//! closed replaced once, and an answer sent before the request was read whole.

use crate::common;

use common::request::send;
use common::script::*;
use goodput::drive::client::{http_client, Target};
use goodput::drive::record::{ErrorKind, RequestRecord};

use super::client_sse::limits;

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
