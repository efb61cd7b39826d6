//! AgentV's coding-agent targets, run as AgentV 4.42.4 runs them, their
//! streams read by the trace normalizer (`crate::trace`), so tool calls,
//! tokens, cost, duration and skill use reach the graders, and the
//! messages are kept with the row.
//!
//! - `claude` (`claude-code`, `claude-cli`): AgentV's `ClaudeCliProvider`:
//!   `claude -p --output-format stream-json --include-partial-messages
//!   --verbose [--dangerously-skip-permissions] [--model M] [--max-turns N]`,
//!   the prompt on stdin, `CLAUDECODE` and `CLAUDE_CODE_ENTRYPOINT` removed
//!   from the environment (so it runs inside another Claude Code session).
//! - `codex` (`codex-cli`): what AgentV's `CodexProvider` has the Codex SDK
//!   run: `codex exec --experimental-json [--config model="M"] [--cd DIR]
//!   --skip-git-repo-check [--config model_reasoning_effort="E"]`, the prompt
//!   (after `system_prompt`) on stdin, `CODEX_INTERNAL_ORIGINATOR_OVERRIDE`
//!   set as the SDK sets it.
//!
//! The prompt is AgentV's prompt document (`buildPromptDocument`): the
//! input files to read first, then `[[ ## user_query ## ]]` and the
//! question. The working directory is the case workspace, else `cwd`
//! (relative to the targets file), else evalhost's own, as in AgentV.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::file::{get_f64, get_str, get_u64};
use super::{Invocation, TargetFailure, TargetOutput, prompt};
use crate::process;
use crate::suite::TestCase;
use crate::trace::TraceFormat;

/// Which agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    /// Claude Code.
    Claude,
    /// OpenAI's Codex CLI.
    Codex,
    /// The pi coding agent's CLI.
    Pi,
    /// GitHub Copilot CLI, over the Agent Client Protocol.
    Copilot,
    /// Claude Code driven as the Claude Agent SDK drives it.
    ClaudeSdk,
    /// Copilot CLI driven as the Copilot SDK drives it.
    CopilotSdk,
    /// The pi coding agent as AgentV's SDK provider configures it, run
    /// through pi's CLI.
    PiAgent,
    /// A VS Code chat agent in a subagent workspace (`insiders`: VS Code
    /// Insiders).
    VsCode {
        /// `vscode-insiders`.
        insiders: bool,
    },
}

impl AgentKind {
    /// Its name in messages.
    pub fn label(self) -> &'static str {
        match self {
            AgentKind::Claude => "Claude CLI",
            AgentKind::Codex => "Codex CLI",
            AgentKind::Pi => "Pi CLI",
            AgentKind::Copilot => "Copilot CLI",
            AgentKind::ClaudeSdk => "Claude SDK",
            AgentKind::CopilotSdk => "Copilot SDK",
            AgentKind::PiAgent => "Pi coding agent",
            AgentKind::VsCode { .. } => "VS Code",
        }
    }

    /// The executable AgentV runs when the target names none.
    pub fn default_executable(self) -> &'static str {
        match self {
            AgentKind::Claude | AgentKind::ClaudeSdk => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Pi | AgentKind::PiAgent => "pi",
            AgentKind::VsCode { insiders: false } => "code",
            AgentKind::VsCode { insiders: true } => "code-insiders",
            AgentKind::Copilot | AgentKind::CopilotSdk => "copilot",
        }
    }
}

