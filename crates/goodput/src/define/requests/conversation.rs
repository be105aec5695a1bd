//! `kind = "conversation"`: multi-turn chat sessions. A session has `turns` user
//! messages; each turn's request carries the whole history, the engine's actual
//! replies to the earlier turns included, so its bodies are made during the trial,
//! between a reply and the next turn (inside the think time, outside any timing).
//!
//! A session's user messages come from a [`Sessions`] source: generated from the
//! trial's seed (`source = "synthetic"`), or given as lists of texts (what a dataset
//! of real conversations provides).
//!
//! The history is sent as a chat `messages` list (`api = "chat"`); for
//! `api = "completions"` it is one prompt, `User: ...\n\nAssistant: ...` turn after
//! turn, ending with `Assistant:`.
//!
//! Context: with a context size (`max_context_tokens`, or the engine's
//! `max_model_len`), a turn whose history would not fit with its message and its
//! reply drops the session's oldest turns first; the record counts the dropped turns
//! ([`crate::drive::record::RequestRecord::context_cut_turns`]) and the report the sessions
//! cut. A history's size is the engine's own count where it reported one
//! (`usage.prompt_tokens` of the turn before, plus the reply's tokens), else the
//! planned lengths.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::json;

use super::text::{block_text, draw_len, synthetic_text};
use super::{Asked, Builder, Prepared};
use crate::define::profile::{Api, TextStyle};

pub use crate::define::profile::ConversationSource;

/// The validated conversation workload.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationWorkload {
    /// User messages per session.
    pub turns: u32,
    /// Tokens of each user message (centre of the range).
    pub input_tokens: u32,
    /// Tokens of each reply, asked exactly (centre of the range).
    pub output_tokens: u32,
    /// Relative spread of both lengths.
    pub range_ratio: f64,
    /// Between a reply's end and the next turn's send.
    pub think_time: Duration,
    /// The engine's context, when the profile gives it.
    pub max_context_tokens: Option<u32>,
    /// Style of the generated text.
    pub text: TextStyle,
    /// Calibrate words to tokens through `/tokenize`.
    pub calibrate: bool,
    /// `source = "sharegpt"`: the sessions' user messages, read when the profile
    /// was checked (`None`: synthetic).
    pub given: Option<Arc<Vec<Vec<String>>>>,
    /// Where the given sessions came from: the file's name and SHA-256.
    pub given_file: Option<(String, String)>,
}

/// The user messages of a trial's sessions.
#[derive(Debug, Clone)]
pub enum Sessions {
    /// Generated from the trial's key, session by session (none is held).
    Synthetic {
        /// The trial's seed.
        key: u64,
        /// The lengths and text style.
        workload: ConversationWorkload,
    },
    /// Given sessions (a dataset's human turns), one list of messages each, used in
    /// order and from the first again when they run out; every reply asks for
    /// `output_tokens`.
    Given {
        /// The sessions' user messages.
        sessions: Arc<Vec<Vec<String>>>,
        /// Tokens asked for every reply.
        output_tokens: u32,
    },
}

/// One user message and what its turn asks for.
#[derive(Debug, Clone, Default)]
struct UserTurn {
    text: String,
    /// Planned tokens of the message.
    tokens: u32,
    /// Tokens asked for the reply.
    max_tokens: u32,
}

/// A trial's conversations: what each session says, and how its requests are made.
#[derive(Debug, Clone)]
pub struct Conversations {
    /// Requests the trial may send, all sessions together.
    pub requests: u32,
    /// Between a reply's end and the next turn.
    pub think_time: Duration,
    /// Context size a request must fit in, when known.
    pub max_context_tokens: Option<u32>,
    sessions: Sessions,
    builder: Builder,
}

impl Conversations {
    /// Conversations of `requests` requests in all, from `sessions`, with bodies made
    /// by `builder`.
    pub fn new(builder: Builder, sessions: Sessions, requests: u32, think_time: Duration) -> Self {
        let max_context_tokens = match &sessions {
            Sessions::Synthetic { workload, .. } => workload.max_context_tokens,
            Sessions::Given { .. } => None,
        };
        Conversations {
            requests,
            think_time,
            max_context_tokens,
            sessions,
            builder,
        }
    }

