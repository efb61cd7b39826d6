//! The pi coding agent's `--mode json` events, read as AgentV 4.42.4's
//! `pi-cli` provider reads them (`parsePiJsonl`, `extractMessages`,
//! `extractTokenUsage`): the messages of the last `agent_end` (else each
//! `turn_end`'s message), an empty final assistant message filled from the
//! last `message_end` with text, the tool calls of `tool_execution_*`
//! events added to the last assistant message when no message has them,
//! and the tokens of `agent_end.usage` (else the messages' usage summed).

use serde_json::{Map, Value};

use super::{LlmCalls, OutputMessage, TargetOutput, TokenUsage, ToolCall, TraceError, fail};

/// pi's message text: a string, or its `text` parts joined by newlines.
fn text_of(content: Option<&Value>) -> Option<String> {
    match content {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(parts)) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p["type"] == "text")
                .filter_map(|p| p["text"].as_str())
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The tool calls in a message's content parts (`tool_use`, `toolCall`,
/// `tool_call`), with the outputs of `tool_result` parts.
fn calls_of(content: Option<&Value>) -> Vec<ToolCall> {
    let mut calls: Vec<ToolCall> = Vec::new();
    for p in content.and_then(Value::as_array).into_iter().flatten() {
        let id = p["id"].as_str().map(str::to_owned);
        match (p["type"].as_str(), p["name"].as_str()) {
            (Some("tool_use"), Some(name)) => calls.push(ToolCall {
                id,
                tool: name.to_owned(),
                input: p.get("input").cloned(),
                ..ToolCall::default()
            }),
            (Some("toolCall" | "tool_call"), Some(name)) => calls.push(ToolCall {
                id,
                tool: name.to_owned(),
                input: p.get("arguments").or(p.get("input")).cloned(),
                ..ToolCall::default()
            }),
            (Some("tool_result"), _) => {
                if let Some(for_id) = p["tool_use_id"].as_str()
                    && let Some(call) = calls.iter_mut().find(|c| c.id.as_deref() == Some(for_id))
                {
                    call.output = p.get("content").cloned();
                }
            }
            _ => {}
        }
    }
    calls
}

fn message(m: &Value) -> Option<OutputMessage> {
    let role = m["role"].as_str()?;
    Some(OutputMessage {
        role: role.to_owned(),
        content: text_of(m.get("content")).unwrap_or_default(),
        content_json: None,
        tool_calls: calls_of(m.get("content")),
        name: None,
    })
}

fn number(u: &Map<String, Value>, keys: &[&str]) -> Option<u64> {
    keys.iter()
        .find_map(|k| u.get(*k))
        .and_then(Value::as_f64)
        .filter(|n| n.is_finite())
        .map(|n| n as u64)
}

fn usage_of(u: &Map<String, Value>) -> Option<(u64, u64, Option<u64>, Option<u64>)> {
    let input = number(u, &["input_tokens", "inputTokens", "input"]);
    let output = number(u, &["output_tokens", "outputTokens", "output"]);
    if input.is_none() && output.is_none() {
        return None;
    }
    Some((
        input.unwrap_or(0),
        output.unwrap_or(0),
        number(u, &["cache_read_input_tokens", "cached", "cachedTokens"]),
        number(u, &["reasoning_tokens", "reasoningTokens", "reasoning"]),
    ))
}

