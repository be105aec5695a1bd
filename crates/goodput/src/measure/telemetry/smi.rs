//! `nvidia-smi` as a telemetry source: one long-running
//! `nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N` whose lines a
//! reader task parses, keeping the latest reading of each GPU.
//!
//! Drivers from R535 call the throttle fields `clocks_event_reasons.*`; older ones
//! know only `clocks_throttle_reasons.*` (newer ones still accept it). The source
//! asks with the newer spelling first and falls back to the older one. Fields a GPU
//! does not report read `[N/A]` or `[Not Supported]` and become `None`.
//!
//! The energy counter (`energy.consumption`, cumulative since the driver loaded) is
//! asked for only when a one-shot query of it with units succeeds and names a unit
//! this module knows ([`energy_unit_j`]); the sampling query then ends with it (the
//! sampling query has no units, so the unit comes from that probe).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use report::GpuInfo;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::{GpuReading, GpuSource, TelemetryError};

/// The sampled fields, in order, with `{R}` the throttle-reason prefix.
const QUERY: &str = "index,name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,\
power.limit,memory.used,memory.total,utilization.gpu,{R}.active,{R}.hw_thermal_slowdown,\
{R}.sw_thermal_slowdown";
/// Fields of [`QUERY`].
const FIELDS: usize = 14;
/// The two spellings of the throttle-reason fields, newest first.
const REASON_PREFIXES: [&str; 2] = ["clocks_event_reasons", "clocks_throttle_reasons"];
/// The static facts of each GPU.
const INFO_QUERY: &str =
    "index,name,driver_version,memory.total,power.limit,clocks.max.sm,clocks.max.mem";
/// nvidia-smi's cumulative energy field.
const ENERGY_FIELD: &str = "energy.consumption";
/// NVML's hardware and software thermal slowdown bits.
const THERMAL_BITS: u64 = 0x20 | 0x40;
/// The longest a one-shot `nvidia-smi` may take.
const ONE_SHOT_TIMEOUT: Duration = Duration::from_secs(15);

/// A value of a CSV field: `None` for `[N/A]`, `[Not Supported]`, `N/A` and blanks.
fn field(text: &str) -> Option<&str> {
    let t = text.trim();
    let unknown =
        t.is_empty() || t.eq_ignore_ascii_case("n/a") || (t.starts_with('[') && t.ends_with(']'));
    (!unknown).then_some(t)
}

fn number(text: &str) -> Option<f64> {
    field(text)?.parse().ok().filter(|v: &f64| v.is_finite())
}

fn is_active(text: &str) -> bool {
    field(text).is_some_and(|t| t.eq_ignore_ascii_case("active"))
}

fn bitmask(text: &str) -> Option<u64> {
    let t = field(text)?;
    let hex = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"))?;
    u64::from_str_radix(hex, 16).ok()
}

/// Splits a CSV row of `n` fields whose field 1 (the name) may itself hold commas.
fn split_row(line: &str, n: usize) -> Option<Vec<&str>> {
    let parts: Vec<&str> = line.split(',').collect();
    if parts.len() < n {
        return None;
    }
    let extra = parts.len() - n;
    let name_end = 2 + extra;
    let name_start = line.find(',')? + 1;
    let name_len: usize = parts[1..name_end]
        .iter()
        .map(|p| p.len() + 1)
        .sum::<usize>()
        - 1;
    let mut out = vec![parts[0], &line[name_start..name_start + name_len]];
    out.extend_from_slice(&parts[name_end..]);
    Some(out)
}

/// Joules per unit of an `energy.consumption` value printed with its unit
/// (`123456 mJ`, `123.4 J`, `1.5 kWh`); `None` for a value without a known unit.
pub fn energy_unit_j(value: &str) -> Option<f64> {
    let unit = field(value)?.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match unit.trim() {
        "mJ" => 1e-3,
        "J" => 1.0,
        "kJ" => 1e3,
        "mWh" => 3.6,
        "Wh" => 3600.0,
        "kWh" => 3.6e6,
        _ => return None,
    })
}

/// Parses one line of the sampling query.
pub fn parse_line(line: &str) -> Result<GpuReading, String> {
    parse_line_with(line, None)
}

/// Parses one line of the sampling query, which ends with `energy.consumption` (in
/// units of `energy_unit_j` joules) when that is given.
pub fn parse_line_with(line: &str, energy_unit_j: Option<f64>) -> Result<GpuReading, String> {
    let n = FIELDS + usize::from(energy_unit_j.is_some());
    let f = split_row(line.trim(), n)
        .ok_or_else(|| format!("expected {n} fields in `{}`", line.trim()))?;
    let index = field(f[0])
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| format!("bad GPU index in `{}`", line.trim()))?;
    let active_bits = bitmask(f[11]).unwrap_or(0);
    Ok(GpuReading {
        index,
        name: field(f[1]).map(str::to_string),
        sm_mhz: number(f[2]),
        mem_mhz: number(f[3]),
        max_sm_mhz: number(f[4]),
        temp_c: number(f[5]),
        power_w: number(f[6]),
        power_limit_w: number(f[7]),
        mem_used_mib: number(f[8]),
        mem_total_mib: number(f[9]),
        util_pct: number(f[10]),
        thermal: is_active(f[12]) || is_active(f[13]) || active_bits & THERMAL_BITS != 0,
        energy_j: energy_unit_j
            .and_then(|unit| Some(number(f.get(FIELDS)?)? * unit))
            .filter(|j| j.is_finite()),
    })
}

