//! The keys a target entry may have, by provider: AgentV 4.42.4's lists
//! (its `targets-validator.ts` and the `cli` schema) and evalhost's own
//! additions, and which of AgentV's keys evalhost reads but does not act
//! on. A key in no list is a typo (an error naming the nearest key) or a
//! setting no tool knows (a warning, as AgentV gives: it is ignored).

/// Keys every entry may have.
const BASE: &[&str] = &[
    "name",
    "provider",
    "grader_target",
    "judge_target",
    "workers",
    "$schema",
    "use_target",
    "provider_batching",
    "subagent_mode_allowed",
    "fallback_targets",
    "isolate",
];

/// AgentV's retry tuning, read by every provider evalhost runs.
const RETRY: &[&str] = &[
    "max_retries",
    "retry_initial_delay_ms",
    "retry_max_delay_ms",
    "retry_backoff_factor",
    "retry_status_codes",
];

const MOCK: &[&str] = &["response", "trace", "delay_ms"];

const CLI: &[&str] = &[
    "command",
    "files_format",
    "attachments_format",
    "cwd",
    "timeout_seconds",
    "healthcheck",
    "verbose",
    "cli_verbose",
    "keep_temp_files",
    "keep_output_files",
    "trace_format",
];

const OPENAI: &[&str] = &[
    "endpoint",
    "base_url",
    "api_key",
    "model",
    "deployment",
    "variant",
    "api_format",
    "temperature",
    "max_output_tokens",
    "timeout_seconds",
    "pricing",
    // Sent with every call, over the key's header of the same name.
    "headers",
    // evalhost's: more request fields, and promptfoo's output rules.
    "request_params",
    "output_style",
];

const AZURE: &[&str] = &[
    "endpoint",
    "resource",
    "api_key",
    "deployment",
    "model",
    "version",
    "api_version",
    "temperature",
    "max_output_tokens",
    "timeout_seconds",
];

const ANTHROPIC: &[&str] = &[
    "api_key",
    "model",
    "deployment",
    "variant",
    "temperature",
    "max_output_tokens",
    "thinking_budget",
    "timeout_seconds",
    "base_url",
    "endpoint",
    // evalhost's: promptfoo's request (`output_style: promptfoo`) and its
    // request fields.
    "request_params",
    "output_style",
    "show_thinking",
    "pricing",
];

const GEMINI: &[&str] = &[
    "api_key",
    "model",
    "deployment",
    "variant",
    "temperature",
    "max_output_tokens",
    "timeout_seconds",
    "base_url",
    "endpoint",
];

const OPENROUTER: &[&str] = &[
    "api_key",
    "model",
    "deployment",
    "variant",
    "temperature",
    "max_output_tokens",
    "timeout_seconds",
    "pricing",
    // evalhost reads these for every OpenAI-compatible endpoint.
    "base_url",
    "endpoint",
];

const CLAUDE: &[&str] = &[
    "variant",
    "executable",
    "command",
    "binary",
    "model",
    "cwd",
    "timeout_seconds",
    "max_turns",
    "bypass_permissions",
    "system_prompt",
    "max_budget_usd",
    "log_dir",
    "log_directory",
    "log_format",
    "log_output_format",
    "stream_log",
];

const CODEX: &[&str] = &[
    "executable",
    "command",
    "binary",
    "model",
    "model_reasoning_effort",
    "cwd",
    "timeout_seconds",
    "system_prompt",
    "args",
    "arguments",
    "log_dir",
    "log_directory",
    "stream_log",
];

const PI_CLI: &[&str] = &[
    "executable",
    "command",
    "binary",
    "subprovider",
    "model",
    "pi_model",
    "api_key",
    "base_url",
    "endpoint",
    "tools",
    "pi_tools",
    "thinking",
    "pi_thinking",
    "args",
    "arguments",
    "cwd",
    "timeout_seconds",
    "system_prompt",
    "log_dir",
    "log_directory",
    "log_format",
    "stream_log",
];

const COPILOT: &[&str] = &[
    "executable",
    "command",
    "binary",
    "model",
    "args",
    "arguments",
    "cwd",
    "timeout_seconds",
    "system_prompt",
    "log_dir",
    "log_directory",
    "log_format",
    "stream_log",
];

