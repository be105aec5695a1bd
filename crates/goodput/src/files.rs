//! Opening the files a user names (profiles, workloads, reports, fitted engines):
//! regular files only, so that `/dev/zero` is not read until memory runs out and a
//! FIFO is not waited on forever; whole-file reads are bounded.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Largest text file goodput reads whole (a profile, a fitted engine's TOML).
pub const MAX_TEXT_BYTES: u64 = 64 << 20;

/// Opens `path` for reading if it is a regular file; the error names the path.
/// (Checked before the open too: opening a FIFO waits for a writer.)
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let not_regular = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a device, a FIFO or a socket)",
        )
    };
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_regular());
    }
    let f = File::open(path)?;
    if !f.metadata()?.is_file() {
        return Err(not_regular());
    }
    Ok(f)
}

/// Reads a regular file of at most [`MAX_TEXT_BYTES`] as UTF-8 text.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    let f = open_regular(path)?;
    let mut text = String::new();
    f.take(MAX_TEXT_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_TEXT_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("longer than {MAX_TEXT_BYTES} bytes"),
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_fifos_are_refused_at_once() {
        let e = read_text(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // No writer ever comes: an open for reading would wait forever.
        let e = read_text(&fifo).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let ok = dir.path().join("p.toml");
        std::fs::write(&ok, "name = \"x\"\n").unwrap();
        assert_eq!(read_text(&ok).unwrap(), "name = \"x\"\n");
    }
}
