//! promptfoo's `openai:responses:<model>` provider (0.121.20,
//! `src/providers/openai/responses.ts`), as a promptfoo config's `openai`
//! target with `api_format: responses` calls it: `POST {base}/responses`
//! with `{model, input, …request fields}` — the input the rendered prompt,
//! or the chat it parses as — the request fields settled by the suite
//! reader (defaults, reasoning, text format, tools), and the output as
//! promptfoo's `processOutput` makes it: each output item's text, one per
//! line (a function call as its JSON, a reasoning summary as `Reasoning:
//! …`, a refusal alone), a `json_schema` reply parsed.

use std::time::Instant;

use serde_json::{Map, Value, json};

use super::openai::OpenAiConfig;
use super::{TargetFailure, TargetOutput, ToolCall};

/// The request body for `prompt`.
pub fn body(config: &OpenAiConfig, prompt: &str) -> Value {
    let input = match serde_json::from_str::<Value>(prompt) {
        Ok(Value::Array(items)) => Value::Array(items),
        _ => Value::String(prompt.to_owned()),
    };
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    body.insert("input".into(), input);
    for (k, v) in &config.request_params {
        if k != "model" && k != "input" {
            body.insert(k.clone(), v.clone());
        }
    }
    body.entry("text")
        .or_insert(json!({"format": {"type": "text"}}));
    Value::Object(body)
}

/// What one output item adds to the output: `(text, refusal)`.
fn item_text(item: &Value) -> (Option<String>, Option<String>) {
    match item["type"].as_str() {
        Some("function_call") => {
            if item["arguments"] == "{}" && item["status"] == "completed" {
                let note = json!({
                    "type": "function_call",
                    "name": item["name"],
                    "status": "no_arguments_provided",
                    "note": "Function called but no arguments were extracted. Consider using the correct Responses API tool format.",
                });
                (Some(note.to_string()), None)
            } else {
                (Some(item.to_string()), None)
            }
        }
        Some("message") if item["role"] == "assistant" => {
            let mut text = String::new();
            let mut refusal = None;
            match item.get("content").and_then(Value::as_array) {
                Some(content) => {
                    for c in content {
                        match c["type"].as_str() {
                            Some("output_text") => text.push_str(c["text"].as_str().unwrap_or("")),
                            Some("tool_use" | "function_call") => text = c.to_string(),
                            Some("refusal") => {
                                refusal = Some(c["refusal"].as_str().unwrap_or("").to_owned());
                            }
                            _ => {}
                        }
                    }
                }
                None => {
                    if let Some(r) = item.get("refusal").and_then(Value::as_str) {
                        refusal = Some(r.to_owned());
                    }
                }
            }
            match refusal {
                Some(r) => (None, Some(r)),
                None => (Some(text).filter(|t| !t.is_empty()), None),
            }
        }
        Some("tool_result") => (Some(item.to_string()), None),
        Some("reasoning") => {
            let summary: Vec<&str> = item["summary"]
                .as_array()
                .map(|s| s.iter().filter_map(|p| p["text"].as_str()).collect())
                .unwrap_or_default();
            if summary.is_empty() {
                (None, None)
            } else {
                (Some(format!("Reasoning: {}", summary.join("\n"))), None)
            }
        }
        _ => (None, None),
    }
}

/// promptfoo's `processOutput`: the output text, or the refusal.
pub fn output(items: &[Value]) -> (String, Option<String>) {
    let mut result = String::new();
    let mut refusal = None;
    for item in items.iter().filter(|i| i.is_object()) {
        let (text, refused) = item_text(item);
        if let Some(r) = refused {
            refusal = Some(r);
        } else if let Some(t) = text {
            if result.is_empty() {
                result = t;
            } else {
                result.push('\n');
                result.push_str(&t);
            }
        }
    }
    (result, refusal)
}

/// Calls the Responses API once for the rendered `prompt`, as promptfoo.
pub fn call(
    config: &OpenAiConfig,
    prompt: &str,
    timeout: std::time::Duration,
) -> Result<TargetOutput, TargetFailure> {
    let url = format!("{}/responses", config.base_url.trim_end_matches('/'));
    let body = body(config, prompt);
    let started = Instant::now();
    let doc = super::openai::post(config, &url, &body, Some(timeout))?;
    if let Some(error) = doc.get("error").filter(|e| !e.is_null()) {
        return Err(TargetFailure::fatal(format!(
            "{url} answered with an error: {error}"
        )));
    }
    let Some(items) = doc
        .get("output")
        .and_then(Value::as_array)
        .filter(|o| !o.is_empty())
    else {
        return Err(TargetFailure::fatal(format!(
            "{url} answered no `output` list (promptfoo: \"Invalid response format: Missing output array\")"
        )));
    };
    let (text, refusal) = output(items);
    let text = refusal.unwrap_or(text);
    // promptfoo parses a `json_schema` reply when the config wrote the
    // format inline (one from a `file://` is a string when it looks).
    let structured = config
        .request_params
        .get("text")
        .and_then(|t| t.pointer("/format/type"))
        .is_some_and(|t| t == "json_schema")
        && !matches!(
            config.output_style,
            super::openai::OutputStyle::Promptfoo {
                json_reply: false,
                ..
            }
        );
    let parsed = structured
        .then(|| serde_json::from_str::<Value>(&text).ok())
        .flatten();
    // The output is then an object, read as its `JSON.stringify`.
    let text = parsed.as_ref().map_or(text, Value::to_string);
    let tool_calls: Vec<ToolCall> = items
        .iter()
        .filter(|i| i["type"] == "function_call")
        .map(|i| ToolCall {
            id: i["call_id"].as_str().map(str::to_owned),
            tool: i["name"].as_str().unwrap_or_default().to_owned(),
            input: i["arguments"]
                .as_str()
                .and_then(|a| serde_json::from_str(a).ok()),
            ..ToolCall::default()
        })
        .collect();
    let u64_at = |p: &str| doc.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let tokens = [
        u64_at("/usage/input_tokens"),
        u64_at("/usage/output_tokens"),
        u64_at("/usage/input_tokens_details/cached_tokens"),
        0,
    ];
    let mut out = super::api::answer(
        text.clone(),
        tool_calls,
        started,
        tokens,
        ("openai", &config.model),
        doc["status"].as_str().map(str::to_owned),
    );
    out.finish_reason = None;
    out.cost_usd = super::openai::priced(config, tokens[0], tokens[1], tokens[2]);
    if let Some(parsed) = parsed {
        out.output_json = Some(parsed);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_is_promptfoos() {
        let items = [
            json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]}),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}, {"type": "output_text", "text": " there"}]}),
            json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"x\":1}", "status": "completed"}),
        ];
        let (text, refusal) = output(&items);
        assert_eq!(
            text,
            "Reasoning: think\nHi there\n{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"{\\\"x\\\":1}\",\"status\":\"completed\"}"
        );
        assert!(refusal.is_none());
        let refused = [
            json!({"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]}),
        ];
        assert_eq!(output(&refused).1.as_deref(), Some("No."));
    }
}
