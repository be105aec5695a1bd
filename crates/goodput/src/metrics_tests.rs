//! Unit tests of every metric formula on hand-built records.

use super::*;
use crate::record::{Chunk, ErrorKind, RequestRecord};

const MS: u64 = 1_000_000;

fn slo(ttft: f64, tpot: f64) -> SloSpec {
    SloSpec {
        ttft_ms: Some(ttft),
        tpot_ms: Some(tpot),
        e2el_ms: None,
        ..Default::default()
    }
}

/// A request sent at `sent_ms` whose chunks arrive at `chunk_ms`, with `tokens` output tokens.
fn rec(index: u32, sent_ms: u64, chunk_ms: &[u64], tokens: Option<u64>) -> RequestRecord {
    let mut r = RequestRecord::new("e", 1.0, 0, index, sent_ms * MS);
    r.chunks = chunk_ms
        .iter()
        .map(|&t| Chunk {
            t: t * MS,
            len: 5,
            lag: None,
        })
        .collect();
    r.completion_tokens = tokens.or(Some(chunk_ms.len() as u64));
    r.tokens_estimated = tokens.is_none();
    r.done = chunk_ms.last().map(|t| (t + 1) * MS);
    r.prompt_tokens = Some(100);
    r
}

#[test]
fn ttft_e2el_tpot_of_one_request() {
    // sent at 10 ms, chunks at 60, 80, 100, 120 ms, 4 tokens
    let r = rec(0, 10, &[60, 80, 100, 120], Some(4));
    let m = request_metrics(&r, &slo(1000.0, 100.0)).unwrap();
    assert_eq!(m.ttft_ms, 50.0);
    assert_eq!(m.e2el_ms, 110.0);
    assert_eq!(m.tpot_ms, Some(20.0)); // (110 - 50) / 3
    assert!(m.good);
}

#[test]
fn tpot_counts_tokens_itl_counts_chunks() {
    // speculative decoding: 2 chunks carrying 9 tokens: 1 + 8
    let r = rec(0, 0, &[100, 340], Some(9));
    let m = request_metrics(&r, &slo(1000.0, 100.0)).unwrap();
    assert_eq!(m.tpot_ms, Some(30.0)); // 240 / 8
    let t = trial_metrics(&[r], &slo(1000.0, 100.0));
    assert_eq!(t.median_itl_ms, Some(240.0)); // one gap of one chunk
}

#[test]
fn one_token_request_has_no_tpot_and_counts_as_zero_for_the_slo() {
    let r = rec(0, 0, &[30], Some(1));
    let m = request_metrics(&r, &slo(50.0, 1.0)).unwrap();
    assert_eq!(m.tpot_ms, None);
    assert!(m.good);
}

#[test]
fn slo_bounds_are_inclusive_and_each_can_fail() {
    let r = rec(0, 0, &[100, 200], Some(2)); // ttft 100, tpot 100
    assert!(request_metrics(&r, &slo(100.0, 100.0)).unwrap().good);
    assert!(!request_metrics(&r, &slo(99.9, 100.0)).unwrap().good);
    assert!(!request_metrics(&r, &slo(100.0, 99.9)).unwrap().good);
    let mut s = slo(100.0, 100.0);
    s.e2el_ms = Some(199.0);
    assert!(!request_metrics(&r, &s).unwrap().good);
}

#[test]
fn failed_requests_have_no_metrics_and_are_counted_by_kind() {
    let mut bad = rec(1, 0, &[10], Some(1));
    bad.error = Some(ErrorKind::Http);
    bad.status = Some(429);
    bad.done = Some(5 * MS);
    let mut stall = rec(2, 0, &[10, 20], Some(2));
    stall.error = Some(ErrorKind::Stall);
    let ok = rec(0, 0, &[40, 60], Some(2));
    let t = trial_metrics(&[ok, bad, stall], &slo(1000.0, 100.0));
    assert_eq!((t.completed, t.failed, t.good), (1, 2, 1));
    assert_eq!(t.errors.get("http_429"), Some(&1));
    assert_eq!(t.errors.get("stall"), Some(&1));
    assert_eq!(t.ttfts_ms, vec![40.0]);
}

