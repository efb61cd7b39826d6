//! Targets: what produces the output under test. Read from
//! `.evalhost/targets.yaml` (falling back to `.agentv/targets.yaml`), found
//! by walking up from the eval file's directory, or from `--targets FILE`.
//!
//! - [`mock`]: AgentV's canned response.
//! - [`cli`]: any command (agent CLIs such as Claude Code or Codex), AgentV's
//!   placeholder and output-file contract.
//! - [`openai`]: any OpenAI-compatible chat-completions endpoint.
//! - [`replay`]: outputs recorded elsewhere, keyed by test id.
//!
//! Secrets come from `${{ VAR }}`; a literal `api_key` is refused.
//! `use_target` delegates to another entry. Failed calls are retried with
//! exponential backoff, then `fallback_targets` are tried in order.

pub use crate::results::output::{
    LlmCalls, OutputMessage, Retry as RetryRecord, TargetOutput, TokenUsage, ToolCall,
};

mod acp;
pub mod agent;
pub mod anthropic;
pub(crate) mod anthropic_promptfoo;
mod api;
mod claude_sdk;
pub mod cli;
pub mod copilot_log;
mod copilot_sdk;
pub mod gemini;
pub mod gemini_promptfoo;
pub mod http;
mod net;
pub mod openai;
mod openai_responses_promptfoo;
pub mod prompt;
pub mod replay;
pub mod responses;
mod vscode;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::diag::{Diagnostic, Diagnostics};
use crate::failure::FailureClass;
use crate::suite::TestCase;
use crate::suite::env::Env;
use crate::suite::load::kind;
use crate::suite::source_map::KeyPath;

mod file;
pub use file::*;
pub mod keys;
pub mod models;
pub mod ollama;

/// AgentV's mock response when none is configured.
pub const MOCK_DEFAULT_RESPONSE: &str =
    "{\"answer\":\"Mock provider response. Configure targets.yaml to supply a custom value.\"}";

/// The file names searched in each directory, in order.
pub const CANDIDATES: &[&str] = &[
    ".evalhost/targets.yaml",
    ".evalhost/targets.yml",
    ".agentv/targets.yaml",
    ".agentv/targets.yml",
];

/// Fields whose value must come from the environment (`${{ VAR }}`), never
/// be written in the file.
pub const SECRET_FIELDS: &[&str] = &["api_key"];

/// What a target is.
#[derive(Debug, Clone, PartialEq)]
pub enum Provider {
    /// AgentV's `mock`: the same response for every test.
    Mock {
        /// The response text.
        response: String,
        /// How long to take, in milliseconds (an evalhost extension, for
        /// exercising timeouts and interruption).
        delay_ms: u64,
    },
    /// promptfoo's `echo`: the output is the prompt itself (the text of the
    /// test's input messages; a promptfoo prompt is one message). Offline,
    /// for testing suites.
    Echo,
    /// A command.
    Cli(cli::CliConfig),
    /// An OpenAI-compatible endpoint.
    OpenAi(openai::OpenAiConfig),
    /// Anthropic's Messages API.
    Anthropic(anthropic::AnthropicConfig),
    /// Google's Gemini API.
    Gemini(gemini::GeminiConfig),
    /// A coding agent (Claude Code, Codex), run as AgentV runs it.
    Agent(Box<agent::AgentConfig>),
    /// A Copilot CLI session already on disk.
    CopilotLog(copilot_log::CopilotLogConfig),
    /// OpenAI's Responses API (Azure's, or OpenAI's with
    /// `api_format: responses`).
    Responses(responses::ResponsesConfig),
    /// Any HTTP API (promptfoo's `http` provider).
    Http(http::HttpConfig),
    /// Recorded outputs.
    Replay(replay::ReplayConfig),
    /// The outputs of an earlier run, by (test id, trial): `evalhost regrade`.
    Recorded(std::sync::Arc<std::collections::HashMap<(String, u32), TargetOutput>>),
    /// A provider this version of evalhost does not run.
    Unsupported(String),
    /// An entry that cannot run because a `${{ VAR }}` it needs is not set:
    /// an error when a run selects it, not before (AgentV resolves only
    /// the targets it runs).
    Unavailable(String),
}

