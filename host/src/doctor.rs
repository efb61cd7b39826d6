//! `evalhost doctor`: before a run, whether the targets a suite would use
//! can run here — each agent CLI on `PATH` with the flags evalhost passes,
//! each model API's key set (its variable named, never its value) and its
//! endpoint answering, each command's program found, each recording
//! present — one line per check, a clear reason for each problem.

use std::io::Write;
use std::time::Duration;

use crate::target::{Provider, Target, Targets};

/// How long one check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The target checked.
    pub target: String,
    /// True when nothing is wrong.
    pub ok: bool,
    /// True when the check was made in full; false when part of it was not
    /// (an untrusted target's URL not contacted, its program not run, an
    /// HTTP API not asked): never counted as ready.
    pub checked: bool,
    /// What was found.
    pub message: String,
}

impl Finding {
    fn ok(target: &str, message: impl Into<String>) -> Self {
        Self {
            target: target.to_owned(),
            ok: true,
            checked: true,
            message: message.into(),
        }
    }

    /// Nothing found wrong, but not everything checked.
    fn unchecked(target: &str, message: impl Into<String>) -> Self {
        Self {
            target: target.to_owned(),
            ok: true,
            checked: false,
            message: message.into(),
        }
    }

    fn problem(target: &str, message: impl Into<String>) -> Self {
        Self {
            target: target.to_owned(),
            ok: false,
            checked: true,
            message: message.into(),
        }
    }
}

/// What `argv` prints (stdout and stderr), if it ran in time.
fn output_of(argv: &[String]) -> Option<String> {
    let outcome = crate::process::run(&crate::process::Spec {
        argv,
        timeout: Some(CHECK_TIMEOUT),
        ..crate::process::Spec::default()
    })
    .ok()?;
    if outcome.timed_out {
        return None;
    }
    Some(format!(
        "{}{}",
        String::from_utf8_lossy(&outcome.stdout),
        String::from_utf8_lossy(&outcome.stderr)
    ))
}

/// An agent CLI: on `PATH`, its version, and the flags evalhost passes in
/// its help (an older CLI without them cannot run as AgentV runs it). An
/// untrusted target's program is only looked up, never run.
fn agent(
    target: &Target,
    config: &crate::target::agent::AgentConfig,
    trusted: bool,
) -> Vec<Finding> {
    use crate::target::agent::AgentKind;
    let name = &target.name;
    let Some(path) = crate::process::which(&config.executable) else {
        return vec![Finding::problem(
            name,
            format!(
                "`{}` is not on PATH: install {} or give the target an `executable`",
                config.executable,
                match config.kind {
                    AgentKind::Claude | AgentKind::ClaudeSdk =>
                        "Claude Code (npm install -g @anthropic-ai/claude-code)",
                    AgentKind::Codex => "the Codex CLI (npm install -g @openai/codex)",
                    AgentKind::Pi | AgentKind::PiAgent => "the pi coding agent",
                    AgentKind::VsCode { .. } => "VS Code (its `code` command on PATH)",
                    AgentKind::Copilot | AgentKind::CopilotSdk =>
                        "GitHub Copilot CLI (npm install -g @github/copilot)",
                }
            ),
        )];
    };
    if !trusted {
        return vec![Finding::unchecked(
            name,
            format!(
                "{} at {}; not run, so its version and flags are not checked (the target came with the suite)",
                config.executable,
                path.display()
            ),
        )];
    }
    let version = output_of(&[path.display().to_string(), "--version".into()])
        .map(|v| v.lines().next().unwrap_or("").trim().to_owned())
        .filter(|v| !v.is_empty());
    let (help_args, flags): (Vec<String>, &[&str]) = match config.kind {
        AgentKind::Claude => (
            vec!["--help".into()],
            &[
                "--output-format",
                "--include-partial-messages",
                "--verbose",
                "--max-turns",
            ],
        ),
        AgentKind::ClaudeSdk => (
            vec!["--help".into()],
            &[
                "--output-format",
                "--input-format",
                "--permission-mode",
                "--max-turns",
            ],
        ),
        AgentKind::CopilotSdk => (
            vec!["--help".into()],
            &["--headless", "--stdio", "--log-level"],
        ),
        AgentKind::Codex => (
            vec!["exec".into(), "--help".into()],
            &["--cd", "--skip-git-repo-check", "--config"],
        ),
        AgentKind::VsCode { .. } => (vec!["--help".into()], &["chat"]),
        AgentKind::Pi | AgentKind::PiAgent => (
            vec!["--help".into()],
            &["--mode", "--print", "--no-session"],
        ),
        AgentKind::Copilot => (
            vec!["--help".into()],
            &["--acp", "--allow-all-tools", "--yolo"],
        ),
    };
    let mut argv = vec![path.display().to_string()];
    argv.extend(help_args);
    let help = output_of(&argv).unwrap_or_default();
    let missing: Vec<&str> = flags
        .iter()
        .copied()
        .filter(|f| !help.contains(f))
        .collect();
    let shown = version.unwrap_or_else(|| "no version printed".into());
    if missing.is_empty() {
        vec![Finding::ok(
            name,
            format!("{} ({shown}) at {}", config.executable, path.display()),
        )]
    } else {
        vec![Finding::problem(
            name,
            format!(
                "{} ({shown}) at {} does not list {} in its help: it is likely too old for the command line evalhost runs (AgentV 4.42.4's)",
                config.executable,
                path.display(),
                missing.join(", ")
            ),
        )]
    }
}

