//! The trace normalizer: what agent CLIs write, read into one trace — the
//! output messages with their tool calls, token usage, cost, duration and
//! the number of model calls — that every grader plugin sees the same way.
//!
//! Formats (see `docs/traces.md` for the field-by-field mapping):
//!
//! - `agentv`: AgentV's output-file schema, a JSON object with `output`
//!   messages (with `tool_calls`) or `text`, plus `token_usage`, `cost_usd`,
//!   `duration_ms`. Anything that is not such an object is the answer text.
//! - `claude-code`: Claude Code's `--output-format stream-json --verbose`
//!   (NDJSON), a JSON array of the same messages, or `--output-format json`
//!   (the `result` object alone: no tool calls).
//! - `codex`: `codex exec --json` JSONL events (`thread.started`,
//!   `item.completed`, `turn.completed`, ...).
//! - `pi`: the pi coding agent's `--mode json` events (`agent_end` with the
//!   messages, `turn_end`, `tool_execution_*`).
//! - `copilot-log`: GitHub Copilot CLI's session transcript (`events.jsonl`).
//! - `text`: the file is the answer.
//!
//! `auto` (the default) tells them apart by their first JSON lines.

use std::collections::HashMap;
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::results::output::{LlmCalls, OutputMessage, TargetOutput, TokenUsage, ToolCall};

mod claude_code;
use claude_code::*;

mod codex_exec;
use codex_exec::*;

mod pi_json;
use pi_json::*;

mod copilot_log;
use copilot_log::*;

/// A trace format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TraceFormat {
    /// Detect the format.
    #[default]
    Auto,
    /// AgentV's output-file schema.
    AgentV,
    /// Claude Code stream-json or json.
    ClaudeCode,
    /// Codex `exec --json` events.
    Codex,
    /// The pi coding agent's `--mode json` events.
    Pi,
    /// GitHub Copilot CLI's session transcript (`events.jsonl`).
    CopilotLog,
    /// Plain text.
    Text,
    /// Plain text with ANSI escapes removed and surrounding whitespace
    /// trimmed, as promptfoo reads an `exec:` provider's stdout.
    TextTrimmed,
}

impl TraceFormat {
    /// The names accepted in a targets file and on the command line.
    pub const NAMES: &'static [&'static str] = &[
        "auto",
        "agentv",
        "claude-code",
        "codex",
        "pi",
        "copilot-log",
        "text",
        "text-trimmed",
    ];

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::AgentV => "agentv",
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::Pi => "pi",
            Self::CopilotLog => "copilot-log",
            Self::Text => "text",
            Self::TextTrimmed => "text-trimmed",
        }
    }
}

impl FromStr for TraceFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "agentv" => Ok(Self::AgentV),
            "claude-code" | "claude" | "claude-stream-json" => Ok(Self::ClaudeCode),
            "codex" | "codex-jsonl" => Ok(Self::Codex),
            "pi" | "pi-json" => Ok(Self::Pi),
            "copilot-log" | "copilot" => Ok(Self::CopilotLog),
            "text" => Ok(Self::Text),
            "text-trimmed" => Ok(Self::TextTrimmed),
            other => Err(format!(
                "unknown trace format `{other}`; use one of {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// The agent run the trace describes did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TraceError {
    /// What the agent CLI reported.
    pub message: String,
}

fn fail(message: impl Into<String>) -> TraceError {
    TraceError {
        message: message.into(),
    }
}

/// The JSON values of `text`: one document, or one per line (lines that
/// are not JSON — banners, warnings — are skipped).
fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            (l.starts_with('{')).then(|| serde_json::from_str(l).ok())?
        })
        .collect()
}

fn type_of(v: &Value) -> &str {
    v.get("type").and_then(Value::as_str).unwrap_or("")
}

fn is_claude(v: &Value) -> bool {
    matches!(
        type_of(v),
        "system" | "assistant" | "user" | "result" | "stream_event"
    ) && (v.get("session_id").is_some() || v.get("message").is_some() || v.get("subtype").is_some())
}

fn is_codex(v: &Value) -> bool {
    let t = type_of(v);
    t.starts_with("thread.") || t.starts_with("turn.") || t.starts_with("item.")
}

