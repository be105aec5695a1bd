//! NVIDIA's dcgm-exporter as a telemetry source: its Prometheus `/metrics`
//! (`telemetry.url`, usually port 9400), read with [`crate::drive::engine::prom`]
//! (the reader of the engines' `/metrics`), a byte bound and a short timeout.
//!
//! Each sample names its GPU by the labels `gpu` (the index) and `UUID`; the product
//! name is the `modelName` label and the driver the `DCGM_FI_DRIVER_VERSION` label
//! (where the exporter is asked for it). The fields read, where exported:
//!
//! | DCGM field | reading |
//! |---|---|
//! | `DCGM_FI_DEV_POWER_USAGE` (W) | power |
//! | `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` (mJ since boot) | the energy counter ([`super::energy`]) |
//! | `DCGM_FI_DEV_SM_CLOCK`, `DCGM_FI_DEV_MEM_CLOCK` (MHz) | clocks |
//! | `DCGM_FI_DEV_MAX_SM_CLOCK`, `DCGM_FI_DEV_MAX_MEM_CLOCK` (MHz) | maximum clocks |
//! | `DCGM_FI_DEV_GPU_TEMP` (°C) | temperature |
//! | `DCGM_FI_DEV_GPU_UTIL` (%) | utilisation |
//! | `DCGM_FI_DEV_FB_USED`, `_FREE`, `_RESERVED`, `_TOTAL` (MiB) | memory used; installed: `_TOTAL`, else the sum |
//! | `DCGM_FI_DEV_ENFORCED_POWER_LIMIT`, `DCGM_FI_DEV_POWER_MGMT_LIMIT` (W) | power limit |
//! | `DCGM_FI_DEV_CLOCKS_EVENT_REASONS` / `DCGM_FI_DEV_CLOCK_THROTTLE_REASONS` | thermal: NVML's bits 0x20 (software) and 0x40 (hardware thermal slowdown) |
//!
//! A field missing, unparsable, negative, or holding one of DCGM's blank values
//! (`9223372036854775794` for a field a GPU does not support) is `None`. Samples of
//! a MIG instance (a non-empty `GPU_I_ID` label) describe part of a GPU and are
//! skipped; where a GPU has several samples of one field (one per pod using it),
//! the first counts. Lines that are not well-formed samples cost only themselves.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::BoxFuture;
use report::GpuInfo;

use super::{GpuReading, GpuSource, TelemetryError};
use crate::define::profile::GpuSelector;
use crate::drive::engine::prom;

/// The longest one `GET` of the exporter may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Bytes read of one answer: an 8-GPU node with every field of dcgm-exporter's lists
/// and pod labels writes a few hundred KB.
pub const MAX_BODY_BYTES: usize = 4 << 20;
/// NVML's software and hardware thermal slowdown bits of the clock-event reasons.
const THERMAL_BITS: u64 = 0x20 | 0x40;
/// DCGM's 64-bit float blank (2^47) and everything above it, the 64-bit integer
/// blanks included: not a measurement.
const FP64_BLANK: f64 = 140_737_488_355_328.0;
/// DCGM's 32-bit integer blanks (`0x7ffffff0..=0x7fffffff`).
const INT32_BLANKS: std::ops::RangeInclusive<f64> = 2_147_483_632.0..=2_147_483_647.0;

/// A field read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Power,
    Energy,
    SmClock,
    MemClock,
    MaxSmClock,
    MaxMemClock,
    Temp,
    Util,
    FbUsed,
    FbFree,
    FbReserved,
    FbTotal,
    EnforcedLimit,
    PowerLimit,
    Reasons,
}

const FIELD_COUNT: usize = 15;

/// The exporter's metric names; both spellings of the clock-event reasons (DCGM 3.3
/// renamed the throttle reasons).
const NAMES: [(&str, Field); 16] = [
    ("DCGM_FI_DEV_POWER_USAGE", Field::Power),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Field::Energy),
    ("DCGM_FI_DEV_SM_CLOCK", Field::SmClock),
    ("DCGM_FI_DEV_MEM_CLOCK", Field::MemClock),
    ("DCGM_FI_DEV_MAX_SM_CLOCK", Field::MaxSmClock),
    ("DCGM_FI_DEV_MAX_MEM_CLOCK", Field::MaxMemClock),
    ("DCGM_FI_DEV_GPU_TEMP", Field::Temp),
    ("DCGM_FI_DEV_GPU_UTIL", Field::Util),
    ("DCGM_FI_DEV_FB_USED", Field::FbUsed),
    ("DCGM_FI_DEV_FB_FREE", Field::FbFree),
    ("DCGM_FI_DEV_FB_RESERVED", Field::FbReserved),
    ("DCGM_FI_DEV_FB_TOTAL", Field::FbTotal),
    ("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", Field::EnforcedLimit),
    ("DCGM_FI_DEV_POWER_MGMT_LIMIT", Field::PowerLimit),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", Field::Reasons),
    ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", Field::Reasons),
];

