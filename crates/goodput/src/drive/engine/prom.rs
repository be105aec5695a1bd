//! A small reader of the Prometheus text exposition format, enough for the
//! engines' `/metrics`: `name{label="value",...} value [timestamp]`.
//!
//! Comments (`# HELP`, `# TYPE`) and malformed lines are skipped; label values may
//! hold escaped quotes, backslashes and commas. Samples whose value is not finite
//! (`+Inf`, `-Inf`, `NaN`) are skipped too, and so is a sum that overflows: nothing
//! read from a server can put a non-finite number into a report, which JSON cannot
//! hold.

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct PromSample<'a> {
    /// Metric name, e.g. `vllm:cache_config_info`.
    pub name: &'a str,
    /// Labels in the order written.
    pub labels: Vec<(String, String)>,
    /// The sample's value.
    pub value: f64,
}

impl PromSample<'_> {
    /// The value of label `key`, if present.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Every well-formed sample of an exposition text.
pub fn samples(text: &str) -> impl Iterator<Item = PromSample<'_>> {
    text.lines().filter_map(parse_line)
}

/// Sum of the values of every sample named exactly `name` (over all label sets);
/// `None` when there is none, or when the sum overflows to infinity.
pub fn sum(text: &str, name: &str) -> Option<f64> {
    samples(text)
        .filter(|s| s.name == name)
        .map(|s| s.value)
        .reduce(|a, b| a + b)
        .filter(|v| v.is_finite())
}

/// True when `line` is a sample whose value is not finite (`+Inf`, `NaN`): the
/// lines [`parse_line`] skips although they are well formed.
pub fn is_non_finite_sample(line: &str) -> bool {
    let line = line.trim();
    if line.starts_with('#') {
        return false;
    }
    let mut after_name = match line.rfind('}') {
        Some(end) if line.contains('{') => line[end + 1..].split_whitespace(),
        _ => {
            let mut words = line.split_whitespace();
            words.next();
            words
        }
    };
    after_name
        .next()
        .and_then(parse_value)
        .is_some_and(|v| !v.is_finite())
}

/// Parses one line; `None` for comments, blank and malformed lines, and for a
/// sample whose value is not finite.
pub fn parse_line(line: &str) -> Option<PromSample<'_>> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace())?;
    let name = &line[..name_end];
    if name.is_empty() {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if rest.starts_with('{') {
        let (parsed, after) = parse_labels(&rest[1..])?;
        labels = parsed;
        rest = after;
    }
    let value_text = rest.split_whitespace().next()?;
    let value = parse_value(value_text).filter(|v| v.is_finite())?;
    Some(PromSample {
        name,
        labels,
        value,
    })
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

/// Parses `key="value",...}`; returns the labels and the text after `}`.
fn parse_labels(mut text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        text = text.trim_start_matches([' ', ',']);
        if let Some(after) = text.strip_prefix('}') {
            return Some((labels, after));
        }
        let eq = text.find('=')?;
        let key = text[..eq].trim().to_string();
        let after_eq = text[eq + 1..].trim_start();
        let body = after_eq.strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = body.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => value.push(other),
                    None => return None,
                },
                '"' => {
                    end = Some(i);
                    break;
                }
                _ => value.push(c),
            }
        }
        let end = end?;
        labels.push((key, value));
        text = &body[end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_labels_values_and_skips_comments() {
        let text = "# HELP x y\n# TYPE x counter\n\
                    x_total{a=\"1\",b=\"with, comma \\\"q\\\"\"} 12.5 1700000000\n\
                    plain 3\nbad line here\n";
        let all: Vec<_> = samples(text).collect();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].name, "x_total");
        assert_eq!(all[0].label("b"), Some("with, comma \"q\""));
        assert_eq!(all[0].value, 12.5);
        assert_eq!(all[1].name, "plain");
        assert!(all[1].labels.is_empty());
    }

    #[test]
    fn sums_over_label_sets_by_exact_name() {
        let text = "a_total{e=\"0\"} 1\na_total{e=\"1\"} 2\na_total_per_pos{p=\"0\"} 100\n";
        assert_eq!(sum(text, "a_total"), Some(3.0));
        assert_eq!(sum(text, "missing"), None);
    }

    #[test]
    fn non_finite_values_are_skipped_and_an_overflowing_sum_is_none() {
        assert_eq!(parse_line("m +Inf"), None);
        assert_eq!(parse_line("m NaN"), None);
        assert_eq!(parse_line("m -Inf"), None);
        assert!(is_non_finite_sample("m{a=\"1\"} +Inf"));
        assert!(is_non_finite_sample("m NaN 17"));
        assert!(!is_non_finite_sample("m 3"));
        assert!(!is_non_finite_sample("h_bucket{le=\"+Inf\"} 3"));
        assert_eq!(parse_line("m{a=\"1\"}"), None);
        assert_eq!(sum("g{a=\"1\"} 1e308\ng{a=\"2\"} 1e308\n", "g"), None);
        assert_eq!(sum("g +Inf\ng 2\n", "g"), Some(2.0));
    }
}
