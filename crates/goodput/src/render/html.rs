//! The self-contained HTML page: inline `<style>`, inline SVG charts, one small
//! inline script that checks the charts; nothing is loaded from the network.
//!
//! Every string from the report is escaped with [`escape`].

use report::Report;
use serde_json::Value;

use super::charts::{self, hex, Chart};
use super::rows::rows;
use super::table::{display_cells, header_lines, COLUMNS};
use super::text::Style;
use super::warnings::{grouped, warnings, Group};

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
:root { --fg: #1d2430; --muted: #5b6473; --line: #dde1e7; --bg: #f6f7f9;
  --good: #1a7f37; --bad: #c62828; --warn: #a05a00; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 "Liberation Sans", "DejaVu Sans", Arial, sans-serif;
  color: var(--fg); background: var(--bg); }
main { max-width: 1360px; margin: 0 auto; padding: 24px 24px 48px; }
h1 { font-size: 26px; margin: 0 0 6px; }
h2 { font-size: 19px; margin: 30px 0 10px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 16px; margin: 16px 0 6px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0 0; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; }
section.card, figure.chart { background: #fff; border: 1px solid var(--line); border-radius: 8px; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 16px; }
figure.chart { margin: 0; padding: 12px 14px; }
figure.chart svg { width: 100%; height: auto; display: block; }
figcaption strong { font-size: 16px; }
figcaption p { margin: 2px 0 6px; color: var(--muted); font-size: 13px; }
ul.legend { list-style: none; padding: 0; margin: 6px 0 0; display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 13px; }
ul.legend li { display: flex; align-items: center; gap: 6px; }
.swatch { width: 22px; height: 4px; border-radius: 2px; display: inline-block; }
.table-wrap { overflow-x: auto; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
table.results { border-collapse: collapse; font-size: 12.5px; width: 100%; }
table.results th, table.results td { padding: 5px 5px; text-align: right; white-space: nowrap; vertical-align: top; }
table.results thead th { white-space: normal; vertical-align: bottom; }
table.results th:first-child, table.results td:first-child { text-align: left; font-weight: 600; }
table.results thead th { background: #eef1f5; position: sticky; top: 0; }
table.results tr.first td { border-top: 1px solid var(--line); }
td .range { display: block; color: var(--muted); font-size: 11px; font-weight: normal; }
td.good { color: var(--good); font-weight: 600; } td.bad { color: var(--bad); font-weight: 600; }
td.warn { color: var(--warn); font-weight: 600; }
table.results td.failed { text-align: left; color: var(--bad); white-space: normal; }
.warnings { background: #fff8e6; border: 1px solid #f0d28a; border-radius: 8px; padding: 6px 18px 12px; }
.warnings h3 { color: var(--warn); }
.warnings .why { color: var(--muted); font-weight: normal; }
.warnings ul { margin: 4px 0; padding-left: 20px; }
.warnings .advice { margin: 4px 0 0; }
.ok { background: #eaf6ec; border: 1px solid #b6dfbd; border-radius: 8px; padding: 10px 16px; }
table.kv { border-collapse: collapse; font-size: 13px; }
table.kv th { text-align: left; color: var(--muted); font-weight: normal; padding: 2px 12px 2px 0; vertical-align: top; }
table.kv td { padding: 2px 0; vertical-align: top; }
table.kv table.kv { margin: 0; }
ul.notices { margin: 0; padding-left: 18px; }
code, pre { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 12px; }
pre { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px; overflow-x: auto; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
"#;

/// Records script errors into the page, so a headless browser's DOM dump shows them.
const ERROR_SCRIPT: &str = r#"window.onerror = function (msg, src, line) {
  var e = document.getElementById('js-errors') || document.documentElement;
  e.setAttribute('data-errors', (e.getAttribute('data-errors') || '') + msg + ' (line ' + line + '); ');
};"#;

/// Counts the data lines of every chart and the text that sticks out of its SVG,
/// and writes the result into `#chart-check`.
const CHECK_SCRIPT: &str = r#"(function () {
  var out = document.getElementById('chart-check');
  var ok = true, lines = [];
  document.querySelectorAll('figure.chart').forEach(function (f) {
    var want = Number(f.getAttribute('data-series'));
    var svg = f.querySelector('svg');
    var got = svg ? svg.querySelectorAll('polyline[stroke-width="2"]').length : 0;
    var box = svg ? svg.getBoundingClientRect() : null;
    var width = box ? box.width : 0;
    var outside = [];
    if (svg) {
      svg.querySelectorAll('text').forEach(function (t) {
        var r = t.getBoundingClientRect();
        if (r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1 ||
            r.top < box.top - 1 || r.bottom > box.bottom + 1)) {
          outside.push(JSON.stringify(t.textContent.trim()));
        }
      });
    }
    var good = svg && want > 0 && got === want && width > 100 && outside.length === 0;
    if (!good) { ok = false; }
    lines.push(f.id + ' want=' + want + ' got=' + got + ' width=' + Math.round(width) +
      (outside.length ? ' cut-off=' + outside.join(',') : '') + (good ? ' ok' : ' BAD'));
  });
  out.textContent = lines.join('\n');
  out.setAttribute('data-charts', String(lines.length));
  out.setAttribute('data-ok', ok && lines.length > 0 ? 'true' : 'false');
})();"#;

/// The whole page for a report.
pub fn html(report: &Report) -> String {
    let title = format!("goodput report: {}", escape(&report.profile));
    let mut h = String::with_capacity(256 * 1024);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str(crate::run::HTML_GENERATOR);
    h.push('\n');
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.push_str(&format!("<title>{title}</title>\n<style>{STYLE}</style>\n"));
    h.push_str(&format!(
        "<script>{ERROR_SCRIPT}</script>\n</head>\n<body>\n<main>\n"
    ));
    h.push_str(&format!(
        "<header>\n<h1>{title}</h1>\n<dl class=\"meta\">\n"
    ));
    for (k, v) in header_lines(report).iter().skip(1) {
        h.push_str(&format!("<dt>{}</dt><dd>{}</dd>\n", escape(k), escape(v)));
    }
    let engines: Vec<String> = report.load.keys().map(|e| escape(e)).collect();
    h.push_str(&format!(
        "<dt>engines</dt><dd>{}</dd>\n</dl>\n</header>\n",
        engines.join(", ")
    ));
    h.push_str(&super::verdict::verdict_html(report));
    warnings_section(report, &mut h);
    h.push_str("<section id=\"charts\">\n<h2>Charts</h2>\n<div class=\"charts\">\n");
    let all = charts::all(report);
    if all.is_empty() {
        h.push_str("<p>No results to chart.</p>\n");
    }
    for chart in all {
        figure(&chart, &mut h);
    }
    h.push_str("</div>\n</section>\n");
    results_table(report, &mut h);
    profile_section(report, &mut h);
    environment_section(report, &mut h);
    h.push_str("<footer>Written by goodput. This page is self-contained: it loads nothing.\n");
    h.push_str("<pre id=\"chart-check\" hidden></pre><div id=\"js-errors\" hidden></div>\n");
    h.push_str(&format!(
        "</footer>\n</main>\n<script>{CHECK_SCRIPT}</script>\n</body>\n</html>\n"
    ));
    h
}

fn figure(chart: &Chart, h: &mut String) {
    let svg = match charts::svg(chart) {
        Ok(svg) => svg,
        Err(e) => format!("<p>This chart could not be drawn: {}</p>", escape(&e)),
    };
    h.push_str(&format!(
        "<figure class=\"chart\" id=\"{}\" data-series=\"{}\">\n<figcaption><strong>{}</strong>\
         <p>{}</p></figcaption>\n{svg}\n<ul class=\"legend\">",
        escape(&chart.id),
        chart.series.len(),
        escape(&chart.title),
        escape(&chart.note)
    ));
    for s in chart.series.iter().filter(|s| s.in_legend) {
        h.push_str(&format!(
            "<li><span class=\"swatch\" style=\"background:{}\"></span>{}</li>",
            hex(s.color),
            escape(&s.label)
        ));
    }
    h.push_str("</ul>\n</figure>\n");
}

fn warnings_section(report: &Report, h: &mut String) {
    let ws = warnings(report);
    h.push_str("<section id=\"warnings\">\n");
    if ws.is_empty() {
        h.push_str("<h2>Warnings</h2>\n<p class=\"ok\">No warnings.</p>\n</section>\n");
        return;
    }
    h.push_str(&format!(
        "<h2>Warnings ({})</h2>\n<div class=\"warnings\">\n",
        ws.len()
    ));
    for Group {
        kind,
        lines,
        advice,
    } in grouped(&ws)
    {
        h.push_str(&format!(
            "<h3>{} <span class=\"why\">— {}</span></h3>\n<ul>\n",
            escape(kind.title()),
            escape(kind.why())
        ));
        for (at, m) in lines {
            h.push_str(&format!(
                "<li><strong>{}</strong>: {}</li>\n",
                escape(&at),
                escape(&m)
            ));
        }
        h.push_str("</ul>\n");
        for a in advice {
            h.push_str(&format!(
                "<p class=\"advice\"><strong>What to do:</strong> {}</p>\n",
                escape(&a)
            ));
        }
    }
    h.push_str("</div>\n</section>\n");
}

fn class_of(style: Style) -> &'static str {
    match style {
        Style::Good => " class=\"good\"",
        Style::Bad => " class=\"bad\"",
        Style::Warn => " class=\"warn\"",
        _ => "",
    }
}

fn results_table(report: &Report, h: &mut String) {
    h.push_str(
        "<section id=\"results\">\n<h2>Results</h2>\n<p>Latencies in ms. Each value is the \
         median over trials, with the min–max over trials below it. Green: the median \
         meets the SLO; red: it misses.</p>\n<div class=\"table-wrap\"><table class=\"results\">\n<thead><tr>",
    );
    for c in COLUMNS {
        h.push_str(&format!("<th>{}</th>", escape(c)));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    let mut last = "";
    for row in rows(report) {
        let first = row.engine != last;
        last = row.engine;
        let tr = if first {
            "<tr class=\"first\">"
        } else {
            "<tr>"
        };
        let Some(cells) = display_cells(report, &row) else {
            h.push_str(&format!(
                "{tr}<td>{}</td><td class=\"failed\" colspan=\"{}\">engine failed: {}</td></tr>\n",
                escape(row.engine),
                COLUMNS.len() - 1,
                escape(&row.engine_error().unwrap_or_default())
            ));
            continue;
        };
        h.push_str(tr);
        for (i, c) in cells.iter().enumerate() {
            let text = if i == 0 && !first {
                ""
            } else {
                c.main.as_str()
            };
            h.push_str(&format!("<td{}>{}", class_of(c.style), escape(text)));
            if let Some(r) = &c.range {
                h.push_str(&format!("<span class=\"range\">{}</span>", escape(r)));
            }
            h.push_str("</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table></div>\n</section>\n");
}

/// Renders JSON as nested key/value tables (objects), lists (arrays) and text.
pub fn json_html(v: &Value) -> String {
    match v {
        Value::Null => "<em>null</em>".into(),
        Value::String(s) => escape(s),
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let items: Vec<String> = a
                .iter()
                .map(|x| match x {
                    Value::String(s) => escape(s),
                    other => escape(&other.to_string()),
                })
                .collect();
            format!("<code>{}</code>", items.join(" "))
        }
        Value::Array(a) => a.iter().map(json_html).collect::<Vec<_>>().join("\n"),
        Value::Object(m) => {
            let mut s = String::from("<table class=\"kv\">");
            for (k, v) in m {
                s.push_str(&format!(
                    "<tr><th>{}</th><td>{}</td></tr>",
                    escape(k),
                    json_html(v)
                ));
            }
            s.push_str("</table>");
            s
        }
        other => escape(&other.to_string()),
    }
}

fn profile_section(report: &Report, h: &mut String) {
    h.push_str("<section id=\"profile\">\n<h2>Profile</h2>\n<table class=\"kv\">");
    let row = |h: &mut String, k: &str, v: &str| {
        h.push_str(&format!("<tr><th>{}</th><td>{v}</td></tr>", escape(k)));
    };
    row(h, "name", &escape(&report.profile));
    if let Ok(slo) = serde_json::to_value(&report.slo) {
        row(h, "slo", &json_html(&slo));
    }
    match report.run.as_ref().map(serde_json::to_value) {
        Some(Ok(Value::Object(run))) => row(h, "run", &run_html(&run)),
        _ => row(h, "run", "not recorded (reference format)"),
    }
    h.push_str("</table>\n</section>\n");
}

/// The run info as a key/value table, with its Unix times as UTC dates and its
/// notices one per list item.
fn run_html(run: &serde_json::Map<String, Value>) -> String {
    let mut s = String::from("<table class=\"kv\">");
    for (k, v) in run {
        let (key, value) = match (k.as_str(), v) {
            ("notices", Value::Array(items)) => {
                let items: String = items
                    .iter()
                    .map(|n| format!("<li>{}</li>", json_html(n)))
                    .collect();
                (k.as_str(), format!("<ul class=\"notices\">{items}</ul>"))
            }
            (_, Value::Number(n)) if k.ends_with("_unix_s") => {
                (k.trim_end_matches("_unix_s"), date_html(n.as_f64()))
            }
            _ => (k.as_str(), json_html(v)),
        };
        s.push_str(&format!(
            "<tr><th>{}</th><td>{value}</td></tr>",
            escape(key)
        ));
    }
    s.push_str("</table>");
    s
}

/// A Unix time as a `<time>` element showing the UTC date, the raw value in its
/// title; a value that is no time (negative, not finite) as the number itself.
fn date_html(unix_s: Option<f64>) -> String {
    match unix_s {
        Some(t) if (0.0..1e13).contains(&t) => format!(
            "<time title=\"Unix time {}\">{}</time>",
            escape(&t.to_string()),
            crate::environment::utc_minute(t as u64)
        ),
        Some(t) => escape(&t.to_string()),
        None => String::new(),
    }
}

fn environment_section(report: &Report, h: &mut String) {
    h.push_str("<section id=\"environment\">\n<h2>Environment</h2>\n");
    match report.environment.as_ref().map(serde_json::to_value) {
        Some(Ok(env)) => {
            h.push_str(&json_html(&env));
            let pretty = serde_json::to_string_pretty(&env).unwrap_or_default();
            h.push_str(&format!(
                "\n<details><summary>as JSON</summary><pre>{}</pre></details>\n",
                escape(&pretty)
            ));
        }
        _ => h.push_str(
            "<p>Not recorded: the report's <code>environment</code> is null, so the GPU, \
             driver, engine versions, model and command lines are unknown.</p>\n",
        ),
    }
    h.push_str("</section>\n");
}
