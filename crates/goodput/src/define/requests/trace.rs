//! `kind = "trace"`: a timestamped trace replayed at its own times.
//!
//! - `format = "mooncake"`: JSON lines `{"timestamp": ms, "input_length": n,
//!   "output_length": n, "hash_ids": [..]}`; hash id `h` stands for a block of
//!   `block_tokens` tokens, and requests sharing `h` share that block's text, so the
//!   trace's prefix reuse is reproduced.
//! - `format = "azure"`: the Azure LLM inference trace CSV with the columns
//!   `TIMESTAMP` (`2023-11-16 18:15:46.6805900`, or seconds), `ContextTokens`,
//!   `GeneratedTokens`; no hash ids, every prompt is its own.
//!
//! Timestamps must be non-negative and sorted ascending (the error names the first
//! line that is not). Arrivals are shifted so the first selected request is at 0;
//! `[load] points` are speedups (2.0 replays twice as fast).

use std::collections::HashSet;
use std::io::BufRead;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::text::block_text;
use super::{Asked, Builder, Prepared};

pub use crate::define::profile::TraceFormat;

/// One request of a trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceRequest {
    /// Arrival, ns after the first selected request (at speedup 1).
    pub offset_ns: u64,
    /// Prompt tokens (after clipping).
    pub input_tokens: u32,
    /// Output tokens.
    pub output_tokens: u32,
    /// Prompt blocks (mooncake); empty for azure.
    pub hash_ids: Vec<u64>,
    /// Line of the file it came from.
    pub line: usize,
}

/// Which part of a trace to replay, and how.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Window {
    /// Skip requests before this many seconds after the trace's first timestamp.
    pub start_s: Option<f64>,
    /// Then keep this many seconds.
    pub duration_s: Option<f64>,
    /// Then keep at most this many requests.
    pub max_requests: Option<u32>,
    /// Clip prompts longer than this.
    pub max_input_tokens: Option<u32>,
}

/// The validated trace workload.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceWorkload {
    /// Format.
    pub format: TraceFormat,
    /// Tokens per hash block.
    pub block_tokens: u32,
    /// The selected requests, in arrival order.
    pub requests: std::sync::Arc<Vec<TraceRequest>>,
    /// Requests in the file.
    pub total: usize,
    /// Prompts clipped to `max_input_tokens`.
    pub clipped: usize,
    /// SHA-256 of the file.
    pub sha256: String,
    /// Calibrate words to tokens through `/tokenize`.
    pub calibrate: bool,
}

impl TraceWorkload {
    /// Send offsets at `speedup`.
    pub fn offsets(&self, speedup: f64) -> Vec<u64> {
        self.requests
            .iter()
            .map(|r| (r.offset_ns as f64 / speedup.max(1e-9)) as u64)
            .collect()
    }

    /// Share of prompt tokens in blocks that an earlier request of the trace began
    /// with the same way (the prefix a cache could reuse), as `build` counts them.
    pub fn expected_hit_share(&self) -> f64 {
        let (mut shared, mut total) = (0u64, 0u64);
        let mut seen = HashSet::new();
        for r in self.requests.iter() {
            shared += u64::from(shared_prefix(r, self.block_tokens, &mut seen));
            total += u64::from(r.input_tokens);
        }
        shared as f64 / total.max(1) as f64
    }
}

/// Tokens of `r`'s leading blocks already seen (as prefixes: the chain of hash ids
/// up to each block), marking its own chain as seen.
fn shared_prefix(r: &TraceRequest, block: u32, seen: &mut HashSet<Vec<u64>>) -> u32 {
    let mut shared = 0u32;
    let mut open = true;
    for k in 0..r.hash_ids.len() {
        let chain = r.hash_ids[..=k].to_vec();
        let len = block.min(r.input_tokens.saturating_sub(k as u32 * block));
        if open && seen.contains(&chain) && len == block {
            shared += len;
        } else {
            open = false;
            seen.insert(chain);
        }
    }
    shared
}

/// The trial's requests (the first `n` of the trace), text seeded by `key`.
pub(super) fn build(b: &Builder, t: &TraceWorkload, n: u32, key: u64) -> Vec<Prepared> {
    let mut seen = HashSet::new();
    let block_words = b.words(t.block_tokens);
    t.requests
        .iter()
        .take(n as usize)
        .enumerate()
        .map(|(i, r)| {
            let words = b.words(r.input_tokens);
            let mut parts: Vec<String> = r
                .hash_ids
                .iter()
                .map(|h| {
                    block_text(
                        key ^ h.wrapping_add(1).wrapping_mul(0xD6E8_FEB8_6659_FD93),
                        block_words,
                    )
                })
                .collect();
            // Beyond the blocks (or without any: azure), the request's own words.
            let covered = parts.len() * block_words;
            if covered < words {
                parts.push(block_text(
                    !key ^ (i as u64 + 1).wrapping_mul(0x9FB2_1C65_1E98_DF25),
                    words - covered,
                ));
            }
            let text: Vec<&str> = parts
                .iter()
                .flat_map(|p| p.split(' '))
                .take(words)
                .collect();
            let asked = Asked {
                max_tokens: Some(r.output_tokens),
                input_tokens: Some(r.input_tokens),
                shared_tokens: Some(shared_prefix(r, t.block_tokens, &mut seen)),
                session: None,
                turn: None,
                exact: true,
                tools: None,
                tools_offered: 0,
                images: None,
                inputs: None,
            };
            b.prepared(&text.join(" "), asked, true)
        })
        .collect()
}

