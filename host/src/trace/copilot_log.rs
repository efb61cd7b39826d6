//! GitHub Copilot CLI's session transcript (`events.jsonl` under
//! `~/.copilot/session-state/<id>/`), read as AgentV 4.42.4's
//! `parseCopilotEvents` reads it: user and assistant messages (with their
//! tool requests), a `Skill` call per `skill.invoked`, a message per
//! finished tool execution with its result, tokens summed over the models
//! of `session.shutdown`, and the time from `session.start` to it.

use serde_json::Value;

use super::{OutputMessage, TargetOutput, TokenUsage, ToolCall, TraceError, fail};

fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn assistant(content: String, tool_calls: Vec<ToolCall>) -> OutputMessage {
    OutputMessage {
        role: "assistant".into(),
        content,
        content_json: None,
        tool_calls,
        name: None,
    }
}

/// Reads a Copilot session transcript.
pub(super) fn copilot_log(transcript: &str) -> Result<TargetOutput, TraceError> {
    let mut messages: Vec<OutputMessage> = Vec::new();
    let mut running: Vec<(String, String, Option<Value>)> = Vec::new();
    let (mut input, mut output, mut has_usage) = (0u64, 0u64, false);
    let (mut start, mut end): (Option<String>, Option<String>) = (None, None);
    let mut any = false;
    for line in transcript.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(kind) = event["type"].as_str() else {
            continue;
        };
        any = true;
        let data = &event["data"];
        match kind {
            "session.start" => {
                start = event
                    .get("timestamp")
                    .filter(|t| !t.is_null())
                    .or(data.get("startTime"))
                    .map(text);
            }
            "user.message" => messages.push(OutputMessage {
                role: "user".into(),
                content: text(&data["content"]),
                content_json: None,
                tool_calls: Vec::new(),
                name: None,
            }),
            "assistant.message" => {
                let calls = data["toolRequests"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| ToolCall {
                        id: r.get("toolCallId").filter(|v| !v.is_null()).map(text),
                        tool: text(r.get("name").or(r.get("toolName")).unwrap_or(&Value::Null)),
                        input: r.get("arguments").cloned(),
                        ..ToolCall::default()
                    })
                    .collect();
                messages.push(assistant(text(&data["content"]), calls));
            }
            "skill.invoked" => messages.push(assistant(
                String::new(),
                vec![ToolCall {
                    tool: "Skill".into(),
                    input: Some(serde_json::json!({"skill": text(&data["name"])})),
                    ..ToolCall::default()
                }],
            )),
            "tool.execution_start" => {
                let id = text(&data["toolCallId"]);
                if !id.is_empty() {
                    running.push((id, text(&data["toolName"]), data.get("arguments").cloned()));
                }
            }
            "tool.execution_complete" => {
                let id = text(&data["toolCallId"]);
                if let Some(i) = running.iter().position(|(r, _, _)| *r == id) {
                    let (id, tool, input) = running.remove(i);
                    messages.push(assistant(
                        String::new(),
                        vec![ToolCall {
                            id: Some(id),
                            tool,
                            input,
                            output: data.get("result").cloned(),
                            ..ToolCall::default()
                        }],
                    ));
                }
            }
            "session.shutdown" => {
                end = event.get("timestamp").filter(|t| !t.is_null()).map(text);
                for metrics in data["modelMetrics"].as_object().into_iter().flatten() {
                    if let Some(u) = metrics.1.get("usage").filter(|u| u.is_object()) {
                        has_usage = true;
                        input += u["inputTokens"].as_u64().unwrap_or(0);
                        output += u["outputTokens"].as_u64().unwrap_or(0);
                    }
                }
            }
            _ => {}
        }
    }
    if !any {
        return Err(fail("the Copilot session transcript has no events"));
    }
    let answer = messages
        .iter()
        .rev()
        .find(|m| m.role == "assistant" && !m.content.is_empty())
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let mut out = TargetOutput::text(answer);
    out.messages = messages;
    out.token_usage = has_usage.then_some(TokenUsage {
        input,
        output,
        ..TokenUsage::default()
    });
    let at = |t: &Option<String>| t.as_deref().and_then(|s| s.parse::<jiff::Timestamp>().ok());
    out.duration_ms = at(&start)
        .zip(at(&end))
        .and_then(|(a, b)| u64::try_from(b.duration_since(a).as_millis()).ok());
    Ok(out)
}
