//! Speculative decoding in the fitted configuration, and steps whose chunks
//! coalesced several engine steps (no draft counted).

use goodput_sim::config::{Acceptance, SpeculativeConfig};
use goodput_sim::SimConfig;

use super::solve::Status;
use super::steps::Step;
use super::{FitContext, Param, MAX_SPEC_TOKENS, SPEC_MIN_TOKENS};

/// Without speculation, a step where a decoding request got k tokens in one
/// chunk spans k engine steps (the delivery coalesced them): its per-step costs
/// count k times.
pub(super) fn coalesced(steps: &mut [Step], notes: &mut Vec<String>) {
    let mut spanned = 0usize;
    for s in steps.iter_mut() {
        let most = s
            .decode_tokens
            .iter()
            .fold(1.0f64, |a, &b| a.max(b))
            .round();
        s.spans = most.clamp(1.0, 1e4);
        spanned += usize::from(s.spans > 1.0);
    }
    if spanned > 0 {
        notes.push(format!(
            "{spanned} steps had a chunk of several tokens while the engine counted no speculative draft: delivery coalesced several engine steps (each counted as the steps it spans), not speculation"
        ));
    }
}

/// `E[accepted] = Σ_{i=1..k} aⁱ`: the acceptance rate giving `accepted`, by bisection.
pub fn acceptance_for(accepted: f64, k: u32) -> f64 {
    let expected = |a: f64| (1..=k).map(|i| a.powi(i as i32)).sum::<f64>();
    if accepted <= 0.0 {
        return 0.0;
    }
    if accepted >= f64::from(k) {
        return 1.0;
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if expected(mid) < accepted {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Speculative decoding, when decoding requests got more than a token a step.
pub(super) fn speculative(
    steps: &[Step],
    ctx: &FitContext,
    config: &mut SimConfig,
    notes: &mut Vec<String>,
) -> Vec<Param> {
    let tokens: Vec<f64> = steps
        .iter()
        .flat_map(|s| s.decode_tokens.iter().copied())
        .collect();
    if tokens.is_empty() {
        return Vec::new();
    }
    let mean = tokens.iter().sum::<f64>() / tokens.len() as f64;
    if mean <= SPEC_MIN_TOKENS {
        return Vec::new();
    }
    let most = tokens.iter().fold(1.0f64, |a, &b| a.max(b)).round();
    let k = ((most - 1.0).max(1.0) as u32).min(MAX_SPEC_TOKENS);
    let a = acceptance_for(mean - 1.0, k);
    config.speculative = Some(SpeculativeConfig {
        num_speculative_tokens: k,
        acceptance: Acceptance::Uniform {
            mean: a,
            spread: 0.0,
        },
        verify_cost_ms: 0.0,
        per_draft_token_ms: 0.0,
    });
    if let Some(r) = ctx.spec_acceptance {
        notes.push(format!(
            "the engine's counters gave a draft acceptance of {:.3}; the model's per-token rate is {a:.3} with {k} drafts a step (the two count differently when drafts are cut short)",
            r
        ));
    }
    let held = "moves with the decode cost (every decode step verifies drafts): held at 0, the decode cost carries it";
    vec![
        Param {
            name: "speculative.num_speculative_tokens".into(),
            value: f64::from(k),
            status: Status::Fitted { stderr: 0.0 },
        },
        Param {
            name: "speculative.acceptance.mean".into(),
            value: a,
            status: Status::Fitted { stderr: 0.0 },
        },
        Param {
            name: "speculative.verify_cost_ms".into(),
            value: 0.0,
            status: Status::Prior(held.into()),
        },
        Param {
            name: "speculative.per_draft_token_ms".into(),
            value: 0.0,
            status: Status::Prior(held.into()),
        },
    ]
}