/// The format of `text`, when `auto`.
pub fn detect(text: &str) -> TraceFormat {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(trimmed)
            && items.iter().any(is_claude)
        {
            return TraceFormat::ClaudeCode;
        }
        return TraceFormat::AgentV;
    }
    if let Ok(doc @ Value::Object(_)) = serde_json::from_str::<Value>(trimmed) {
        return if is_claude(&doc) && type_of(&doc) == "result" {
            TraceFormat::ClaudeCode
        } else {
            TraceFormat::AgentV
        };
    }
    for line in json_lines(text).iter().take(20) {
        if is_codex(line) {
            return TraceFormat::Codex;
        }
        if matches!(
            type_of(line),
            "agent_start" | "agent_end" | "turn_end" | "message_end" | "tool_execution_start"
        ) {
            return TraceFormat::Pi;
        }
        if type_of(line).starts_with("session.")
            || matches!(type_of(line), "user.message" | "assistant.message")
        {
            return TraceFormat::CopilotLog;
        }
        if is_claude(line) {
            return TraceFormat::ClaudeCode;
        }
    }
    TraceFormat::AgentV
}

/// Reads `text` in `format` into a target output. `Err` when the trace says
/// the agent run failed (a Claude Code error result, a failed Codex turn, a
/// stream cut short).
pub fn normalize(text: &str, format: TraceFormat) -> Result<TargetOutput, TraceError> {
    match format {
        TraceFormat::Auto => normalize(text, detect(text)),
        TraceFormat::AgentV => Ok(agentv(text)),
        TraceFormat::Text => Ok(TargetOutput::text(text)),
        TraceFormat::TextTrimmed => Ok(TargetOutput::text(strip_ansi(text).trim())),
        TraceFormat::ClaudeCode => claude(text),
        TraceFormat::Codex => codex(text),
        TraceFormat::Pi => pi(text),
        TraceFormat::CopilotLog => copilot_log(text),
    }
}

