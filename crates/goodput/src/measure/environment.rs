//! What ran where: goodput's version and commit, the host, the GPUs and the engines,
//! for the report's `environment`.
//!
//! Host facts come from Linux's `/proc` and `/etc/os-release`; on other systems, or
//! where a file is unreadable, the field is left out rather than guessed.

use indexmap::IndexMap;
use report::{EngineEnv, Environment, GpuInfo, HostInfo};

/// goodput's git commit, embedded by `build.rs` when built from a checkout.
pub const GIT_COMMIT: Option<&str> = option_env!("GOODPUT_GIT_COMMIT");

/// Captures the environment of a run: goodput itself, the host, the GPUs telemetry
/// saw, and the engines as they were run.
pub fn capture(telemetry_gpus: Vec<GpuInfo>, engines: IndexMap<String, EngineEnv>) -> Environment {
    Environment {
        goodput_version: Some(env!("CARGO_PKG_VERSION").to_string()),
        git_commit: GIT_COMMIT.filter(|c| !c.is_empty()).map(str::to_string),
        host: Some(host()),
        gpus: telemetry_gpus,
        engines,
        extra: Default::default(),
    }
}

/// The host's CPU, memory, OS and kernel.
pub fn host() -> HostInfo {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    HostInfo {
        hostname: read("/proc/sys/kernel/hostname")
            .map(|t| t.trim().to_string())
            .filter(|h| !h.is_empty()),
        cpu_model: read("/proc/cpuinfo").and_then(|t| cpu_model(&t)),
        cpus: std::thread::available_parallelism()
            .ok()
            .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
            .or_else(|| read("/proc/cpuinfo").map(|t| logical_cpus(&t))),
        memory_mib: read("/proc/meminfo").and_then(|t| memory_mib(&t)),
        os: read("/etc/os-release")
            .and_then(|t| os_pretty_name(&t))
            .or_else(|| Some(std::env::consts::OS.to_string())),
        kernel: read("/proc/sys/kernel/osrelease")
            .map(|t| t.trim().to_string())
            .filter(|k| !k.is_empty()),
    }
}

/// The first `model name` (x86) or `Model`/`Hardware` (ARM) of `/proc/cpuinfo`.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    ["model name", "Model", "Hardware", "cpu model"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k.trim() == *key && !v.trim().is_empty()).then(|| v.trim().to_string())
            })
        })
}

/// The number of `processor` entries of `/proc/cpuinfo`.
pub fn logical_cpus(cpuinfo: &str) -> u32 {
    let n = cpuinfo
        .lines()
        .filter(|l| {
            l.split_once(':')
                .is_some_and(|(k, _)| k.trim() == "processor")
        })
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `MemTotal` of `/proc/meminfo`, in MiB.
pub fn memory_mib(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut parts = line["MemTotal:".len()..].split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    let mib = match parts.next().map(str::to_ascii_lowercase).as_deref() {
        Some("kb") | None => value / 1024,
        Some("mb") => value,
        Some("gb") => value * 1024,
        Some(_) => return None,
    };
    Some(mib)
}

/// `PRETTY_NAME` of `/etc/os-release`, unquoted.
pub fn os_pretty_name(os_release: &str) -> Option<String> {
    let line = os_release.lines().find(|l| l.starts_with("PRETTY_NAME="))?;
    let value = line["PRETTY_NAME=".len()..].trim();
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        .unwrap_or(value);
    (!value.is_empty()).then(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_and_os_release() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\n\
                       processor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(
            cpu_model(cpuinfo).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        assert_eq!(logical_cpus(cpuinfo), 2);
        let arm =
            "processor\t: 0\nBogoMIPS\t: 50.00\n\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n";
        assert_eq!(
            cpu_model(arm).as_deref(),
            Some("Raspberry Pi 4 Model B Rev 1.4")
        );
        let meminfo = "MemTotal:       16374420 kB\nMemFree:         1024 kB\n";
        assert_eq!(memory_mib(meminfo), Some(15990));
        assert_eq!(memory_mib("MemFree: 1 kB\n"), None);
        let os = "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nID=ubuntu\n";
        assert_eq!(os_pretty_name(os).as_deref(), Some("Ubuntu 22.04.4 LTS"));
        assert_eq!(
            os_pretty_name("PRETTY_NAME=Debian\n").as_deref(),
            Some("Debian")
        );
        assert_eq!(os_pretty_name("ID=x\n"), None);
    }

    #[test]
    fn capture_fills_goodput_and_host() {
        let gpus = vec![GpuInfo {
            index: 0,
            name: Some("NVIDIA L4".into()),
            ..Default::default()
        }];
        let mut engines = IndexMap::new();
        engines.insert(
            "a".to_string(),
            EngineEnv {
                kind: "sim".into(),
                ..Default::default()
            },
        );
        let env = capture(gpus.clone(), engines);
        assert_eq!(
            env.goodput_version.as_deref(),
            Some(env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(env.gpus, gpus);
        assert_eq!(env.engines.len(), 1);
        let host = env.host.unwrap();
        assert!(host.cpus.unwrap_or(0) >= 1);
        if cfg!(target_os = "linux") {
            assert!(host.memory_mib.unwrap_or(0) > 0);
            assert!(host.kernel.is_some());
        }
    }
}
