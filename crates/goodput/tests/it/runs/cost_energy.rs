//! Energy and cost per token end to end (issue #30's "done when"): two priced
//! simulated engines, every point with its joules per output token (the simulator's
//! GPU power over the throughput) and its dollars per million tokens (exactly the
//! price over the throughput), and the verdict naming the cheapest configuration
//! that serves the SLO. The simulator's GPU model stands in for a GPU here: no
//! test can read a real one.

use crate::common;

use common::cli::{contains, goodput, Scratch};

const PRICED: &str = r#"
name = "priced-sims"
[slo]
ttft_ms = 500
tpot_ms = 50
[load]
points = [1, 3]
requests_per_trial = 12
trials = 3
warmup_requests = 1
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 16
[telemetry]
source = "sim"
interval_ms = 50
[engines.dear]
kind = "sim"
preset = "default"
usd_per_hour = 4.0
[engines.cheap]
kind = "sim"
preset = "default"
usd_per_hour = 1.0
"#;

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

#[test]
fn two_priced_simulators_give_energy_and_cost_at_every_point() {
    let dir = Scratch::new();
    // The flag prices `dear` below `cheap`: it wins over the profile.
    dir.run(PRICED, &["--quiet", "--usd-per-hour", "dear=0.5"])
        .assert()
        .success();
    let r = dir.report();
    for (engine, price) in [("dear", 0.5), ("cheap", 1.0)] {
        for p in &r.load[engine].points {
            let at = format!("{engine} x={}", p.x);
            let e = p
                .energy
                .as_ref()
                .unwrap_or_else(|| panic!("{at}: no energy"));
            assert_eq!(
                (e.source.as_str(), e.method.as_str()),
                ("sim", "power-integral")
            );
            assert_eq!(
                (e.joules_per_output_token.n, e.note.as_ref()),
                (3, None),
                "{at}"
            );
            // Per trial J/token = mean power / output throughput, so the median lies
            // between the extreme ratios and near the ratio of the medians.
            let jpt = e.joules_per_output_token.median.unwrap();
            let (w, thr) = (&e.mean_power_w, &p.output_throughput);
            assert!(
                jpt >= w.min.unwrap() / thr.max.unwrap() * (1.0 - 1e-9),
                "{at}"
            );
            assert!(
                jpt <= w.max.unwrap() / thr.min.unwrap() * (1.0 + 1e-9),
                "{at}"
            );
            assert!(
                close(jpt, w.median.unwrap() / thr.median.unwrap(), 0.25),
                "{at}: {jpt}"
            );
            assert!(e.joules_per_request.median.unwrap() > jpt, "{at}");
            // Dollars: exactly the price over the throughput (3 trials: the median
            // trial's cost is the median throughput's; min and max swap).
            let c = p.cost.as_ref().unwrap_or_else(|| panic!("{at}: no cost"));
            assert_eq!(c.usd_per_hour, price);
            let usd = |t: Option<f64>| price / 3600.0 / t.unwrap() * 1e6;
            let out = &c.usd_per_million_output_tokens;
            assert!(close(out.median.unwrap(), usd(thr.median), 1e-12), "{at}");
            assert!(close(out.min.unwrap(), usd(thr.max), 1e-12), "{at}");
            assert!(close(out.max.unwrap(), usd(thr.min), 1e-12), "{at}");
            assert!(c.usd_per_million_good_tokens.median.unwrap() >= out.min.unwrap());
        }
        for t in r.load[engine].points.iter().flat_map(|p| &p.trials) {
            let e = t.energy.as_ref().expect("each trial keeps its energy");
            assert!(e.mean_power_w > 0.0 && e.span_s > 0.0 && e.gpus.len() == 1);
        }
    }
    let shown = goodput()
        .args(["show", &dir.arg("r.json")])
        .assert()
        .success()
        .stdout(contains("Cheapest serving the SLO: dear, $"))
        .stdout(contains("(cheap: $"))
        .stdout(contains("Energy and cost (medians over trials):"));
    drop(shown);
    goodput()
        .args(["compare", &dir.arg("r.json")])
        .assert()
        .success()
        .stdout(contains("J/output token"))
        .stdout(contains("$/M good tokens"));
    let html = std::fs::read_to_string(dir.path("r.html")).expect("the page");
    assert!(html.contains("Cost per million good tokens vs load"));
    assert!(html.contains("Energy per output token vs load"));
}

#[test]
fn a_price_for_an_engine_not_running_is_refused() {
    let dir = Scratch::new();
    dir.run(PRICED, &["--quiet", "--usd-per-hour", "nope=1"])
        .assert()
        .code(2)
        .stderr(contains("no engine named `nope` to price"));
}

/// The reference report with each engine priced, meeting the SLO at x=1 only.
fn priced_reference(prices: &[(&str, f64)]) -> goodput::report::Report {
    let text = include_str!("../../../../../tests/data/l4-gpu1-vllm.json");
    let mut r = goodput::report::io::parse_report(text).unwrap();
    for (engine, usd) in prices {
        for p in &mut r.load.get_mut(*engine).unwrap().points {
            // The percentile form with no stored judgement is read off `meets`.
            p.slo_check = Some(goodput::report::SloCheck {
                form: goodput::report::SloForm::Percentile,
                meets: p.x == 1.0,
                ..Default::default()
            });
            let stat = |v: f64| goodput::report::Stat {
                median: Some(v),
                min: Some(v),
                max: Some(v),
                n: 1,
            };
            p.cost = Some(goodput::report::CostSummary {
                usd_per_hour: 1.0,
                usd_per_million_good_tokens: stat(usd * p.x),
                ..Default::default()
            });
        }
    }
    r
}

#[test]
fn the_verdict_names_the_cheapest_engine_at_its_capacity() {
    use goodput::render::verdict::verdict;
    let r = priced_reference(&[("vllm-fast-b", 0.42), ("vllm-no-async", 0.61)]);
    let v = verdict(&r).join(" ");
    assert!(
        v.contains("Cheapest serving the SLO: vllm-fast-b, $0.42 per million good tokens at its capacity of 1 concurrent request (vllm-no-async: $0.61 at 1)."),
        "{v}"
    );
    // Unpriced engines (vllm-ngram) are left out; without prices, no sentence.
    assert!(!v.contains("vllm-ngram: $"), "{v}");
    assert!(!verdict(&priced_reference(&[]))
        .join(" ")
        .contains("Cheapest"));
}
