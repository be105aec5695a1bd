//! LoRA adapters (`[workload.adapters]`): a trial's requests grouped by the adapter
//! their record names, then pooled over a point's trials into one block per
//! adapter (requests, good, attainment, goodput, and the median and p99 of every
//! bounded metric, read through the metric table), beside the pooled figures.
//! Whether an adapter's latency differs from the others' is judged in
//! [`super::adapter_judgement`].

use indexmap::IndexMap;
use report::{AdapterFigures, AdapterLatency, AdapterSummary, SloMetric, Stat};

use super::{request_metrics, TrialMetrics};
use crate::drive::record::RequestRecord;
use crate::stats::median_p99;

/// One adapter's requests in one trial.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdapterValues {
    /// Requests sent naming it.
    pub sent: u64,
    /// Of them, successful.
    pub completed: u64,
    /// Of them, good.
    pub good: u64,
    /// Per bounded metric (in [`SloMetric::ALL`]'s order), the successful
    /// requests' values, ms ([`super::RequestMetrics::value`]: a request without a
    /// value of the metric adds none).
    pub values: [Vec<f64>; SloMetric::COUNT],
}

/// A trial's requests by adapter, in the order the adapters first appear.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialAdapters {
    /// Per adapter name.
    pub by_adapter: IndexMap<String, AdapterValues>,
    /// The metrics the judgement compares: the SLO's bounded ones, and TTFT and
    /// TPOT always, in the table's order.
    pub judged: Vec<SloMetric>,
}

/// A trial's requests by adapter; `None` when no record names one (the run drew
/// no adapters).
pub fn trial_adapters(records: &[RequestRecord], slo: &report::Slo) -> Option<TrialAdapters> {
    let mut t = TrialAdapters {
        judged: SloMetric::ALL
            .into_iter()
            .filter(|m| matches!(m, SloMetric::Ttft | SloMetric::Tpot) || slo.bound(*m).is_some())
            .collect(),
        ..TrialAdapters::default()
    };
    for r in records {
        let Some(name) = &r.adapter else { continue };
        let v = t.by_adapter.entry(name.clone()).or_default();
        v.sent += 1;
        if let Some(rm) = request_metrics(r, slo) {
            v.completed += 1;
            v.good += u64::from(rm.good);
            for m in SloMetric::ALL {
                // A one-token request has no TPOT to compare (the SLO reads it as 0);
                // a stream without reasoning has its TTFT for TTFAT, shown once.
                let value = match m {
                    SloMetric::Tpot => rm.tpot_ms,
                    SloMetric::Ttfat if !rm.reasoning.streamed => None,
                    _ => rm.value(m),
                };
                v.values[m as usize].extend(value);
            }
        }
    }
    (!t.by_adapter.is_empty()).then_some(t)
}

