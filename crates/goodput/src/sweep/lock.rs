//! One run per output: an exclusive lock held for the whole run, so that two runs
//! writing one report (and appending to one requests file) cannot both "succeed"
//! with a report that no longer matches its records.
//!
//! The report itself is replaced by a rename after every trial, so the lock is on
//! a file of its own beside it, `.NAME.lock`, which holds the holder's PID for the
//! message the second run gets. It is taken with `flock` (std's `File::try_lock`),
//! which the kernel drops when the holder dies, so a killed run leaves no stale
//! lock; the file is removed when the run ends. A lock file that was removed (or
//! replaced) between our open and our lock is opened again, so two runs never hold
//! locks on two different files of one name. The lock file is opened without
//! following a symbolic link (`O_NOFOLLOW`), and one with other hard links is
//! refused: the PID written into it would otherwise overwrite someone's file.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::UsageError;

/// The lock on one output, held until dropped.
#[derive(Debug)]
pub struct OutputLock {
    path: PathBuf,
    _file: File,
}

/// The lock file of `output`: `.NAME.lock` in the same directory.
pub fn lock_path(output: &Path) -> PathBuf {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    output.with_file_name(format!(".{name}.lock"))
}

impl OutputLock {
    /// Takes the lock of `output` (creating its directory), or fails at once with
    /// a usage error naming the PID that holds it.
    pub fn acquire(output: &Path) -> anyhow::Result<OutputLock> {
        if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                anyhow::anyhow!("cannot create the output directory {}: {e}", dir.display())
            })?;
        }
        let path = lock_path(output);
        loop {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
                .map_err(|e| open_error(&path, e))?;
            check_plain(&path, &file)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut pid = String::new();
                    let _ = file.read_to_string(&mut pid);
                    let holder = match pid.trim() {
                        "" => "another goodput process".to_string(),
                        p => format!("goodput process {p}"),
                    };
                    return Err(UsageError(format!(
                        "{} is being written by {holder} (it holds {}); wait for it to end, or choose another output with -o",
                        output.display(),
                        path.display()
                    ))
                    .into());
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(anyhow::anyhow!("cannot lock {}: {e}", path.display()))
                }
            }
            // The holder before us may have removed the file after we opened it:
            // then our lock is on a file nobody else will see. Open again.
            let same = match (file.metadata(), std::fs::metadata(&path)) {
                (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
                _ => false,
            };
            if !same {
                continue;
            }
            let _ = file.set_len(0);
            let _ = file.rewind();
            let _ = write!(file, "{}", std::process::id());
            let _ = file.flush();
            return Ok(OutputLock { path, _file: file });
        }
    }
}

/// Why the lock file could not be opened; a symbolic link there is the user's to
/// remove (`O_NOFOLLOW` fails with `ELOOP`).
fn open_error(path: &Path, e: std::io::Error) -> anyhow::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        return UsageError(format!(
            "the lock file {} is a symbolic link; goodput does not follow it (the PID it writes would overwrite the link's target): remove it, or choose another output with -o",
            path.display()
        ))
        .into();
    }
    anyhow::anyhow!("cannot open the lock file {}: {e}", path.display())
}

/// The opened lock file is a regular file with no other name: writing the PID
/// into it changes nothing else.
fn check_plain(path: &Path, file: &File) -> anyhow::Result<()> {
    let meta = file
        .metadata()
        .map_err(|e| anyhow::anyhow!("cannot read the lock file {}: {e}", path.display()))?;
    let problem = if !meta.is_file() {
        "is not a regular file"
    } else if meta.nlink() > 1 {
        "has other hard links (the PID it holds would change them too)"
    } else {
        return Ok(());
    };
    Err(UsageError(format!(
        "the lock file {} {problem}: remove it, or choose another output with -o",
        path.display()
    ))
    .into())
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        // Removed while still locked (the file closes after this), so a run that
        // opened it meanwhile finds a different file and opens again.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_output_fails_naming_the_holder_and_the_first_releases() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sub").join("r.json");
        let first = OutputLock::acquire(&out).unwrap();
        let pid = std::fs::read_to_string(lock_path(&out)).unwrap();
        assert_eq!(pid, std::process::id().to_string());
        let err = OutputLock::acquire(&out).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some());
        let text = err.to_string();
        assert!(
            text.contains(&format!("goodput process {}", std::process::id())),
            "{text}"
        );
        drop(first);
        assert!(!lock_path(&out).exists());
        let again = OutputLock::acquire(&out).unwrap();
        drop(again);
        // Another output in the same directory is not locked by this one.
        let _a = OutputLock::acquire(&out).unwrap();
        let _b = OutputLock::acquire(&dir.path().join("sub").join("other.json")).unwrap();
    }

    #[test]
    fn a_lock_file_that_is_a_link_is_refused_and_its_target_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        let precious = dir.path().join("precious.txt");
        std::fs::write(&precious, "keep me\n").unwrap();
        std::os::unix::fs::symlink(&precious, lock_path(&out)).unwrap();
        let err = OutputLock::acquire(&out).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some(), "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&lock_path(&out).display().to_string()) && text.contains("link"),
            "{text}"
        );
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me\n");
        // A hard link would be truncated the same way.
        std::fs::remove_file(lock_path(&out)).unwrap();
        std::fs::hard_link(&precious, lock_path(&out)).unwrap();
        let text = OutputLock::acquire(&out).unwrap_err().to_string();
        assert!(text.contains("link"), "{text}");
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me\n");
        // A dangling link is refused too (it would create its target).
        std::fs::remove_file(lock_path(&out)).unwrap();
        let elsewhere = dir.path().join("created-by-the-lock");
        std::os::unix::fs::symlink(&elsewhere, lock_path(&out)).unwrap();
        assert!(OutputLock::acquire(&out).is_err());
        assert!(!elsewhere.exists());
    }
}
