//! Fault injection: what the simulator does wrong on purpose, so clients can be
//! tested against broken servers.
//!
//! Syntax (config `faults[].spec` and the `x-goodput-fault` request header):
//! a comma-separated list of items, e.g. `drop_after=5` or `malformed,bad_usage`.
//!
//! | item            | effect                                                           |
//! |-----------------|------------------------------------------------------------------|
//! | `drop_after=N`  | close the connection abruptly after N tokens, without `[DONE]`   |
//! | `stall_after=N` | stop sending after N tokens, keep the connection open            |
//! | `status=CODE`   | answer with HTTP CODE (400..=599) and an OpenAI-style error body |
//! | `malformed`     | after the first token chunk, send one chunk that is not JSON     |
//! | `no_choices`    | token chunks carry no `choices` field                            |
//! | `bad_usage`     | usage reports a completion token count that contradicts the stream |
//! | `endless`       | ignore `max_tokens` and stream until the client goes away        |
//! | `not_sse`       | answer 200 with `content-type: text/html`                        |

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A parsed fault specification; several items may combine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct FaultSpec {
    /// Abort the connection after this many tokens.
    pub drop_after: Option<u64>,
    /// Stop sending (connection held open) after this many tokens.
    pub stall_after: Option<u64>,
    /// Answer with this HTTP status and an error body.
    pub status: Option<u16>,
    /// Send one chunk that is not valid JSON.
    pub malformed: bool,
    /// Omit `choices` from token chunks.
    pub no_choices: bool,
    /// Report a contradictory usage count.
    pub bad_usage: bool,
    /// Ignore `max_tokens`; never finish.
    pub endless: bool,
    /// Answer 200 with an HTML body.
    pub not_sse: bool,
}

/// A fault spec that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid fault spec item `{item}`: {reason}")]
pub struct FaultParseError {
    /// The offending item.
    pub item: String,
    /// What is wrong with it.
    pub reason: String,
}

impl FaultSpec {
    /// Whether the spec asks for nothing.
    pub fn is_none(&self) -> bool {
        *self == FaultSpec::default()
    }
}

fn parse_count(item: &str, value: Option<&str>) -> Result<u64, FaultParseError> {
    let value = value.ok_or_else(|| FaultParseError {
        item: item.to_string(),
        reason: "needs a value, e.g. `drop_after=5`".into(),
    })?;
    value.trim().parse::<u64>().map_err(|_| FaultParseError {
        item: item.to_string(),
        reason: "the value must be a non-negative integer".into(),
    })
}

impl FromStr for FaultSpec {
    type Err = FaultParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut spec = FaultSpec::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = match item.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v)),
                None => (item, None),
            };
            let flag = |value: Option<&str>| -> Result<bool, FaultParseError> {
                match value.map(str::trim) {
                    None | Some("1") | Some("true") => Ok(true),
                    Some("0") | Some("false") => Ok(false),
                    Some(_) => Err(FaultParseError {
                        item: item.to_string(),
                        reason: "takes no value (or 1/0)".into(),
                    }),
                }
            };
            match key {
                "drop_after" => spec.drop_after = Some(parse_count(item, value)?),
                "stall_after" => spec.stall_after = Some(parse_count(item, value)?),
                "status" => {
                    let code = parse_count(item, value)?;
                    if !(400..=599).contains(&code) {
                        return Err(FaultParseError {
                            item: item.to_string(),
                            reason: "status must be 400..=599".into(),
                        });
                    }
                    spec.status = u16::try_from(code).ok();
                }
                "malformed" => spec.malformed = flag(value)?,
                "no_choices" => spec.no_choices = flag(value)?,
                "bad_usage" => spec.bad_usage = flag(value)?,
                "endless" => spec.endless = flag(value)?,
                "not_sse" => spec.not_sse = flag(value)?,
                _ => {
                    return Err(FaultParseError {
                        item: item.to_string(),
                        reason: "unknown fault; expected one of drop_after=N, stall_after=N, \
                                 status=CODE, malformed, no_choices, bad_usage, endless, not_sse"
                            .into(),
                    })
                }
            }
        }
        Ok(spec)
    }
}

impl fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut items: Vec<String> = Vec::new();
        if let Some(n) = self.drop_after {
            items.push(format!("drop_after={n}"));
        }
        if let Some(n) = self.stall_after {
            items.push(format!("stall_after={n}"));
        }
        if let Some(c) = self.status {
            items.push(format!("status={c}"));
        }
        for (on, name) in [
            (self.malformed, "malformed"),
            (self.no_choices, "no_choices"),
            (self.bad_usage, "bad_usage"),
            (self.endless, "endless"),
            (self.not_sse, "not_sse"),
        ] {
            if on {
                items.push(name.to_string());
            }
        }
        f.write_str(&items.join(","))
    }
}

impl TryFrom<String> for FaultSpec {
    type Error = FaultParseError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<FaultSpec> for String {
    fn from(value: FaultSpec) -> Self {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let s: FaultSpec = "drop_after=5, malformed,status=429".parse().unwrap();
        assert_eq!(s.drop_after, Some(5));
        assert_eq!(s.status, Some(429));
        assert!(s.malformed);
        assert_eq!(s.to_string(), "drop_after=5,status=429,malformed");
        assert_eq!(s.to_string().parse::<FaultSpec>().unwrap(), s);
    }

    #[test]
    fn rejects_garbage() {
        assert!("explode".parse::<FaultSpec>().is_err());
        assert!("drop_after".parse::<FaultSpec>().is_err());
        assert!("drop_after=x".parse::<FaultSpec>().is_err());
        assert!("status=200".parse::<FaultSpec>().is_err());
        assert!("malformed=yes".parse::<FaultSpec>().is_err());
        assert!("".parse::<FaultSpec>().unwrap().is_none());
    }
}
