//! Images in chat requests (`[workload] images`): how many a point's successful
//! requests carried, their bytes, and whether their prompt tokens count the
//! images' tokens. A server that reports `usage.prompt_tokens` counts the image
//! tokens its model's processor made (vLLM, SGLang); without usage goodput does
//! not know them: such requests are counted as `prompt_tokens_unknown`, never
//! estimated.

use report::ImageSummary;

use super::TrialMetrics;
use crate::drive::record::RequestRecord;

/// A trial's images, gathered request by request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialImages {
    /// Successful requests that carried images.
    pub requests: u64,
    /// Images they carried.
    pub images: u64,
    /// Their encoded bytes (before base64).
    pub bytes: u64,
    /// Of those requests, the ones whose prompt tokens the server reported
    /// (image tokens included).
    pub counted: u64,
    /// Size of the images, pixels (the last request's).
    pub size: Option<(u32, u32)>,
}

impl TrialImages {
    /// Adds one successful request.
    pub fn add(&mut self, r: &RequestRecord) {
        let Some(i) = r.images.as_deref().filter(|i| i.count > 0) else {
            return;
        };
        self.requests += 1;
        self.images += u64::from(i.count);
        self.bytes += i.bytes;
        self.counted += u64::from(r.prompt_tokens.is_some());
        self.size = Some((i.width, i.height));
    }
}

/// The point's [`ImageSummary`]; `None` when no successful request carried an
/// image.
pub fn image_summary(trials: &[TrialMetrics]) -> Option<ImageSummary> {
    let sum = |f: fn(&TrialImages) -> u64| trials.iter().map(|t| f(&t.images)).sum::<u64>();
    let requests = sum(|t| t.requests);
    if requests == 0 {
        return None;
    }
    let counted = sum(|t| t.counted);
    let size = trials.iter().find_map(|t| t.images.size);
    Some(ImageSummary {
        requests,
        images: sum(|t| t.images),
        bytes: sum(|t| t.bytes),
        width: size.map_or(0, |s| s.0),
        height: size.map_or(0, |s| s.1),
        prompt_tokens_counted: counted,
        prompt_tokens_unknown: requests - counted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::define::requests::images::ImagesSent;

    #[test]
    fn images_and_who_counted_their_tokens() {
        let mut t = TrialImages::default();
        let mut r = RequestRecord::new("e", 1.0, 0, 0, 0);
        t.add(&r);
        assert_eq!(t, TrialImages::default(), "no images, nothing counted");
        r.images = Some(Box::new(ImagesSent {
            count: 2,
            bytes: 1000,
            width: 64,
            height: 32,
        }));
        t.add(&r);
        r.prompt_tokens = Some(90);
        t.add(&r);
        let m = TrialMetrics {
            images: t,
            ..TrialMetrics::default()
        };
        let s = image_summary(&[m]).unwrap();
        assert_eq!((s.requests, s.images, s.bytes), (2, 4, 2000));
        assert_eq!((s.width, s.height), (64, 32));
        assert_eq!((s.prompt_tokens_counted, s.prompt_tokens_unknown), (1, 1));
        assert!(image_summary(&[TrialMetrics::default()]).is_none());
    }
}
