//! What ran and what was seen, for the header of `show` and the HTML page: the
//! workload (kind, lengths, source file and its hash), and the prefix-cache hit
//! share and speculative acceptance the engine reported beside what the workload
//! expected.

use report::{Report, WorkloadKind};
use serde_json::Value;

use super::text::num;

/// `(label, value)` header lines: the workload, then what each engine was seen to do.
pub fn ran_lines(report: &Report) -> Vec<(String, String)> {
    let mut lines = Vec::new();
    let run = report.run.as_ref();
    let peer = run
        .and_then(|r| r.extra.get("peer"))
        .filter(|w| w.is_object());
    if let Some(w) = peer.or(run.map(|r| &r.workload).filter(|w| w.is_object())) {
        if let Some(text) = workload_text(w) {
            lines.push(("workload".to_string(), text));
        }
    }
    lines.extend(seen_lines(report));
    lines
}

fn pct(v: f64) -> String {
    format!("{}%", num((v * 1000.0).round() / 10.0))
}

/// `synthetic (random text): 1024 prompt tokens, 128 out` and the like.
pub fn workload_text(w: &Value) -> Option<String> {
    if let Some(tool) = w.get("tool").and_then(Value::as_str) {
        // A peer's result file: its settings, as far as the file says them.
        let n = |k: &str| w.get(k).and_then(Value::as_f64).map(num);
        let lengths = match (n("input_tokens"), n("output_tokens")) {
            (Some(i), Some(o)) => format!(": {i} prompt tokens, {o} out"),
            _ => String::new(),
        };
        return Some(format!(
            "as {tool} ran it{lengths} (its settings: the report's run.peer)"
        ));
    }
    let n = |k: &str| w.get(k).and_then(Value::as_u64);
    let mut parts: Vec<String> = Vec::new();
    let kind = WorkloadKind::of(w);
    match &kind {
        WorkloadKind::Synthetic => {
            let style = w.get("text").and_then(Value::as_str).unwrap_or("random");
            parts.push(format!("synthetic ({style} text)"));
            if let Some(i) = n("input_tokens") {
                parts.push(format!("{i} prompt tokens"));
            }
        }
        WorkloadKind::Prefix => {
            parts.push("prefix".into());
            if let (Some(g), Some(p), Some(s)) =
                (n("groups"), n("prefix_tokens"), n("suffix_tokens"))
            {
                parts.push(format!("{g} groups of {p} shared + {s} own prompt tokens"));
            }
        }
        WorkloadKind::Conversation => {
            parts.push("conversation".into());
            if let (Some(t), Some(i)) = (n("turns"), n("input_tokens")) {
                parts.push(format!("{t} turns of {i} tokens"));
            }
        }
        WorkloadKind::Jsonl
        | WorkloadKind::Trace
        | WorkloadKind::Sharegpt
        | WorkloadKind::Unknown(_) => parts.push(kind.to_string()),
    }
    if let Some(o) = n("output_tokens") {
        parts.push(format!("{o} out"));
    }
    if let Some(r) = w
        .get("range_ratio")
        .and_then(Value::as_f64)
        .filter(|r| *r > 0.0)
    {
        parts.push(format!("lengths ±{}", pct(r)));
    }
    let facts = w.get("facts");
    let fact = |k: &str| facts.and_then(|f| f.get(k));
    let file = w
        .get("path")
        .or_else(|| fact("file"))
        .and_then(Value::as_str);
    if let Some(f) = file {
        let mut s = format!("from {f}");
        if let Some(h) = fact("sha256").and_then(Value::as_str) {
            s.push_str(&format!(" (sha256 {})", h.get(..12).unwrap_or(h)));
        }
        parts.push(s);
    }
    for (k, what) in [
        ("prompts", "prompts"),
        ("requests", "requests"),
        ("sessions", "sessions"),
    ] {
        if let Some(c) = fact(k).and_then(Value::as_u64) {
            parts.push(format!("{c} {what}"));
        }
    }
    Some(parts.join(", "))
}

/// `a–b` of the values, or `a` when they are one.
fn span(mut v: Vec<f64>) -> Option<String> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    let (lo, hi) = (*v.first()?, *v.last()?);
    Some(if pct(lo) == pct(hi) {
        pct(lo)
    } else {
        format!("{}–{}", pct(lo), pct(hi))
    })
}

/// Per engine: the prefix-cache hit share and the speculative acceptance measured
/// (over its load levels), beside the workload's expected hit share.
pub fn seen_lines(report: &Report) -> Vec<(String, String)> {
    let expected = report
        .run
        .as_ref()
        .and_then(|r| r.workload.get("facts"))
        .and_then(|f| f.get("expected_prefix_hit_share"))
        .and_then(Value::as_f64);
    let mut lines = Vec::new();
    for (name, e) in &report.load {
        let hits: Vec<f64> = e
            .points
            .iter()
            .filter_map(|p| p.server.as_ref()?.prefix_cache_hit_share)
            .collect();
        let accepted: Vec<f64> = e
            .points
            .iter()
            .filter_map(|p| {
                p.spec_decode
                    .as_ref()
                    .and_then(|s| s.acceptance_rate)
                    .or_else(|| p.server.as_ref()?.spec_acceptance)
            })
            .collect();
        let mut seen = Vec::new();
        match (span(hits), expected) {
            (Some(h), Some(x)) => seen.push(format!(
                "prefix-cache hits {h} measured (the workload expects {})",
                pct(x)
            )),
            (Some(h), None) => seen.push(format!("prefix-cache hits {h} measured")),
            (None, Some(x)) => seen.push(format!(
                "prefix-cache hits not reported by the engine (the workload expects {})",
                pct(x)
            )),
            (None, None) => {}
        }
        if let Some(a) = span(accepted) {
            seen.push(format!("speculative acceptance {a} measured"));
        }
        if !seen.is_empty() {
            lines.push(("seen".to_string(), format!("{name}: {}", seen.join("; "))));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_workload_says_kind_lengths_file_and_hash() {
        let w = json!({"kind": "sharegpt", "output_tokens": 64, "path": "/d/sg.json",
            "facts": {"sha256": "0123456789abcdef0123", "requests": 200}});
        assert_eq!(
            workload_text(&w).as_deref(),
            Some("sharegpt, 64 out, from /d/sg.json (sha256 0123456789ab), 200 requests")
        );
        let w = json!({"kind": "prefix", "groups": 2, "prefix_tokens": 100, "suffix_tokens": 20, "output_tokens": 8});
        assert_eq!(
            workload_text(&w).as_deref(),
            Some("prefix, 2 groups of 100 shared + 20 own prompt tokens, 8 out")
        );
    }
}