/// A coding-agent target.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// Which agent.
    pub kind: AgentKind,
    /// The program (`executable`, `command` or `binary`).
    pub executable: String,
    /// `--model`.
    pub model: Option<String>,
    /// The working directory when the case has no workspace.
    pub cwd: Option<PathBuf>,
    /// The longest a run may take.
    pub timeout: Option<Duration>,
    /// Claude's `--max-turns`.
    pub max_turns: Option<u64>,
    /// Claude SDK: `--max-budget-usd`.
    pub max_budget_usd: Option<f64>,
    /// Claude's `--dangerously-skip-permissions` (AgentV's default: on).
    pub bypass_permissions: bool,
    /// Codex: put before the prompt.
    pub system_prompt: Option<String>,
    /// Codex: `model_reasoning_effort`.
    pub reasoning_effort: Option<String>,
    /// pi: `--provider` (`subprovider`).
    pub subprovider: Option<String>,
    /// pi: the key for the subprovider (given in its environment variable).
    pub api_key: Option<String>,
    /// pi: the Azure endpoint or resource (`base_url`).
    pub base_url: Option<String>,
    /// pi: `--tools`.
    pub tools: Option<String>,
    /// pi: `--thinking`.
    pub thinking: Option<String>,
    /// pi: more arguments, before the prompt.
    pub extra_args: Vec<String>,
    /// Copilot SDK: a running CLI server (`host:port`).
    pub cli_url: Option<String>,
    /// Copilot SDK: the GitHub token, given in `COPILOT_SDK_AUTH_TOKEN`.
    pub github_token: Option<String>,
    /// Copilot SDK custom provider: a bearer token (over `api_key`).
    pub bearer_token: Option<String>,
    /// Copilot SDK custom provider: Azure's API version.
    pub api_version: Option<String>,
    /// Copilot SDK custom provider: `api_format`, the SDK's `wireApi`.
    pub wire_api: Option<String>,
    /// VS Code: wait for the answer (`wait`, default true).
    pub wait: bool,
    /// VS Code: prepare the subagent but send nothing (`dry_run`).
    pub dry_run: bool,
    /// VS Code: where the subagents live (`subagent_root`).
    pub subagent_root: Option<PathBuf>,
}

