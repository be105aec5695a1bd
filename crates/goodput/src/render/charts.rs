//! Charts as inline SVG, drawn with `plotters`' SVG backend (text is written as SVG
//! `<text>`, so no font files are needed).
//!
//! Every data line is a `<polyline>` with `stroke-width="2"`; everything else (axes,
//! grid, ranges, SLO lines) is thinner. The HTML page's check script counts the
//! wide polylines of each chart against [`Chart::series`].
//!
//! Charts against load mark where each engine meets the SLO in a strip under the
//! plot, one row per engine in the engine's colour ([`Strip`]), so that one
//! engine's SLO-meeting loads are never shaded over another's line.

mod axis;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use report::{Point, Report};

pub use self::axis::{Axis, Scale, LOG_SPAN, MAX_TICKS};
use super::rows::within;
use super::text::{num, x_label};

/// Colours of the engines, in order (Tableau 10 without its red, kept for the SLO).
pub const PALETTE: [(u8, u8, u8); 9] = [
    (0x4e, 0x79, 0xa7),
    (0xf2, 0x8e, 0x2b),
    (0x59, 0xa1, 0x4f),
    (0xb0, 0x7a, 0xa1),
    (0x76, 0xb7, 0xb2),
    (0xed, 0xc9, 0x48),
    (0x9c, 0x75, 0x5f),
    (0xff, 0x9d, 0xa7),
    (0xba, 0xb0, 0xac),
];

/// Colour of SLO threshold lines.
pub const SLO_COLOR: RGBColor = RGBColor(0xd6, 0x27, 0x28);

/// Width and height of one chart, pixels (the SVG scales to its container).
pub const SIZE: (u32, u32) = (640, 380);

/// The colour of the `i`-th engine.
pub fn engine_color(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// `#rrggbb` of a colour, for the HTML legend.
pub fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// A colour mixed with white: `amount` 0 keeps it, 1 gives white.
pub fn lighten(c: RGBColor, amount: f64) -> RGBColor {
    let m = |v: u8| (v as f64 + (255.0 - v as f64) * amount.clamp(0.0, 1.0)).round() as u8;
    RGBColor(m(c.0), m(c.1), m(c.2))
}

/// One data line.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Line colour.
    pub color: RGBColor,
    /// Points, in drawing order.
    pub points: Vec<(f64, f64)>,
    /// Vertical ranges drawn as thin whiskers at each point: `(x, min, max)`.
    pub whiskers: Vec<(f64, f64, f64)>,
    /// Whether this series shows in the legend (a trial of an engine that is
    /// already listed does not).
    pub in_legend: bool,
}

/// A threshold line across the plot.
#[derive(Debug, Clone)]
pub struct Threshold {
    /// Where.
    pub at: f64,
    /// `true` for a vertical line (at an x value), `false` for horizontal.
    pub vertical: bool,
    /// Label drawn beside it.
    pub label: String,
}

/// One engine's row in the strip under a chart against load.
#[derive(Debug, Clone)]
pub struct Strip {
    /// The engine.
    pub label: String,
    /// The engine's colour.
    pub color: RGBColor,
    /// The x ranges where the engine's median request meets the SLO.
    pub spans: Vec<(f64, f64)>,
}

/// A chart: what the page shows and what plotters draws.
#[derive(Debug, Clone)]
pub struct Chart {
    /// HTML id of the figure.
    pub id: String,
    /// Caption title.
    pub title: String,
    /// Sentence under the title.
    pub note: String,
    /// Axis descriptions.
    pub x_desc: String,
    /// Axis descriptions.
    pub y_desc: String,
    /// The data lines.
    pub series: Vec<Series>,
    /// How the x axis maps values and places ticks.
    pub x_scale: Scale,
    /// Rows under the plot marking where each engine meets the SLO (empty: none).
    pub strips: Vec<Strip>,
    /// Threshold lines.
    pub thresholds: Vec<Threshold>,
    /// Draw a dot at every point (for lines with few points).
    pub markers: bool,
    /// Start the y axis at zero.
    pub y_from_zero: bool,
}

fn span(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.5 };
        return (lo - if from_zero { 0.0 } else { pad }, hi + pad);
    }
    let pad = (hi - lo) * 0.05;
    (if from_zero && lo >= 0.0 { lo } else { lo - pad }, hi + pad)
}

/// Height of the strip under a chart with `rows` engines, pixels.
pub fn strip_height(rows: usize) -> u32 {
    if rows == 0 {
        0
    } else {
        STRIP_TOP + STRIP_ROW * rows as u32 + STRIP_BOTTOM
    }
}

