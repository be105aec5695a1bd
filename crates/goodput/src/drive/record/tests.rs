use super::*;

#[test]
fn a_requests_file_is_read_with_bounds_and_a_bad_line_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.requests.jsonl");
    let line = serde_json::to_string(&RequestRecord::new("e", 1.0, 0, 0, 0)).unwrap();
    // One line of garbage is a corrupt file, not an empty one.
    for garbage in ["garbage\n", "garbage", "{\"engine\": 3}\n"] {
        std::fs::write(&p, garbage).unwrap();
        let e = read_records(&p).unwrap_err();
        assert!(e.contains("r.requests.jsonl:1:"), "{garbage:?}: {e}");
    }
    // A record cut short with no newline is a torn append: skipped.
    std::fs::write(&p, format!("{line}\n{}", &line[..20])).unwrap();
    assert_eq!(read_records(&p).unwrap().len(), 1);
    // A line over the cap, and records over the total, name the file and limit.
    std::fs::write(&p, format!("{line}\n{line}\n{line}\n")).unwrap();
    let e = read_bounded(&p, |_| true, 16, u64::MAX).unwrap_err();
    assert!(
        e.contains("r.requests.jsonl:1:") && e.contains("16 bytes"),
        "{e}"
    );
    let total = 2 * line.len() as u64;
    let e = read_bounded(&p, |_| true, 1 << 20, total).unwrap_err();
    assert!(e.contains(&format!("more than {total} bytes")), "{e}");
    assert!(e.contains("at line 3"), "{e}");
    // Only what the caller keeps counts.
    let mut seen = 0;
    let kept = read_bounded(
        &p,
        |_| {
            seen += 1;
            seen == 2
        },
        1 << 20,
        total,
    )
    .unwrap();
    assert_eq!(kept.len(), 1);
}

#[test]
fn a_report_names_its_requests_file_only_beside_itself() {
    let report = Path::new("/shards/shard-1.json");
    assert_eq!(
        named_records_path(report, "shard-1.requests.jsonl").unwrap(),
        Path::new("/shards/shard-1.requests.jsonl")
    );
    for far in [
        "/etc/passwd",
        "../x.jsonl",
        "sub/x.jsonl",
        "..",
        "/dev/zero",
    ] {
        let e = named_records_path(report, far).unwrap_err();
        assert!(
            e.contains("not a file name beside the report"),
            "{far}: {e}"
        );
    }
}
