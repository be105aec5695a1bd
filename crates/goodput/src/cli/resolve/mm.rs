//! vLLM's `random-mm` flags onto `[workload] images` and `image_size`: images
//! only, one size, the same count on every request (what goodput generates);
//! anything else is a usage error naming the flag.

use toml::{Table, Value};

use super::{int, usage};
use crate::cli::peer::{DatasetName, VllmArgs};

/// Applies `--dataset-name random-mm` and the `--random-mm-*` flags to the
/// workload table.
pub(super) fn apply_images(w: &mut Table, v: &VllmArgs) -> anyhow::Result<()> {
    let mm = v.dataset_name == Some(DatasetName::RandomMm);
    let given = v.random_mm_base_items_per_request.is_some()
        || v.random_mm_bucket_config.is_some()
        || v.random_mm_limit_mm_per_prompt.is_some()
        || v.random_mm_num_mm_items_range_ratio.is_some();
    if !mm && !given {
        return Ok(());
    }
    if let Some(r) = v.random_mm_num_mm_items_range_ratio.filter(|&r| r != 0.0) {
        return Err(usage(format!(
            "--random-mm-num-mm-items-range-ratio {r}: goodput sends every request the same \
             number of images; give 0 or leave it out"
        )));
    }
    let count = v.random_mm_base_items_per_request.unwrap_or(1);
    w.insert("images".into(), int(count));
    if let Some(b) = &v.random_mm_bucket_config {
        let [height, width] =
            one_bucket(b).map_err(|e| usage(format!("--random-mm-bucket-config {b}: {e}")))?;
        w.insert(
            "image_size".into(),
            Value::Array(vec![int(width), int(height)]),
        );
    }
    if let Some(l) = &v.random_mm_limit_mm_per_prompt {
        let limits: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(l).map_err(|e| {
                usage(format!(
                    "--random-mm-limit-mm-per-prompt {l}: not a JSON object: {e}"
                ))
            })?;
        for (kind, n) in &limits {
            let n = n.as_u64().unwrap_or(u64::MAX);
            match kind.as_str() {
                "image" if u64::from(count) > n => {
                    return Err(usage(format!(
                        "--random-mm-limit-mm-per-prompt {l}: {count} images a request are more \
                         than its limit of {n}"
                    )))
                }
                "image" => {}
                _ if n == 0 => {}
                _ => {
                    return Err(usage(format!(
                        "--random-mm-limit-mm-per-prompt {l}: goodput sends images only, not \
                         `{kind}`"
                    )))
                }
            }
        }
    }
    Ok(())
}

/// The `(H, W)` of a bucket config of one image bucket: `{(256, 512, 1): 1.0}`.
fn one_bucket(text: &str) -> Result<[u32; 2], String> {
    let inner = text
        .trim()
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or("not a {(H, W, T): P} dictionary")?;
    let buckets: Vec<&str> = inner
        .split(')')
        .filter_map(|b| b.rfind('(').map(|i| &b[i..]))
        .collect();
    let [bucket] = buckets[..] else {
        return Err(format!(
            "goodput sends one image size; give one bucket (got {})",
            buckets.len()
        ));
    };
    let nums: Vec<u32> = bucket
        .trim_start_matches('(')
        .split(',')
        .map(|n| n.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("`{bucket})` is not (height, width, frames)"))?;
    match nums[..] {
        [h, w, 1] => Ok([h, w]),
        [_, _, t] => Err(format!(
            "a bucket of {t} frames is video: goodput sends images only"
        )),
        _ => Err(format!("`{bucket})` is not (height, width, frames)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_image_bucket_is_taken_and_the_rest_refused() {
        assert_eq!(one_bucket("{(256, 512, 1): 1.0}"), Ok([256, 512]));
        let two = one_bucket("{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}").unwrap_err();
        assert!(two.contains("one bucket (got 2)"), "{two}");
        let video = one_bucket("{(256, 256, 8): 1.0}").unwrap_err();
        assert!(video.contains("video"), "{video}");
        assert!(one_bucket("[(1, 2, 1)]").is_err());

        let mut w = Table::new();
        let v = VllmArgs {
            dataset_name: Some(DatasetName::RandomMm),
            random_mm_base_items_per_request: Some(2),
            random_mm_bucket_config: Some("{(64, 128, 1): 1.0}".into()),
            random_mm_limit_mm_per_prompt: Some(r#"{"image": 2, "video": 0}"#.into()),
            ..VllmArgs::default()
        };
        apply_images(&mut w, &v).unwrap();
        assert_eq!(w["images"].as_integer(), Some(2));
        assert_eq!(w["image_size"].to_string(), "[128, 64]");
        let over = VllmArgs {
            random_mm_limit_mm_per_prompt: Some(r#"{"image": 1}"#.into()),
            ..v
        };
        let e = apply_images(&mut w, &over).unwrap_err().to_string();
        assert!(e.contains("more than its limit of 1"), "{e}");
    }
}
