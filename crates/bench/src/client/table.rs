//! The benchmark's tables, as Markdown (readable in a terminal, pasteable into docs).

use super::figures::{RateFigures, Spread, StreamFigures};
use super::floor::Floor;
use super::hold::HoldRow;

/// Milliseconds with three decimals (microsecond resolution), `-` when unknown.
pub fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

/// A count with thousands separators (rounded).
pub fn count(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let digits = goodput_sim::thousands(v.abs().round() as u64);
    if v < 0.0 && digits != "0" {
        format!("-{digits}")
    } else {
        digits
    }
}

/// A load average with two decimals, `-` when unknown.
pub fn load(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}"))
}

fn cores(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}"))
}

/// A right-aligned Markdown table through goodput's one table writer.
fn grid(columns: &[&str], rows: &[Vec<String>]) -> String {
    goodput::render::markdown::grid(columns, 0, rows)
}

fn spread3(s: &Spread) -> [String; 3] {
    [ms(s.p50), ms(s.p99), ms(s.max)]
}

/// Closed-loop fidelity runs: added latency, TTFT and ITL error, and their cost.
pub fn streams(runs: &[StreamFigures]) -> String {
    let columns = [
        "streams",
        "ITL ms",
        "ok/failed",
        "held",
        "chunks/s",
        "tokens/s",
        "lag p50",
        "lag p99",
        "lag max",
        "TTFT err p50",
        "TTFT err p99",
        "ITL err p50",
        "ITL err p99",
        "client cores",
        "sim cores",
        "other cores",
        "CPU s/Mtok",
        "KiB/stream",
        "peak RSS MiB",
        "load 1m",
    ];
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|f| {
            let [l50, l99, lmax] = spread3(&f.lag);
            vec![
                count(f.streams as f64),
                format!("{}", f.itl_ms),
                format!("{}/{}", count(f.ok as f64), count(f.failed as f64)),
                count(f.held as f64),
                count(f.chunks_per_s()),
                count(f.tokens_per_s()),
                l50,
                l99,
                lmax,
                ms(f.ttft_err.p50),
                ms(f.ttft_err.p99),
                ms(f.itl_err.p50),
                ms(f.itl_err.p99),
                format!("{:.2}", f.cores()),
                cores(f.usage.sim_cores()),
                cores(f.usage.other_cores()),
                f.cpu_s_per_mtok()
                    .map_or_else(|| "-".into(), |v| format!("{v:.2}")),
                format!("{:.1}", f.kib_per_stream()),
                format!("{:.1}", f.usage.rss_peak as f64 / 1048576.0),
                load(f.usage.load_avg),
            ]
        })
        .collect();
    grid(&columns, &rows)
}

/// One step of the capacity sweep.
#[derive(Debug, Clone)]
pub struct SweepStep {
    /// goodput's run.
    pub figures: StreamFigures,
    /// The minimal client's run at the same load.
    pub floor: Floor,
    /// Tokens per second the schedule asks for.
    pub offered: f64,
    /// Why the sweep went on or stopped.
    pub verdict: &'static str,
}

/// The capacity sweep: one row per step; added p99 = goodput's p99 lag − the floor's.
pub fn sweep(runs: &[SweepStep]) -> String {
    let columns = [
        "streams",
        "ITL ms",
        "offered tokens/s",
        "chunks/s",
        "tokens/s",
        "lag p50",
        "lag p99",
        "floor lag p99",
        "added p99",
        "client cores",
        "sim cores",
        "other cores",
        "load 1m",
        "verdict",
    ];
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|s| {
            let f = &s.figures;
            vec![
                count(f.streams as f64),
                format!("{}", f.itl_ms),
                count(s.offered),
                count(f.chunks_per_s()),
                count(f.tokens_per_s()),
                ms(f.lag.p50),
                ms(f.lag.p99),
                ms(s.floor.lag.p99),
                ms(f.lag.p99.zip(s.floor.lag.p99).map(|(g, fl)| g - fl)),
                format!("{:.2}", f.cores()),
                cores(f.usage.sim_cores()),
                cores(f.usage.other_cores()),
                load(f.usage.load_avg),
                s.verdict.to_string(),
            ]
        })
        .collect();
    grid(&columns, &rows)
}

