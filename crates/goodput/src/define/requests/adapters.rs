//! `[workload.adapters]`: each request names a LoRA adapter in its `model` field,
//! drawn by weight. The draw is a function of the run's seed, the trial's sample
//! and the request's index in the trial alone, so it is the same on every engine,
//! at every concurrency, in a resumed run and in every load shard.
//!
//! The name [`BASE`] stands for the engine's own model (no adapter): its requests
//! keep the `model` the engine is asked for, and are reported as `base`.

use std::sync::Arc;

use bytes::Bytes;

use super::Prepared;

/// The adapter name that draws the engine's own model.
pub const BASE: &str = "base";

/// The adapters a run draws from, and their weights (validated by the plan:
/// at least one, each weight positive and finite).
#[derive(Debug, Clone, PartialEq)]
pub struct Adapters {
    names: Vec<Arc<str>>,
    weights: Vec<f64>,
    /// Running sums of the weights divided by their total; the last is 1.
    cumulative: Vec<f64>,
}

impl Adapters {
    /// The adapters in order; `None` when there is none or a weight is not a
    /// positive finite number (the plan's checks say which).
    pub fn new(entries: &[(String, f64)]) -> Option<Adapters> {
        if entries.is_empty() || entries.iter().any(|(_, w)| !(w.is_finite() && *w > 0.0)) {
            return None;
        }
        let total: f64 = entries.iter().map(|(_, w)| w).sum();
        if !total.is_finite() {
            return None;
        }
        let mut sum = 0.0;
        let mut cumulative: Vec<f64> = entries
            .iter()
            .map(|(_, w)| {
                sum += w;
                sum / total
            })
            .collect();
        if let Some(last) = cumulative.last_mut() {
            *last = 1.0;
        }
        Some(Adapters {
            names: entries.iter().map(|(n, _)| Arc::from(n.as_str())).collect(),
            weights: entries.iter().map(|(_, w)| *w).collect(),
            cumulative,
        })
    }

    /// The names, in the profile's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    /// Each name with its share of the requests (its weight over the total).
    pub fn shares(&self) -> Vec<(&str, f64)> {
        let total: f64 = self.weights.iter().sum();
        self.names()
            .zip(self.weights.iter().map(|w| w / total))
            .collect()
    }

    /// The adapter of request `index` of the trial drawn as `sample` (the
    /// requests builder's numbering) in a run seeded `seed`.
    pub fn pick(&self, seed: u64, sample: u64, index: u64) -> &Arc<str> {
        let u = unit(seed, sample, index);
        let i = self.cumulative.partition_point(|&c| c <= u);
        &self.names[i.min(self.names.len() - 1)]
    }
}

/// A number in [0, 1) from (seed, sample, index): splitmix64 over their mix, the
/// top 53 bits.
fn unit(seed: u64, sample: u64, index: u64) -> f64 {
    let mut z = seed
        ^ sample.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03)
        ^ 0x4C4F_5241; // "LORA": adapters draw apart from the prompts
    for _ in 0..2 {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
    }
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Names an adapter in each of a trial's requests (built for `sample`, in index
/// order): its body's `model` is the adapter's name ([`BASE`] keeps the engine's
/// model), and the request keeps the name for its record. Bodies are rewritten
/// before the trial starts, never while it runs.
pub fn assign(requests: &mut [Prepared], adapters: Option<&Adapters>, seed: u64, sample: u64) {
    let Some(adapters) = adapters else { return };
    for (i, r) in requests.iter_mut().enumerate() {
        let name = adapters.pick(seed, sample, i as u64);
        if &**name != BASE {
            r.body = with_model(&r.body, name);
        }
        r.adapter = Some(name.clone());
    }
}

/// `body` with its `model` field set to `name` (a body that is not a JSON object,
/// which the builder never makes, is left as it is).
fn with_model(body: &Bytes, name: &str) -> Bytes {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(mut o)) => {
            o.insert("model".into(), name.into());
            Bytes::from(serde_json::Value::Object(o).to_string())
        }
        _ => body.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::define::requests::Asked;

    fn mix(entries: &[(&str, f64)]) -> Adapters {
        let e: Vec<(String, f64)> = entries.iter().map(|(n, w)| (n.to_string(), *w)).collect();
        Adapters::new(&e).unwrap()
    }

    #[test]
    fn draws_follow_the_weights_and_repeat_with_the_seed() {
        let a = mix(&[("lora-a", 3.0), ("lora-b", 1.0)]);
        let picks: Vec<&str> = (0..4000).map(|i| &**a.pick(7, 0, i)).collect();
        let b = picks.iter().filter(|n| **n == "lora-b").count();
        // 1000 expected; 4 standard deviations of Binomial(4000, 0.25) is 110.
        assert!((890..=1110).contains(&b), "{b}");
        let again: Vec<&str> = (0..4000).map(|i| &**a.pick(7, 0, i)).collect();
        assert_eq!(picks, again);
        let other: Vec<&str> = (0..4000).map(|i| &**a.pick(8, 0, i)).collect();
        assert_ne!(picks, other, "another seed, another draw");
    }

    #[test]
    fn a_request_keeps_its_adapter_whatever_comes_before_it() {
        // The draw of request i depends on i alone: building 10 or 100 requests
        // gives the first 10 the same adapters.
        let a = mix(&[("x", 1.0), ("y", 1.0), ("z", 2.0)]);
        let few: Vec<_> = (0..10).map(|i| a.pick(1, 3, i).clone()).collect();
        let many: Vec<_> = (0..100).map(|i| a.pick(1, 3, i).clone()).collect();
        assert_eq!(few[..], many[..10]);
    }

    #[test]
    fn bad_weights_are_not_a_mix() {
        for w in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(Adapters::new(&[("a".into(), w)]), None, "{w}");
        }
        assert_eq!(Adapters::new(&[]), None);
        assert_eq!(
            Adapters::new(&[("a".into(), f64::MAX), ("b".into(), f64::MAX)]),
            None
        );
    }

    #[test]
    fn assign_sets_the_model_and_keeps_base_requests_on_the_engine_model() {
        let a = mix(&[("base", 1.0), ("lora-b", 1.0)]);
        let body = Bytes::from(r#"{"model":"m","prompt":"hi","stream":true}"#);
        let mut reqs: Vec<Prepared> = (0..64)
            .map(|_| Prepared {
                body: body.clone(),
                asked: Asked::default(),
                adapter: None,
            })
            .collect();
        assign(&mut reqs, Some(&a), 42, 0);
        let mut seen = std::collections::BTreeSet::new();
        for r in &reqs {
            let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            let name = r.adapter.as_deref().unwrap();
            seen.insert(name.to_string());
            let model = if name == BASE { "m" } else { name };
            assert_eq!(v["model"], model);
            assert_eq!(v["prompt"], "hi");
        }
        assert_eq!(seen.len(), 2, "{seen:?}");
    }
}
