//! One scrape of `/metrics`: the body read with a byte bound and a timeout, parsed
//! with [`crate::drive::engine::prom`] into a [`Snapshot`].
//!
//! Why goodput's own reader and not a parser crate: `prometheus-parse` (0.2.5, the
//! most used) matches metric names with `\w+`, so every name with a colon
//! (`vllm:`, `sglang:`, `llamacpp:`, the very names read here) is dropped, and it
//! pulls in `chrono`; `openmetrics-parser` is LGPL-3.0 (this workspace is
//! MIT OR Apache-2.0) and rejects a whole scrape on one bad line;
//! `prom_text_format_parser` and `prometheus-exposition-format-rs` have had one or
//! two releases, the latter on nom 5. The format needed here is small, and a bad
//! line must cost that line only.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::drive::engine::prom;

/// Distinct sample names kept from one scrape (the rest are ignored).
pub const MAX_NAMES: usize = 2000;

/// A metric family's declared type (`# TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Goes up and down.
    Gauge,
    /// Only goes up (until a restart).
    Counter,
    /// Anything else (histogram, summary, untyped).
    Other,
}

/// One scrape: the value of every sample name, summed over its label sets
/// (histogram buckets and `_created` samples left out), and the declared type of
/// every sample name that has one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Sample name to summed value.
    pub values: BTreeMap<String, f64>,
    /// Sample name to its family's declared kind (counter families cover both
    /// `name` and `name_total`).
    pub kinds: BTreeMap<String, Kind>,
    /// The body was longer than the bound and was cut at a line end.
    pub truncated: bool,
    /// Samples (or sums over label sets) that were not finite (`+Inf`, `NaN`, an
    /// overflow), and were dropped: JSON cannot hold them.
    pub non_finite: usize,
}

impl Snapshot {
    /// Parses exposition text. Malformed lines are skipped; never fails.
    pub fn parse(text: &str) -> Snapshot {
        let mut snap = Snapshot::default();
        let mut families: BTreeMap<&str, Kind> = BTreeMap::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let mut it = rest.split_whitespace();
                if let (Some(name), Some(kind)) = (it.next(), it.next()) {
                    let kind = match kind {
                        "gauge" => Kind::Gauge,
                        "counter" => Kind::Counter,
                        _ => Kind::Other,
                    };
                    if families.len() < MAX_NAMES {
                        families.insert(name, kind);
                    }
                }
                continue;
            }
            let Some(s) = prom::parse_line(line) else {
                snap.non_finite += prom::is_non_finite_sample(line) as usize;
                continue;
            };
            if s.name.ends_with("_bucket") || s.name.ends_with("_created") {
                continue;
            }
            if !snap.values.contains_key(s.name) && snap.values.len() >= MAX_NAMES {
                continue;
            }
            *snap.values.entry(s.name.to_string()).or_insert(0.0) += s.value;
        }
        let before = snap.values.len();
        snap.values.retain(|_, v| v.is_finite());
        snap.non_finite += before - snap.values.len();
        for name in snap.values.keys() {
            let kind = families.get(name.as_str()).copied().or_else(|| {
                name.strip_suffix("_total")
                    .and_then(|f| families.get(f).copied())
                    .filter(|k| *k == Kind::Counter)
            });
            if let Some(k) = kind {
                snap.kinds.insert(name.clone(), k);
            }
        }
        snap
    }

    /// The value of the first of `names` present.
    pub fn first(&self, names: &[&str]) -> Option<f64> {
        names.iter().find_map(|n| self.values.get(*n).copied())
    }
}

/// Why a scrape gave nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScrapeError {
    /// No answer within the timeout.
    #[error("no answer within {0} ms")]
    Timeout(u128),
    /// Connection or read failure.
    #[error("{0}")]
    Http(String),
    /// An answer that is not a 2xx.
    #[error("HTTP {0}")]
    Status(u16),
    /// A 2xx body with no metric in it.
    #[error("no metrics in the answer (not Prometheus text)")]
    Empty,
}

/// GETs `url`, reading at most `max_bytes` of the body, within `timeout`.
pub async fn scrape(
    client: &reqwest::Client,
    url: &str,
    timeout: Duration,
    max_bytes: u64,
) -> Result<Snapshot, ScrapeError> {
    match tokio::time::timeout(timeout, read_bounded(client, url, max_bytes)).await {
        Ok(r) => r,
        Err(_) => Err(ScrapeError::Timeout(timeout.as_millis())),
    }
}

async fn read_bounded(
    client: &reqwest::Client,
    url: &str,
    max_bytes: u64,
) -> Result<Snapshot, ScrapeError> {
    let mut resp = client
        .get(url)
        .send()
        .await
        .map_err(|e| ScrapeError::Http(e.without_url().to_string()))?;
    if !resp.status().is_success() {
        return Err(ScrapeError::Status(resp.status().as_u16()));
    }
    let mut body: Vec<u8> = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| ScrapeError::Http(e.without_url().to_string()))?
    {
        let room = (max_bytes as usize).saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    if truncated {
        // Cut at the last complete line.
        let end = body.iter().rposition(|&b| b == b'\n').unwrap_or(0);
        body.truncate(end);
    }
    let text = String::from_utf8_lossy(&body);
    let mut snap = Snapshot::parse(&text);
    snap.truncated = truncated;
    if snap.values.is_empty() {
        return Err(ScrapeError::Empty);
    }
    Ok(snap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_label_sets_and_types_counter_families() {
        let text = "# TYPE vllm:num_preemptions counter\n\
                    vllm:num_preemptions_total{engine=\"0\"} 2\n\
                    vllm:num_preemptions_total{engine=\"1\"} 3\n\
                    vllm:num_preemptions_created 1.7e9\n\
                    # TYPE g gauge\ng 1.5\n\
                    # TYPE h histogram\nh_bucket{le=\"1\"} 4\nh_sum 9\nh_count 4\n";
        let s = Snapshot::parse(text);
        assert_eq!(s.first(&["vllm:num_preemptions_total"]), Some(5.0));
        assert_eq!(s.kinds["vllm:num_preemptions_total"], Kind::Counter);
        assert_eq!(s.kinds["g"], Kind::Gauge);
        assert!(!s.values.contains_key("h_bucket"));
        assert!(!s.values.contains_key("vllm:num_preemptions_created"));
        assert_eq!(s.first(&["missing", "h_sum"]), Some(9.0));
    }

    #[test]
    fn non_finite_values_and_overflowing_sums_are_dropped_and_counted() {
        let text = "a +Inf\nb{x=\"1\"} NaN\nc{x=\"1\"} 1.5e308\nc{x=\"2\"} 1.5e308\nd 2\n\
                    h_bucket{le=\"+Inf\"} 4\n";
        let s = Snapshot::parse(text);
        assert_eq!(s.values.keys().collect::<Vec<_>>(), ["d"]);
        assert_eq!(s.non_finite, 3);
    }

    #[test]
    fn malformed_text_costs_only_its_lines() {
        let text = "\u{0}\u{1}garbage{{{\nok 1\nbad{a=\"unterminated 3\n# TYPE\nnan_one NaN\n";
        let s = Snapshot::parse(text);
        assert_eq!(s.values.len(), 1);
        assert_eq!(s.first(&["ok"]), Some(1.0));
    }
}
