//! goodput addition: the images a point's requests carried (`[workload] images`).

use serde::{Deserialize, Serialize};

/// goodput addition: the images of a point's successful requests, over all
/// trials. Present only when some request carried an image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ImageSummary {
    /// Successful requests that carried images.
    pub requests: u64,
    /// Images they carried.
    pub images: u64,
    /// The images' encoded bytes (PNG or JPEG, before base64), summed.
    pub bytes: u64,
    /// Width of each image, pixels.
    pub width: u32,
    /// Height of each image, pixels.
    pub height: u32,
    /// Requests whose prompt tokens the server reported (`usage.prompt_tokens`):
    /// their prompt tokens, and so the point's `mean_input_tokens`, include the
    /// image tokens the engine made.
    pub prompt_tokens_counted: u64,
    /// Requests whose server reported no prompt tokens: their image tokens are
    /// unknown (goodput does not estimate them).
    pub prompt_tokens_unknown: u64,
}