/// What `echo` answers: the prompt as a promptfoo-style suite rendered it,
/// else the input messages' text, one per line.
pub fn echo_text(test: &TestCase) -> String {
    if let Some(prompt) = &test.prompt {
        return prompt.raw.clone();
    }
    test.input
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Retry policy of a target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff.
    pub initial_delay: Duration,
    /// Backoff cap.
    pub max_delay: Duration,
    /// Backoff multiplier.
    pub factor: f64,
}

impl Default for Retry {
    /// AgentV's defaults: 2 retries, 1 s, doubling, capped at 30 s.
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            factor: 2.0,
        }
    }
}

impl Retry {
    /// The delay before retry `n` (0-based).
    pub fn delay(&self, n: u32) -> Duration {
        let secs = self.initial_delay.as_secs_f64() * self.factor.powi(n as i32);
        clamp_seconds(secs, self.max_delay)
    }
}

/// One entry of a targets file, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Its name.
    pub name: String,
    /// Its provider.
    pub provider: Provider,
    /// The judge target for LLM graders (`grader_target`, alias
    /// `judge_target`).
    pub grader_target: Option<String>,
    /// Targets tried in order when this one fails after its retries.
    pub fallback_targets: Vec<String>,
    /// Retry policy.
    pub retry: Retry,
    /// The directory of the targets file (relative paths in the entry).
    pub base_dir: PathBuf,
    /// What the target's processes get under `--isolate` besides the case.
    pub isolate: TargetIsolation,
}

/// A target's `isolate:` settings: what its command or agent needs inside
/// the sandbox (`--isolate`), named by the operator in the targets file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetIsolation {
    /// The operator's environment variables it keeps (its API key).
    pub env: Vec<String>,
    /// Files or directories it may read (an agent's own configuration,
    /// `~/.claude`), bound read-only at their path.
    pub read: Vec<PathBuf>,
    /// Its network: `false` none, a list of hosts reached through
    /// evalhost's proxy, `true` the host's whole network (default: agents
    /// reach their model API's hosts, commands nothing).
    pub network: Option<crate::isolate::Network>,
    /// Its memory and process limits (default: 4 GiB, 512 processes).
    pub limits: Option<crate::isolate::Limits>,
}

impl TargetIsolation {
    /// The operator's values of [`TargetIsolation::env`] that are set.
    pub fn env_values(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .filter_map(|name| std::env::var(name).ok().map(|v| (name.clone(), v)))
            .collect()
    }
}

/// Why a target produced no output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetFailure {
    /// `target`, or `case_timeout` when the case's deadline passed.
    pub class: FailureClass,
    /// What happened.
    pub message: String,
    /// Whether another attempt may succeed.
    pub retryable: bool,
    /// How long the target asked us to wait (HTTP `Retry-After`).
    pub retry_after: Option<Duration>,
    /// How many attempts were made, once retries are over.
    pub attempts: u32,
}

impl TargetFailure {
    /// A retryable target failure.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            class: FailureClass::Target,
            message: message.into(),
            retryable: true,
            retry_after: None,
            attempts: 1,
        }
    }

    /// A failure retrying cannot fix (bad config, 4xx).
    pub fn fatal(message: impl Into<String>) -> Self {
        Self {
            retryable: false,
            ..Self::new(message)
        }
    }

    /// The case's deadline passed.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self {
            class: FailureClass::CaseTimeout,
            retryable: false,
            ..Self::new(message)
        }
    }
}

/// What an invocation knows besides the test.
#[derive(Debug, Clone, Default)]
pub struct Invocation<'a> {
    /// The case workspace, when there is one (the cli target's cwd).
    pub workspace: Option<&'a Path>,
    /// The eval file's directory.
    pub eval_dir: Option<&'a Path>,
    /// The case's deadline.
    pub deadline: Option<Instant>,
    /// The retry attempt, 0-based.
    pub attempt: u32,
    /// The trial, 1-based.
    pub trial: u32,
    /// The target's `isolate:` settings, for its processes under
    /// `--isolate` (set by the target itself when it invokes).
    pub isolate: Option<&'a TargetIsolation>,
    /// Under `--isolate`, the sandbox of the case (or of a judge's call)
    /// every process of the target runs in.
    pub sandbox: Option<&'a crate::isolate::CaseSandbox>,
}

