//! The store on its own: migrations (a new store, opened twice, an older one
//! migrated, a newer one refused), a report recorded and read back, runs found
//! by every filter, a trend, a baseline found and its file checked, and two
//! writers at once.

use std::path::{Path, PathBuf};

use super::query::{verified_report, Candidate};
use super::*;

fn reference() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/l4-gpu1-vllm.json")
}

/// The reference report copied into `dir` as `name`.
fn report_in(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::copy(reference(), &p).unwrap();
    p
}

fn identity(kind: Kind, tags: &[&str]) -> Identity {
    Identity {
        kind,
        tags: tags.iter().map(|t| t.to_string()).collect(),
        profile_path: None,
    }
}

fn tables(s: &Store) -> Vec<String> {
    let mut st = s
        .conn
        .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'index') ORDER BY name")
        .unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn a_new_store_is_migrated_in_wal_mode_and_opens_again_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/dir/store.sqlite");
    let s = Store::open(&path).unwrap();
    assert_eq!(s.version().unwrap(), schema::latest());
    let mode: String = s
        .conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let before = tables(&s);
    assert!(
        before.contains(&"runs".to_string()) && before.contains(&"runs_by_profile".to_string())
    );
    drop(s);
    let s = Store::open(&path).unwrap();
    assert_eq!(s.version().unwrap(), schema::latest());
    assert_eq!(tables(&s), before);
}

#[test]
fn an_older_store_keeps_its_runs_through_the_migrations_and_a_newer_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    let mut old = Store::open_at_version(&path, 1).unwrap();
    assert_eq!(old.version().unwrap(), 1);
    assert!(!tables(&old).contains(&"runs_by_profile".to_string()));
    let file = report_in(dir.path(), "r.json");
    let entry = Entry::from_file(&file, &identity(Kind::Run, &["old"])).unwrap();
    let id = old.record(&entry).unwrap();
    drop(old);
    let s = Store::open(&path).unwrap();
    assert_eq!(s.version().unwrap(), schema::latest());
    assert!(tables(&s).contains(&"runs_by_profile".to_string()));
    let runs = s.runs(&Filter::default()).unwrap();
    assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), [id]);
    assert_eq!(runs[0].tags, ["old"]);
    s.conn.execute_batch("PRAGMA user_version = 99").unwrap();
    drop(s);
    let e = Store::open(&path).err().unwrap().to_string();
    assert!(
        e.contains("schema version 99") && e.contains("newer"),
        "{e}"
    );
    assert!(e.contains(&path.display().to_string()), "{e}");
}

#[test]
fn a_directory_or_an_unwritable_place_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let e = Store::open(dir.path()).err().unwrap().to_string();
    assert!(
        e.contains("is a directory") && e.contains(&dir.path().display().to_string()),
        "{e}"
    );
    let file = dir.path().join("plain");
    std::fs::write(&file, "not a database\n".repeat(300)).unwrap();
    // A folder cannot be made under a plain file.
    let e = Store::open(&file.join("store.sqlite"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("cannot create"), "{e}");
    // Not a database.
    let e = Store::open(&file).err().unwrap().to_string();
    assert!(e.contains("cannot open"), "{e}");
}

