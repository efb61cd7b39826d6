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

pub mod cli;
pub mod openai;
pub mod prompt;
pub mod replay;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::diag::{Diagnostic, Diagnostics};
use crate::failure::FailureClass;
use crate::suite::TestCase;
use crate::suite::env::Env;
use crate::suite::load::{kind, parse_yaml};
use crate::suite::source_map::{KeyPath, SourceMap};

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
    /// A command.
    Cli(cli::CliConfig),
    /// An OpenAI-compatible endpoint.
    OpenAi(openai::OpenAiConfig),
    /// Recorded outputs.
    Replay(replay::ReplayConfig),
    /// The outputs of an earlier run, by (test id, trial): `evalhost regrade`.
    Recorded(std::sync::Arc<std::collections::HashMap<(String, u32), TargetOutput>>),
    /// A provider this version of evalhost does not run.
    Unsupported(String),
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
}

/// One tool call in a target's output.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolCall {
    /// Id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name.
    pub tool: String,
    /// Input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Duration in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// One message of a target's output.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OutputMessage {
    /// Role.
    pub role: String,
    /// Text content.
    pub content: String,
    /// Structured content, when not plain text.
    pub content_json: Option<Value>,
    /// Tool calls.
    pub tool_calls: Vec<ToolCall>,
    /// Participant name.
    pub name: Option<String>,
}

/// Tokens a target reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
    /// Cached prompt tokens.
    #[serde(default)]
    pub cached: u64,
    /// Reasoning tokens.
    #[serde(default)]
    pub reasoning: u64,
}

/// How many model calls a target made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmCalls {
    /// The number of assistant messages (AgentV's rule), when there are
    /// messages.
    #[default]
    FromMessages,
    /// Reported by the agent CLI.
    Known(u32),
    /// Not reported (Codex, Claude Code's json result).
    Unknown,
}

/// A target's output for one test.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TargetOutput {
    /// The candidate: text of the last assistant message.
    pub text: String,
    /// Every message produced.
    pub messages: Vec<OutputMessage>,
    /// Time the target took, in milliseconds, when it reports one.
    pub duration_ms: Option<u64>,
    /// Tokens used.
    pub token_usage: Option<TokenUsage>,
    /// Cost in US dollars.
    pub cost_usd: Option<f64>,
    /// The target that answered, when a fallback did.
    pub target_used: Option<String>,
    /// How many model calls it made.
    #[serde(default)]
    pub llm_calls: LlmCalls,
}

impl TargetOutput {
    /// One assistant message with `text`.
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        Self {
            messages: vec![OutputMessage {
                role: "assistant".into(),
                content: text.clone(),
                ..OutputMessage::default()
            }],
            text,
            ..Self::default()
        }
    }

    /// The number of model calls, when known.
    pub fn llm_call_count(&self) -> Option<u32> {
        match self.llm_calls {
            LlmCalls::Known(n) => Some(n),
            LlmCalls::Unknown => None,
            LlmCalls::FromMessages if self.messages.is_empty() => None,
            LlmCalls::FromMessages => Some(
                u32::try_from(
                    self.messages
                        .iter()
                        .filter(|m| m.role == "assistant")
                        .count(),
                )
                .unwrap_or(u32::MAX),
            ),
        }
    }

    /// The candidate from the messages: the last assistant message's text.
    pub fn with_candidate_from_messages(mut self) -> Self {
        self.text = self
            .messages
            .iter()
            .rev()
            .find(|m| m.role == "assistant")
            .map(|m| m.content.clone())
            .unwrap_or_default();
        self
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
}

impl TargetFailure {
    /// A retryable target failure.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            class: FailureClass::Target,
            message: message.into(),
            retryable: true,
            retry_after: None,
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
}

/// The first targets file found walking up from `start`.
pub fn find_targets_file(start: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
    for dir in start.ancestors() {
        for candidate in CANDIDATES {
            let path = dir.join(candidate);
            if path.is_file() {
                return Some(path);
            }
        }
    }
    None
}

