//! A virtual-time request (the simulator's engine model, `goodput_sim::model::
//! virtual_time`) as the record goodput's client would have written: what `fit`
//! replays for its residuals and `predict` writes as its requests file. Here, below
//! both, so that neither reads the other for it.

use goodput_sim::model::virtual_time::{ClientTiming, VirtualRequest};
use goodput_sim::model::RequestSpec;

use super::{Chunk, ErrorKind, RequestRecord};

/// goodput's own client in virtual time: its closed-loop workers start together
/// (0.1 ms apart), and a worker's next request reaches the engine 2 ms after the
/// last token of its previous one (it misses the step that starts then).
pub const CLIENT: ClientTiming = ClientTiming {
    stagger_s: 0.000_1,
    delay_s: 0.002,
};
/// Bytes of text credited to each predicted token (records carry chunk sizes).
const BYTES_PER_TOKEN: u32 = 4;

fn ns(s: f64) -> u64 {
    (s * 1e9).round().max(0.0) as u64
}

/// A virtual request as the record a real client would have written: a request past
/// `timeout_s` fails as `timeout` with the chunks that arrived in time, one that
/// never finished (the run ended) as `cancelled`.
pub fn to_record(
    engine: &str,
    x: f64,
    trial: u32,
    index: u32,
    v: &VirtualRequest,
    spec: &RequestSpec,
    timeout_s: f64,
) -> RequestRecord {
    let mut r = RequestRecord::new(engine, x, trial, index, ns(v.scheduled));
    r.requested_tokens = Some(spec.output_tokens);
    let Some(sent) = v.sent else {
        r.error = Some(ErrorKind::Cancelled);
        r.error_detail = Some("predicted: never sent before the trial ended".into());
        return r;
    };
    r.sent = ns(sent);
    let deadline = sent + timeout_s;
    r.chunks = v
        .chunks
        .iter()
        .filter(|c| c.0 <= deadline)
        .map(|&(t, tokens)| Chunk {
            t: ns(t),
            len: tokens * BYTES_PER_TOKEN,
            reasoning: 0,
            lag: None,
            bound: None,
        })
        .collect();
    match v.done {
        Some(done) if done <= deadline => {
            r.done = Some(ns(done));
            r.status = Some(200);
            r.prompt_tokens = Some(u64::from(spec.prompt_tokens));
            r.completion_tokens = Some(v.chunks.iter().map(|c| u64::from(c.1)).sum());
        }
        Some(_) => {
            r.done = Some(ns(deadline));
            r.status = Some(200);
            r.error = Some(ErrorKind::Timeout);
            r.error_detail = Some(format!(
                "predicted: longer than the {timeout_s} s request timeout"
            ));
        }
        None => {
            r.error = Some(ErrorKind::Cancelled);
            r.error_detail = Some(
                "predicted: not finished when the trial ended (the KV pool cannot hold it, or the trial timed out)"
                    .into(),
            );
        }
    }
    r
}
