//! `[workload]`: each kind's fields checked, and its source read (a JSONL file).

use crate::define::profile::{
    kind_name, ConversationSpec, PrefixSpec, ProfileError, SharegptSpec, TraceSpec, WorkloadKind,
    WorkloadSpec,
};

use crate::define::requests::prefix::PrefixWorkload;
use crate::define::requests::trace::{self, Window};

use super::check::{Checker, MAX_SECONDS};
use super::jsonl::read_jsonl;
use super::Workload;

pub(super) fn check_workload(check: &Checker, w: &WorkloadSpec) -> Result<Workload, ProfileError> {
    match w {
        WorkloadSpec::Synthetic(s) => {
            check_range_ratio(check, s.range_ratio)?;
            let input_tokens = required(check, w.kind(), "input_tokens", s.input_tokens)?;
            let inputs = super::embeddings::check_inputs(check, s.inputs)?;
            // Embeddings generate nothing: a workload of inputs needs no output length.
            let output_tokens = match (inputs, s.output_tokens) {
                (Some(_), None) => 0,
                _ => required(check, w.kind(), "output_tokens", s.output_tokens)?,
            };
            Ok(Workload::Synthetic {
                input_tokens,
                output_tokens,
                range_ratio: s.range_ratio,
                text: s.text,
                calibrate: s.calibrate,
                inputs,
            })
        }
        WorkloadSpec::Jsonl(j) => {
            let output_tokens = optional_output(check, j.output_tokens)?;
            let path = j.path.clone().ok_or_else(|| {
                check.bad("workload.path", "is required for a jsonl workload".into())
            })?;
            let prompts =
                read_jsonl(&path, output_tokens).map_err(|m| check.bad("workload.path", m))?;
            Ok(Workload::Jsonl { path, prompts })
        }
        WorkloadSpec::Prefix(p) => check_prefix(check, p),
        WorkloadSpec::Trace(t) => check_trace(check, t),
        WorkloadSpec::Conversation(c) => check_conversation(check, c),
        WorkloadSpec::Sharegpt(s) => check_sharegpt(check, s),
    }
}

fn check_range_ratio(check: &Checker, r: f64) -> Result<(), ProfileError> {
    if (0.0..1.0).contains(&r) {
        Ok(())
    } else {
        Err(check.bad(
            "workload.range_ratio",
            format!("{r} is out of range 0.0..1.0"),
        ))
    }
}

/// An optional `output_tokens`, checked.
fn optional_output(check: &Checker, o: Option<u32>) -> Result<Option<u32>, ProfileError> {
    o.map(|o| check.count("workload.output_tokens", o, 1..=1_000_000))
        .transpose()
}

fn required(
    check: &Checker,
    kind: WorkloadKind,
    field: &str,
    v: Option<u32>,
) -> Result<u32, ProfileError> {
    let v = v.ok_or_else(|| {
        check.bad(
            &format!("workload.{field}"),
            format!("is required for a {} workload", kind_name(kind)),
        )
    })?;
    check.count(&format!("workload.{field}"), v, 1..=1_000_000)
}

fn check_prefix(check: &Checker, w: &PrefixSpec) -> Result<Workload, ProfileError> {
    let k = WorkloadKind::Prefix;
    Ok(Workload::Prefix(PrefixWorkload {
        groups: required(check, k, "groups", w.groups)?,
        prefix_tokens: required(check, k, "prefix_tokens", w.prefix_tokens)?,
        suffix_tokens: required(check, k, "suffix_tokens", w.suffix_tokens)?,
        output_tokens: required(check, k, "output_tokens", w.output_tokens)?,
        calibrate: w.calibrate,
    }))
}