/// Reads a targets file: `${{ VAR }}` from the environment (and `.env`
/// files), literal secrets refused, `use_target` resolved.
pub fn load_targets(path: &Path, env: &Env) -> Result<Targets, Diagnostics> {
    let mut diags = Diagnostics::default();
    // A regular file of at most 32 MiB: not a FIFO or `/dev/zero` that a
    // run directory's `run.json` could name.
    let text = match crate::safe_fs::read_regular_capped(path, 32 << 20) {
        Ok(t) => t,
        Err(err) => {
            diags.push(Diagnostic::error(
                path,
                format!("cannot read the targets file: {err}"),
            ));
            return Err(diags);
        }
    };
    let mut root = match parse_yaml(&text) {
        Ok(v) => v,
        Err(err) => {
            let pos = err.location().map(|l| crate::suite::source_map::Pos {
                line: l.line(),
                col: l.column(),
            });
            diags.push(Diagnostic::error(path, format!("invalid YAML: {err}")).at(pos));
            return Err(diags);
        }
    };
    let map = SourceMap::build(&text);
    let error = |message: String, key: KeyPath| {
        Diagnostic::error(path, message)
            .at(map.locate(&key))
            .key(key)
    };
    let top = KeyPath::default();
    // Secrets must be references: check before interpolating.
    if let Some(Value::Array(items)) = root.get("targets") {
        for (i, item) in items.iter().enumerate() {
            for field in SECRET_FIELDS {
                if let Some(Value::String(v)) = item.get(*field)
                    && !is_env_reference(v)
                {
                    diags.push(
                        error(
                            format!("`{field}` is written literally; secrets must come from the environment"),
                            top.key("targets").index(i).key(field),
                        )
                        .hint(format!("write `{field}: ${{{{ OPENAI_API_KEY }}}}` and export the variable (or put it in .env)")),
                    );
                }
            }
        }
    }
    let missing = env.interpolate(&mut root);
    let Some(Value::Array(items)) = root.get("targets") else {
        diags.push(
            error("the targets file must have a `targets` list".into(), top).hint(
                "targets:\n    - name: default\n      provider: mock\n      response: \"...\"",
            ),
        );
        return Err(diags);
    };
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut raw: Vec<(String, Map<String, Value>, KeyPath)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = top.key("targets").index(i);
        let Value::Object(entry) = item else {
            diags.push(error(
                format!("a target must be a mapping, got {}", kind(item)),
                at,
            ));
            continue;
        };
        let Some(Value::String(name)) = entry.get("name") else {
            diags.push(error("the target has no `name`".into(), at));
            continue;
        };
        for key in entry.keys() {
            if key.chars().any(|c| c.is_ascii_uppercase()) {
                let snake: String = key
                    .chars()
                    .flat_map(|c| {
                        if c.is_ascii_uppercase() {
                            vec!['_', c.to_ascii_lowercase()]
                        } else {
                            vec![c]
                        }
                    })
                    .collect();
                diags.push(error(
                    format!(
                        "camelCase field `{key}` is not supported in targets files; use `{snake}`"
                    ),
                    at.key(key),
                ));
            }
        }
        raw.push((name.clone(), entry.clone(), at));
    }
    let mut targets = Vec::new();
    for (name, entry, at) in &raw {
        // `use_target` delegates to another entry (up to 5 deep): the
        // delegate's provider with this entry's name.
        let mut effective = entry.clone();
        let mut seen = vec![name.clone()];
        while let Some(Value::String(next)) = effective.get("use_target").cloned() {
            if next.is_empty() {
                diags.push(error(
                    format!(
                        "target `{name}` delegates to an empty `use_target` (is the variable set?)"
                    ),
                    at.key("use_target"),
                ));
                break;
            }
            if seen.contains(&next) || seen.len() > 5 {
                diags.push(error(
                    format!(
                        "`use_target` delegation loops or is deeper than 5: {} -> {next}",
                        seen.join(" -> ")
                    ),
                    at.key("use_target"),
                ));
                break;
            }
            let Some((_, delegate, _)) = raw.iter().find(|(n, _, _)| *n == next) else {
                diags.push(error(
                    format!("target `{name}` delegates to `{next}`, which is not in the file"),
                    at.key("use_target"),
                ));
                break;
            };
            seen.push(next.clone());
            let mut merged = delegate.clone();
            for (k, v) in entry {
                if k != "use_target" && k != "provider" {
                    merged.insert(k.clone(), v.clone());
                }
            }
            merged.remove("use_target");
            if let Some(Value::String(_)) = delegate.get("use_target") {
                merged.insert("use_target".into(), delegate["use_target"].clone());
            }
            effective = merged;
        }
        match parse_target(name, &effective, &base_dir) {
            Ok(t) => targets.push(t),
            Err((key, message)) => diags.push(error(message, at.key(&key))),
        }
    }
    for name in missing {
        diags.push(Diagnostic::warning(
            path,
            format!("environment variable `{name}` is not set"),
        ));
    }
    if diags.has_errors() {
        return Err(diags);
    }
    Ok(Targets {
        file: Some(path.to_path_buf()),
        targets,
    })
}