#[derive(Deserialize)]
struct MooncakeLine {
    timestamp: f64,
    input_length: u32,
    output_length: u32,
    #[serde(default)]
    hash_ids: Vec<u64>,
}

/// Reads and selects a trace; errors name the file, the line and the field.
pub fn read(
    path: &Path,
    format: TraceFormat,
    block_tokens: u32,
    window: &Window,
    calibrate: bool,
) -> Result<TraceWorkload, String> {
    let mut reader = super::source::open(path)?;
    let at = |line: usize| format!("{}:{line}", path.display());
    let rows = match format {
        TraceFormat::Mooncake => read_mooncake(&mut reader, &at)?,
        TraceFormat::Azure => read_azure(&mut reader, &at)?,
    };
    let sha256 = super::source::digest(reader, path)?;
    let mut last = 0.0f64;
    for (ts, r) in &rows {
        if !(ts.is_finite() && *ts >= 0.0) {
            return Err(format!(
                "{}: field `timestamp`: {ts} is negative or not a number",
                at(r.line)
            ));
        }
        if *ts < last {
            return Err(format!(
                "{}: field `timestamp`: {ts} is before the previous line's {last}: the trace must be sorted by timestamp (sort it first)",
                at(r.line)
            ));
        }
        last = *ts;
    }
    let total = rows.len();
    let first = rows.first().map_or(0.0, |(ts, _)| *ts);
    let from = first + window.start_s.unwrap_or(0.0);
    let to = window.duration_s.map_or(f64::INFINITY, |d| from + d);
    let mut clipped = 0;
    let mut requests: Vec<TraceRequest> = rows
        .into_iter()
        .filter(|(ts, _)| *ts >= from && *ts < to)
        .take(window.max_requests.map_or(usize::MAX, |m| m as usize))
        .map(|(ts, mut r)| {
            if let Some(max) = window.max_input_tokens {
                if r.input_tokens > max {
                    r.input_tokens = max;
                    r.hash_ids.truncate(max.div_ceil(block_tokens) as usize);
                    clipped += 1;
                }
            }
            r.offset_ns = (ts * 1e9) as u64;
            r
        })
        .collect();
    let zero = requests.first().map_or(0, |r| r.offset_ns);
    for r in &mut requests {
        r.offset_ns -= zero;
    }
    if requests.is_empty() {
        return Err(format!(
            "{}: no request of the {total} in the file falls in the selected window",
            path.display()
        ));
    }
    Ok(TraceWorkload {
        format,
        block_tokens,
        requests: std::sync::Arc::new(requests),
        total,
        clipped,
        sha256,
        calibrate,
    })
}

/// Largest trace line accepted, bytes.
const MAX_LINE: u64 = 16 * 1024 * 1024;

/// Lines of `reader`, numbered from 1, each bounded; blank lines skipped.
fn lines<'a>(
    reader: &'a mut impl BufRead,
    at: &'a dyn Fn(usize) -> String,
) -> impl Iterator<Item = Result<(usize, String), String>> + 'a {
    let mut no = 0;
    std::iter::from_fn(move || loop {
        no += 1;
        let mut line = String::new();
        match std::io::Read::take(&mut *reader, MAX_LINE + 1).read_line(&mut line) {
            Err(e) => return Some(Err(format!("{}: {e}", at(no)))),
            Ok(0) => return None,
            Ok(n) if n as u64 > MAX_LINE => {
                return Some(Err(format!(
                    "{}: line longer than {MAX_LINE} bytes",
                    at(no)
                )))
            }
            Ok(_) if line.trim().is_empty() => continue,
            Ok(_) => return Some(Ok((no, line))),
        }
    })
}

type Rows = Vec<(f64, TraceRequest)>;

fn read_mooncake(reader: &mut impl BufRead, at: &dyn Fn(usize) -> String) -> Result<Rows, String> {
    let mut rows = Vec::new();
    for item in lines(reader, at) {
        let (no, line) = item?;
        let m: MooncakeLine =
            serde_json::from_str(&line).map_err(|e| format!("{}: {e}", at(no)))?;
        rows.push((
            m.timestamp / 1000.0,
            request(no, m.input_length, m.output_length, m.hash_ids, at)?,
        ));
    }
    Ok(rows)
}

