//! The `cli` target: AgentV's contract for running any command — an agent
//! CLI such as Claude Code or Codex, a script, a model wrapper.
//!
//! `command` is a shell command line with placeholders, each replaced by a
//! reference to an environment variable (or, for `{FILES}`, to the
//! positional parameters) that holds its value, so no value is ever shell
//! code:
//! `{PROMPT}` (the prompt text), `{PROMPT_FILE}` (a file holding it),
//! `{OUTPUT_FILE}` (where the command writes its answer), `{EVAL_ID}` (the
//! test id), `{ATTEMPT}` (the retry attempt, from 0) and `{FILES}` (the input
//! files, formatted by `files_format`, space-separated; empty when none). The
//! command runs with `sh -c` in the case workspace when there is one, else
//! in `cwd` (relative to the targets file), else in the eval file's
//! directory, with the environment inherited.
//!
//! The output file is read as AgentV does: a JSON object with `output` (or
//! `output_messages`): messages with `tool_calls`, or `text`; plus
//! `token_usage`, `cost_usd` and `duration_ms`. Anything else is the answer
//! as it is.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value};

use super::{Invocation, Target, TargetFailure, TargetOutput, prompt};
use crate::process;
use crate::suite::TestCase;

/// The placeholders `command` may use.
pub const PLACEHOLDERS: &[&str] = &[
    "PROMPT",
    "PROMPT_FILE",
    "OUTPUT_FILE",
    "EVAL_ID",
    "ATTEMPT",
    "FILES",
    "CONTEXT",
];

/// A health check run once before the target's first call.
#[derive(Debug, Clone, PartialEq)]
pub enum Healthcheck {
    /// An HTTP GET that must answer 2xx.
    Url {
        /// The URL.
        url: String,
        /// Its timeout.
        timeout: Duration,
    },
    /// A command that must exit 0.
    Command {
        /// The shell command line.
        command: String,
        /// Its working directory.
        cwd: Option<PathBuf>,
        /// Its timeout.
        timeout: Duration,
    },
}

/// A `cli` target's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CliConfig {
    /// The command line template.
    pub command: String,
    /// Working directory when the case has no workspace.
    pub cwd: Option<PathBuf>,
    /// Deadline of one call (`timeout_seconds`).
    pub timeout: Option<Duration>,
    /// How each input file is written into `{FILES}`: `{path}`, `{basename}`.
    pub files_format: String,
    /// Keep the prompt and output files (`keep_temp_files`).
    pub keep_temp_files: bool,
    /// The health check.
    pub healthcheck: Option<Healthcheck>,
    /// How the output file is read (`trace_format`).
    pub trace_format: crate::trace::TraceFormat,
}

fn placeholders(command: &str) -> Vec<String> {
    let mut found = Vec::new();
    let bytes = command.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{'
            && let Some(len) = command[i + 1..].find('}')
        {
            let name = &command[i + 1..i + 1 + len];
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                found.push(name.to_owned());
            }
            i += len + 1;
        }
        i += 1;
    }
    found
}

