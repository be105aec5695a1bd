//! Response bodies in vLLM's shapes, built as strings (this runs once per
//! streamed chunk, so it avoids building JSON trees).

use std::io::Write as _;

use bytes::Bytes;
use serde_json::{json, Value};

use super::plan::Endpoint;

/// One choice's part of a streamed chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkChoice<'a> {
    /// `choices[0].index`.
    pub index: u32,
    /// The text (chat: `delta.content`).
    pub text: &'a str,
    /// Chat: thinking text (`delta.reasoning`), empty for an answer's chunk.
    pub reasoning: &'a str,
    /// The choice's first chunk (chat: carries the role).
    pub first: bool,
    /// Set on the choice's last chunk.
    pub finish_reason: Option<&'a str>,
    /// The matched stop string, on the last chunk.
    pub stop_reason: Option<&'a str>,
    /// Logprobs of the chunk's tokens, when asked for.
    pub logprobs: Option<&'a Value>,
    /// `usage` on every chunk (`stream_options.continuous_usage_stats`, as vLLM
    /// sends it): prompt tokens and the completion tokens streamed so far.
    pub usage: Option<Usage>,
    /// Chat: a piece of a tool call (`delta.tool_calls`) instead of `content`.
    pub tool: Option<ToolPiece<'a>>,
}

/// A piece of a streamed tool call: the first carries the call's id, type and
/// name, every one a piece of its arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolPiece<'a> {
    /// The call's first piece.
    pub first: bool,
    /// The function's name.
    pub name: &'a str,
    /// The call's id (`call_...`).
    pub id: &'a str,
    /// This piece of the arguments.
    pub arguments: &'a str,
}

/// `usage`: prompt tokens, completion tokens, and of them reasoning tokens
/// (`completion_tokens_details.reasoning_tokens`, written when not 0).
pub(crate) type Usage = (u64, u64, u64);

/// One choice of a non-streaming response.
#[derive(Debug, Clone)]
pub(crate) struct FullChoice {
    /// `choices[].index`.
    pub index: u32,
    /// Text (chat: `message.content`).
    pub text: String,
    /// Chat: thinking text (`message.reasoning`, left out when empty).
    pub reasoning: String,
    /// `length` or `stop`.
    pub finish_reason: &'static str,
    /// The matched stop string.
    pub stop_reason: Option<String>,
    /// Logprobs, when asked for.
    pub logprobs: Option<Value>,
}

/// Per-request constants of every chunk.
#[derive(Debug, Clone)]
pub(crate) struct ChunkFormat {
    endpoint: Endpoint,
    /// `{"id":"...","object":"...","created":N,"model":"..."` (no closing brace).
    head: String,
    id: String,
    created: u64,
    model: String,
}

/// Probe timestamps added to a chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe {
    /// CLOCK_MONOTONIC ns just before the chunk is handed to the connection.
    pub sent_ns: u64,
    /// CLOCK_MONOTONIC ns the chunk was scheduled for.
    pub scheduled_ns: u64,
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// `s` as a JSON string (serde_json's escaping), appended to `b`.
fn push_json_str(b: &mut Vec<u8>, s: &str) {
    if serde_json::to_writer(&mut *b, s).is_err() {
        b.extend_from_slice(b"\"\"");
    }
}

/// `s` as a JSON string, or `null`.
fn push_json_or_null(b: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => push_json_str(b, s),
        None => b.extend_from_slice(b"null"),
    }
}

impl ChunkFormat {
    pub fn new(endpoint: Endpoint, id: String, created: u64, model: &str) -> ChunkFormat {
        let object = match endpoint {
            Endpoint::Completions => "text_completion",
            Endpoint::Chat => "chat.completion.chunk",
        };
        let head = format!(
            "{{\"id\":{},\"object\":\"{object}\",\"created\":{created},\"model\":{}",
            json_str(&id),
            json_str(model)
        );
        ChunkFormat {
            endpoint,
            head,
            id,
            created,
            model: model.to_string(),
        }
    }

    /// The response's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Closes a chunk: the probe's fields, when on, and `}\n\n`.
    fn finish(mut b: Vec<u8>, probe: Option<Probe>) -> Bytes {
        if let Some(p) = probe {
            let _ = write!(
                b,
                ",\"goodput_probe_ns\":{},\"goodput_sched_ns\":{}",
                p.sent_ns, p.scheduled_ns
            );
        }
        b.extend_from_slice(b"}\n\n");
        Bytes::from(b)
    }