impl AgentConfig {
    /// Reads an agent entry (AgentV's field names).
    pub fn parse(
        kind: AgentKind,
        entry: &Map<String, Value>,
        base_dir: &Path,
    ) -> Result<Self, (String, String)> {
        let executable = get_str(entry, "executable")?
            .or(get_str(entry, "cli_path")?)
            .or(get_str(entry, "command")?)
            .or(get_str(entry, "binary")?)
            .filter(|e| !e.trim().is_empty())
            .unwrap_or_else(|| kind.default_executable().to_owned());
        let timeout = match get_f64(entry, "timeout_seconds")? {
            None => None,
            Some(s) => Some(super::seconds_field("timeout_seconds", s)?),
        };
        let bypass_permissions = match entry.get("bypass_permissions") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => {
                !matches!(s.trim().to_ascii_lowercase().as_str(), "false" | "0" | "no")
            }
            Some(_) => {
                return Err((
                    "bypass_permissions".into(),
                    "`bypass_permissions` must be true or false".into(),
                ));
            }
        };
        let reasoning_effort = get_str(entry, "model_reasoning_effort")?;
        if let Some(e) = &reasoning_effort
            && !["minimal", "low", "medium", "high", "xhigh"].contains(&e.as_str())
        {
            return Err((
                "model_reasoning_effort".into(),
                format!(
                    "`model_reasoning_effort` must be minimal, low, medium, high or xhigh, got `{e}`"
                ),
            ));
        }
        Ok(Self {
            kind,
            executable,
            model: get_str(entry, "model")?
                .or(get_str(entry, "pi_model")?)
                .filter(|m| !m.is_empty()),
            cwd: get_str(entry, "cwd")?
                .filter(|c| !c.is_empty())
                .map(|c| base_dir.join(c)),
            timeout,
            max_turns: get_u64(entry, "max_turns")?,
            max_budget_usd: get_f64(entry, "max_budget_usd")?,
            bypass_permissions,
            system_prompt: get_str(entry, "system_prompt")?
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty()),
            reasoning_effort,
            subprovider: get_str(entry, "subprovider")?.filter(|s| !s.is_empty()),
            api_key: get_str(entry, "api_key")?.filter(|s| !s.is_empty()),
            base_url: get_str(entry, "base_url")?
                .or(get_str(entry, "endpoint")?)
                .filter(|s| !s.is_empty()),
            tools: get_str(entry, "tools")?.or(get_str(entry, "pi_tools")?),
            thinking: get_str(entry, "thinking")?.or(get_str(entry, "pi_thinking")?),
            extra_args: match entry.get("args").or(entry.get("arguments")) {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|i| i.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        (
                            "args".to_owned(),
                            "`args` must be a list of strings".to_owned(),
                        )
                    })?,
                Some(_) => return Err(("args".into(), "`args` must be a list of strings".into())),
            },
            cli_url: get_str(entry, "cli_url")?.filter(|s| !s.trim().is_empty()),
            github_token: get_str(entry, "github_token")?.filter(|s| !s.is_empty()),
            bearer_token: get_str(entry, "bearer_token")?.filter(|s| !s.is_empty()),
            api_version: get_str(entry, "api_version")?.filter(|s| !s.is_empty()),
            wire_api: get_str(entry, "api_format")?.filter(|s| !s.is_empty()),
            wait: flag(entry, "wait")?.unwrap_or(true),
            dry_run: flag(entry, "dry_run")?.unwrap_or(false),
            subagent_root: get_str(entry, "subagent_root")?
                .filter(|s| !s.is_empty())
                .map(|s| base_dir.join(s)),
        })
    }

    /// The arguments AgentV runs the agent with.
    pub fn args(&self, cwd: Option<&Path>) -> Vec<String> {
        let mut args: Vec<String> = Vec::new();
        match self.kind {
            AgentKind::Claude => {
                args.extend(
                    [
                        "-p",
                        "--output-format",
                        "stream-json",
                        "--include-partial-messages",
                        "--verbose",
                    ]
                    .map(str::to_owned),
                );
                if self.bypass_permissions {
                    args.push("--dangerously-skip-permissions".into());
                }
                if let Some(m) = &self.model {
                    args.extend(["--model".to_owned(), m.clone()]);
                }
                if let Some(n) = self.max_turns {
                    args.extend(["--max-turns".to_owned(), n.to_string()]);
                }
            }
            AgentKind::Copilot => args.extend(super::acp::args(self)),
            AgentKind::ClaudeSdk => args.extend(super::claude_sdk::args(self)),
            AgentKind::CopilotSdk => args.extend(super::copilot_sdk::args(self)),
            AgentKind::VsCode { .. } => {}
            AgentKind::Pi | AgentKind::PiAgent => {
                if self.kind == AgentKind::PiAgent {
                    // The SDK always names its provider and model.
                    let provider = self.subprovider.as_deref().unwrap_or("google");
                    args.extend(["--provider".to_owned(), pi_provider(provider)]);
                    args.extend([
                        "--model".to_owned(),
                        self.model
                            .clone()
                            .unwrap_or_else(|| "gemini-2.5-flash".to_owned()),
                    ]);
                } else {
                    if let Some(p) = &self.subprovider {
                        args.extend(["--provider".to_owned(), pi_provider(p)]);
                    }
                    if let Some(m) = &self.model {
                        args.extend(["--model".to_owned(), m.clone()]);
                    }
                }
                args.extend(["--mode", "json", "--print", "--no-session"].map(str::to_owned));
                if let Some(t) = &self.tools {
                    args.extend(["--tools".to_owned(), t.clone()]);
                }
                if let Some(t) = &self.thinking {
                    args.extend(["--thinking".to_owned(), t.clone()]);
                }
                args.extend(self.extra_args.iter().cloned());
            }
            AgentKind::Codex => {
                args.extend(["exec", "--experimental-json"].map(str::to_owned));
                if let Some(m) = &self.model {
                    // The SDK's TOML value: the string JSON-quoted.
                    args.extend([
                        "--config".to_owned(),
                        format!("model={}", Value::String(m.clone())),
                    ]);
                }
                if let Some(dir) = cwd {
                    args.extend(["--cd".to_owned(), dir.display().to_string()]);
                }
                args.push("--skip-git-repo-check".into());
                if let Some(e) = &self.reasoning_effort {
                    args.extend([
                        "--config".to_owned(),
                        format!("model_reasoning_effort=\"{e}\""),
                    ]);
                }
            }
        }
        args
    }
}

/// A true/false setting (AgentV's `resolveOptionalBoolean`: a boolean or
/// `"true"`/`"false"`).
fn flag(entry: &Map<String, Value>, key: &str) -> Result<Option<bool>, (String, String)> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(_) => Err((key.to_owned(), format!("`{key}` must be true or false"))),
    }
}