fn request(
    line: usize,
    input: u32,
    output: u32,
    hash_ids: Vec<u64>,
    at: &dyn Fn(usize) -> String,
) -> Result<TraceRequest, String> {
    for (field, v) in [("input_length", input), ("output_length", output)] {
        if v == 0 || v > 10_000_000 {
            return Err(format!(
                "{}: field `{field}`: {v} is out of range 1..=10000000",
                at(line)
            ));
        }
    }
    Ok(TraceRequest {
        offset_ns: 0,
        input_tokens: input,
        output_tokens: output,
        hash_ids,
        line,
    })
}

/// The Azure CSV, columns found by name in the header. Hand-read rather than with a
/// CSV crate: the format has three unquoted columns, and this names line and column.
fn read_azure(reader: &mut impl BufRead, at: &dyn Fn(usize) -> String) -> Result<Rows, String> {
    let mut it = lines(reader, at);
    let (hno, header) = it
        .next()
        .ok_or_else(|| format!("{}: the file is empty", at(1)))??;
    let names: Vec<&str> = header.trim().split(',').map(str::trim).collect();
    let col = |name: &str| {
        names.iter().position(|n| *n == name).ok_or_else(|| {
            format!("{}: no `{name}` column in the header (an Azure trace has TIMESTAMP, ContextTokens, GeneratedTokens)", at(hno))
        })
    };
    let (ts, ctx, gen) = (
        col("TIMESTAMP")?,
        col("ContextTokens")?,
        col("GeneratedTokens")?,
    );
    let mut rows = Vec::new();
    for item in it {
        let (no, line) = item?;
        let cells: Vec<&str> = line.trim().split(',').map(str::trim).collect();
        let cell = |i: usize, name: &str| {
            cells
                .get(i)
                .copied()
                .ok_or_else(|| format!("{}: field `{name}`: missing", at(no)))
        };
        let number = |i: usize, name: &str| -> Result<u32, String> {
            let c = cell(i, name)?;
            c.parse()
                .map_err(|_| format!("{}: field `{name}`: `{c}` is not a whole number", at(no)))
        };
        let t = cell(ts, "TIMESTAMP")?;
        let secs = parse_time(t).ok_or_else(|| {
            format!("{}: field `TIMESTAMP`: `{t}` is neither seconds nor `YYYY-MM-DD HH:MM:SS[.fraction]`", at(no))
        })?;
        let r = request(
            no,
            number(ctx, "ContextTokens")?,
            number(gen, "GeneratedTokens")?,
            Vec::new(),
            at,
        )?;
        rows.push((secs, r));
    }
    Ok(rows)
}

