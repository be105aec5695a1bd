//! Fake but well-formed logprobs in vLLM's shapes.
//!
//! The sampled token is always the most likely: its logprob is in
//! `(-1.5, 0]`, and its alternatives (other vocabulary words) are strictly
//! less likely, all fixed by the text seed and the token's position. Shapes:
//! completions `{tokens, token_logprobs, top_logprobs, text_offset}`, chat
//! `{content: [{token, logprob, bytes, top_logprobs: [...]}]}`.

use serde_json::{json, Map, Value};

use crate::text;

/// One token's logprobs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TokenLogprob {
    /// The token's text as returned (a stop string may have cut it).
    pub token: String,
    /// `None` for the first echoed prompt token, which has no context.
    pub logprob: Option<f64>,
    /// The `count` most likely tokens, the sampled one first; empty when
    /// `logprob` is `None`.
    pub top: Vec<(String, f64)>,
    /// Offset of the token in the choice's text, in characters.
    pub offset: usize,
}

fn millis(x: u64) -> f64 {
    -(x as f64) / 1000.0
}

/// The logprobs of a token with text `piece` at `position`, with `count`
/// alternatives (the token itself first).
pub(crate) fn token(
    seed: u64,
    position: u64,
    piece: &str,
    count: usize,
    offset: usize,
) -> TokenLogprob {
    let h = text::mix(seed ^ text::mix(position ^ 0x0010_90b5));
    let sampled = h % 1500;
    let words = text::WORDS;
    let mut top = Vec::with_capacity(count);
    if count > 0 {
        top.push((piece.to_string(), millis(sampled)));
    }
    // Stepping by 3 visits every word (gcd(3, len) = 1), so these are distinct.
    let start = (h >> 20) as usize % words.len();
    let mut j = 0u64;
    for k in 1..words.len() {
        if top.len() >= count {
            break;
        }
        let w = words[(start + 3 * k) % words.len()];
        let alt = format!(" {w}");
        if alt == piece {
            continue;
        }
        j += 1;
        let worse = sampled + 750 * j + text::mix(h ^ j) % 500;
        top.push((alt, millis(worse)));
    }
    TokenLogprob {
        token: piece.to_string(),
        logprob: Some(millis(sampled)),
        top,
        offset,
    }
}

/// Logprobs of an echoed prompt: one entry per prompt token, the first
/// without a logprob (vLLM's `null`).
pub(crate) fn prompt(prompt: &str, seed: u64, count: usize) -> Vec<TokenLogprob> {
    let mut out = Vec::new();
    let mut chars = 0;
    let mut last = 0;
    for piece in text::split(prompt) {
        // `split` returns subslices of `prompt`.
        let at = piece.as_ptr() as usize - prompt.as_ptr() as usize;
        chars += prompt[last..at].chars().count();
        last = at;
        let position = out.len() as u64;
        let mut t = token(seed ^ 0x9707, position, piece, count, chars);
        if position == 0 {
            t.logprob = None;
            t.top.clear();
        }
        out.push(t);
    }
    out
}

/// The completions shape.
pub(crate) fn completion_json(tokens: &[TokenLogprob]) -> Value {
    let top: Vec<Value> = tokens
        .iter()
        .map(|t| match t.logprob {
            None => Value::Null,
            Some(_) => Value::Object(
                t.top
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect::<Map<_, _>>(),
            ),
        })
        .collect();
    json!({
        "tokens": tokens.iter().map(|t| t.token.as_str()).collect::<Vec<_>>(),
        "token_logprobs": tokens.iter().map(|t| t.logprob).collect::<Vec<_>>(),
        "top_logprobs": top,
        "text_offset": tokens.iter().map(|t| t.offset).collect::<Vec<_>>(),
    })
}

/// The chat shape.
pub(crate) fn chat_json(tokens: &[TokenLogprob]) -> Value {
    let entry = |token: &str, logprob: f64| json!({"token": token, "logprob": logprob, "bytes": token.as_bytes()});
    let content: Vec<Value> = tokens
        .iter()
        .map(|t| {
            let mut v = entry(&t.token, t.logprob.unwrap_or(0.0));
            v["top_logprobs"] = t.top.iter().map(|(k, lp)| entry(k, *lp)).collect();
            v
        })
        .collect();
    json!({ "content": content })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_token_is_the_most_likely_and_alternatives_are_distinct() {
        for position in 0..50 {
            let t = token(7, position, " lorem", 20, 0);
            assert_eq!(t.top.len(), 20);
            assert_eq!(t.top[0], (" lorem".to_string(), t.logprob.unwrap()));
            let mut names: Vec<&String> = t.top.iter().map(|(k, _)| k).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), 20);
            assert!(t.top.windows(2).all(|w| w[0].1 > w[1].1), "{:?}", t.top);
            assert!(t.top.iter().all(|(_, lp)| *lp <= 0.0));
        }
        assert!(token(7, 0, " x", 0, 0).top.is_empty());
        assert_eq!(token(7, 3, " x", 4, 0), token(7, 3, " x", 4, 0));
    }

    #[test]
    fn echoed_prompt_has_offsets_and_a_null_first_logprob() {
        let p = prompt("héllo,  world", 1, 2);
        let tokens: Vec<&str> = p.iter().map(|t| t.token.as_str()).collect();
        assert_eq!(tokens, ["héllo", ",", "world"]);
        let offsets: Vec<usize> = p.iter().map(|t| t.offset).collect();
        assert_eq!(offsets, [0, 5, 8]);
        assert_eq!(p[0].logprob, None);
        let v = completion_json(&p);
        assert!(v["token_logprobs"][0].is_null() && v["top_logprobs"][0].is_null());
        assert_eq!(v["top_logprobs"][1].as_object().unwrap().len(), 2);
        let c = chat_json(&p[1..]);
        assert_eq!(c["content"][0]["bytes"], json!([44]));
        assert_eq!(c["content"][0]["top_logprobs"].as_array().unwrap().len(), 2);
    }
}
