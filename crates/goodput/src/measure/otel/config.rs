//! The export's settings, read from OpenTelemetry's standard variables (the
//! OTLP exporter's and the batch processor's), each checked with an error that
//! names the variable.

use std::time::Duration;

use report::OtlpProtocol;

/// The traces endpoint, used as it is.
pub const TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The endpoint of every signal: traces go to its `/v1/traces`.
pub const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
const TRACES_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
const PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
const TRACES_TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT";
const TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";
/// Headers of every export request (`k=v,k2=v2`); the exporter reads them.
pub const HEADERS: &str = "OTEL_EXPORTER_OTLP_HEADERS";
/// Headers of the traces' export requests; the exporter reads them.
pub const TRACES_HEADERS: &str = "OTEL_EXPORTER_OTLP_TRACES_HEADERS";
const SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
const SDK_DISABLED: &str = "OTEL_SDK_DISABLED";
const MAX_QUEUE: &str = "OTEL_BSP_MAX_QUEUE_SIZE";
const MAX_BATCH: &str = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE";

/// The specification's defaults: 10 s an export, 2048 spans queued, 512 a batch.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_QUEUE: usize = 2048;
const DEFAULT_MAX_BATCH: usize = 512;
/// The most spans goodput queues, whatever `OTEL_BSP_MAX_QUEUE_SIZE` asks: about a
/// kilobyte each, a bound on the queue's memory.
pub const MOST_QUEUED: usize = 1 << 20;

/// What the export does.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The traces endpoint.
    pub endpoint: String,
    /// `http/protobuf` (the default) or `http/json`.
    pub protocol: OtlpProtocol,
    /// Longest one export may take.
    pub timeout: Duration,
    /// `service.name` of the spans' resource.
    pub service_name: String,
    /// Spans queued at most; more are dropped, and counted.
    pub max_queue: usize,
    /// Spans sent in one export at most.
    pub max_batch: usize,
}

/// The settings from `var` (the process's environment, or a test's): `None` when
/// no endpoint is set or `OTEL_SDK_DISABLED=true` (nothing is exported), an error
/// naming the variable whose value goodput cannot use.
pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Config>, String> {
    let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    if set(SDK_DISABLED).is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let endpoint = match (set(TRACES_ENDPOINT), set(ENDPOINT)) {
        (Some(e), _) => e.trim().to_string(),
        (None, Some(e)) => format!("{}/v1/traces", e.trim().trim_end_matches('/')),
        (None, None) => return Ok(None),
    };
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        return Err(format!(
            "the OTLP endpoint `{endpoint}` is not an http:// or https:// URL"
        ));
    }
    let protocol = match named(&set, TRACES_PROTOCOL, PROTOCOL) {
        None => OtlpProtocol::HttpProtobuf,
        Some((name, p)) => match OtlpProtocol::from_word(p.trim()) {
            OtlpProtocol::Unknown(w) => {
                return Err(format!(
                    "{name} is `{w}`: goodput exports over http/protobuf or http/json"
                ))
            }
            known => known,
        },
    };
    let timeout = match named(&set, TRACES_TIMEOUT, TIMEOUT) {
        None => DEFAULT_TIMEOUT,
        Some((name, t)) => Duration::from_millis(count(name, &t)?),
    };
    let max_queue = match set(MAX_QUEUE) {
        None => DEFAULT_MAX_QUEUE,
        Some(q) => positive(MAX_QUEUE, &q)?.min(MOST_QUEUED),
    };
    let max_batch = match set(MAX_BATCH) {
        None => DEFAULT_MAX_BATCH,
        Some(b) => positive(MAX_BATCH, &b)?,
    }
    .min(max_queue);
    Ok(Some(Config {
        endpoint,
        protocol,
        timeout,
        service_name: set(SERVICE_NAME).unwrap_or_else(|| "goodput".into()),
        max_queue,
        max_batch,
    }))
}

