//! Root certificates beyond the built-in ones (Mozilla's, as `webpki-roots`
//! ships them), so that an engine behind a private CA can be trusted: the files of
//! `--ca-cert` and of an engine's `ca_cert`, and the standard variables
//! `SSL_CERT_FILE` (a PEM bundle) and `SSL_CERT_DIR` (folders of PEM files,
//! separated by `:`). They are added to the built-in roots, never in their place.
//!
//! A file this run names (`--ca-cert`, `ca_cert`) that is missing, not a regular
//! file, or holds no certificate goodput can use is a usage error naming it (exit
//! 2), before anything runs. The variables are the machine's: a bad one is said on
//! stderr and skipped; in a folder of `SSL_CERT_DIR`, files that are not PEM
//! certificates are skipped (such folders hold other files too).

use std::path::{Path, PathBuf};

use reqwest::Certificate;

use crate::UsageError;

/// Where a certificate file was named: `--ca-cert`, `SSL_CERT_FILE`, an engine's
/// `ca_cert`; said in the error.
#[derive(Debug, Clone, PartialEq)]
pub struct CaFile {
    /// Who named it (`--ca-cert`, `engines.NAME.ca_cert`).
    pub named_by: String,
    /// The file.
    pub path: PathBuf,
}

/// The certificates of `files`, then of `SSL_CERT_FILE` and `SSL_CERT_DIR` when
/// set (`env` reads a variable: `std::env::var_os` outside tests).
pub fn roots(
    files: &[CaFile],
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<Vec<Certificate>, UsageError> {
    let mut out = Vec::new();
    for f in files {
        out.extend(pem_file(&f.path).map_err(|e| bad(&f.named_by, &f.path, &e))?);
    }
    // The environment's variables are the machine's, not this run's: one that
    // names a bad file is said and skipped (a run of plain `http` engines must not
    // fail on it), where a file this run named is an error.
    if let Some(path) = env("SSL_CERT_FILE").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        match pem_file(&path) {
            Ok(certs) => out.extend(certs),
            Err(e) => skipped(&bad("SSL_CERT_FILE", &path, &e)),
        }
    }
    if let Some(dirs) = env("SSL_CERT_DIR").filter(|p| !p.is_empty()) {
        for dir in std::env::split_paths(&dirs).filter(|d| !d.as_os_str().is_empty()) {
            match pem_dir(&dir) {
                Ok(certs) => out.extend(certs),
                Err(e) => skipped(&bad("SSL_CERT_DIR", &dir, &e)),
            }
        }
    }
    Ok(out)
}

/// Says on stderr that a variable's certificates were not used, and why.
fn skipped(e: &UsageError) {
    eprintln!(
        "notice: {}; not used (an engine behind that CA will fail its TLS handshake)",
        crate::term::safe(&e.0)
    );
}

fn bad(named_by: &str, path: &Path, why: &str) -> UsageError {
    UsageError(format!(
        "{named_by} {}: {why} (a PEM file of CA certificates is expected)",
        path.display()
    ))
}

/// The certificates of one PEM file: at least one, each one rustls accepts as a
/// root.
fn pem_file(path: &Path) -> Result<Vec<Certificate>, String> {
    let text = crate::files::read_text(path).map_err(|e| e.to_string())?;
    let certs = Certificate::from_pem_bundle(text.as_bytes()).map_err(|e| e.to_string())?;
    if certs.is_empty() {
        return Err("holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)".into());
    }
    // Checked here, so the error names the file (the client's own build would
    // only say that some certificate is bad).
    certs
        .iter()
        .try_fold(reqwest::Client::builder(), |b, c| {
            Ok::<_, String>(b.add_root_certificate(c.clone()))
        })?
        .build()
        .map_err(|e| format!("not a usable certificate: {e}"))?;
    Ok(certs)
}

/// The certificates of every PEM file directly in `dir` (others skipped).
fn pem_dir(dir: &Path) -> Result<Vec<Certificate>, String> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    names.sort();
    Ok(names
        .iter()
        .filter_map(|p| pem_file(p).ok())
        .flatten()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<std::ffi::OsString> {
        None
    }

    #[test]
    fn missing_empty_and_device_files_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let garbled = dir.path().join("garbled.pem");
        std::fs::write(
            &garbled,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        for path in [
            dir.path().join("missing.pem"),
            empty,
            garbled,
            PathBuf::from("/dev/zero"),
        ] {
            let f = CaFile {
                named_by: "--ca-cert".into(),
                path: path.clone(),
            };
            let e = roots(&[f], none).unwrap_err().0;
            assert!(
                e.starts_with(&format!("--ca-cert {}: ", path.display())),
                "{e}"
            );
        }
        // The machine's variables naming a bad file are skipped (said on
        // stderr), not an error: a run of plain `http` engines must not fail on
        // them.
        let none_added = roots(&[], |v| {
            (v == "SSL_CERT_FILE").then(|| dir.path().join("gone.pem").into_os_string())
        })
        .unwrap();
        assert!(none_added.is_empty());
        let none_added = roots(&[], |v| {
            (v == "SSL_CERT_DIR").then(|| dir.path().join("no-dir").into_os_string())
        })
        .unwrap();
        assert!(none_added.is_empty());
        // Unset or empty variables add nothing.
        assert!(roots(&[], |_| Some("".into())).unwrap().is_empty());
    }
}
