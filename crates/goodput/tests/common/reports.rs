//! The report files the render tests read: the reference (a real vLLM study, in
//! the reference format) and a fixture that uses goodput's additive fields.

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
