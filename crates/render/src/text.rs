//! Text helpers shared by the renderers: number formatting that never hides a
//! nonzero value, ANSI colour, and aligned columns.

use report::Stat;

/// Formats a number with at least four significant digits (at least one decimal for
/// values of 1000 and above), trailing zeros trimmed. A nonzero value never prints as
/// `0`: 0.0036 prints `0.0036`, 1437.17 prints `1437.2`.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let mag = v.abs().log10().floor() as i32;
    if mag < -12 {
        return format!("{v:.3e}");
    }
    let decimals = (3 - mag).clamp(1, 15) as usize;
    trim_zeros(format!("{v:.decimals$}"))
}

/// Formats a number with a fixed count of decimals, trailing zeros trimmed.
pub fn fixed(v: f64, decimals: usize) -> String {
    trim_zeros(format!("{v:.decimals$}"))
}

fn trim_zeros(s: String) -> String {
    if !s.contains('.') {
        return s;
    }
    let t = s.trim_end_matches('0').trim_end_matches('.');
    if t == "-0" {
        "0".to_string()
    } else {
        t.to_string()
    }
}

/// `median`, or `-` when no trial produced the value.
pub fn stat_median(s: &Stat) -> String {
    s.median.map(num).unwrap_or_else(|| "-".to_string())
}

/// `min–max` over trials, or `None` when fewer than two trials produced the value
/// or they all gave the same value.
pub fn stat_range(s: &Stat) -> Option<String> {
    match (s.min, s.max) {
        (Some(a), Some(b)) if s.n >= 2 && a != b => Some(format!("{}–{}", num(a), num(b))),
        _ => None,
    }
}

/// `median (min–max)`, or only the median with fewer than two trials.
pub fn stat_full(s: &Stat) -> String {
    match stat_range(s) {
        Some(r) => format!("{} ({r})", stat_median(s)),
        None => stat_median(s),
    }
}

/// A load level as people write it: `4`, `0.5`.
pub fn x_label(x: f64) -> String {
    num(x)
}

/// How a cell is shown in a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Style {
    /// No colour.
    #[default]
    Plain,
    /// Good: the SLO is met, a change is better.
    Good,
    /// Bad: the SLO is missed, a change is worse.
    Bad,
    /// Needs attention.
    Warn,
    /// Secondary information (ranges, "not significant").
    Dim,
    /// Headings.
    Bold,
}

impl Style {
    /// Wraps `s` in this style's ANSI codes when `color` is true.
    pub fn paint(self, s: &str, color: bool) -> String {
        let code = match self {
            Style::Plain => return s.to_string(),
            Style::Good => "32",
            Style::Bad => "31",
            Style::Warn => "33",
            Style::Dim => "2",
            Style::Bold => "1",
        };
        if color && !s.is_empty() {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// One table cell: its text and style.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    /// The text (no escape codes).
    pub text: String,
    /// The style.
    pub style: Style,
}

impl Cell {
    /// A plain cell.
    pub fn plain(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            style: Style::Plain,
        }
    }

    /// A styled cell.
    pub fn styled(text: impl Into<String>, style: Style) -> Cell {
        Cell {
            text: text.into(),
            style,
        }
    }
}

/// A line of an aligned table: cells, or a free note printed as is.
#[derive(Debug, Clone)]
pub enum Line {
    /// Cells aligned in columns.
    Cells(Vec<Cell>),
    /// Text not aligned with the columns (a group title, a failure).
    Note(Cell),
}

/// A plain table: a header of `columns`, then `rows`, laid out by [`align`]
/// (the sections below the main table: turns, reasoning, prediction intervals).
pub fn plain_table(columns: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut lines = vec![Line::Cells(
        columns.iter().map(|c| Cell::plain(*c)).collect(),
    )];
    lines.extend(
        rows.into_iter()
            .map(|r| Line::Cells(r.into_iter().map(Cell::plain).collect())),
    );
    align(&lines, &[], false)
}

/// Lays out `lines` in columns separated by two spaces. Column 0 is left-aligned
/// (and so are the columns in `left`), the others right-aligned. Widths count
/// characters, so colour codes and `–` do not break alignment.
pub fn align(lines: &[Line], left: &[usize], color: bool) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for line in lines {
        if let Line::Cells(cells) = line {
            for (i, c) in cells.iter().enumerate() {
                let w = c.text.chars().count();
                if widths.len() <= i {
                    widths.push(0);
                }
                widths[i] = widths[i].max(w);
            }
        }
    }
    let mut out = String::new();
    for line in lines {
        match line {
            Line::Note(c) => out.push_str(&c.style.paint(&c.text, color)),
            Line::Cells(cells) => {
                let mut s = String::new();
                for (i, c) in cells.iter().enumerate() {
                    let pad = widths[i].saturating_sub(c.text.chars().count());
                    let painted = c.style.paint(&c.text, color);
                    if i > 0 {
                        s.push_str("  ");
                    }
                    if i == 0 || left.contains(&i) {
                        s.push_str(&painted);
                        s.push_str(&" ".repeat(pad));
                    } else {
                        s.push_str(&" ".repeat(pad));
                        s.push_str(&painted);
                    }
                }
                out.push_str(s.trim_end());
            }
        }
        out.push('\n');
    }
    out
}

/// `n` and a noun, plural unless `n` is 1: `count(1, "trial")` is `1 trial`,
/// `count(2, "warm-up request")` is `2 warm-up requests`.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(num(1437.17), "1437.2");
        assert_eq!(num(241.7), "241.7");
        assert_eq!(num(76.58), "76.58");
        assert_eq!(num(3.98), "3.98");
        assert_eq!(num(0.0036), "0.0036");
        assert_eq!(num(0.003612345), "0.003612");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(4.0), "4");
        assert_eq!(num(-2.5), "-2.5");
        assert_ne!(num(1e-9), "0");
    }

    #[test]
    fn ranges_need_two_trials() {
        let two = Stat {
            median: Some(2.0),
            min: Some(1.0),
            max: Some(3.0),
            n: 2,
        };
        assert_eq!(stat_full(&two), "2 (1–3)");
        let one = Stat { n: 1, ..two };
        assert_eq!(stat_full(&one), "2");
        assert_eq!(stat_full(&Stat::default()), "-");
    }

    #[test]
    fn alignment_ignores_colour_codes() {
        let lines = vec![
            Line::Cells(vec![Cell::plain("a"), Cell::styled("1", Style::Good)]),
            Line::Cells(vec![Cell::plain("bb"), Cell::plain("100")]),
        ];
        let plain = align(&lines, &[], false);
        assert_eq!(plain, "a     1\nbb  100\n");
        let coloured = align(&lines, &[], true);
        assert!(coloured.contains("\x1b[32m1\x1b[0m"));
    }
}
