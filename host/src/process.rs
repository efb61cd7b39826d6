//! Running a host command with a deadline: the `cli` target, hooks and the
//! code-grader bridge all go through here. The command gets its own process
//! group, so a timeout kills everything it started; stdout and stderr are
//! captured up to a cap; stdin is written from a buffer.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use evalhost_suite::shell_template::{self, Piece, Place};

/// How much of stdout and of stderr is kept.
pub const OUTPUT_CAP: usize = 10 << 20;

/// How long a command's output may stay open after it exits (a background
/// child still holding it) before what is left of its process group is
/// stopped.
pub const EXIT_GRACE: Duration = Duration::from_secs(2);

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
    /// With `shell`: the positional parameters `$1`, `$2`, … of the shell
    /// line (`$0` is `evalhost`).
    pub shell_args: &'a [String],
    /// Variables of evalhost's own environment the command must not see
    /// (the keys the targets use, for grader commands).
    pub env_remove: &'a [String],
    /// None of evalhost's environment: only `env` (a toolchain installer
    /// that must not see the operator's keys).
    pub clear_env: bool,
    /// The sandbox it runs in (`--isolate`): made by one of the role
    /// constructors of [`crate::isolate::CaseSandbox`] from the case's
    /// sandbox; `None` runs it as the operator's own process (evalhost's
    /// own commands, or a run that is not isolated).
    pub sandbox: Option<&'a crate::isolate::Confined>,
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
    let (mut command, sandboxed) = command(spec)?;
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let outcome = spawn(command, spec);
    // Its proxy stopped, its group read, its record in the case's row.
    drop(sandboxed);
    outcome
}

/// Starts `spec` with its stdio piped, in its own process group (a
/// long-lived process the caller talks to: an agent's session). Under
/// `--isolate` the returned [`crate::isolate::Sandboxed`] holds its proxy
/// and group until dropped, after the process ends.
pub fn spawn_piped(
    spec: &Spec<'_>,
) -> std::io::Result<(std::process::Child, Option<crate::isolate::Sandboxed>)> {
    let (mut command, sandboxed) = command(spec)?;
    let child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    track_group(child.id() as i32);
    Ok((child, sandboxed))
}

/// Starts `argv` with no stdio and lets it go (a program that hands its
/// work to a window and returns: VS Code); it is reaped in the background.
pub fn detach(argv: &[String]) -> std::io::Result<()> {
    let program = argv
        .first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command"))?;
    let mut child = Command::new(program)
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

/// The command for `spec` — in its sandbox when it carries one, which
/// stays alive (its proxy, its control group) until the
/// [`crate::isolate::Sandboxed`] returned beside it is dropped.
fn command(spec: &Spec<'_>) -> std::io::Result<(Command, Option<crate::isolate::Sandboxed>)> {
    let Some(confined) = spec.sandbox else {
        return Ok((plain(spec)?, None));
    };
    let argv = argv_of(spec)?;
    let sandboxed = confined.sandbox(&argv, spec.cwd, spec.env)?;
    let mut command = Command::new(&sandboxed.argv[0]);
    command.args(&sandboxed.argv[1..]);
    // bwrap is the sandbox's PID 1: its environment is readable inside.
    command.env_clear();
    let fds = sandboxed.fds.clone();
    // SAFETY: the closure only calls `write(2)` on descriptors the group
    // keeps open until the process has started, and `fcntl(2)` or
    // `close_range(2)`: async-signal-safe system calls.
    unsafe {
        command.pre_exec(move || crate::isolate::enter_child(&fds));
    }
    Ok((command, Some(sandboxed)))
}

/// The command line of `spec`: the program and its arguments, or `sh -c`.
fn argv_of(spec: &Spec<'_>) -> std::io::Result<Vec<String>> {
    Ok(match spec.shell {
        Some(line) => {
            let mut argv = vec!["/bin/sh".to_owned(), "-c".to_owned(), line.to_owned()];
            if !spec.shell_args.is_empty() {
                argv.push("evalhost".to_owned());
                argv.extend(spec.shell_args.iter().cloned());
            }
            argv
        }
        None => {
            if spec.argv.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "empty command",
                ));
            }
            spec.argv.to_vec()
        }
    })
}