    /// `data: {...}\n\n` carrying one choice's text.
    ///
    /// Written into one buffer (one allocation per chunk): this runs for every
    /// chunk, on the thread that also writes them.
    pub fn token_chunk(&self, c: &ChunkChoice, no_choices: bool, probe: Option<Probe>) -> Bytes {
        let mut b = Vec::with_capacity(self.head.len() + c.text.len() + c.reasoning.len() + 200);
        b.extend_from_slice(b"data: ");
        b.extend_from_slice(self.head.as_bytes());
        if !no_choices {
            let _ = write!(b, ",\"choices\":[{{\"index\":{}", c.index);
            match self.endpoint {
                Endpoint::Completions => {
                    b.extend_from_slice(b",\"text\":");
                    push_json_str(&mut b, c.text);
                    Self::push_logprobs_finish(&mut b, c);
                    b.extend_from_slice(b",\"stop_reason\":");
                    push_json_or_null(&mut b, c.stop_reason);
                }
                Endpoint::Chat => {
                    b.extend_from_slice(b",\"delta\":{");
                    if c.first {
                        b.extend_from_slice(b"\"role\":\"assistant\",");
                    }
                    Self::push_delta(&mut b, c);
                    b.push(b'}');
                    Self::push_logprobs_finish(&mut b, c);
                    // vLLM sets `stop_reason` on chat chunks only when finishing;
                    // it is left out unless a stop string matched.
                    if let Some(r) = c.stop_reason {
                        b.extend_from_slice(b",\"stop_reason\":");
                        push_json_str(&mut b, r);
                    }
                }
            }
            b.extend_from_slice(b"}]");
        }
        if let Some(usage) = c.usage {
            Self::push_usage(&mut b, usage);
        }
        Self::finish(b, probe)
    }

    /// `,"logprobs":...,"finish_reason":...`.
    fn push_logprobs_finish(b: &mut Vec<u8>, c: &ChunkChoice) {
        b.extend_from_slice(b",\"logprobs\":");
        match c.logprobs {
            Some(v) => {
                let _ = serde_json::to_writer(&mut *b, v);
            }
            None => b.extend_from_slice(b"null"),
        }
        b.extend_from_slice(b",\"finish_reason\":");
        push_json_or_null(b, c.finish_reason);
    }

    /// A chat delta's text fields: `"content"`, or vLLM's `"reasoning"` while the
    /// model thinks (both in the chunk where thinking turns into the answer).
    fn push_delta(b: &mut Vec<u8>, c: &ChunkChoice) {
        if !c.reasoning.is_empty() {
            b.extend_from_slice(b"\"reasoning\":");
            push_json_str(b, c.reasoning);
            if c.text.is_empty() && c.tool.is_none() {
                return;
            }
            b.push(b',');
        }
        if let Some(t) = c.tool {
            b.extend_from_slice(b"\"tool_calls\":[{\"index\":0,");
            if t.first {
                b.extend_from_slice(b"\"id\":");
                push_json_str(b, t.id);
                b.extend_from_slice(b",\"type\":\"function\",\"function\":{\"name\":");
                push_json_str(b, t.name);
                b.push(b',');
            } else {
                b.extend_from_slice(b"\"function\":{");
            }
            b.extend_from_slice(b"\"arguments\":");
            push_json_str(b, t.arguments);
            b.extend_from_slice(b"}}]");
            return;
        }
        b.extend_from_slice(b"\"content\":");
        push_json_str(b, c.text);
    }

    /// `,"usage":{...}`.
    fn push_usage(b: &mut Vec<u8>, (prompt, completion, reasoning): Usage) {
        let _ = write!(
            b,
            ",\"usage\":{{\"prompt_tokens\":{prompt},\"total_tokens\":{},\
             \"completion_tokens\":{completion}",
            prompt + completion
        );
        if reasoning > 0 {
            let _ = write!(
                b,
                ",\"completion_tokens_details\":{{\"reasoning_tokens\":{reasoning}}}"
            );
        }
        b.push(b'}');
    }

