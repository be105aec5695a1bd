//! One streaming request through goodput's client, the way the client tests send
//! it: a fresh record, then [`stream_request`] to its end.

use goodput::drive::client::{stream_request, Limits, Target};
use goodput::drive::record::{now_ns, RequestRecord};

/// Sends `body` (the fake servers ignore it) from `client` to `target` under
/// `limits`, with `max_tokens` = `requested` in the record; the record.
pub async fn send(
    client: &reqwest::Client,
    target: &Target,
    body: &'static [u8],
    requested: Option<u32>,
    limits: &Limits,
) -> RequestRecord {
    let mut rec = RequestRecord::new("e", 1.0, 0, 0, 0);
    rec.requested_tokens = requested;
    stream_request(
        client,
        target,
        bytes::Bytes::from_static(body).into(),
        &mut rec,
        limits,
        now_ns(),
    )
    .await;
    rec
}
