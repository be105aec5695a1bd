//! The simulated GPU: SM clock, temperature and utilization over simulated time.
//!
//! Thermal model: a heat level in `[0, 1]` rises by `dt / heat_after_s` while
//! the GPU is busy and falls by `dt / recover_after_s` while idle. When it
//! reaches 1 the card throttles to `throttled_mhz`, and it stays throttled
//! (hysteresis) until the heat is back to 0, so short idle gaps between
//! requests do not briefly restore the boost clock. The temperature is
//! interpolated between the idle and hot temperatures by the heat level.

use serde::{Deserialize, Serialize};

use crate::config::ThermalConfig;

/// Boost clock reported when no thermal model is configured, MHz.
pub const DEFAULT_BOOST_MHZ: f64 = 2040.0;
const MEM_CLOCK_MHZ: f64 = 6251.0;
const POWER_LIMIT_W: f64 = 72.0;
const IDLE_POWER_W: f64 = 16.0;
const MEMORY_TOTAL_MIB: f64 = 23_034.0;
/// vLLM reserves 90% of GPU memory by default (weights + KV pool).
const MEMORY_USED_FRACTION: f64 = 0.9;
/// Time constant of the utilization average, s.
const UTIL_TAU_S: f64 = 1.0;

/// The simulated GPU's state, exactly as `GET /sim/gpu` serves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuState {
    /// Always `"goodput-sim GPU"`.
    pub name: String,
    /// Current SM clock, MHz.
    pub sm_clock_mhz: f64,
    /// Memory clock, MHz.
    pub mem_clock_mhz: f64,
    /// Boost (maximum) SM clock, MHz.
    pub max_sm_clock_mhz: f64,
    /// Temperature, °C.
    pub temperature_c: f64,
    /// Power draw, W.
    pub power_w: f64,
    /// Power limit, W.
    pub power_limit_w: f64,
    /// Memory in use, MiB.
    pub memory_used_mib: f64,
    /// Memory on the card, MiB.
    pub memory_total_mib: f64,
    /// Busy share over about the last second, percent.
    pub utilization_pct: f64,
    /// NVML-style throttle reasons, e.g. `sw_thermal_slowdown`.
    pub throttle_reasons: Vec<String>,
    /// Whether the card is thermally throttled now.
    pub thermal_throttled: bool,
}

/// GPU model advanced in simulated time.
#[derive(Debug, Clone)]
pub struct Gpu {
    thermal: Option<ThermalConfig>,
    heat: f64,
    throttled: bool,
    util: f64,
    time: f64,
}

impl Gpu {
    /// A cool, idle GPU at time 0.
    pub fn new(thermal: Option<ThermalConfig>) -> Gpu {
        Gpu {
            thermal,
            heat: 0.0,
            throttled: false,
            util: 0.0,
            time: 0.0,
        }
    }

    /// Simulated time the state refers to, s.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Advance to `to` (s), busy or idle for the whole interval. Earlier times are ignored.
    pub fn advance(&mut self, to: f64, busy: bool) {
        let dt = to - self.time;
        if dt.is_nan() || dt <= 0.0 {
            return;
        }
        self.time = to;
        let target = if busy { 1.0 } else { 0.0 };
        self.util = target + (self.util - target) * (-dt / UTIL_TAU_S).exp();
        let Some(t) = &self.thermal else {
            return;
        };
        if busy {
            self.heat += dt / t.heat_after_s;
            if self.heat >= 1.0 {
                self.heat = 1.0;
                self.throttled = true;
            }
        } else {
            self.heat -= dt / t.recover_after_s;
            if self.heat <= 0.0 {
                self.heat = 0.0;
                self.throttled = false;
            }
        }
    }

    /// Boost clock, MHz.
    pub fn boost_mhz(&self) -> f64 {
        self.thermal
            .as_ref()
            .map_or(DEFAULT_BOOST_MHZ, |t| t.boost_mhz)
    }

    /// Current SM clock, MHz.
    pub fn sm_clock_mhz(&self) -> f64 {
        match &self.thermal {
            Some(t) if self.throttled => t.throttled_mhz,
            _ => self.boost_mhz(),
        }
    }

    /// Factor by which GPU work is slower than at the boost clock (>= 1).
    pub fn slowdown(&self) -> f64 {
        self.boost_mhz() / self.sm_clock_mhz()
    }

    /// Whether the card is thermally throttled.
    pub fn throttled(&self) -> bool {
        self.throttled
    }

    /// The state now.
    pub fn state(&self) -> GpuState {
        let clock = self.sm_clock_mhz();
        let boost = self.boost_mhz();
        let temperature_c = match &self.thermal {
            Some(t) => t.idle_temp_c + self.heat * (t.hot_temp_c - t.idle_temp_c),
            None => 40.0 + 20.0 * self.util,
        };
        let power_w = IDLE_POWER_W
            + (POWER_LIMIT_W - IDLE_POWER_W) * self.util * (0.35 + 0.65 * clock / boost);
        GpuState {
            name: "goodput-sim GPU".to_string(),
            sm_clock_mhz: clock,
            mem_clock_mhz: MEM_CLOCK_MHZ,
            max_sm_clock_mhz: boost,
            temperature_c,
            power_w,
            power_limit_w: POWER_LIMIT_W,
            memory_used_mib: MEMORY_TOTAL_MIB * MEMORY_USED_FRACTION,
            memory_total_mib: MEMORY_TOTAL_MIB,
            utilization_pct: 100.0 * self.util,
            throttle_reasons: if self.throttled {
                vec!["sw_thermal_slowdown".to_string()]
            } else {
                Vec::new()
            },
            thermal_throttled: self.throttled,
        }
    }

    /// The state at `now`, assuming the GPU has been idle since its last update.
    pub fn state_at(&self, now: f64) -> GpuState {
        let mut g = self.clone();
        g.advance(now, false);
        g.state()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thermal() -> ThermalConfig {
        ThermalConfig {
            boost_mhz: 2000.0,
            throttled_mhz: 500.0,
            heat_after_s: 2.0,
            recover_after_s: 4.0,
            idle_temp_c: 40.0,
            hot_temp_c: 80.0,
        }
    }

    #[test]
    fn heats_throttles_and_recovers_with_hysteresis() {
        let mut g = Gpu::new(Some(thermal()));
        assert_eq!(g.sm_clock_mhz(), 2000.0);
        g.advance(1.0, true);
        assert_eq!(g.sm_clock_mhz(), 2000.0);
        assert!((g.state().temperature_c - 60.0).abs() < 1e-9);
        g.advance(2.0, true);
        assert!(g.throttled());
        assert_eq!(g.sm_clock_mhz(), 500.0);
        assert_eq!(g.slowdown(), 4.0);
        let s = g.state();
        assert_eq!(s.throttle_reasons, vec!["sw_thermal_slowdown"]);
        assert!((s.temperature_c - 80.0).abs() < 1e-9);
        // Half-way cool: still throttled (hysteresis).
        g.advance(4.0, false);
        assert!(g.throttled());
        g.advance(6.0, false);
        assert!(!g.throttled());
        assert_eq!(g.sm_clock_mhz(), 2000.0);
    }

    #[test]
    fn without_thermal_model_stays_at_boost() {
        let mut g = Gpu::new(None);
        g.advance(1000.0, true);
        let s = g.state();
        assert_eq!(s.sm_clock_mhz, DEFAULT_BOOST_MHZ);
        assert!(!s.thermal_throttled);
        assert!(s.utilization_pct > 99.0);
        assert!(g.state_at(1010.0).utilization_pct < 1.0);
    }
}