/// The floor next to goodput's lag: what goodput adds is the difference.
pub fn floor(runs: &[(Floor, StreamFigures)]) -> String {
    let columns = [
        "streams",
        "ITL ms",
        "chunks",
        "floor lag p50",
        "floor lag p99",
        "floor lag max",
        "minimal client cores",
        "goodput lag p50",
        "goodput lag p99",
        "goodput − floor p50",
        "goodput − floor p99",
    ];
    let diff = |a: Option<f64>, b: Option<f64>| ms(a.zip(b).map(|(a, b)| a - b));
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|(fl, f)| {
            let [l50, l99, lmax] = spread3(&fl.lag);
            vec![
                count(fl.streams as f64),
                format!("{}", fl.itl_ms),
                count(fl.chunks as f64),
                l50,
                l99,
                lmax,
                format!("{:.2}", fl.cores),
                ms(f.lag.p50),
                ms(f.lag.p99),
                diff(f.lag.p50, fl.lag.p50),
                diff(f.lag.p99, fl.lag.p99),
            ]
        })
        .collect();
    grid(&columns, &rows)
}

/// Open-loop runs: offered versus achieved rate, and the send lag.
pub fn rates(runs: &[RateFigures]) -> String {
    let columns = [
        "target req/s",
        "planned",
        "sent/ok",
        "offered req/s",
        "achieved req/s",
        "completed req/s",
        "send lag p50",
        "send lag p99",
        "send lag max",
        "client cores",
        "sim cores",
        "other cores",
        "load 1m",
    ];
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|f| {
            let [l50, l99, lmax] = spread3(&f.send_lag);
            let seconds = f.usage.wall.as_secs_f64();
            vec![
                count(f.target_rps),
                count(f.planned as f64),
                format!("{}/{}", count(f.sent as f64), count(f.ok as f64)),
                format!("{:.1}", f.offered_rps),
                format!("{:.1}", f.achieved_rps),
                format!("{:.1}", f.completed_rps),
                l50,
                l99,
                lmax,
                format!("{:.2}", f.usage.cpu.as_secs_f64() / seconds.max(1e-9)),
                cores(f.usage.sim_cores()),
                cores(f.usage.other_cores()),
                load(f.usage.load_avg),
            ]
        })
        .collect();
    grid(&columns, &rows)
}

/// The memory table: each count held, its growth per stream, and the growth per
/// stream from the count before it (what one more stream costs); then each count
/// not measured, with why.
pub fn hold(rows: &[HoldRow]) -> String {
    let mut measured: Vec<_> = rows
        .iter()
        .filter_map(|r| match r {
            HoldRow::Measured(f) => Some(f),
            HoldRow::NotMeasured { .. } => None,
        })
        .collect();
    measured.sort_by_key(|f| f.streams);
    let kib = |b: f64| format!("{:.2}", b / 1024.0);
    let mut body = Vec::new();
    let mut prev: Option<&super::hold::HoldFigures> = None;
    for f in &measured {
        let marginal = prev
            .filter(|p| f.streams > p.streams)
            .map(|p| (f.rss_open as f64 - p.rss_open as f64) / (f.streams - p.streams) as f64);
        body.push(vec![
            count(f.streams as f64),
            format!("{}/{}", count(f.sent as f64), count(f.answered as f64)),
            kib(f.rss_per_stream()),
            marginal.map_or_else(|| "-".into(), kib),
            kib(f.heap_per_stream()),
            format!("{:.1}", f.rss_open as f64 / 1048576.0),
            load(f.load_avg),
        ]);
        prev = Some(f);
    }
    let mut out = grid(
        &[
            "streams held",
            "sent/first token",
            "RSS KiB/stream",
            "RSS KiB/stream since the row above",
            "heap KiB/stream",
            "RSS MiB",
            "load 1m",
        ],
        &body,
    );
    for r in rows {
        if let HoldRow::NotMeasured { streams, why } = r {
            out.push_str(&format!(
                "\n- {} streams: not measured: {why}",
                count(*streams as f64)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(count(1234567.4), "1,234,567");
        assert_eq!(count(999.0), "999");
        assert_eq!(count(-1500.0), "-1,500");
        assert_eq!(ms(Some(0.01234)), "0.012");
        assert_eq!(ms(None), "-");
    }
}
