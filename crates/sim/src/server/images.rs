//! Images in chat requests: `image_url` parts whose URL is a base64 `data:` URL
//! of a PNG or JPEG (the simulator fetches nothing), decoded within bounds, their
//! size read from the header, and counted as image tokens the way Qwen2-VL-style
//! processors do: one token per 28 × 28 pixels (14-pixel patches merged 2 × 2),
//! `ceil(W / 28) × ceil(H / 28)`. The tokens join the prompt after its text, so
//! `usage.prompt_tokens` and the prefill (its time, the KV it holds) include them
//! (the vision encoder's own time is not modelled); their ids come from the
//! image's bytes, so the same image repeats a prefix and another does not.

use base64::Engine;
use serde_json::Value;

use super::openai::{ApiError, Content, Message};
use crate::text;

/// Most images a request may carry.
pub const MAX_IMAGES: usize = 64;
/// Most bytes of one image, decoded.
pub const MAX_IMAGE_BYTES: usize = 32 << 20;
/// Pixels per image token along each side.
pub const PIXELS_PER_TOKEN: u32 = 28;

/// One image a request carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Image {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// A hash of its bytes.
    pub hash: u64,
}

impl Image {
    /// Its prompt tokens: `ceil(W / 28) × ceil(H / 28)`, at least 1.
    pub fn tokens(&self) -> u32 {
        let side = |v: u32| v.div_ceil(PIXELS_PER_TOKEN);
        side(self.width).saturating_mul(side(self.height)).max(1)
    }

    /// Its token ids, drawn from its hash among the hashed ids.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        let hashed = text::VOCAB_SIZE - 1024;
        (0..u64::from(self.tokens()))
            .map(move |k| 1024 + (text::mix(self.hash ^ k) % u64::from(hashed)) as u32)
    }
}

/// The images of a chat request's messages, in order; a part that is not a
/// base64 PNG or JPEG data URL, or too many or too large images, is a 400 naming
/// `messages`.
pub fn images(messages: &[Message]) -> Result<Vec<Image>, ApiError> {
    let mut out = Vec::new();
    for m in messages {
        let Some(Content::Parts(parts)) = &m.content else {
            continue;
        };
        for p in parts {
            if p.get("type").and_then(Value::as_str) != Some("image_url") {
                continue;
            }
            if out.len() >= MAX_IMAGES {
                return Err(bad(format!("more than {MAX_IMAGES} images in one request")));
            }
            let url = p
                .get("image_url")
                .and_then(|u| u.get("url").or(Some(u)))
                .and_then(Value::as_str)
                .ok_or_else(|| bad("an `image_url` part needs `image_url.url`".into()))?;
            out.push(decode(url)?);
        }
    }
    Ok(out)
}

fn bad(message: String) -> ApiError {
    ApiError::bad_param("messages", message)
}

/// A `data:image/...;base64,` URL decoded and measured.
fn decode(url: &str) -> Result<Image, ApiError> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Err(bad(
            "goodput-sim takes images as base64 data URLs only (it fetches nothing)".into(),
        ));
    };
    let Some((_, data)) = rest.split_once(";base64,") else {
        return Err(bad("an image data URL must be base64 (`;base64,`)".into()));
    };
    if data.len() / 4 * 3 > MAX_IMAGE_BYTES {
        return Err(bad(format!(
            "an image of more than {} MiB",
            MAX_IMAGE_BYTES >> 20
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| bad(format!("an image's base64 does not decode: {e}")))?;
    let (width, height) = size(&bytes)
        .ok_or_else(|| bad("an image is neither a PNG nor a JPEG with a frame header".into()))?;
    Ok(Image {
        width,
        height,
        hash: text::fnv1a(&bytes),
    })
}

/// Width and height from a PNG's IHDR or a JPEG's start-of-frame marker.
pub fn size(b: &[u8]) -> Option<(u32, u32)> {
    let be16 = |i: usize| Some(u32::from(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])));
    let be32 = |i: usize| Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?));
    if b.starts_with(b"\x89PNG\r\n\x1a\n") && b.get(12..16) == Some(b"IHDR") {
        return Some((be32(16)?, be32(20)?));
    }
    if !b.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let mut i = 2;
    while i + 4 <= b.len() {
        if b[i] != 0xFF {
            return None;
        }
        let marker = b[i + 1];
        if marker == 0xFF {
            i += 1;
            continue;
        }
        let len = be16(i + 2)? as usize;
        // SOF0..SOF15, less DHT (C4), JPG (C8) and DAC (CC).
        if (0xC0..=0xCF).contains(&marker) && ![0xC4, 0xC8, 0xCC].contains(&marker) {
            return Some((be16(i + 7)?, be16(i + 5)?));
        }
        i += 2 + len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(width.to_be_bytes());
        b.extend(height.to_be_bytes());
        b.extend([8, 2, 0, 0, 0]);
        b
    }

    fn message(parts: Value) -> Vec<Message> {
        serde_json::from_value(json!([{"role": "user", "content": parts}])).unwrap()
    }

    #[test]
    fn data_urls_are_measured_and_counted_in_28_pixel_tokens() {
        let url = |b: &[u8]| {
            format!(
                "data:image/png;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(b)
            )
        };
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 0, 0, 0xFF, 0xC0, 0, 11, 8, 0, 100, 0, 200, 3,
        ];
        let m = message(json!([
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": url(&png(64, 32))}},
            {"type": "image_url", "image_url": {"url": url(&jpeg)}},
        ]));
        let got = images(&m).unwrap();
        assert_eq!(
            (got[0].width, got[0].height, got[0].tokens()),
            (64, 32, 3 * 2)
        );
        assert_eq!(
            (got[1].width, got[1].height, got[1].tokens()),
            (200, 100, 8 * 4)
        );
        assert_eq!(got[0].ids().count(), 6);
        assert!(got[0].ids().all(text::is_token_id));
        for (part, want) in [
            (
                json!({"type": "image_url", "image_url": {"url": "https://x/y.png"}}),
                "data URLs",
            ),
            (
                json!({"type": "image_url", "image_url": {"url": "data:image/png,xx"}}),
                "base64",
            ),
            (
                json!({"type": "image_url", "image_url": {"url": url(b"GIF89a")}}),
                "neither",
            ),
            (json!({"type": "image_url"}), "image_url.url"),
        ] {
            let e = images(&message(json!([part]))).unwrap_err();
            assert!(format!("{e:?}").contains(want), "{e:?}");
        }
    }
}
