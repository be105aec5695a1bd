//! Text for a terminal: what goodput prints may hold what a server sent (an error
//! body, a model id) or what a foreign report holds, and a terminal obeys control
//! sequences in it (`ESC]0;title BEL` retitles the window, `ESC[2J` clears it).
//! [`safe`] shows every control character as an escape (`\u{1b}`), except
//! newline and tab and the colour codes goodput's own tables use (`ESC[…m`), and
//! redacts secrets ([`crate::redact`]); [`line()`] escapes newline and tab too, for a
//! status line or a name.

use std::borrow::Cow;

/// `text` made safe to print: secrets redacted, control characters escaped.
pub fn safe(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c.is_control() && c != '\n' && c != '\t')
}

/// [`safe`] for what must stay on one line (a status line, a name a server or a
/// file gave: a model id, an engine's name): newlines and tabs are escaped too, so
/// that a name cannot start a line of its own (a fake `Verdict:`).
pub fn line(text: &str) -> Cow<'_, str> {
    escaped(text, char::is_control)
}

fn escaped(text: &str, is_escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    let redacted = crate::redact::text(text);
    if !redacted.chars().any(&is_escaped) {
        return redacted;
    }
    let mut out = String::with_capacity(redacted.len() + 16);
    let mut rest = redacted.as_ref();
    while let Some(c) = rest.chars().next() {
        if c == '\x1b' {
            if let Some(n) = sgr_len(rest) {
                out.push_str(&rest[..n]);
                rest = &rest[n..];
                continue;
            }
        }
        if is_escaped(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// The length of a colour sequence (`ESC [ digits/semicolons m`) at the start of
/// `s`, if it is one.
fn sgr_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("\x1b[")?;
    let n = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (body.as_bytes().get(n) == Some(&b'm') && n <= 16).then_some(2 + n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_are_shown_not_obeyed_and_colours_kept() {
        let hostile = "HTTP 500: \x1b]0;pwned\x07\x1b[2J body\u{9b}";
        let shown = safe(hostile);
        assert!(
            !shown.contains('\x1b') && !shown.contains('\x07'),
            "{shown:?}"
        );
        assert!(
            shown.contains("\\u{1b}]0;pwned\\u{7}\\u{1b}[2J body\\u{9b}"),
            "{shown}"
        );
        let ours = "\x1b[32m1\x1b[0m\tok\n";
        assert_eq!(safe(ours), ours);
        // On one line, a newline in a name cannot start a line of its own.
        assert_eq!(line("m\nVerdict: x"), "m\\u{a}Verdict: x");
    }
}
