//! Comparisons on the simulator's engine model in virtual time: the calibration
//! benchmark's and the tests' A/A and known-effect tables. The same prompts, the
//! same runner (`predict`'s), and per side its own seed for the engine's noise.

use goodput_sim::config::JitterConfig;
use goodput_sim::SimConfig;

use crate::define::plan::Plan;
use crate::define::profile::{Overrides, Profile};
use crate::judge::compare::{compare, Comparison, Input, Options};

/// The calibration's profile: a closed loop at 1, 2, 4 and 8 (seven metrics a
/// level: a 28-row table), `trials` trials of `requests` requests.
pub fn calibration_plan(trials: u32, requests: u32) -> Result<Plan, String> {
    let text = format!(
        "name = \"calibration\"\n[slo]\nttft_ms = 1000\ntpot_ms = 55\n\
         [load]\nmode = \"concurrency\"\npoints = [1, 2, 4, 8]\nrequests_per_trial = {requests}\n\
         trials = {trials}\nwarmup_requests = 0\nseed = 1\n\
         [workload]\ninput_tokens = 512\noutput_tokens = 64\n\
         [engines.sim]\nkind = \"sim\"\npreset = \"vllm-fast-b\"\n"
    );
    Profile::parse(&text, "calibration")
        .and_then(|p| p.into_plan("calibration", &Overrides::default()))
        .map_err(|e| e.to_string())
}

/// The vllm-fast-b preset, unthrottled, with seeded noise (5% a step, 10% a
/// request), seed `seed`, and every decode cost (the fixed step cost, per
/// sequence, per KV token) times `slower`.
pub fn noisy_engine(seed: u64, slower: f64) -> SimConfig {
    let mut c = goodput_sim::preset("vllm-fast-b").unwrap_or_default();
    c.thermal = None;
    c.jitter = Some(JitterConfig {
        step: 0.05,
        request: 0.1,
    });
    c.seed = seed;
    c.step_fixed_ms *= slower;
    c.per_decode_seq_ms *= slower;
    c.per_kv_token_ms *= slower;
    c
}

/// One side: `plan` on `config` in virtual time, as a report with its records.
pub fn side(plan: &Plan, config: &SimConfig, label: &str) -> Input {
    let (sweep, records) = crate::model::predict::predict_sweep(plan, config);
    Input::with_records(label, sweep.report(plan), &records)
}

/// The comparison of `cand` against `base` on `plan`.
pub fn ab(plan: &Plan, base: &SimConfig, cand: &SimConfig, opts: &Options) -> Comparison {
    compare(
        &[side(plan, base, "a.json"), side(plan, cand, "b.json")],
        opts,
    )
}
