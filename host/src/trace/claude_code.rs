//! Claude Code's `--output-format stream-json` / `json` into one trace.

use super::*;

/// Claude Code: `stream-json` lines, an array of them, or the `json` result.
pub(super) fn claude(text: &str) -> Result<TargetOutput, TraceError> {
    let trimmed = text.trim_start();
    let lines: Vec<Value> = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Array(items)) => items,
        Ok(doc @ Value::Object(_)) => vec![doc],
        _ => json_lines(text),
    };
    let mut messages: Vec<OutputMessage> = Vec::new();
    // message.id of each output message, and the thread it belongs to.
    let mut ids: Vec<Option<String>> = Vec::new();
    let mut main_thread: Vec<bool> = Vec::new();
    let mut calls: HashMap<String, (usize, usize)> = HashMap::new();
    let mut llm_ids: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut result: Option<&Value> = None;
    for line in &lines {
        match type_of(line) {
            "assistant" => {
                let Some(message) = line.get("message") else {
                    continue;
                };
                let id = message.get("id").and_then(Value::as_str).map(str::to_owned);
                let parent = line
                    .get("parent_tool_use_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let synthetic = message.get("model").and_then(Value::as_str) == Some("<synthetic>");
                if let Some(id) = &id
                    && !synthetic
                {
                    llm_ids.insert(id.clone());
                }
                // One API message arrives as several lines sharing its id.
                let same = id.is_some() && ids.last() == Some(&id);
                if !same {
                    messages.push(OutputMessage {
                        role: "assistant".into(),
                        name: parent.as_ref().map(|p| format!("subagent:{p}")),
                        ..OutputMessage::default()
                    });
                    ids.push(id);
                    main_thread.push(parent.is_none());
                }
                let index = messages.len() - 1;
                let blocks: Vec<Value> = match message.get("content") {
                    Some(Value::Array(b)) => b.clone(),
                    Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
                    _ => Vec::new(),
                };
                for block in blocks {
                    match type_of(&block) {
                        "text" => {
                            let t = block.get("text").and_then(Value::as_str).unwrap_or("");
                            let content = &mut messages[index].content;
                            if !content.is_empty() && !t.is_empty() {
                                content.push('\n');
                            }
                            content.push_str(t);
                        }
                        "tool_use" => {
                            let call = ToolCall {
                                id: block.get("id").and_then(Value::as_str).map(str::to_owned),
                                tool: block
                                    .get("name")
                                    .and_then(Value::as_str)
                                    .unwrap_or_default()
                                    .to_owned(),
                                input: block.get("input").cloned(),
                                status: Some("unknown".into()),
                                ..ToolCall::default()
                            };
                            if let Some(id) = &call.id {
                                calls.insert(id.clone(), (index, messages[index].tool_calls.len()));
                            }
                            messages[index].tool_calls.push(call);
                        }
                        _ => {}
                    }
                }
            }
            "user" => {
                let Some(Value::Array(blocks)) = line.get("message").and_then(|m| m.get("content"))
                else {
                    continue;
                };
                for block in blocks.iter().filter(|b| type_of(b) == "tool_result") {
                    let Some(&(m, c)) = block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .and_then(|id| calls.get(id))
                    else {
                        continue;
                    };
                    let (output, _) = content_text(block.get("content"));
                    let call = &mut messages[m].tool_calls[c];
                    call.output = Some(Value::String(output));
                    call.status = Some(
                        if block.get("is_error").and_then(Value::as_bool) == Some(true) {
                            "error"
                        } else {
                            "ok"
                        }
                        .into(),
                    );
                }
            }
            "result" => result = Some(line),
            _ => {}
        }
    }
    let Some(result) = result else {
        return Err(fail(
            "the Claude Code output has no `result` line: the run did not finish",
        ));
    };
    let subtype = result.get("subtype").and_then(Value::as_str).unwrap_or("");
    let is_error = result.get("is_error").and_then(Value::as_bool) == Some(true);
    if is_error || (!subtype.is_empty() && subtype != "success") {
        let detail = match result.get("errors") {
            Some(Value::Array(errors)) if !errors.is_empty() => errors
                .iter()
                .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join("; "),
            _ => result
                .get("result")
                .and_then(Value::as_str)
                .unwrap_or("no details")
                .to_owned(),
        };
        let kind = if subtype.is_empty() { "error" } else { subtype };
        return Err(fail(format!("Claude Code reported {kind}: {detail}")));
    }
    let final_text = result
        .get("result")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            messages
                .iter()
                .zip(&main_thread)
                .rev()
                .find(|(m, main)| **main && !m.content.is_empty())
                .map(|(m, _)| m.content.clone())
        })
        .unwrap_or_default();
    // The answer is the last message: make sure it is the main thread's.
    if messages
        .last()
        .is_some_and(|m| m.content != final_text || m.name.is_some())
    {
        messages.push(OutputMessage {
            role: "assistant".into(),
            content: final_text.clone(),
            ..OutputMessage::default()
        });
    }
    // Tokens: `modelUsage` covers subagents too; `usage` the main loop only.
    // Input counts cache reads and writes (as AgentV's providers do), and
    // `cached` the reads.
    let usage = match result.get("modelUsage").and_then(Value::as_object) {
        Some(models) if !models.is_empty() => {
            let sum = |k: &str| models.values().map(|m| u64_of(m, k)).sum::<u64>();
            let read = sum("cacheReadInputTokens");
            Some(TokenUsage {
                input: sum("inputTokens") + read + sum("cacheCreationInputTokens"),
                output: sum("outputTokens"),
                cached: read,
                reasoning: 0,
            })
        }
        _ => result.get("usage").filter(|u| u.is_object()).map(|u| {
            let read = u64_of(u, "cache_read_input_tokens");
            TokenUsage {
                input: u64_of(u, "input_tokens") + read + u64_of(u, "cache_creation_input_tokens"),
                output: u64_of(u, "output_tokens"),
                cached: read,
                reasoning: 0,
            }
        }),
    };
    let llm_calls = if lines.iter().any(|l| type_of(l) == "assistant") {
        LlmCalls::Known(u32::try_from(llm_ids.len()).unwrap_or(u32::MAX))
    } else {
        LlmCalls::Unknown
    };
    Ok(TargetOutput {
        text: final_text,
        // `--output-format json` has no messages: no trace of tool calls.
        messages: if lines.iter().any(|l| type_of(l) == "assistant") {
            messages
        } else {
            Vec::new()
        },
        duration_ms: result
            .get("duration_ms")
            .and_then(Value::as_f64)
            .map(|d| d as u64),
        token_usage: usage,
        cost_usd: result
            .get("total_cost_usd")
            .or(result.get("cost_usd"))
            .and_then(Value::as_f64),
        target_used: None,
        llm_calls,
        finish_reason: None,
        logprobs: None,
        output_json: None,
        raw: None,
        file_changes: None,
    })
}