/// A point's adapters, its trials pooled, with the judgement of each adapter's
/// latency against the others'; `None` when no trial drew adapters.
pub fn adapter_summary(trials: &[TrialMetrics]) -> Option<AdapterSummary> {
    let with: Vec<(&TrialMetrics, &TrialAdapters)> = trials
        .iter()
        .filter_map(|t| t.adapters.as_ref().map(|a| (t, a)))
        .collect();
    let first = with.first()?.1;
    let mut names: Vec<&str> = Vec::new();
    for (_, a) in &with {
        for n in a.by_adapter.keys() {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
    }
    let total_sent: u64 = with
        .iter()
        .flat_map(|(_, a)| a.by_adapter.values().map(|v| v.sent))
        .sum();
    let mut pooled: Vec<(String, [Vec<f64>; SloMetric::COUNT])> = Vec::new();
    let mut adapters = Vec::new();
    for name in names {
        let per_trial: Vec<(&TrialMetrics, Option<&AdapterValues>)> = with
            .iter()
            .map(|(t, a)| (*t, a.by_adapter.get(name)))
            .collect();
        let sum = |f: fn(&AdapterValues) -> u64| -> u64 {
            per_trial.iter().filter_map(|(_, v)| v.map(f)).sum()
        };
        let (sent, completed, good) = (sum(|v| v.sent), sum(|v| v.completed), sum(|v| v.good));
        let mut values: [Vec<f64>; SloMetric::COUNT] = Default::default();
        for (_, v) in &per_trial {
            for (all, these) in values
                .iter_mut()
                .zip(v.iter().flat_map(|v| v.values.iter()))
            {
                all.extend(these);
            }
        }
        let mut latency = IndexMap::new();
        for m in SloMetric::ALL {
            let mut v = values[m as usize].clone();
            if v.is_empty() {
                continue;
            }
            let n = v.len() as u64;
            let (median_ms, p99_ms) = median_p99(&mut v);
            latency.insert(
                m.key().to_string(),
                AdapterLatency {
                    n,
                    median_ms,
                    p99_ms,
                },
            );
        }
        adapters.push(AdapterFigures {
            name: name.to_string(),
            sent: per_trial
                .iter()
                .map(|(_, v)| v.map_or(0, |v| v.sent))
                .collect(),
            completed,
            failed: sent - completed,
            good,
            share: if total_sent > 0 {
                sent as f64 / total_sent as f64
            } else {
                0.0
            },
            attainment: (sent > 0).then(|| good as f64 / sent as f64),
            goodput_rps: Stat::from_trials(per_trial.iter().map(|(t, v)| {
                let good = v.map_or(0, |v| v.good);
                t.duration_s.map(|d| good as f64 / d)
            })),
            latency,
        });
        pooled.push((name.to_string(), values));
    }
    Some(AdapterSummary {
        judgements: super::adapter_judgement::judge(&pooled, &first.judged),
        adapters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::record::Chunk;

    /// A successful request of `adapter` with TTFT `ttft` ms and 4 tokens a ms apart.
    pub(crate) fn rec(index: u32, adapter: &str, ttft: u64) -> RequestRecord {
        let mut r = RequestRecord::new("e", 1.0, 0, index, 0);
        r.adapter = Some(adapter.into());
        r.done = Some((ttft + 4) * 1_000_000);
        r.chunks = (0..4)
            .map(|k| Chunk {
                t: (ttft + k) * 1_000_000,
                len: 4,
                reasoning: 0,
                lag: None,
                bound: None,
            })
            .collect();
        r.completion_tokens = Some(4);
        r
    }

    #[test]
    fn requests_are_counted_and_summarised_per_adapter() {
        let slo = report::Slo::bounded([(SloMetric::Ttft, 100.0)]);
        let mut records: Vec<RequestRecord> = (0..30)
            .map(|i| rec(i, if i % 3 == 0 { "b" } else { "a" }, 40 + u64::from(i % 5)))
            .collect();
        records[1].error = Some(crate::drive::record::ErrorKind::Http);
        let t = super::super::trial_metrics(&records, &slo);
        let s = adapter_summary(std::slice::from_ref(&t)).unwrap();
        let names: Vec<&str> = s.adapters.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["b", "a"], "in the order first sent");
        let a = &s.adapters[1];
        assert_eq!((a.sent.clone(), a.completed, a.failed), (vec![20], 19, 1));
        assert_eq!(a.good, 19);
        assert!((a.share - 20.0 / 30.0).abs() < 1e-12);
        assert_eq!(a.attainment, Some(19.0 / 20.0));
        let ttft = &a.latency["ttft"];
        assert_eq!(ttft.n, 19);
        assert!(ttft.median_ms.is_some() && a.latency.contains_key("tpot"));
        assert!(a.goodput_rps.median.is_some());
        // Without adapters there is no block.
        let mut plain = records.clone();
        plain.iter_mut().for_each(|r| r.adapter = None);
        let t = super::super::trial_metrics(&plain, &slo);
        assert!(adapter_summary(&[t]).is_none());
    }
}