/// AgentV's `resolveCliProvider`: `azure` is pi's `azure-openai-responses`.
fn pi_provider(name: &str) -> String {
    if name.eq_ignore_ascii_case("azure") {
        "azure-openai-responses".into()
    } else {
        name.to_owned()
    }
}

/// The environment variable pi reads a subprovider's key from (AgentV's
/// `ENV_KEY_MAP`; `google` when none is named).
fn pi_key_variable(provider: &str) -> Option<&'static str> {
    Some(match provider.to_ascii_lowercase().as_str() {
        "google" | "gemini" => "GEMINI_API_KEY",
        "anthropic" => "ANTHROPIC_API_KEY",
        "openai" => "OPENAI_API_KEY",
        "groq" => "GROQ_API_KEY",
        "xai" => "XAI_API_KEY",
        "openrouter" => "OPENROUTER_API_KEY",
        "azure" => "AZURE_OPENAI_API_KEY",
        _ => return None,
    })
}

/// pi's environment as AgentV builds it (`buildEnv`): the key in the
/// subprovider's variable (Azure: its key, and its base URL or resource
/// name), and, when a subprovider is named, the other providers' variables
/// removed (pi would pick them up over `--provider`).
fn pi_env(config: &AgentConfig) -> (Vec<(String, String)>, Vec<String>) {
    let provider = config
        .subprovider
        .as_deref()
        .unwrap_or("google")
        .to_ascii_lowercase();
    let mut set = Vec::new();
    if provider == "azure" {
        if let Some(k) = &config.api_key {
            set.push(("AZURE_OPENAI_API_KEY".to_owned(), k.clone()));
        }
        if let Some(url) = &config.base_url {
            if url.starts_with("http://") || url.starts_with("https://") {
                set.push(("AZURE_OPENAI_BASE_URL".to_owned(), url.clone()));
            } else {
                set.push(("AZURE_OPENAI_RESOURCE_NAME".to_owned(), url.clone()));
            }
        }
    } else if let (Some(k), Some(var)) = (&config.api_key, pi_key_variable(&provider)) {
        set.push((var.to_owned(), k.clone()));
    }
    let mut remove = Vec::new();
    if let Some(sub) = &config.subprovider {
        const OWN: &[(&str, &[&str])] = &[
            ("openrouter", &["OPENROUTER_"]),
            ("anthropic", &["ANTHROPIC_"]),
            ("openai", &["OPENAI_"]),
            ("azure-openai-responses", &["AZURE_OPENAI_"]),
            ("google", &["GEMINI_", "GOOGLE_GENERATIVE_AI_"]),
            ("gemini", &["GEMINI_", "GOOGLE_GENERATIVE_AI_"]),
            ("groq", &["GROQ_"]),
            ("xai", &["XAI_"]),
        ];
        let resolved = pi_provider(sub);
        let own: Vec<&str> = OWN
            .iter()
            .filter(|(k, _)| *k == resolved)
            .flat_map(|(_, p)| p.iter().copied())
            .collect();
        let others: Vec<&str> = OWN
            .iter()
            .filter(|(k, _)| *k != provider)
            .flat_map(|(_, p)| p.iter().copied())
            .collect();
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy().into_owned();
            if others.iter().any(|p| name.starts_with(p))
                && !own.iter().any(|p| name.starts_with(p))
            {
                remove.push(name);
            }
        }
    }
    (set, remove)
}

/// AgentV's prompt document: the input files to read first, then the
/// question after `[[ ## user_query ## ]]`.
pub fn prompt_document(test: &TestCase) -> String {
    let question = prompt::agent_prompt(&test.input);
    let mut files: Vec<PathBuf> = Vec::new();
    for f in prompt::input_files(&test.input) {
        if !files.contains(&f) {
            files.push(f);
        }
    }
    let mut parts: Vec<String> = Vec::new();
    if !files.is_empty() {
        let list: Vec<String> = files
            .iter()
            .map(|p| {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                format!("* [{name}](file://{})", p.display())
            })
            .collect();
        parts.push("\n".into());
        parts.push(format!(
            "Read all input files:\n{}.\nIf any file is missing, fail with ERROR: missing-file <filename> and stop.\nThen apply system_instructions on the user query below.",
            list.join("\n")
        ));
    }
    parts.push("\n[[ ## user_query ## ]]\n".into());
    parts.push(question.trim().to_owned());
    parts.join("\n").trim().to_owned()
}

