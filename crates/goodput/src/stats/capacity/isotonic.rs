//! A non-increasing attainment curve over load, and where it crosses a target.
//!
//! The fit is **weighted isotonic regression** by the pool-adjacent-violators
//! algorithm (Barlow, Bartholomew, Bremner & Brunk 1972, *Statistical Inference
//! under Order Restrictions*; Robertson, Wright & Dykstra 1988, *Order Restricted
//! Statistical Inference*, §1.2): of all non-increasing sequences, the one closest
//! to the measured attainments in weighted least squares. Walking up in load, a
//! level whose attainment is above the block before it is pooled with that block
//! (the weighted mean of both), until no block rises; with binomial data and the
//! requests sent as weights, this is also the maximum-likelihood non-increasing
//! curve. Between measured loads the curve is linear, and the capacity is where it
//! falls through the target: the largest load whose fitted attainment is at least
//! the target.

/// Fits a non-increasing sequence to `ys` (in load order) with weights `ws`
/// (requests sent), by pool-adjacent-violators; a weight at or below zero counts as
/// a negligible one. The result has one value per input.
pub fn non_increasing(ys: &[f64], ws: &[f64]) -> Vec<f64> {
    // Blocks of pooled levels: weighted sum, weight, levels.
    let mut blocks: Vec<(f64, f64, usize)> = Vec::with_capacity(ys.len());
    for (&y, &w) in ys.iter().zip(ws) {
        let w = if w > 0.0 { w } else { f64::EPSILON };
        blocks.push((w * y, w, 1));
        while let [.., a, b] = blocks.as_slice() {
            if a.0 / a.1 >= b.0 / b.1 {
                break;
            }
            let pooled = (a.0 + b.0, a.1 + b.1, a.2 + b.2);
            blocks.truncate(blocks.len() - 2);
            blocks.push(pooled);
        }
    }
    blocks
        .iter()
        .flat_map(|&(sum, w, n)| std::iter::repeat_n(sum / w, n))
        .collect()
}

/// Where a non-increasing curve, linear between loads, crosses a target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Crossing {
    /// Already below the target at the lowest load (the capacity lies below it).
    Below(f64),
    /// The curve falls through the target at this load, between two measured ones.
    Within(f64),
    /// At or above the target up to the highest load (the capacity lies above it).
    Above(f64),
}

impl Crossing {
    /// The load, with a capacity beyond the measured range held at its edge.
    pub fn load(self) -> f64 {
        match self {
            Crossing::Below(x) | Crossing::Within(x) | Crossing::Above(x) => x,
        }
    }
}

/// Where the fitted curve `(xs[i], fit[i])` (loads ascending, `fit`
/// non-increasing) crosses `target`: after the last load whose fitted attainment
/// is at least the target, linearly towards the next. `None` without loads.
pub fn crossing(xs: &[f64], fit: &[f64], target: f64) -> Option<Crossing> {
    let n = xs.len().min(fit.len());
    if n == 0 {
        return None;
    }
    let Some(i) = fit[..n].iter().rposition(|&a| a >= target) else {
        return Some(Crossing::Below(xs[0]));
    };
    if i + 1 == n {
        return Some(Crossing::Above(xs[i]));
    }
    let (a, b) = (fit[i], fit[i + 1]);
    // a ≥ target > b, so a − b > 0.
    let x = xs[i] + (a - target) / (a - b) * (xs[i + 1] - xs[i]);
    Some(Crossing::Within(x.clamp(xs[i], xs[i + 1])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn a_non_increasing_sequence_is_its_own_fit() {
        let ys = [1.0, 0.95, 0.95, 0.5, 0.0];
        assert!(close(&non_increasing(&ys, &[1.0; 5]), &ys));
        assert!(non_increasing(&[], &[]).is_empty());
    }

    #[test]
    fn a_violating_pair_is_pooled_by_weight() {
        // 0.8 then 0.9 rises: pooled to their weighted mean, (0.8·1 + 0.9·3) / 4.
        let fit = non_increasing(&[1.0, 0.8, 0.9, 0.2], &[1.0, 1.0, 3.0, 1.0]);
        assert!(close(&fit, &[1.0, 0.875, 0.875, 0.2]), "{fit:?}");
        // Equal weights: the plain mean.
        let fit = non_increasing(&[0.8, 0.9], &[2.0, 2.0]);
        assert!(close(&fit, &[0.85, 0.85]), "{fit:?}");
    }

    #[test]
    fn pooling_cascades_back_over_earlier_blocks() {
        // 0.95 rises above 0.6: pooled (0.775), which now rises above 0.7: the
        // three pool to 0.75, below 0.9, where pooling stops.
        let fit = non_increasing(&[0.9, 0.7, 0.6, 0.95], &[1.0; 4]);
        assert!(close(&fit, &[0.9, 0.75, 0.75, 0.75]), "{fit:?}");
        // Rising over everything before it: all pooled to the mean.
        let fit = non_increasing(&[0.5, 0.4, 1.0], &[1.0; 3]);
        assert!(close(&fit, &[19.0 / 30.0; 3]), "{fit:?}");
        // Ties are no violation: kept as they are.
        assert!(close(
            &non_increasing(&[0.9, 0.9, 0.9], &[1.0, 5.0, 2.0]),
            &[0.9; 3]
        ));
    }

    #[test]
    fn a_zero_weight_level_takes_its_neighbours_value() {
        let fit = non_increasing(&[0.5, 1.0], &[10.0, 0.0]);
        assert!(
            (fit[0] - 0.5).abs() < 1e-9 && (fit[1] - 0.5).abs() < 1e-9,
            "{fit:?}"
        );
    }

    #[test]
    fn the_crossing_interpolates_and_says_when_it_is_out_of_range() {
        let xs = [1.0, 2.0, 4.0];
        // 0.95 at 2, 0.75 at 4: 0.9 is a quarter of the way.
        let within = |c: Option<Crossing>| match c {
            Some(Crossing::Within(x)) => x,
            other => panic!("{other:?}"),
        };
        assert!((within(crossing(&xs, &[1.0, 0.95, 0.75], 0.9)) - 2.5).abs() < 1e-12);
        // Exactly on the target counts as meeting it.
        assert_eq!(
            crossing(&xs, &[1.0, 0.9, 0.5], 0.9),
            Some(Crossing::Within(2.0))
        );
        assert_eq!(
            crossing(&xs, &[0.8, 0.5, 0.1], 0.9),
            Some(Crossing::Below(1.0))
        );
        assert_eq!(
            crossing(&xs, &[1.0, 1.0, 0.9], 0.9),
            Some(Crossing::Above(4.0))
        );
        assert_eq!(crossing(&[], &[], 0.9), None);
        assert_eq!(Crossing::Below(1.0).load(), 1.0);
    }
}
