//! Reading a workload's source file once, with its SHA-256 taken on the way (the
//! report names the file and its digest, so two reports can be told apart).

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

/// A reader that hashes what passes through it.
pub struct Hashing<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Hashing<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        Hashing {
            inner,
            hasher: Sha256::new(),
        }
    }

    /// The SHA-256 (hex) of everything read so far; reads the rest first, so the
    /// digest is the whole file's.
    pub fn finish(mut self) -> std::io::Result<String> {
        std::io::copy(&mut self, &mut std::io::sink())?;
        Ok(self
            .hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// A buffered reader of a file that hashes every byte read from the file.
pub type Source = std::io::BufReader<Hashing<std::fs::File>>;

/// Opens `path` for reading through a hasher, with the error naming the file.
pub fn open(path: &Path) -> Result<Source, String> {
    let f = crate::files::open_regular(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    Ok(std::io::BufReader::with_capacity(1 << 20, Hashing::new(f)))
}

/// The whole file's SHA-256 (hex): what was read, then the rest.
pub fn digest(source: Source, path: &Path) -> Result<String, String> {
    source
        .into_inner()
        .finish()
        .map_err(|e| format!("{}: {e}", path.display()))
}