const STRIP_TOP: u32 = 26;
const STRIP_ROW: u32 = 20;
const STRIP_BOTTOM: u32 = 8;
/// Left and right margin of the drawing; left: also the width of the y labels.
const MARGIN: u32 = 14;
const Y_LABELS: u32 = 68;
/// Font size of threshold labels (plotters writes it into the SVG divided by 1.24),
/// and the width of one of their characters as a share of the SVG font size (a
/// generous average for sans-serif text with digits).
const LABEL_FONT: u32 = 15;
const CHAR_WIDTH: f64 = 0.62;

/// Draws a chart as an SVG document string.
pub fn svg(chart: &Chart) -> Result<String, String> {
    let xs = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(chart.thresholds.iter().filter(|t| t.vertical).map(|t| t.at));
    let x = Axis::over(xs, chart.x_scale);
    let ys = chart
        .series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.1)
                .chain(s.whiskers.iter().flat_map(|w| [w.1, w.2]))
        })
        .chain(
            chart
                .thresholds
                .iter()
                .filter(|t| !t.vertical)
                .map(|t| t.at),
        );
    let (y0, y1) = span(ys, chart.y_from_zero);
    let mut out = String::new();
    draw(chart, x, (y0, y1), &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw(chart: &Chart, x: Axis, (y0, y1): (f64, f64), out: &mut String) -> DrawResult {
    let size = (SIZE.0, SIZE.1 + strip_height(chart.strips.len()));
    let root = SVGBackend::with_string(out, size).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(SIZE.1);
    let (x0, x1) = (x.lo, x.hi);
    let mut c = ChartBuilder::on(&top)
        .margin(MARGIN)
        .x_label_area_size(48)
        .y_label_area_size(Y_LABELS)
        .build_cartesian_2d(x.clone(), y0..y1)?;
    let grid = RGBColor(0xe6, 0xe6, 0xe6);
    let xf = |v: &f64| num(*v);
    c.configure_mesh()
        .x_desc(chart.x_desc.as_str())
        .y_desc(chart.y_desc.as_str())
        .label_style(
            ("sans-serif", 15)
                .into_font()
                .color(&RGBColor(0x44, 0x44, 0x44)),
        )
        .axis_desc_style(("sans-serif", 16))
        .bold_line_style(grid.stroke_width(1))
        .light_line_style(WHITE.mix(0.0))
        .axis_style(RGBColor(0x88, 0x88, 0x88).stroke_width(1))
        .x_labels(MAX_TICKS)
        .y_labels(7)
        .x_label_formatter(&xf)
        .y_label_formatter(&xf)
        .draw()?;
    let plot_right = c.plotting_area().get_pixel_range().0.end;
    for t in &chart.thresholds {
        let line = if t.vertical {
            vec![(t.at, y0), (t.at, y1)]
        } else {
            vec![(x0, t.at), (x1, t.at)]
        };
        c.draw_series(std::iter::once(PathElement::new(
            line,
            SLO_COLOR.stroke_width(1),
        )))?;
        let text = format!(" {} ", t.label);
        let (pos, anchor) = if t.vertical {
            // Right of the line, unless the label would leave the plot there.
            let em = LABEL_FONT as f64 / 1.24;
            let width = (text.chars().count() as f64 * em * CHAR_WIDTH).ceil() as i32;
            let at = c.backend_coord(&(t.at, y1)).0;
            let h = if at + width > plot_right {
                HPos::Right
            } else {
                HPos::Left
            };
            ((t.at, y1), Pos::new(h, VPos::Top))
        } else {
            ((x1, t.at), Pos::new(HPos::Right, VPos::Bottom))
        };
        let style = ("sans-serif", LABEL_FONT)
            .into_font()
            .color(&SLO_COLOR)
            .pos(anchor);
        c.draw_series(std::iter::once(Text::new(text, pos, style)))?;
    }
    for s in &chart.series {
        for (x, lo, hi) in &s.whiskers {
            c.draw_series(std::iter::once(PathElement::new(
                vec![(*x, *lo), (*x, *hi)],
                s.color.stroke_width(1),
            )))?;
        }
        c.draw_series(LineSeries::new(
            s.points.iter().copied(),
            s.color.stroke_width(2),
        ))?;
        if chart.markers {
            c.draw_series(
                s.points
                    .iter()
                    .map(|p| Circle::new(*p, 4, s.color.filled())),
            )?;
        }
    }
    if !chart.strips.is_empty() {
        draw_strips(&chart.strips, x, &bottom)?;
    }
    root.present()?;
    Ok(())
}

/// The strip under a chart against load: a caption, then one row per engine (name
/// on the left, a thin line across, a bar in the engine's colour where it meets the
/// SLO) on the same x axis as the plot above.
fn draw_strips<DB: DrawingBackend>(
    strips: &[Strip],
    x: Axis,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let n = strips.len() as f64;
    let (x0, x1) = (x.lo, x.hi);
    let mut c = ChartBuilder::on(area)
        .margin_left(MARGIN)
        .margin_right(MARGIN)
        .margin_top(STRIP_TOP)
        .margin_bottom(STRIP_BOTTOM)
        .y_label_area_size(Y_LABELS)
        .build_cartesian_2d(x, 0.0..n)?;
    let muted = RGBColor(0x5b, 0x64, 0x73);
    area.draw(&Text::new(
        "Median request meets the SLO:",
        ((MARGIN + Y_LABELS) as i32, 4),
        ("sans-serif", 16).into_font().color(&muted),
    ))?;
    for (i, s) in strips.iter().enumerate() {
        // Row 0 at the top.
        let mid = n - i as f64 - 0.5;
        c.draw_series(std::iter::once(PathElement::new(
            vec![(x0, mid), (x1, mid)],
            RGBColor(0xcc, 0xcc, 0xcc).stroke_width(1),
        )))?;
        for (a, b) in &s.spans {
            c.draw_series(std::iter::once(Rectangle::new(
                [(a.max(x0), mid - 0.32), (b.min(x1), mid + 0.32)],
                s.color.filled(),
            )))?;
        }
        let label: String = if s.label.chars().count() > 10 {
            s.label.chars().take(9).chain(['…']).collect()
        } else {
            s.label.clone()
        };
        let at = c.backend_coord(&(x0, mid));
        let base = area.get_base_pixel();
        area.draw(&Text::new(
            label,
            (at.0 - base.0 - 6, at.1 - base.1),
            ("sans-serif", 15)
                .into_font()
                .color(&RGBColor(0x1d, 0x24, 0x30))
                .pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    Ok(())
}

/// True when the median request meets every SLO bound at this point.
pub fn meets_slo(report: &Report, p: &Point) -> bool {
    let slo = &report.slo;
    let e2el_ok = match (slo.e2el_ms, &p.median_e2el_ms) {
        (Some(b), Some(s)) => within(s.median, Some(b)).unwrap_or(true),
        _ => true,
    };
    within(p.median_ttft_ms.median, slo.ttft_ms) == Some(true)
        && within(p.median_tpot_ms.median, slo.tpot_ms) == Some(true)
        && e2el_ok
}

/// The x ranges where an engine meets the SLO at the median, merged where they
/// touch: each meeting point covers halfway (on `scale`) to its neighbours, and a
/// point at either end 4% of `data`, the span of all engines' load levels.
pub fn slo_spans(
    report: &Report,
    points: &[Point],
    scale: Scale,
    data: (f64, f64),
) -> Vec<(f64, f64)> {
    let mut xs: Vec<(f64, bool)> = points.iter().map(|p| (p.x, meets_slo(report, p))).collect();
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
    report.run.as_ref().map(|r| r.load_mode.as_str()) != Some("rate")
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
        let color = engine_color(i);
        let mut points: Vec<&Point> = result.points.iter().collect();
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
        if result.points.is_empty() {
            continue;
        }
        strips.push(Strip {
            label: engine.clone(),
            color,
            spans: slo_spans(report, &result.points, x_scale, data),
        });
        if !pts.is_empty() {
            series.push(Series {
                label: engine.clone(),
                color,
                points: pts,
                whiskers,
                in_legend: true,
            });
        }
    }
    let mut note = "Median over trials, whiskers min–max. Under the plot, one row per \
                    engine: a bar in the engine's colour where its median request meets \
                    the SLO (each load level covers halfway to its neighbours)."
        .to_string();
    if strips.iter().all(|s| s.spans.is_empty()) {
        note.push_str(" No engine meets the SLO at the median at any load level.");
    }
    if x_scale.log {
        note.push_str(&format!(
            " The load axis is logarithmic: the load levels span a factor of {} or more.",
            num(LOG_SPAN)
        ));
    }
    Chart {
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
    }
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
        ("TPOT", report.slo.tpot_ms)
    } else {
        ("TTFT", report.slo.ttft_ms)
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
    charts.extend(gpu_timeline(report, false));
    charts.extend(gpu_timeline(report, true));
    charts.extend(super::server_charts::timelines(report));
    charts.retain(|c| !c.series.is_empty());
    charts
}