fn is_env_reference(value: &str) -> bool {
    let v = value.trim();
    v.starts_with("${{") && v.ends_with("}}")
}

/// The longest timeout or delay a targets file may set (a week): a larger
/// number is a mistake, and past about 10^10 s it no longer fits a clock.
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// A number of seconds from a file: finite, positive and at most
/// [`MAX_SECONDS`], else a config error on `key`.
pub fn seconds_field(key: &str, secs: f64) -> Result<Duration, (String, String)> {
    if secs.is_finite() && secs > 0.0 && secs <= MAX_SECONDS {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err((
            key.to_owned(),
            format!(
                "`{key}` must be a number of seconds above 0 and at most {MAX_SECONDS} (a week), got {secs}"
            ),
        ))
    }
}

/// A wait a server asked for, in seconds: NaN or negative is no wait, and
/// anything longer than `max` is `max`. Never panics.
pub fn clamp_seconds(secs: f64, max: Duration) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        Duration::ZERO
    } else if secs >= max.as_secs_f64() {
        max
    } else {
        Duration::from_secs_f64(secs)
    }
}

fn get_u64(entry: &Map<String, Value>, key: &str) -> Result<Option<u64>, (String, String)> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
        Some(Value::String(s)) if s.parse::<u64>().is_ok() => Ok(s.parse().ok()),
        Some(other) => Err((
            key.into(),
            format!(
                "`{key}` must be a non-negative integer, got {}",
                kind(other)
            ),
        )),
    }
}

fn get_f64(entry: &Map<String, Value>, key: &str) -> Result<Option<f64>, (String, String)> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(Value::String(s)) if s.parse::<f64>().is_ok() => Ok(s.parse().ok()),
        Some(other) => Err((
            key.into(),
            format!("`{key}` must be a number, got {}", kind(other)),
        )),
    }
}

fn get_str(entry: &Map<String, Value>, key: &str) -> Result<Option<String>, (String, String)> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err((
            key.into(),
            format!("`{key}` must be a string, got {}", kind(other)),
        )),
    }
}