#[test]
fn a_report_round_trips_with_its_identity_points_and_hash() {
    let dir = tempfile::tempdir().unwrap();
    let file = report_in(dir.path(), "r.json");
    let mut s = Store::open(&dir.path().join("s.sqlite")).unwrap();
    let entry = Entry::from_file(&file, &identity(Kind::Run, &["nightly", "v1"])).unwrap();
    assert_eq!(entry.profile, "l4-gpu1");
    assert_eq!(
        entry.report_sha256,
        record::sha256_hex(&std::fs::read(&file).unwrap())
    );
    assert_eq!(entry.engines.len(), 3);
    let r = report::read_report(&file).unwrap();
    let p = &r.load["vllm-fast-b"].points[1];
    let stored = entry
        .points
        .iter()
        .find(|q| q.engine == "vllm-fast-b" && q.x == p.x)
        .unwrap();
    assert_eq!(
        stored.goodput,
        [p.goodput_rps.median, p.goodput_rps.min, p.goodput_rps.max]
    );
    assert_eq!(stored.p99_ttft_ms, p.p99_ttft_ms.median);
    let id = s.record(&entry).unwrap();
    let runs = s.runs(&Filter::default()).unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!((run.id, run.kind.clone()), (id, Kind::Run));
    assert_eq!(run.engines, ["vllm-fast-b", "vllm-ngram", "vllm-no-async"]);
    assert_eq!(run.tags, ["nightly", "v1"]);
    assert_eq!(run.report_path, std::path::absolute(&file).unwrap());
    let trend = s
        .trend(&Filter::default(), "vllm-fast-b", Metric::Goodput)
        .unwrap();
    assert_eq!(trend.len(), 1);
    let xs: Vec<_> = trend[0].values.iter().map(|v| v.x).collect();
    assert_eq!(xs, [Some(1.0), Some(4.0)]);
    assert_eq!(trend[0].values[1].value, p.goodput_rps.median);
    assert_eq!(trend[0].values[1].low, p.goodput_rps.min);
    // The reference has no search: no capacity to follow.
    assert!(s
        .trend(&Filter::default(), "vllm-fast-b", Metric::Capacity)
        .unwrap()
        .is_empty());
    assert_eq!(verified_report(run).unwrap(), run.report_path.as_path());
}

#[test]
fn filters_select_by_engine_profile_tag_and_date() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("s.sqlite")).unwrap();
    let a = report_in(dir.path(), "a.json");
    let mut e = Entry::from_file(&a, &identity(Kind::Run, &["nightly"])).unwrap();
    let first = s.record(&e).unwrap();
    e.tags = vec!["release".into()];
    e.profile = "other".into();
    e.engines.truncate(1);
    let second = s.record(&e).unwrap();
    let ids = |f: Filter| s.runs(&f).unwrap().iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(Filter::default()), [second, first], "newest first");
    let tag = |t: &str| Filter {
        tag: Some(t.into()),
        ..Filter::default()
    };
    assert_eq!(ids(tag("nightly")), [first]);
    assert_eq!(ids(tag("none")), Vec::<i64>::new());
    let profile = Filter {
        profile: Some("other".into()),
        ..Filter::default()
    };
    assert_eq!(ids(profile), [second]);
    let engine = Filter {
        engine: Some("vllm-ngram".into()),
        ..Filter::default()
    };
    assert_eq!(ids(engine), [first]);
    let now = record::now_unix_s();
    let since = Filter {
        since: Some(now + 3600.0),
        ..Filter::default()
    };
    assert!(ids(since).is_empty());
    let until = Filter {
        until: Some(now + 3600.0),
        since: Some(now - 3600.0),
        ..Filter::default()
    };
    assert_eq!(ids(until).len(), 2);
    assert_eq!(
        query::parse_date("2024-11-30", false).unwrap(),
        1_732_924_800.0
    );
    assert_eq!(
        query::parse_date("2024-11-30", true).unwrap(),
        1_733_011_200.0
    );
    assert_eq!(
        query::parse_date("2024-11-30T20:53", false).unwrap(),
        1_733_000_000.0 - 20.0
    );
    assert!(query::parse_date("yesterday", false)
        .unwrap_err()
        .contains("YYYY-MM-DD"));
}