/// Runs the agent for one test.
pub fn invoke(
    config: &AgentConfig,
    test: &TestCase,
    inv: &Invocation<'_>,
) -> Result<TargetOutput, TargetFailure> {
    match config.kind {
        AgentKind::Copilot => return super::acp::invoke(config, test, inv),
        AgentKind::ClaudeSdk => return super::claude_sdk::invoke(config, test, inv),
        AgentKind::CopilotSdk => return super::copilot_sdk::invoke(config, test, inv),
        AgentKind::VsCode { .. } => return super::vscode::invoke(config, test, inv),
        _ => {}
    }
    let mut cwd: Option<PathBuf> = inv
        .workspace
        .map(Path::to_path_buf)
        .or_else(|| config.cwd.clone());
    // pi with neither: a fresh temporary directory, removed after, as
    // AgentV's pi-cli makes one (`agentv-pi-…`).
    let _scratch = match (config.kind, &cwd) {
        (AgentKind::Pi, None) => {
            let dir = tempfile::Builder::new()
                .prefix("agentv-pi-")
                .tempdir()
                .map_err(|e| {
                    TargetFailure::fatal(format!("cannot create a directory for pi: {e}"))
                })?;
            cwd = Some(dir.path().to_path_buf());
            Some(dir)
        }
        _ => None,
    };
    let mut prompt = prompt_document(test);
    if config.kind == AgentKind::Codex
        && let Some(system) = &config.system_prompt
    {
        prompt = format!("{system}\n\n{prompt}");
    }
    let args = config.args(cwd.as_deref());
    let mut argv = vec![config.executable.clone()];
    argv.extend(args);
    // pi: the input files as `@file`, then the question itself (not the
    // prompt document) as the last argument, `@[Role]:` written
    // `[[Role]]:` so pi does not read it as a file, stdin empty.
    let prompt = if config.kind == AgentKind::PiAgent {
        // The SDK's prompt: the system prompt, the question, then the input
        // files as `@path` lines, one message.
        let mut message = prompt::agent_prompt(&test.input);
        if let Some(system) = &config.system_prompt {
            message = format!("{system}\n\n{message}");
        }
        let files: Vec<String> = prompt::input_files(&test.input)
            .iter()
            .map(|f| format!("@{}", f.display()))
            .collect();
        if !files.is_empty() {
            message = format!("{message}\n\nFiles:\n{}", files.join("\n"));
        }
        argv.push(message);
        String::new()
    } else if config.kind == AgentKind::Pi {
        for f in prompt::input_files(&test.input) {
            argv.push(format!("@{}", f.display()));
        }
        let question = prompt::agent_prompt(&test.input);
        let question = match &config.system_prompt {
            Some(system) => format!("{system}\n\n{question}"),
            None => question,
        };
        argv.push(escape_at_roles(&question));
        String::new()
    } else {
        prompt
    };
    let (env, remove): (Vec<(String, String)>, Vec<String>) = match config.kind {
        AgentKind::Claude => (
            Vec::new(),
            vec!["CLAUDECODE".into(), "CLAUDE_CODE_ENTRYPOINT".into()],
        ),
        AgentKind::Pi | AgentKind::PiAgent => pi_env(config),
        AgentKind::Copilot
        | AgentKind::ClaudeSdk
        | AgentKind::CopilotSdk
        | AgentKind::VsCode { .. } => (Vec::new(), Vec::new()),
        AgentKind::Codex => (
            if std::env::var_os("CODEX_INTERNAL_ORIGINATOR_OVERRIDE").is_some() {
                Vec::new()
            } else {
                vec![(
                    "CODEX_INTERNAL_ORIGINATOR_OVERRIDE".into(),
                    "codex_sdk_ts".into(),
                )]
            },
            Vec::new(),
        ),
    };
    let timeout = inv.time_left(config.timeout);
    let case_bound = inv.deadline.is_some() && timeout != config.timeout;
    let label = config.kind.label();
    // Under --isolate: the agent writes its workspace, and reaches the
    // hosts of its model API through evalhost's proxy (or what its
    // `isolate.network` says).
    let mut env = env;
    let sandbox = AgentSandbox::of(config, inv, &mut env);
    let agent_cwd = match config.kind {
        AgentKind::Claude
        | AgentKind::Pi
        | AgentKind::PiAgent
        | AgentKind::Copilot
        | AgentKind::ClaudeSdk
        | AgentKind::CopilotSdk
        | AgentKind::VsCode { .. } => cwd.as_deref(),
        AgentKind::Codex => None,
    };
    let scratch: Vec<std::path::PathBuf> = cwd
        .iter()
        .filter(|c| inv.workspace.is_none_or(|w| !c.starts_with(w)))
        .cloned()
        .collect();
    let confined = inv
        .sandbox
        .map(|s| s.target(agent_cwd, &scratch, &sandbox.read, sandbox.network))
        .transpose()
        .map_err(|refused| TargetFailure::fatal(refused.to_string()))?;
    let outcome = process::run(&process::Spec {
        argv: &argv,
        // Codex is told its directory with `--cd`; Claude runs in it.
        cwd: agent_cwd,
        stdin: prompt.as_bytes(),
        timeout,
        env: &env,
        env_remove: &remove,
        sandbox: confined.as_ref(),
        ..process::Spec::default()
    })
    .map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            TargetFailure::fatal(format!(
                "{label} executable '{}' was not found on PATH. Install it or give the target an `executable` (`evalhost doctor` checks)",
                config.executable
            ))
        } else {
            TargetFailure::new(format!("{label} could not start: {e}"))
        }
    })?;
    if outcome.timed_out {
        let secs = timeout.unwrap_or_default().as_secs_f64();
        return Err(if case_bound {
            TargetFailure::timeout(format!(
                "the case ran past its timeout_ms while {label} ran ({secs:.1}s)"
            ))
        } else {
            TargetFailure::new(format!("{label} timed out after {}s", secs.ceil()))
        });
    }
    if outcome.code != Some(0) {
        let detail = outcome.message();
        let prefix = match outcome.code {
            Some(code) => format!("{label} exited with code {code}"),
            None => format!("{label} was killed by a signal"),
        };
        return Err(TargetFailure::new(if detail.is_empty() {
            prefix
        } else {
            format!("{prefix}: {detail}")
        }));
    }
    let stdout = String::from_utf8_lossy(&outcome.stdout);
    let format = match config.kind {
        AgentKind::Claude | AgentKind::ClaudeSdk => TraceFormat::ClaudeCode,
        AgentKind::Codex => TraceFormat::Codex,
        AgentKind::Pi | AgentKind::PiAgent => TraceFormat::Pi,
        AgentKind::Copilot | AgentKind::CopilotSdk | AgentKind::VsCode { .. } => {
            TraceFormat::AgentV
        }
    };
    let mut output =
        crate::trace::normalize(&stdout, format).map_err(|e| TargetFailure::fatal(e.message))?;
    if output.duration_ms.is_none() {
        output.duration_ms = Some(outcome.duration.as_millis() as u64);
    }
    output.raw = Some(stdout.into_owned());
    Ok(output)
}

