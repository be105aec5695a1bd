//! The raw request records (`REPORT.requests.jsonl`) read as plain JSON, without
//! goodput's record types, and reduced with formulas written for the tests, so a
//! report can be checked against truths goodput did not compute.

use std::path::Path;

/// One request as the JSONL file has it, read without goodput's record types.
#[derive(Debug, serde::Deserialize)]
pub struct Raw {
    pub engine: String,
    pub x: f64,
    pub trial: u32,
    pub scheduled: u64,
    pub sent: u64,
    pub done: Option<u64>,
    /// Arrival time of each content chunk, ns.
    #[serde(deserialize_with = "chunk_times")]
    pub chunks: Vec<u64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub error: Option<serde_json::Value>,
}

fn chunk_times<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    let v: Vec<serde_json::Value> = serde::Deserialize::deserialize(d)?;
    Ok(v.iter()
        .map(|c| c["t"].as_u64().expect("chunk t"))
        .collect())
}

pub fn raw_records(path: &Path) -> Vec<Raw> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// One trial's medians and throughput, computed here from the raw times: TTFT from
/// the send to the first chunk, E2EL to the last, TPOT over the `tokens` asked
/// for, ITL over every gap between chunks; throughput is tokens over first send
/// to last end.
#[derive(Debug, Clone, Copy)]
pub struct Truth {
    pub ttft: f64,
    pub tpot: f64,
    pub itl: f64,
    pub e2el: f64,
    pub throughput: f64,
}

pub fn truth(trial: &[&Raw], tokens: u64) -> Truth {
    let ms = |ns: u64| ns as f64 / 1e6;
    let ttft: Vec<f64> = trial.iter().map(|r| ms(r.chunks[0] - r.sent)).collect();
    let e2el: Vec<f64> = trial
        .iter()
        .map(|r| ms(r.chunks.last().unwrap() - r.sent))
        .collect();
    let tpot: Vec<f64> = ttft
        .iter()
        .zip(&e2el)
        .map(|(a, b)| (b - a) / (tokens - 1) as f64)
        .collect();
    let itl: Vec<f64> = trial
        .iter()
        .flat_map(|r| r.chunks.windows(2).map(|w| ms(w[1] - w[0])))
        .collect();
    let first = trial.iter().map(|r| r.sent).min().unwrap();
    let last = trial.iter().map(|r| r.done.unwrap()).max().unwrap();
    Truth {
        ttft: median(ttft),
        tpot: median(tpot),
        itl: median(itl),
        e2el: median(e2el),
        throughput: (tokens * trial.len() as u64) as f64 / ((last - first) as f64 / 1e9),
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The report's per-trial spread (`min`, `max`) holds exactly the trial values
/// computed here.
pub fn same_trials(stat: &report::Stat, trials: &[Truth], f: fn(&Truth) -> f64, what: &str) {
    let mut want: Vec<f64> = trials.iter().map(f).collect();
    want.sort_by(f64::total_cmp);
    let got = [stat.min.unwrap(), stat.max.unwrap()];
    let want = [want[0], want[want.len() - 1]];
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
    assert!(
        close(got[0], want[0]) && close(got[1], want[1]),
        "{what}: report {got:?}, from the records {want:?}"
    );
    assert_eq!(stat.n as usize, trials.len(), "{what}");
}

/// Every point of every engine of `r` against the records: each trial has
/// `requests` records, and the report's per-trial TTFT, TPOT, ITL, E2EL and
/// throughput are those computed here from them; every request asked for `tokens`.
pub fn check_points_against_records(
    r: &report::Report,
    records: &[Raw],
    trials: u32,
    requests: usize,
    tokens: u64,
) {
    for (name, e) in &r.load {
        for p in &e.points {
            let trials: Vec<Truth> = (0..trials)
                .map(|t| {
                    let of_trial: Vec<&Raw> = records
                        .iter()
                        .filter(|r| r.engine == *name && r.x == p.x && r.trial == t)
                        .collect();
                    assert_eq!(of_trial.len(), requests, "{name} x={} trial {t}", p.x);
                    truth(&of_trial, tokens)
                })
                .collect();
            let at = format!("{name} x={}", p.x);
            same_trials(
                &p.median_ttft_ms,
                &trials,
                |t| t.ttft,
                &format!("{at} TTFT"),
            );
            same_trials(
                &p.median_tpot_ms,
                &trials,
                |t| t.tpot,
                &format!("{at} TPOT"),
            );
            same_trials(&p.median_itl_ms, &trials, |t| t.itl, &format!("{at} ITL"));
            same_trials(
                p.median_e2el_ms.as_ref().unwrap(),
                &trials,
                |t| t.e2el,
                &format!("{at} E2EL"),
            );
            same_trials(
                &p.output_throughput,
                &trials,
                |t| t.throughput,
                &format!("{at} throughput"),
            );
            assert_eq!(
                p.mean_output_tokens.as_ref().unwrap().median,
                Some(tokens as f64),
                "{at}"
            );
        }
    }
}
