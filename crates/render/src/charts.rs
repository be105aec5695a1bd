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
mod build;
pub mod server;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub use self::axis::{Axis, Scale, LOG_SPAN, MAX_TICKS};
pub use self::build::{
    all, distribution, gpu_timeline, is_concurrency, meets_slo, slo_spans, vs_load, x_desc,
};
use super::text::num;

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
    /// The value it marks on the axis it crosses (x for a vertical line, else y).
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
    /// The x ranges where the engine's load levels meet the SLO.
    pub spans: Vec<(f64, f64)>,
    /// The x ranges where the SLO judgement is undecided (drawn as outlines).
    pub undecided: Vec<(f64, f64)>,
    /// The engine's capacity from a search (the knee), marked across the plot.
    pub knee: Option<f64>,
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

/// The plot above the strips: load (or time) across, the chart's value up.
type Plot<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Axis, RangedCoordf64>>;

/// Draws `chart` as SVG into `out`: the mesh, the SLO thresholds, the series, and
/// the strips under the plot.
fn draw(chart: &Chart, x: Axis, (y0, y1): (f64, f64), out: &mut String) -> DrawResult {
    let size = (SIZE.0, SIZE.1 + strip_height(chart.strips.len()));
    let root = SVGBackend::with_string(out, size).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(SIZE.1);
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
    for t in &chart.thresholds {
        draw_threshold(&mut c, t, (x.lo, x.hi), (y0, y1))?;
    }
    for s in &chart.series {
        draw_series(&mut c, s, chart.markers)?;
    }
    for s in chart
        .strips
        .iter()
        .filter(|s| s.knee.is_some_and(|k| x.lo <= k && k <= x.hi))
    {
        draw_knee(&mut c, s, (y0, y1))?;
    }
    if !chart.strips.is_empty() {
        draw_strips(&chart.strips, x, &bottom)?;
    }
    root.present()?;
    Ok(())
}

/// An engine's capacity (the knee of its goodput curve): a dashed line up the plot
/// in the engine's colour.
fn draw_knee(c: &mut Plot<'_, '_>, s: &Strip, (y0, y1): (f64, f64)) -> DrawResult {
    let Some(k) = s.knee else { return Ok(()) };
    let dashes = 24;
    let step = (y1 - y0) / f64::from(dashes);
    c.draw_series((0..dashes).step_by(2).map(|i| {
        let a = y0 + step * f64::from(i);
        PathElement::new(vec![(k, a), (k, a + step)], s.color.stroke_width(2))
    }))?;
    Ok(())
}

/// A threshold line across the plot, labelled at its end.
fn draw_threshold(
    c: &mut Plot<'_, '_>,
    t: &Threshold,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) -> DrawResult {
    let plot_right = c.plotting_area().get_pixel_range().0.end;
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
    Ok(())
}

/// One series: its whiskers, its line (the only wide polyline), its markers.
fn draw_series(c: &mut Plot<'_, '_>, s: &Series, markers: bool) -> DrawResult {
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
    if markers {
        c.draw_series(
            s.points
                .iter()
                .map(|p| Circle::new(*p, 4, s.color.filled())),
        )?;
    }
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
        "Meets the SLO (outline: undecided):",
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
        for (a, b) in &s.undecided {
            c.draw_series(std::iter::once(Rectangle::new(
                [(a.max(x0), mid - 0.32), (b.min(x1), mid + 0.32)],
                s.color.stroke_width(2),
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
