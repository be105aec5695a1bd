//! A JSONL workload file: one request per line, each checked with its line number.

use super::JsonlPrompt;

/// Largest JSONL line accepted, bytes.
const MAX_JSONL_LINE: usize = 16 * 1024 * 1024;

pub(super) fn read_jsonl(
    path: &std::path::Path,
    default_max: Option<u32>,
) -> Result<Vec<JsonlPrompt>, String> {
    use std::io::BufRead;
    let f = crate::files::open_regular(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut out = Vec::new();
    let mut reader = std::io::BufReader::new(f);
    let mut line = String::new();
    let mut no = 0usize;
    loop {
        line.clear();
        no += 1;
        let n = std::io::Read::take(&mut reader, MAX_JSONL_LINE as u64 + 1)
            .read_line(&mut line)
            .map_err(|e| format!("{}:{no}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        if n > MAX_JSONL_LINE {
            return Err(format!(
                "{}:{no}: line longer than {MAX_JSONL_LINE} bytes",
                path.display()
            ));
        }
        if line.trim().is_empty() {
            continue;
        }
        let mut p: JsonlPrompt =
            serde_json::from_str(&line).map_err(|e| format!("{}:{no}: {e}", path.display()))?;
        if p.max_tokens.is_none() {
            p.max_tokens = default_max;
        }
        // Requests that can never succeed are refused here, not as HTTP 400s later.
        if p.prompt.trim().is_empty() {
            return Err(format!(
                "{}:{no}: the prompt is empty; an engine refuses an empty prompt",
                path.display()
            ));
        }
        if let Some(m) = p.max_tokens {
            if !(1..=1_000_000).contains(&m) {
                return Err(format!(
                    "{}:{no}: max_tokens {m} is out of range 1..=1000000 (a request must ask for at least one token)",
                    path.display()
                ));
            }
        }
        out.push(p);
        let _ = reader.fill_buf();
    }
    if out.is_empty() {
        return Err(format!("{} holds no prompts", path.display()));
    }
    Ok(out)
}