/// Where a session agent runs: the case workspace, else the target's
/// `cwd`, else evalhost's own directory.
/// Where a session agent runs: its workspace, else its target's `cwd`,
/// else — under `--isolate` — a private empty directory of the case (never
/// evalhost's own directory, which the agent would write), or evalhost's
/// directory when not isolated.
pub(super) fn session_cwd(config: &AgentConfig, inv: &Invocation<'_>) -> PathBuf {
    inv.workspace
        .map(Path::to_path_buf)
        .or_else(|| config.cwd.clone())
        .or_else(|| match inv.sandbox {
            Some(sandbox) => sandbox.private_dir().ok(),
            None => std::env::current_dir().ok(),
        })
        .unwrap_or_default()
}

/// Starts a session agent with its stdio piped, in its own process group
/// (so that a timeout kills everything it started). A missing program is a
/// fatal failure naming it and `fix` (how to point the target at it);
/// `starter` names what could not start in other failures.
/// A session agent's process (Claude's SDK mode, Copilot over ACP or its
/// SDK): what it runs, and under `--isolate` what its sandbox holds — its
/// workspace writable, its target's `isolate` settings, its model API's
/// hosts through evalhost's proxy.
pub(super) struct Session {
    argv: Vec<String>,
    cwd: std::path::PathBuf,
    env: Vec<(String, String)>,
    remove: Vec<String>,
    read: Vec<std::path::PathBuf>,
    network: crate::isolate::Network,
    sandbox: Option<crate::isolate::CaseSandbox>,
}

