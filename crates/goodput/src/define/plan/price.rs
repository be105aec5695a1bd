//! `--usd-per-hour [ENGINE=]USD`: engine prices from the command line, over the
//! profile's `usd_per_hour` (docs/cost-energy.md).

use indexmap::IndexMap;

use crate::define::profile::EngineSpec;

/// Most dollars per hour a price may be (a typo guard, not a market view).
const MAX_USD_PER_HOUR: f64 = 1e9;

/// Parses `2.5` (every engine) or `NAME=2.5` (one engine).
pub fn parse_usd_per_hour(text: &str) -> Result<(Option<String>, f64), String> {
    let (name, value) = match text.rsplit_once('=') {
        Some((n, v)) if !n.trim().is_empty() => (Some(n.trim().to_string()), v),
        Some((_, v)) => (None, v),
        None => (None, text),
    };
    let usd: f64 = value
        .trim()
        .trim_start_matches('$')
        .parse()
        .map_err(|_| format!("`{text}`: `{value}` is not a number of US dollars per hour"))?;
    if !(usd.is_finite() && (0.0..=MAX_USD_PER_HOUR).contains(&usd)) {
        return Err(format!(
            "`{text}`: the price must be in 0..={MAX_USD_PER_HOUR}"
        ));
    }
    Ok((name, usd))
}

/// Applies the prices in order (a later one wins): a named engine that is not
/// among `engines` is an error naming the ones there are.
pub(super) fn apply_prices(
    engines: &mut IndexMap<String, EngineSpec>,
    prices: &[(Option<String>, f64)],
) -> Result<(), String> {
    for (name, usd) in prices {
        match name {
            None => engines
                .values_mut()
                .for_each(|e| e.usd_per_hour = Some(*usd)),
            Some(n) => match engines.get_mut(n) {
                Some(e) => e.usd_per_hour = Some(*usd),
                None => {
                    let known: Vec<&str> = engines.keys().map(String::as_str).collect();
                    return Err(format!(
                        "no engine named `{n}` to price (running: {})",
                        known.join(", ")
                    ));
                }
            },
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_parse_and_apply_in_order() {
        assert_eq!(parse_usd_per_hour("2.5"), Ok((None, 2.5)));
        assert_eq!(parse_usd_per_hour("a=$0.8"), Ok((Some("a".into()), 0.8)));
        assert!(parse_usd_per_hour("a=-1").is_err());
        assert!(parse_usd_per_hour("a=inf").is_err());
        assert!(parse_usd_per_hour("cheap").is_err());
        let mut engines: IndexMap<String, EngineSpec> = ["a", "b"]
            .iter()
            .map(|n| (n.to_string(), EngineSpec::default()))
            .collect();
        apply_prices(&mut engines, &[(None, 1.0), (Some("b".into()), 3.0)]).unwrap();
        assert_eq!(engines["a"].usd_per_hour, Some(1.0));
        assert_eq!(engines["b"].usd_per_hour, Some(3.0));
        let err = apply_prices(&mut engines, &[(Some("c".into()), 1.0)]).unwrap_err();
        assert!(err.contains("`c`") && err.contains("a, b"), "{err}");
    }
}
