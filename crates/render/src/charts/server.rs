//! Charts of the engine's own metrics over time, beside the GPU charts: requests
//! running and waiting at the server, and KV-cache usage. Trials are laid end to
//! end in run order, as the GPU charts lay them.

use report::{Report, ServerSample};

use super::{engine_color, lighten, Chart, Scale, Series, Threshold};

/// The server charts that have data: requests running / waiting, KV-cache usage.
pub fn timelines(report: &Report) -> Vec<Chart> {
    let requests = timeline(
        report,
        &[
            ("running", |s: &ServerSample| s.running, 0.0),
            ("waiting", |s: &ServerSample| s.waiting, 0.55),
        ],
    );
    let kv = timeline(
        report,
        &[(
            "KV usage",
            |s: &ServerSample| s.kv_usage.map(|k| k * 100.0),
            0.0,
        )],
    );
    let mut out = Vec::new();
    if !requests.is_empty() {
        out.push(Chart {
            id: "server-requests".into(),
            title: "Requests at the server".into(),
            note: "Requests running in the engine's batch (dark) and waiting in its queue \
                   (light), from its /metrics; trials laid end to end in run order. Waiting \
                   requests mean TTFT is queue time."
                .into(),
            x_desc: "time in trials (s)".into(),
            y_desc: "requests".into(),
            series: requests,
            x_scale: Scale::default(),
            strips: Vec::new(),
            thresholds: Vec::new(),
            markers: false,
            y_from_zero: true,
        });
    }
    if !kv.is_empty() {
        out.push(Chart {
            id: "server-kv".into(),
            title: "KV-cache usage".into(),
            note: "The engine's KV-cache usage, from its /metrics; near 100 % new requests \
                   wait and running ones may be preempted."
                .into(),
            x_desc: "time in trials (s)".into(),
            y_desc: "KV cache used (%)".into(),
            series: kv,
            x_scale: Scale::default(),
            strips: Vec::new(),
            thresholds: vec![Threshold {
                at: 100.0,
                vertical: false,
                label: "full".into(),
            }],
            markers: false,
            y_from_zero: true,
        });
    }
    out
}

type Field = fn(&ServerSample) -> Option<f64>;

/// One line per trial and field, in the engine's colour (lightened per field).
fn timeline(report: &Report, fields: &[(&str, Field, f64)]) -> Vec<Series> {
    let mut series = Vec::new();
    let mut offset = 0.0;
    for (i, (engine, result)) in report.load.iter().enumerate() {
        let mut first = vec![true; fields.len()];
        for t in result.points.iter().flat_map(|p| &p.trials) {
            let samples = t.server.as_ref().map_or(&[][..], |s| &s.samples[..]);
            for (f, (name, field, light)) in fields.iter().enumerate() {
                let points: Vec<(f64, f64)> = samples
                    .iter()
                    .filter_map(|s| field(s).map(|v| (offset + s.t_s, v)))
                    .collect();
                if points.is_empty() {
                    continue;
                }
                series.push(Series {
                    label: format!("{engine} {name}"),
                    color: lighten(engine_color(i), *light),
                    points,
                    whiskers: Vec::new(),
                    in_legend: first[f],
                });
                first[f] = false;
            }
            let last = samples.iter().map(|s| s.t_s).fold(0.0, f64::max);
            let gpu_last = t.gpu_samples.iter().map(|s| s.t_s).fold(0.0, f64::max);
            offset += t.duration_s.unwrap_or(0.0).max(last).max(gpu_last);
        }
    }
    series
}
