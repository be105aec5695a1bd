//! What ran and was seen (`render::ran`), and the predicted banner, on a peer's
//! result file read as a report.

use goodput::render;
use report::Report;
use serde_json::json;

fn peer_report() -> Report {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/peers/vllm/detailed.json");
    goodput::import::read(&path).expect("the vLLM fixture")
}

#[test]
fn measured_prefix_hits_and_acceptance_stand_beside_the_expected() {
    let mut r = peer_report();
    if let Some(run) = r.run.as_mut() {
        run.extra.clear();
        run.workload = json!({"kind": "prefix", "facts": {"expected_prefix_hit_share": 0.8}});
    }
    let p = &mut r.load[0].points[0];
    p.server = Some(report::ServerSummary {
        prefix_cache_hit_share: Some(0.5),
        ..Default::default()
    });
    p.spec_decode = Some(report::SpecDecode {
        draft_tokens: 10.0,
        accepted_tokens: 7.0,
        acceptance_rate: Some(0.7),
    });
    let seen = render::ran::seen_lines(&r);
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].1,
        "goodput-sim: prefix-cache hits 50% measured (the workload expects 80%); speculative acceptance 70% measured"
    );
}

#[test]
fn a_predicted_page_says_so_first() {
    let mut r = peer_report();
    let page = render::html(&r);
    assert!(!page.contains("PREDICTED"));
    if let Some(run) = r.run.as_mut() {
        run.predicted = Some(report::Predicted {
            engine_config: "fit.toml".into(),
            fitted_from: None,
            method: "model".into(),
        });
    }
    let page = render::html(&r);
    assert!(page.contains("PREDICTED, not measured."), "banner");
    assert!(page.find("PREDICTED") < page.find("id=\"charts\""));
}