impl CliConfig {
    /// Reads a `cli` entry.
    pub fn parse(entry: &Map<String, Value>, base_dir: &Path) -> Result<Self, (String, String)> {
        let command = match entry.get("command") {
            Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
            _ => {
                return Err((
                    "command".into(),
                    "a `cli` target needs a `command` (a shell command line)".into(),
                ));
            }
        };
        evalhost_suite::shell_template::check(
            &command,
            "{",
            "}",
            |n| PLACEHOLDERS.contains(&n),
            |n| env_var(n).to_owned(),
            |n| SPLICEABLE.contains(&n),
        )
        .map_err(|e| ("command".to_owned(), e))?;
        let unknown: Vec<String> = placeholders(&command)
            .into_iter()
            .filter(|p| !PLACEHOLDERS.contains(&p.as_str()))
            .collect();
        if !unknown.is_empty() {
            return Err((
                "command".into(),
                format!(
                    "unknown placeholder(s) {} in `command`; supported: {}",
                    unknown
                        .iter()
                        .map(|u| format!("{{{u}}}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    PLACEHOLDERS
                        .iter()
                        .map(|p| format!("{{{p}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        let secs = |v: Option<&Value>, key: &str| -> Result<Option<Duration>, (String, String)> {
            match v {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) if n.as_f64().is_some() => {
                    super::seconds_field(key, n.as_f64().unwrap_or_default()).map(Some)
                }
                Some(_) => Err((
                    key.into(),
                    format!("`{key}` must be a positive number of seconds"),
                )),
            }
        };
        let healthcheck = match entry.get("healthcheck") {
            None | Some(Value::Null) => None,
            Some(Value::Object(h)) => {
                let timeout = secs(h.get("timeout_seconds"), "healthcheck")?
                    .unwrap_or(Duration::from_secs(30));
                match (h.get("url"), h.get("command")) {
                    (Some(Value::String(url)), _) => Some(Healthcheck::Url {
                        url: url.clone(),
                        timeout,
                    }),
                    (_, Some(Value::String(command))) => Some(Healthcheck::Command {
                        command: command.clone(),
                        cwd: h
                            .get("cwd")
                            .and_then(Value::as_str)
                            .map(|c| base_dir.join(c)),
                        timeout,
                    }),
                    _ => {
                        return Err((
                            "healthcheck".into(),
                            "`healthcheck` needs a `url` or a `command`".into(),
                        ));
                    }
                }
            }
            Some(_) => {
                return Err((
                    "healthcheck".into(),
                    "`healthcheck` must be a mapping".into(),
                ));
            }
        };
        let trace_format = match entry.get("trace_format") {
            None | Some(Value::Null) => crate::trace::TraceFormat::Auto,
            Some(Value::String(f)) => f.parse().map_err(|e| ("trace_format".to_owned(), e))?,
            Some(_) => {
                return Err((
                    "trace_format".into(),
                    format!(
                        "`trace_format` must be one of {}",
                        crate::trace::TraceFormat::NAMES.join(", ")
                    ),
                ));
            }
        };
        Ok(Self {
            trace_format,
            command,
            cwd: entry
                .get("cwd")
                .and_then(Value::as_str)
                .map(|c| base_dir.join(c)),
            timeout: secs(entry.get("timeout_seconds"), "timeout_seconds")?,
            files_format: entry
                .get("files_format")
                .or(entry.get("attachments_format"))
                .and_then(Value::as_str)
                .unwrap_or("{path}")
                .to_owned(),
            keep_temp_files: matches!(
                entry
                    .get("keep_temp_files")
                    .or(entry.get("keep_output_files")),
                Some(Value::Bool(true))
            ),
            healthcheck,
        })
    }
}

/// The private directory a call's prompt and output files live in: created
/// new with an unpredictable name and mode 0700, so no other user can plant
/// a file or a link where the command will write or evalhost will read.
fn temp_dir(test_id: &str) -> std::io::Result<tempfile::TempDir> {
    let safe: String = test_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    use std::os::unix::fs::PermissionsExt as _;
    tempfile::Builder::new()
        .prefix(&format!("evalhost-{safe}-"))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// Runs the health check of `target` once per process.
fn healthcheck(
    target: &Target,
    check: &Healthcheck,
    sandbox: Option<&crate::isolate::CaseSandbox>,
) -> Result<(), TargetFailure> {
    static DONE: OnceLock<Mutex<HashMap<String, Result<(), String>>>> = OnceLock::new();
    let done = DONE.get_or_init(Default::default);
    let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
    let result = done
        .entry(format!("{}\u{0}{check:?}", target.name))
        .or_insert_with(|| match check {
            Healthcheck::Url { url, timeout } => {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .timeout_global(Some(*timeout))
                    .http_status_as_error(false)
                    .build()
                    .into();
                match agent.get(url).call() {
                    Ok(r) if r.status().is_success() => Ok(()),
                    Ok(r) => Err(format!("healthcheck {url} answered {}", r.status())),
                    Err(e) => Err(format!("healthcheck {url} failed: {e}")),
                }
            }
            Healthcheck::Command {
                command,
                cwd,
                timeout,
            } => {
                let confined = match sandbox.map(|s| s.healthcheck(cwd.as_deref())).transpose() {
                    Ok(c) => c,
                    Err(refused) => return Err(refused.to_string()),
                };
                match process::run(&process::Spec {
                    shell: Some(command),
                    cwd: cwd.as_deref(),
                    timeout: Some(*timeout),
                    sandbox: confined.as_ref(),
                    ..process::Spec::default()
                }) {
                    Ok(o) if o.success() => Ok(()),
                    Ok(o) => Err(format!("healthcheck `{command}` failed: {}", o.message())),
                    Err(e) => Err(format!("healthcheck `{command}` could not start: {e}")),
                }
            }
        });
    result.clone().map_err(TargetFailure::fatal)
}

/// Runs the command for one test.
pub fn invoke(
    config: &CliConfig,
    target: &Target,
    test: &TestCase,
    inv: &Invocation<'_>,
) -> Result<TargetOutput, TargetFailure> {
    if let Some(check) = &config.healthcheck {
        healthcheck(target, check, inv.sandbox)?;
    }
    let prompt_text = prompt::agent_prompt(&test.input);
    let dir = temp_dir(&test.id)
        .map_err(|e| TargetFailure::fatal(format!("cannot create a temporary directory: {e}")))?;
    let prompt_file = dir.path().join("prompt.txt");
    let output_file = dir.path().join("output.json");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&prompt_file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, prompt_text.as_bytes()))
        .map_err(|e| {
            TargetFailure::fatal(format!(
                "cannot write the prompt file {}: {e}",
                prompt_file.display()
            ))
        })?;
    // Each file formatted by `files_format` in one pass (`{path}`,
    // `{basename}`), raw; quoted below for where `{FILES}` stands.
    let files: Vec<String> = prompt::input_files(&test.input)
        .iter()
        .map(|p| {
            let basename = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            process::fill_placeholders(&config.files_format, "{", "}", |name| match name {
                "path" => Some(p.display().to_string()),
                "basename" => Some(basename.clone()),
                _ => None,
            })
        })
        .collect();
    // The values go in the command's environment (and the files in its
    // positional parameters); the command line only refers to them. Only
    // the values the command uses are set (a long prompt given by file
    // must not fill the environment).
    let line = render_command(&config.command);
    // A path spliced into `'…'` must be one plain word (a temporary
    // directory under a TMPDIR with spaces is not).
    for (name, value) in [
        ("PROMPT_FILE", prompt_file.display().to_string()),
        ("OUTPUT_FILE", output_file.display().to_string()),
    ] {
        if !splice_safe(&value) && spliced_in_quotes(&config.command, name) {
            return Err(TargetFailure::fatal(format!(
                "{{{name}}} stands inside '…' in the command, and its value {value} is not one plain word (set TMPDIR to a path without spaces or special characters, or write the placeholder outside the quotes)"
            )));
        }
    }
    let used = placeholders(&config.command);
    let env: Vec<(String, String)> = [
        ("PROMPT", prompt_text.clone()),
        ("PROMPT_FILE", prompt_file.display().to_string()),
        ("OUTPUT_FILE", output_file.display().to_string()),
        ("EVAL_ID", test.id.clone()),
        ("ATTEMPT", inv.attempt.to_string()),
        ("CONTEXT", context_json(test)),
    ]
    .into_iter()
    // Used: through its placeholder, or by name (`"$EVALHOST_PROMPT"` in a
    // nested shell, as the error for a quoted placeholder advises).
    .filter(|(name, _)| used.iter().any(|u| u == name) || config.command.contains(env_var(name)))
    .map(|(name, value)| (env_var(name).to_owned(), value))
    .collect();
    let files = if used.iter().any(|u| u == "FILES") {
        files
    } else {
        Vec::new()
    };
    let cwd: Option<PathBuf> = inv
        .workspace
        .map(Path::to_path_buf)
        .or_else(|| config.cwd.clone())
        .or_else(|| inv.eval_dir.map(Path::to_path_buf));
    let timeout = inv.time_left(config.timeout);
    let case_bound = inv.deadline.is_some() && timeout != config.timeout;
    let dir = std::cell::RefCell::new(Some(dir));
    let cleanup = |keep: bool| {
        if let Some(dir) = dir.borrow_mut().take() {
            if keep {
                let _ = dir.keep();
            } else {
                let _ = dir.close();
            }
        }
    };
    // Under --isolate: the call's temporary files (prompt, output) and the
    // case's workspace are what the command may write; it starts only
    // inside them or the project.
    let scratch: Vec<PathBuf> = dir
        .borrow()
        .as_ref()
        .map(|d| d.path().to_path_buf())
        .into_iter()
        .collect();
    // The operator's variables the target's `isolate.env` names (already
    // inherited when not isolated).
    let mut env = env;
    env.extend(target.isolate.env_values());
    let confined = match inv
        .sandbox
        .map(|s| {
            s.target(
                cwd.as_deref(),
                &scratch,
                &target.isolate.read,
                target.isolate.network.clone().unwrap_or_default(),
            )
        })
        .transpose()
    {
        Ok(c) => c,
        Err(refused) => {
            cleanup(config.keep_temp_files);
            return Err(TargetFailure::fatal(refused.to_string()));
        }
    };
    let outcome = process::run(&process::Spec {
        shell: Some(&line),
        cwd: cwd.as_deref(),
        timeout,
        env: &env,
        shell_args: &files,
        env_remove: &[],
        sandbox: confined.as_ref(),
        ..process::Spec::default()
    });
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            cleanup(config.keep_temp_files);
            return Err(TargetFailure::new(format!(
                "the command could not start: {e}"
            )));
        }
    };
    if outcome.timed_out {
        cleanup(config.keep_temp_files);
        let secs = timeout.unwrap_or_default().as_secs_f64();
        return Err(if case_bound {
            TargetFailure::timeout(format!(
                "the case ran past its timeout_ms while the CLI ran ({secs:.1}s)"
            ))
        } else {
            TargetFailure::new(format!("CLI provider timed out after {secs:.1}s"))
        });
    }
    if outcome.code != Some(0) {
        cleanup(config.keep_temp_files);
        let message = outcome.message();
        return Err(TargetFailure::new(
            match (message.is_empty(), outcome.code) {
                (false, Some(code)) => format!("{message} (exit code {code})"),
                (true, Some(code)) => format!("CLI exited with code {code}"),
                (_, None) => format!("CLI was killed by a signal {message}")
                    .trim()
                    .to_owned(),
            },
        ));
    }
    let text = match read_output_file(&output_file) {
        Ok(t) => t,
        Err(e) => {
            cleanup(config.keep_temp_files);
            return Err(TargetFailure::new(format!(
                "Failed to read output file '{}': {e} (the command must write its answer to {{OUTPUT_FILE}})",
                output_file.display()
            )));
        }
    };
    cleanup(config.keep_temp_files);
    let mut output = crate::trace::normalize(&text, config.trace_format)
        .map_err(|e| TargetFailure::fatal(e.message))?;
    if output.duration_ms.is_none() {
        output.duration_ms = Some(outcome.duration.as_millis() as u64);
    }
    Ok(output)
}

/// `{CONTEXT}`: the test as promptfoo's providers see it (`vars`, the
/// `prompt` and the `test`), JSON.
fn context_json(test: &TestCase) -> String {
    let vars = test
        .metadata
        .get("vars")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let mut context = Map::new();
    context.insert("vars".into(), vars.clone());
    if let Some(p) = &test.prompt {
        context.insert(
            "prompt".into(),
            serde_json::json!({"raw": p.raw, "label": p.label}),
        );
    }
    let mut t = Map::new();
    t.insert("vars".into(), vars);
    if let Some(d) = test.metadata.get("description") {
        t.insert("description".into(), d.clone());
    }
    context.insert("test".into(), Value::Object(t));
    Value::Object(context).to_string()
}

/// True when `{name}` stands inside `'…'` in `template`.
fn spliced_in_quotes(template: &str, name: &str) -> bool {
    use evalhost_suite::shell_template::{Piece, Place, scan};
    scan(template, "{", "}", |n| PLACEHOLDERS.contains(&n))
        .into_iter()
        .any(|p| matches!(p, Piece::Placeholder { name: n, place: Place::Single } if n == name))
}

/// Reads the answer the command wrote, not through a link, and at most
/// [`MAX_OUTPUT_FILE`] bytes.
fn read_output_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_OUTPUT_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_OUTPUT_FILE {
        return Err(std::io::Error::other(format!(
            "larger than {} MiB",
            MAX_OUTPUT_FILE >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not valid UTF-8"))
}

/// Placeholders whose values evalhost makes itself, of plain path
/// characters only ([`splice_safe`]): the temporary files' paths and the
/// attempt number. Inside `'…'` they are spliced in, as AgentV does.
pub const SPLICEABLE: &[&str] = &["OUTPUT_FILE", "PROMPT_FILE", "ATTEMPT"];

/// True when `value` can stand in shell code as one plain word.
pub fn splice_safe(value: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-+,:@%".contains(c))
}

/// The largest output file read.
pub const MAX_OUTPUT_FILE: u64 = 64 << 20;

/// The command line with each placeholder replaced by a reference to where
/// its value is at run time ([`process::fill_shell_template`]): `{PROMPT}`
/// → `$EVALHOST_PROMPT`, `{PROMPT_FILE}`, `{OUTPUT_FILE}`, `{EVAL_ID}`,
/// `{ATTEMPT}` likewise, `{FILES}` → the positional parameters. No value is
/// ever part of the shell code.
pub fn render_command(template: &str) -> String {
    process::fill_shell_template(template, "{", "}", |name| match name {
        "FILES" => Some(process::ShellRef::Args),
        n if SPLICEABLE.contains(&n) => Some(process::ShellRef::Spliced(env_var(n))),
        n if PLACEHOLDERS.contains(&n) => Some(process::ShellRef::Var(env_var(n))),
        _ => None,
    })
}

/// The environment variable that holds a placeholder's value (`{FILES}`
/// is the positional parameters, `"$@"`).
pub fn env_var(placeholder: &str) -> &'static str {
    match placeholder {
        "PROMPT" => "EVALHOST_PROMPT",
        "PROMPT_FILE" => "EVALHOST_PROMPT_FILE",
        "OUTPUT_FILE" => "EVALHOST_OUTPUT_FILE",
        "EVAL_ID" => "EVALHOST_EVAL_ID",
        "ATTEMPT" => "EVALHOST_ATTEMPT",
        "CONTEXT" => "EVALHOST_CONTEXT",
        _ => "@",
    }
}

/// Parses an output file as AgentV does (reference §6.4); see
/// [`crate::trace`] for the other formats.
pub fn parse_output_file(text: &str) -> TargetOutput {
    crate::trace::normalize(text, crate::trace::TraceFormat::AgentV)
        .unwrap_or_else(|_| TargetOutput::text(text))
}

#[cfg(test)]
mod tests {
    #[test]
    fn trace_format_is_checked() {
        let entry = |f: &str| {
            serde_json::json!({"command": "x > {OUTPUT_FILE}", "trace_format": f})
                .as_object()
                .unwrap()
                .clone()
        };
        let ok = CliConfig::parse(&entry("claude-code"), Path::new(".")).unwrap();
        assert_eq!(ok.trace_format, crate::trace::TraceFormat::ClaudeCode);
        let (key, message) = CliConfig::parse(&entry("xml"), Path::new(".")).unwrap_err();
        assert_eq!(key, "trace_format");
        assert!(
            message.contains("auto, agentv, claude-code, codex, pi, copilot-log, text"),
            "{message}"
        );
    }

    use super::*;

    #[test]
    fn output_files_parse_as_agentv_does() {
        let o = parse_output_file(
            r#"{"text": "json text 42", "cost_usd": 0.01, "token_usage": {"input": 10, "output": 5}}"#,
        );
        assert_eq!((o.text.as_str(), o.cost_usd), ("json text 42", Some(0.01)));
        assert_eq!(o.token_usage.unwrap().output, 5);
        let o = parse_output_file(
            r#"{"output": [{"role": "assistant", "content": "reading", "tool_calls": [{"tool": "Read", "input": {"path": "a"}}]}, {"role": "assistant", "content": "done"}], "duration_ms": 1200}"#,
        );
        assert_eq!(
            (o.text.as_str(), o.messages.len(), o.duration_ms),
            ("done", 2, Some(1200))
        );
        assert_eq!(o.messages[0].tool_calls[0].tool, "Read");
        // Anything else is the answer as written.
        for raw in ["plain text\n", "[1, 2]", "{\"status\": \"ok\"}", "{broken"] {
            assert_eq!(parse_output_file(raw).text, raw);
        }
    }

    #[test]
    fn only_plain_paths_are_spliced_into_single_quotes() {
        assert!(splice_safe("/tmp/.tmpAb12_x/output.json"));
        for bad in ["/tmp/a b/x", "/tmp/$(id)/x", "/tmp/it's", "", "/tmp/a\nb"] {
            assert!(!splice_safe(bad), "{bad:?}");
        }
        assert!(spliced_in_quotes(
            "bash -c 'x > {OUTPUT_FILE}'",
            "OUTPUT_FILE"
        ));
        assert!(!spliced_in_quotes("x > {OUTPUT_FILE}", "OUTPUT_FILE"));
        assert_eq!(
            render_command("bash -c 'x > {OUTPUT_FILE}'"),
            "bash -c 'x > '\"${EVALHOST_OUTPUT_FILE}\"''"
        );
    }

    #[test]
    fn unknown_placeholders_are_config_errors() {
        let entry: Map<String, Value> =
            serde_json::from_str(r#"{"command": "agent {PROMPT} {OUTPUT} {lower}"}"#).unwrap();
        let (key, message) = CliConfig::parse(&entry, Path::new("/")).unwrap_err();
        assert_eq!(key, "command");
        assert!(
            message.contains("unknown placeholder(s) {OUTPUT}"),
            "{message}"
        );
    }
}