/// A model API: its key, and a health request to its model list (only
/// for a trusted target: an untrusted one's URL is not contacted, so no
/// key goes where a stranger's file points).
fn model_api(
    name: &str,
    url: String,
    headers: Vec<(&str, String)>,
    key: bool,
    trusted: bool,
) -> Finding {
    if !key {
        return Finding::problem(
            name,
            "no API key: give the target `api_key: ${{ VAR }}` and set that variable",
        );
    }
    if !trusted {
        return Finding::unchecked(
            name,
            format!(
                "a key is set; {url} not contacted, so whether it answers is not checked (the target came with the suite)"
            ),
        );
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(CHECK_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.get(&url);
    for (k, v) in &headers {
        request = request.header(*k, v);
    }
    match request.call() {
        Ok(r) if r.status().is_success() => Finding::ok(name, format!("{url} answered")),
        Ok(r) if matches!(r.status().as_u16(), 401 | 403) => Finding::problem(
            name,
            format!("{url} refused the key (HTTP {})", r.status().as_u16()),
        ),
        Ok(r) => Finding::problem(name, format!("{url} answered HTTP {}", r.status().as_u16())),
        Err(e) => Finding::problem(name, format!("{url} did not answer: {e}")),
    }
}

/// The checks for one target; `trusted`: its programs may run and its
/// URLs be contacted with its key.
pub fn check(target: &Target, trusted: bool) -> Vec<Finding> {
    let name = target.name.as_str();
    match &target.provider {
        Provider::Unavailable(message) => vec![Finding::problem(name, message.clone())],
        Provider::Unsupported(p) => vec![Finding::problem(
            name,
            format!("provider `{p}` is not run by this version of evalhost (docs/targets.md)"),
        )],
        Provider::Agent(config) => agent(target, config, trusted),
        Provider::Cli(config) => {
            let program = config.command.split_whitespace().next().unwrap_or("");
            match crate::process::which(program) {
                Some(path) => vec![Finding::ok(
                    name,
                    format!("`{program}` at {}", path.display()),
                )],
                None if program.contains(['{', '$', '=']) => vec![Finding::ok(
                    name,
                    "the command starts with a placeholder or variable: not checked",
                )],
                None => vec![Finding::problem(
                    name,
                    format!("`{program}` (the command's program) is not on PATH"),
                )],
            }
        }
        Provider::OpenAi(c) => vec![model_api(
            name,
            format!("{}/models", c.base_url),
            c.api_key
                .iter()
                .map(|k| ("Authorization", format!("Bearer {k}")))
                .collect(),
            c.api_key.is_some() || !c.base_url.contains("api.openai.com"),
            trusted,
        )],
        Provider::Responses(c) => vec![model_api(
            name,
            match &c.api_version {
                Some(v) => format!("{}/models?api-version={v}", c.base_url),
                None => format!("{}/models", c.base_url),
            },
            c.api_key
                .iter()
                .map(|k| {
                    if c.azure {
                        ("api-key", k.clone())
                    } else {
                        ("Authorization", format!("Bearer {k}"))
                    }
                })
                .collect(),
            c.api_key.is_some(),
            trusted,
        )],
        Provider::Anthropic(c) => vec![model_api(
            name,
            format!("{}/v1/models", c.base_url),
            c.api_key
                .iter()
                .map(|k| ("x-api-key", k.clone()))
                .chain([("anthropic-version", "2023-06-01".to_owned())])
                .collect(),
            c.api_key.is_some(),
            trusted,
        )],
        Provider::Gemini(c) => vec![model_api(
            name,
            format!("{}/models", c.base_url),
            c.api_key
                .iter()
                .map(|k| ("x-goog-api-key", k.clone()))
                .collect(),
            c.api_key.is_some(),
            trusted,
        )],
        Provider::Replay(_)
        | Provider::Mock { .. }
        | Provider::Echo
        | Provider::Recorded(_)
        | Provider::CopilotLog(_) => {
            vec![Finding::ok(name, "offline: nothing to check")]
        }
        Provider::Http(_) => vec![Finding::unchecked(
            name,
            "an HTTP API: not contacted, so whether it answers is not checked (it may not answer GET)",
        )],
    }
}

/// What [`run`] found: problems, and checks not made in full.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Checks that found something wrong.
    pub problems: usize,
    /// Checks not made in full (nothing found wrong, nothing proven).
    pub unchecked: usize,
}

/// Checks `names` and the judges and fallbacks they name, each once, and
/// prints a line per check (`ok`, `✗`, or `?` for a check not made in
/// full); returns what it found.
pub fn run(
    targets: &Targets,
    names: &[String],
    trusted: &dyn Fn(&str) -> bool,
    out: &mut dyn Write,
) -> std::io::Result<Tally> {
    let mut unchecked = 0;
    let mut todo: Vec<String> = names.to_vec();
    let mut seen: Vec<String> = Vec::new();
    let mut problems = 0;
    while let Some(name) = todo.first().cloned() {
        todo.remove(0);
        if seen.contains(&name) {
            continue;
        }
        seen.push(name.clone());
        let target = match targets.select(&name) {
            Ok(t) => t.clone(),
            Err(e) => {
                problems += 1;
                writeln!(out, "  ✗ {name}: {e}")?;
                continue;
            }
        };
        for f in check(&target, trusted(&name)) {
            if f.ok && !f.checked {
                unchecked += 1;
                writeln!(out, "  ? {} ({}): {}", f.target, kind(&target), f.message)?;
            } else if f.ok {
                writeln!(out, "  ok {} ({}): {}", f.target, kind(&target), f.message)?;
            } else {
                problems += 1;
                writeln!(out, "  ✗ {} ({}): {}", f.target, kind(&target), f.message)?;
            }
        }
        todo.extend(target.grader_target.iter().cloned());
        todo.extend(target.fallback_targets.iter().cloned());
    }
    Ok(Tally {
        problems,
        unchecked,
    })
}

/// The kind of `target`, as the targets file names it.
pub(crate) fn kind(target: &Target) -> &'static str {
    match &target.provider {
        Provider::Mock { .. } => "mock",
        Provider::Echo => "echo",
        Provider::Cli(_) => "cli",
        Provider::OpenAi(_) => "openai",
        Provider::Anthropic(_) => "anthropic",
        Provider::Gemini(_) => "gemini",
        Provider::Responses(c) if c.azure => "azure",
        Provider::Responses(_) => "openai responses",
        Provider::Agent(c) => match c.kind {
            crate::target::agent::AgentKind::Claude => "claude",
            crate::target::agent::AgentKind::Codex => "codex",
            crate::target::agent::AgentKind::Pi => "pi-cli",
            crate::target::agent::AgentKind::PiAgent => "pi-coding-agent",
            crate::target::agent::AgentKind::VsCode { insiders: false } => "vscode",
            crate::target::agent::AgentKind::VsCode { insiders: true } => "vscode-insiders",
            crate::target::agent::AgentKind::Copilot => "copilot",
            crate::target::agent::AgentKind::ClaudeSdk => "claude-sdk",
            crate::target::agent::AgentKind::CopilotSdk => "copilot-sdk",
        },
        Provider::Http(_) => "http",
        Provider::Replay(_) => "replay",
        Provider::CopilotLog(_) => "copilot-log",
        Provider::Recorded(_) => "recorded",
        Provider::Unsupported(_) => "unsupported",
        Provider::Unavailable(_) => "unavailable",
    }
}
