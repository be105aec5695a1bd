//! NVML as a telemetry source: `libnvidia-ml.so` loaded at run time through
//! `nvml-wrapper`; a machine without the driver simply has no such source.
//!
//! NVML calls are short and blocking; each read runs on tokio's blocking pool.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::{Device, Nvml};
use report::GpuInfo;

use super::{GpuReading, GpuSource, TelemetryError};

const MIB: f64 = 1024.0 * 1024.0;

/// An initialised NVML.
pub struct NvmlSource {
    nvml: Arc<Nvml>,
    gpus: Vec<GpuInfo>,
}

impl NvmlSource {
    /// Loads the library and lists the GPUs.
    pub async fn open() -> Result<NvmlSource, TelemetryError> {
        tokio::task::spawn_blocking(open_blocking)
            .await
            .map_err(|e| TelemetryError::Unavailable(format!("NVML probe failed: {e}")))?
    }
}

fn open_blocking() -> Result<NvmlSource, TelemetryError> {
    let nvml = Nvml::init().map_err(|e| TelemetryError::Unavailable(format!("NVML: {e}")))?;
    let count = nvml
        .device_count()
        .map_err(|e| TelemetryError::Unavailable(format!("NVML: {e}")))?;
    if count == 0 {
        return Err(TelemetryError::Unavailable("NVML lists no GPU".into()));
    }
    let driver = nvml.sys_driver_version().ok();
    let cuda = nvml.sys_cuda_driver_version().ok().map(|v| {
        format!(
            "{}.{}",
            nvml_wrapper::cuda_driver_version_major(v),
            nvml_wrapper::cuda_driver_version_minor(v)
        )
    });
    let mut gpus = Vec::new();
    for index in 0..count {
        let Ok(dev) = nvml.device_by_index(index) else {
            continue;
        };
        gpus.push(GpuInfo {
            index,
            name: dev.name().ok(),
            driver: driver.clone(),
            cuda_version: cuda.clone(),
            memory_mib: dev.memory_info().ok().map(|m| m.total as f64 / MIB),
            power_limit_w: dev
                .enforced_power_limit()
                .ok()
                .map(|mw| f64::from(mw) / 1000.0),
            max_sm_clock_mhz: dev.max_clock_info(Clock::SM).ok().map(f64::from),
            max_mem_clock_mhz: dev.max_clock_info(Clock::Memory).ok().map(f64::from),
        });
    }
    if gpus.is_empty() {
        return Err(TelemetryError::Unavailable("NVML could open no GPU".into()));
    }
    Ok(NvmlSource {
        nvml: Arc::new(nvml),
        gpus,
    })
}

fn reading(index: u32, dev: &Device) -> GpuReading {
    let memory = dev.memory_info().ok();
    let thermal = dev.current_throttle_reasons().is_ok_and(|r| {
        r.intersects(ThrottleReasons::HW_THERMAL_SLOWDOWN | ThrottleReasons::SW_THERMAL_SLOWDOWN)
    });
    GpuReading {
        index,
        name: dev.name().ok(),
        sm_mhz: dev.clock_info(Clock::SM).ok().map(f64::from),
        mem_mhz: dev.clock_info(Clock::Memory).ok().map(f64::from),
        max_sm_mhz: dev.max_clock_info(Clock::SM).ok().map(f64::from),
        temp_c: dev.temperature(TemperatureSensor::Gpu).ok().map(f64::from),
        power_w: dev.power_usage().ok().map(|mw| f64::from(mw) / 1000.0),
        power_limit_w: dev
            .enforced_power_limit()
            .ok()
            .map(|mw| f64::from(mw) / 1000.0),
        mem_used_mib: memory.as_ref().map(|m| m.used as f64 / MIB),
        mem_total_mib: memory.as_ref().map(|m| m.total as f64 / MIB),
        util_pct: dev.utilization_rates().ok().map(|u| f64::from(u.gpu)),
        thermal,
        // Volta and newer; mJ since the driver loaded.
        energy_j: dev
            .total_energy_consumption()
            .ok()
            .map(|mj| mj as f64 / 1000.0),
    }
}

fn read_all(nvml: &Nvml, gpus: &[GpuInfo]) -> Result<Vec<GpuReading>, TelemetryError> {
    let mut out = Vec::with_capacity(gpus.len());
    for g in gpus {
        let dev = nvml
            .device_by_index(g.index)
            .map_err(|e| TelemetryError::Read(format!("NVML GPU {}: {e}", g.index)))?;
        out.push(reading(g.index, &dev));
    }
    Ok(out)
}

impl GpuSource for NvmlSource {
    fn name(&self) -> &'static str {
        "nvml"
    }

    fn gpus(&self) -> Vec<GpuInfo> {
        self.gpus.clone()
    }

    fn read(&self) -> BoxFuture<'_, Result<Vec<GpuReading>, TelemetryError>> {
        let nvml = self.nvml.clone();
        let gpus = self.gpus.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || read_all(&nvml, &gpus))
                .await
                .map_err(|e| TelemetryError::Read(format!("NVML read task: {e}")))?
        })
    }
}

/// GPU memory in use per GPU, MiB, via NVML (blocking); `None` without NVML.
pub fn memory_used_mib() -> Option<Vec<f64>> {
    let nvml = Nvml::init().ok()?;
    let count = nvml.device_count().ok()?;
    let used: Vec<f64> = (0..count)
        .filter_map(|i| nvml.device_by_index(i).ok())
        .filter_map(|d| d.memory_info().ok())
        .map(|m| m.used as f64 / MIB)
        .collect();
    (!used.is_empty()).then_some(used)
}