/// The traces' own variable, else the one of every signal, with its name.
fn named(
    set: &impl Fn(&str) -> Option<String>,
    traces: &'static str,
    all: &'static str,
) -> Option<(&'static str, String)> {
    set(traces)
        .map(|v| (traces, v))
        .or_else(|| set(all).map(|v| (all, v)))
}

fn count(name: &str, v: &str) -> Result<u64, String> {
    v.trim()
        .parse::<u64>()
        .map_err(|_| format!("{name} is `{v}`: expected a whole number of milliseconds"))
}

fn positive(name: &str, v: &str) -> Result<usize, String> {
    match v.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{name} is `{v}`: expected a whole number above 0")),
    }
}

/// The values of the export's header variables (`k=v` pairs), which usually
/// carry the collector's credentials: remembered as secrets, so no output shows
/// them ([`crate::redact`]).
pub fn header_values(var: impl Fn(&str) -> Option<String>) -> Vec<String> {
    [TRACES_HEADERS, HEADERS]
        .iter()
        .filter_map(|n| var(n))
        .flat_map(|h| {
            h.split(',')
                .filter_map(|kv| kv.split_once('=').map(|(_, v)| v.trim().to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<Option<Config>, String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        from_vars(|k| m.get(k).cloned())
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint() {
        assert_eq!(read(&[]), Ok(None));
        assert_eq!(read(&[(ENDPOINT, " "), (PROTOCOL, "http/json")]), Ok(None));
        assert_eq!(
            read(&[(ENDPOINT, "http://c"), (SDK_DISABLED, "TRUE")]),
            Ok(None)
        );
    }

    #[test]
    fn the_general_endpoint_gets_the_traces_path_and_the_traces_one_is_kept() {
        let c = read(&[(ENDPOINT, "http://c:4318/")]).unwrap().unwrap();
        assert_eq!(c.endpoint, "http://c:4318/v1/traces");
        assert_eq!(c.protocol, OtlpProtocol::HttpProtobuf);
        assert_eq!(c.timeout, Duration::from_secs(10));
        assert_eq!(c.service_name, "goodput");
        assert_eq!((c.max_queue, c.max_batch), (2048, 512));
        let c = read(&[
            (ENDPOINT, "http://c:4318"),
            (TRACES_ENDPOINT, "https://t/x"),
            (PROTOCOL, "http/protobuf"),
            (TRACES_PROTOCOL, "http/json"),
            (TIMEOUT, "1"),
            (TRACES_TIMEOUT, "2500"),
            (SERVICE_NAME, "bench"),
            (MAX_QUEUE, "10"),
            (MAX_BATCH, "64"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.endpoint, "https://t/x");
        assert_eq!(c.protocol, OtlpProtocol::HttpJson);
        assert_eq!(c.timeout, Duration::from_millis(2500));
        assert_eq!(c.service_name, "bench");
        assert_eq!((c.max_queue, c.max_batch), (10, 10));
    }

    #[test]
    fn a_value_goodput_cannot_use_is_refused_by_its_variables_name() {
        let e = read(&[(ENDPOINT, "http://c"), (PROTOCOL, "grpc")]).unwrap_err();
        assert!(e.contains("OTEL_EXPORTER_OTLP_PROTOCOL is `grpc`"), "{e}");
        let e = read(&[(ENDPOINT, "http://c"), (TRACES_TIMEOUT, "5s")]).unwrap_err();
        assert!(
            e.contains("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT is `5s`"),
            "{e}"
        );
        let e = read(&[(ENDPOINT, "http://c"), (MAX_QUEUE, "0")]).unwrap_err();
        assert!(e.contains("OTEL_BSP_MAX_QUEUE_SIZE is `0`"), "{e}");
        let e = read(&[(ENDPOINT, "collector:4318")]).unwrap_err();
        assert!(
            e.contains("`collector:4318/v1/traces` is not an http"),
            "{e}"
        );
    }

    #[test]
    fn header_values_are_found_for_redaction() {
        let v = header_values(|k| {
            (k == HEADERS).then(|| "authorization=Bearer abc123, x-team = t0k3n".into())
        });
        assert_eq!(v, ["Bearer abc123", "t0k3n"]);
    }
}
