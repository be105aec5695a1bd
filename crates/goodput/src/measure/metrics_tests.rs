//! Unit tests of every metric formula on hand-built records.

use super::*;
use crate::drive::record::{Chunk, ErrorKind, RequestRecord};
use report::Outlier;

const MS: u64 = 1_000_000;

fn slo(ttft: f64, tpot: f64) -> report::Slo {
    report::Slo::bounded([
        (report::SloMetric::Ttft, ttft),
        (report::SloMetric::Tpot, tpot),
    ])
}

/// A request sent at `sent_ms` whose chunks arrive at `chunk_ms`, with `tokens` output tokens.
fn rec(index: u32, sent_ms: u64, chunk_ms: &[u64], tokens: Option<u64>) -> RequestRecord {
    let mut r = RequestRecord::new("e", 1.0, 0, index, sent_ms * MS);
    r.chunks = chunk_ms
        .iter()
        .map(|&t| Chunk {
            t: t * MS,
            len: 5,
            reasoning: 0,
            lag: None,
            bound: None,
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
    assert_eq!(m.ttft_ms, Some(50.0));
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
    s.bounds.set(report::SloMetric::E2el, Some(199.0));
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

#[test]
fn achieved_concurrency_is_the_mean_in_flight_over_the_trial() {
    // sent 0 done 1001 ms, sent 500 done 2001 ms: 2.502 s in flight over 2.001 s
    let a = rec(0, 0, &[100, 1000], Some(10));
    let b = rec(1, 500, &[700, 2000], Some(30));
    let t = trial_metrics(&[a, b], &slo(1000.0, 100.0));
    assert!((t.achieved_concurrency.unwrap() - 2.502 / 2.001).abs() < 1e-12);
}

#[test]
fn two_requests_never_make_four_in_flight() {
    // x=4 with 2 requests: both sent at 0, done at 100 and 200 ms
    let a = rec(0, 0, &[99], Some(1));
    let b = rec(1, 0, &[199], Some(1));
    let t = trial_metrics(&[a, b], &slo(1000.0, 100.0));
    // 0.3 s in flight over 0.2 s
    assert!((t.achieved_concurrency.unwrap() - 1.5).abs() < 1e-12);
    let p = point_summary(4.0, &[t.clone(), t], &[0.5], false);
    let c = p.achieved_concurrency.expect("achieved concurrency");
    assert_eq!(c.n, 2);
    assert!(c.max.unwrap() <= 2.0);
}

#[test]
fn scheduled_rate_is_the_schedule_s_own_rate_not_the_nominal_one() {
    // a draw at a nominal 20 req/s whose arrivals landed 100 ms apart (10 req/s),
    // each sent 0.15 ms late: the client kept up with its schedule
    let recs: Vec<RequestRecord> = (0..5u32)
        .map(|i| {
            let mut r = rec(i, u64::from(i) * 100, &[u64::from(i) * 100 + 20], Some(1));
            r.sent = r.scheduled + 150_000;
            r
        })
        .collect();
    let t = trial_metrics(&recs, &slo(1000.0, 100.0));
    assert!((t.scheduled_rate.unwrap() - 10.0).abs() < 1e-9);
    assert!((t.achieved_rate.unwrap() - 10.0).abs() < 1e-9);
    let rate = point_summary(20.0, std::slice::from_ref(&t), &[0.5], true);
    assert_eq!(rate.offered_rate, Some(20.0));
    assert!((rate.scheduled_rate.unwrap().median.unwrap() - 10.0).abs() < 1e-9);
    assert!(point_summary(20.0, &[t], &[0.5], false)
        .scheduled_rate
        .is_none());
}

#[test]
fn first_error_is_the_first_sent_failure_with_its_detail_and_bounded() {
    let mut late = rec(1, 50, &[], Some(0));
    late.error = Some(ErrorKind::Stall);
    let mut early = rec(2, 10, &[], Some(0));
    early.error = Some(ErrorKind::Http);
    early.status = Some(500);
    early.error_detail = Some(format!("Internal Server Error {}", "x".repeat(500)));
    let ok = rec(0, 0, &[40, 60], Some(2));
    let t = trial_metrics(&[ok, late, early], &slo(1000.0, 100.0));
    let e = t.first_error.clone().expect("first error");
    assert!(e.starts_with("http_500: Internal Server Error x"), "{e}");
    assert_eq!(e.chars().count(), FIRST_ERROR_MAX_CHARS);
    let clean = trial_metrics(&[rec(0, 0, &[40], Some(1))], &slo(1000.0, 100.0));
    assert_eq!(clean.first_error, None);
    let p = point_summary(1.0, &[clean, t], &[0.5], false);
    assert!(p.first_error.unwrap().starts_with("http_500"));
}

/// 20 requests with TTFT `base`, `base + 1` or `base + 2` ms, sent 100 ms apart;
/// the first's TTFT is `first`.
fn warm_trial(trial: u32, first: u64, base: u64) -> TrialMetrics {
    let recs: Vec<RequestRecord> = (0..20u32)
        .map(|i| {
            let sent = u64::from(i) * 100;
            let ttft = if i == 0 {
                first
            } else {
                base + u64::from(i % 3)
            };
            let mut r = rec(i, sent, &[sent + ttft, sent + ttft + 10], Some(2));
            r.trial = trial;
            r
        })
        .collect();
    trial_metrics(&recs, &slo(10_000.0, 100.0))
}

#[test]
fn a_compiling_first_request_is_an_outlier_named_by_trial_and_index() {
    let o = outliers(&[warm_trial(0, 1191, 15), warm_trial(1, 16, 15)]);
    let ttft: Vec<&Outlier> = o
        .iter()
        .filter(|o| o.metric == report::OutlierMetric::Ttft)
        .collect();
    assert_eq!(ttft.len(), 1, "{o:#?}");
    assert_eq!((ttft[0].trial, ttft[0].index), (0, 0));
    assert_eq!(ttft[0].value_ms, 1191.0);
    assert!(ttft[0].score.unwrap() > OUTLIER_SCORE);
    assert!(o
        .iter()
        .any(|o| o.metric == report::OutlierMetric::E2el && o.index == 0));
    let p = point_summary(1.0, &[warm_trial(0, 1191, 15)], &[0.5], false);
    assert!(!p.outliers.expect("checked").is_empty());
}

#[test]
fn an_ordinary_spread_has_no_outliers() {
    assert!(outliers(&[warm_trial(0, 16, 15), warm_trial(1, 15, 15)]).is_empty());
    // 150 ms against 100-102 ms is far out of that tight spread (score 33) but not
    // twice the median: not an outlier
    assert!(outliers(&[warm_trial(0, 150, 100)]).is_empty());
    let p = point_summary(1.0, &[warm_trial(0, 16, 15)], &[0.5], false);
    assert_eq!(p.outliers, Some(vec![]));
}

#[test]
fn with_most_requests_alike_a_far_request_is_still_an_outlier() {
    // MAD 0 (more than half the values equal): far out, as hyperfine's infinite score
    let recs: Vec<RequestRecord> = (0..10u32)
        .map(|i| rec(i, 0, &[if i == 3 { 50 } else { 20 }], Some(1)))
        .collect();
    let o = outliers(&[trial_metrics(&recs, &slo(10_000.0, 100.0))]);
    assert_eq!(o.len(), 2, "{o:#?}"); // its TTFT and its E2EL
    assert!(o.iter().all(|o| o.index == 3 && o.score.is_none()));
}

#[test]
fn one_request_ten_times_the_median_is_an_outlier_whatever_the_spread() {
    // TTFTs spread 10..98 ms (median 59.5, MAD 27.5) and one at 620 ms: its score,
    // 13.75, is below 14, but it is 10.4 times the median
    let recs: Vec<RequestRecord> = (0..10u32)
        .map(|i| {
            let ttft = if i == 9 { 620 } else { 10 + u64::from(i) * 11 };
            rec(i, 0, &[ttft], Some(1))
        })
        .collect();
    let t = trial_metrics(&recs, &slo(10_000.0, 100.0));
    let o = outliers(&[t]);
    assert!(
        o.iter()
            .any(|o| o.metric == report::OutlierMetric::Ttft && o.index == 9),
        "{o:#?}"
    );
}

#[test]
fn percentile_form_judges_the_pth_percentile_with_failures_as_slowest() {
    // Ten requests, TTFT 10, 20, ..., 100 ms (one token each), bound 85 ms.
    let records: Vec<RequestRecord> = (0..10u32)
        .map(|i| rec(i, 0, &[10 * (u64::from(i) + 1)], Some(1)))
        .collect();
    let mut s = slo(85.0, 1000.0);
    s.percentile = Some(80.0);
    let t = trial_slo(&records, &s);
    let (_, check) = point_slo(std::slice::from_ref(&t), &s);
    assert_eq!(check.form, report::SloForm::Percentile);
    // Nearest rank: p80 of 10 values is the 8th, 80 ms <= 85 ms.
    assert_eq!(check.percentiles_ms["ttft"], Some(80.0));
    assert!(check.meets);
    // The attainment form on the same requests: 8 of 10 good is below 0.9.
    s.percentile = None;
    let (_, check) = point_slo(std::slice::from_ref(&trial_slo(&records, &s)), &s);
    assert_eq!(check.form, report::SloForm::Attainment);
    assert_eq!(check.attainment, Some(0.8));
    assert!(!check.meets);
    // p90 is the 9th value, 90 ms: over the bound.
    s.percentile = Some(90.0);
    let (_, check) = point_slo(std::slice::from_ref(&trial_slo(&records, &s)), &s);
    assert_eq!(check.percentiles_ms["ttft"], Some(90.0));
    assert!(!check.meets);
    // Failed requests count as the slowest: two failures push p80 to the 10th of
    // 12 ranks, the last successful one (100 ms).
    let mut with_failures = records.clone();
    for i in 10..12u32 {
        let mut r = rec(i, 0, &[], Some(0));
        r.error = Some(ErrorKind::Http);
        r.status = Some(500);
        with_failures.push(r);
    }
    s.percentile = Some(80.0);
    let t = trial_slo(&with_failures, &s);
    let (_, check) = point_slo(std::slice::from_ref(&t), &s);
    assert_eq!(check.percentiles_ms["ttft"], Some(100.0));
    assert!(!check.meets);
}

#[test]
fn the_point_carries_its_judgement_and_what_decided_it() {
    use report::Judgement;
    // Ten requests, TTFT 10..100 ms, bound 85 ms: 8 of 10 good against 0.9.
    let records: Vec<RequestRecord> = (0..10u32)
        .map(|i| rec(i, 0, &[10 * (u64::from(i) + 1)], Some(1)))
        .collect();
    let s = slo(85.0, 1000.0);
    let (_, check) = point_slo(std::slice::from_ref(&trial_slo(&records, &s)), &s);
    // 0.8 with a Wilson interval of about (0.49, 0.94): it straddles 0.9.
    assert_eq!(check.judgement, Some(Judgement::Undecided));
    assert_eq!(check.decided_by, Some(1));
    assert!(!check.meets);
    // Everything good, but ten requests cannot show 90% with confidence.
    let loose = slo(1000.0, 1000.0);
    let (_, check) = point_slo(std::slice::from_ref(&trial_slo(&records, &loose)), &loose);
    assert!(check.meets);
    assert_eq!(check.judgement, Some(Judgement::Undecided));
    // Nothing good: fails, whatever the count.
    let tight = slo(5.0, 1000.0);
    let (_, check) = point_slo(std::slice::from_ref(&trial_slo(&records, &tight)), &tight);
    assert_eq!(check.judgement, Some(Judgement::Fails));
}