/// `spec` as the operator's own process.
fn plain(spec: &Spec<'_>) -> std::io::Result<Command> {
    let argv = argv_of(spec)?;
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]);
    if let Some(cwd) = spec.cwd {
        command.current_dir(cwd);
    }
    if spec.clear_env {
        command.env_clear();
    }
    for k in spec.env_remove {
        command.env_remove(k);
    }
    for (k, v) in spec.env {
        command.env(k, v);
    }
    Ok(command)
}

/// Starts `command` and waits for it as `spec` says.
fn spawn(mut command: Command, spec: &Spec<'_>) -> std::io::Result<Outcome> {
    let started = Instant::now();
    let mut child = command.spawn()?;
    let pid = child.id() as i32;
    track_group(pid);
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
        // The group may hold the pipes open after the leader exits (a
        // background child: `server &`): the readers get a moment to see
        // the end of the output, then what is left of the group is
        // stopped — as a sandbox's processes are when its leader ends — so
        // no command outlives its deadline or holds its caller for ever.
        if !timed_out {
            let grace = Instant::now() + EXIT_GRACE;
            while !(out.is_finished() && err.is_finished()) && Instant::now() < grace {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        // Only a group that still has members holding the output is
        // signalled: its id cannot have been given to another process.
        if timed_out || !(out.is_finished() && err.is_finished()) {
            kill_group(pid);
        } else {
            untrack_group(pid);
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

pub(crate) fn kill_group(pid: i32) {
    untrack_group(pid);
    // SAFETY: sending a signal has no memory-safety preconditions; a negative
    // pid names the process group the child leads.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// The process groups of the commands running now (each command, agent and
/// hook leads its own group, so a terminal's Ctrl-C does not reach them).
static LIVE_GROUPS: std::sync::Mutex<std::collections::BTreeSet<i32>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// Notes that the child `pid` leads a process group of its own that is
/// running now.
pub(crate) fn track_group(pid: i32) {
    LIVE_GROUPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(pid);
}

/// The group `pid` leads has ended (or is being killed).
fn untrack_group(pid: i32) {
    LIVE_GROUPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .remove(&pid);
}

/// Kills every process group still running (the second Ctrl-C): no agent
/// or command is left running, and billing, after evalhost exits.
pub fn kill_live_groups() {
    let groups = std::mem::take(
        &mut *LIVE_GROUPS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    for pid in groups {
        // SAFETY: as in `kill_group`.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

/// Quotes `text` for a POSIX shell: `'...'`, with `'` written as `'"'"'`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\"'\"'"))
}

/// What a placeholder stands for in a shell line: never its value, always a
/// reference the shell expands at run time, so a value is data whatever
/// the template around it is: the result of an expansion is never parsed
/// as shell code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellRef<'a> {
    /// An environment variable holding the value.
    Var(&'a str),
    /// An environment variable holding a value evalhost made of plain path
    /// characters: inside `'…'` it is spliced in (`'"$VAR"'`), as AgentV
    /// splices its quoted value, so a nested shell reads it as one word.
    Spliced(&'a str),
    /// The positional parameters: one word each when bare (`"$@"`), joined
    /// by spaces inside quotes (`$*`).
    Args,
}

/// The text that refers to `reference` where it stands
/// ([`evalhost_suite::shell_template::Place`]).
pub fn shell_ref(reference: ShellRef<'_>, place: Place) -> String {
    let expansion = match reference {
        ShellRef::Var(name) | ShellRef::Spliced(name) => format!("${{{name}}}"),
        ShellRef::Args => "$*".to_owned(),
    };
    match (reference, place) {
        (ShellRef::Args, Place::Bare) => "\"$@\"".to_owned(),
        (_, Place::Bare) => format!("\"{expansion}\""),
        (_, Place::Double | Place::Heredoc) => expansion,
        (ShellRef::Spliced(_), Place::Single) => format!("'\"{expansion}\"'"),
        // Refused when the template was read (`shell_template::check`); if
        // it gets here, the reference stays text this shell does not
        // expand, and a nested shell expands it as data.
        (_, Place::Single | Place::QuotedHeredoc | Place::Comment) => expansion,
    }
}

/// Fills the placeholders of a shell command line in one pass over the
/// template as written: each `{open}NAME{close}` for which `reference`
/// answers becomes a reference to the variable (or parameters) that will
/// hold its value ([`shell_ref`]); the caller passes the values in the
/// command's environment. Where a placeholder stands (quotes, `$(…)`,
/// comments, heredocs) only picks the most faithful form.
pub fn fill_shell_template<'r>(
    template: &str,
    open: &str,
    close: &str,
    reference: impl Fn(&str) -> Option<ShellRef<'r>>,
) -> String {
    let mut out = String::with_capacity(template.len());
    for piece in shell_template::scan(template, open, close, |n| reference(n).is_some()) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Placeholder {
                name,
                place: Place::Comment,
            } => {
                out.push_str(open);
                out.push_str(name);
                out.push_str(close);
            }
            Piece::Placeholder { name, place } => {
                if let Some(r) = reference(name) {
                    out.push_str(&shell_ref(r, place));
                }
            }
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

/// `program` found on `PATH` (or as a path), executable: the one lookup
/// `doctor`, the targets and the toolchains share.
pub fn which(program: &str) -> Option<PathBuf> {
    let p = Path::new(program);
    if p.components().count() > 1 {
        return p.is_file().then(|| p.to_path_buf());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|c| {
                use std::os::unix::fs::PermissionsExt as _;
                c.metadata()
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_templates_never_put_a_value_in_shell_code() {
        let hostile = "a'b\"c$(touch X)`id`\\d $HOME {B}\nEOF\ntouch Y\n#";
        let env = vec![("EVALHOST_A".to_owned(), hostile.to_owned())];
        let dir = tempfile::tempdir().unwrap();
        for (template, exact) in [
            ("printf '%s' {A}", true),
            ("printf '%s' '{A}'", false),
            ("printf '%s' \"{A}\"", true),
            ("printf '%s' \"x={A}=y\"", true),
            ("printf '%s' 'x={A}=y'", false),
            ("printf '%s' x={A}", true),
            ("printf '%s' \"$(printf %s \"{A}\")\"", true),
            ("printf '%s' \"$(printf %s {A})\"", true),
            ("printf '%s' \"`printf %s {A}`\"", false),
            ("# don't\nprintf '%s' {A}", false),
            ("printf '%s' \"$(cat <<EOF\n{A}\nEOF\n)\"", true),
            ("cat <<'EOF'\n{A}\nEOF", false),
            ("printf '%s' \\{A}", true),
        ] {
            let line = fill_shell_template(template, "{", "}", |name| {
                (name == "A").then_some(ShellRef::Var("EVALHOST_A"))
            });
            let out = run(&Spec {
                shell: Some(&line),
                cwd: Some(dir.path()),
                env: &env,
                ..Spec::default()
            })
            .unwrap();
            let printed = String::from_utf8(out.stdout).unwrap();
            if exact {
                assert_eq!(
                    printed.trim_start_matches("x=").trim_end_matches("=y"),
                    hostile,
                    "{template} became {line}"
                );
            }
            assert_eq!(
                std::fs::read_dir(dir.path()).unwrap().count(),
                0,
                "{template} ran the value: {line}"
            );
        }
        // Files as positional parameters: one word each when bare.
        let files = vec!["a b".to_owned(), "c;touch Z".to_owned()];
        let line = fill_shell_template("printf '[%s]' {F}", "{", "}", |n| {
            (n == "F").then_some(ShellRef::Args)
        });
        let out = run(&Spec {
            shell: Some(&line),
            cwd: Some(dir.path()),
            shell_args: &files,
            env_remove: &[],
            ..Spec::default()
        })
        .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "[a b][c;touch Z]");
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