/// One GPU as one answer of the exporter describes it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DcgmGpu {
    /// The `gpu` label.
    pub index: u32,
    /// The `UUID` label.
    pub uuid: Option<String>,
    /// The `modelName` label.
    pub name: Option<String>,
    /// The `DCGM_FI_DRIVER_VERSION` label.
    pub driver: Option<String>,
    values: [Option<f64>; FIELD_COUNT],
}

impl DcgmGpu {
    fn get(&self, f: Field) -> Option<f64> {
        self.values[f as usize]
    }

    /// Memory installed, MiB: `FB_TOTAL`, else used + free (+ reserved).
    fn mem_total_mib(&self) -> Option<f64> {
        self.get(Field::FbTotal).or_else(|| {
            let (used, free) = (self.get(Field::FbUsed)?, self.get(Field::FbFree)?);
            Some(used + free + self.get(Field::FbReserved).unwrap_or(0.0))
        })
    }

    fn power_limit_w(&self) -> Option<f64> {
        self.get(Field::EnforcedLimit)
            .or_else(|| self.get(Field::PowerLimit))
    }

    /// As a reading.
    pub fn reading(&self) -> GpuReading {
        let thermal = self
            .get(Field::Reasons)
            .is_some_and(|mask| (mask as u64) & THERMAL_BITS != 0);
        GpuReading {
            index: self.index,
            name: self.name.clone(),
            sm_mhz: self.get(Field::SmClock),
            mem_mhz: self.get(Field::MemClock),
            max_sm_mhz: self.get(Field::MaxSmClock),
            temp_c: self.get(Field::Temp),
            power_w: self.get(Field::Power),
            power_limit_w: self.power_limit_w(),
            mem_used_mib: self.get(Field::FbUsed),
            mem_total_mib: self.mem_total_mib(),
            util_pct: self.get(Field::Util),
            thermal,
            energy_j: self.get(Field::Energy).map(|mj| mj / 1000.0),
        }
    }

    /// As the GPU's static facts.
    pub fn info(&self) -> GpuInfo {
        GpuInfo {
            index: self.index,
            name: self.name.clone(),
            driver: self.driver.clone(),
            cuda_version: None,
            memory_mib: self.mem_total_mib(),
            power_limit_w: self.power_limit_w(),
            max_sm_clock_mhz: self.get(Field::MaxSmClock),
            max_mem_clock_mhz: self.get(Field::MaxMemClock),
        }
    }

    fn matches(&self, want: &GpuSelector) -> bool {
        match want {
            GpuSelector::Index(i) => self.index == *i,
            GpuSelector::Uuid(u) => self
                .uuid
                .as_deref()
                .is_some_and(|mine| mine.eq_ignore_ascii_case(u.trim())),
        }
    }
}

/// A measurement, or `None` for DCGM's blanks and impossible values.
fn measured(field: Field, v: f64) -> Option<f64> {
    let blank = v >= FP64_BLANK || (field != Field::Energy && INT32_BLANKS.contains(&v));
    (v.is_finite() && v >= 0.0 && !blank).then_some(v)
}

/// Every GPU of an exporter's answer, by index; never fails (a line that is not a
/// sample of a GPU is skipped).
pub fn parse(text: &str) -> Vec<DcgmGpu> {
    let mut gpus: BTreeMap<u32, DcgmGpu> = BTreeMap::new();
    for s in prom::samples(text) {
        let Some(&(_, field)) = NAMES.iter().find(|(n, _)| *n == s.name) else {
            continue;
        };
        if s.label("GPU_I_ID").is_some_and(|i| !i.is_empty()) {
            continue;
        }
        let Some(index) = s.label("gpu").and_then(|g| g.trim().parse::<u32>().ok()) else {
            continue;
        };
        let gpu = gpus.entry(index).or_insert_with(|| DcgmGpu {
            index,
            ..Default::default()
        });
        let label = |key: &str| s.label(key).filter(|v| !v.is_empty()).map(str::to_string);
        if gpu.uuid.is_none() {
            gpu.uuid = label("UUID").or_else(|| label("uuid"));
        }
        if gpu.name.is_none() {
            gpu.name = label("modelName");
        }
        if gpu.driver.is_none() {
            gpu.driver = label("DCGM_FI_DRIVER_VERSION");
        }
        let slot = &mut gpu.values[field as usize];
        if slot.is_none() {
            *slot = measured(field, s.value);
        }
    }
    gpus.into_values().collect()
}