#[test]
fn trial_throughputs_use_first_send_to_last_completion() {
    // two requests: sent at 0 and 500 ms, done at 1001 ms and 2001 ms -> duration 2.001 s
    let a = rec(0, 0, &[100, 1000], Some(10));
    let b = rec(1, 500, &[700, 2000], Some(30));
    let t = trial_metrics(&[a, b], &slo(1000.0, 100.0));
    let d = 2.001;
    assert!((t.duration_s.unwrap() - d).abs() < 1e-12);
    assert!((t.output_throughput.unwrap() - 40.0 / d).abs() < 1e-9);
    assert!((t.request_throughput.unwrap() - 2.0 / d).abs() < 1e-9);
    // a: tpot = 900/9 = 100 (good); b: ttft 200, tpot = 1300/29 = 44.8 (good)
    assert!((t.goodput_rps.unwrap() - 2.0 / d).abs() < 1e-9);
    assert_eq!(t.mean_output_tokens, Some(20.0));
    assert_eq!(t.mean_input_tokens, Some(100.0));
}

#[test]
fn estimated_tokens_are_counted() {
    let r = rec(0, 0, &[10, 20, 30], None);
    let t = trial_metrics(&[r], &slo(1000.0, 100.0));
    assert_eq!(t.estimated, 1);
    assert_eq!(t.mean_output_tokens, Some(3.0));
}

#[test]
fn itl_is_pooled_over_requests_and_quantiles_are_linear() {
    let a = rec(0, 0, &[10, 20, 30], Some(3)); // gaps 10, 10
    let b = rec(1, 0, &[10, 50], Some(2)); // gap 40
    let t = trial_metrics(&[a, b], &slo(1000.0, 100.0));
    assert_eq!(t.median_itl_ms, Some(10.0));
    // numpy.percentile([10,10,40], 99) = 10 + 0.98*2 ... = 39.4
    assert!((t.p99_itl_ms.unwrap() - 39.4).abs() < 1e-9);
}

#[test]
fn send_lag_is_sent_minus_scheduled() {
    let mut a = rec(0, 0, &[10], Some(1));
    a.scheduled = 0;
    a.sent = 3 * MS;
    let t = trial_metrics(&[a], &slo(1000.0, 100.0));
    assert_eq!(t.p99_send_lag_ms, Some(3.0));
}

#[test]
fn point_pools_quantiles_with_the_lower_rule_from_the_same_values() {
    let slo = slo(1000.0, 100.0);
    let t0 = trial_metrics(
        &[rec(0, 0, &[10, 20], Some(2)), rec(1, 0, &[30, 60], Some(2))],
        &slo,
    );
    let t1 = trial_metrics(
        &[rec(0, 0, &[20, 22], Some(2)), rec(1, 0, &[40, 45], Some(2))],
        &slo,
    );
    let q = [0.0, 0.5, 1.0];
    let p = point_summary(4.0, &[t0, t1], &q, false);
    // ttfts pooled: 10, 20, 30, 40 -> lower rule: idx floor(q*3) = 0, 1, 3
    assert_eq!(p.ttft_quantiles_ms, vec![10.0, 20.0, 40.0]);
    // tpots pooled: 10, 30, 2, 5 -> sorted 2,5,10,30
    assert_eq!(p.tpot_quantiles_ms, vec![2.0, 5.0, 30.0]);
    // per-trial medians of TTFT: 20 and 30 -> median 25
    assert_eq!(p.median_ttft_ms.median, Some(25.0));
    assert_eq!(p.median_ttft_ms.n, 2);
    assert_eq!(p.completed, vec![2, 2]);
    assert_eq!(p.good, Some(vec![2, 2]));
    assert!(p.offered_rate.is_none());
}

#[test]
fn a_trial_where_everything_failed_produces_no_latency_values() {
    let mut r = rec(0, 0, &[], Some(0));
    r.error = Some(ErrorKind::Connect);
    r.done = Some(MS);
    let t = trial_metrics(&[r], &slo(1.0, 1.0));
    assert_eq!(t.completed, 0);
    assert_eq!(t.median_ttft_ms, None);
    assert_eq!(t.goodput_rps, Some(0.0));
    let p = point_summary(1.0, &[t], &[0.5], false);
    assert_eq!(p.median_ttft_ms.n, 0);
    assert!(p.ttft_quantiles_ms.is_empty());
}
