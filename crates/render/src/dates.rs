//! Dates as goodput prints them: one formatter (the `time` crate's), for the HTML
//! report and the benchmark's headers alike.

use time::macros::format_description;
use time::OffsetDateTime;

/// `YYYY-MM-DD HH:MM UTC` of a Unix time in seconds; a time past year 9999 reads
/// as the number of seconds.
pub fn utc_minute(unix_s: u64) -> String {
    let fmt = format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    i64::try_from(unix_s)
        .ok()
        .and_then(|s| OffsetDateTime::from_unix_timestamp(s).ok())
        .and_then(|t| t.format(&fmt).ok())
        .unwrap_or_else(|| format!("{unix_s} s after 1970"))
}

/// [`utc_minute`] of now.
pub fn utc_now_minute() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_minute(now)
}

/// `YYYYMMDD-HHMMSS` of now, UTC (the `date` of a vLLM result file).
pub fn compact_now() -> String {
    let fmt = format_description!("[year][month][day]-[hour][minute][second]");
    OffsetDateTime::now_utc()
        .format(&fmt)
        .unwrap_or_else(|_| "19700101-000000".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_utc() {
        // As `date -u -d @1733000000` says.
        assert_eq!(utc_minute(1_733_000_000), "2024-11-30 20:53 UTC");
        assert_eq!(utc_minute(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_minute(951_782_400), "2000-02-29 00:00 UTC");
    }
}
