//! Running a host command with a deadline: the `cli` target, hooks and the
//! code-grader bridge all go through here. The command gets its own process
//! group, so a timeout kills everything it started; stdout and stderr are
//! captured up to a cap; stdin is written from a buffer.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How much of stdout and of stderr is kept.
pub const OUTPUT_CAP: usize = 10 << 20;

/// A command to run.
#[derive(Debug, Clone, Default)]
pub struct Spec<'a> {
    /// Program and arguments (no shell), unless `shell` is set.
    pub argv: &'a [String],
    /// A shell command line, run with `sh -c`.
    pub shell: Option<&'a str>,
    /// Working directory.
    pub cwd: Option<&'a Path>,
    /// Bytes for stdin (closed after).
    pub stdin: &'a [u8],
    /// Deadline.
    pub timeout: Option<Duration>,
    /// Extra environment variables.
    pub env: &'a [(String, String)],
}

/// What a command did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Exit code; `None` when killed by a signal.
    pub code: Option<i32>,
    /// Captured stdout.
    pub stdout: Vec<u8>,
    /// Captured stderr.
    pub stderr: Vec<u8>,
    /// Killed at its deadline.
    pub timed_out: bool,
    /// Output cut at [`OUTPUT_CAP`].
    pub truncated: bool,
    /// Wall time.
    pub duration: Duration,
}

impl Outcome {
    /// True when it exited 0 in time.
    pub fn success(&self) -> bool {
        self.code == Some(0) && !self.timed_out
    }

    /// stderr, else stdout, trimmed, for error messages.
    pub fn message(&self) -> String {
        let err = String::from_utf8_lossy(&self.stderr).trim().to_owned();
        if err.is_empty() {
            String::from_utf8_lossy(&self.stdout).trim().to_owned()
        } else {
            err
        }
    }
}

fn read_capped(mut reader: impl Read) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 64 << 10];
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                if room < n {
                    truncated = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    (kept, truncated)
}

/// Runs `spec`. `Err` only when the command could not be started.
pub fn run(spec: &Spec<'_>) -> std::io::Result<Outcome> {
    let mut command = match spec.shell {
        Some(line) => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(line);
            c
        }
        None => {
            let (program, args) = spec.argv.split_first().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command")
            })?;
            let mut c = Command::new(program);
            c.args(args);
            c
        }
    };
    if let Some(cwd) = spec.cwd {
        command.current_dir(cwd);
    }
    for (k, v) in spec.env {
        command.env(k, v);
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let started = Instant::now();
    let mut child = command.spawn()?;
    let pid = child.id() as i32;
    let stdin = spec.stdin.to_vec();
    let mut child_stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let (outcome, timed_out) = std::thread::scope(|scope| {
        scope.spawn(move || {
            if let Some(mut pipe) = child_stdin.take() {
                let _ = pipe.write_all(&stdin);
            }
        });
        let out = scope.spawn(move || stdout.map(read_capped).unwrap_or_default());
        let err = scope.spawn(move || stderr.map(read_capped).unwrap_or_default());
        let mut timed_out = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) => {}
                Err(_) => break None,
            }
            if spec.timeout.is_some_and(|t| started.elapsed() >= t) {
                timed_out = true;
                kill_group(pid);
                break child.wait().ok();
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        // The group may hold the pipes open after the leader exits.
        if timed_out {
            kill_group(pid);
        }
        let (stdout, t1) = out.join().unwrap_or_default();
        let (stderr, t2) = err.join().unwrap_or_default();
        (
            Outcome {
                code: status.and_then(|s| s.code()),
                stdout,
                stderr,
                timed_out,
                truncated: t1 || t2,
                duration: started.elapsed(),
            },
            timed_out,
        )
    });
    let _ = timed_out;
    Ok(outcome)
}

fn kill_group(pid: i32) {
    // SAFETY: sending a signal has no memory-safety preconditions; a negative
    // pid names the process group the child leads.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// Quotes `text` for a POSIX shell: `'...'`, with `'` written as `'"'"'`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\"'\"'"))
}

/// Where in a shell line a placeholder stands, which decides how its value
/// must be quoted to stay one literal piece of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellContext {
    /// Outside quotes: the value becomes one single-quoted word.
    Bare,
    /// Inside `'…'`: each `'` of the value closes, escapes and reopens.
    Single,
    /// Inside `"…"`: `\`, `"`, `$` and `` ` `` are backslash-escaped.
    Double,
}

