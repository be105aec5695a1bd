//! The adapter warning: a point whose stored judgement
//! (`adapters.judgements`, goodput's `measure::metrics::adapter_judgement`) found
//! one LoRA adapter's latency higher (or lower) than the other adapters', beyond
//! noise and beyond the least effect. One warning per such adapter and metric,
//! worded by [`crate::adapters::sentence`], as the verdict words it.

use report::{AdapterOutcome, Point};

use super::WarningKind;

/// The adapter warnings of one point.
pub fn rules(p: &Point) -> Vec<(WarningKind, String, String)> {
    let Some(s) = &p.adapters else {
        return Vec::new();
    };
    crate::adapters::differing(s)
        .into_iter()
        .map(|j| {
            let advice = match j.outcome {
                AdapterOutcome::Higher if j.metric == "ttft" => {
                    "A higher TTFT on one adapter is often its load: with fewer LoRA slots than \
                     adapters in use (vLLM's --max-loras, --max-cpu-loras) it is swapped in before \
                     its requests start. Give the engine a slot per adapter, or judge that \
                     adapter's SLO on its own row."
                }
                _ => {
                    "Judge each adapter on its own row of the adapter table; a slower adapter \
                     (a higher rank, more target modules) costs every request that names it."
                }
            };
            (
                WarningKind::AdapterDiffers,
                crate::adapters::sentence(j),
                advice.to_string(),
            )
        })
        .collect()
}
