//! The report, profile and requests-file readers on hostile input: no panic, and an
//! error that says where. Many cases (proptest), in CI.

use proptest::prelude::*;

const REFERENCE: &str = include_str!("../../../../../tests/data/l4-gpu1-vllm.json");
const PROFILE: &str = include_str!("../../../src/cli/quick.toml");

fn mutate(base: &str, edits: &[(usize, u8)]) -> String {
    let mut b = base.as_bytes().to_vec();
    for &(pos, byte) in edits {
        let i = pos % b.len();
        b[i] = byte;
    }
    String::from_utf8_lossy(&b).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn report_reader_never_panics_on_mutated_reports(edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let text = mutate(REFERENCE, &edits);
        if let Ok(r) = report::io::parse_report(&text) {
            // Whatever parses also renders, in every format.
            for f in [goodput::render::Format::Table, goodput::render::Format::Markdown, goodput::render::Format::Csv, goodput::render::Format::Json] {
                let _ = goodput::render::show(&r, f, false);
            }
            let _ = goodput::render::html(&r);
        }
    }

    #[test]
    fn profile_reader_never_panics_on_mutated_profiles(edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6)) {
        let text = mutate(PROFILE, &edits);
        if let Ok(p) = goodput::define::profile::Profile::parse(&text, "fuzz.toml") {
            let _ = p.into_plan("fuzz.toml", &Default::default());
        }
    }

    #[test]
    fn readers_never_panic_on_arbitrary_text(text in ".{0,400}") {
        let _ = report::io::parse_report(&text);
        let _ = goodput::define::profile::Profile::parse(&text, "fuzz.toml");
        let _ = serde_json::from_str::<goodput::drive::record::RequestRecord>(&text);
    }
}

#[test]
fn a_torn_last_line_of_the_requests_file_is_skipped_and_others_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.requests.jsonl");
    let rec = goodput::drive::record::RequestRecord::new("e", 1.0, 0, 0, 0);
    let line = serde_json::to_string(&rec).unwrap();
    std::fs::write(&p, format!("{line}\n{line}\n{}", &line[..10])).unwrap();
    assert_eq!(goodput::drive::record::read_records(&p).unwrap().len(), 2);
    std::fs::write(&p, format!("{line}\nnot json\n{line}\n")).unwrap();
    let err = goodput::drive::record::read_records(&p).unwrap_err();
    assert!(err.contains(":2:"), "{err}");
}
