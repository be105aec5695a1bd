//! The floor responder (scenario `floor`).

use std::time::{Duration, Instant};

use goodput_stamped::MonoClock;

use super::Run;

/// The floor: a raw HTTP/1.1 responder on the same thread, timer and kernel as the
/// simulator, writing chunks of the same shape and size, one write per token, with
/// nothing else (no router, no hyper, no JSON, no model). What it spends per chunk
/// is what the machine's TCP path and the timer cost; the simulator's figure minus
/// this one is the simulator's own cost.
pub(crate) async fn floor_serve(
    listener: tokio::net::TcpListener,
    run: Run,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    // The simulator's own timer path (on one thread: the thread's local timer).
    goodput_sim::server::timer::install_local();
    let mono = MonoClock::new();
    let accept = async {
        while let Ok((tcp, _)) = listener.accept().await {
            let _ = tcp.set_nodelay(true);
            tokio::spawn(floor_stream(tcp, run, mono));
        }
    };
    tokio::select! {
        _ = accept => {}
        _ = stop => {}
    }
}

/// One floor response: reads the request (headers and a `content-length` body),
/// then the chunks on schedule.
pub(crate) async fn floor_stream(mut tcp: tokio::net::TcpStream, run: Run, mono: MonoClock) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut req = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    loop {
        let Ok(n) = tcp.read(&mut buf).await else {
            return;
        };
        if n == 0 {
            return;
        }
        req.extend_from_slice(&buf[..n]);
        let Some(end) = req.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&req[..end]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if req.len() >= end + 4 + length {
            break;
        }
    }
    let arrival = Instant::now();
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    if tcp.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let ttft = Duration::from_secs_f64(run.ttft_ms / 1e3);
    let itl = Duration::from_secs_f64(run.itl_ms / 1e3);
    let mut out = Vec::with_capacity(512);
    for i in 0..run.tokens {
        let at = arrival + ttft + itl * i;
        goodput_sim::server::timer::sleep_until(at).await;
        let data = format!(
            "data: {{\"id\":\"cmpl-floor\",\"object\":\"text_completion\",\"created\":1764000000,\"model\":\"sim\",\"choices\":[{{\"index\":0,\"text\":\" word{i}\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}}],\"usage\":null,\"goodput_probe_ns\":{},\"goodput_sched_ns\":{}}}\n\n",
            mono.ns(Instant::now()),
            mono.ns(at)
        );
        out.clear();
        out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
        out.extend_from_slice(data.as_bytes());
        out.extend_from_slice(b"\r\n");
        if i + 1 == run.tokens {
            out.extend_from_slice(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
        }
        if tcp.write_all(&out).await.is_err() {
            return;
        }
    }
    let _ = tcp.shutdown().await;
}
