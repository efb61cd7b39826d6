//! Codex's `exec --json` events into one trace.

use super::*;

/// A Codex item as a tool call, named as Claude Code names the same tools.
pub(super) fn codex_call(item: &Map<String, Value>) -> Option<ToolCall> {
    let status_of = |ok: bool| Some(if ok { "ok" } else { "error" }.to_owned());
    let item_status = item.get("status").and_then(Value::as_str).unwrap_or("");
    let running = item_status == "in_progress";
    let failed = matches!(item_status, "failed" | "declined");
    let id = item.get("id").and_then(Value::as_str).map(str::to_owned);
    let call = match item.get("type").and_then(Value::as_str)? {
        "command_execution" => {
            let exit = item.get("exit_code").and_then(Value::as_i64);
            ToolCall {
                id,
                tool: "Bash".into(),
                input: Some(
                    serde_json::json!({"command": item.get("command").cloned().unwrap_or(Value::Null)}),
                ),
                output: item.get("aggregated_output").cloned(),
                status: if running {
                    Some("unknown".into())
                } else {
                    status_of(!failed && exit.is_none_or(|c| c == 0))
                },
                duration_ms: None,
            }
        }
        "file_change" => {
            let changes = item
                .get("changes")
                .cloned()
                .unwrap_or(Value::Array(Vec::new()));
            let summary = changes
                .as_array()
                .map(|c| {
                    c.iter()
                        .map(|ch| {
                            format!(
                                "{} {}",
                                ch.get("kind").and_then(Value::as_str).unwrap_or("update"),
                                ch.get("path").and_then(Value::as_str).unwrap_or("?")
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default();
            ToolCall {
                id,
                tool: "Edit".into(),
                input: Some(serde_json::json!({"changes": changes})),
                output: Some(Value::String(summary)),
                status: if running {
                    Some("unknown".into())
                } else {
                    status_of(!failed)
                },
                duration_ms: None,
            }
        }
        "mcp_tool_call" => {
            let server = item.get("server").and_then(Value::as_str).unwrap_or("?");
            let tool = item.get("tool").and_then(Value::as_str).unwrap_or("?");
            let error = item.get("error").filter(|e| !e.is_null());
            ToolCall {
                id,
                tool: format!("mcp__{server}__{tool}"),
                input: item.get("arguments").cloned().filter(|a| !a.is_null()),
                output: error
                    .and_then(|e| e.get("message").cloned())
                    .or_else(|| item.get("result").cloned().filter(|r| !r.is_null())),
                status: if running {
                    Some("unknown".into())
                } else {
                    status_of(!failed && error.is_none())
                },
                duration_ms: None,
            }
        }
        "web_search" => ToolCall {
            id,
            tool: "WebSearch".into(),
            input: Some(
                serde_json::json!({"query": item.get("query").cloned().unwrap_or(Value::Null)}),
            ),
            output: None,
            status: status_of(!failed),
            duration_ms: None,
        },
        _ => return None,
    };
    Some(call)
}

/// Codex `exec --json` events.
pub(super) fn codex(text: &str) -> Result<TargetOutput, TraceError> {
    let events = json_lines(text);
    // Items by id in order of first appearance; `item.completed` wins.
    let mut order: Vec<String> = Vec::new();
    let mut items: HashMap<String, Map<String, Value>> = HashMap::new();
    let mut usage: Option<&Value> = None;
    let mut completed = false;
    let mut failed: Option<String> = None;
    for (n, event) in events.iter().enumerate() {
        match type_of(event) {
            "item.started" | "item.updated" | "item.completed" => {
                let Some(Value::Object(item)) = event.get("item") else {
                    continue;
                };
                let id = item
                    .get("id")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("#{n}"), str::to_owned);
                if !items.contains_key(&id) {
                    order.push(id.clone());
                }
                items.insert(id, item.clone());
            }
            "turn.completed" => {
                completed = true;
                usage = event.get("usage");
            }
            "turn.failed" => {
                failed = Some(
                    event
                        .get("error")
                        .and_then(|e| e.get("message"))
                        .and_then(Value::as_str)
                        .unwrap_or("turn failed")
                        .to_owned(),
                );
            }
            _ => {}
        }
    }
    if let Some(message) = failed {
        return Err(fail(format!("Codex reported a failed turn: {message}")));
    }
    if !completed {
        return Err(fail(
            "the Codex output has no `turn.completed` event: the run did not finish",
        ));
    }
    // One assistant message per agent message, holding the tool calls made
    // before it; calls after the last one join it.
    let mut messages: Vec<OutputMessage> = Vec::new();
    let mut pending: Vec<ToolCall> = Vec::new();
    for id in &order {
        let item = &items[id];
        if item.get("type").and_then(Value::as_str) == Some("agent_message") {
            messages.push(OutputMessage {
                role: "assistant".into(),
                content: item
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                tool_calls: std::mem::take(&mut pending),
                ..OutputMessage::default()
            });
        } else if let Some(call) = codex_call(item) {
            pending.push(call);
        }
    }
    if !pending.is_empty() {
        match messages.last_mut() {
            Some(last) => last.tool_calls.append(&mut pending),
            None => messages.push(OutputMessage {
                role: "assistant".into(),
                tool_calls: pending,
                ..OutputMessage::default()
            }),
        }
    }
    let token_usage = usage.filter(|u| u.is_object()).map(|u| TokenUsage {
        // OpenAI counts cached tokens inside input_tokens.
        input: u64_of(u, "input_tokens"),
        output: u64_of(u, "output_tokens"),
        cached: u64_of(u, "cached_input_tokens"),
        reasoning: u64_of(u, "reasoning_output_tokens"),
    });
    let output = TargetOutput {
        messages,
        token_usage,
        // Codex reports neither cost nor duration, nor its model calls.
        llm_calls: LlmCalls::Unknown,
        ..TargetOutput::default()
    };
    Ok(output.with_candidate_from_messages())
}
