//! How a failed exchange is named: running out of file descriptors is the
//! client's fault, and an HTTP error is told by its chain of causes.

use super::Failure;
use crate::drive::record::ErrorKind;

/// Whether `e`, or an error it was caused by, is this process running out of file
/// descriptors (`EMFILE`, or the system's table full: `ENFILE`).
pub fn out_of_files(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut at = Some(e);
    while let Some(err) = at {
        let io = err.downcast_ref::<std::io::Error>();
        if matches!(
            io.and_then(std::io::Error::raw_os_error),
            Some(libc::EMFILE | libc::ENFILE)
        ) {
            return true;
        }
        // An `io::Error` that wraps another names it as `get_ref`, not `source`.
        at = match io.and_then(|io| io.get_ref()) {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    }
    false
}

/// The failure of a connection this process had no descriptor for: the client's
/// fault ([`ErrorKind::ClientLimit`]), with how to give it more.
pub(super) fn client_limit(detail: &str) -> Failure {
    Failure::new(
        ErrorKind::ClientLimit,
        format!(
            "{detail}: goodput ran out of file descriptors (RLIMIT_NOFILE); raise `ulimit -n` \
             or lower the load"
        ),
    )
}

/// An HTTP error without the URL's query or anything secret: its chain of causes.
pub(super) fn describe(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(cause) = src {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        src = cause.source();
    }
    s
}
