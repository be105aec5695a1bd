//! The SLO a report was judged against: its bounds, one per bounded metric
//! ([`SloMetric`]), its attainment target and form.

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::metric::{SloMetric, SLO_FIELDS};

/// The SLO: a request is good when it succeeded and every given bound holds.
///
/// Written as an object of each bound given (its [`SloMetric`]'s field,
/// `ttft_ms`, ms), then `attainment`, `percentile`, then unknown keys. A bound that
/// was not given is absent (never `null`, never infinite): the reference has both
/// `ttft_ms` and `tpot_ms`; a goodput run with `--slo ttft:100` writes only
/// `ttft_ms`. Every bound but TTFT's and TPOT's is a goodput addition.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Slo {
    /// Upper bound on each metric, ms (absent: no bound); a request with no value
    /// of a metric whose table entry says so (one that gave no answer) misses it.
    pub bounds: Bounds,
    /// goodput addition: the share of requests that must be good for a load level
    /// to meet the SLO (0.9 when absent; 1.0 means every request).
    pub attainment: Option<f64>,
    /// goodput addition: when given (e.g. 90), a load level meets the SLO when the
    /// pooled p-th percentile of each bounded metric is within its bound
    /// (DistServe's form) instead of by `attainment`.
    pub percentile: Option<f64>,
    /// goodput addition: the least shares of valid tool calls a load level needs
    /// (`min_valid_tool_calls`, `min_schema_valid_tool_calls`).
    pub tool_calls: ToolCallRequirements,
    /// Unknown fields, preserved.
    pub extra: Map<String, Value>,
}

/// goodput addition: requirements on the tool calls of a load level, each a share
/// of the calls judged (0.99 = 99%); a point meets the SLO only when each share's
/// interval lies at or above its requirement (`ToolCallCheck`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ToolCallRequirements {
    /// `min_valid_tool_calls`: the least share of calls whose arguments parse as
    /// JSON.
    pub valid: Option<f64>,
    /// `min_schema_valid_tool_calls`: the least share of calls whose arguments are
    /// valid against the schema of the function they name.
    pub schema_valid: Option<f64>,
}

impl ToolCallRequirements {
    /// The profile's and the report's keys.
    pub const KEYS: [&'static str; 2] = ["min_valid_tool_calls", "min_schema_valid_tool_calls"];

    /// Each requirement given: (key, share name in `ToolCallCheck`, value).
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &'static str, f64)> {
        [
            (Self::KEYS[0], "valid", self.valid),
            (Self::KEYS[1], "schema_valid", self.schema_valid),
        ]
        .into_iter()
        .filter_map(|(k, n, v)| v.map(|v| (k, n, v)))
    }

    /// The requirement of `key`, to set.
    pub fn by_key(&mut self, key: &str) -> Option<&mut Option<f64>> {
        match key {
            "min_valid_tool_calls" => Some(&mut self.valid),
            "min_schema_valid_tool_calls" => Some(&mut self.schema_valid),
            _ => None,
        }
    }
}

/// An SLO's bounds, ms, one per [`SloMetric`] (absent: no bound).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Bounds([Option<f64>; SloMetric::COUNT]);

impl Bounds {
    /// The bound on `m`.
    pub fn get(&self, m: SloMetric) -> Option<f64> {
        self.0[m as usize]
    }

    /// Sets (or, with `None`, removes) the bound on `m`.
    pub fn set(&mut self, m: SloMetric, bound: Option<f64>) {
        self.0[m as usize] = bound;
    }

    /// The bounds given, in order.
    pub fn iter(&self) -> impl Iterator<Item = (SloMetric, f64)> + '_ {
        SloMetric::ALL
            .into_iter()
            .filter_map(|m| self.get(m).map(|b| (m, b)))
    }

    /// No bound given.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}

impl FromIterator<(SloMetric, f64)> for Bounds {
    fn from_iter<I: IntoIterator<Item = (SloMetric, f64)>>(it: I) -> Bounds {
        let mut b = Bounds::default();
        for (m, v) in it {
            b.set(m, Some(v));
        }
        b
    }
}

impl Slo {
    /// An SLO of these bounds and nothing else.
    pub fn bounded(bounds: impl IntoIterator<Item = (SloMetric, f64)>) -> Slo {
        Slo {
            bounds: bounds.into_iter().collect(),
            ..Slo::default()
        }
    }

    /// The bound on `m`.
    pub fn bound(&self, m: SloMetric) -> Option<f64> {
        self.bounds.get(m)
    }

