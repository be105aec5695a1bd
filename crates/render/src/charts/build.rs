//! The report's charts: throughput and goodput against load with the SLO strips,
//! TTFT and TPOT distributions, GPU telemetry over the run.

use report::{Judgement, Point, Report};

use report::slo::point_judgement;

use super::*;
use crate::text::{num, x_label};

/// True when the point's SLO judgement is `meets` (the one judgement every
/// renderer shows, [`report::slo`]).
pub fn meets_slo(report: &Report, p: &Point) -> bool {
    point_judgement(report, p) == Some(Judgement::Meets)
}

/// The x ranges where an engine's SLO judgement is `want`, merged where they
/// touch: each such point covers halfway (on `scale`) to its neighbours, and a
/// point at either end 4% of `data`, the span of all engines' load levels.
pub fn slo_spans(
    report: &Report,
    points: &[Point],
    scale: Scale,
    data: (f64, f64),
    want: Judgement,
) -> Vec<(f64, f64)> {
    let mut xs: Vec<(f64, bool)> = points
        .iter()
        .map(|p| (p.x, point_judgement(report, p) == Some(want)))
        .collect();
    xs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let end = |x: f64, dir: f64| {
        if data.1 > data.0 {
            scale.shift(x, 0.04 * dir, data)
        } else if scale.log {
            x * 1.1f64.powf(dir)
        } else {
            x + 0.5 * dir
        }
    };
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (i, (x, ok)) in xs.iter().enumerate() {
        if !ok {
            continue;
        }
        let lo = match i {
            0 => end(*x, -1.0),
            _ => scale.midpoint(xs[i - 1].0, *x),
        };
        let hi = xs
            .get(i + 1)
            .map_or_else(|| end(*x, 1.0), |n| scale.midpoint(*x, n.0));
        match out.last_mut() {
            Some(last) if last.1 == lo => last.1 = hi,
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Whether the report's load levels are concurrencies (the reference format's only
/// mode) rather than request rates.
pub fn is_concurrency(report: &Report) -> bool {
    report.run.as_ref().map(|r| &r.load_mode) != Some(&report::LoadMode::Rate)
}

/// A line per engine of one statistic against load, with min–max whiskers, and a
/// strip under it marking each engine's SLO-meeting load levels.
pub fn vs_load(
    report: &Report,
    id: &str,
    title: &str,
    y_desc: &str,
    get: fn(&Point) -> &report::Stat,
) -> Chart {
    let all_x = || {
        report
            .load
            .values()
            .flat_map(|r| r.points.iter().map(|p| p.x))
    };
    let x_scale = Scale::for_load(all_x(), is_concurrency(report));
    let data = all_x()
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    let mut series = Vec::new();
    let mut strips = Vec::new();
    for (i, (engine, result)) in report.load.iter().enumerate() {
        if result.points.is_empty() {
            continue;
        }
        let color = engine_color(i);
        strips.push(Strip {
            label: engine.clone(),
            color,
            spans: slo_spans(report, &result.points, x_scale, data, Judgement::Meets),
            undecided: slo_spans(report, &result.points, x_scale, data, Judgement::Undecided),
            knee: report.capacity.get(engine).and_then(|c| c.max_load),
        });
        series.extend(stat_series(engine, color, &result.points, get));
    }
    let mut note = "Median over trials, whiskers min–max. Under the plot, one row per \
                    engine: a bar in the engine's colour where the load level meets the \
                    SLO (its attainment's 95% interval clears the target), an outline \
                    where it is undecided (the interval straddles the target); each load \
                    level covers halfway to its neighbours. A dashed line marks each \
                    engine's capacity from a search (the knee)."
        .to_string();
    if strips.iter().all(|s| s.spans.is_empty()) {
        note.push_str(" No engine meets the SLO at any load level.");
    }
    if x_scale.log {
        note.push_str(&format!(
            " The load axis is logarithmic: the load levels span a factor of {} or more.",
            num(LOG_SPAN)
        ));
    }
    let mut chart = Chart {
        id: id.into(),
        title: title.into(),
        note,
        x_desc: x_desc(report, x_scale),
        y_desc: y_desc.into(),
        series,
        x_scale,
        strips,
        thresholds: Vec::new(),
        markers: true,
        y_from_zero: true,
    };
    if id == "throughput" {
        predicted_intervals(&mut chart, report, "output_throughput");
    }
    chart
}

/// A predicted report's intervals on a chart against load: each predicted point's
/// whisker is its `predicted_interval` for `metric` (instead of the trials'
/// min–max), and a vertical line labelled "extrapolated" marks where a run of
/// extrapolated points begins (and, for one below the trusted ones, where it
/// ends). Nothing changes for a measured report.
fn predicted_intervals(chart: &mut Chart, report: &Report, metric: &str) {
    let mut any = (false, false);
    for s in &mut chart.series {
        let Some(result) = report.load.get(&s.label) else {
            continue;
        };
        let mut points: Vec<&Point> = result.points.iter().collect();
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        for p in &points {
            let Some(&[lo, hi]) = p
                .predicted_interval
                .as_ref()
                .and_then(|i| i.metrics.get(metric))
            else {
                continue;
            };
            s.whiskers.retain(|w| w.0 != p.x);
            s.whiskers.push((p.x, lo, hi));
            any.0 = true;
        }
        // A line between each trusted point and an extrapolated neighbour.
        for w in points.windows(2) {
            if w[0].extrapolated != w[1].extrapolated {
                let at = (w[0].x + w[1].x) / 2.0;
                if !chart.thresholds.iter().any(|t| t.vertical && t.at == at) {
                    let label = if w[1].extrapolated {
                        "extrapolated →"
                    } else {
                        "← extrapolated"
                    };
                    chart.thresholds.push(Threshold {
                        at,
                        vertical: true,
                        label: label.into(),
                    });
                }
            }
        }
        any.1 |= points.iter().any(|p| p.extrapolated);
    }
    if any.0 {
        chart.note.push_str(
            " PREDICTED: each whisker is the point's 90% prediction interval (the fit's \
             uncertainty carried through the engine model), not a min–max.",
        );
    }
    if any.1 {
        chart
            .note
            .push_str(if chart.thresholds.iter().any(|t| t.vertical) {
                " Points past a line marked \"extrapolated\" lie outside the fitted loads (or \
             depend on a value the fit could not identify): trust them less."
            } else {
                " Every predicted point is extrapolated (outside the fitted loads, or \
             dependent on a value the fit could not identify): trust them less."
            });
    }
}

/// One engine's line of a statistic against load (its medians, by load) with
/// min–max whiskers; `None` when no point has a median.
fn stat_series(
    engine: &str,
    color: RGBColor,
    points: &[Point],
    get: fn(&Point) -> &report::Stat,
) -> Option<Series> {
    let mut points: Vec<&Point> = points.iter().collect();
    points.sort_by(|a, b| a.x.total_cmp(&b.x));
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| get(p).median.map(|m| (p.x, m)))
        .collect();
    let whiskers = points
        .iter()
        .filter_map(|p| {
            let s = get(p);
            Some((p.x, s.min?, s.max?))
        })
        .collect();
    (!pts.is_empty()).then(|| Series {
        label: engine.to_string(),
        color,
        points: pts,
        whiskers,
        in_legend: true,
    })
}

/// The x axis description: concurrency or request rate, and the scale when it is
/// logarithmic.
pub fn x_desc(report: &Report, scale: Scale) -> String {
    let what = if is_concurrency(report) {
        "load (concurrent requests)"
    } else {
        "offered load (requests/s)"
    };
    if scale.log {
        format!("{what}, log scale")
    } else {
        what.into()
    }
}

/// Distribution (CDF) of TTFT or TPOT: one line per engine and load level, the SLO
/// as a vertical line. `tpot` selects TPOT.
pub fn distribution(report: &Report, tpot: bool) -> Chart {
    let (name, slo) = if tpot {
        ("TPOT", report.slo.bound(report::SloMetric::Tpot))
    } else {
        ("TTFT", report.slo.bound(report::SloMetric::Ttft))
    };
    let mut series = Vec::new();
    for (i, (engine, result)) in report.load.iter().enumerate() {
        let n = result.points.len();
        for (j, p) in result.points.iter().enumerate() {
            let values = if tpot {
                &p.tpot_quantiles_ms
            } else {
                &p.ttft_quantiles_ms
            };
            let points: Vec<(f64, f64)> = values
                .iter()
                .zip(&report.quantiles)
                .map(|(v, q)| (*v, *q))
                .collect();
            if points.is_empty() {
                continue;
            }
            // Lower load lighter, the highest load in the engine's full colour.
            let light = if n > 1 {
                0.6 * (n - 1 - j) as f64 / (n - 1) as f64
            } else {
                0.0
            };
            series.push(Series {
                label: format!("{engine} x={}", x_label(p.x)),
                color: lighten(engine_color(i), light),
                points,
                whiskers: Vec::new(),
                in_legend: true,
            });
        }
    }
    Chart {
        id: format!("{}-distribution", name.to_ascii_lowercase()),
        title: format!("{name} distribution"),
        note: format!(
            "Share of requests (all trials pooled) with {name} at most the value on the x \
             axis; one line per engine and load level (lighter: lower load). {}",
            match slo {
                Some(b) => format!("Red: the {} ms SLO.", num(b)),
                None => format!("The SLO has no {name} bound."),
            }
        ),
        x_desc: format!("{name} (ms)"),
        y_desc: "share of requests".into(),
        series,
        x_scale: Scale::default(),
        strips: Vec::new(),
        thresholds: slo
            .map(|b| Threshold {
                at: b,
                vertical: true,
                label: format!("SLO {} ms", num(b)),
            })
            .into_iter()
            .collect(),
        markers: false,
        y_from_zero: true,
    }
}

/// GPU telemetry over the run: the trials laid end to end in run order, one line
/// per trial in its engine's colour. `temp` selects temperature instead of SM
/// clock. `None` when no trial has samples.
pub fn gpu_timeline(report: &Report, temp: bool) -> Option<Chart> {
    let mut series = Vec::new();
    let mut offset = 0.0;
    let mut max_clock: Option<f64> = None;
    for (i, (engine, result)) in report.load.iter().enumerate() {
        let mut first = true;
        for p in &result.points {
            if let Some(m) = p.gpu.as_ref().and_then(|g| g.max_sm_clock_mhz) {
                max_clock = Some(max_clock.map_or(m, |c: f64| c.max(m)));
            }
            for t in &p.trials {
                let points: Vec<(f64, f64)> = t
                    .gpu_samples
                    .iter()
                    .filter_map(|s| {
                        let v = if temp { s.temp_c } else { s.sm_mhz };
                        v.map(|v| (offset + s.t_s, v))
                    })
                    .collect();
                let last = t.gpu_samples.iter().map(|s| s.t_s).fold(0.0, f64::max);
                offset += t.duration_s.unwrap_or(0.0).max(last);
                if points.is_empty() {
                    continue;
                }
                series.push(Series {
                    label: engine.clone(),
                    color: engine_color(i),
                    points,
                    whiskers: Vec::new(),
                    in_legend: first,
                });
                first = false;
            }
        }
    }
    if series.is_empty() {
        return None;
    }
    let (id, title, y_desc) = if temp {
        ("gpu-temp", "GPU temperature", "temperature (°C)")
    } else {
        ("gpu-clock", "GPU SM clock", "SM clock (MHz)")
    };
    let thresholds = match (temp, max_clock) {
        (false, Some(m)) => vec![Threshold {
            at: m,
            vertical: false,
            label: format!("max {} MHz", num(m)),
        }],
        _ => Vec::new(),
    };
    Some(Chart {
        id: id.into(),
        title: title.into(),
        note: "Samples of every trial, laid end to end in run order (gaps between trials \
               left out); one line per trial."
            .into(),
        x_desc: "time in trials (s)".into(),
        y_desc: y_desc.into(),
        series,
        x_scale: Scale::default(),
        strips: Vec::new(),
        thresholds,
        markers: false,
        y_from_zero: !temp,
    })
}

/// Every chart of the page that has data, in order.
pub fn all(report: &Report) -> Vec<Chart> {
    let mut charts = vec![
        vs_load(
            report,
            "throughput",
            "Output throughput vs load",
            "output tokens/s",
            |p| &p.output_throughput,
        ),
        vs_load(
            report,
            "goodput",
            "Goodput vs load",
            "good requests/s",
            |p| &p.goodput_rps,
        ),
        distribution(report, false),
        distribution(report, true),
    ];
    charts.extend(cost_charts(report));
    charts.extend(gpu_timeline(report, false));
    charts.extend(gpu_timeline(report, true));
    charts.extend(super::server::timelines(report));
    charts.retain(|c| !c.series.is_empty());
    charts
}

/// The HTML page's charts of cost and energy against load (those with data).
fn cost_charts(report: &Report) -> Vec<Chart> {
    vec![
        vs_load(
            report,
            "cost",
            "Cost per million good tokens vs load",
            "US dollars per million good tokens",
            crate::cost::usd_per_million_good,
        ),
        vs_load(
            report,
            "energy",
            "Energy per output token vs load",
            "joules per output token",
            crate::cost::joules_per_token,
        ),
    ]
}