    /// Session `id` (0-based), before its first turn.
    pub fn session(&self, id: u32) -> Session {
        let turns = match &self.sessions {
            Sessions::Synthetic { key, workload: w } => {
                let mut rng = StdRng::seed_from_u64(
                    key ^ (u64::from(id) + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93),
                );
                (0..w.turns)
                    .map(|_| {
                        let tokens = draw_len(&mut rng, w.input_tokens, w.range_ratio);
                        let max_tokens = draw_len(&mut rng, w.output_tokens, w.range_ratio);
                        let text = synthetic_text(&mut rng, self.builder.words(tokens), w.text);
                        UserTurn {
                            text,
                            tokens,
                            max_tokens,
                        }
                    })
                    .collect()
            }
            Sessions::Given {
                sessions,
                output_tokens,
            } => {
                let given = match sessions.len() {
                    0 => &[][..],
                    n => &sessions[id as usize % n][..],
                };
                given
                    .iter()
                    .map(|text| UserTurn {
                        text: text.clone(),
                        tokens: ((text.split_whitespace().count() as f64)
                            * self.builder.tokens_per_word)
                            .round() as u32,
                        max_tokens: *output_tokens,
                    })
                    .collect()
            }
        };
        Session {
            id,
            turns,
            next: 0,
            history: VecDeque::new(),
            cut: 0,
            in_flight: None,
        }
    }
}

/// One answered turn of a session's history.
#[derive(Debug, Clone)]
struct Exchange {
    user: String,
    reply: String,
    /// Tokens the turn adds to the history (its message, the reply, the template).
    tokens: u64,
}

/// What a sent turn's exchange told the session: built by the load from the
/// request's record (the reply's text taken out of it, which keeps none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// The request succeeded.
    pub ok: bool,
    /// The generated text (bounded), when kept.
    pub reply: Option<String>,
    /// The engine's count of the prompt (template included), when it said.
    pub prompt_tokens: Option<u64>,
    /// Tokens generated (the engine's count, else the chunks).
    pub completion_tokens: u64,
}

/// The request of a session's next turn.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    /// Its body and what it asks.
    pub prepared: Prepared,
    /// Earlier turns dropped from the session's history so far to fit the context.
    pub context_cut_turns: u32,
}

/// A session in progress: its turns to come and its history.
#[derive(Debug)]
pub struct Session {
    /// The session's index in its trial.
    pub id: u32,
    turns: Vec<UserTurn>,
    next: usize,
    history: VecDeque<Exchange>,
    cut: u32,
    /// The turn sent last, and the history tokens it carried.
    in_flight: Option<(UserTurn, u64)>,
}

impl Session {
    /// Turns the session has in all.
    pub fn turns(&self) -> u32 {
        self.turns.len() as u32
    }

    /// The next turn's request, its history cut to fit the context; `None` when the
    /// session has said everything.
    pub fn next_request(&mut self, conv: &Conversations) -> Option<TurnRequest> {
        let turn = std::mem::take(self.turns.get_mut(self.next)?);
        let index = self.next as u32;
        self.next += 1;
        let own = u64::from(turn.tokens) + u64::from(turn.max_tokens);
        if let Some(limit) = conv.max_context_tokens {
            while !self.history.is_empty() && self.history_tokens() + own > u64::from(limit) {
                self.history.pop_front();
                self.cut += 1;
            }
        }
        let shared = self.history_tokens();
        let body = conv
            .builder
            .conversation_body(&self.history, &turn.text, turn.max_tokens);
        let asked = Asked {
            max_tokens: Some(turn.max_tokens),
            input_tokens: Some(u32::try_from(shared + u64::from(turn.tokens)).unwrap_or(u32::MAX)),
            shared_tokens: Some(u32::try_from(shared).unwrap_or(u32::MAX)),
            session: Some(self.id),
            turn: Some(index),
            exact: true,
            // The plan refuses tools in conversations (a tool call's turn would
            // need a tool's result).
            tools: None,
            tools_offered: 0,
            images: None,
            inputs: None,
        };
        self.in_flight = Some((turn, shared));
        Some(TurnRequest {
            prepared: Prepared {
                body: Bytes::from(body.to_string()),
                asked,
                // The plan refuses adapters in conversations.
                adapter: None,
            },
            context_cut_turns: self.cut,
        })
    }

    /// The sent turn's outcome: a reply joins the history; a failed turn ends the
    /// session (`false`), as its reply, which the next turn would carry, is unknown.
    pub fn answered(&mut self, answer: Answer) -> bool {
        let Some((turn, sent_history)) = self.in_flight.take() else {
            return false;
        };
        let Answer {
            ok,
            reply,
            prompt_tokens,
            completion_tokens,
        } = answer;
        if !ok {
            return false;
        }
        // The engine's count of the prompt covers the template too.
        let prompt = match prompt_tokens {
            Some(p) if p > sent_history => p - sent_history,
            _ => u64::from(turn.tokens),
        };
        self.history.push_back(Exchange {
            user: turn.text,
            reply: reply.unwrap_or_default(),
            tokens: prompt + completion_tokens,
        });
        true
    }

    /// The prediction's stand-in for an answer: a reply of `max_tokens` generated
    /// words.
    fn assume_reply(&mut self, key: u64) {
        if let Some((turn, _)) = self.in_flight.take() {
            let words = turn.max_tokens as usize;
            self.history.push_back(Exchange {
                reply: block_text(key, words),
                tokens: u64::from(turn.tokens) + u64::from(turn.max_tokens),
                user: turn.text,
            });
        }
    }

