//! goodput addition: the one SLO judgement of a load level, and the interval of a
//! search's capacity.

use serde::{Deserialize, Serialize};

/// Whether a load level meets the SLO, judged once (by goodput's metrics) from the
/// pooled requests with their interval, and shown as is by every renderer.
///
/// Attainment form: `meets` when the 95% Wilson interval of the pooled attainment
/// lies at or above the target, `fails` when it lies below, `undecided` when it
/// straddles the target. Percentile form: `meets` when the 95% order-statistic
/// interval of each bounded percentile lies within its bound, `fails` when one
/// lies wholly beyond it, `undecided` otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    /// The interval lies on the passing side of the target.
    Meets,
    /// The interval lies on the failing side of the target.
    Fails,
    /// The interval straddles the target: more requests or trials would tell.
    Undecided,
    /// A word this version does not know (a newer report).
    #[serde(other)]
    Unknown,
}

impl Judgement {
    /// The word as written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Judgement::Meets => "meets",
            Judgement::Fails => "fails",
            Judgement::Undecided => "undecided",
            Judgement::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Judgement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// goodput addition: a search's capacity read off a non-increasing attainment
/// curve fitted to every probe, with its 95% bootstrap interval (see goodput's
/// `stats::capacity` module). In concurrency mode all three are whole loads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct CapacityInterval {
    /// The load where the fitted attainment curve, linear between probes, falls
    /// through the target (concurrency: the largest whole load at or above it).
    pub estimate: f64,
    /// Lower end of the 95% interval (never above `estimate`).
    pub low: f64,
    /// Upper end of the 95% interval (never below `estimate`; held at the highest
    /// probe when the crossing lies beyond it).
    pub high: f64,
    /// Bootstrap resamples drawn.
    pub resamples: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_snake_case_and_unknown_ones_are_kept_apart() {
        assert_eq!(
            serde_json::to_string(&Judgement::Undecided).unwrap(),
            "\"undecided\""
        );
        let j: Judgement = serde_json::from_str("\"meets\"").unwrap();
        assert_eq!(j, Judgement::Meets);
        let j: Judgement = serde_json::from_str("\"borderline\"").unwrap();
        assert_eq!(j, Judgement::Unknown);
    }

    #[test]
    fn an_older_check_without_a_judgement_still_reads() {
        let c: crate::SloCheck = serde_json::from_value(serde_json::json!({
            "good": 7, "sent": 8, "attainment": 0.875, "ci_low": 0.53, "ci_high": 0.98,
            "target": 0.9, "form": "attainment", "meets": false
        }))
        .unwrap();
        assert_eq!((c.judgement, c.decided_by), (None, None));
        let text = serde_json::to_string(&c).unwrap();
        assert!(!text.contains("judgement"), "{text}");
    }
}
