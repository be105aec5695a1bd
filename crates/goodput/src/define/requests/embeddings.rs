//! Embeddings requests (`api = "embeddings"`): `[workload] inputs` synthetic
//! texts, each of the workload's prompt length, sent in one body's `input` array
//! (`{"model", "input": [..]}`, vLLM's and OpenAI's shape); nothing is streamed or
//! generated, so the body has no `stream`, `max_tokens` or sampling fields.
//!
//! Inputs are texts, not token-id arrays: every engine tokenises them as it would
//! a user's, and the prompt lengths are calibrated as for generation.

use bytes::Bytes;
use rand::rngs::StdRng;
use serde_json::json;

use super::text::{draw_len, synthetic_text};
use super::{salt, Asked, Builder, Prepared};
use crate::define::profile::TextStyle;

/// Inputs a request carries when the workload gives no `inputs`.
pub const DEFAULT_INPUTS: u32 = 1;

/// One embeddings request of `inputs` texts of about `input_tokens` tokens each
/// (drawn in `[L(1-r), L(1+r)]`), its asked inputs and tokens in `Asked`.
pub(super) fn one(
    b: &Builder,
    rng: &mut StdRng,
    (input_tokens, range_ratio, text): (u32, f64, TextStyle),
    inputs: u32,
) -> Prepared {
    let mut total = 0u32;
    let texts: Vec<String> = (0..inputs)
        .map(|_| {
            let len = draw_len(rng, input_tokens, range_ratio);
            total = total.saturating_add(len);
            synthetic_text(rng, b.words(len), text)
        })
        .collect();
    let asked = Asked {
        input_tokens: Some(total),
        inputs: Some(inputs),
        ..Asked::default()
    };
    Prepared {
        body: Bytes::from(body(b, &texts).to_string()),
        asked,
        adapter: None,
    }
}

/// The JSON body of an embeddings request: the model and the texts (each with
/// the run's salt in front, when it has one).
pub(super) fn body(b: &Builder, texts: &[String]) -> serde_json::Value {
    let input: Vec<String> = texts
        .iter()
        .map(|t| salt::salted(b.salt.as_deref(), t))
        .collect();
    json!({"model": b.model, "input": input})
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::define::profile::Api;
    use crate::define::requests::Workload;

    fn builder(inputs: Option<u32>) -> Builder {
        Builder {
            workload: Workload::Synthetic {
                input_tokens: 20,
                output_tokens: 0,
                range_ratio: 0.0,
                text: TextStyle::Random,
                calibrate: false,
                inputs,
            },
            model: "e".into(),
            api: Api::Embeddings,
            tokens_per_word: 1.0,
            chat_fields: Default::default(),
            salt: Some("S".into()),
            images: None,
        }
    }

    #[test]
    fn a_request_carries_its_inputs_and_nothing_to_generate() {
        let reqs = builder(Some(3)).build(2, 1, 0);
        assert_eq!(reqs.len(), 2);
        for r in &reqs {
            let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(v["model"], "e");
            let input = v["input"].as_array().unwrap();
            assert_eq!(input.len(), 3);
            for t in input {
                let words = t.as_str().unwrap().split_whitespace().count();
                // The salt is a word of its own in front of 20 words.
                assert!((20..=22).contains(&words), "{t}");
            }
            for absent in ["stream", "max_tokens", "temperature", "prompt"] {
                assert!(v.get(absent).is_none(), "{absent} in {v}");
            }
            assert_eq!(r.asked.inputs, Some(3));
            assert_eq!(r.asked.input_tokens, Some(60));
            assert_eq!(r.asked.max_tokens, None);
        }
    }

    #[test]
    fn without_inputs_a_request_carries_one() {
        let r = &builder(None).build(1, 1, 0)[0];
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["input"].as_array().map(Vec::len), Some(1));
        assert_eq!(r.asked.inputs, Some(DEFAULT_INPUTS));
    }

    #[test]
    fn the_same_seed_gives_the_same_texts() {
        let mut a = StdRng::seed_from_u64(3);
        let mut b = StdRng::seed_from_u64(3);
        let w = (10, 0.5, TextStyle::Random);
        assert_eq!(
            one(&builder(None), &mut a, w, 2).body,
            one(&builder(None), &mut b, w, 2).body
        );
    }
}
