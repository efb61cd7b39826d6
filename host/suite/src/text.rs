//! Untrusted text on its way to a terminal or a CI log.
//!
//! Suite names, test ids, assertion names, check texts, a command's stderr,
//! an endpoint's error body, a plugin's description: any of them may hold
//! escape sequences (set the window title, write the clipboard with OSC 52,
//! conceal text), carriage returns that overwrite a line, bidirectional
//! overrides that reorder it, or a newline followed by a GitHub workflow
//! command (`::stop-commands::`, `::add-mask::`, a forged `::error`).
//!
//! Two layers, so that no printer can forget:
//! - [`shown`] escapes a value for one line: every control character (C0,
//!   DEL, C1), and the Unicode format characters that reorder or break
//!   lines, become visible escapes (`\n`, `\u{1b}`). Printers use it on each
//!   value they put in a line.
//! - [`Terminal`] wraps the stream itself (stderr, and stdout of commands
//!   that print for people): whatever reaches it, only newlines, tabs and
//!   the plain colour sequences evalhost itself prints get through as they
//!   are; every other control character is escaped, and a line that would
//!   start with `:` (which no line of evalhost's does) is prefixed with `\`
//!   so that it can never be read as a workflow command.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write;

/// True for the characters [`shown`] escapes.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

fn escape_into(c: char, out: &mut String) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
}

/// `text` made safe for one line of a terminal or a CI log: see the module
/// documentation. Borrowed when there is nothing to escape.
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
            escape_into(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`shown`] for a value that may start a line of a file someone may print
/// into a CI log (JUnit XML): a leading `:` is escaped too, so the line can
/// never be read as a workflow command.
pub fn shown_line(text: &str) -> Cow<'_, str> {
    let shown = shown(text);
    if shown.trim_start().starts_with(':') {
        Cow::Owned(format!("\\{}", shown.trim_start()))
    } else {
        shown
    }
}

/// Like [`shown`], but keeps newlines: each line of `text` is escaped and
/// prefixed with `indent`, so that no line of it starts a line of output.
pub fn shown_lines(text: &str, indent: &str) -> String {
    let mut out = String::with_capacity(text.len() + indent.len() * 4);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(indent);
        out.push_str(&shown(line));
    }
    out
}

/// JSON text for a terminal: serde_json escapes C0 controls, not C1 or the
/// format characters; this escapes those too, as `\uXXXX` (still JSON).
pub fn json_shown(json: &str) -> Cow<'_, str> {
    if !json.chars().any(is_unsafe) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        // Newlines between tokens (pretty printing) are the printer's own.
        if is_unsafe(c) && c != '\n' {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The SGR parameters evalhost's own styling uses (reset, bold, dim,
/// normal intensity, foreground colours): the only escape sequences a
/// [`Terminal`] lets through. Conceal, blink and the rest are escaped.
fn harmless_sgr(params: &str) -> bool {
    params
        .split(';')
        .all(|p| p.is_empty() || matches!(p.parse::<u8>(), Ok(0..=2 | 22 | 30..=37 | 39 | 90..=97)))
}

/// A stream for people (stderr): every byte written through it is made safe
/// as the module documentation says.
pub struct Terminal<W: Write> {
    inner: W,
    /// Nothing but spaces and tabs written on the current line yet.
    line_start: bool,
    /// The reader went away (`evalhost runs list | head`): what is left to
    /// print is dropped quietly, and the command finishes its work — a
    /// run still records every result — instead of failing on the pipe.
    closed: bool,
}

impl<W: Write> Terminal<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            line_start: true,
            closed: false,
        }
    }

    fn clean(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '\n' => {
                    out.push('\n');
                    self.line_start = true;
                    continue;
                }
                ' ' | '\t' => {
                    out.push(c);
                    continue;
                }
                '\u{1b}' => {
                    // A whole `ESC [ params m` with harmless parameters.
                    let rest = &text[i + 1..];
                    if let Some(body) = rest.strip_prefix('[')
                        && let Some(end) = body.find(|c: char| !(c.is_ascii_digit() || c == ';'))
                        && body[end..].starts_with('m')
                        && harmless_sgr(&body[..end])
                    {
                        let len = 1 + end + 1;
                        out.push('\u{1b}');
                        out.push_str(&rest[..len]);
                        for _ in 0..len {
                            chars.next();
                        }
                        continue;
                    }
                    escape_into(c, &mut out);
                }
                ':' if self.line_start => {
                    out.push_str("\\:");
                }
                c if is_unsafe(c) => escape_into(c, &mut out),
                c => out.push(c),
            }
            self.line_start = false;
        }
        out
    }
}

impl<W: Write> Write for Terminal<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let text = String::from_utf8_lossy(buf);
        let clean = self.clean(&text);
        match self.inner.write_all(clean.as_bytes()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => self.closed = true,
            other => other?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_for_one_line() {
        assert_eq!(shown("plain-id"), "plain-id");
        assert_eq!(
            shown("a\n::stop-commands::x\r\u{1b}]52;c;Zm9v\u{7}\u{9b}\u{202e}"),
            "a\\n::stop-commands::x\\r\\u{1b}]52;c;Zm9v\\u{7}\\u{9b}\\u{202e}"
        );
        assert_eq!(
            shown_lines("one\n::error::x", "    "),
            "    one\n    ::error::x"
        );
        assert_eq!(json_shown("{\"a\": \"\u{9b}\"}"), "{\"a\": \"\\u009b\"}");
    }

    #[test]
    fn the_terminal_stream_passes_only_newlines_tabs_and_plain_colours() {
        let mut t = Terminal::new(Vec::new());
        write!(
            t,
            "  \u{1b}[31m\u{1b}[1mFAIL \u{1b}[0m id\u{1b}[8mhidden\u{1b}]0;title\u{7}\r\n"
        )
        .unwrap();
        write!(t, "::add-mask::x\n  ::error::y\nok: a::b\n").unwrap();
        let out = String::from_utf8(t.inner).unwrap();
        assert_eq!(
            out,
            "  \u{1b}[31m\u{1b}[1mFAIL \u{1b}[0m id\\u{1b}[8mhidden\\u{1b}]0;title\\u{7}\\r\n\\::add-mask::x\n  \\::error::y\nok: a::b\n"
        );
    }
}
