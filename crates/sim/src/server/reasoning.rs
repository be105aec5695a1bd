//! The reasoning phase of a chat request ([`crate::config::ReasoningConfig`]):
//! whether the request thinks (`chat_template_kwargs`), how much
//! (`reasoning_effort`), and each choice's count of thinking tokens.

use serde_json::Value;

use super::openai::{ApiError, GenerationRequest};
use super::plan::Endpoint;
use crate::config::SimConfig;
use crate::text;

/// `reasoning_effort` words and the factor each scales the phase by.
const EFFORTS: &[(&str, f64)] = &[
    ("none", 0.0),
    ("minimal", 0.25),
    ("low", 0.5),
    ("medium", 1.0),
    ("high", 2.0),
];

/// `chat_template_kwargs` keys that switch thinking (Qwen3's, Granite's and
/// DeepSeek's names).
const THINKING_KEYS: &[&str] = &["enable_thinking", "thinking"];

/// How much a request thinks: a factor on the configured phase (0: not at all).
/// Checks the two fields whether or not the configuration thinks.
pub(crate) fn effort(
    req: &GenerationRequest,
    endpoint: Endpoint,
    config: &SimConfig,
) -> Result<f64, ApiError> {
    let mut factor = match &req.reasoning_effort {
        None => 1.0,
        Some(word) => EFFORTS
            .iter()
            .find(|(w, _)| w == word)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                ApiError::bad_param(
                    "reasoning_effort",
                    format!("reasoning_effort must be none, minimal, low, medium or high, got `{word}`."),
                )
            })?,
    };
    for (key, value) in req.chat_template_kwargs.iter().flatten() {
        match (THINKING_KEYS.contains(&key.as_str()), value) {
            (true, Value::Bool(on)) => factor *= f64::from(u8::from(*on)),
            (true, _) => {
                return Err(ApiError::bad_param(
                    "chat_template_kwargs",
                    format!("chat_template_kwargs.{key} must be true or false."),
                ))
            }
            (false, _) => {
                return Err(ApiError::bad_param(
                    "chat_template_kwargs",
                    format!(
                        "chat_template_kwargs.{key} is not supported by goodput-sim (it \
                         accepts enable_thinking and thinking)."
                    ),
                ))
            }
        }
    }
    Ok(match (&config.reasoning, endpoint) {
        (Some(_), Endpoint::Chat) => factor,
        _ => 0.0,
    })
}

/// Thinking tokens of the choice with `text_seed`: the configured count, spread
/// and scaled by `factor` (deterministic in the seed).
pub(crate) fn tokens(config: &SimConfig, factor: f64, text_seed: u64) -> u32 {
    let Some(r) = &config.reasoning else { return 0 };
    if factor <= 0.0 {
        return 0;
    }
    // Uniform in [-1, 1].
    let u = (text::mix(text_seed ^ 0x7EA5_0417) % 20_001) as f64 / 10_000.0 - 1.0;
    let n = f64::from(r.tokens) * (1.0 + r.spread * u) * factor;
    n.round().clamp(0.0, f64::from(config.max_model_len)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ReasoningConfig;

    fn req(v: Value) -> GenerationRequest {
        serde_json::from_value(v).unwrap()
    }

    fn thinking() -> SimConfig {
        SimConfig {
            reasoning: Some(ReasoningConfig {
                tokens: 100,
                spread: 0.5,
            }),
            ..SimConfig::default()
        }
    }

    #[test]
    fn thinking_is_switched_and_scaled_by_the_request() {
        let c = thinking();
        let f = |v: Value| effort(&req(v), Endpoint::Chat, &c);
        assert_eq!(f(serde_json::json!({})).unwrap(), 1.0);
        assert_eq!(
            f(serde_json::json!({"reasoning_effort": "high"})).unwrap(),
            2.0
        );
        let off = serde_json::json!({"chat_template_kwargs": {"enable_thinking": false}});
        assert_eq!(f(off).unwrap(), 0.0);
        assert!(f(serde_json::json!({"reasoning_effort": "max"})).is_err());
        assert!(f(serde_json::json!({"chat_template_kwargs": {"x": 1}})).is_err());
        assert!(f(serde_json::json!({"chat_template_kwargs": {"thinking": "no"}})).is_err());
        // The completions endpoint and a config without the phase do not think.
        assert_eq!(
            effort(&req(serde_json::json!({})), Endpoint::Completions, &c).unwrap(),
            0.0
        );
        let plain = SimConfig::default();
        assert_eq!(
            effort(&req(serde_json::json!({})), Endpoint::Chat, &plain).unwrap(),
            0.0
        );
    }

    #[test]
    fn counts_stay_in_the_spread_and_vary_by_seed() {
        let c = thinking();
        let counts: Vec<u32> = (0..200).map(|s| tokens(&c, 1.0, s)).collect();
        assert!(counts.iter().all(|n| (50..=150).contains(n)), "{counts:?}");
        assert!(counts.iter().any(|&n| n != counts[0]));
        assert_eq!(tokens(&c, 0.0, 1), 0);
        assert_eq!(tokens(&SimConfig::default(), 1.0, 1), 0);
    }
}
