//! Embeds goodput's git commit (`GOODPUT_GIT_COMMIT`) when built from a checkout.
//! Outside a checkout, or without git, the variable is absent and the report's
//! `environment.git_commit` is left out.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=GOODPUT_GIT_COMMIT");
    if let Ok(given) = std::env::var("GOODPUT_GIT_COMMIT") {
        println!("cargo:rustc-env=GOODPUT_GIT_COMMIT={given}");
        return;
    }
    // Rebuild when HEAD moves: HEAD itself, and the branch it points to.
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]) {
        let head = Path::new(&git_dir).join("HEAD");
        if head.exists() {
            println!("cargo:rerun-if-changed={}", head.display());
        }
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let ref_file = Path::new(&git_dir).join(reference);
            if ref_file.exists() {
                println!("cargo:rerun-if-changed={}", ref_file.display());
            }
        }
    }
    if let Some(commit) = git(&["rev-parse", "--short", "HEAD"]) {
        println!("cargo:rustc-env=GOODPUT_GIT_COMMIT={commit}");
    }
}
