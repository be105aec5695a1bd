//! `[workload] images = N`: every chat request carries N generated images as
//! base64 data URLs in `image_url` parts of its last user message, after its text
//! (the OpenAI shape vLLM, SGLang and llama.cpp accept). Each image is seeded
//! noise over a smooth gradient, `image_size` pixels, PNG or JPEG, generated
//! locally (nothing is downloaded) while the request's body is built, before the
//! trial starts, so generation never delays a send. The seed is the request's
//! prompt text and the image's place in it: the same prompt carries the same
//! images on every engine, and different prompts different images (so an engine's
//! image cache finds no repeats across requests, as with vLLM's `random-mm`).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Most images a request carries.
pub const MAX_IMAGES: u32 = 16;
/// Largest width or height, pixels.
pub const MAX_SIDE: u32 = 4096;

/// The images every chat request carries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImageSpec {
    /// Images per request.
    pub count: u32,
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// PNG or JPEG.
    pub format: ImageFormat,
}

/// How an image is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// PNG, RGB, 8 bits (noise compresses little: about 3 bytes a pixel).
    Png,
    /// JPEG, RGB, quality 85.
    Jpeg,
}

impl ImageFormat {
    /// The profile's word (`png`, `jpeg`); `jpg` is taken for `jpeg`.
    pub fn from_word(w: &str) -> Option<ImageFormat> {
        match w {
            "png" => Some(ImageFormat::Png),
            "jpeg" | "jpg" => Some(ImageFormat::Jpeg),
            _ => None,
        }
    }

    /// Its media type.
    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
        }
    }
}

/// The images a request carried: how many, their encoded bytes (before base64)
/// and their size; copied into its record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ImagesSent {
    /// Images sent.
    pub count: u32,
    /// Their encoded bytes (PNG or JPEG, before base64), summed.
    pub bytes: u64,
    /// Width of each, pixels.
    pub width: u32,
    /// Height of each, pixels.
    pub height: u32,
}

/// One image of `spec`, seeded by `key`, encoded.
pub fn image(spec: &ImageSpec, key: u64) -> Result<Vec<u8>, String> {
    let (w, h) = (spec.width, spec.height);
    let mut rng = StdRng::seed_from_u64(key);
    let base: [f32; 3] = [rng.gen(), rng.gen(), rng.gen()];
    let mut pixels = Vec::with_capacity(w as usize * h as usize * 3);
    for y in 0..h {
        for x in 0..w {
            let g = (x as f32 / w as f32 + y as f32 / h as f32) * 0.5;
            for b in base {
                let smooth = ((b + g).fract() * 160.0) as u8;
                pixels.push(smooth.wrapping_add(rng.gen_range(0..96)));
            }
        }
    }
    let mut out = Vec::new();
    match spec.format {
        ImageFormat::Png => {
            let mut enc = png::Encoder::new(&mut out, w, h);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            enc.set_compression(png::Compression::Fast);
            let mut writer = enc.write_header().map_err(|e| format!("PNG: {e}"))?;
            writer
                .write_image_data(&pixels)
                .map_err(|e| format!("PNG: {e}"))?;
            writer.finish().map_err(|e| format!("PNG: {e}"))?;
        }
        ImageFormat::Jpeg => {
            let (w, h) = (side16(w)?, side16(h)?);
            jpeg_encoder::Encoder::new(&mut out, 85)
                .encode(&pixels, w, h, jpeg_encoder::ColorType::Rgb)
                .map_err(|e| format!("JPEG: {e}"))?;
        }
    }
    Ok(out)
}

fn side16(v: u32) -> Result<u16, String> {
    u16::try_from(v).map_err(|_| format!("JPEG: {v} pixels is too large a side"))
}

/// `bytes` as a `data:` URL.
pub fn data_url(format: ImageFormat, bytes: &[u8]) -> String {
    use base64::Engine;
    let mut url = format!("data:{};base64,", format.mime());
    base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut url);
    url
}

/// The seed of the `i`-th image of a request whose prompt is `prompt`.
fn key(prompt: &str, i: u32) -> u64 {
    let h = prompt.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    h ^ u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Adds `spec`'s images to the last user message of a chat `body` (its text
/// becomes a `text` part, the images `image_url` parts after it), seeded by its
/// text; what was sent. An image that fails to encode is not sent (the count
/// says so).
pub fn attach(body: &mut Value, spec: &ImageSpec) -> ImagesSent {
    let mut sent = ImagesSent {
        width: spec.width,
        height: spec.height,
        ..ImagesSent::default()
    };
    let Some(message) = body
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .and_then(|m| m.iter_mut().rev().find(|m| m["role"] == "user"))
    else {
        return sent;
    };
    let text = message["content"].as_str().unwrap_or_default().to_string();
    let mut parts = vec![json!({"type": "text", "text": text})];
    for i in 0..spec.count {
        let Ok(bytes) = image(spec, key(&text, i)) else {
            continue;
        };
        sent.count += 1;
        sent.bytes += bytes.len() as u64;
        let url = data_url(spec.format, &bytes);
        parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
    }
    message["content"] = Value::Array(parts);
    sent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_seeded_decodable_and_attached_after_the_text() {
        let spec = ImageSpec {
            count: 2,
            width: 40,
            height: 24,
            format: ImageFormat::Png,
        };
        let a = image(&spec, 1).unwrap();
        assert_eq!(a, image(&spec, 1).unwrap());
        assert_ne!(a, image(&spec, 2).unwrap());
        let info = png::Decoder::new(std::io::Cursor::new(&a))
            .read_info()
            .unwrap()
            .info()
            .clone();
        assert_eq!((info.width, info.height), (40, 24));
        let jpeg = ImageSpec {
            format: ImageFormat::Jpeg,
            ..spec
        };
        assert!(image(&jpeg, 1).unwrap().starts_with(&[0xFF, 0xD8]));

        let mut body = json!({"messages": [{"role": "user", "content": "hello there"}]});
        let sent = attach(&mut body, &spec);
        assert_eq!((sent.count, sent.width, sent.height), (2, 40, 24));
        let parts = body["messages"][0]["content"].as_array().unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0], json!({"type": "text", "text": "hello there"}));
        let url = parts[1]["image_url"]["url"].as_str().unwrap();
        assert!(url.starts_with("data:image/png;base64,iVBOR"), "{url:.40}");
        assert_ne!(parts[1], parts[2], "two images of one request differ");
        assert!(sent.bytes > 0 && (url.len() as u64) < sent.bytes * 2);
    }
}