const COPILOT_SDK: &[&str] = &[
    "cli_url",
    "cli_path",
    "args",
    "arguments",
    "github_token",
    "model",
    "cwd",
    "timeout_seconds",
    "log_dir",
    "log_directory",
    "log_format",
    "stream_log",
    "system_prompt",
    "subprovider",
    "base_url",
    "api_key",
    "bearer_token",
    "api_version",
    "api_format",
];

const VSCODE: &[&str] = &[
    "executable",
    "wait",
    "dry_run",
    "subagent_root",
    "timeout_seconds",
];

const COPILOT_LOG: &[&str] = &[
    "session_dir",
    "session_id",
    "session_state_dir",
    "discover",
    "cwd",
];

const AGENTV: &[&str] = &["model", "temperature"];

const REPLAY: &[&str] = &[
    "fixtures",
    "execution_traces",
    "transcripts",
    "source_target",
    "suite",
    "eval_path",
    "variant",
    "target",
];

/// AgentV keys evalhost accepts but does not act on, and what that means
/// for a run: a warning says so instead of dropping them quietly. Keys
/// that change nothing a run reports (log verbosity, worker counts) are
/// not listed.
const NOT_ACTED_ON: &[(&str, &str)] = &[
    (
        "provider_batching",
        "evalhost invokes the command once per test",
    ),
    (
        "trace",
        "the mock answers with `response` only; trace graders see no tool calls",
    ),
    (
        "retry_status_codes",
        "evalhost retries every failed attempt",
    ),
    (
        "source_target",
        "fixtures are matched by test id and the run's target",
    ),
    ("suite", "fixtures are matched by test id"),
    ("eval_path", "fixtures are matched by test id"),
    (
        "max_budget_usd",
        "AgentV 4.42.4's claude provider does not pass it to Claude Code either; the run is not capped",
    ),
    (
        "args",
        "AgentV 4.42.4's codex provider does not pass them to Codex either",
    ),
    (
        "arguments",
        "AgentV 4.42.4's codex provider does not pass them to Codex either",
    ),
];

/// The keys `provider` entries may have beyond [`BASE`], or `None` when
/// evalhost does not know the provider's keys (it does not run it, or it
/// is a discovered one).
fn provider_keys(provider: &str) -> Option<Vec<&'static str>> {
    let own: &[&str] = match provider {
        "mock" => MOCK,
        "cli" => CLI,
        "claude" | "claude-code" | "claude-cli" | "cc-mirror" | "claude-sdk" => CLAUDE,
        "codex" | "codex-cli" => CODEX,
        "pi-cli" | "pi" | "pi-coding-agent" => PI_CLI,
        "copilot-log" => COPILOT_LOG,
        "copilot" | "copilot-cli" => COPILOT,
        "copilot-sdk" | "copilot_sdk" => COPILOT_SDK,
        "vscode" | "vscode-insiders" => VSCODE,
        "openai" | "vllm" | "ollama" => OPENAI,
        "azure" | "azure-openai" => AZURE,
        "anthropic" => ANTHROPIC,
        "gemini" | "google" | "google-gemini" => GEMINI,
        "openrouter" => OPENROUTER,
        "replay" => REPLAY,
        "agentv" => AGENTV,
        _ => return None,
    };
    let mut keys = own.to_vec();
    if provider != "replay" {
        keys.extend_from_slice(RETRY);
    }
    Some(keys)
}

/// One problem with a key of a target entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyProblem {
    /// The key as written.
    pub key: String,
    /// True when it stops the run (a typo of a known key).
    pub error: bool,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

