//! The report files the render tests read: the reference (a real vLLM study, in
//! the reference format) and a fixture that uses goodput's additive fields.
//! And what the tests that stop a run read of the report it left.

use goodput::report::{self, Report};

/// The reference report's path.
pub const REFERENCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/l4-gpu1-vllm.json"
);

/// The additive fixture's path.
pub const ADDITIVE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/render_fixtures/additive.json"
);

/// The report at `path`; the test fails naming the file when it cannot be read.
pub fn load(path: &str) -> Report {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    report::io::parse_report(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The reference report.
pub fn reference() -> Report {
    load(REFERENCE)
}

/// The additive fixture.
pub fn additive() -> Report {
    load(ADDITIVE)
}

/// Complete trials in the report at `out` so far (0 while it is not there or not
/// readable yet): what a test that stops a run mid-way waits for.
pub fn complete_trials(out: &std::path::Path) -> usize {
    report::read_report(out).map_or(0, |r| {
        r.load
            .values()
            .flat_map(|e| &e.points)
            .flat_map(|p| &p.trials)
            .filter(|t| t.status == report::RunStatus::Complete)
            .count()
    })
}
