//! Response bodies in vLLM's shapes, built as strings (this runs once per
//! streamed chunk, so it avoids building JSON trees).

use bytes::Bytes;
use serde_json::{json, Value};

use super::openai::Endpoint;

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

    fn finish(mut s: String, probe: Option<Probe>) -> Bytes {
        if let Some(p) = probe {
            s.push_str(&format!(
                ",\"goodput_probe_ns\":{},\"goodput_sched_ns\":{}",
                p.sent_ns, p.scheduled_ns
            ));
        }
        s.push_str("}\n\n");
        Bytes::from(s)
    }

    /// `data: {...}\n\n` carrying `text`.
    pub fn token_chunk(
        &self,
        text: &str,
        first: bool,
        finish_reason: Option<&str>,
        no_choices: bool,
        probe: Option<Probe>,
    ) -> Bytes {
        let mut s = String::with_capacity(self.head.len() + text.len() + 160);
        s.push_str("data: ");
        s.push_str(&self.head);
        if !no_choices {
            let finish = finish_reason.map_or("null".to_string(), json_str);
            match self.endpoint {
                Endpoint::Completions => s.push_str(&format!(
                    ",\"choices\":[{{\"index\":0,\"text\":{},\"logprobs\":null,\
                     \"finish_reason\":{finish},\"stop_reason\":null}}]",
                    json_str(text)
                )),
                Endpoint::Chat => {
                    let role = if first { "\"role\":\"assistant\"," } else { "" };
                    s.push_str(&format!(
                        ",\"choices\":[{{\"index\":0,\"delta\":{{{role}\"content\":{}}},\
                         \"logprobs\":null,\"finish_reason\":{finish}}}]",
                        json_str(text)
                    ));
                }
            }
        }
        Self::finish(s, probe)
    }

    /// The final usage chunk (`"choices": []`).
    pub fn usage_chunk(&self, prompt: u64, completion: u64, probe: Option<Probe>) -> Bytes {
        let mut s = String::from("data: ");
        s.push_str(&self.head);
        s.push_str(&format!(
            ",\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt},\"total_tokens\":{},\
             \"completion_tokens\":{completion}}}",
            prompt + completion
        ));
        Self::finish(s, probe)
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
        text: &str,
        finish_reason: &str,
        prompt: u64,
        completion: u64,
        no_choices: bool,
    ) -> Value {
        let (object, choice) = match self.endpoint {
            Endpoint::Completions => (
                "text_completion",
                json!({"index": 0, "text": text, "logprobs": null,
                       "finish_reason": finish_reason, "stop_reason": null,
                       "prompt_logprobs": null}),
            ),
            Endpoint::Chat => (
                "chat.completion",
                json!({"index": 0,
                       "message": {"role": "assistant", "content": text, "tool_calls": []},
                       "logprobs": null, "finish_reason": finish_reason,
                       "stop_reason": null}),
            ),
        };
        let mut v = json!({
            "id": self.id,
            "object": object,
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": {"prompt_tokens": prompt, "total_tokens": prompt + completion,
                      "completion_tokens": completion, "prompt_tokens_details": null},
        });
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

    #[test]
    fn completion_chunk_shape() {
        let f = ChunkFormat::new(Endpoint::Completions, "cmpl-1".into(), 5, "m\"x");
        let v = parse(&f.token_chunk(" a b", true, None, false, None));
        assert_eq!(v["object"], "text_completion");
        assert_eq!(v["model"], "m\"x");
        assert_eq!(v["choices"][0]["text"], " a b");
        assert!(v["choices"][0]["finish_reason"].is_null());
        let v = parse(&f.usage_chunk(
            3,
            4,
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

    #[test]
    fn chat_chunk_shape() {
        let f = ChunkFormat::new(Endpoint::Chat, "chatcmpl-1".into(), 5, "m");
        let v = parse(&f.token_chunk(" a", true, Some("length"), false, None));
        assert_eq!(v["object"], "chat.completion.chunk");
        assert_eq!(v["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(v["choices"][0]["delta"]["content"], " a");
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        let v = parse(&f.token_chunk(" a", false, None, true, None));
        assert!(v.get("choices").is_none());
        let full = f.full_response(" a", "stop", 1, 1, false);
        assert_eq!(full["object"], "chat.completion");
        assert_eq!(full["choices"][0]["message"]["content"], " a");
    }
}
