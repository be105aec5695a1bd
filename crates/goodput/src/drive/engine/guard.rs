//! The engine guard: `goodput engine-guard -- ARGV...`, the leader of the process
//! group of a launched vLLM or SGLang, so that nothing of the engine outlives a
//! goodput that is SIGKILLed.
//!
//! Why: a SIGKILLed goodput can clean up nothing. The parent-death signal
//! (`PR_SET_PDEATHSIG`) that goodput sets on the engine's leader kills the leader
//! alone; vLLM's API server then dies, but its engine core, its worker and
//! Python's `resource_tracker` (same process group, re-parented to init) keep
//! running, holding memory and the port. The guard runs the engine as its child in
//! its own group, sets its own parent-death signal to SIGUSR1, and on it SIGKILLs
//! the whole group (`kill(0, SIGKILL)`), itself included.
//!
//! Otherwise it stays out of the way: SIGTERM, SIGINT and SIGHUP sent to the group
//! reach the engine too, so the guard only waits (a no-op handler, not
//! `SIG_IGN`, which the engine would inherit through exec); when the engine exits
//! the guard exits the same way (its exit code, or the same signal).

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

extern "C" fn kill_group(_: libc::c_int) {
    // SAFETY: kill(2) is async-signal-safe; pid 0 is the caller's process group.
    unsafe {
        libc::kill(0, libc::SIGKILL);
    }
}

extern "C" fn ignore(_: libc::c_int) {}

/// Installs `handler` for `sig` (SA_RESTART, so waiting for the child resumes).
fn handle(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: a zeroed sigaction with a plain handler and an empty mask is valid;
    // the handlers only call async-signal-safe functions.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(sig, &action, std::ptr::null_mut());
    }
}

/// Runs `argv` under the guard; returns the exit code for the guard to exit with
/// (when the engine died of a signal, the guard raises the same signal first).
pub fn run(argv: &[String]) -> i32 {
    let Some((program, args)) = argv.split_first() else {
        eprintln!("error: goodput engine-guard: no command given");
        return 2;
    };
    // SAFETY: getppid and prctl have no memory effects.
    let parent = unsafe { libc::getppid() };
    handle(libc::SIGUSR1, kill_group);
    // SAFETY: as above.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGUSR1);
        if libc::getppid() != parent {
            kill_group(0); // goodput died before the signal was armed
        }
    }
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        handle(sig, ignore);
    }
    let mut child = match Command::new(program).args(args).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: cannot start `{program}`: {e}");
            return 127;
        }
    };
    let status = match child.wait() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: goodput engine-guard: cannot wait for `{program}`: {e}");
            kill_group(0);
            return 1;
        }
    };
    if let Some(code) = status.code() {
        return code;
    }
    if let Some(sig) = status.signal() {
        // SAFETY: restores the default action of `sig` and raises it on ourselves,
        // so the guard ends as the engine did.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        return 128 + sig;
    }
    1
}

/// The argv that runs `argv` under the guard, `goodput_exe` being goodput itself.
pub fn guarded(goodput_exe: &std::path::Path, argv: &[String]) -> Vec<String> {
    let mut out = vec![
        goodput_exe.display().to_string(),
        "engine-guard".to_string(),
        "--".to_string(),
    ];
    out.extend(argv.iter().cloned());
    out
}
