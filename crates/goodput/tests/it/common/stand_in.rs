//! The OpenAI-compatible stand-in server (`tests/fixtures/openai_stand_in.py`,
//! Python's standard library, following vLLM's wire shapes and knowing nothing of
//! goodput) on 127.0.0.1 port 0, stopped by its pid when dropped, with the JSON
//! line it logged for every request it received.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A running stand-in.
pub struct StandIn {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl StandIn {
    /// Starts the stand-in with `args` (its options, e.g. `--tool-call-ms 80`);
    /// `None` when python3 is opted out (`GOODPUT_SKIP_PYTHON=1`).
    pub fn start(args: &[&str]) -> Option<StandIn> {
        if !super::require::python() {
            return None;
        }
        let dir = tempfile::tempdir().expect("a scratch directory");
        let log = dir.path().join("requests.jsonl");
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/openai_stand_in.py"
        );
        let mut child = Command::new("python3")
            .arg(script)
            .args(["--port", "0", "--log"])
            .arg(&log)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 starts the stand-in");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("its stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the stand-in says its port");
        let Some(port) = line.trim().strip_prefix("LISTENING ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the stand-in did not start: {line:?}");
        };
        Some(StandIn {
            url: format!("http://127.0.0.1:{port}"),
            child,
            log,
            _dir: dir,
        })
    }

    /// What the stand-in logged of every request it received, in order.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
