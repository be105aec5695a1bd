//! The arithmetic of energy and cost per token, against figures computed by hand.

use super::*;

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-12 * b.abs().max(1.0))
}

/// A trial of `tokens` output tokens (`good` of them from good requests) from
/// `completed` requests over `duration_s`.
fn trial(duration_s: f64, tokens: u64, good: u64, completed: u64) -> TrialMetrics {
    TrialMetrics {
        duration_s: Some(duration_s),
        output_tokens: tokens,
        good_output_tokens: good,
        completed,
        output_throughput: Some(tokens as f64 / duration_s),
        ..TrialMetrics::default()
    }
}

fn energy(mean_power_w: f64) -> TrialEnergy {
    TrialEnergy {
        method: "nvml-counter".into(),
        source: "nvml".into(),
        span_s: 9.8,
        joules: mean_power_w * 9.8,
        mean_power_w,
        gpus: vec![report::GpuEnergy {
            index: 0,
            joules: mean_power_w * 9.8,
            mean_power_w,
        }],
        gpus_seen: 1,
    }
}

#[test]
fn energy_per_token_and_request_by_hand() {
    // Trial 1: 300 W for 10 s = 3000 J; 2000 tokens -> 1.5 J/token; 20 requests -> 150 J.
    // Trial 2: 250 W for 8 s = 2000 J; 2000 tokens -> 1.0 J/token; 20 requests -> 100 J.
    let (m1, m2) = (trial(10.0, 2000, 1500, 20), trial(8.0, 2000, 2000, 20));
    let (e1, e2) = (energy(300.0), energy(250.0));
    let s = point_energy(&[(&m1, &e1), (&m2, &e2)], None).unwrap();
    assert_eq!((s.joules.min, s.joules.max), (Some(2000.0), Some(3000.0)));
    assert_eq!(s.joules_per_output_token.median, Some(1.25));
    assert_eq!(
        (s.joules_per_output_token.min, s.joules_per_output_token.max),
        (Some(1.0), Some(1.5))
    );
    assert_eq!(s.joules_per_request.median, Some(125.0));
    assert_eq!(s.mean_power_w.median, Some(275.0));
    assert_eq!(
        (s.method.as_str(), s.source.as_str(), s.gpus),
        ("nvml-counter", "nvml", 1)
    );
    // J/token is mean power over output throughput: 300 W / 200 tok/s.
    assert!(close(
        trial_joules(&m1, &e1).map(|j| j / 2000.0),
        300.0 / 200.0
    ));
}

#[test]
fn cost_per_million_tokens_by_hand() {
    // $3.60/h = $0.001/s. Trial 1: 200 tok/s -> $5 per million; its good tokens at
    // 150 tok/s -> $6.667. Trial 2: 250 tok/s, all good -> $4.
    let trials = [trial(10.0, 2000, 1500, 20), trial(8.0, 2000, 2000, 20)];
    let c = point_cost(3.6, &[&trials[0], &trials[1]]).unwrap();
    assert_eq!(c.usd_per_hour, 3.6);
    let out = &c.usd_per_million_output_tokens;
    assert!(close(out.max, 5.0) && close(out.min, 4.0) && close(out.median, 4.5));
    let good = &c.usd_per_million_good_tokens;
    assert!(close(good.max, 1e6 / 150_000.0) && close(good.min, 4.0));
    assert!(close(c.good_output_throughput.min, 150.0));
    // Exactly price over throughput, trial by trial.
    assert_eq!(
        usd_per_million_tokens(3.6, 200.0),
        Some(3.6 / 3600.0 / 200.0 * 1e6)
    );
}

#[test]
fn no_division_by_zero_reaches_a_figure() {
    let idle = trial(10.0, 0, 0, 0);
    let c = point_cost(2.0, &[&idle]).unwrap();
    assert_eq!(c.usd_per_million_output_tokens.n, 0);
    assert_eq!(c.usd_per_million_good_tokens.n, 0);
    let s = point_energy(&[(&idle, &energy(100.0))], None).unwrap();
    assert_eq!(
        (s.joules_per_output_token.n, s.joules_per_request.n),
        (0, 0)
    );
    assert_eq!(s.joules.median, Some(1000.0));
    let unmeasured = TrialMetrics::default();
    assert_eq!(trial_joules(&unmeasured, &energy(100.0)), None);
    assert_eq!(usd_per_million_tokens(1.0, 0.0), None);
    assert_eq!(usd_per_million_tokens(f64::MAX, 1e-300), None);
    assert_eq!(point_cost(f64::NAN, &[&idle]), None);
    assert_eq!(point_cost(-1.0, &[&idle]), None);
    assert_eq!(point_cost(1.0, &[]), None);
    assert_eq!(point_energy(&[], None), None);
}

#[test]
fn the_note_says_when_gpus_are_unknown_or_left_out() {
    let mut e = energy(100.0);
    assert_eq!(energy_note(&[&e], true), None);
    let url = energy_note(&[&e], false).unwrap();
    assert!(url.contains("not started by goodput"), "{url}");
    e.gpus_seen = 8;
    let some = energy_note(&[&e], true).unwrap();
    assert!(some.starts_with("1 of 8 GPUs counted"), "{some}");
    e.source = "sim".into();
    assert_eq!(energy_note(&[&e], false), None);
}