/// Seconds (since 1970, UTC) of `YYYY-MM-DD HH:MM:SS[.fraction]`, or a plain number.
fn parse_time(s: &str) -> Option<f64> {
    if let Ok(v) = s.parse::<f64>() {
        return Some(v);
    }
    let (date, time) = s.split_once([' ', 'T'])?;
    let d: Vec<i64> = date
        .split('-')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let t: Vec<&str> = time.trim_end_matches('Z').split(':').collect();
    let [y, m, day] = d[..] else { return None };
    let [h, min, sec] = t[..] else { return None };
    let (h, min, sec): (i64, i64, f64) = (h.parse().ok()?, min.parse().ok()?, sec.parse().ok()?);
    if !(1..=12).contains(&m)
        || !(1..=31).contains(&day)
        || h > 23
        || min > 59
        || !(0.0..61.0).contains(&sec)
    {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + min * 60) as f64 + sec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    fn mooncake(text: &str, w: &Window) -> Result<TraceWorkload, String> {
        read(file(text).path(), TraceFormat::Mooncake, 4, w, false)
    }

    #[test]
    fn mooncake_lines_are_shifted_to_zero_and_windowed() {
        let t = "{\"timestamp\": 1000, \"input_length\": 8, \"output_length\": 2, \"hash_ids\": [1, 2]}\n\
                 {\"timestamp\": 1500, \"input_length\": 10, \"output_length\": 3, \"hash_ids\": [1, 2, 3]}\n\
                 \n{\"timestamp\": 4000, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [9]}\n";
        let all = mooncake(t, &Window::default()).unwrap();
        let offs: Vec<u64> = all.requests.iter().map(|r| r.offset_ns).collect();
        assert_eq!(offs, vec![0, 500_000_000, 3_000_000_000]);
        assert_eq!(all.offsets(2.0), vec![0, 250_000_000, 1_500_000_000]);
        assert_eq!(all.requests[2].line, 4);
        // Request 2 reuses blocks [1, 2] of request 1: 8 of 22 tokens.
        assert!((all.expected_hit_share() - 8.0 / 22.0).abs() < 1e-12);
        let w = Window {
            start_s: Some(0.2),
            duration_s: Some(1.0),
            max_input_tokens: Some(6),
            ..Window::default()
        };
        let some = mooncake(t, &w).unwrap();
        assert_eq!(some.requests.len(), 1);
        assert_eq!(
            (
                some.requests[0].offset_ns,
                some.requests[0].input_tokens,
                some.clipped
            ),
            (0, 6, 1)
        );
        assert_eq!(some.requests[0].hash_ids, vec![1, 2]);
    }

    #[test]
    fn bad_lines_are_named_by_file_line_and_field() {
        let missing = mooncake("{\"timestamp\": 1, \"input_length\": 8, \"output_length\": 2}\n{\"input_length\": 8, \"output_length\": 2}\n", &Window::default()).unwrap_err();
        assert!(
            missing.contains(":2: missing field `timestamp`"),
            "{missing}"
        );
        let neg = mooncake(
            "{\"timestamp\": -5, \"input_length\": 8, \"output_length\": 2}\n",
            &Window::default(),
        )
        .unwrap_err();
        assert!(
            neg.contains(":1: field `timestamp`: -0.005 is negative"),
            "{neg}"
        );
        let unsorted = mooncake("{\"timestamp\": 5, \"input_length\": 8, \"output_length\": 2}\n{\"timestamp\": 3, \"input_length\": 8, \"output_length\": 2}\n", &Window::default()).unwrap_err();
        assert!(
            unsorted.contains(":2: field `timestamp`") && unsorted.contains("must be sorted"),
            "{unsorted}"
        );
        let zero = mooncake(
            "{\"timestamp\": 5, \"input_length\": 0, \"output_length\": 2}\n",
            &Window::default(),
        )
        .unwrap_err();
        assert!(zero.contains(":1: field `input_length`"), "{zero}");
    }

    #[test]
    fn azure_csv_by_column_name_with_dates() {
        let f = file("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5000000,374,44\n2023-11-16 18:15:47.0000000,396,109\n");
        let t = read(f.path(), TraceFormat::Azure, 512, &Window::default(), false).unwrap();
        assert_eq!(
            t.requests.iter().map(|r| r.offset_ns).collect::<Vec<_>>(),
            vec![0, 500_000_000]
        );
        assert_eq!(
            (t.requests[1].input_tokens, t.requests[1].output_tokens),
            (396, 109)
        );
        assert_eq!(t.expected_hit_share(), 0.0);
        assert_eq!(parse_time("1970-01-02 00:00:01"), Some(86_401.0));
        let bad = file("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,x,44\n");
        let e = read(
            bad.path(),
            TraceFormat::Azure,
            512,
            &Window::default(),
            false,
        )
        .unwrap_err();
        assert!(e.contains(":2: field `ContextTokens`: `x`"), "{e}");
        let nohead = file("a,b\n1,2\n");
        let e = read(
            nohead.path(),
            TraceFormat::Azure,
            512,
            &Window::default(),
            false,
        )
        .unwrap_err();
        assert!(e.contains(":1: no `TIMESTAMP` column"), "{e}");
    }

    #[test]
    fn shared_hash_ids_give_identical_prefixes_and_distinct_ones_do_not() {
        let t = mooncake(
            "{\"timestamp\": 0, \"input_length\": 8, \"output_length\": 2, \"hash_ids\": [1, 2]}\n\
             {\"timestamp\": 1, \"input_length\": 12, \"output_length\": 2, \"hash_ids\": [1, 2, 3]}\n\
             {\"timestamp\": 2, \"input_length\": 8, \"output_length\": 2, \"hash_ids\": [4, 5]}\n",
            &Window::default(),
        )
        .unwrap();
        let b = Builder {
            workload: crate::define::plan::Workload::Trace(t),
            model: "m".into(),
            api: crate::define::profile::Api::Completions,
            tokens_per_word: 1.0,
            chat_fields: Default::default(),
            salt: None,
            images: None,
        };
        let reqs = b.build(3, 1, 0);
        let words: Vec<Vec<String>> = reqs
            .iter()
            .map(|r| {
                let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
                v["prompt"]
                    .as_str()
                    .unwrap()
                    .split(' ')
                    .map(str::to_string)
                    .collect()
            })
            .collect();
        assert_eq!(
            words.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![8, 12, 8]
        );
        assert_eq!(words[0][..], words[1][..8], "blocks 1, 2 shared");
        assert_ne!(words[0][..4], words[2][..4], "block 4 is not block 1");
        assert_eq!(
            reqs.iter()
                .map(|r| r.asked.shared_tokens)
                .collect::<Vec<_>>(),
            vec![Some(0), Some(8), Some(0)]
        );
    }
}
