//! A scripted SSE server: it answers every request with a fixed sequence of raw
//! writes, each after a delay, so the test knows the true timings and can check
//! what goodput measured. Started with [`super::server::spawn`], stopped when
//! dropped.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::server::{spawn, Server};

/// One write of the response: wait `delay`, then write `bytes`.
#[derive(Clone)]
pub struct Step {
    pub delay: Duration,
    pub bytes: Vec<u8>,
}

pub fn step(ms: u64, bytes: impl Into<Vec<u8>>) -> Step {
    Step {
        delay: Duration::from_millis(ms),
        bytes: bytes.into(),
    }
}

pub struct ScriptServer {
    pub url: String,
    _server: Server,
}

/// HTTP/1.1 response head for an SSE stream (connection closed at the end).
pub fn sse_head() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n".to_vec()
}

/// Starts a server answering every request with `head` then `steps`; if `close`
/// is false the connection stays open after the last step (a stall).
pub async fn serve(head: Vec<u8>, steps: Vec<Step>, close: bool) -> ScriptServer {
    let server = spawn(|listener| async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            sock.set_nodelay(true).ok();
            let (head, steps) = (head.clone(), steps.clone());
            tokio::spawn(async move {
                // Read the request head and body (Content-Length) before answering.
                let mut buf = Vec::new();
                let mut tmp = [0u8; 4096];
                loop {
                    let Ok(n) = sock.read(&mut tmp).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&tmp[..n]);
                    if let Some(end) = find(&buf, b"\r\n\r\n") {
                        let head_text = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                        let len = head_text
                            .lines()
                            .find_map(|l| {
                                l.strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len {
                            break;
                        }
                    }
                }
                if sock.write_all(&head).await.is_err() {
                    return;
                }
                for s in steps {
                    tokio::time::sleep(s.delay).await;
                    if sock.write_all(&s.bytes).await.is_err() {
                        return;
                    }
                    let _ = sock.flush().await;
                }
                if close {
                    let _ = sock.shutdown().await;
                } else {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
            });
        }
    })
    .await;
    ScriptServer {
        url: server.url.clone(),
        _server: server,
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// A completions chunk carrying `text`.
pub fn text_chunk(text: &str) -> String {
    format!("data: {{\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{{\"index\":0,\"text\":{},\"finish_reason\":null}}]}}\n\n", serde_json::to_string(text).unwrap())
}

/// The usage-only final chunk.
pub fn usage_chunk(prompt: u64, completion: u64) -> String {
    format!("data: {{\"id\":\"c\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt},\"completion_tokens\":{completion},\"total_tokens\":{}}}}}\n\n", prompt + completion)
}

pub const DONE: &str = "data: [DONE]\n\n";
