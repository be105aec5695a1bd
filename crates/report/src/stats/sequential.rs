//! The level of each look at a point's attainment when trials are added until it
//! is decided (`trials = "auto"`, and a search's confirmation trials): a
//! group-sequential boundary that keeps the chance of a wrong `meets` (or a wrong
//! `fails`) near 2.5% however many times the judgement is read.
//!
//! A point read after each trial from `first` to `last` is read
//! `L = last − first + 1` times. Reading each look at 95% would call a point whose
//! true attainment sits on the target `meets` far more often than 2.5% (measured:
//! 6.1% with 2 to 10 trials). The one-sided 2.5% is split over the looks in
//! advance (a weighted Bonferroni boundary: the bound holds whatever the
//! correlation between looks; Jennison & Turnbull 2000, §2.7; the split in the
//! spirit of Haybittle 1971 and Peto et al. 1976, whose interim looks are strict
//! so that one look keeps most of the error):
//!
//! - the **first** look, after the trials every point gets, has half of it
//!   (`z = 2.24`), so that a clear point still stops there (all good from 46
//!   requests, where 95% needs 35);
//! - each **later** look has an equal share of the other half (`z = 2.96` with 2
//!   to 10 trials, 2.50 with 2 to 4, a search's default).
//!
//! One look (a fixed trial count) is the plain 95% interval (`z = 1.96`); two
//! looks share it equally. Each look's interval is the over-dispersed one
//! ([`super::dispersed`]), whose design effect rests on few degrees of freedom at
//! the first looks, so the bound is approximate: the seeded simulation in goodput's
//! `judge::search::trials` measures it (docs/statistics.md, "Adaptive trials").
//!
//! References: Haybittle, J. L. (1971), *Br. J. Radiol.* 44:793–797. Peto, R. et
//! al. (1976), *Br. J. Cancer* 34:585–612. Jennison, C. & Turnbull, B. W. (2000),
//! *Group Sequential Methods with Applications to Clinical Trials*, Chapman &
//! Hall/CRC.

use statrs::distribution::{ContinuousCDF, Normal};

use super::Z95;

/// One-sided error of the whole sequence: a wrong `meets` (or a wrong `fails`).
const ALPHA_ONE_SIDED: f64 = 0.025;

/// The trial counts at which a point's judgement is read: after `first` trials,
/// then after each further one up to `last`. A fixed trial count is one look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Looks {
    /// Trials at the first look.
    pub first: u32,
    /// Trials at the last look.
    pub last: u32,
}

impl Looks {
    /// One look (a fixed trial count): the plain 95% interval.
    pub const ONE: Looks = Looks { first: 1, last: 1 };

    /// Looks after each trial from `first` to `last` (`last` at least `first`).
    pub fn between(first: u32, last: u32) -> Looks {
        Looks {
            first,
            last: last.max(first),
        }
    }

    /// How many times the judgement may be read.
    pub fn count(&self) -> u32 {
        self.last - self.first + 1
    }

    /// The normal quantile of the two-sided interval read after `trials` trials
    /// (see the module doc): half the one-sided error at the first look (and
    /// before it), an equal share of the other half at each later one; 1.96 with
    /// one look.
    pub fn z(&self, trials: u32) -> f64 {
        let looks = self.count();
        if looks <= 1 {
            return Z95;
        }
        let alpha = if trials <= self.first {
            ALPHA_ONE_SIDED / 2.0
        } else {
            ALPHA_ONE_SIDED / 2.0 / f64::from(looks - 1)
        };
        Normal::standard().inverse_cdf(1.0 - alpha)
    }

    /// The two-sided confidence level of [`Looks::z`].
    pub fn level(&self, trials: u32) -> f64 {
        level_of(self.z(trials))
    }
}

/// The two-sided confidence level of the normal quantile `z`.
pub fn level_of(z: f64) -> f64 {
    1.0 - 2.0 * Normal::standard().sf(z)
}

/// The normal quantile of a two-sided confidence `level` (0.95 -> 1.96).
pub fn z_of(level: f64) -> f64 {
    Normal::standard().inverse_cdf(0.5 + level.clamp(0.0, 1.0 - 1e-15) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_look_is_ninety_five_percent_and_more_looks_are_stricter() {
        assert_eq!(Looks::ONE.z(1), Z95);
        assert_eq!(Looks::between(3, 3).z(3), Z95);
        // 2 to 10 trials: 9 looks. The first at one-sided 0.0125 (z = 2.2414); the 8
        // later ones share 0.0125 (0.0015625 each, z = 2.9552). By hand from the
        // normal quantile.
        let l = Looks::between(2, 10);
        assert_eq!(l.count(), 9);
        assert!((l.z(2) - 2.241_403).abs() < 1e-5, "{}", l.z(2));
        assert!((l.z(5) - 2.955_167).abs() < 1e-5, "{}", l.z(5));
        assert!((l.z(10) - l.z(5)).abs() < 1e-12);
        assert!((l.z(12) - l.z(10)).abs() < 1e-12, "past the last look");
        // 2 to 4 (a search's default): the later two at 0.00625 each, z = 2.4977.
        let s = Looks::between(2, 4);
        assert!((s.z(3) - 2.497_705).abs() < 1e-5, "{}", s.z(3));
        // Two looks share the error equally.
        assert!((Looks::between(2, 3).z(3) - 2.241_403).abs() < 1e-5);
        // The shares add up to the one-sided 2.5%.
        let normal = Normal::standard();
        let spent: f64 = (2..=10).map(|t| normal.sf(l.z(t))).sum();
        assert!((spent - 0.025).abs() < 1e-9, "{spent}");
        assert_eq!(Looks::between(5, 2), Looks::between(5, 5));
    }

    #[test]
    fn levels_and_quantiles_round_trip() {
        assert!((level_of(Z95) - 0.95).abs() < 1e-9);
        assert!((z_of(0.95) - Z95).abs() < 1e-9);
        assert!((Looks::between(2, 10).level(10) - 0.996_875).abs() < 1e-9);
    }
}