fn tool_call(value: &Value) -> Option<ToolCall> {
    let o = value.as_object()?;
    Some(ToolCall {
        id: o.get("id").and_then(Value::as_str).map(str::to_owned),
        tool: o
            .get("tool")
            .or(o.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        input: o.get("input").or(o.get("arguments")).cloned(),
        output: o.get("output").cloned(),
        status: o.get("status").and_then(Value::as_str).map(str::to_owned),
        duration_ms: o
            .get("duration_ms")
            .and_then(Value::as_f64)
            .map(|d| d as u64),
    })
}

/// Text of message content: a string, or the `text` blocks of a list.
pub fn content_text(content: Option<&Value>) -> (String, Option<Value>) {
    match content {
        None | Some(Value::Null) => (String::new(), None),
        Some(Value::String(s)) => (s.clone(), None),
        Some(Value::Array(blocks)) => {
            let text = blocks
                .iter()
                .filter_map(|b| match b {
                    Value::String(s) => Some(s.clone()),
                    Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("text") => o
                        .get("text")
                        .or(o.get("value"))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            (text, content.cloned())
        }
        Some(other) => (other.to_string(), Some(other.clone())),
    }
}

/// AgentV's output-file schema (reference §6.4).
fn agentv(text: &str) -> TargetOutput {
    let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(text) else {
        return TargetOutput::text(text);
    };
    let messages: Vec<OutputMessage> = match doc.get("output").or(doc.get("output_messages")) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|m| {
                let o = m.as_object()?;
                let (content, content_json) = content_text(o.get("content"));
                Some(OutputMessage {
                    role: o
                        .get("role")
                        .and_then(Value::as_str)
                        .unwrap_or("assistant")
                        .to_owned(),
                    content,
                    content_json,
                    tool_calls: o
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .map(|calls| calls.iter().filter_map(tool_call).collect())
                        .unwrap_or_default(),
                    name: o.get("name").and_then(Value::as_str).map(str::to_owned),
                })
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut output = if !messages.is_empty() {
        TargetOutput {
            messages,
            ..TargetOutput::default()
        }
        .with_candidate_from_messages()
    } else {
        match doc.get("text") {
            Some(Value::String(t)) => TargetOutput::text(t.clone()),
            Some(other) if !other.is_null() => TargetOutput::text(other.to_string()),
            _ => return TargetOutput::text(text),
        }
    };
    output.token_usage = doc.get("token_usage").and_then(|t| {
        Some(TokenUsage {
            input: t.get("input").and_then(Value::as_u64)?,
            output: t.get("output").and_then(Value::as_u64)?,
            cached: t.get("cached").and_then(Value::as_u64).unwrap_or(0),
            reasoning: t.get("reasoning").and_then(Value::as_u64).unwrap_or(0),
        })
    });
    output.cost_usd = doc
        .get("cost_usd")
        .and_then(Value::as_f64)
        .filter(|c| *c >= 0.0);
    output.duration_ms = doc
        .get("duration_ms")
        .and_then(Value::as_f64)
        .filter(|d| *d >= 0.0)
        .map(|d| d as u64);
    output
}

fn u64_of(o: &Value, key: &str) -> u64 {
    o.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// A target output as AgentV's output-file JSON (what `evalhost trace`
/// prints), plus `llm_calls`.
pub fn to_agentv(output: &TargetOutput) -> Value {
    let mut doc = Map::new();
    let messages: Vec<Value> = output
        .messages
        .iter()
        .map(|m| {
            let mut o = Map::new();
            o.insert("role".into(), Value::String(m.role.clone()));
            if let Some(name) = &m.name {
                o.insert("name".into(), Value::String(name.clone()));
            }
            o.insert(
                "content".into(),
                m.content_json
                    .clone()
                    .unwrap_or_else(|| Value::String(m.content.clone())),
            );
            if !m.tool_calls.is_empty() {
                o.insert(
                    "tool_calls".into(),
                    serde_json::to_value(&m.tool_calls).unwrap_or_default(),
                );
            }
            Value::Object(o)
        })
        .collect();
    if messages.is_empty() {
        doc.insert("text".into(), Value::String(output.text.clone()));
    } else {
        doc.insert("output".into(), Value::Array(messages));
    }
    if let Some(t) = output.token_usage {
        doc.insert(
            "token_usage".into(),
            serde_json::to_value(t).unwrap_or_default(),
        );
    }
    if let Some(c) = output.cost_usd {
        doc.insert("cost_usd".into(), c.into());
    }
    if let Some(d) = output.duration_ms {
        doc.insert("duration_ms".into(), d.into());
    }
    doc.insert(
        "llm_calls".into(),
        output.llm_call_count().map_or(Value::Null, Value::from),
    );
    Value::Object(doc)
}

/// `text` without ANSI escape sequences (promptfoo's
/// `/\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])/g`).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some('[') => {
                chars.next();
                // Parameter bytes, intermediate bytes, one final byte.
                while chars.peek().is_some_and(|c| ('0'..='?').contains(c)) {
                    chars.next();
                }
                while chars.peek().is_some_and(|c| (' '..='/').contains(c)) {
                    chars.next();
                }
                if chars.peek().is_some_and(|c| ('@'..='~').contains(c)) {
                    chars.next();
                } else {
                    out.push('\x1b');
                    out.push('[');
                }
            }
            Some(n) if ('@'..='Z').contains(&n) || ('\\'..='_').contains(&n) => {
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_detected_by_their_lines() {
        assert_eq!(detect("{\"text\": \"hi\"}"), TraceFormat::AgentV);
        assert_eq!(detect("plain words"), TraceFormat::AgentV);
        assert_eq!(
            detect(
                "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"x\",\"session_id\":\"s\"}"
            ),
            TraceFormat::ClaudeCode
        );
        assert_eq!(
            detect("banner\n{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\n"),
            TraceFormat::ClaudeCode
        );
        assert_eq!(
            detect(
                "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.started\"}\n"
            ),
            TraceFormat::Codex
        );
        assert_eq!(
            detect("[{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}]"),
            TraceFormat::ClaudeCode
        );
    }

    #[test]
    fn claude_json_result_alone_has_no_trace() {
        let out = normalize(
            r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":900,"result":"Paris","session_id":"s","total_cost_usd":0.01,"usage":{"input_tokens":5,"output_tokens":2,"cache_read_input_tokens":10}}"#,
            TraceFormat::Auto,
        )
        .unwrap();
        assert_eq!(out.text, "Paris");
        assert!(out.messages.is_empty());
        assert_eq!(out.llm_calls, LlmCalls::Unknown);
        assert_eq!(
            out.token_usage.map(|t| (t.input, t.output, t.cached)),
            Some((15, 2, 10))
        );
        assert_eq!((out.cost_usd, out.duration_ms), (Some(0.01), Some(900)));
    }

    fn sample(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/traces")
            .join(name);
        std::fs::read_to_string(path).unwrap()
    }

    fn calls(out: &TargetOutput) -> Vec<(String, Option<String>)> {
        out.messages
            .iter()
            .flat_map(|m| &m.tool_calls)
            .map(|c| (c.tool.clone(), c.status.clone()))
            .collect()
    }

    #[test]
    fn claude_stream_json_merges_split_messages_and_takes_totals_from_the_result() {
        let out = normalize(&sample("claude-basic.jsonl"), TraceFormat::Auto).unwrap();
        assert_eq!(
            out.text,
            "The server listens on port 8080 and all 12 tests pass."
        );
        assert_eq!(
            out.messages.len(),
            3,
            "six assistant lines, three API messages"
        );
        assert_eq!(out.llm_call_count(), Some(3));
        assert_eq!(
            calls(&out),
            [
                ("Read".into(), Some("ok".into())),
                ("Bash".into(), Some("ok".into()))
            ]
        );
        let read = &out.messages[0].tool_calls[0];
        assert_eq!(
            read.input,
            Some(serde_json::json!({"file_path": "/work/repo/config.toml"}))
        );
        assert!(
            read.output
                .as_ref()
                .unwrap()
                .as_str()
                .unwrap()
                .contains("port = 8080")
        );
        // Array tool_result content is flattened to text.
        assert!(
            out.messages[1].tool_calls[0]
                .output
                .as_ref()
                .unwrap()
                .as_str()
                .unwrap()
                .contains("12 passed")
        );
        // Totals from the result line (summing the lines would give 20 / 253).
        let t = out.token_usage.unwrap();
        assert_eq!((t.input, t.output, t.cached), (46_562, 245, 44_800));
        assert_eq!(
            (out.cost_usd, out.duration_ms),
            (Some(0.023_713_5), Some(14_523))
        );
    }

    #[test]
    fn claude_subagents_are_tagged_and_never_the_answer() {
        let out = normalize(&sample("claude-subagent.jsonl"), TraceFormat::ClaudeCode).unwrap();
        assert_eq!(out.text, "There is one TODO, in src/main.rs line 10.");
        assert_eq!(out.llm_call_count(), Some(4));
        let grep = out
            .messages
            .iter()
            .find(|m| m.tool_calls.iter().any(|c| c.tool == "Grep"))
            .unwrap();
        assert_eq!(
            grep.name.as_deref(),
            Some("subagent:toolu_01TaskTaskTaskTaskTask01")
        );
        assert_eq!(out.messages.last().unwrap().name, None);
        let t = out.token_usage.unwrap();
        assert_eq!(
            (t.input, t.output, t.cached),
            (29_798, 153, 26_800),
            "modelUsage covers subagents"
        );
        assert_eq!(out.cost_usd, Some(0.015_344));
    }

    #[test]
    fn claude_error_results_fail_the_run() {
        let err = normalize(&sample("claude-error.jsonl"), TraceFormat::Auto).unwrap_err();
        assert_eq!(
            err.message,
            "Claude Code reported error_max_turns: Reached maximum number of turns (2)"
        );
    }

    #[test]
    fn codex_items_become_tool_calls_with_usage_from_the_last_turn() {
        let out = normalize(&sample("codex-basic.jsonl"), TraceFormat::Auto).unwrap();
        assert_eq!(
            out.text,
            "Fixed `parse` to return an empty list for empty input; all 3 tests now pass."
        );
        assert_eq!(
            calls(&out),
            [
                ("Bash".into(), Some("error".into())),
                ("Edit".into(), Some("ok".into())),
                ("Bash".into(), Some("ok".into())),
            ]
        );
        let t = out.token_usage.unwrap();
        assert_eq!(
            (t.input, t.output, t.cached, t.reasoning),
            (24_763, 512, 24_448, 128)
        );
        assert_eq!(
            (out.cost_usd, out.duration_ms, out.llm_call_count()),
            (None, None, None)
        );
        let err = normalize(&sample("codex-failed.jsonl"), TraceFormat::Auto).unwrap_err();
        assert!(
            err.message
                .starts_with("Codex reported a failed turn: stream disconnected"),
            "{err}"
        );
    }

    #[test]
    fn a_cut_short_stream_is_an_error() {
        let err = normalize(
            "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\n",
            TraceFormat::ClaudeCode,
        )
        .unwrap_err();
        assert!(err.message.contains("no `result` line"), "{err}");
        let err = normalize("{\"type\":\"thread.started\"}\n", TraceFormat::Codex).unwrap_err();
        assert!(err.message.contains("no `turn.completed`"), "{err}");
    }

    #[test]
    fn ansi_escapes_are_stripped_as_promptfoo_strips_them() {
        assert_eq!(
            super::strip_ansi("  \x1b[1;32mok\x1b[0m \x1b(B"),
            "  ok \x1b(B"
        );
        assert_eq!(super::strip_ansi("a\x1bMb"), "ab");
    }
}
