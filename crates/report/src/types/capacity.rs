//! One engine's capacity under the SLO, found by `goodput search`.

use serde::{Deserialize, Serialize};

use super::{CapacityInterval, Limit, LoadMode};

/// goodput addition: one engine's capacity under the SLO, found by `goodput search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(from = "CapacityWire")]
pub struct Capacity {
    /// `concurrency`, `rate` or `trace`: what the load levels count.
    pub mode: LoadMode,
    /// The largest load found to meet the SLO; `null` when even the lowest load
    /// probed fails.
    pub max_load: Option<f64>,
    /// The largest probed load that met the SLO (`null` when none did).
    pub passing: Option<f64>,
    /// The smallest probed load above `passing` that failed (`null` when none
    /// failed up to the search's `max`).
    pub failing: Option<f64>,
    /// Pooled attainment at `max_load` (at the lowest load when none passed).
    pub attainment_at_max: Option<f64>,
    /// Load levels probed.
    pub probes: u32,
    /// Trials run over all probes.
    pub trials: u32,
    /// What bounds the capacity ([`Limit`]): a bounded metric's key (`ttft`, ...),
    /// `no_answer` or `errors` (what the requests at `failing` missed most; `slo`
    /// when none was counted), `max` (the search's upper bound met the SLO),
    /// `max_probes` (the probe budget ran out), `engine` (the engine failed).
    pub limited_by: Limit,
    /// The bracket could not be narrowed with confidence: a deciding probe was
    /// still judged `undecided` after its most trials (the note names the loads
    /// and the requests that would decide them). Earlier reports wrote `"<limit> (noisy)"` in
    /// `limited_by` instead; they read as this flag.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub noisy: bool,
    /// The answer in words, with anything that weakens it.
    pub note: String,
    /// goodput addition (`search --objective cost`): the load meeting the SLO whose
    /// good tokens cost least (the most good output tokens per second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cheapest_load: Option<f64>,
    /// goodput addition: the capacity where a non-increasing attainment curve
    /// fitted to every probe crosses the target, with its 95% bootstrap interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<CapacityInterval>,
}

/// [`Capacity`] as read: `limited_by` with the older `" (noisy)"` suffix becomes
/// the limit and the `noisy` flag.
#[derive(Deserialize)]
struct CapacityWire {
    mode: LoadMode,
    max_load: Option<f64>,
    passing: Option<f64>,
    failing: Option<f64>,
    attainment_at_max: Option<f64>,
    probes: u32,
    trials: u32,
    limited_by: String,
    #[serde(default)]
    noisy: bool,
    note: String,
    #[serde(default)]
    cheapest_load: Option<f64>,
    #[serde(default)]
    interval: Option<CapacityInterval>,
}

impl From<CapacityWire> for Capacity {
    fn from(w: CapacityWire) -> Self {
        let (word, suffixed) = match w.limited_by.strip_suffix(" (noisy)") {
            Some(word) => (word, true),
            None => (w.limited_by.as_str(), false),
        };
        Capacity {
            mode: w.mode,
            max_load: w.max_load,
            passing: w.passing,
            failing: w.failing,
            attainment_at_max: w.attainment_at_max,
            probes: w.probes,
            trials: w.trials,
            limited_by: Limit::from_word(word),
            noisy: w.noisy || suffixed,
            note: w.note,
            cheapest_load: w.cheapest_load,
            interval: w.interval,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_older_noisy_suffix_reads_as_the_flag_and_is_written_as_it() {
        let c: Capacity = serde_json::from_value(serde_json::json!({
            "mode": "rate", "max_load": 4.0, "passing": 4.0, "failing": 5.0,
            "attainment_at_max": 0.95, "probes": 5, "trials": 9,
            "limited_by": "ttft (noisy)", "note": "meets the SLO at 4 requests/s"
        }))
        .unwrap();
        assert_eq!(
            (c.mode.clone(), c.limited_by.clone(), c.noisy),
            (LoadMode::Rate, Limit::Metric(crate::SloMetric::Ttft), true)
        );
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(
            (v["limited_by"].as_str(), v["noisy"].as_bool()),
            (Some("ttft"), Some(true))
        );
        let again: Capacity = serde_json::from_value(v).unwrap();
        assert_eq!(again, c);
        let newer: Capacity = serde_json::from_value(serde_json::json!({
            "mode": "sessions", "max_load": null, "passing": null, "failing": null,
            "attainment_at_max": null, "probes": 0, "trials": 0,
            "limited_by": "memory", "note": ""
        }))
        .unwrap();
        assert_eq!(
            newer.limited_by,
            Limit::Other(crate::LimitWord::Unknown("memory".into()))
        );
        assert!(!newer.noisy);
        let v = serde_json::to_value(&newer).unwrap();
        assert_eq!(
            (v["mode"].as_str(), v["limited_by"].as_str()),
            (Some("sessions"), Some("memory"))
        );
        assert!(v.get("noisy").is_none());
    }
}
