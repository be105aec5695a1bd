//! Figures: quantiles, one spread line per measure, the results table.

use super::{Outcome, Run};

/// `q`-quantile (lower) of sorted values, in ms.
pub(crate) fn quantile(sorted: &[i64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q).floor() as usize;
    sorted[i] as f64 / 1e6
}

pub(crate) fn spread(name: &str, mut v: Vec<i64>) -> f64 {
    v.sort_unstable();
    println!(
        "  {name:<28} n={:<8} p50={:.3} ms  p99={:.3} ms  p99.9={:.3} ms  max={:.3} ms",
        v.len(),
        quantile(&v, 0.5),
        quantile(&v, 0.99),
        quantile(&v, 0.999),
        quantile(&v, 1.0)
    );
    quantile(&v, 0.99)
}

/// One row per scenario, as Markdown (`bench/figures.py` reads it by column name).
pub(crate) fn results_table(rows: &[(&str, Run, &Outcome)]) -> String {
    let mut out = String::from(
        "| scenario | streams | tokens | ITL ms | held | errors | chunks/s | sim cores | CPU us/chunk | chunks/s per core | steady lag p99 ms | slowest headers ms | header stalls | load 1m |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (name, run, o) in rows {
        let per_chunk = o.server_cpu_s / o.chunks.max(1) as f64;
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} | {:.0} | {:.2} | {:.1} | {:.0} | {:.3} | {:.0} | {} | {} |\n",
            run.streams,
            run.tokens,
            run.itl_ms,
            o.peak,
            o.errors,
            o.chunks as f64 / o.seconds,
            o.server_cpu_s / o.seconds,
            per_chunk * 1e6,
            1.0 / per_chunk.max(1e-12),
            o.steady_p99_ms,
            o.max_headers_ms,
            o.header_stalls,
            o.load
        ));
    }
    out
}

pub(crate) fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "NOT met"
    }
}
