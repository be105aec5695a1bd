//! The processes a test started, found with the library's one scan of `/proc`
//! (`goodput::drive::engine::process::processes`), and signals sent to them.

use std::path::Path;

use goodput::drive::engine::process::{self, ProcEntry};
pub use nix::sys::signal::Signal;

/// Live (not zombie) pids of process group `pgid`.
pub fn group(pgid: u32) -> Vec<u32> {
    process::group_members(pgid as i32)
        .expect("/proc is readable")
        .into_iter()
        .map(|p| p as u32)
        .collect()
}

/// The environment entry a test gives the goodput run writing `out`; the engines
/// it starts inherit it, which tells them apart from other tests' engines.
pub fn marker(out: &Path) -> String {
    format!("GOODPUT_TEST_MARKER={}", out.display())
}

/// Live processes whose environment holds `marker` (see [`marker`]).
pub fn marked(marker: &str) -> Vec<ProcEntry> {
    process::processes()
        .expect("/proc is readable")
        .filter(|p| p.is_live() && p.has_env(marker))
        .collect()
}

/// Sends `sig` to process `pid`; false when it no longer exists.
pub fn signal(pid: u32, sig: Signal) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).is_ok()
}

/// Sends `sig` to process group `pgid`; false when it no longer exists.
pub fn signal_group(pgid: u32, sig: Signal) -> bool {
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid as i32), sig).is_ok()
}