fn check_trace(check: &Checker, w: &TraceSpec) -> Result<Workload, ProfileError> {
    let path = w
        .path
        .clone()
        .ok_or_else(|| check.bad("workload.path", "is required for a trace workload".into()))?;
    let block_tokens = check.count(
        "workload.block_tokens",
        w.block_tokens.unwrap_or(512),
        1..=1_000_000,
    )?;
    for (field, v) in [
        ("workload.start_s", w.start_s),
        ("workload.duration_s", w.duration_s),
    ] {
        if let Some(v) = v {
            check.number(field, v, 0.0..=MAX_SECONDS, "seconds")?;
        }
    }
    if let Some(m) = w.max_requests {
        check.count("workload.max_requests", m, 1..=10_000_000)?;
    }
    if let Some(m) = w.max_input_tokens {
        check.count("workload.max_input_tokens", m, 1..=10_000_000)?;
    }
    let window = Window {
        start_s: w.start_s,
        duration_s: w.duration_s,
        max_requests: w.max_requests,
        max_input_tokens: w.max_input_tokens,
    };
    let t = trace::read(
        &path,
        w.format.unwrap_or_default(),
        block_tokens,
        &window,
        w.calibrate,
    )
    .map_err(|m| check.bad("workload.path", m))?;
    Ok(Workload::Trace(t))
}

fn check_conversation(check: &Checker, w: &ConversationSpec) -> Result<Workload, ProfileError> {
    use crate::define::requests::conversation::{ConversationSource, ConversationWorkload};
    let k = WorkloadKind::Conversation;
    check_range_ratio(check, w.range_ratio)?;
    let turns = required(check, k, "turns", w.turns)?;
    check.count("workload.turns", turns, 1..=10_000)?;
    let (given, given_file) = match w.source.unwrap_or_default() {
        ConversationSource::Synthetic => (None, None),
        ConversationSource::Sharegpt => {
            let (sessions, file) = sharegpt_sessions(check, w, turns)?;
            (Some(sessions), Some(file))
        }
    };
    let input_tokens = required(check, k, "input_tokens", w.input_tokens)?;
    let output_tokens = required(check, k, "output_tokens", w.output_tokens)?;
    let think_ms = w.think_time_ms.unwrap_or(0);
    check.count("workload.think_time_ms", think_ms, 0..=86_400_000)?;
    if let Some(c) = w.max_context_tokens {
        check.count("workload.max_context_tokens", c, 1..=100_000_000)?;
        // One turn alone must fit, at the top of its length range.
        let most = |l: u32| (f64::from(l) * (1.0 + w.range_ratio)).round() as u64;
        let one_turn = most(input_tokens) + most(output_tokens);
        if one_turn > u64::from(c) {
            return Err(check.bad(
                "workload.max_context_tokens",
                format!("{c} cannot hold even one turn ({one_turn} tokens of input_tokens + output_tokens at the top of range_ratio)"),
            ));
        }
    }
    Ok(Workload::Conversation(ConversationWorkload {
        turns,
        input_tokens,
        output_tokens,
        range_ratio: w.range_ratio,
        think_time: std::time::Duration::from_millis(think_ms),
        max_context_tokens: w.max_context_tokens,
        text: w.text,
        calibrate: w.calibrate,
        given,
        given_file,
    }))
}

/// Sessions' user messages, one list a session.
type GivenSessions = std::sync::Arc<Vec<Vec<String>>>;

/// Most ShareGPT conversations a conversation workload reads.
const SHAREGPT_SESSIONS: usize = 10_000;

/// ShareGPT's conversations as sessions: each one's human turns (at most `turns`),
/// in the order vLLM's sampler shuffles them with seed 0; conversations without a
/// human turn are skipped.
fn sharegpt_sessions(
    check: &Checker,
    w: &ConversationSpec,
    turns: u32,
) -> Result<(GivenSessions, (String, String)), ProfileError> {
    use crate::define::requests::sharegpt::{conversations_and_sha256, default_path};
    let path = match &w.path {
        Some(p) => p.clone(),
        None => default_path().map_err(|m| check.bad("workload.path", m))?,
    };
    let (all, sha256) = conversations_and_sha256(&path, 0, SHAREGPT_SESSIONS)
        .map_err(|m| check.bad("workload.path", m))?;
    // The name, not the path: reports of the same file on two machines compare.
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let sessions: Vec<Vec<String>> = all
        .into_iter()
        .map(|c| {
            c.into_iter()
                .filter(|t| t.from_human && !t.text.trim().is_empty())
                .take(turns as usize)
                .map(|t| t.text)
                .collect::<Vec<_>>()
        })
        .filter(|s| !s.is_empty())
        .collect();
    if sessions.is_empty() {
        return Err(check.bad(
            "workload.path",
            format!("{} has no conversation with a human turn", path.display()),
        ));
    }
    Ok((std::sync::Arc::new(sessions), (name, sha256)))
}

