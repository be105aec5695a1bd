//! Markdown tables: one way to lay out a header, its alignment row and the rows,
//! and the one escape of text for a cell or line.

/// Escapes text for a Markdown table cell or line.
pub fn md_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' | '\\' | '*' | '_' | '`' | '<' | '>' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// A Markdown table: `columns` as the header, the first `left` columns left-aligned
/// and the rest right-aligned, then `rows` (cells already escaped, see
/// [`md_escape`]). Every line ends with a newline.
pub fn grid<S: AsRef<str>>(columns: &[&str], left: usize, rows: &[Vec<S>]) -> String {
    let mut out = format!("| {} |\n|", columns.join(" | "));
    for i in 0..columns.len() {
        out.push_str(if i < left { " --- |" } else { " ---: |" });
    }
    out.push('\n');
    for row in rows {
        let cells: Vec<&str> = row.iter().map(AsRef::as_ref).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn header_alignment_and_rows() {
        let t = super::grid(&["a", "b", "c"], 1, &[vec!["x", "1", "2"]]);
        assert_eq!(t, "| a | b | c |\n| --- | ---: | ---: |\n| x | 1 | 2 |\n");
    }
}
