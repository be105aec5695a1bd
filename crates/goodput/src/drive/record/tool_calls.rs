//! The tool calls a stream carried (`delta.tool_calls`): when the first delta and
//! the last piece of arguments arrived, and each call's name and arguments as
//! streamed, bounded, so that their validity is judged later
//! ([`crate::measure::metrics::tool_calls`]), never here.

use serde::{Deserialize, Serialize};

/// Most tool calls kept of one stream; later call indexes are only counted
/// ([`ToolCalls::dropped`]).
pub const MAX_TOOL_CALLS: usize = 32;
/// Most bytes of one call's arguments kept; a longer call is marked `cut`.
pub const MAX_ARGUMENT_BYTES: usize = 16 << 10;
/// Most bytes of a function name kept.
pub const MAX_NAME_BYTES: usize = 128;

/// One `delta.tool_calls` entry of a chunk, as the stream parser read it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolPiece {
    /// The call's `index` (absent: its position in the chunk's list).
    pub index: u32,
    /// `function.name`, when this piece carries it.
    pub name: Option<String>,
    /// `function.arguments` of this piece (a fragment of the call's JSON).
    pub arguments: String,
}

/// One tool call as streamed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's `index` in the stream.
    pub index: u32,
    /// The function's name (its pieces joined), at most [`MAX_NAME_BYTES`].
    #[serde(default)]
    pub name: String,
    /// The arguments' pieces joined, at most [`MAX_ARGUMENT_BYTES`].
    #[serde(default)]
    pub arguments: String,
    /// The arguments were longer than [`MAX_ARGUMENT_BYTES`]: the kept part is cut
    /// short and not judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    /// Pieces (deltas) that carried part of the arguments: about one token each
    /// where the engine streams a token a chunk.
    #[serde(default)]
    pub pieces: u32,
}

/// The tool calls of one stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCalls {
    /// Arrival of the first chunk with a `delta.tool_calls` entry, ns since trial
    /// start (the clock of [`super::Chunk::t`]).
    pub first: u64,
    /// Arrival of the last chunk that carried a piece of a call (name or
    /// arguments), ns since trial start: the calls were complete then.
    pub last: u64,
    /// The calls in the order their indexes first appeared, at most
    /// [`MAX_TOOL_CALLS`].
    pub calls: Vec<ToolCall>,
    /// Further calls not kept (beyond [`MAX_TOOL_CALLS`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u32,
}

impl ToolCalls {
    /// Adds a chunk's pieces, arrived at `t`; an empty list changes nothing.
    pub fn add(calls: &mut Option<Box<ToolCalls>>, t: u64, pieces: Vec<ToolPiece>) {
        if pieces.is_empty() {
            return;
        }
        let rec = calls.get_or_insert_with(|| {
            Box::new(ToolCalls {
                first: t,
                last: t,
                ..ToolCalls::default()
            })
        });
        for p in pieces {
            if p.name.as_deref().is_some_and(|n| !n.is_empty()) || !p.arguments.is_empty() {
                rec.last = t;
            }
            let at = match rec.calls.iter().position(|c| c.index == p.index) {
                Some(at) => at,
                None if rec.calls.len() < MAX_TOOL_CALLS => {
                    rec.calls.push(ToolCall {
                        index: p.index,
                        ..ToolCall::default()
                    });
                    rec.calls.len() - 1
                }
                None => {
                    rec.dropped = rec.dropped.saturating_add(1);
                    continue;
                }
            };
            let call = &mut rec.calls[at];
            if !p.arguments.is_empty() {
                call.pieces = call.pieces.saturating_add(1);
            }
            if let Some(name) = &p.name {
                push_bounded(&mut call.name, name, MAX_NAME_BYTES);
            }
            if !push_bounded(&mut call.arguments, &p.arguments, MAX_ARGUMENT_BYTES) {
                call.cut = true;
            }
        }
    }
}

/// Appends `text` to `kept` within `limit` bytes (cut at a character boundary);
/// false when some of it did not fit.
fn push_bounded(kept: &mut String, text: &str, limit: usize) -> bool {
    let room = limit.saturating_sub(kept.len());
    if text.len() <= room {
        kept.push_str(text);
        return true;
    }
    let mut end = room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    kept.push_str(&text[..end]);
    false
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(index: u32, name: Option<&str>, arguments: &str) -> ToolPiece {
        ToolPiece {
            index,
            name: name.map(str::to_string),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn pieces_join_per_call_index_and_stay_bounded() {
        let mut calls = None;
        ToolCalls::add(&mut calls, 5, vec![]);
        assert!(calls.is_none());
        ToolCalls::add(&mut calls, 10, vec![piece(0, Some("get_weather"), "")]);
        ToolCalls::add(&mut calls, 20, vec![piece(0, None, "{\"city\":")]);
        ToolCalls::add(
            &mut calls,
            30,
            vec![piece(1, Some("f"), "{}"), piece(0, None, "\"Oslo\"}")],
        );
        ToolCalls::add(&mut calls, 40, vec![piece(1, None, "")]);
        let c = calls.unwrap();
        assert_eq!((c.first, c.last), (10, 30));
        assert_eq!(c.calls.len(), 2);
        assert_eq!(c.calls[0].name, "get_weather");
        assert_eq!(c.calls[0].arguments, "{\"city\":\"Oslo\"}");
        assert_eq!(c.calls[1].arguments, "{}");
        assert_eq!((c.calls[0].pieces, c.calls[1].pieces), (2, 1));

        let mut calls = None;
        let many: Vec<ToolPiece> = (0..MAX_TOOL_CALLS as u32 + 3)
            .map(|i| piece(i, None, "{}"))
            .collect();
        ToolCalls::add(&mut calls, 1, many);
        let big = "é".repeat(MAX_ARGUMENT_BYTES);
        ToolCalls::add(&mut calls, 2, vec![piece(0, None, &big)]);
        let c = calls.unwrap();
        assert_eq!((c.calls.len(), c.dropped), (MAX_TOOL_CALLS, 3));
        assert!(c.calls[0].cut && c.calls[0].arguments.len() <= MAX_ARGUMENT_BYTES);
    }
}
