//! Hostile servers on loopback against the client in this process. Each offers far
//! more than [`RSS_BOUND`] (an endless error body, an endless stream of content, an
//! endless stream without content): the request must fail with its kind, ended by the
//! client's own bound rather than the request timeout, the server must have been able
//! to push only a bounded amount, and this process's peak resident memory must grow
//! by less than [`RSS_BOUND`] while it ran.

use crate::common;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::request::send;
use common::script::{sse_head, text_chunk};
use common::server::{spawn, Server};
use goodput::drive::client::{
    http_client, max_content_chunks, Limits, SseLimits, Target, ERROR_BODY_BYTES,
};
use goodput::drive::record::{ErrorKind, RequestRecord};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most this process's peak RSS may grow while one hostile request runs.
const RSS_BOUND: u64 = 64 << 20;
/// What a hostile server offers before it gives up and closes: four times the
/// bound, so a client that keeps what it is sent exceeds the bound and the test ends
/// even against one.
const OFFER: u64 = 256 << 20;
/// Ends the test if the client's bound does not (the request timeout is 300 s).
const TEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Memory is measured per process: one measured request at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A server answering every connection with `head`, then `unit` over and over until
/// it has written [`OFFER`] bytes or the client has gone. Stopped when dropped.
struct Hostile {
    url: String,
    written: Arc<AtomicU64>,
    _server: Server,
}

async fn hostile(head: Vec<u8>, unit: Vec<u8>) -> Hostile {
    let written = Arc::new(AtomicU64::new(0));
    let count = written.clone();
    // Connections are served one after another inside this task, so aborting it
    // stops everything the server started.
    let server = spawn(|listener| async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut req = [0u8; 4096];
            let _ = sock.read(&mut req).await;
            if sock.write_all(&head).await.is_err() {
                continue;
            }
            while count.load(Ordering::Relaxed) < OFFER {
                if sock.write_all(&unit).await.is_err() {
                    break;
                }
                count.fetch_add(unit.len() as u64, Ordering::Relaxed);
            }
            let _ = sock.shutdown().await;
        }
    })
    .await;
    Hostile {
        url: server.url.clone(),
        written,
        _server: server,
    }
}

/// `unit` repeated to about 64 KiB, one write of the server.
fn repeated(unit: &str) -> Vec<u8> {
    unit.repeat((64 << 10) / unit.len()).into_bytes()
}

/// A kernel figure of this process from `/proc/self/status`, bytes.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kib: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib << 10
}

/// Runs `f` on a fresh runtime and returns its output and how far the process's peak
/// RSS rose above its RSS before (the peak is reset first where the kernel allows).
fn measured<T>(f: impl Future<Output = T>) -> (T, u64) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // "5" resets VmHWM to the current RSS (Linux 4.0+); without it the peak is the
    // process's, which only makes the check stricter.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_bytes("VmRSS:");
    let out = rt.block_on(f);
    let peak = status_bytes("VmHWM:");
    drop(rt);
    (out, peak.saturating_sub(before))
}

/// One request with `max_tokens` = `requested` to `server`, under the production
/// request timeout, failing the test if it is not over within [`TEST_TIMEOUT`].
async fn one(server: &Hostile, requested: Option<u32>, sse: SseLimits) -> RequestRecord {
    let client = http_client(1).unwrap();
    let target = Target::new(&server.url, "/v1/completions", None);
    let limits = Limits {
        request_timeout: Duration::from_secs(300),
        stall_timeout: Some(Duration::from_secs(30)),
        sse,
    };
    tokio::time::timeout(
        TEST_TIMEOUT,
        send(&client, &target, b"{}", requested, &limits),
    )
    .await
    .expect("the request was not ended by the client's bound")
}

fn assert_bounded(what: &str, growth: u64, written: u64) {
    eprintln!(
        "{what}: peak RSS +{} KiB, server wrote {} KiB",
        growth >> 10,
        written >> 10
    );
    assert!(
        growth < RSS_BOUND,
        "{what}: peak RSS grew by {} MiB (bound {} MiB)",
        growth >> 20,
        RSS_BOUND >> 20
    );
    assert!(
        written < RSS_BOUND,
        "{what}: the server pushed {} MiB before the client let go",
        written >> 20
    );
}

#[test]
fn an_endless_error_body_is_read_only_as_far_as_it_is_kept() {
    let ((rec, written), growth) = measured(async {
        let head = b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n";
        let s = hostile(head.to_vec(), repeated("overloaded ")).await;
        let rec = one(&s, Some(16), SseLimits::default()).await;
        (rec, s.written.load(Ordering::Relaxed))
    });
    assert_bounded("500 with an endless body", growth, written);
    assert_eq!((rec.error, rec.status), (Some(ErrorKind::Http), Some(500)));
    let detail = rec.error_detail.unwrap();
    let prefix = "HTTP 500 Internal Server Error: ";
    assert!(
        detail.starts_with(&format!("{prefix}overloaded overloaded")),
        "the body's start is kept: {detail}"
    );
    assert_eq!(detail.len(), prefix.len() + ERROR_BODY_BYTES, "{detail}");
}

#[test]
fn an_endless_stream_of_content_fails_as_overlong_past_max_tokens() {
    let ((rec, written), growth) = measured(async {
        let s = hostile(sse_head(), repeated(&text_chunk("a"))).await;
        let rec = one(&s, Some(16), SseLimits::default()).await;
        (rec, s.written.load(Ordering::Relaxed))
    });
    assert_bounded("endless content stream", growth, written);
    assert_eq!(
        rec.error,
        Some(ErrorKind::Overlong),
        "{:?}",
        rec.error_detail
    );
    assert_eq!(
        rec.chunks.len(),
        max_content_chunks(Some(16)),
        "what arrived up to the bound is kept, and no more"
    );
}

#[test]
fn an_endless_stream_without_content_fails_as_overlong_past_the_byte_limit() {
    // Role-only chunks carry no content, so only the byte limit can end them.
    let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
    let sse = SseLimits {
        max_stream_bytes: 8 << 20,
        ..SseLimits::default()
    };
    let ((rec, written), growth) = measured(async {
        let s = hostile(sse_head(), repeated(role)).await;
        let rec = one(&s, Some(16), sse).await;
        (rec, s.written.load(Ordering::Relaxed))
    });
    assert_bounded("endless stream without content", growth, written);
    assert_eq!(
        rec.error,
        Some(ErrorKind::Overlong),
        "{:?}",
        rec.error_detail
    );
    assert!(rec.chunks.is_empty());
}
