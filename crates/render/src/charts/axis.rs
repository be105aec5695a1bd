//! The x axis of the charts: linear or logarithmic, with ticks that suit the values
//! (whole numbers only for concurrency), as a plotters coordinate.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

/// Load levels whose largest is at least this many times their smallest get a
/// logarithmic axis: on a linear one, a sweep like 0.5, 1, 2, 4, 8, 16 req/s puts
/// half its levels into the first tenth of the axis. Below it the axis is linear.
pub const LOG_SPAN: f64 = 20.0;

/// How many ticks an axis gets at most.
pub const MAX_TICKS: usize = 8;

/// How an axis maps values and where its ticks go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scale {
    /// Logarithmic instead of linear.
    pub log: bool,
    /// Ticks at whole numbers only (concurrency is whole requests).
    pub integer: bool,
}

impl Scale {
    /// The scale of a load axis over the load levels `xs`: logarithmic when they
    /// span [`LOG_SPAN`] or more (and are all positive), integer ticks when the load
    /// is a concurrency.
    pub fn for_load(xs: impl Iterator<Item = f64>, concurrency: bool) -> Scale {
        let (lo, hi) = finite_span(xs).unwrap_or((1.0, 1.0));
        Scale {
            log: lo > 0.0 && hi / lo >= LOG_SPAN,
            integer: concurrency,
        }
    }

    /// The point between `a` and `b` as the eye sees it on this scale (the
    /// geometric mean on a log axis).
    pub fn midpoint(self, a: f64, b: f64) -> f64 {
        if self.log {
            (a * b).sqrt()
        } else {
            (a + b) / 2.0
        }
    }

    /// `x` moved by `share` of the width of `lo..hi` on this scale (negative moves
    /// left).
    pub fn shift(self, x: f64, share: f64, (lo, hi): (f64, f64)) -> f64 {
        if self.log {
            x * (hi / lo).powf(share)
        } else {
            x + (hi - lo) * share
        }
    }
}

fn finite_span(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    lo.is_finite().then_some((lo, hi))
}

/// A padded range of values with its scale: what plotters draws the x axis with.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Left end.
    pub lo: f64,
    /// Right end.
    pub hi: f64,
    /// Mapping and ticks.
    pub scale: Scale,
}

impl Axis {
    /// An axis over `values`, padded by 5% of its width on each side (of its width
    /// in decades on a log axis). A log scale over values that are not all positive
    /// falls back to linear.
    pub fn over(values: impl Iterator<Item = f64>, mut scale: Scale) -> Axis {
        let Some((lo, hi)) = finite_span(values) else {
            return Axis {
                lo: 0.0,
                hi: 1.0,
                scale,
            };
        };
        if scale.log && lo > 0.0 && hi > lo {
            let pad = (hi / lo).powf(0.05);
            return Axis {
                lo: lo / pad,
                hi: hi * pad,
                scale,
            };
        }
        scale.log = false;
        let (lo, hi) = if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
            let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.5 };
            (lo - pad, hi + pad)
        } else {
            let pad = (hi - lo) * 0.05;
            (lo - pad, hi + pad)
        };
        Axis { lo, hi, scale }
    }

    /// Where `v` lies on the axis, 0 at the left end and 1 at the right.
    pub fn unit(&self, v: f64) -> f64 {
        if self.scale.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// The tick values, at most `max`.
    pub fn ticks(&self, max: usize) -> Vec<f64> {
        if self.scale.log {
            log_ticks(self.lo, self.hi, max, self.scale.integer)
        } else {
            linear_ticks(self.lo, self.hi, max, self.scale.integer)
        }
    }
}

/// Multiples of the smallest step of the form 1, 2 or 5 times a power of ten that
/// puts at most `max` ticks in `lo..=hi`; the step is at least 1 when `integer`.
pub fn linear_ticks(lo: f64, hi: f64, max: usize, integer: bool) -> Vec<f64> {
    if !lo.is_finite() || !hi.is_finite() || hi <= lo || max == 0 {
        return Vec::new();
    }
    let raw = (hi - lo) / max as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let mut step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| (hi / s).floor() - (lo / s).ceil() < max as f64)
        .unwrap_or(10.0 * mag);
    if integer {
        step = step.max(1.0).round();
    }
    let (first, last) = ((lo / step).ceil() as i64, (hi / step).floor() as i64);
    (first..=last).map(|k| k as f64 * step).collect()
}

