//! Presenting reports: every format's snapshots, the HTML page (parsed and in a
//! browser), warnings, the verdict, and `compare`.

mod compare_decides;
mod gate;
mod ran;
mod render_browser;
mod render_compare;
mod render_html;
mod render_snapshots;
mod render_warnings;
mod verdict;