    fn history_tokens(&self) -> u64 {
        self.history.iter().map(|e| e.tokens).sum()
    }
}

impl Builder {
    /// The conversations of a trial of `n` requests (`None` for other kinds),
    /// deterministic in (`seed`, `sample`) as [`Builder::build`] is.
    pub fn conversations(&self, n: u32, seed: u64, sample: u64) -> Option<Conversations> {
        let super::super::plan::Workload::Conversation(w) = &self.workload else {
            return None;
        };
        let key = seed ^ sample.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let sessions = match &w.given {
            Some(given) => Sessions::Given {
                sessions: given.clone(),
                output_tokens: w.output_tokens,
            },
            None => Sessions::Synthetic {
                key,
                workload: w.clone(),
            },
        };
        let mut c = Conversations::new(self.clone(), sessions, n, w.think_time);
        // Given sessions are cut to the same context as generated ones.
        c.max_context_tokens = w.max_context_tokens;
        Some(c)
    }

    /// The body of a turn: the history, then the new message.
    fn conversation_body(
        &self,
        history: &VecDeque<Exchange>,
        user: &str,
        max_tokens: u32,
    ) -> serde_json::Value {
        let body = match self.api {
            Api::Chat => {
                let mut messages = Vec::with_capacity(2 * history.len() + 1);
                for e in history {
                    messages.push(json!({"role": "user", "content": e.user}));
                    messages.push(json!({"role": "assistant", "content": e.reply}));
                }
                messages.push(json!({"role": "user", "content": user}));
                json!({"model": self.model, "messages": messages})
            }
            // The plan gives embeddings engines synthetic workloads only.
            Api::Completions | Api::Embeddings => {
                let mut prompt = String::new();
                for e in history {
                    prompt.push_str(&format!("User: {}\n\nAssistant: {}\n\n", e.user, e.reply));
                }
                prompt.push_str(&format!("User: {user}\n\nAssistant:"));
                json!({"model": self.model, "prompt": prompt})
            }
        };
        self.finish_body(body, Some(max_tokens), true)
    }
}

/// A conversation workload without `max_context_tokens` takes the engine's context
/// size, `max_model_len` as its `/v1/models` listed it when the engine became
/// ready (vLLM and the simulator list it), and the report says which was used;
/// other kinds are left alone. Returns the notice that says which (`None` for
/// other kinds); the caller keeps it.
pub fn set_engine_context(
    builder: &mut Builder,
    max_model_len: Option<u32>,
    engine: &str,
) -> Option<report::Notice> {
    let super::super::plan::Workload::Conversation(w) = &mut builder.workload else {
        return None;
    };
    let note = match (w.max_context_tokens, max_model_len) {
        (Some(c), _) => {
            format!("{engine}: conversation histories are cut to max_context_tokens = {c}")
        }
        (None, Some(c)) => {
            w.max_context_tokens = Some(c);
            format!("{engine}: conversation histories are cut to the engine's max_model_len = {c}")
        }
        (None, None) => format!(
            "{engine}: the engine lists no max_model_len and the profile sets no \
             max_context_tokens: conversation histories are not cut"
        ),
    };
    Some(report::Notice::engine(
        report::NoticeKind::Context,
        engine,
        note,
    ))
}