    /// The final usage chunk (`"choices": []`).
    pub fn usage_chunk(&self, usage: Usage, probe: Option<Probe>) -> Bytes {
        let mut b = Vec::with_capacity(self.head.len() + 256);
        b.extend_from_slice(b"data: ");
        b.extend_from_slice(self.head.as_bytes());
        b.extend_from_slice(b",\"choices\":[]");
        Self::push_usage(&mut b, usage);
        Self::finish(b, probe)
    }

    /// A chunk that is not valid JSON (fault injection).
    pub fn malformed_chunk(&self) -> Bytes {
        Bytes::from(format!(
            "data: {},\"choices\":[{{\"index\":0,\"text\n\n",
            self.head
        ))
    }

    /// The non-streaming response.
    pub fn full_response(
        &self,
        choices: &[FullChoice],
        (prompt, completion, reasoning): Usage,
        no_choices: bool,
    ) -> Value {
        let object = match self.endpoint {
            Endpoint::Completions => "text_completion",
            Endpoint::Chat => "chat.completion",
        };
        let choices: Vec<Value> = choices
            .iter()
            .map(|c| match self.endpoint {
                Endpoint::Completions => json!({"index": c.index, "text": c.text,
                       "logprobs": c.logprobs, "finish_reason": c.finish_reason,
                       "stop_reason": c.stop_reason, "prompt_logprobs": null}),
                Endpoint::Chat => {
                    let mut v = json!({"index": c.index,
                       "message": {"role": "assistant", "content": c.text, "tool_calls": []},
                       "logprobs": c.logprobs, "finish_reason": c.finish_reason,
                       "stop_reason": c.stop_reason});
                    if !c.reasoning.is_empty() {
                        v["message"]["reasoning"] = json!(c.reasoning);
                    }
                    v
                }
            })
            .collect();
        let mut v = json!({
            "id": self.id,
            "object": object,
            "created": self.created,
            "model": self.model,
            "choices": choices,
            "usage": {"prompt_tokens": prompt, "total_tokens": prompt + completion,
                      "completion_tokens": completion, "prompt_tokens_details": null},
        });
        if reasoning > 0 {
            v["usage"]["completion_tokens_details"] = json!({"reasoning_tokens": reasoning});
        }
        if no_choices {
            if let Some(o) = v.as_object_mut() {
                o.remove("choices");
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(b: &Bytes) -> Value {
        let s = std::str::from_utf8(b).unwrap();
        let s = s
            .strip_prefix("data: ")
            .unwrap()
            .strip_suffix("\n\n")
            .unwrap();
        serde_json::from_str(s).unwrap()
    }

    fn choice<'a>(
        index: u32,
        text: &'a str,
        first: bool,
        finish: Option<&'a str>,
    ) -> ChunkChoice<'a> {
        ChunkChoice {
            index,
            text,
            reasoning: "",
            first,
            finish_reason: finish,
            stop_reason: None,
            logprobs: None,
            usage: None,
            tool: None,
        }
    }

    /// The default chunk (one prompt, n = 1) is what goodput's client reads:
    /// its bytes must not change.
    #[test]
    fn default_chunks_keep_their_bytes() {
        let f = ChunkFormat::new(Endpoint::Completions, "cmpl-1".into(), 5, "m");
        let b = f.token_chunk(&choice(0, " a", true, Some("length")), false, None);
        assert_eq!(
            std::str::from_utf8(&b).unwrap(),
            "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":5,\"model\":\"m\",\
             \"choices\":[{\"index\":0,\"text\":\" a\",\"logprobs\":null,\"finish_reason\":\"length\",\
             \"stop_reason\":null}]}\n\n"
        );
        let f = ChunkFormat::new(Endpoint::Chat, "chatcmpl-1".into(), 5, "m");
        let b = f.token_chunk(&choice(0, " a", true, None), false, None);
        assert_eq!(
            std::str::from_utf8(&b).unwrap(),
            "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":5,\
             \"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\
             \"content\":\" a\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
        );
    }

    /// `continuous_usage_stats` (GuideLLM sends it): `usage` on every token chunk,
    /// counting the completion tokens so far, as vLLM does.
    #[test]
    fn continuous_usage_rides_on_each_token_chunk() {
        for endpoint in [Endpoint::Completions, Endpoint::Chat] {
            let f = ChunkFormat::new(endpoint, "x".into(), 5, "m");
            let c = ChunkChoice {
                usage: Some((12, 3, 0)),
                ..choice(0, " a", false, None)
            };
            let v = parse(&f.token_chunk(&c, false, None));
            assert_eq!(v["usage"]["prompt_tokens"], 12);
            assert_eq!(v["usage"]["completion_tokens"], 3);
            assert_eq!(v["usage"]["total_tokens"], 15);
            let v = parse(&f.token_chunk(&choice(0, " a", false, None), false, None));
            assert!(v.get("usage").is_none());
        }
    }

    #[test]
    fn choice_index_stop_reason_and_logprobs_are_carried() {
        let lp = json!({"content": []});
        for endpoint in [Endpoint::Completions, Endpoint::Chat] {
            let f = ChunkFormat::new(endpoint, "x".into(), 5, "m");
            let c = ChunkChoice {
                stop_reason: Some("END"),
                logprobs: Some(&lp),
                ..choice(3, " a", false, Some("stop"))
            };
            let v = parse(&f.token_chunk(&c, false, None));
            assert_eq!(v["choices"][0]["index"], 3);
            assert_eq!(v["choices"][0]["stop_reason"], "END");
            assert_eq!(v["choices"][0]["logprobs"], lp);
        }
    }

    #[test]
    fn completion_chunk_shape() {
        let f = ChunkFormat::new(Endpoint::Completions, "cmpl-1".into(), 5, "m\"x");
        let v = parse(&f.token_chunk(&choice(0, " a b", true, None), false, None));
        assert_eq!(v["object"], "text_completion");
        assert_eq!(v["model"], "m\"x");
        assert_eq!(v["choices"][0]["text"], " a b");
        assert!(v["choices"][0]["finish_reason"].is_null());
        let v = parse(&f.usage_chunk(
            (3, 4, 0),
            Some(Probe {
                sent_ns: 9,
                scheduled_ns: 8,
            }),
        ));
        assert_eq!(v["choices"], json!([]));
        assert_eq!(v["usage"]["total_tokens"], 7);
        assert_eq!(v["goodput_probe_ns"], 9);
        let bad = f.malformed_chunk();
        let s = std::str::from_utf8(&bad).unwrap();
        assert!(serde_json::from_str::<Value>(&s[6..]).is_err());
    }

    /// Thinking as vLLM streams it: `delta.reasoning`, then `delta.content`, and
    /// the reasoning tokens in the usage details.
    #[test]
    fn reasoning_chunks_and_usage_details() {
        let f = ChunkFormat::new(Endpoint::Chat, "chatcmpl-1".into(), 5, "m");
        let think = ChunkChoice {
            reasoning: " hm",
            ..choice(0, "", false, None)
        };
        let v = parse(&f.token_chunk(&think, false, None));
        assert_eq!(v["choices"][0]["delta"], json!({"reasoning": " hm"}));
        let both = ChunkChoice {
            reasoning: " hm",
            ..choice(0, " a", false, None)
        };
        let v = parse(&f.token_chunk(&both, false, None));
        assert_eq!(
            v["choices"][0]["delta"],
            json!({"reasoning": " hm", "content": " a"})
        );
        let v = parse(&f.usage_chunk((3, 9, 5), None));
        assert_eq!(
            v["usage"]["completion_tokens_details"]["reasoning_tokens"],
            5
        );
        let v = parse(&f.usage_chunk((3, 9, 0), None));
        assert!(v["usage"].get("completion_tokens_details").is_none());
    }

    #[test]
    fn chat_chunk_shape() {
        let f = ChunkFormat::new(Endpoint::Chat, "chatcmpl-1".into(), 5, "m");
        let v = parse(&f.token_chunk(&choice(0, " a", true, Some("length")), false, None));
        assert_eq!(v["object"], "chat.completion.chunk");
        assert_eq!(v["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(v["choices"][0]["delta"]["content"], " a");
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        assert!(v["choices"][0].get("stop_reason").is_none());
        let v = parse(&f.token_chunk(&choice(0, " a", false, None), true, None));
        assert!(v.get("choices").is_none());
        let full = f.full_response(
            &[FullChoice {
                index: 0,
                text: " a".into(),
                reasoning: String::new(),
                finish_reason: "stop",
                stop_reason: None,
                logprobs: None,
            }],
            (1, 1, 0),
            false,
        );
        assert_eq!(full["object"], "chat.completion");
        assert_eq!(full["choices"][0]["message"]["content"], " a");
    }
}