/// Parses one line of the info query (`index,name,driver_version,memory.total,
/// power.limit,clocks.max.sm,clocks.max.mem`).
pub fn parse_info_line(line: &str) -> Option<GpuInfo> {
    let f = split_row(line.trim(), 7)?;
    Some(GpuInfo {
        index: field(f[0])?.parse().ok()?,
        name: field(f[1]).map(str::to_string),
        driver: field(f[2]).map(str::to_string),
        cuda_version: None,
        memory_mib: number(f[3]),
        power_limit_w: number(f[4]),
        max_sm_clock_mhz: number(f[5]),
        max_mem_clock_mhz: number(f[6]),
    })
}

/// The `CUDA Version: 12.4` of plain `nvidia-smi`'s header.
pub fn parse_cuda_version(header: &str) -> Option<String> {
    let at = header.find("CUDA Version:")? + "CUDA Version:".len();
    let v: String = header[at..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (!v.is_empty()).then_some(v)
}

/// Runs `nvidia-smi ARGS` once; its stdout on success.
async fn one_shot(args: &[&str]) -> Result<String, TelemetryError> {
    let run = Command::new("nvidia-smi")
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(ONE_SHOT_TIMEOUT, run)
        .await
        .map_err(|_| TelemetryError::Unavailable("nvidia-smi did not answer".into()))?
        .map_err(|e| TelemetryError::Unavailable(format!("cannot run nvidia-smi: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let msg = String::from_utf8_lossy(&out.stdout);
        let text = if err.trim().is_empty() { msg } else { err };
        return Err(TelemetryError::Unavailable(format!(
            "nvidia-smi failed ({}): {}",
            out.status,
            text.trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The unit of `energy.consumption` in joules, from a one-shot query with units;
/// `None` when the field is not supported, or any GPU's value has no known unit.
async fn probe_energy_unit() -> Option<f64> {
    let out = one_shot(&[
        &format!("--query-gpu={ENERGY_FIELD}"),
        "--format=csv,noheader",
    ])
    .await
    .ok()?;
    let units: Vec<Option<f64>> = out
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(energy_unit_j)
        .collect();
    let first = (*units.first()?)?;
    units.iter().all(|u| *u == Some(first)).then_some(first)
}

/// GPU memory in use per GPU, MiB, via a one-shot `nvidia-smi` (blocking).
pub fn memory_used_mib() -> Option<Vec<f64>> {
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=memory.used", "--format=csv,noheader,nounits"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let used: Vec<f64> = text.lines().filter_map(number).collect();
    (!used.is_empty()).then_some(used)
}

/// The latest reading of each GPU, and when the reader last saw a line.
#[derive(Default)]
struct Latest {
    by_gpu: BTreeMap<u32, GpuReading>,
    updated: Option<Instant>,
    ended: Option<String>,
}

/// A long-running `nvidia-smi -lms N`.
pub struct SmiSource {
    gpus: Vec<GpuInfo>,
    latest: Arc<Mutex<Latest>>,
    stale_after: Duration,
    _child: Child,
}

impl SmiSource {
    /// Starts `nvidia-smi` sampling every `interval_ms`, after a one-shot query for
    /// the GPUs and the supported field spelling.
    pub async fn open(interval_ms: u64) -> Result<SmiSource, TelemetryError> {
        let info = one_shot(&[
            &format!("--query-gpu={INFO_QUERY}"),
            "--format=csv,noheader,nounits",
        ])
        .await?;
        let mut gpus: Vec<GpuInfo> = info.lines().filter_map(parse_info_line).collect();
        if gpus.is_empty() {
            return Err(TelemetryError::Unavailable(
                "nvidia-smi lists no GPU".into(),
            ));
        }
        if let Ok(header) = one_shot(&[]).await {
            let cuda = parse_cuda_version(&header);
            for g in &mut gpus {
                g.cuda_version = cuda.clone();
            }
        }
        let mut query = None;
        let mut last_err = None;
        for prefix in REASON_PREFIXES {
            let q = QUERY.replace("{R}", prefix);
            match one_shot(&[&format!("--query-gpu={q}"), "--format=csv,noheader,nounits"]).await {
                Ok(_) => {
                    query = Some(q);
                    break;
                }
                Err(e) => last_err = Some(e),
            }
        }
        let Some(mut query) = query else {
            return Err(last_err
                .unwrap_or_else(|| TelemetryError::Unavailable("nvidia-smi query failed".into())));
        };
        let unit = probe_energy_unit().await;
        if unit.is_some() {
            query = format!("{query},{ENERGY_FIELD}");
        }
        let mut child = Command::new("nvidia-smi")
            .arg(format!("--query-gpu={query}"))
            .arg("--format=csv,noheader,nounits")
            .arg("-lms")
            .arg(interval_ms.max(1).to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| TelemetryError::Unavailable(format!("cannot run nvidia-smi: {e}")))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| TelemetryError::Unavailable("nvidia-smi has no stdout".into()))?;
        let latest = Arc::new(Mutex::new(Latest::default()));
        let sink = latest.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            let end = loop {
                match lines.next_line().await {
                    Ok(Some(line)) if line.trim().is_empty() => {}
                    Ok(Some(line)) => {
                        let parsed = parse_line_with(&line, unit);
                        if let (Ok(reading), Ok(mut l)) = (parsed, sink.lock()) {
                            l.by_gpu.insert(reading.index, reading);
                            l.updated = Some(Instant::now());
                        }
                    }
                    Ok(None) => break "nvidia-smi exited".to_string(),
                    Err(e) => break format!("reading nvidia-smi: {e}"),
                }
            };
            if let Ok(mut l) = sink.lock() {
                l.ended = Some(end);
            }
        });
        let stale_after = (Duration::from_millis(interval_ms) * 5).max(Duration::from_secs(3));
        Ok(SmiSource {
            gpus,
            latest,
            stale_after,
            _child: child,
        })
    }
}

impl GpuSource for SmiSource {
    fn name(&self) -> &'static str {
        "nvidia-smi"
    }

    fn gpus(&self) -> Vec<GpuInfo> {
        self.gpus.clone()
    }

    fn read(&self) -> BoxFuture<'_, Result<Vec<GpuReading>, TelemetryError>> {
        let result = match self.latest.lock() {
            Err(_) => Err(TelemetryError::Read("nvidia-smi reader panicked".into())),
            Ok(l) => match (&l.ended, l.updated) {
                (Some(end), _) => Err(TelemetryError::Read(end.clone())),
                (None, None) => Err(TelemetryError::Read("no line from nvidia-smi yet".into())),
                (None, Some(at)) if at.elapsed() > self.stale_after => {
                    Err(TelemetryError::Read("nvidia-smi stopped printing".into()))
                }
                (None, Some(_)) => Ok(l.by_gpu.values().cloned().collect()),
            },
        };
        Box::pin(std::future::ready(result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/nvidia-smi/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn throttled_and_unthrottled_rows() {
        let rows: Vec<GpuReading> = fixture("l4-loop.csv")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| parse_line(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 5);
        let first = &rows[0];
        assert_eq!(first.name.as_deref(), Some("NVIDIA L4"));
        assert_eq!(first.sm_mhz, Some(2040.0));
        assert_eq!(first.max_sm_mhz, Some(2040.0));
        assert_eq!(first.power_w, Some(36.21));
        assert_eq!(first.mem_total_mib, Some(23034.0));
        assert!(!first.thermal);
        // Power capping alone (0x4) is not thermal.
        assert!(!rows[1].thermal);
        // Software, both, and hardware thermal slowdown.
        assert!(rows[2].thermal && rows[3].thermal && rows[4].thermal);
        assert_eq!(rows[4].sm_mhz, Some(360.0));
    }

    #[test]
    fn not_available_fields_are_none() {
        let text = fixture("geforce-na.csv");
        let mut lines = text.lines();
        let laptop = parse_line(lines.next().unwrap()).unwrap();
        assert_eq!(laptop.power_w, None);
        assert_eq!(laptop.power_limit_w, None);
        assert_eq!(laptop.util_pct, Some(87.0));
        assert!(!laptop.thermal);
        let t4 = parse_line(lines.next().unwrap()).unwrap();
        assert_eq!(t4.index, 1);
        assert_eq!(t4.mem_used_mib, None);
        assert_eq!(t4.util_pct, None);
        assert!(t4.thermal, "sw thermal slowdown is Active");
    }

    #[test]
    fn names_with_commas_and_bad_lines() {
        let line = "2, Weird, Name GPU, 1000, 5000, 2000, 40, 50.0, 100.0, 1, 2, 3, 0x0, Not Active, Not Active";
        let r = parse_line(line).unwrap();
        assert_eq!(r.name.as_deref(), Some("Weird, Name GPU"));
        assert_eq!(r.sm_mhz, Some(1000.0));
        assert!(parse_line("0, too, few").is_err());
        assert!(parse_line("x, a, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0x0, Active, Active").is_err());
    }

    #[test]
    fn info_and_cuda_version() {
        let info = parse_info_line(fixture("l4-info.csv").trim()).unwrap();
        assert_eq!(info.name.as_deref(), Some("NVIDIA L4"));
        assert_eq!(info.driver.as_deref(), Some("550.54.15"));
        assert_eq!(info.power_limit_w, Some(72.0));
        assert_eq!(info.max_sm_clock_mhz, Some(2040.0));
        assert_eq!(
            parse_cuda_version(&fixture("header.txt")).as_deref(),
            Some("12.4")
        );
        assert_eq!(parse_cuda_version("no header"), None);
    }
}