impl Invocation<'_> {
    /// Time left before the deadline, capped at `cap`.
    pub fn time_left(&self, cap: Option<Duration>) -> Option<Duration> {
        let left = self
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        match (left, cap) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The targets of a run and the file they came from.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    /// The file, when one was found.
    pub file: Option<PathBuf>,
    /// Its entries (with `use_target` resolved).
    pub targets: Vec<Target>,
    /// What reading it found that does not stop a run.
    pub warnings: Diagnostics,
    /// `execution.isolate: true`: the operator's default, every run using
    /// this file isolated (`--isolate`).
    pub isolate: bool,
}

impl Targets {
    /// The names of evalhost's environment variables whose values are a
    /// target's key: grader commands must not see them.
    pub fn key_variables(&self) -> Vec<String> {
        let keys: Vec<&str> = self
            .targets
            .iter()
            .flat_map(|t| match &t.provider {
                Provider::OpenAi(c) => vec![c.api_key.as_deref()],
                Provider::Anthropic(c) => vec![c.api_key.as_deref()],
                Provider::Gemini(c) => vec![c.api_key.as_deref()],
                Provider::Responses(c) => vec![c.api_key.as_deref()],
                Provider::Agent(c) => vec![
                    c.api_key.as_deref(),
                    c.github_token.as_deref(),
                    c.bearer_token.as_deref(),
                ],
                _ => Vec::new(),
            })
            .flatten()
            .filter(|k| !k.is_empty())
            .collect();
        if keys.is_empty() {
            return Vec::new();
        }
        std::env::vars_os()
            .filter_map(|(name, value)| {
                let value = value.to_str()?;
                keys.contains(&value)
                    .then(|| name.to_string_lossy().into_owned())
            })
            .collect()
    }

    /// The target named `name`, checked to be runnable, with its fallbacks.
    pub fn select(&self, name: &str) -> Result<&Target, String> {
        let Some(target) = self.targets.iter().find(|t| t.name == name) else {
            let available: Vec<&str> = self.targets.iter().map(|t| t.name.as_str()).collect();
            let near = crate::diag::nearest(name, available.iter().copied())
                .map(|n| format!("did you mean `{n}`? "))
                .unwrap_or_default();
            return Err(match &self.file {
                Some(file) => format!(
                    "target `{name}` is not in {} ({near}available: {})",
                    file.display(),
                    if available.is_empty() {
                        "none".into()
                    } else {
                        available.join(", ")
                    }
                ),
                None => format!(
                    "no targets file found for target `{name}`; create `.evalhost/targets.yaml` next to the \
                     eval file (or in a parent directory), e.g.\n\n  targets:\n    - name: {name}\n      \
                     provider: mock\n      response: \"Paris\"\n\nor pass one with --targets FILE"
                ),
            });
        };
        if let Provider::Unavailable(message) = &target.provider {
            return Err(format!("target `{name}`: {message}"));
        }
        if let Provider::Unsupported(p) = &target.provider {
            return Err(format!(
                "target `{name}` uses provider `{p}`, which this version of evalhost does not run \
                 (supported: mock, echo, cli, openai and compatible endpoints, azure, anthropic, gemini, agentv, claude, claude-sdk, \
                 codex, copilot, copilot-sdk, copilot-log, pi-cli, pi-coding-agent, vscode, http, replay, and a discovered provider: a script .agentv/providers/<kind>.ts beside or above the targets file; docs/targets.md)"
            ));
        }
        for fallback in &target.fallback_targets {
            if !self.targets.iter().any(|t| &t.name == fallback) {
                return Err(format!(
                    "target `{name}` falls back to `{fallback}`, which is not in the targets file"
                ));
            }
        }
        Ok(target)
    }

    /// Runs `target` for `test`: retries with backoff, then each fallback.
    /// `retried` hears of every failed attempt that is tried again, as it
    /// happens.
    pub fn invoke(
        &self,
        target: &Target,
        test: &TestCase,
        inv: &Invocation<'_>,
        retried: &mut dyn FnMut(RetryRecord),
    ) -> Result<TargetOutput, TargetFailure> {
        let mut last = match invoke_with_retries(target, test, inv, retried) {
            Ok(out) => return Ok(out),
            Err(e) => e,
        };
        for name in &target.fallback_targets {
            if last.class == FailureClass::CaseTimeout {
                break;
            }
            let Some(fallback) = self.targets.iter().find(|t| &t.name == name) else {
                continue;
            };
            retried(RetryRecord {
                target: target.name.clone(),
                attempt: last.attempts,
                error: format!("{} (trying fallback `{}`)", last.message, fallback.name),
                wait_ms: 0,
            });
            match invoke_with_retries(fallback, test, inv, retried) {
                Ok(mut out) => {
                    out.target_used = Some(fallback.name.clone());
                    return Ok(out);
                }
                Err(e) => {
                    last = TargetFailure {
                        message: format!(
                            "{} (then fallback `{}`: {})",
                            last.message, fallback.name, e.message
                        ),
                        ..e
                    }
                }
            }
        }
        Err(last)
    }
}