/// The GPUs `want` names (all when empty), by index; an error naming what is not
/// there.
pub fn select(gpus: Vec<DcgmGpu>, want: &[GpuSelector]) -> Result<Vec<DcgmGpu>, String> {
    if want.is_empty() {
        return Ok(gpus);
    }
    let missing: Vec<String> = want
        .iter()
        .filter(|w| !gpus.iter().any(|g| g.matches(w)))
        .map(ToString::to_string)
        .collect();
    if !missing.is_empty() {
        let listed: Vec<String> = gpus
            .iter()
            .map(|g| match &g.uuid {
                Some(u) => format!("{} ({u})", g.index),
                None => g.index.to_string(),
            })
            .collect();
        return Err(format!(
            "no GPU {} in the exporter's answer (it lists {})",
            missing.join(", "),
            if listed.is_empty() {
                "none".to_string()
            } else {
                listed.join(", ")
            }
        ));
    }
    Ok(gpus
        .into_iter()
        .filter(|g| want.iter().any(|w| g.matches(w)))
        .collect())
}

/// The metrics URL: `url` as given, or with `/metrics` when it has no path.
pub fn metrics_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if u.path() == "/" || u.path().is_empty() => {
            u.set_path("/metrics");
            u.to_string()
        }
        _ => url.to_string(),
    }
}

async fn fetch(client: &reqwest::Client, url: &str) -> Result<Vec<DcgmGpu>, String> {
    let what = format!("GET {url}");
    let resp = client
        .get(url)
        .timeout(REQUEST_TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("{what}: {}", e.without_url()))?;
    if !resp.status().is_success() {
        return Err(format!("{what}: HTTP {}", resp.status().as_u16()));
    }
    let body = crate::bounded::read_bounded(resp, MAX_BODY_BYTES, &what)
        .await
        .map_err(|e| e.to_string())?;
    let gpus = parse(&String::from_utf8_lossy(&body));
    if gpus.is_empty() {
        return Err(format!(
            "{what}: no DCGM_FI_DEV_* sample with a `gpu` label (not a dcgm-exporter?)"
        ));
    }
    Ok(gpus)
}

/// A dcgm-exporter's `/metrics`.
pub struct DcgmSource {
    url: String,
    client: reqwest::Client,
    /// The GPUs chosen when opened, by index.
    indices: Vec<u32>,
    gpus: Vec<GpuInfo>,
}

impl DcgmSource {
    /// Opens the source if `url` answers with the GPUs `want` names (all when empty).
    pub async fn open(
        url: Option<&str>,
        want: &[GpuSelector],
        client: reqwest::Client,
    ) -> Result<DcgmSource, TelemetryError> {
        let unavailable = |why: String| TelemetryError::Unavailable(format!("no DCGM ({why})"));
        let url = metrics_url(url.ok_or_else(|| unavailable("no telemetry.url".into()))?);
        let chosen =
            select(fetch(&client, &url).await.map_err(unavailable)?, want).map_err(unavailable)?;
        Ok(DcgmSource {
            indices: chosen.iter().map(|g| g.index).collect(),
            gpus: chosen.iter().map(DcgmGpu::info).collect(),
            url,
            client,
        })
    }
}

impl GpuSource for DcgmSource {
    fn name(&self) -> &'static str {
        "dcgm"
    }

    fn gpus(&self) -> Vec<GpuInfo> {
        self.gpus.clone()
    }

    fn read(&self) -> BoxFuture<'_, Result<Vec<GpuReading>, TelemetryError>> {
        Box::pin(async move {
            let gpus = fetch(&self.client, &self.url)
                .await
                .map_err(TelemetryError::Read)?;
            let readings: Vec<GpuReading> = gpus
                .iter()
                .filter(|g| self.indices.contains(&g.index))
                .map(DcgmGpu::reading)
                .collect();
            if readings.is_empty() {
                return Err(TelemetryError::Read(format!(
                    "GET {}: none of the chosen GPUs in the answer",
                    self.url
                )));
            }
            Ok(readings)
        })
    }
}

#[cfg(test)]
#[path = "dcgm_tests.rs"]
mod tests;
