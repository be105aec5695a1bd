//! A chunk's time when the client was away: writes of the server that waited in the
//! socket together come out with one kernel receive time (the last one's), so the
//! record marks each such chunk's time as an upper bound (`Chunk::bound`) and says
//! how early it may have arrived; a chunk its read took alone stays exact.
//!
//! Wall-clock over real loopback sockets on purpose (CONTRIBUTING's "Clocks in
//! tests"): what is checked is where the kernel's times put each chunk against the
//! times the server wrote them.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use goodput::drive::client::{http_client, Limits, SseLimits, Target};
use goodput::drive::record::now_ns;

use crate::common::request::send;
use crate::common::script::{text_chunk, usage_chunk, DONE};

/// One HTTP chunk (one write of the server) carrying `data`.
fn http_chunk(data: &str) -> String {
    format!("{:x}\r\n{data}\r\n", data.len())
}

/// Four tokens written 30 ms apart while the client's only thread is blocked, then,
/// once it reads again, a fifth alone: the first three share the read with the
/// fourth and are bounded (each written within its bound before its time), the
/// fourth and fifth are exact (their own writes' times).
#[tokio::test(flavor = "current_thread")]
async fn chunks_that_waited_together_are_bounded_and_a_lone_one_is_exact() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let request_read = Arc::new(tokio::sync::Notify::new());
    let notify = request_read.clone();
    let written = Arc::new(Mutex::new(Vec::new()));
    let writes = written.clone();
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
        sock.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
              transfer-encoding: chunked\r\n\r\n",
        )
        .unwrap();
        notify.notify_one();
        let mut write = |data: &str| {
            writes.lock().unwrap().push(now_ns());
            sock.write_all(http_chunk(data).as_bytes()).unwrap();
        };
        for word in [" a", " b", " c", " d"] {
            std::thread::sleep(Duration::from_millis(30));
            write(&text_chunk(word));
        }
        // The client is reading again by now (it was blocked 200 ms).
        std::thread::sleep(Duration::from_millis(250));
        write(&text_chunk(" e"));
        std::thread::sleep(Duration::from_millis(30));
        let end = [usage_chunk(3, 5), DONE.to_string()].concat();
        sock.write_all(format!("{}0\r\n\r\n", http_chunk(&end)).as_bytes())
            .unwrap();
    });
    // Blocks the runtime's one thread from the response's head on, past the first
    // four writes.
    let blocker = tokio::spawn(async move {
        request_read.notified().await;
        std::thread::sleep(Duration::from_millis(200));
    });
    let client = http_client(4).unwrap();
    let target = Target::new(&url, "/v1/completions", None);
    let limits = Limits {
        request_timeout: Duration::from_secs(10),
        stall_timeout: Some(Duration::from_secs(5)),
        sse: SseLimits::default(),
    };
    // `send` times the record from its own origin, taken just after this one.
    let origin = now_ns();
    let rec = send(&client, &target, b"{}", None, &limits).await;
    blocker.await.unwrap();
    server.join().unwrap();
    assert!(rec.ok(), "{:?}", rec.error_detail);
    let written: Vec<u64> = written.lock().unwrap().clone();
    let c = &rec.chunks;
    assert_eq!(c.len(), 5, "{c:?}");
    let ms = |ns: u64| ns as f64 / 1e6;
    // Times in order, each no earlier than its write (the record's origin is a
    // moment after `origin`, so a time may read up to 2 ms early against it).
    for (i, (chunk, &w)) in c.iter().zip(&written).enumerate() {
        let t = origin + chunk.t;
        assert!(
            t + 2_000_000 >= w,
            "chunk {i} stamped {:.1} ms before it was written",
            ms(w - t)
        );
        if i > 0 {
            assert!(chunk.t >= c[i - 1].t, "chunk {i} before chunk {}", i - 1);
        }
    }
    // The first three waited with the fourth: bounded, and each was written within
    // its bound before its time.
    for (i, (chunk, &w)) in c.iter().zip(&written).take(3).enumerate() {
        let bound = chunk
            .bound
            .unwrap_or_else(|| panic!("chunk {i} exact: {c:?}"))
            .get();
        let (earliest, t) = (origin + chunk.t - bound, origin + chunk.t);
        assert!(
            earliest <= w + 2_000_000 && w <= t + 2_000_000,
            "chunk {i} written at {:.1} ms, bounded to [{:.1}, {:.1}] ms",
            ms(w - origin),
            ms(earliest - origin),
            ms(chunk.t)
        );
    }
    // Its bound is as wide as the wait: the first token may be 60 ms early.
    assert!(ms(c[0].bound.unwrap().get()) >= 55.0, "{c:?}");
    // The fourth ended its read and the fifth had one to itself: exact, within
    // what the kernel's delivery takes of their writes.
    for i in [3, 4] {
        assert_eq!(c[i].bound, None, "chunk {i}: {c:?}");
        let late = ms((origin + c[i].t).saturating_sub(written[i]));
        assert!(late < 20.0, "chunk {i} {late:.1} ms after its write");
    }
    assert!(c[4].t - c[3].t >= 200_000_000, "distinct reads: {c:?}");
}