/// The requests a trial would send if every reply were `max_tokens` generated
/// words: what a run without an engine (the prediction, the warm-up) uses, sessions
/// one after another.
pub(super) fn build(b: &Builder, n: u32, seed: u64, sample: u64) -> Vec<Prepared> {
    let Some(conv) = b.conversations(n, seed, sample) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(n as usize);
    let mut id = 0;
    while out.len() < n as usize {
        let mut s = conv.session(id);
        let mut any = false;
        while out.len() < n as usize {
            let Some(t) = s.next_request(&conv) else {
                break;
            };
            out.push(t.prepared);
            s.assume_reply(seed ^ (out.len() as u64).wrapping_mul(0x94D0_49BB_1331_11EB));
            any = true;
        }
        if !any {
            break;
        }
        id += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::define::plan::Workload;
    fn workload(max_context_tokens: Option<u32>) -> ConversationWorkload {
        ConversationWorkload {
            turns: 3,
            input_tokens: 10,
            output_tokens: 4,
            range_ratio: 0.0,
            think_time: Duration::ZERO,
            max_context_tokens,
            text: TextStyle::Random,
            calibrate: false,
            given: None,
            given_file: None,
        }
    }

    fn builder(api: Api, w: ConversationWorkload) -> Builder {
        Builder {
            workload: Workload::Conversation(w),
            model: "m".into(),
            api,
            tokens_per_word: 1.0,
            chat_fields: Default::default(),
            salt: None,
            images: None,
        }
    }

    fn answer(s: &mut Session, text: &str, prompt_tokens: Option<u64>) {
        assert!(s.answered(Answer {
            ok: true,
            reply: Some(text.into()),
            prompt_tokens,
            completion_tokens: 4,
        }));
    }

    fn body(t: &TurnRequest) -> serde_json::Value {
        serde_json::from_slice(&t.prepared.body).unwrap()
    }

    #[test]
    fn each_turn_carries_the_history_with_the_replies() {
        let b = builder(Api::Chat, workload(None));
        let conv = b.conversations(9, 1, 0).unwrap();
        let mut s = conv.session(0);
        let t1 = s.next_request(&conv).unwrap();
        let first_user = body(&t1)["messages"][0]["content"].clone();
        answer(&mut s, "reply one", None);
        let t2 = s.next_request(&conv).unwrap();
        let m = body(&t2)["messages"].clone();
        assert_eq!(m.as_array().unwrap().len(), 3);
        assert_eq!(m[0]["content"], first_user);
        assert_eq!(m[1], json!({"role": "assistant", "content": "reply one"}));
        assert_eq!(m[2]["role"], "user");
        assert_eq!(t2.prepared.asked.turn, Some(1));
        assert_eq!(t2.prepared.asked.shared_tokens, Some(14));
        answer(&mut s, "reply two", None);
        assert!(s.next_request(&conv).is_some());
        answer(&mut s, "three", None);
        assert!(s.next_request(&conv).is_none(), "3 turns");
        // Another session says other things; the same session the same.
        let other = body(&conv.session(1).next_request(&conv).unwrap());
        assert_ne!(other["messages"][0]["content"], first_user);
        let again = body(&conv.session(0).next_request(&conv).unwrap());
        assert_eq!(again["messages"][0]["content"], first_user);
    }

    #[test]
    fn completions_concatenate_the_history() {
        let b = builder(Api::Completions, workload(None));
        let conv = b.conversations(9, 1, 0).unwrap();
        let mut s = conv.session(0);
        s.next_request(&conv).unwrap();
        answer(&mut s, " fine", None);
        let p = body(&s.next_request(&conv).unwrap())["prompt"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(p.starts_with("User: "), "{p}");
        assert!(p.contains("\n\nAssistant:  fine\n\nUser: "), "{p}");
        assert!(p.ends_with("\n\nAssistant:"), "{p}");
    }

    #[test]
    fn a_history_too_long_for_the_context_loses_its_oldest_turns() {
        // Each turn: 10 in + 4 out; the server counts 2 template tokens per turn.
        let b = builder(Api::Chat, workload(Some(40)));
        let conv = b.conversations(9, 1, 0).unwrap();
        let mut s = conv.session(0);
        assert_eq!(s.next_request(&conv).unwrap().context_cut_turns, 0);
        answer(&mut s, "a", Some(12));
        let t2 = s.next_request(&conv).unwrap();
        assert_eq!(
            (t2.context_cut_turns, t2.prepared.asked.shared_tokens),
            (0, Some(16))
        );
        answer(&mut s, "b", Some(28));
        // 16 + 16 of history + 14 of the new turn > 40: the first turn goes.
        let t3 = s.next_request(&conv).unwrap();
        assert_eq!(t3.context_cut_turns, 1);
        let m = body(&t3)["messages"].clone();
        assert_eq!(m.as_array().unwrap().len(), 3);
        assert_eq!(m[1]["content"], "b");
    }

    #[test]
    fn given_sessions_are_used_in_order() {
        let b = builder(Api::Chat, workload(None));
        let given = Sessions::Given {
            sessions: Arc::new(vec![
                vec!["hi there".into(), "and".into()],
                vec!["yo".into()],
            ]),
            output_tokens: 5,
        };
        let conv = Conversations::new(b, given, 10, Duration::ZERO);
        let mut s = conv.session(2);
        let t = s.next_request(&conv).unwrap();
        assert_eq!(body(&t)["messages"][0]["content"], "hi there");
        assert_eq!(t.prepared.asked.input_tokens, Some(2));
        assert_eq!(t.prepared.asked.max_tokens, Some(5));
    }

    #[test]
    fn the_static_build_runs_sessions_in_turn_order() {
        let b = builder(Api::Chat, workload(None));
        let reqs = b.build(7, 1, 0);
        let turns: Vec<_> = reqs
            .iter()
            .map(|r| (r.asked.session, r.asked.turn))
            .collect();
        assert_eq!(turns[3], (Some(1), Some(0)));
        assert_eq!(turns[6], (Some(2), Some(0)));
        assert_eq!(reqs.len(), 7);
    }
}
