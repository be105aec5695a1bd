//! Warnings from the engine's own metrics (`point.server`, `trials[].server`):
//! requests queued at the server, preemptions, a nearly full KV cache, and the
//! cross-check of server-counted tokens and requests against the client's.

use report::Point;

use super::WarningKind;
use crate::text::num;
use report::server::cross_check;

/// Share of samples with a request waiting above which the queue is reported.
pub const WAITING_SHARE_LIMIT: f64 = 0.2;
/// KV-cache usage at or above which the cache is reported as nearly full.
pub const KV_FULL_LIMIT: f64 = 0.95;

/// What a server-side warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerWarning {
    /// Requests waited in the server's queue for a large share of the trial.
    Queued,
    /// The engine preempted requests.
    Preempted,
    /// The KV cache was nearly full.
    KvFull,
    /// The server's counts disagree with the client's.
    Mismatch,
}

impl ServerWarning {
    /// A short title.
    pub fn title(self) -> &'static str {
        match self {
            ServerWarning::Queued => "Requests queued at the server",
            ServerWarning::Preempted => "Requests preempted",
            ServerWarning::KvFull => "KV cache nearly full",
            ServerWarning::Mismatch => "Server and client counts disagree",
        }
    }

    /// Why it matters.
    pub fn why(self) -> &'static str {
        match self {
            ServerWarning::Queued => {
                "a request that waits for a batch slot or KV space is not being prefilled: \
                 TTFT at this load is queue time, not prefill time."
            }
            ServerWarning::Preempted => {
                "a preempted request loses its KV cache and recomputes it later: the KV pool is \
                 too small for this load, and latency grows with every preemption."
            }
            ServerWarning::KvFull => {
                "with the KV cache full, new requests wait and running ones may be preempted: \
                 the engine is at its memory limit, not its compute limit."
            }
            ServerWarning::Mismatch => {
                "the server's own counters and goodput's measurements should agree over a \
                 trial; a gap means a miscounting client or server, or other traffic hitting \
                 the engine during the run."
            }
        }
    }
}

/// The server-side warnings of one point.
pub fn rules(p: &Point) -> Vec<(WarningKind, String, String)> {
    let mut out = Vec::new();
    let Some(s) = &p.server else {
        return out;
    };
    let kind = WarningKind::Server;
    if let (Some(share), Some(max_w)) = (s.waiting_share, s.max_waiting) {
        if share > WAITING_SHARE_LIMIT && max_w >= 1.0 {
            let running = s.mean_running.map_or(String::new(), |r| {
                format!(", {} running on average", num(round1(r)))
            });
            out.push((
                kind(ServerWarning::Queued),
                format!(
                    "requests waited at the server in {:.0} % of samples (mean {}, up to {} \
                     waiting{running}): TTFT here is queueing",
                    share * 100.0,
                    num(round1(s.mean_waiting.unwrap_or(0.0))),
                    num(max_w)
                ),
                "read this point's TTFT as queue time; lower the load, or give the engine more \
                 batch slots (vLLM --max-num-seqs, SGLang --max-running-requests) or KV memory"
                    .into(),
            ));
        }
    }
    if let Some(n) = s.counts.preemptions.filter(|n| *n > 0.0) {
        out.push((
            kind(ServerWarning::Preempted),
            format!("{} preemptions during the trials", num(n)),
            "give the KV cache more memory (vLLM --gpu-memory-utilization, a shorter \
             --max-model-len) or send fewer requests at once"
                .into(),
        ));
    }
    if let Some(kv) = s.max_kv_usage.filter(|kv| *kv >= KV_FULL_LIMIT) {
        out.push((
            kind(ServerWarning::KvFull),
            format!("KV cache up to {:.0} % full", kv * 100.0),
            "this load is at the engine's KV memory limit; more load will queue or preempt".into(),
        ));
    }
    for t in &p.trials {
        let Some(server) = &t.server else { continue };
        for m in cross_check(server, t.failed) {
            let diff = if m.client > 0.0 {
                format!(" ({:+.1} %)", (m.server - m.client) / m.client * 100.0)
            } else {
                String::new()
            };
            out.push((
                kind(ServerWarning::Mismatch),
                format!(
                    "trial {}: the server ({}) counted {} {}, goodput counted {}{diff}",
                    t.index + 1,
                    server.catalogue,
                    num(m.server),
                    m.what,
                    num(m.client)
                ),
                "make sure nothing else sends requests to the engine during the run; if \
                 nothing does, one of the two counts is wrong (goodput's comes from `usage`, \
                 else from stream chunks)"
                    .into(),
            ));
        }
    }
    out
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}