fn invoke_with_retries(
    target: &Target,
    test: &TestCase,
    inv: &Invocation<'_>,
    retried: &mut dyn FnMut(RetryRecord),
) -> Result<TargetOutput, TargetFailure> {
    let mut attempt = 0;
    loop {
        let this = Invocation {
            attempt,
            ..inv.clone()
        };
        match target.invoke_once(test, &this) {
            Ok(out) => return Ok(out),
            Err(failure) if failure.retryable && attempt < target.retry.max_retries => {
                let wait = failure
                    .retry_after
                    .unwrap_or_else(|| target.retry.delay(attempt));
                if let Some(left) = inv.time_left(None)
                    && left <= wait
                {
                    return Err(TargetFailure::timeout(format!(
                        "the case ran past its timeout_ms while retrying: {}",
                        failure.message
                    )));
                }
                retried(RetryRecord {
                    target: target.name.clone(),
                    attempt: attempt + 1,
                    error: failure.message.clone(),
                    wait_ms: wait.as_millis() as u64,
                });
                std::thread::sleep(wait);
                attempt += 1;
            }
            Err(failure) => {
                return Err(if attempt > 0 {
                    TargetFailure {
                        message: format!("{} (after {} attempts)", failure.message, attempt + 1),
                        attempts: attempt + 1,
                        ..failure
                    }
                } else {
                    failure
                });
            }
        }
    }
}

impl Target {
    /// What identifies this target's answers for the response cache, or
    /// `None` when they are not cached: replays and mocks (already local),
    /// and sampled models (`temperature > 0`) unless `sampled` is set.
    pub fn cache_identity(&self, sampled: bool, eval_dir: &Path) -> Option<String> {
        match &self.provider {
            // The directory it runs in decides what `./agent.sh` is.
            Provider::Cli(c) => Some(format!(
                "cli\u{0}{}\u{0}{}",
                c.command,
                c.cwd.as_deref().unwrap_or(eval_dir).display()
            )),
            Provider::OpenAi(c) => {
                let temperature = c.temperature.unwrap_or(1.0);
                if temperature > 0.0 && !sampled {
                    return None;
                }
                // Every field of the request, and how its reply is read.
                Some(format!(
                    "openai\u{0}{}\u{0}{}\u{0}{temperature}\u{0}{:?}\u{0}{}\u{0}{:?}\u{0}{}",
                    c.base_url,
                    c.model,
                    c.max_output_tokens,
                    serde_json::Value::Object(c.request_params.clone()),
                    c.output_style,
                    c.promptfoo_responses
                ))
            }
            _ => None,
        }
    }

    /// One attempt.
    pub fn invoke_once(
        &self,
        test: &TestCase,
        inv: &Invocation<'_>,
    ) -> Result<TargetOutput, TargetFailure> {
        // A test that changes this target's request (promptfoo's test
        // options and prompt config) brings the entry its calls use.
        if let Some(entry) = test
            .target_params
            .as_ref()
            .and_then(|t| t.get(&self.name))
            .and_then(serde_json::Value::as_object)
        {
            let own =
                file::parse_target(&self.name, entry, Path::new(".")).map_err(|(key, e)| {
                    TargetFailure::fatal(format!(
                        "the request of target `{}` for this test: `{key}`: {e}",
                        self.name
                    ))
                })?;
            return Target {
                provider: own.provider,
                ..self.clone()
            }
            .invoke_provider(test, inv);
        }
        self.invoke_provider(test, inv)
    }

