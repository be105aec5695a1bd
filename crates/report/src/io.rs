//! Reading and writing reports.
//!
//! Writing is atomic: the report goes to a temporary file in the same directory,
//! which is flushed to disk and renamed over the target, so a crash leaves either
//! the old report or the new one, never half of one.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::types::Report;

/// Largest report file goodput reads (a report is a few hundred KiB at most).
pub const MAX_REPORT_BYTES: u64 = 256 * 1024 * 1024;

/// Errors reading or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The file could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said (in the message, not a separate cause, so that error
        /// chains print it once).
        error: std::io::Error,
    },
    /// The file is not a report.
    #[error("{path}: not a goodput report: {error}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Where and why parsing failed (line and column).
        error: serde_json::Error,
    },
    /// The report could not be serialised; nothing was written.
    #[error("{path}: the report cannot be written as JSON ({error}); the file was left as it was")]
    Serialize {
        /// The file that was to be written.
        path: PathBuf,
        /// What serde_json said.
        error: serde_json::Error,
    },
    /// The path is not a regular file (a device, a FIFO, a socket).
    #[error("{path}: not a regular file (a device, a FIFO or a socket), so not a report")]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The file is larger than [`MAX_REPORT_BYTES`].
    #[error("{path}: {size} bytes is larger than the {MAX_REPORT_BYTES}-byte limit for a report")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
}

/// Parses a report from JSON text.
pub fn parse_report(text: &str) -> Result<Report, serde_json::Error> {
    serde_json::from_str(text)
}

/// Reads a report file.
pub fn read_report(path: &Path) -> Result<Report, ReportError> {
    let io = |error| ReportError::Io {
        path: path.to_path_buf(),
        error,
    };
    // Checked before the open too: opening a FIFO waits for a writer.
    if !fs::metadata(path).map_err(io)?.is_file() {
        return Err(ReportError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let file = File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    // A device (`/dev/zero`) or a FIFO has no size to check and would be read
    // forever, or waited on forever.
    if !meta.is_file() {
        return Err(ReportError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let size = meta.len();
    if size > MAX_REPORT_BYTES {
        return Err(ReportError::TooLarge {
            path: path.to_path_buf(),
            size,
        });
    }
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut std::io::Read::take(file, MAX_REPORT_BYTES + 1),
        &mut text,
    )
    .map_err(io)?;
    parse_report(&text).map_err(|error| ReportError::Parse {
        path: path.to_path_buf(),
        error,
    })
}

/// Serialises a report as pretty JSON (one-space indent, like the reference).
///
/// Fails (rather than writing something else) when a value cannot be written as
/// JSON, e.g. a non-finite number in a field that has no `null` form.
pub fn to_json(report: &Report) -> Result<String, serde_json::Error> {
    to_json_of(report)
}

/// Any value written as [`to_json`] writes a report (one-space indent, a final
/// newline): a report already turned into a `serde_json::Value`, say.
pub fn to_json_of<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    serde::Serialize::serialize(value, &mut ser)?;
    buf.push(b'\n');
    // serde_json writes UTF-8 only.
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Writes `report` to `path` atomically (temporary file, fsync, rename).
///
/// The text is read back before it is written: a report goodput could not read
/// itself (serde_json writes a non-finite number as `null`, which a plain number
/// field then refuses) is an error, and nothing is written. In every failure the
/// file at `path` (a good earlier report, say) stays as it was.
pub fn write_report_atomic(path: &Path, report: &Report) -> Result<(), ReportError> {
    let fail = |error| ReportError::Serialize {
        path: path.to_path_buf(),
        error,
    };
    let text = to_json(report).map_err(fail)?;
    parse_report(&text).map_err(fail)?;
    write_atomic(path, text.as_bytes())
}

/// Writes bytes to `path` atomically (temporary file, fsync, rename, fsync dir).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let io = |error| ReportError::Io {
        path: path.to_path_buf(),
        error,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let written = File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)
    });
    if let Err(e) = written {
        // A full disk (or any failure) leaves no temporary file behind.
        let _ = fs::remove_file(&tmp);
        return Err(io(e));
    }
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFERENCE: &str = include_str!("../../../tests/data/l4-gpu1-vllm.json");

    #[test]
    fn reference_round_trips_with_every_field_and_value() {
        let report = parse_report(REFERENCE).expect("reference parses");
        let written = to_json(&report).unwrap();
        let a: serde_json::Value = serde_json::from_str(REFERENCE).unwrap();
        let b: serde_json::Value = serde_json::from_str(&written).unwrap();
        assert_eq!(a, b);
        // Also textually identical: same key order, same number spelling.
        assert_eq!(written.trim_end(), REFERENCE.trim_end());
    }

    #[test]
    fn unknown_fields_survive() {
        let mut v: serde_json::Value = serde_json::from_str(REFERENCE).unwrap();
        v["future_field"] = serde_json::json!({"a": 1});
        v["load"]["vllm-ngram"]["points"][0]["new_metric"] = serde_json::json!(3.5);
        let report: Report = serde_json::from_value(v.clone()).unwrap();
        let back: serde_json::Value = serde_json::from_str(&to_json(&report).unwrap()).unwrap();
        assert_eq!(v, back);
    }

    #[test]
    fn atomic_write_then_read() {
        let dir = std::env::temp_dir().join(format!("goodput-report-io-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        let report = parse_report(REFERENCE).unwrap();
        write_report_atomic(&path, &report).unwrap();
        assert_eq!(read_report(&path).unwrap(), report);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn garbage_is_an_error_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("goodput-report-bad-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.json");
        fs::write(&path, "{\"profile\": 3}").unwrap();
        let err = read_report(&path).unwrap_err().to_string();
        assert!(err.contains("bad.json"), "{err}");
        assert!(err.contains("line 1"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unreadable_report_is_not_written_and_the_old_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        fs::write(&path, REFERENCE).unwrap();
        let mut report = parse_report(REFERENCE).unwrap();
        // A non-finite load level serialises as `null`, which `x` (a plain number)
        // refuses on reading: the write must fail and leave the good file.
        report.load[0].points[0].x = f64::NAN;
        let err = write_report_atomic(&path, &report).unwrap_err().to_string();
        assert!(
            err.contains("r.json") && err.contains("left as it was"),
            "{err}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), REFERENCE);
        let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn a_write_that_fails_after_the_temporary_file_leaves_none_behind() {
        // The rename over a non-empty directory fails after the temporary file was
        // written, as a full disk fails a write: either way nothing may stay.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        fs::create_dir(&path).unwrap();
        fs::write(path.join("inside"), "x").unwrap();
        let err = write_atomic(&path, b"{}").unwrap_err().to_string();
        assert!(err.contains("r.json"), "{err}");
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["r.json"], "no temporary file left behind");
    }
}
