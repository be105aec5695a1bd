//! LoRA adapters served (`[adapters]` in the configuration): which names a request
//! may give in `model`, the resident slots (least recently used evicted), the load
//! of an adapter that is not resident, and the slowdown of an adapter's requests.
//!
//! Simplified against vLLM: a load delays only the requests of the adapter loaded
//! (vLLM loads between steps, so a load there costs the step's other requests a
//! little too); an adapter in use by running requests can be evicted (their
//! timing is unchanged); an adapter's slowdown stretches when its tokens are
//! streamed, not the model's batch, so other requests do not feel it.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use parking_lot::Mutex;

use super::driver::Delivery;
use super::openai::ApiError;
use crate::config::adapters::AdaptersConfig;
use crate::config::SimConfig;

/// The resident adapters, least recently used first, each with the time its load
/// ends.
#[derive(Debug)]
pub(crate) struct Slots {
    resident: Mutex<Vec<(String, Instant)>>,
}

impl Slots {
    pub(crate) fn new() -> Slots {
        Slots {
            resident: Mutex::new(Vec::new()),
        }
    }

    /// When adapter `name` is ready for a request arriving at `now`: now when it
    /// is resident and loaded, the end of its load when it is loading, else it is
    /// loaded now (evicting the least recently used when every slot is taken).
    fn ready_at(&self, name: &str, now: Instant, max: usize, load: Duration) -> Instant {
        let mut r = self.resident.lock();
        let ready = match r.iter().position(|(n, _)| n == name) {
            Some(i) => r.remove(i).1,
            None => {
                if r.len() >= max {
                    r.remove(0);
                }
                now + load
            }
        };
        r.push((name.to_string(), ready));
        ready.max(now)
    }
}

/// How one request's tokens are shifted: due at `ready + (t − arrived) × slowdown`
/// instead of `t`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AdapterTiming {
    arrived: Instant,
    ready: Instant,
    slowdown: f64,
}

impl AdapterTiming {
    /// A delivery with its time shifted.
    pub(crate) fn shift(&self, mut d: Delivery) -> Delivery {
        let since = d.scheduled.saturating_duration_since(self.arrived);
        d.scheduled = self.ready + since.mul_f64(self.slowdown);
        d
    }
}

/// The timing of a request naming `model`: `None` for the base model (or no
/// adapters configured and the base model's name); a 404 in vLLM's words for a
/// name neither the model's nor an adapter's.
pub(crate) fn timing(
    config: &SimConfig,
    slots: &Slots,
    model: &str,
    arrived: Instant,
) -> Result<Option<AdapterTiming>, ApiError> {
    if model == config.model {
        return Ok(None);
    }
    let Some((a, slowdown)) = config
        .adapters
        .as_ref()
        .and_then(|a| a.modules.get(model).map(|s| (a, *s)))
    else {
        return Err(ApiError {
            param: Some("model".into()),
            ..ApiError::with_status(
                StatusCode::NOT_FOUND,
                format!("The model `{model}` does not exist."),
            )
        });
    };
    let load = scaled(a, config.time_scale);
    let ready = slots.ready_at(
        model,
        Instant::now().max(arrived),
        a.max_loras as usize,
        load,
    );
    Ok(Some(AdapterTiming {
        arrived,
        ready,
        slowdown,
    }))
}

fn scaled(a: &AdaptersConfig, time_scale: f64) -> Duration {
    Duration::try_from_secs_f64(a.load_ms / 1000.0 / time_scale).unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_keep_the_recently_used_and_load_the_rest() {
        let s = Slots::new();
        let t0 = Instant::now();
        let load = Duration::from_millis(100);
        // a loads; b loads and evicts nothing (2 slots); a again is resident.
        assert_eq!(s.ready_at("a", t0, 2, load), t0 + load);
        assert_eq!(s.ready_at("b", t0, 2, load), t0 + load);
        let later = t0 + Duration::from_secs(1);
        assert_eq!(s.ready_at("a", later, 2, load), later);
        // c evicts b (the least recently used), so b loads again; a stays.
        assert_eq!(s.ready_at("c", later, 2, load), later + load);
        let end = later + Duration::from_secs(1);
        assert_eq!(s.ready_at("b", end, 2, load), end + load);
        // A request arriving while its adapter loads waits for that load only.
        assert_eq!(s.ready_at("b", end + load / 2, 2, load), end + load);
    }

    #[test]
    fn unknown_names_are_vllms_404_and_slow_adapters_stretch_their_tokens() {
        let c = SimConfig {
            adapters: Some(AdaptersConfig::named(["lora-a"], 1)),
            ..SimConfig::default()
        };
        let slots = Slots::new();
        let now = Instant::now();
        let e = timing(&c, &slots, "lora-x", now).unwrap_err();
        assert_eq!(e.status, StatusCode::NOT_FOUND);
        assert_eq!(e.message, "The model `lora-x` does not exist.");
        assert!(timing(&c, &slots, &c.model.clone(), now).unwrap().is_none());
        let t = AdapterTiming {
            arrived: now,
            ready: now + Duration::from_millis(10),
            slowdown: 3.0,
        };
        let d = Delivery {
            tokens: 1,
            finished: false,
            scheduled: now + Duration::from_millis(40),
        };
        assert_eq!(t.shift(d).scheduled, now + Duration::from_millis(130));
    }
}
