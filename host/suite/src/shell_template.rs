//! Shell command templates with placeholders (a `cli` target's `{PROMPT}`,
//! a hook's `{{test_id}}`): where each placeholder stands, as far as the
//! shell's own syntax tells — outside quotes, in `"…"`, in `'…'`, in a
//! heredoc — so that the host can put there a *reference* to the value
//! (an environment variable), never the value itself.
//!
//! The scan knows quotes and backslashes, `$(…)` and backquotes (a new
//! quoting level each), comments, and heredocs (`<<WORD`, `<<-WORD`,
//! `<<'WORD'`). It is a scanner, not a shell: on input it cannot follow it
//! errs toward forms that keep a value data (see the host's
//! `process::fill_shell_template`).

/// Where a placeholder stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Where the shell splits words: outside quotes, also inside `$(…)` or
    /// backquotes.
    Bare,
    /// Inside `"…"`: expanded, not split.
    Double,
    /// Inside `'…'`: not expanded by this shell.
    Single,
    /// In the body of a heredoc whose delimiter is not quoted: expanded,
    /// not split.
    Heredoc,
    /// In the body of a heredoc with a quoted delimiter: not expanded.
    QuotedHeredoc,
    /// In a comment.
    Comment,
}

/// A piece of a scanned template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Template text, as written.
    Text(&'a str),
    /// A placeholder and where it stands.
    Placeholder {
        /// Its name (between the delimiters).
        name: &'a str,
        /// Where it stands.
        place: Place,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// Code: the top level, `$(…)` (with its open parentheses) or a
    /// backquoted command.
    Code {
        parens: usize,
        backquote: bool,
    },
    Double,
}

/// Splits `template` into text and the placeholders `known` accepts, in one
/// pass over the template as written.
pub fn scan<'a>(
    template: &'a str,
    open: &str,
    close: &str,
    known: impl Fn(&str) -> bool,
) -> Vec<Piece<'a>> {
    let bytes = template.as_bytes();
    let mut pieces = Vec::new();
    let mut stack = vec![Frame::Code {
        parens: 0,
        backquote: false,
    }];
    let mut single = false;
    let mut comment = false;
    // Heredocs announced on the current line: (delimiter, quoted, strip tabs).
    let mut pending: Vec<(String, bool, bool)> = Vec::new();
    // The heredoc whose body we are in.
    let mut body: Option<(String, bool, bool)> = None;
    let mut text_start = 0;
    let mut i = 0;
    let mut line_start = true;
    while i < bytes.len() {
        let rest = &template[i..];
        // A placeholder, wherever it stands.
        if rest.starts_with(open)
            && let Some(end) = rest[open.len()..].find(close)
        {
            let name = &rest[open.len()..open.len() + end];
            if known(name) {
                let place = if let Some((_, quoted, _)) = &body {
                    if *quoted {
                        Place::QuotedHeredoc
                    } else {
                        Place::Heredoc
                    }
                } else if comment {
                    Place::Comment
                } else if single {
                    Place::Single
                } else if stack.last() == Some(&Frame::Double) {
                    Place::Double
                } else {
                    Place::Bare
                };
                if text_start < i {
                    pieces.push(Piece::Text(&template[text_start..i]));
                }
                pieces.push(Piece::Placeholder { name, place });
                i += open.len() + end + close.len();
                text_start = i;
                line_start = false;
                continue;
            }
        }
        let c = bytes[i];
        // Inside a heredoc body: only the closing line matters.
        if let Some((delimiter, _, strip)) = &body {
            if line_start {
                let line_end = template[i..].find('\n').map_or(template.len(), |n| i + n);
                let line = &template[i..line_end];
                let line = if *strip {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                if line == delimiter {
                    body = None;
                }
            }
            line_start = c == b'\n';
            i += 1;
            continue;
        }
        if c == b'\n' {
            comment = false;
            line_start = true;
            if !single && !pending.is_empty() {
                body = Some(pending.remove(0));
                // Several heredocs on one line: the rest follow in order
                // (rare; the first is tracked, the others as text).
                pending.clear();
            }
            i += 1;
            continue;
        }
        line_start = false;
        if comment {
            i += 1;
            continue;
        }
        if single {
            if c == b'\'' {
                single = false;
            }
            i += 1;
            continue;
        }
        let top = *stack.last().unwrap_or(&Frame::Code {
            parens: 0,
            backquote: false,
        });
        match (c, top) {
            (b'\\', _) => {
                // `\{PROMPT}`: the backslash would quote the reference's
                // first character; drop it and keep the placeholder.
                let next = &template[i + 1..];
                if next.starts_with(open)
                    && next[open.len()..]
                        .find(close)
                        .is_some_and(|end| known(&next[open.len()..open.len() + end]))
                {
                    if text_start < i {
                        pieces.push(Piece::Text(&template[text_start..i]));
                    }
                    i += 1;
                    text_start = i;
                    continue;
                }
                i += 2;
                continue;
            }
            (b'"', Frame::Double) => {
                stack.pop();
            }
            (b'"', Frame::Code { .. }) => stack.push(Frame::Double),
            (b'\'', Frame::Code { .. }) => single = true,
            (b'$', _) if rest.starts_with("$(") => {
                stack.push(Frame::Code {
                    parens: 0,
                    backquote: false,
                });
                i += 2;
                continue;
            }
            (
                b'`',
                Frame::Code {
                    backquote: true, ..
                },
            ) => {
                stack.pop();
            }
            (b'`', _) => stack.push(Frame::Code {
                parens: 0,
                backquote: true,
            }),
            (b'(', Frame::Code { parens, backquote }) => {
                if let Some(last) = stack.last_mut() {
                    *last = Frame::Code {
                        parens: parens + 1,
                        backquote,
                    };
                }
            }
            (b')', Frame::Code { parens, backquote }) => {
                if parens > 0 {
                    if let Some(last) = stack.last_mut() {
                        *last = Frame::Code {
                            parens: parens - 1,
                            backquote,
                        };
                    }
                } else if stack.len() > 1 {
                    stack.pop();
                }
            }
            (b'#', Frame::Code { .. }) => {
                let word_start = i == 0
                    || matches!(
                        bytes[i - 1],
                        b' ' | b'\t' | b';' | b'&' | b'|' | b'(' | b'\n'
                    );
                if word_start {
                    comment = true;
                }
            }
            (b'<', Frame::Code { .. }) if rest.starts_with("<<") && !rest.starts_with("<<<") => {
                let mut j = i + 2;
                let strip = bytes.get(j) == Some(&b'-');
                if strip {
                    j += 1;
                }
                while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
                    j += 1;
                }
                let word_end = template[j..]
                    .find(|ch: char| {
                        ch.is_whitespace() || matches!(ch, ';' | '&' | '|' | '<' | '>' | ')')
                    })
                    .map_or(template.len(), |n| j + n);
                let word = &template[j..word_end];
                if !word.is_empty() {
                    let quoted = word.contains(['\'', '"', '\\']);
                    let delimiter: String = word
                        .chars()
                        .filter(|ch| !matches!(ch, '\'' | '"' | '\\'))
                        .collect();
                    pending.push((delimiter, quoted, strip));
                    i = word_end;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if text_start < template.len() {
        pieces.push(Piece::Text(&template[text_start..]));
    }
    pieces
}

/// Why `template` cannot be used: a placeholder where this shell would not
/// expand a reference (inside `'…'`, in a heredoc with a quoted delimiter).
/// Such text is usually handed to another program as code (`sh -c '…'`),
/// where a value must not be spliced in; the hint says what to write.
///
/// `spliceable` names placeholders whose values the host makes itself out
/// of plain path characters (a temporary file's path): inside `'…'` they
/// are spliced in as AgentV does (`'…'"$VAR"'…'`), so `bash -c '… >
/// {OUTPUT_FILE}'` works; any other value there would become code.
pub fn check(
    template: &str,
    open: &str,
    close: &str,
    known: impl Fn(&str) -> bool,
    variable: impl Fn(&str) -> String,
    spliceable: impl Fn(&str) -> bool,
) -> Result<(), String> {
    for piece in scan(template, open, close, known) {
        if let Piece::Placeholder { name, place } = piece {
            let var = variable(name);
            match place {
                Place::Single if spliceable(name) => {}
                Place::Single => {
                    return Err(format!(
                        "the placeholder {open}{name}{close} is inside '…', where the shell expands nothing: write it without quotes (evalhost passes every value as one word), or, inside a nested shell (sh -c '…'), refer to \"${var}\", which holds the value"
                    ));
                }
                Place::QuotedHeredoc => {
                    return Err(format!(
                        "the placeholder {open}{name}{close} is in a heredoc with a quoted delimiter, where the shell expands nothing: unquote the delimiter, or refer to \"${var}\" in the program reading it"
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(template: &str) -> Vec<Place> {
        scan(template, "{", "}", |n| n == "P")
            .into_iter()
            .filter_map(|p| match p {
                Piece::Placeholder { place, .. } => Some(place),
                Piece::Text(_) => None,
            })
            .collect()
    }

    #[test]
    fn places_follow_the_shell() {
        use Place::*;
        assert_eq!(
            places("a {P} '{P}' \"{P}\" \\{P}"),
            [Bare, Single, Double, Bare]
        );
        assert_eq!(places("\"$(printf %s {P})\""), [Bare]);
        assert_eq!(places("\"$(printf %s \"{P}\")\""), [Double]);
        assert_eq!(places("\"`printf %s {P}`\""), [Bare]);
        assert_eq!(places("x # don't\nprintf {P}"), [Bare]);
        assert_eq!(places("# it's {P}\nprintf {P}"), [Comment, Bare]);
        assert_eq!(
            places("cat <<EOF\nit's {P}\nEOF\nprintf {P}"),
            [Heredoc, Bare]
        );
        assert_eq!(places("cat <<'EOF'\n{P}\nEOF\n{P}"), [QuotedHeredoc, Bare]);
        assert_eq!(places("cat <<-EOF\n\t{P}\n\tEOF\n'{P}'"), [Heredoc, Single]);
        assert_eq!(places("a#b {P}"), [Bare]);
        assert_eq!(places("sh -c 'x {P}' ; y {P}"), [Single, Bare]);
    }

    #[test]
    fn single_quotes_and_quoted_heredocs_are_refused() {
        let var = |n: &str| format!("EVALHOST_{n}");
        assert!(check("printf %s {P}", "{", "}", |n| n == "P", var, |_| false).is_ok());
        let e = check(
            "sh -c 'claude -p {P}'",
            "{",
            "}",
            |n| n == "P",
            var,
            |_| false,
        )
        .unwrap_err();
        assert!(e.contains("\"$EVALHOST_P\""), "{e}");
        assert!(check("cat <<'E'\n{P}\nE", "{", "}", |n| n == "P", var, |_| false).is_err());
    }
}
