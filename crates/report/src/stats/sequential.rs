//! The level of each look at a point's attainment when trials are added until it
//! is decided (`trials = "auto"`, and a search's confirmation trials): a
//! group-sequential boundary that keeps the chance of a wrong `meets` (or a wrong
//! `fails`) at 2.5% however many times the judgement is read.
//!
//! A point read after each trial from `first` to `last` is read `L = last − first
//! + 1` times. Reading each look at 95% would call a point whose true attainment
//! sits on the target `meets` far more often than 2.5% (measured: 6.1% with 2 to
//! 10 trials). The boundary is **Haybittle–Peto** (Haybittle 1971; Peto et al.
//! 1976): every look before the last at `z = 3` (one-sided 0.135%), the last at
//! what is left of the one-sided 2.5% once the earlier looks' share is taken off
//! (Bonferroni's inequality, so the bound holds whatever the correlation between
//! looks and whatever the design effect's estimate does from look to look). With
//! more than 10 looks the earlier ones share at most half the 2.5% equally, so the
//! last never drops below `z = 2.24`. One look (a fixed trial count) is the plain
//! 95% interval (`z = 1.96`).
//!
//! With 2 to 10 trials: earlier looks at `z = 3`, the last at `z = 2.19` (97.2%
//! two-sided). Far from the target the `z = 3` looks stop the point after a few
//! trials; on the target the last look keeps almost all of a fixed count's power.
//!
//! References: Haybittle, J. L. (1971), *Br. J. Radiol.* 44:793–797. Peto, R. et
//! al. (1976), *Br. J. Cancer* 34:585–612. Jennison, C. & Turnbull, B. W. (2000),
//! *Group Sequential Methods with Applications to Clinical Trials*, Chapman &
//! Hall/CRC, §2.7.

use statrs::distribution::{ContinuousCDF, Normal};

use super::Z95;

/// z of an earlier look (Haybittle–Peto), unless many looks need a stricter one.
pub const INTERIM_Z: f64 = 3.0;

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

    /// The normal quantile of the two-sided interval read after `trials` trials:
    /// [`INTERIM_Z`] (or stricter) before the last look, the rest of the error at
    /// the last (and after it), 1.96 with one look.
    pub fn z(&self, trials: u32) -> f64 {
        let looks = self.count();
        if looks <= 1 {
            return Z95;
        }
        let normal = Normal::standard();
        let interim = normal
            .sf(INTERIM_Z)
            .min(ALPHA_ONE_SIDED / 2.0 / f64::from(looks - 1));
        if trials < self.last {
            normal.inverse_cdf(1.0 - interim)
        } else {
            normal.inverse_cdf(1.0 - (ALPHA_ONE_SIDED - f64::from(looks - 1) * interim))
        }
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
        // 2 to 10 trials: 9 looks; 8 at z = 3 spend 8 × 0.00135 = 0.0108, the last
        // gets 0.0142: z = 2.1917 (Jennison & Turnbull's Haybittle-Peto, by hand).
        let l = Looks::between(2, 10);
        assert_eq!(l.count(), 9);
        assert!((l.z(2) - 3.0).abs() < 1e-9 && (l.z(9) - 3.0).abs() < 1e-9);
        assert!((l.z(10) - 2.191_694).abs() < 1e-5, "{}", l.z(10));
        assert!((l.z(12) - l.z(10)).abs() < 1e-12, "past the last look");
        // Two looks: 0.025 - 0.00135 -> z = 1.9836.
        assert!((Looks::between(2, 3).z(3) - 1.983_602).abs() < 1e-5);
        // 20 looks: the earlier ones share half the error, the last keeps half.
        let many = Looks::between(1, 20);
        assert!((many.z(20) - 2.241_403).abs() < 1e-5, "{}", many.z(20));
        assert!(many.z(1) > 3.0);
        assert_eq!(Looks::between(5, 2), Looks::between(5, 5));
    }

    #[test]
    fn levels_and_quantiles_round_trip() {
        assert!((level_of(Z95) - 0.95).abs() < 1e-9);
        assert!((z_of(0.95) - Z95).abs() < 1e-9);
        assert!((Looks::between(2, 10).level(10) - 0.971_6).abs() < 1e-3);
    }
}