fn parse_target(
    name: &str,
    entry: &Map<String, Value>,
    base_dir: &Path,
) -> Result<Target, (String, String)> {
    let provider_name = get_str(entry, "provider")?.ok_or_else(|| {
        (
            "provider".to_owned(),
            format!("target `{name}` has no `provider` (or `use_target`)"),
        )
    })?;
    let provider = match provider_name.as_str() {
        "mock" => Provider::Mock {
            response: get_str(entry, "response")?
                .unwrap_or_else(|| MOCK_DEFAULT_RESPONSE.to_owned()),
            delay_ms: match get_u64(entry, "delay_ms")? {
                None => 0,
                Some(ms) => {
                    seconds_field("delay_ms", ms.max(1) as f64 / 1000.0)?;
                    ms
                }
            },
        },
        "cli" => Provider::Cli(cli::CliConfig::parse(entry, base_dir)?),
        "openai" | "azure" | "azure-openai" | "openrouter" | "vllm" | "ollama" => {
            Provider::OpenAi(openai::OpenAiConfig::parse(&provider_name, entry)?)
        }
        "replay" => Provider::Replay(replay::ReplayConfig::parse(entry, base_dir)?),
        other => Provider::Unsupported(other.to_owned()),
    };
    let default = Retry::default();
    let retry = Retry {
        max_retries: get_u64(entry, "max_retries")?.map_or(default.max_retries, |n| n as u32),
        initial_delay: match get_u64(entry, "retry_initial_delay_ms")? {
            None => default.initial_delay,
            Some(ms) => seconds_field("retry_initial_delay_ms", ms as f64 / 1000.0)?,
        },
        max_delay: match get_u64(entry, "retry_max_delay_ms")? {
            None => default.max_delay,
            Some(ms) => seconds_field("retry_max_delay_ms", ms as f64 / 1000.0)?,
        },
        factor: match get_f64(entry, "retry_backoff_factor")? {
            None => default.factor,
            Some(f) if f.is_finite() && (1.0..=100.0).contains(&f) => f,
            Some(f) => {
                return Err((
                    "retry_backoff_factor".into(),
                    format!("`retry_backoff_factor` must be between 1 and 100, got {f}"),
                ));
            }
        },
    };
    if retry.max_retries > 100 {
        return Err((
            "max_retries".into(),
            format!(
                "`max_retries` must be at most 100, got {}",
                retry.max_retries
            ),
        ));
    }
    let fallback_targets = match entry.get("fallback_targets") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(other) => {
            return Err((
                "fallback_targets".into(),
                format!(
                    "`fallback_targets` must be a list of names, got {}",
                    kind(other)
                ),
            ));
        }
    };
    Ok(Target {
        name: name.to_owned(),
        provider,
        grader_target: get_str(entry, "grader_target")?.or(get_str(entry, "judge_target")?),
        fallback_targets,
        retry,
        base_dir: base_dir.to_path_buf(),
    })
}

impl Targets {
    /// The target named `name`, checked to be runnable, with its fallbacks.
    pub fn select(&self, name: &str) -> Result<&Target, String> {
        let Some(target) = self.targets.iter().find(|t| t.name == name) else {
            let available: Vec<&str> = self.targets.iter().map(|t| t.name.as_str()).collect();
            return Err(match &self.file {
                Some(file) => format!(
                    "target `{name}` is not in {} (available: {})",
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
        if let Provider::Unsupported(p) = &target.provider {
            return Err(format!(
                "target `{name}` uses provider `{p}`, which this version of evalhost does not run \
                 (supported: mock, cli, openai and compatible endpoints, replay)"
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
    pub fn invoke(
        &self,
        target: &Target,
        test: &TestCase,
        inv: &Invocation<'_>,
    ) -> Result<TargetOutput, TargetFailure> {
        let mut last = match invoke_with_retries(target, test, inv) {
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
            match invoke_with_retries(fallback, test, inv) {
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
                std::thread::sleep(wait);
                attempt += 1;
            }
            Err(failure) => {
                return Err(if attempt > 0 {
                    TargetFailure {
                        message: format!("{} (after {} attempts)", failure.message, attempt + 1),
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
                Some(format!(
                    "openai\u{0}{}\u{0}{}\u{0}{temperature}\u{0}{:?}",
                    c.base_url, c.model, c.max_output_tokens
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
            Provider::Cli(config) => cli::invoke(config, self, test, inv),
            Provider::OpenAi(config) => openai::invoke(config, test, inv),
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