/// Reads pi's JSONL events.
pub(super) fn pi(text: &str) -> Result<TargetOutput, TraceError> {
    if text.trim().is_empty() {
        return Err(fail("Pi CLI produced no output"));
    }
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .collect();
    if events.is_empty() {
        return Err(fail("Pi CLI produced no valid JSON output"));
    }
    let last_end = events
        .iter()
        .rev()
        .find(|e| e["type"] == "agent_end" && e["messages"].is_array());
    let mut messages: Vec<OutputMessage> = match last_end {
        Some(end) => end["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(message)
            .collect(),
        None => events
            .iter()
            .filter(|e| e["type"] == "turn_end")
            .filter_map(|e| message(&e["message"]))
            .collect(),
    };
    // An empty final assistant message: the last `message_end` with text.
    if let Some(last) = messages.iter_mut().rev().find(|m| m.role == "assistant")
        && last.content.is_empty()
        && let Some(text) = events
            .iter()
            .rev()
            .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
            .find_map(|e| text_of(e["message"].get("content")).filter(|t| !t.is_empty()))
    {
        last.content = text;
    }
    // Tool calls seen only as execution events join the last assistant message.
    let mut started: Vec<(Option<String>, ToolCall)> = Vec::new();
    let mut results: Vec<(String, Value)> = Vec::new();
    for e in &events {
        match e["type"].as_str() {
            Some("tool_execution_start") => {
                if let Some(name) = e["toolName"].as_str() {
                    let id = e["toolCallId"].as_str().map(str::to_owned);
                    started.push((
                        id.clone(),
                        ToolCall {
                            id,
                            tool: name.to_owned(),
                            input: e.get("args").cloned(),
                            ..ToolCall::default()
                        },
                    ));
                }
            }
            Some("tool_execution_end") => {
                if let Some(id) = e["toolCallId"].as_str() {
                    results.push((
                        id.to_owned(),
                        e.get("result").cloned().unwrap_or(Value::Null),
                    ));
                }
            }
            _ => {}
        }
    }
    let known: Vec<(Option<String>, String)> = messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| {
            (
                c.id.clone(),
                format!(
                    "{}:{}",
                    c.tool,
                    c.input
                        .as_ref()
                        .map_or_else(String::new, ToString::to_string)
                ),
            )
        })
        .collect();
    let missing: Vec<ToolCall> = started
        .into_iter()
        .map(|(id, mut call)| {
            if let Some(id) = &id
                && let Some((_, out)) = results.iter().find(|(r, _)| r == id)
            {
                call.output = Some(out.clone());
            }
            call
        })
        .filter(|c| {
            let shape = format!(
                "{}:{}",
                c.tool,
                c.input
                    .as_ref()
                    .map_or_else(String::new, ToString::to_string)
            );
            !known
                .iter()
                .any(|(id, s)| (c.id.is_some() && *id == c.id) || *s == shape)
        })
        .collect();
    if !missing.is_empty() {
        match messages.iter_mut().rev().find(|m| m.role == "assistant") {
            Some(m) => m.tool_calls.extend(missing),
            None => messages.push(OutputMessage {
                role: "assistant".into(),
                content: String::new(),
                content_json: None,
                tool_calls: missing,
                name: None,
            }),
        }
    }
    // Tokens: `agent_end.usage`, else the messages' usage summed.
    let mut token_usage = None;
    if let Some(end) = events.iter().rev().find(|e| e["type"] == "agent_end") {
        if let Some((input, output, cached, reasoning)) =
            end["usage"].as_object().and_then(usage_of)
        {
            token_usage = Some(TokenUsage {
                input,
                output,
                cached: cached.unwrap_or(0),
                reasoning: reasoning.unwrap_or(0),
            });
        } else if let Some(list) = end["messages"].as_array() {
            let mut total: Option<TokenUsage> = None;
            for (input, output, cached, _) in list
                .iter()
                .filter_map(|m| m["usage"].as_object().and_then(usage_of))
            {
                let t = total.get_or_insert(TokenUsage::default());
                t.input += input;
                t.output += output;
                t.cached += cached.unwrap_or(0);
            }
            token_usage = total;
        }
    }
    let text = messages
        .iter()
        .rev()
        .find(|m| m.role == "assistant")
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let mut out = TargetOutput::text(text);
    out.messages = messages;
    out.token_usage = token_usage;
    // AgentV's count: the assistant messages.
    out.llm_calls = LlmCalls::FromMessages;
    Ok(out)
}
