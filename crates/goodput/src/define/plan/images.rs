//! `[workload] images`, `image_size`, `image_format`: the images every chat
//! request carries ([`crate::define::requests::images`]), checked: a count of 1 to
//! [`MAX_IMAGES`], sides of 1 to [`MAX_SIDE`] pixels, `png` or `jpeg`, every
//! engine on the chat API, no conversation workload, and a trial's images within
//! the request plan's memory limit.

use indexmap::IndexMap;

use super::check::{Checker, MAX_PLAN_BYTES};
use crate::define::profile::{Api, EngineSpec, ProfileError, WorkloadSpec};
use crate::define::requests::images::{ImageFormat, ImageSpec, MAX_IMAGES, MAX_SIDE};

/// Each image's side when `image_size` is not given, pixels.
pub const DEFAULT_SIDE: u32 = 512;

/// The workload's images, checked; `None` without `images`.
pub(super) fn check_images(
    check: &Checker,
    workload: &WorkloadSpec,
    engines: &IndexMap<String, EngineSpec>,
    requests_per_trial: u32,
) -> Result<Option<ImageSpec>, ProfileError> {
    let chat = workload.chat();
    let Some(count) = chat.images else {
        for (key, given) in [
            ("workload.image_size", chat.image_size.is_some()),
            ("workload.image_format", chat.image_format.is_some()),
        ] {
            if given {
                return Err(check.bad(key, "goes with `images = N`".into()));
            }
        }
        return Ok(None);
    };
    let count = check.count("workload.images", count, 1..=u64::from(MAX_IMAGES))?;
    let [width, height] = chat.image_size.unwrap_or([DEFAULT_SIDE; 2]);
    for v in [width, height] {
        check.count("workload.image_size", v, 1..=u64::from(MAX_SIDE))?;
    }
    let word = chat.image_format.as_deref().unwrap_or("png");
    let format = ImageFormat::from_word(word).ok_or_else(|| {
        check.bad(
            "workload.image_format",
            format!("`{word}` is not png or jpeg"),
        )
    })?;
    if matches!(workload, WorkloadSpec::Conversation(_)) {
        return Err(check.bad(
            "workload.images",
            "is not for a conversation workload yet (its later turns are built during the \
             trial, where images would be generated on the hot path)"
                .into(),
        ));
    }
    if let Some((name, _)) = engines.iter().find(|(_, e)| e.api != Api::Chat) {
        return Err(check.bad(
            "workload.images",
            format!(
                "images go in chat messages (`image_url` parts): engine `{name}` uses the \
                 completions API; set api = \"chat\""
            ),
        ));
    }
    // Noise compresses little: about 3 bytes a pixel, 4/3 of that in base64.
    let per_image = u64::from(width) * u64::from(height) * 4;
    let bytes = per_image * u64::from(count) * u64::from(requests_per_trial);
    if bytes > MAX_PLAN_BYTES {
        return Err(check.bad(
            "workload.images",
            format!(
                "{requests_per_trial} requests of {count} {width}x{height} images make about \
                 {:.1} GiB of request bodies, above goodput's {} GiB limit for one trial (bodies \
                 are built before the trial starts): use fewer requests per trial, fewer or \
                 smaller images",
                bytes as f64 / f64::from(1u32 << 30),
                MAX_PLAN_BYTES >> 30
            ),
        ));
    }
    Ok(Some(ImageSpec {
        count,
        width,
        height,
        format,
    }))
}

#[cfg(test)]
mod tests {
    use crate::define::plan::Plan;
    use crate::define::profile::{Overrides, Profile, ProfileError};

    fn plan(workload: &str, api: &str) -> Result<Plan, ProfileError> {
        let text = format!(
            "name = \"t\"\n[slo]\nttft_ms = 500\n[load]\npoints = [1]\nrequests_per_trial = 5\n\
             [workload]\ninput_tokens = 10\noutput_tokens = 5\n{workload}\n\
             [engines.a]\nurl = \"http://127.0.0.1:1\"\napi = \"{api}\"\n"
        );
        Profile::parse(&text, "p.toml")?.into_plan("p.toml", &Overrides::default())
    }

    #[test]
    fn images_are_checked_with_the_key_that_is_wrong() {
        let p = plan(
            "images = 2\nimage_size = [64, 32]\nimage_format = \"jpeg\"",
            "chat",
        );
        let spec = p.unwrap().images.unwrap();
        assert_eq!((spec.count, spec.width, spec.height), (2, 64, 32));
        let p = plan("images = 1", "chat").unwrap().images.unwrap();
        assert_eq!((p.width, p.height), (512, 512));
        for (workload, api, want) in [
            ("images = 1", "completions", "uses the completions API"),
            ("images = 0", "chat", "workload.images"),
            (
                "images = 1\nimage_size = [0, 10]",
                "chat",
                "workload.image_size",
            ),
            (
                "images = 1\nimage_format = \"gif\"",
                "chat",
                "`gif` is not png or jpeg",
            ),
            ("image_size = [10, 10]", "chat", "goes with `images = N`"),
            (
                "images = 16\nimage_size = [4096, 4096]",
                "chat",
                "GiB of request bodies",
            ),
        ] {
            let e = plan(workload, api).unwrap_err().to_string();
            assert!(e.contains(want), "{workload}: {e}");
        }
    }
}
