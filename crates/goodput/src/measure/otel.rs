//! Every measured request exported as an OpenTelemetry span, when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set (docs/otel.md).
//!
//! The spans are made from the finished records after each trial ([`span`]), so
//! nothing is added to a request's timing; they wait in a bounded queue and leave
//! in batches from a thread of their own ([`queue`]) through the OTLP/HTTP
//! exporter of `opentelemetry-otlp` (protobuf or JSON, [`config`]). Exporting
//! never fails a run: a setting goodput cannot use, spans dropped from a full
//! queue and exports the endpoint refused are notices, and the counts are the
//! report's `run.otel`.

pub mod config;
pub mod queue;
pub mod span;

use std::sync::atomic::Ordering;
use std::time::Duration;

use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{RandomIdGenerator, SpanExporter};
use opentelemetry_sdk::Resource;
use report::{Notice, NoticeKind, OtelExport, OtlpProtocol};

use crate::drive::record::RequestRecord;
pub use config::Config;
pub use span::TrialSpans;

/// The run's export: off, or a queue to an endpoint.
pub struct Otel {
    on: Option<On>,
}

struct On {
    config: Config,
    queue: queue::Queue,
    ids: RandomIdGenerator,
    scope: opentelemetry::InstrumentationScope,
}

impl Otel {
    /// No export.
    pub fn off() -> Otel {
        Otel { on: None }
    }

    /// The export the process's environment asks for, and a notice when it asks
    /// for one goodput cannot make (the run goes on without it).
    pub fn from_env() -> (Otel, Option<Notice>) {
        let var = |k: &str| std::env::var(k).ok();
        for v in config::header_values(var) {
            crate::redact::remember(&v);
        }
        match config::from_vars(var) {
            Ok(None) => (Otel::off(), None),
            Ok(Some(c)) => Otel::to_otlp(c),
            Err(why) => (Otel::off(), Some(refused(&why))),
        }
    }

    /// An export over OTLP/HTTP as `config` says.
    fn to_otlp(config: Config) -> (Otel, Option<Notice>) {
        let protocol = match config.protocol {
            OtlpProtocol::HttpJson => Protocol::HttpJson,
            _ => Protocol::HttpBinary,
        };
        let built = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(config.endpoint.clone())
            .with_protocol(protocol)
            .with_timeout(config.timeout)
            .build();
        match built {
            Ok(exporter) => Otel::start(config, exporter),
            Err(e) => (Otel::off(), Some(refused(&e.to_string()))),
        }
    }

    /// An export through `exporter` (OTLP in a run, a fake in tests).
    pub fn start<E: SpanExporter + 'static>(
        config: Config,
        mut exporter: E,
    ) -> (Otel, Option<Notice>) {
        let resource = Resource::builder()
            .with_service_name(config.service_name.clone())
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        exporter.set_resource(&resource);
        match queue::Queue::start(exporter, config.max_queue, config.max_batch, config.timeout) {
            Ok(queue) => (
                Otel {
                    on: Some(On {
                        config,
                        queue,
                        ids: RandomIdGenerator::default(),
                        scope: span::scope(),
                    }),
                },
                None,
            ),
            Err(e) => (
                Otel::off(),
                Some(refused(&format!("cannot start the export thread: {e}"))),
            ),
        }
    }

    /// Queues a span for each of a finished trial's records (never waits).
    pub fn trial(&self, records: &[RequestRecord], trial: &TrialSpans<'_>) {
        let Some(on) = &self.on else {
            return;
        };
        for r in records {
            if let Some(s) = span::request_span(r, trial, &on.ids, &on.scope) {
                on.queue.push(s);
            }
        }
    }

    /// What the report says of the export so far (`run.otel`); `None` when off.
    pub fn summary(&self) -> Option<OtelExport> {
        let on = self.on.as_ref()?;
        let c = on.queue.counts();
        Some(OtelExport {
            endpoint: crate::redact::text(&on.config.endpoint).into_owned(),
            protocol: on.config.protocol.clone(),
            spans: c.spans.load(Ordering::Relaxed),
            exported: c.exported.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
        })
    }

    /// Ends the export: waits (at most the export timeout and a second) for the
    /// queued spans to leave; a notice for spans dropped or not exported. The
    /// final counts are then [`Otel::summary`]'s.
    pub async fn close(&mut self) -> Vec<Notice> {
        let Some(on) = self.on.as_mut() else {
            return Vec::new();
        };
        on.queue
            .close(on.config.timeout + Duration::from_secs(1))
            .await;
        match self.summary() {
            Some(s) => self.notices(&s),
            None => Vec::new(),
        }
    }

    fn notices(&self, s: &OtelExport) -> Vec<Notice> {
        let Some(on) = &self.on else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if s.dropped > 0 {
            out.push(Notice::new(
                NoticeKind::Otel,
                format!(
                    "OpenTelemetry: {} of {} spans dropped because the export queue ({} spans) \
                     was full; OTEL_BSP_MAX_QUEUE_SIZE raises it",
                    s.dropped, s.spans, on.config.max_queue
                ),
            ));
        }
        if s.failed > 0 {
            let why = on
                .queue
                .counts()
                .first_error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .unwrap_or_default();
            out.push(Notice::new(
                NoticeKind::Otel,
                format!(
                    "OpenTelemetry: {} of {} spans not exported to {}: {}",
                    s.failed,
                    s.spans,
                    s.endpoint,
                    crate::redact::cut_chars(&crate::redact::text(&why), 300)
                ),
            ));
        }
        out
    }
}

/// The notice of an export goodput will not make.
fn refused(why: &str) -> Notice {
    Notice::new(
        NoticeKind::Otel,
        format!("OpenTelemetry: no spans exported: {why}"),
    )
}