/// 1, 2 and 5 times each power of ten in `lo..=hi`; 1 and 3 times when that gives
/// more than `max`; then the powers of ten alone (every second, third... of them
/// when still too many). Whole numbers only when `integer`.
pub fn log_ticks(lo: f64, hi: f64, max: usize, integer: bool) -> Vec<f64> {
    if !lo.is_finite() || !hi.is_finite() || lo <= 0.0 || hi <= lo || max == 0 {
        return Vec::new();
    }
    let decades = lo.log10().floor() as i32..=hi.log10().ceil() as i32;
    let ticks = |mantissas: &[f64]| -> Vec<f64> {
        decades
            .clone()
            .flat_map(|e| mantissas.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|t| *t >= lo && *t <= hi && (!integer || t.fract() == 0.0))
            .collect()
    };
    for mantissas in [&[1.0, 2.0, 5.0][..], &[1.0, 3.0][..]] {
        let t = ticks(mantissas);
        if t.len() <= max {
            return t;
        }
    }
    let t = ticks(&[1.0]);
    let every = t.len().div_ceil(max);
    t.into_iter().step_by(every).collect()
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let u = self.unit(*v);
        let u = if u.is_nan() {
            0.0
        } else {
            u.clamp(-10.0, 10.0)
        };
        limit.0 + ((limit.1 - limit.0) as f64 * u).round() as i32
    }

    /// The ticks for the bold grid and the labels; no light grid lines.
    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            return Vec::new();
        }
        self.ticks(hint.max_num_points())
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_ticks_are_whole_numbers() {
        // The reference's load levels 1 and 4, padded: 0.85..4.15.
        let axis = Axis::over(
            [1.0, 4.0].into_iter(),
            Scale::for_load([1.0, 4.0].into_iter(), true),
        );
        assert_eq!(axis.ticks(MAX_TICKS), [1.0, 2.0, 3.0, 4.0]);
        // One level: no ticks between whole numbers either.
        let one = Axis::over(
            [2.0].into_iter(),
            Scale {
                log: false,
                integer: true,
            },
        );
        assert!(one.ticks(MAX_TICKS).iter().all(|t| t.fract() == 0.0));
        assert_eq!(
            linear_ticks(0.0, 100.0, 8, true),
            [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
    }

    #[test]
    fn rate_ticks_may_be_fractional() {
        assert_eq!(
            linear_ticks(0.9, 4.1, 8, false),
            [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]
        );
    }

    #[test]
    fn load_axes_are_logarithmic_from_a_span_of_twenty() {
        let scale = |xs: &[f64]| Scale::for_load(xs.iter().copied(), false);
        assert!(!scale(&[1.0, 19.9]).log);
        assert!(scale(&[1.0, 20.0]).log);
        assert!(scale(&[0.5, 1.0, 2.0, 4.0, 8.0, 16.0]).log);
        assert!(!scale(&[0.0, 100.0]).log, "zero has no place on a log axis");
        assert!(!scale(&[]).log);
    }

    #[test]
    fn log_ticks_follow_one_two_five() {
        assert_eq!(
            log_ticks(0.4, 20.0, 8, false),
            [0.5, 1.0, 2.0, 5.0, 10.0, 20.0]
        );
        assert_eq!(
            log_ticks(0.9, 300.0, 8, true),
            [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0]
        );
        // Too many for 1-2-5 and for 1-3: powers of ten.
        assert_eq!(
            log_ticks(1.0, 10_000.0, 8, false),
            [1.0, 10.0, 100.0, 1000.0, 10_000.0]
        );
        assert!(log_ticks(1e-3, 1e9, 8, false).len() <= 8);
    }

    #[test]
    fn log_axis_maps_equal_ratios_to_equal_distances() {
        let axis = Axis::over(
            [1.0, 100.0].into_iter(),
            Scale {
                log: true,
                integer: false,
            },
        );
        let (a, b, c) = (axis.unit(1.0), axis.unit(10.0), axis.unit(100.0));
        assert!(((b - a) - (c - b)).abs() < 1e-12);
        assert!(a > 0.0 && c < 1.0, "padded");
        assert_eq!(axis.scale.midpoint(1.0, 100.0), 10.0);
    }
}