impl Session {
    /// `executable args…` in `cwd`, with `env` set and `remove` unset.
    pub(super) fn new(
        config: &AgentConfig,
        inv: &Invocation<'_>,
        args: Vec<String>,
        cwd: &std::path::Path,
        env: Vec<(String, String)>,
        remove: &[&str],
    ) -> Self {
        let mut env = env;
        let sandbox = AgentSandbox::of(config, inv, &mut env);
        let mut argv = vec![config.executable.clone()];
        argv.extend(args);
        Self {
            argv,
            cwd: cwd.to_path_buf(),
            env,
            remove: remove.iter().map(|s| (*s).to_owned()).collect(),
            read: sandbox.read,
            network: sandbox.network,
            sandbox: inv.sandbox.cloned(),
        }
    }
}

/// What an agent's sandbox holds under `--isolate`, from its target's
/// `isolate` settings: what it reads, its network (its model API's hosts
/// through evalhost's proxy unless the target says otherwise), its limits.
struct AgentSandbox {
    read: Vec<std::path::PathBuf>,
    network: crate::isolate::Network,
}

impl AgentSandbox {
    /// The target's settings; the variables it is granted are added to
    /// `env` (the default hosts include those of its `*_BASE_URL`s).
    fn of(config: &AgentConfig, inv: &Invocation<'_>, env: &mut Vec<(String, String)>) -> Self {
        let isolate = inv.isolate.cloned().unwrap_or_default();
        env.extend(isolate.env_values());
        let network = isolate
            .network
            .unwrap_or_else(|| crate::isolate::Network::Hosts(default_hosts(&config.kind, env)));
        Self {
            read: isolate.read,
            network,
        }
    }
}

/// Starts a session agent with piped stdio in its own process group (in
/// its sandbox under `--isolate`: finished when the returned guard is
/// dropped, after the process ends).
pub(super) fn spawn_session(
    session: &Session,
    label: &str,
    executable: &str,
    fix: &str,
    starter: &str,
) -> Result<(std::process::Child, Option<crate::isolate::Sandboxed>), TargetFailure> {
    let confined = session
        .sandbox
        .as_ref()
        .map(|s| s.session(&session.cwd, &session.read, session.network.clone()))
        .transpose()
        .map_err(|refused| TargetFailure::fatal(refused.to_string()))?;
    let spec = process::Spec {
        argv: &session.argv,
        cwd: Some(&session.cwd),
        env: &session.env,
        env_remove: &session.remove,
        sandbox: confined.as_ref(),
        ..process::Spec::default()
    };
    process::spawn_piped(&spec).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            TargetFailure::fatal(format!(
                "{label} executable '{executable}' was not found on PATH. {fix} (`evalhost doctor` checks)"
            ))
        } else {
            TargetFailure::new(format!("{starter} could not start: {e}"))
        }
    })
}

