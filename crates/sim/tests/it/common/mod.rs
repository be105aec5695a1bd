//! Shared helpers: an in-process server on 127.0.0.1:0 and an SSE reader.

use std::time::Instant;

use futures_util::StreamExt;
use goodput_sim::SimConfig;
use serde_json::Value;
use tokio::sync::oneshot;

/// A running server; dropping it shuts the server down.
pub struct Server {
    pub base: String,
    stop: Option<oneshot::Sender<()>>,
    pub handle: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Server {
    pub async fn start(config: SimConfig) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(goodput_sim::serve(listener, config, async {
            let _ = rx.await;
        }));
        Server {
            base: format!("http://{addr}"),
            stop: Some(tx),
            handle: Some(handle),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Stop and wait for the server to exit.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            let r = tokio::time::timeout(std::time::Duration::from_secs(10), h).await;
            r.expect("server stops within 10 s").unwrap().unwrap();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// One SSE event: its data and when it arrived.
#[derive(Debug, Clone)]
pub struct Event {
    pub data: String,
    pub at: Instant,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {}", self.data))
    }
}

/// Read an SSE body to its end. Returns the events and the body error, if any.
pub async fn read_sse(resp: reqwest::Response) -> (Vec<Event>, Option<String>) {
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(bytes) => {
                let at = Instant::now();
                buf.push_str(std::str::from_utf8(&bytes).unwrap());
                while let Some(pos) = buf.find("\n\n") {
                    let block: String = buf.drain(..pos + 2).collect();
                    for line in block.lines() {
                        if let Some(data) = line.strip_prefix("data: ") {
                            events.push(Event {
                                data: data.to_string(),
                                at,
                            });
                        }
                    }
                }
            }
            Err(e) => return (events, Some(e.to_string())),
        }
    }
    (events, None)
}

/// Text of the token events of a completion or chat stream.
pub fn stream_text(events: &[Event]) -> String {
    let mut s = String::new();
    for e in events {
        if e.data == "[DONE]" {
            continue;
        }
        let v = e.json();
        if let Some(c) = v["choices"].get(0) {
            if let Some(t) = c["text"].as_str() {
                s.push_str(t);
            }
            if let Some(t) = c["delta"]["content"].as_str() {
                s.push_str(t);
            }
        }
    }
    s
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().build().unwrap()
}

/// A fixed-schedule configuration.
pub fn fixed(ttft_ms: f64, itl_ms: f64) -> SimConfig {
    SimConfig {
        schedule: Some(goodput_sim::config::ScheduleConfig { ttft_ms, itl_ms }),
        ..SimConfig::default()
    }
}