/// `value` quoted for `context`: in every context the shell reads it back
/// as exactly `value`, with no expansion, substitution or word split.
pub fn shell_quote_in(value: &str, context: ShellContext) -> String {
    match context {
        ShellContext::Bare => shell_quote(value),
        ShellContext::Single => value.replace('\'', "'\\''"),
        ShellContext::Double => {
            let mut out = String::with_capacity(value.len() + 2);
            for c in value.chars() {
                if matches!(c, '\\' | '"' | '$' | '`') {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        }
    }
}

/// Fills the placeholders of a shell command line in one pass over the
/// template as written, quoting each raw value for the place it stands in:
/// bare, inside single quotes or inside double quotes (quote state is
/// tracked over the template's own text, never over a value). A value can
/// therefore never end a quote, start a command or expand anything,
/// whether the template writes `{PROMPT}`, `'{PROMPT}'` or `"{PROMPT}"`.
pub fn fill_shell_template(
    template: &str,
    open: &str,
    close: &str,
    mut raw: impl FnMut(&str) -> Option<String>,
) -> String {
    fill_shell_template_with(template, open, close, |name, context| {
        raw(name).map(|v| shell_quote_in(&v, context))
    })
}

/// [`fill_shell_template`] where `quoted(name, context)` quotes the value
/// itself (a list of files is several words when bare, one text in quotes).
pub fn fill_shell_template_with(
    template: &str,
    open: &str,
    close: &str,
    mut quoted: impl FnMut(&str, ShellContext) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(template.len());
    let mut context = ShellContext::Bare;
    let mut escaped = false;
    let mut i = 0;
    while i < template.len() {
        let rest = &template[i..];
        if !escaped
            && rest.starts_with(open)
            && let Some(end) = rest[open.len()..].find(close)
            && let Some(value) = quoted(&rest[open.len()..open.len() + end], context)
        {
            out.push_str(&value);
            i += open.len() + end + close.len();
            continue;
        }
        let c = rest.chars().next().unwrap_or_default();
        out.push(c);
        i += c.len_utf8();
        if escaped {
            escaped = false;
            continue;
        }
        match (c, context) {
            ('\\', ShellContext::Bare | ShellContext::Double) => escaped = true,
            ('\'', ShellContext::Bare) => context = ShellContext::Single,
            ('\'', ShellContext::Single) => context = ShellContext::Bare,
            ('"', ShellContext::Bare) => context = ShellContext::Double,
            ('"', ShellContext::Double) => context = ShellContext::Bare,
            _ => {}
        }
    }
    out
}

/// Fills the placeholders of `template` in one pass: each `{open}NAME{close}`
/// for which `value(NAME)` answers is replaced by that answer, everything
/// else is copied as written. Substituted text is never scanned again, so a
/// value that itself holds a placeholder (a prompt quoting `{EVAL_ID}`)
/// stays literal text inside its own quotes.
pub fn fill_placeholders(
    template: &str,
    open: &str,
    close: &str,
    mut value: impl FnMut(&str) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find(open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(close) else {
            break;
        };
        match value(&after[..end]) {
            Some(v) => {
                out.push_str(&rest[..start]);
                out.push_str(&v);
                rest = &after[end + close.len()..];
            }
            None => {
                // Not a placeholder: keep the opening text, look further on.
                out.push_str(&rest[..start + open.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_templates_quote_each_value_for_where_it_stands() {
        let hostile = "a'b\"c$(touch X)`id`\\d $HOME {B}\n";
        let values = |name: &str| match name {
            "A" => Some(hostile.to_owned()),
            "B" => Some("never".to_owned()),
            _ => None,
        };
        for template in [
            "printf '%s' {A}",
            "printf '%s' '{A}'",
            "printf '%s' \"{A}\"",
            "printf '%s' \"x={A}=y\"",
            "printf '%s' 'x={A}=y'",
            "printf '%s' x={A}",
        ] {
            let line = fill_shell_template(template, "{", "}", values);
            let out = run(&Spec {
                shell: Some(&line),
                ..Spec::default()
            })
            .unwrap();
            let printed = String::from_utf8(out.stdout).unwrap();
            assert_eq!(
                printed.trim_start_matches("x=").trim_end_matches("=y"),
                hostile,
                "{template} became {line}"
            );
        }
        // An escaped quote does not open a quoted context.
        assert_eq!(
            fill_shell_template("echo \\'{A}", "{", "}", |_| Some("v".into())),
            "echo \\''v'"
        );
    }

    #[test]
    fn placeholders_fill_in_one_pass() {
        let values = |name: &str| match name {
            "A" => Some(shell_quote("has {B} inside")),
            "B" => Some(shell_quote("x;id")),
            _ => None,
        };
        assert_eq!(
            fill_placeholders("run {A} {B} {C} {", "{", "}", values),
            "run 'has {B} inside' 'x;id' {C} {"
        );
        assert_eq!(
            fill_placeholders("{{{A}}} {{x}}", "{{", "}}", |n| (n == "x")
                .then(|| "1".into())),
            "{{{A}}} 1"
        );
    }

    #[test]
    fn captures_exit_code_output_and_stdin() {
        let out = run(&Spec {
            shell: Some("cat; echo err >&2; exit 3"),
            stdin: b"hello",
            ..Spec::default()
        })
        .unwrap();
        assert_eq!(
            (out.code, out.stdout.as_slice(), out.stderr.as_slice()),
            (Some(3), &b"hello"[..], &b"err\n"[..])
        );
        assert_eq!(out.message(), "err");
    }

    #[test]
    fn a_timeout_kills_the_whole_group() {
        let start = Instant::now();
        let out = run(&Spec {
            shell: Some("sleep 30 & sleep 30; echo never"),
            timeout: Some(Duration::from_millis(200)),
            ..Spec::default()
        })
        .unwrap();
        assert!(out.timed_out && !out.success());
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the background sleep was killed too"
        );
    }

    #[test]
    fn quoting_survives_the_shell() {
        let tricky = "it's \"$HOME\" `x` ; rm -rf /";
        let out = run(&Spec {
            shell: Some(&format!("printf %s {}", shell_quote(tricky))),
            ..Spec::default()
        })
        .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), tricky);
        assert_eq!(shell_quote(""), "''");
    }
}
