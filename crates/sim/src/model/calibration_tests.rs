//! The `vllm-*` presets against the reference report
//! (`shared/reference/l4-gpu1-vllm.json`): 16 requests, 128 output tokens,
//! concurrency 1 and 4, 2 trials; medians within 25%.

use super::*;
use crate::config::preset;

/// Prompt length that reproduces the reference (see `config::presets`).
const INPUT_TOKENS: u32 = 576;
const OUTPUT_TOKENS: u32 = 128;
const REQUESTS: u32 = 16;
const TRIALS: u64 = 2;

/// Reference medians: (engine, x, median TTFT ms, median TPOT ms, median ITL ms, output tok/s).
const REFERENCE: &[(&str, u32, f64, f64, f64, f64)] = &[
    ("vllm-fast-b", 1, 1437.17, 241.7, 241.0, 3.98),
    ("vllm-fast-b", 4, 4944.93, 272.6, 271.87, 13.02),
    ("vllm-ngram", 1, 1428.05, 76.58, 265.39, 7.39),
    ("vllm-ngram", 4, 1924.53, 101.25, 283.7, 19.22),
    ("vllm-no-async", 1, 1466.72, 249.58, 249.77, 3.87),
    ("vllm-no-async", 4, 4690.01, 277.22, 276.84, 12.85),
];

/// Median over trials of each trial's summary (as the reference aggregates).
pub(crate) fn simulate_point(name: &str, x: u32) -> PointSummary {
    let base = preset(name).expect("preset exists");
    let trials: Vec<PointSummary> = (0..TRIALS)
        .map(|trial| {
            let config = SimConfig {
                seed: base.seed + trial,
                ..base.clone()
            };
            summarize(&simulate_closed_loop(
                &config,
                x,
                REQUESTS,
                INPUT_TOKENS,
                OUTPUT_TOKENS,
            ))
        })
        .collect();
    let pick = |f: fn(&PointSummary) -> f64| {
        let mut v: Vec<f64> = trials.iter().map(f).collect();
        median(&mut v)
    };
    PointSummary {
        median_ttft_ms: pick(|s| s.median_ttft_ms),
        median_tpot_ms: pick(|s| s.median_tpot_ms),
        median_itl_ms: pick(|s| s.median_itl_ms),
        output_throughput: pick(|s| s.output_throughput),
    }
}

fn within(sim: f64, reference: f64, tolerance: f64) -> bool {
    ((sim - reference) / reference).abs() <= tolerance
}

#[test]
fn presets_match_reference_within_25_percent() {
    let mut failures = Vec::new();
    println!("| preset | x | TTFT ref | TTFT sim | TPOT ref | TPOT sim | ITL ref | ITL sim | tok/s ref | tok/s sim |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &(name, x, ttft, tpot, itl, thr) in REFERENCE {
        let s = simulate_point(name, x);
        println!(
            "| {name} | {x} | {ttft:.0} | {:.0} | {tpot:.1} | {:.1} | {itl:.1} | {:.1} | {thr:.2} | {:.2} |",
            s.median_ttft_ms, s.median_tpot_ms, s.median_itl_ms, s.output_throughput
        );
        for (what, sim, reference) in [
            ("median TTFT", s.median_ttft_ms, ttft),
            ("median TPOT", s.median_tpot_ms, tpot),
            ("output throughput", s.output_throughput, thr),
        ] {
            if !within(sim, reference, 0.25) {
                failures.push(format!(
                    "{name} x={x}: {what} {sim:.2} vs reference {reference:.2}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn first_request_of_a_trial_is_fast_because_the_card_is_cool() {
    for name in ["vllm-fast-b", "vllm-ngram", "vllm-no-async"] {
        let config = preset(name).expect("preset exists");
        let traces = simulate_closed_loop(&config, 1, 4, INPUT_TOKENS, OUTPUT_TOKENS);
        let first = traces[0].ttft() * 1e3;
        let second = traces[1].ttft() * 1e3;
        assert!(
            (200.0..400.0).contains(&first),
            "{name}: first TTFT {first}"
        );
        assert!(second > 4.0 * first, "{name}: second TTFT {second}");
    }
}

#[test]
fn ngram_streams_several_tokens_per_chunk() {
    let s = simulate_point("vllm-ngram", 1);
    assert!(
        s.median_itl_ms > 2.5 * s.median_tpot_ms,
        "ITL {} vs TPOT {}",
        s.median_itl_ms,
        s.median_tpot_ms
    );
    let fast = simulate_point("vllm-fast-b", 1);
    assert!((fast.median_itl_ms - fast.median_tpot_ms).abs() < 0.05 * fast.median_tpot_ms);
}

/// Run `n` requests of `input` prompt tokens started together to completion;
/// report (most running at once, preemptions).
fn run_batch(input: u32, n: u64) -> (usize, u64) {
    let config = preset("vllm-fast-b").expect("preset exists");
    let mut engine = Engine::new(&config);
    for id in 0..n {
        engine.add_request(
            id,
            RequestSpec {
                prompt_tokens: input,
                output_tokens: OUTPUT_TOKENS,
                endless: false,
                seed: id,
            },
        );
    }
    let (mut now, mut most) = (0.0, 0);
    while let Some(out) = engine.step(now) {
        now = out.end;
        most = most.max(engine.num_running());
    }
    (most, engine.counters().num_preemptions)
}

#[test]
fn the_2928_token_pool_bounds_concurrency() {
    // 576 + 128 tokens = 44 blocks: four whole requests fit the 183 blocks...
    assert_eq!(run_batch(INPUT_TOKENS, 4), (4, 0));
    // ...five prompts fit (5 x 36 blocks) but not five whole requests: preemption.
    let (most, preemptions) = run_batch(INPUT_TOKENS, 5);
    assert_eq!(most, 5);
    assert!(preemptions >= 1);
    // With 800-token prompts (50 blocks) only three are admitted; the fourth waits.
    assert_eq!(run_batch(800, 4), (3, 0));
}

#[test]
fn default_preset_is_a_fast_small_engine() {
    let config = preset("default").expect("preset exists");
    for input in [500, 1000] {
        let s = summarize(&simulate_closed_loop(&config, 1, 8, input, 64));
        assert!((20.0..=50.0).contains(&s.median_ttft_ms), "{s:?}");
        assert!((10.0..=20.0).contains(&s.median_itl_ms), "{s:?}");
    }
    let s = summarize(&simulate_closed_loop(&config, 64, 256, 1000, 256));
    assert!((10.0..=20.0).contains(&s.median_itl_ms), "{s:?}");
}