/// Reads a session agent's stderr on a thread, keeping its last 4000
/// bytes (cut on a character boundary) for a failure's message.
/// The hosts an agent reaches under `--isolate` when its target names
/// none: its vendor's API, and the host of every `*_BASE_URL` it is given.
pub fn default_hosts(kind: &AgentKind, env: &[(String, String)]) -> Vec<String> {
    let vendor: &[&str] = match kind {
        AgentKind::Claude | AgentKind::ClaudeSdk => &["api.anthropic.com", "*.anthropic.com"],
        AgentKind::Codex => &["api.openai.com", "*.openai.com", "chatgpt.com"],
        AgentKind::Copilot | AgentKind::CopilotSdk | AgentKind::VsCode { .. } => &[
            "api.github.com",
            "github.com",
            "*.githubcopilot.com",
            "*.githubusercontent.com",
        ],
        AgentKind::Pi | AgentKind::PiAgent => &[
            "api.anthropic.com",
            "api.openai.com",
            "generativelanguage.googleapis.com",
            "openrouter.ai",
        ],
    };
    let mut hosts: Vec<String> = vendor.iter().map(|h| (*h).to_owned()).collect();
    for (key, value) in env {
        if (key.ends_with("_BASE_URL") || key.ends_with("_API_BASE") || key.ends_with("_ENDPOINT"))
            && let Some(authority) = value
                .split_once("://")
                .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or_default())
                .filter(|a| !a.is_empty())
        {
            hosts.push(authority.rsplit('@').next().unwrap_or(authority).to_owned());
        }
    }
    hosts.sort();
    hosts.dedup();
    hosts
}

pub(super) fn stderr_tail(stderr: std::process::ChildStderr) -> std::thread::JoinHandle<String> {
    use std::io::BufRead as _;
    std::thread::spawn(move || {
        let mut tail = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            tail.push_str(&line);
            tail.push('\n');
            if tail.len() > 4000 {
                let mut cut = tail.len() - 4000;
                while !tail.is_char_boundary(cut) {
                    cut += 1;
                }
                tail.drain(..cut);
            }
        }
        tail
    })
}

/// The failure a session agent's run ended with: running out of time said
/// as such (the case's deadline, or the target's `timeout_seconds`), any
/// other failure with what the agent wrote on stderr after it.
pub(super) fn session_failure(
    e: TargetFailure,
    label: &str,
    timeout: Option<Duration>,
    case_bound: bool,
    tail: &str,
) -> TargetFailure {
    if e.message == "timed out" {
        let secs = timeout.unwrap_or_default().as_secs_f64();
        if case_bound {
            TargetFailure::timeout(format!(
                "the case ran past its timeout_ms while {label} ran ({secs:.1}s)"
            ))
        } else {
            TargetFailure::new(format!("{label} timed out after {}s", secs.ceil()))
        }
    } else if tail.trim().is_empty() {
        e
    } else {
        TargetFailure {
            message: format!("{}: {}", e.message, tail.trim()),
            ..e
        }
    }
}

/// AgentV's `escapeAtSymbols`: `@[Role]:` becomes `[[Role]]:`.
fn escape_at_roles(prompt: &str) -> String {
    let mut out = String::with_capacity(prompt.len());
    let mut rest = prompt;
    while let Some(i) = rest.find("@[") {
        let after = &rest[i + 2..];
        match after.find(']') {
            Some(j) if j > 0 && after[j..].starts_with("]:") => {
                out.push_str(&rest[..i]);
                out.push_str("[[");
                out.push_str(&after[..j]);
                out.push_str("]]:");
                rest = &after[j + 2..];
            }
            _ => {
                out.push_str(&rest[..i + 2]);
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
    fn the_command_lines_are_agentvs() {
        let mut entry = Map::new();
        entry.insert("model".into(), Value::String("sonnet".into()));
        entry.insert("max_turns".into(), Value::from(5));
        let c = AgentConfig::parse(AgentKind::Claude, &entry, Path::new("/p")).unwrap();
        assert_eq!(
            c.args(None),
            [
                "-p",
                "--output-format",
                "stream-json",
                "--include-partial-messages",
                "--verbose",
                "--dangerously-skip-permissions",
                "--model",
                "sonnet",
                "--max-turns",
                "5"
            ]
        );
        entry.insert("bypass_permissions".into(), Value::Bool(false));
        entry.insert(
            "model_reasoning_effort".into(),
            Value::String("high".into()),
        );
        let c = AgentConfig::parse(AgentKind::Codex, &entry, Path::new("/p")).unwrap();
        assert_eq!(
            c.args(Some(Path::new("/ws"))),
            [
                "exec",
                "--experimental-json",
                "--config",
                "model=\"sonnet\"",
                "--cd",
                "/ws",
                "--skip-git-repo-check",
                "--config",
                "model_reasoning_effort=\"high\""
            ]
        );
    }
}
