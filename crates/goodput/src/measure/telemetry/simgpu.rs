//! The simulator's GPU as a telemetry source: `GET {engine}/sim/gpu`, answering
//! `{"name", "sm_clock_mhz", "mem_clock_mhz", "max_sm_clock_mhz", "temperature_c",
//! "power_w", "power_limit_w", "memory_used_mib", "memory_total_mib",
//! "utilization_pct", "throttle_reasons": [...], "thermal_throttled": bool}`.
//! Every field is optional; the GPU is index 0.

use std::time::Duration;

use futures_util::future::BoxFuture;
use report::GpuInfo;
use serde::Deserialize;

use super::{GpuReading, GpuSource, TelemetryError};

/// The longest one `GET /sim/gpu` may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// The body of `GET /sim/gpu`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SimGpu {
    /// Product name.
    #[serde(default)]
    pub name: Option<String>,
    /// SM clock, MHz.
    #[serde(default)]
    pub sm_clock_mhz: Option<f64>,
    /// Memory clock, MHz.
    #[serde(default)]
    pub mem_clock_mhz: Option<f64>,
    /// Maximum SM clock, MHz.
    #[serde(default)]
    pub max_sm_clock_mhz: Option<f64>,
    /// Temperature, Celsius.
    #[serde(default)]
    pub temperature_c: Option<f64>,
    /// Power draw, W.
    #[serde(default)]
    pub power_w: Option<f64>,
    /// Power limit, W.
    #[serde(default)]
    pub power_limit_w: Option<f64>,
    /// Memory in use, MiB.
    #[serde(default)]
    pub memory_used_mib: Option<f64>,
    /// Memory installed, MiB.
    #[serde(default)]
    pub memory_total_mib: Option<f64>,
    /// Utilisation, percent.
    #[serde(default)]
    pub utilization_pct: Option<f64>,
    /// Active throttle reasons, free text (`sw_thermal_slowdown`, ...).
    #[serde(default)]
    pub throttle_reasons: Vec<String>,
    /// A thermal slowdown is active.
    #[serde(default)]
    pub thermal_throttled: bool,
}

impl SimGpu {
    /// As a reading of GPU 0.
    pub fn reading(&self) -> GpuReading {
        let thermal = self.thermal_throttled
            || self
                .throttle_reasons
                .iter()
                .any(|r| r.to_ascii_lowercase().contains("thermal"));
        GpuReading {
            index: 0,
            name: self.name.clone(),
            sm_mhz: self.sm_clock_mhz,
            mem_mhz: self.mem_clock_mhz,
            max_sm_mhz: self.max_sm_clock_mhz,
            temp_c: self.temperature_c,
            power_w: self.power_w,
            power_limit_w: self.power_limit_w,
            mem_used_mib: self.memory_used_mib,
            mem_total_mib: self.memory_total_mib,
            util_pct: self.utilization_pct,
            thermal,
            energy_j: None,
        }
    }

    /// As the GPU's static facts.
    pub fn info(&self) -> GpuInfo {
        GpuInfo {
            index: 0,
            name: self.name.clone(),
            driver: Some("goodput-sim".into()),
            cuda_version: None,
            memory_mib: self.memory_total_mib,
            power_limit_w: self.power_limit_w,
            max_sm_clock_mhz: self.max_sm_clock_mhz,
            max_mem_clock_mhz: None,
        }
    }
}

/// The simulator's `/sim/gpu`.
pub struct SimGpuSource {
    url: String,
    client: reqwest::Client,
    info: GpuInfo,
}

async fn fetch(client: &reqwest::Client, url: &str) -> Result<SimGpu, String> {
    let resp = client
        .get(url)
        .timeout(REQUEST_TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("GET {url}: HTTP {}", resp.status().as_u16()));
    }
    let what = format!("GET {url}");
    crate::bounded::read_json::<SimGpu>(resp, crate::bounded::MAX_PROBE_BYTES, &what)
        .await
        .map_err(|e| e.to_string())
}

impl SimGpuSource {
    /// Opens the source if `{base}/sim/gpu` answers with a GPU.
    pub async fn open(
        base_url: &str,
        client: reqwest::Client,
    ) -> Result<SimGpuSource, TelemetryError> {
        let url = format!("{}/sim/gpu", base_url.trim_end_matches('/'));
        let first = fetch(&client, &url)
            .await
            .map_err(|e| TelemetryError::Unavailable(format!("no simulator GPU ({e})")))?;
        Ok(SimGpuSource {
            info: first.info(),
            url,
            client,
        })
    }
}

impl GpuSource for SimGpuSource {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn gpus(&self) -> Vec<GpuInfo> {
        vec![self.info.clone()]
    }

    fn read(&self) -> BoxFuture<'_, Result<Vec<GpuReading>, TelemetryError>> {
        Box::pin(async move {
            let gpu = fetch(&self.client, &self.url)
                .await
                .map_err(TelemetryError::Read)?;
            Ok(vec![gpu.reading()])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_to_reading() {
        let body = r#"{"name":"sim-L4","sm_clock_mhz":1290.0,"mem_clock_mhz":6250,
            "max_sm_clock_mhz":2040,"temperature_c":86.5,"power_w":70.1,"power_limit_w":72,
            "memory_used_mib":17000,"memory_total_mib":23034,"utilization_pct":100,
            "throttle_reasons":["sw_thermal_slowdown"],"thermal_throttled":false}"#;
        let gpu: SimGpu = serde_json::from_str(body).unwrap();
        let r = gpu.reading();
        assert_eq!(r.sm_mhz, Some(1290.0));
        assert_eq!(r.temp_c, Some(86.5));
        assert!(
            r.thermal,
            "a thermal reason counts even when the flag is false"
        );
        assert_eq!(gpu.info().max_sm_clock_mhz, Some(2040.0));
        let cool: SimGpu =
            serde_json::from_str(r#"{"throttle_reasons":["sw_power_cap"]}"#).unwrap();
        assert!(!cool.reading().thermal);
    }
}