fn check_sharegpt(check: &Checker, w: &SharegptSpec) -> Result<Workload, ProfileError> {
    use crate::define::requests::sharegpt::{
        default_path, Params, ShareGptWorkload, TokenizerFile,
    };
    let d = Params::default();
    let limit = |field: &str, v: Option<u32>, default: u32| {
        check.count(
            &format!("workload.{field}"),
            v.unwrap_or(default),
            1..=10_000_000,
        )
    };
    let params = Params {
        num_prompts: limit("num_prompts", w.num_prompts, d.num_prompts)?,
        output_tokens: optional_output(check, w.output_tokens)?,
        max_input_tokens: limit("max_input_tokens", w.max_input_tokens, d.max_input_tokens)?,
        max_total_tokens: limit("max_total_tokens", w.max_total_tokens, d.max_total_tokens)?,
    };
    let path = match &w.path {
        Some(p) => p.clone(),
        None => default_path().map_err(|m| check.bad("workload.path", m))?,
    };
    let tokenizer = w
        .tokenizer
        .as_deref()
        .map(TokenizerFile::load)
        .transpose()
        .map_err(|m| check.bad("workload.tokenizer", m))?;
    let s = ShareGptWorkload::read(&path, params, tokenizer)
        .map_err(|m| check.bad("workload.path", m))?;
    Ok(Workload::ShareGpt(s))
}

/// The workload as the report documents it: the profile's table as written, plus
/// (under `facts`) the source's SHA-256, counts after selection, the expected
/// prefix-cache hit share. Two reports with the same description ran the same
/// requests.
pub(super) fn describe(
    spec: &WorkloadSpec,
    w: &Workload,
    requests_per_trial: u32,
) -> serde_json::Value {
    let mut v = serde_json::to_value(spec).unwrap_or_default();
    let facts = facts(w, requests_per_trial);
    if let (Some(map), false) = (
        v.as_object_mut(),
        facts.as_object().is_some_and(|f| f.is_empty()),
    ) {
        map.insert("facts".into(), facts);
    }
    v
}

fn facts(w: &Workload, requests_per_trial: u32) -> serde_json::Value {
    use serde_json::json;
    match w {
        Workload::Synthetic { .. } => json!({}),
        Workload::Jsonl { prompts, .. } => json!({"prompts": prompts.len()}),
        Workload::Prefix(p) => json!({
            "expected_prefix_hit_share": p.expected_hit_share(requests_per_trial),
        }),
        Workload::Trace(t) => json!({
            "sha256": t.sha256,
            "requests_in_file": t.total,
            "requests": t.requests.len(),
            "clipped": t.clipped,
            "duration_s": t.requests.last().map_or(0.0, |r| r.offset_ns as f64 / 1e9),
            "expected_prefix_hit_share": t.expected_hit_share(),
        }),
        Workload::Conversation(c) => match &c.given {
            None => json!({"source": "synthetic"}),
            Some(s) => json!({
                "source": "sharegpt",
                "file": c.given_file.as_ref().map(|f| &f.0),
                "sha256": c.given_file.as_ref().map(|f| &f.1),
                "sessions": s.len(),
                "mean_user_turns": s.iter().map(Vec::len).sum::<usize>() as f64 / s.len() as f64,
            }),
        },
        // The sample's counts join these once the first engine has taken it.
        Workload::ShareGpt(s) => s.facts(),
    }
}
