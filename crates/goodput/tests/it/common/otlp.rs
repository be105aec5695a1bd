//! A tiny OTLP/HTTP traces receiver on 127.0.0.1 port 0: every `POST /v1/traces`
//! is decoded with `opentelemetry-proto`'s types (protobuf through prost, or the
//! JSON form), kept with its content type and headers, and answered 200. Stopped
//! when dropped.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// One export request as received.
#[derive(Debug, Clone)]
pub struct Export {
    pub content_type: String,
    pub headers: HeaderMap,
    pub request: ExportTraceServiceRequest,
}

/// The running receiver.
pub struct Receiver {
    /// `http://127.0.0.1:PORT`, for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub url: String,
    got: Arc<Mutex<Vec<Export>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    /// Every export request so far.
    pub fn exports(&self) -> Vec<Export> {
        self.got.lock().unwrap().clone()
    }

    /// Every span so far, with its resource's `service.name`.
    pub fn spans(&self) -> Vec<(String, Span)> {
        let mut out = Vec::new();
        for e in self.exports() {
            for rs in e.request.resource_spans {
                let service = rs
                    .resource
                    .as_ref()
                    .and_then(|r| text(&r.attributes, "service.name"))
                    .unwrap_or_default();
                for ss in rs.scope_spans {
                    out.extend(ss.spans.into_iter().map(|s| (service.clone(), s)));
                }
            }
        }
        out
    }
}

async fn traces(
    State(got): State<Arc<Mutex<Vec<Export>>>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, [(&'static str, &'static str); 1], Vec<u8>) {
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let (request, answer) = if content_type.starts_with("application/json") {
        let r = serde_json::from_slice::<ExportTraceServiceRequest>(&body);
        (
            r.map_err(|e| e.to_string()),
            ("content-type", "application/json"),
        )
    } else {
        let r = ExportTraceServiceRequest::decode(body);
        (
            r.map_err(|e| e.to_string()),
            ("content-type", "application/x-protobuf"),
        )
    };
    match request {
        Ok(request) => {
            got.lock().unwrap().push(Export {
                content_type,
                headers,
                request,
            });
            let body = if answer.1 == "application/json" {
                b"{}".to_vec()
            } else {
                Vec::new()
            };
            (StatusCode::OK, [answer], body)
        }
        Err(e) => (StatusCode::BAD_REQUEST, [answer], e.into_bytes()),
    }
}

/// Starts the receiver.
pub async fn start() -> Receiver {
    let got = Arc::new(Mutex::new(Vec::new()));
    let app = axum::Router::new()
        .route("/v1/traces", post(traces))
        .with_state(got.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Receiver { url, got, task }
}

/// The value of attribute `key`.
pub fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v: &AnyValue| v.value.as_ref())
}

/// A string attribute.
pub fn text(attrs: &[KeyValue], key: &str) -> Option<String> {
    match attr(attrs, key)? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

/// An integer attribute.
pub fn int(attrs: &[KeyValue], key: &str) -> Option<i64> {
    match attr(attrs, key)? {
        any_value::Value::IntValue(n) => Some(*n),
        _ => None,
    }
}

/// A floating-point attribute.
pub fn float(attrs: &[KeyValue], key: &str) -> Option<f64> {
    match attr(attrs, key)? {
        any_value::Value::DoubleValue(x) => Some(*x),
        _ => None,
    }
}

/// A boolean attribute.
pub fn flag(attrs: &[KeyValue], key: &str) -> Option<bool> {
    match attr(attrs, key)? {
        any_value::Value::BoolValue(b) => Some(*b),
        _ => None,
    }
}
