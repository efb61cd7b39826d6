//! What a target answered, as results record it: the text, every message
//! with its tool calls, token usage, cost, duration and model calls. Data
//! only: targets produce it, trace readers build it, graders read it.

use serde_json::Value;

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

/// A target attempt that failed and was retried (or handed to a fallback).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Retry {
    /// The target that failed.
    pub target: String,
    /// Which attempt failed, 1-based.
    pub attempt: u32,
    /// Why.
    pub error: String,
    /// How long evalhost waited before the next attempt, in milliseconds
    /// (0 before a fallback).
    pub wait_ms: u64,
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
    /// A bare answer with no transcript (a mock, a command that wrote plain
    /// text): graders see 1, as AgentV counts its one assistant message,
    /// but the row does not claim a model call nobody reported.
    AnswerOnly,
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
    /// Why the model stopped (`stop`, `length`, `tool_calls`, ...), as the
    /// target reported it, unnormalised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The log-probability of each output token, when the target returned
    /// them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<f64>>,
    /// The output as a structured value, when it is one (a transform that
    /// returned an object); `text` is then its JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_json: Option<serde_json::Value>,
    /// What an agent wrote as it ran (its stream, the protocol messages),
    /// kept beside the row as its transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Files the agent wrote outside the workspace (Copilot's session
    /// `files/`), as a unified diff of new files; added after the
    /// workspace's own diff, as AgentV adds them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_changes: Option<String>,
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
            llm_calls: LlmCalls::AnswerOnly,
            ..Self::default()
        }
    }

    /// The number of model calls a result row records: reported by the
    /// target or counted in its transcript, never inferred from a bare
    /// answer.
    pub fn recorded_llm_calls(&self) -> Option<u32> {
        match self.llm_calls {
            LlmCalls::AnswerOnly => None,
            _ => self.llm_call_count(),
        }
    }

    /// The number of model calls, when known.
    pub fn llm_call_count(&self) -> Option<u32> {
        match self.llm_calls {
            LlmCalls::Known(n) => Some(n),
            LlmCalls::Unknown => None,
            LlmCalls::FromMessages | LlmCalls::AnswerOnly if self.messages.is_empty() => None,
            LlmCalls::FromMessages | LlmCalls::AnswerOnly => Some(
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