    fn invoke_provider(
        &self,
        test: &TestCase,
        inv: &Invocation<'_>,
    ) -> Result<TargetOutput, TargetFailure> {
        match &self.provider {
            Provider::Mock { response, delay_ms } => {
                if *delay_ms > 0 {
                    let wanted = Duration::from_millis(*delay_ms);
                    let allowed = inv.time_left(Some(wanted)).unwrap_or(wanted);
                    std::thread::sleep(allowed);
                    if allowed < wanted {
                        return Err(TargetFailure::timeout(
                            "the case ran past its timeout_ms while the target was running",
                        ));
                    }
                }
                // AgentV's mock reports no duration.
                Ok(TargetOutput::text(response.clone()))
            }
            // promptfoo's echo reports its (nil) cost and a duration.
            Provider::Echo => Ok(TargetOutput {
                duration_ms: Some(0),
                cost_usd: Some(0.0),
                ..TargetOutput::text(echo_text(test))
            }),
            Provider::Cli(config) => cli::invoke(config, self, test, inv),
            Provider::OpenAi(config) => openai::invoke(config, test, inv),
            Provider::Anthropic(config) => anthropic::invoke(config, test, inv),
            Provider::Gemini(config) => gemini::invoke(config, test, inv),
            Provider::Responses(config) => responses::invoke(config, test, inv),
            Provider::Agent(config) => agent::invoke(
                config,
                test,
                &Invocation {
                    isolate: Some(&self.isolate),
                    ..inv.clone()
                },
            ),
            Provider::CopilotLog(config) => copilot_log::invoke(config),
            Provider::Http(config) => http::invoke(config, test, inv),
            Provider::Replay(config) => replay::invoke(config, test, inv.trial),
            Provider::Recorded(outputs) => outputs
                .get(&(test.id.clone(), inv.trial))
                .cloned()
                .ok_or_else(|| {
                    TargetFailure::fatal(format!(
                        "the earlier run has no output for test `{}` (trial {})",
                        test.id, inv.trial
                    ))
                }),
            Provider::Unsupported(p) => Err(TargetFailure::fatal(format!(
                "provider `{p}` is not supported"
            ))),
            Provider::Unavailable(message) => Err(TargetFailure::fatal(message.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(text: &str, env: &[(&str, &str)]) -> Result<Targets, Diagnostics> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("targets.yaml");
        std::fs::write(&path, text).unwrap();
        load_targets(&path, &Env::from_pairs(env.iter().copied()))
    }

    #[test]
    fn literal_api_keys_are_refused_and_references_resolved() {
        let err = targets(
            "targets:\n  - {name: a, provider: openai, model: m, api_key: sk-123}\n",
            &[],
        )
        .unwrap_err();
        let text = err.iter().map(ToString::to_string).collect::<String>();
        assert!(text.contains("`api_key` is written literally"), "{text}");
        let ok = targets(
            "targets:\n  - {name: a, provider: openai, model: m, api_key: '${{ KEY }}', base_url: 'http://127.0.0.1:9'}\n",
            &[("KEY", "sk-secret")],
        )
        .unwrap();
        let Provider::OpenAi(config) = &ok.targets[0].provider else {
            panic!()
        };
        assert_eq!(config.api_key.as_deref(), Some("sk-secret"));
    }

    #[test]
    fn use_target_delegates_and_detects_loops() {
        let ok = targets(
            "targets:\n  - {name: real, provider: mock, response: hi}\n  - {name: alias, use_target: '${{ WHICH }}', grader_target: real}\n",
            &[("WHICH", "real")],
        )
        .unwrap();
        let alias = ok.select("alias").unwrap();
        assert_eq!(
            alias.provider,
            Provider::Mock {
                response: "hi".into(),
                delay_ms: 0
            }
        );
        assert_eq!(alias.grader_target.as_deref(), Some("real"));
        let err = targets(
            "targets:\n  - {name: a, use_target: b}\n  - {name: b, use_target: a}\n",
            &[],
        )
        .unwrap_err();
        assert!(err.iter().any(|d| d.message.contains("loops")), "{err:?}");
    }

    #[test]
    fn camel_case_and_unknown_fallbacks_are_errors() {
        let err = targets(
            "targets:\n  - {name: a, provider: mock, maxRetries: 3}\n",
            &[],
        )
        .unwrap_err();
        assert!(
            err.iter().any(|d| d.message.contains("use `max_retries`")),
            "{err:?}"
        );
        let t = targets(
            "targets:\n  - {name: a, provider: mock, fallback_targets: [nope]}\n",
            &[],
        )
        .unwrap();
        assert!(t.select("a").unwrap_err().contains("falls back to `nope`"));
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let r = Retry {
            max_retries: 5,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            factor: 2.0,
        };
        let delays: Vec<u128> = (0..4).map(|n| r.delay(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 350, 350]);
    }
}
