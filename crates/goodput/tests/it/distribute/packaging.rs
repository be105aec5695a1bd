//! The build users get (`cargo install`, the wheel, which builds the release
//! profile) carries no debug info: a 123 MB binary to download for a benchmark
//! client was #37's finding.

use std::path::Path;

#[test]
fn the_release_profile_ships_without_debug_info() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let text = std::fs::read_to_string(&root).expect("the workspace manifest");
    let manifest: toml::Value = toml::from_str(&text).expect("it parses");
    let release = &manifest["profile"]["release"];
    let debug = release.get("debug");
    assert!(
        matches!(debug, None | Some(toml::Value::Boolean(false)))
            || debug.and_then(toml::Value::as_integer) == Some(0),
        "release keeps debug info: {debug:?}"
    );
    let strip = release.get("strip").and_then(toml::Value::as_str);
    assert!(
        matches!(strip, Some("debuginfo" | "symbols")),
        "release is not stripped: {strip:?}"
    );
}