    /// Reads an SLO refusing keys it does not know (a profile's `[slo]`): the
    /// error names the key (and, from toml, its line).
    pub fn deserialize_strict<'de, D: Deserializer<'de>>(d: D) -> Result<Slo, D::Error> {
        d.deserialize_map(SloVisitor { strict: true })
    }
}

/// The report's `slo`: the bounds given, in the table's order, then the
/// attainment target and form, then unknown keys kept.
impl Serialize for Slo {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (m, b) in self.bounds.iter() {
            map.serialize_entry(m.field(), &b)?;
        }
        if let Some(a) = self.attainment {
            map.serialize_entry("attainment", &a)?;
        }
        if let Some(p) = self.percentile {
            map.serialize_entry("percentile", &p)?;
        }
        for (key, _, v) in self.tool_calls.iter() {
            map.serialize_entry(key, &v)?;
        }
        for (k, v) in &self.extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Slo {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Slo, D::Error> {
        d.deserialize_map(SloVisitor { strict: false })
    }
}

/// A key of `slo`.
enum SloKey {
    Bound(SloMetric),
    Attainment,
    Percentile,
    ToolCalls(&'static str),
    Other(String),
}

/// Reads a key of `slo`; strict: an unknown one is an error raised on the key
/// (so toml names its line).
struct SloKeySeed {
    strict: bool,
}

impl<'de> DeserializeSeed<'de> for SloKeySeed {
    type Value = SloKey;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<SloKey, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for SloKeySeed {
    type Value = SloKey;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field identifier")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<SloKey, E> {
        Ok(match key {
            "attainment" => SloKey::Attainment,
            "percentile" => SloKey::Percentile,
            "min_valid_tool_calls" => SloKey::ToolCalls(ToolCallRequirements::KEYS[0]),
            "min_schema_valid_tool_calls" => SloKey::ToolCalls(ToolCallRequirements::KEYS[1]),
            _ => match SloMetric::from_field(key) {
                Some(m) => SloKey::Bound(m),
                None if self.strict => return Err(E::unknown_field(key, SLO_FIELDS)),
                None => SloKey::Other(key.to_string()),
            },
        })
    }
}

struct SloVisitor {
    strict: bool,
}

impl<'de> Visitor<'de> for SloVisitor {
    type Value = Slo;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("struct Slo")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Slo, A::Error> {
        let mut slo = Slo::default();
        let mut seen: Vec<&'static str> = Vec::new();
        while let Some(key) = map.next_key_seed(SloKeySeed {
            strict: self.strict,
        })? {
            if let SloKey::Other(k) = key {
                let v: Value = map.next_value()?;
                slo.extra.insert(k, v);
                continue;
            }
            let name = match &key {
                SloKey::Other(_) => continue,
                SloKey::Bound(m) => m.field(),
                SloKey::Attainment => "attainment",
                SloKey::Percentile => "percentile",
                SloKey::ToolCalls(k) => *k,
            };
            if seen.contains(&name) {
                return Err(de::Error::duplicate_field(name));
            }
            seen.push(name);
            let v: Option<f64> = map.next_value()?;
            match key {
                SloKey::Bound(m) => slo.bounds.set(m, v),
                SloKey::Attainment => slo.attainment = v,
                SloKey::Percentile => slo.percentile = v,
                SloKey::ToolCalls(k) => {
                    if let Some(r) = slo.tool_calls.by_key(k) {
                        *r = v;
                    }
                }
                SloKey::Other(_) => {}
            }
        }
        Ok(slo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_slo_reads_and_writes_its_keys_in_order_and_keeps_unknown_ones() {
        let text = r#"{"ttft_ms":100.0,"ttfat_ms":2000.0,"attainment":0.9,"goal":"x"}"#;
        let slo: Slo = serde_json::from_str(text).unwrap();
        assert_eq!(slo.bound(SloMetric::Ttfat), Some(2000.0));
        assert_eq!(slo.bound(SloMetric::Tpot), None);
        assert_eq!(serde_json::to_string(&slo).unwrap(), text);
        let strict = Slo::deserialize_strict(&mut serde_json::Deserializer::from_str(text));
        let e = strict.unwrap_err().to_string();
        assert!(
            e.starts_with("unknown field `goal`, expected one of `ttft_ms`"),
            "{e}"
        );
        let twice = serde_json::from_str::<Slo>(r#"{"ttft_ms":1,"ttft_ms":2}"#);
        assert!(twice.unwrap_err().to_string().contains("duplicate field"));
    }
}