/// The problems with the keys of `entry`, a `provider` target named `name`.
pub fn check(
    name: &str,
    provider: &str,
    entry: &serde_json::Map<String, serde_json::Value>,
) -> Vec<KeyProblem> {
    let Some(own) = provider_keys(provider) else {
        return Vec::new();
    };
    let known = || BASE.iter().chain(own.iter()).copied();
    let mut out = Vec::new();
    for key in entry.keys() {
        // camelCase keys have their own error.
        if key.chars().any(|c| c.is_ascii_uppercase()) {
            continue;
        }
        if known().any(|k| k == key) {
            if let Some((_, effect)) = NOT_ACTED_ON.iter().find(|(k, _)| k == key)
                && !(key == "provider_batching"
                    && entry.get(key) == Some(&serde_json::json!(false)))
                // pi passes its `args` on; only codex drops them.
                && !(matches!(
                    provider,
                    "pi-cli"
                        | "pi"
                        | "pi-coding-agent"
                        | "copilot"
                        | "copilot-cli"
                        | "copilot-sdk"
                        | "copilot_sdk"
                )
                    && matches!(key.as_str(), "args" | "arguments"))
                // The SDK passes the budget on; the CLI provider does not.
                && !(provider == "claude-sdk" && key == "max_budget_usd")
                // A transcript replay matches by it.
                && !(key == "source_target" && entry.contains_key("transcripts"))
            {
                out.push(KeyProblem {
                    key: key.clone(),
                    error: false,
                    message: format!(
                        "`{key}` on target `{name}` is an AgentV setting evalhost does not act on: {effect}"
                    ),
                    hint: Some("see docs/agentv-differences.md".into()),
                });
            }
            continue;
        }
        match evalhost_suite::diag::typo_of(key, known()) {
            Some(near) => out.push(KeyProblem {
                key: key.clone(),
                error: true,
                message: format!(
                    "unknown key `{key}` on the `{provider}` target `{name}`; did you mean `{near}`?"
                ),
                hint: None,
            }),
            None => out.push(KeyProblem {
                key: key.clone(),
                error: false,
                message: format!(
                    "unknown setting `{key}` for the `{provider}` target `{name}`; it is ignored"
                ),
                hint: Some(format!("keys of a `{provider}` target: {}", own.join(", "))),
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(provider: &str, json: &str) -> Vec<KeyProblem> {
        check("t", provider, &serde_json::from_str(json).unwrap())
    }

    #[test]
    fn a_misspelled_key_is_an_error_naming_the_key_it_meant() {
        let p = problems(
            "cli",
            r#"{"name": "t", "provider": "cli", "command": "x", "timout_seconds": 5}"#,
        );
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].error);
        assert!(
            p[0].message.contains("did you mean `timeout_seconds`"),
            "{}",
            p[0].message
        );
        let p = problems(
            "openai",
            r#"{"name": "t", "provider": "openai", "modle": "x"}"#,
        );
        assert!(p[0].error && p[0].message.contains("`model`"), "{p:?}");
    }

    #[test]
    fn an_unknown_setting_warns_and_known_ones_pass() {
        let p = problems(
            "mock",
            r#"{"name": "t", "provider": "mock", "response": "x", "colour": "red"}"#,
        );
        assert_eq!(p.len(), 1);
        assert!(!p[0].error);
        assert!(p[0].message.contains("`colour`") && p[0].message.contains("ignored"));
        assert!(problems(
            "cli",
            r#"{"name": "t", "provider": "cli", "command": "x", "cwd": ".", "healthcheck": {}, "grader_target": "j", "max_retries": 1, "verbose": true}"#
        )
        .is_empty());
    }

    #[test]
    fn agentv_settings_without_effect_say_so() {
        let p = problems("mock", r#"{"name": "t", "provider": "mock", "trace": []}"#);
        assert_eq!(p.len(), 1);
        assert!(
            !p[0].error && p[0].message.contains("does not act on"),
            "{p:?}"
        );
        assert!(
            problems(
                "cli",
                r#"{"name": "t", "provider": "cli", "command": "x", "provider_batching": false}"#
            )
            .is_empty()
        );
    }

    #[test]
    fn providers_evalhost_does_not_run_are_not_second_guessed() {
        assert!(
            problems(
                "transcript",
                r#"{"name": "t", "provider": "transcript", "anything": 1}"#
            )
            .is_empty()
        );
        // One it runs is: a near miss of a known key is an error.
        assert!(
            problems(
                "claude",
                r#"{"name": "t", "provider": "claude", "max_turn": 1}"#
            )
            .iter()
            .any(|p| p.error)
        );
    }
}
