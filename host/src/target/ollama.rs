//! promptfoo's Ollama providers (0.121.20, `src/providers/ollama.ts`), as a
//! promptfoo config's `openai` target with `api_format: ollama-chat` or
//! `ollama-generate` calls them: Ollama's own API, `POST {base}/api/chat`
//! with `{model, messages, …request fields}` (the rendered prompt parsed as
//! promptfoo's `parseChatPrompt`; no `stream`, so Ollama answers a line of
//! JSON per chunk) or `POST {base}/api/generate` with `{model, prompt,
//! stream: false, …}` (the prompt as rendered); the request fields
//! (`options`, `think`, passthrough, tools) settled by the suite reader.
//! The output as promptfoo makes it: the chunks' `message.content` (or
//! `response`) joined, thinking left out; tool calls, when a chunk has
//! them, as promptfoo's `{function: {name, arguments}}` list (with the
//! content, `{content, tool_calls}`); tokens from the `done` chunk.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::openai::OpenAiConfig;
use super::{TargetFailure, TargetOutput, ToolCall};

/// Which of Ollama's APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OllamaApi {
    /// `/api/chat`.
    Chat,
    /// `/api/generate`.
    Generate,
}

/// The request body for `prompt`.
pub fn body(config: &OpenAiConfig, api: OllamaApi, prompt: &str) -> Result<Value, String> {
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    match api {
        OllamaApi::Chat => {
            body.insert("messages".into(), super::openai::promptfoo_chat(prompt)?);
        }
        OllamaApi::Generate => {
            body.insert("prompt".into(), json!(prompt));
        }
    }
    for (k, v) in &config.request_params {
        if k != "model" && k != "messages" && k != "prompt" {
            body.insert(k.clone(), v.clone());
        }
    }
    Ok(Value::Object(body))
}

/// What an answer's chunks make: the output, its structured value, the
/// tool calls, and `(prompt, completion)` tokens.
type Answer = (String, Option<Value>, Vec<ToolCall>, Option<(u64, u64)>);

/// The output of an answer's chunks (one JSON value per line).
pub fn output(api: OllamaApi, text: &str) -> Result<Answer, String> {
    let mut content = String::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut tokens = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let chunk: Value = serde_json::from_str(line)
            .map_err(|e| format!("a line of the answer is not JSON ({e}): {line}"))?;
        if let Some(error) = chunk.get("error") {
            return Err(format!("Ollama error: {error}"));
        }
        match api {
            OllamaApi::Chat => {
                if let Some(c) = chunk.pointer("/message/content").and_then(Value::as_str) {
                    content.push_str(c);
                }
                if let Some(list) = chunk
                    .pointer("/message/tool_calls")
                    .and_then(Value::as_array)
                {
                    calls.extend(list.iter().cloned());
                }
            }
            OllamaApi::Generate => {
                if let Some(r) = chunk.get("response").and_then(Value::as_str) {
                    content.push_str(r);
                }
            }
        }
        if tokens.is_none()
            && chunk.get("done") == Some(&Value::Bool(true))
            && (chunk.get("prompt_eval_count").is_some() || chunk.get("eval_count").is_some())
        {
            let n = |k: &str| chunk.get(k).and_then(Value::as_u64).unwrap_or(0);
            tokens = Some((n("prompt_eval_count"), n("eval_count")));
        }
    }
    if calls.is_empty() {
        return Ok((content, None, Vec::new(), tokens));
    }
    // promptfoo's tool calls: `{function: {name, arguments}}`, the
    // arguments as JSON text.
    let converted: Vec<Value> = calls
        .iter()
        .map(|c| {
            let arguments = match c.pointer("/function/arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => "{}".into(),
            };
            json!({"function": {"name": c.pointer("/function/name").cloned().unwrap_or(Value::Null), "arguments": arguments}})
        })
        .collect();
    let tool_calls = converted
        .iter()
        .map(|c| ToolCall {
            tool: c
                .pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            input: c
                .pointer("/function/arguments")
                .and_then(Value::as_str)
                .and_then(|a| serde_json::from_str(a).ok()),
            ..ToolCall::default()
        })
        .collect();
    let structured = if content.is_empty() {
        Value::Array(converted)
    } else {
        json!({"content": content, "tool_calls": converted})
    };
    Ok((structured.to_string(), Some(structured), tool_calls, tokens))
}

/// One call.
pub fn call(
    config: &OpenAiConfig,
    api: OllamaApi,
    prompt: &str,
    timeout: Duration,
) -> Result<TargetOutput, TargetFailure> {
    let base = config.base_url.trim_end_matches('/');
    let url = match api {
        OllamaApi::Chat => format!("{base}/api/chat"),
        OllamaApi::Generate => format!("{base}/api/generate"),
    };
    let body = body(config, api, prompt).map_err(TargetFailure::fatal)?;
    let mut headers = Vec::new();
    if let Some(key) = &config.api_key {
        headers.push(("Authorization", format!("Bearer {key}")));
    }
    let started = Instant::now();
    let response = super::api::send(&url, &headers, &body, timeout)?;
    let text = super::api::text(&url, response)?;
    let (text, structured, tool_calls, tokens) =
        output(api, &text).map_err(|e| TargetFailure::fatal(format!("{url}: {e}")))?;
    let (input, output) = tokens.unwrap_or((0, 0));
    let mut out = super::api::answer(
        text,
        tool_calls,
        started,
        [input, output, 0, 0],
        ("ollama", &config.model),
        None,
    );
    if tokens.is_none() {
        out.token_usage = None;
    }
    out.cost_usd = None;
    out.output_json = structured;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_joined_and_thinking_left_out() {
        let text = "{\"message\":{\"role\":\"assistant\",\"content\":\"The \",\"thinking\":\"hmm\"},\"done\":false}\n{\"message\":{\"role\":\"assistant\",\"content\":\"answer.\"},\"done\":true,\"prompt_eval_count\":9,\"eval_count\":6}\n";
        let (out, structured, calls, tokens) = output(OllamaApi::Chat, text).unwrap();
        assert_eq!(out, "The answer.");
        assert!(structured.is_none() && calls.is_empty());
        assert_eq!(tokens, Some((9, 6)));
        let (out, ..) = output(OllamaApi::Generate, "{\"response\":\"Hi\",\"done\":true}").unwrap();
        assert_eq!(out, "Hi");
    }

    #[test]
    fn tool_calls_are_promptfoos_list() {
        let text = "{\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"x\":1}}}]},\"done\":true}";
        let (out, structured, calls, _) = output(OllamaApi::Chat, text).unwrap();
        assert_eq!(
            out,
            "[{\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":1}\"}}]"
        );
        assert!(structured.is_some());
        assert_eq!(calls[0].tool, "f");
        assert!(output(OllamaApi::Chat, "{\"error\":\"model not found\"}").is_err());
    }
}
