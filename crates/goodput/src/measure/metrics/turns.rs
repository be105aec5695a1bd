//! The per-turn summary of conversation workloads ("per turn" in the parent's
//! definitions): a trial's requests grouped by turn index, then pooled over a
//! point's trials.

use std::collections::{BTreeMap, BTreeSet};

use report::{ConversationSummary, TurnSummary};

use super::{request_metrics, TrialMetrics};
use crate::drive::record::RequestRecord;
use crate::stats::median_p99;

/// A conversation trial's per-request values by turn index (0-based, as records
/// keep it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialTurns {
    /// Sessions that sent a turn.
    pub sessions: u64,
    /// Sessions with a history cut to fit the context.
    pub cut_sessions: u64,
    /// Per turn index.
    pub by_turn: BTreeMap<u32, TurnValues>,
}

/// The values of one turn index's requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnValues {
    /// TTFTs of successful requests, ms.
    pub ttfts_ms: Vec<f64>,
    /// TPOTs of successful multi-token requests, ms.
    pub tpots_ms: Vec<f64>,
    /// Failed requests.
    pub failed: u64,
    /// Prompt tokens (from usage) summed, and how many requests reported them.
    pub prompt_tokens: (u64, u64),
}

/// A trial's requests by turn; `None` when no record has a turn (not a
/// conversation).
pub fn trial_turns(records: &[RequestRecord], slo: &report::Slo) -> Option<TrialTurns> {
    let mut t = TrialTurns::default();
    let (mut sessions, mut cut) = (BTreeSet::new(), BTreeSet::new());
    for r in records {
        let Some(turn) = r.turn else { continue };
        sessions.insert(r.session);
        if r.context_cut_turns.is_some_and(|c| c > 0) {
            cut.insert(r.session);
        }
        let v = t.by_turn.entry(turn).or_default();
        match request_metrics(r, slo) {
            Some(rm) => {
                v.ttfts_ms.extend(rm.ttft_ms);
                v.tpots_ms.extend(rm.tpot_ms);
                if let Some(p) = r.prompt_tokens {
                    v.prompt_tokens = (v.prompt_tokens.0.saturating_add(p), v.prompt_tokens.1 + 1);
                }
            }
            None => v.failed += 1,
        }
    }
    if sessions.is_empty() {
        return None;
    }
    (t.sessions, t.cut_sessions) = (sessions.len() as u64, cut.len() as u64);
    Some(t)
}

/// A point's per-turn table, its trials pooled; `None` when no trial has turns.
pub fn conversation_summary(trials: &[TrialMetrics]) -> Option<ConversationSummary> {
    let mut out = ConversationSummary::default();
    let mut pooled = BTreeMap::<u32, TurnValues>::new();
    let mut any = false;
    for t in trials.iter().filter_map(|t| t.turns.as_ref()) {
        any = true;
        out.sessions += t.sessions;
        out.cut_sessions += t.cut_sessions;
        for (turn, v) in &t.by_turn {
            let p = pooled.entry(*turn).or_default();
            p.ttfts_ms.extend(&v.ttfts_ms);
            p.tpots_ms.extend(&v.tpots_ms);
            p.failed += v.failed;
            p.prompt_tokens.0 = p.prompt_tokens.0.saturating_add(v.prompt_tokens.0);
            p.prompt_tokens.1 += v.prompt_tokens.1;
        }
    }
    for (turn, mut v) in pooled {
        let completed = v.ttfts_ms.len() as u64;
        let (median_ttft_ms, p99_ttft_ms) = median_p99(&mut v.ttfts_ms);
        let (median_tpot_ms, p99_tpot_ms) = median_p99(&mut v.tpots_ms);
        out.turns.push(TurnSummary {
            turn: turn + 1,
            completed,
            failed: v.failed,
            median_ttft_ms,
            p99_ttft_ms,
            median_tpot_ms,
            p99_tpot_ms,
            mean_input_tokens: (v.prompt_tokens.1 > 0)
                .then(|| v.prompt_tokens.0 as f64 / v.prompt_tokens.1 as f64),
        });
    }
    any.then_some(out)
}
