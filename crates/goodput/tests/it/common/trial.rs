//! One trial for the tests that drive the load generator directly against a
//! loopback server: engine `r`, no concurrency cap, 10 s a request and no stall
//! timeout, a second of grace.

use std::time::Duration;

use goodput::define::profile::LoadMode;
use goodput::define::requests::Prepared;
use goodput::drive::client::{Limits, SseLimits};
use goodput::drive::load::Trial;

/// A trial at `x` in `mode` of `requests` sent at `offsets` (none: a closed
/// loop), cut off after `timeout`.
pub fn trial(
    x: f64,
    mode: LoadMode,
    offsets: Vec<u64>,
    requests: Vec<Prepared>,
    timeout: Duration,
) -> Trial {
    Trial {
        engine: "r".into(),
        x,
        level: x,
        index: 0,
        mode,
        max_concurrency: None,
        offsets,
        requests,
        limits: Limits {
            request_timeout: Duration::from_secs(10),
            stall_timeout: None,
            sse: SseLimits::default(),
        },
        timeout: Some(timeout),
        grace: Duration::from_secs(1),
        sent: None,
        attempt: 0,
        first_index: 0,
    }
}
