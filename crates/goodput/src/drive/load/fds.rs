//! File descriptors: every request in flight holds a socket, so a load needs as
//! many descriptors as it has requests in flight at most, and a few more for
//! goodput's own files (the report, the records, engine logs, probes).
//!
//! At start, the soft `RLIMIT_NOFILE` is raised to the hard limit, as servers do
//! (a shell's default soft limit is often 1024, the hard one far above), and the
//! hard one too when the load needs more and the process may raise it
//! (`CAP_SYS_RESOURCE`, up to `fs.nr_open`); a plan
//! whose load cannot fit under it even so is refused before anything runs, with
//! the limit and how to raise it. A connection that fails for want of descriptors
//! anyway is the client's failure (`client_limit`), never the server's `connect`;
//! and a few descriptors are held in reserve ([`reserve`]) so that the report is
//! written even then ([`with_reserve`]).

use std::sync::Mutex;

use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};

use crate::define::plan::Plan;
use crate::define::profile::LoadMode;

/// Descriptors kept for goodput's own files and connections beside the load's
/// sockets (report and records, engine logs and pipes, probes, `/metrics`).
pub const MARGIN: u64 = 64;

/// Descriptors held in reserve for writing the report: the report's temporary
/// file, its folder (synced), the records file, and one to spare.
const RESERVED: usize = 4;

static RESERVE: Mutex<Vec<std::fs::File>> = Mutex::new(Vec::new());

/// Holds `RESERVED` descriptors (on `/dev/null`) until `with_reserve` needs
/// them.
pub fn reserve() {
    let mut held = RESERVE.lock().unwrap_or_else(|e| e.into_inner());
    while held.len() < RESERVED {
        match std::fs::File::open("/dev/null") {
            Ok(f) => held.push(f),
            Err(_) => break,
        }
    }
}

/// Runs `write`; when it fails for want of descriptors (`out_of_files`), frees
/// the reserve, runs it once more, and takes the reserve back. So a run whose
/// requests used every descriptor still writes its report.
pub fn with_reserve<T, E>(
    mut write: impl FnMut() -> Result<T, E>,
    out_of_files: impl Fn(&E) -> bool,
) -> Result<T, E> {
    match write() {
        Err(e) if out_of_files(&e) => {
            RESERVE.lock().unwrap_or_else(|e| e.into_inner()).clear();
            let again = write();
            reserve();
            again
        }
        done => done,
    }
}

/// Raises the descriptor limit as far as this process may toward `want`: the
/// hard limit too when `want` is above it and the process is allowed to
/// (`CAP_SYS_RESOURCE`; up to the kernel's `fs.nr_open`), else the soft limit to
/// the hard one ([`raise_limit`]). The soft limit now.
pub fn raise_limit_toward(want: u64) -> Option<u64> {
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if want > hard && hard != RLIM_INFINITY {
        let ceiling = nr_open().map_or(want, |n| want.min(n));
        if ceiling > hard && setrlimit(Resource::RLIMIT_NOFILE, ceiling, ceiling).is_ok() {
            return Some(ceiling);
        }
    }
    raise_limit()
}

/// The most descriptors the kernel lets any process have (`fs.nr_open`).
fn nr_open() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Raises the soft descriptor limit to the hard one; the soft limit now (`None`
/// when it cannot be read, or is unlimited).
pub fn raise_limit() -> Option<u64> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return (hard != RLIM_INFINITY).then_some(hard);
    }
    (soft != RLIM_INFINITY).then_some(soft)
}

/// The most requests the plan can have in flight at once: its highest
/// concurrency (or a search's upper bound), at most its requests per trial; with
/// a rate, its `max_concurrency` (`None` without one: an open loop is not
/// bounded in advance).
pub fn most_in_flight(plan: &Plan) -> Option<u64> {
    let top = match plan.mode {
        LoadMode::Concurrency => plan
            .points
            .iter()
            .copied()
            .chain(plan.search.as_ref().map(|s| s.max))
            .fold(0.0f64, f64::max)
            .ceil() as u64,
        LoadMode::Rate | LoadMode::Trace => u64::from(plan.max_concurrency?),
    };
    Some(match plan.mode {
        LoadMode::Concurrency => top.min(u64::from(plan.requests_per_trial.max(1))),
        _ => top,
    })
}

/// Raises the limit ([`raise_limit`]) and refuses a plan whose load cannot fit
/// under it: the most requests in flight plus [`MARGIN`] above the limit. The
/// message names the limit and how to raise it.
pub fn fit(plan: &Plan) -> Result<(), String> {
    let load = most_in_flight(plan);
    let limit = match load {
        Some(load) => raise_limit_toward(load + MARGIN),
        None => raise_limit(),
    };
    reserve();
    let (Some(limit), Some(load)) = (limit, load) else {
        return Ok(());
    };
    if load + MARGIN <= limit {
        return Ok(());
    }
    Err(format!(
        "the load needs up to {load} connections at once, and goodput {MARGIN} more file \
         descriptors of its own, but this process may open only {limit} (RLIMIT_NOFILE, hard \
         limit): raise it (`ulimit -n {}` in the shell as root, `LimitNOFILE=` for a systemd \
         service, `nofile` in /etc/security/limits.conf) or lower the load",
        load + MARGIN
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raising_keeps_a_soft_limit_that_is_already_the_hard_one() {
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        let now = raise_limit();
        assert_eq!(now, (hard != RLIM_INFINITY).then_some(hard));
        assert_eq!(raise_limit(), now);
        // Asking for no more than the hard limit changes nothing.
        assert_eq!(raise_limit_toward(1), now);
    }
}