#[test]
fn the_baseline_is_the_latest_other_run_and_a_changed_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("s.sqlite")).unwrap();
    let old = report_in(dir.path(), "old.json");
    let tagged = report_in(dir.path(), "tagged.json");
    // Not byte-identical to the others, so that hashes tell them apart.
    let text = std::fs::read_to_string(&tagged).unwrap() + "\n";
    std::fs::write(&tagged, text).unwrap();
    let mut first = Entry::from_file(&old, &identity(Kind::Run, &[])).unwrap();
    first.status = Some("complete".into());
    let first_id = s.record(&first).unwrap();
    let mut second = Entry::from_file(&tagged, &identity(Kind::Run, &["good"])).unwrap();
    second.status = Some("complete".into());
    let second_id = s.record(&second).unwrap();
    let cand_path = report_in(dir.path(), "cand.json");
    std::fs::write(
        &cand_path,
        std::fs::read_to_string(&cand_path).unwrap() + "\n\n",
    )
    .unwrap();
    let (_, sha) = record::read_hashed(&cand_path).unwrap();
    let cand = Candidate {
        profile: "l4-gpu1".into(),
        engines: vec![
            "vllm-no-async".into(),
            "vllm-fast-b".into(),
            "vllm-ngram".into(),
        ],
        predicted: false,
        path: cand_path.clone(),
        sha256: sha,
    };
    assert_eq!(s.baseline(&Baseline::Last, &cand).unwrap().id, second_id);
    assert_eq!(
        s.baseline(&Baseline::parse("good"), &cand).unwrap().id,
        second_id
    );
    // The candidate's own record is never its baseline.
    let mut own = Entry::from_file(&cand_path, &identity(Kind::Run, &["good"])).unwrap();
    own.status = Some("complete".into());
    s.record(&own).unwrap();
    assert_eq!(s.baseline(&Baseline::Last, &cand).unwrap().id, second_id);
    assert_eq!(
        s.baseline(&Baseline::parse("good"), &cand).unwrap().id,
        second_id
    );
    // Other engines: no baseline.
    let fewer = Candidate {
        engines: vec!["vllm-fast-b".into()],
        ..cand.clone()
    };
    let e = s
        .baseline(&Baseline::Last, &fewer)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("no earlier complete run of profile \"l4-gpu1\""),
        "{e}"
    );
    let e = s
        .baseline(&Baseline::parse("gone"), &cand)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no run tagged \"gone\""), "{e}");
    // A baseline whose file changed or went is refused, naming the run and file.
    let run = s.baseline(&Baseline::Last, &cand).unwrap();
    std::fs::write(&tagged, "{}").unwrap();
    let e = verified_report(&run).err().unwrap().to_string();
    assert!(
        e.contains(&format!("run #{second_id}")) && e.contains("changed since it was recorded"),
        "{e}"
    );
    std::fs::remove_file(&old).unwrap();
    let older = s
        .runs(&Filter::default())
        .unwrap()
        .into_iter()
        .find(|r| r.id == first_id)
        .unwrap();
    let e = verified_report(&older).err().unwrap().to_string();
    assert!(
        e.contains("cannot be read") && e.contains("old.json"),
        "{e}"
    );
}

#[test]
fn two_writers_at_once_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let file = report_in(dir.path(), "r.json");
    let entry = Entry::from_file(&file, &identity(Kind::Run, &[])).unwrap();
    let writers: Vec<_> = (0..4)
        .map(|i| {
            let (path, entry) = (path.clone(), entry.clone());
            std::thread::spawn(move || {
                // Each writer opens the store itself (a new one: all migrate it at
                // once) and records 10 runs.
                let mut s = Store::open(&path).unwrap();
                for _ in 0..10 {
                    let mut e = entry.clone();
                    e.tags = vec![format!("writer-{i}")];
                    s.record(&e).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let s = Store::open(&path).unwrap();
    assert_eq!(s.runs(&Filter::default()).unwrap().len(), 40);
    for i in 0..4 {
        let f = Filter {
            tag: Some(format!("writer-{i}")),
            ..Filter::default()
        };
        assert_eq!(s.runs(&f).unwrap().len(), 10);
    }
}

#[test]
fn the_location_follows_the_flags() {
    assert_eq!(Location::resolve(Some("x".into()), true), Location::Off);
    assert_eq!(
        Location::resolve(Some("x".into()), false),
        Location::At("x".into())
    );
    match Location::resolve(None, false) {
        Location::At(p) => assert!(p.ends_with("goodput/store.sqlite"), "{}", p.display()),
        Location::Nowhere => {}
        Location::Off => panic!("the default is not off"),
    }
    assert!(open(&Location::Off).unwrap().is_none());
}
