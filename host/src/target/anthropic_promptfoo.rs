//! promptfoo's `anthropic:messages:<model>` provider (0.121.20,
//! `src/providers/anthropic/messages.ts`), as a promptfoo config's
//! `anthropic` target calls it: the rendered prompt parsed as promptfoo's
//! `parseMessages` parses it (a JSON chat, else `system:`/`user:`/
//! `assistant:` lines, else one user message), one request with `stream:
//! false`, `max_tokens` 1024 (2048 for the models that always think) and
//! `temperature` 0 unless the config says otherwise (none for the models
//! that deprecate sampling parameters), and the output as promptfoo's
//! `outputFromMessage` makes it: the text blocks joined by a blank line, or,
//! when the reply has tool use or thinking, every block (tool use as its
//! JSON).

use std::time::Instant;

use serde_json::{Map, Value, json};

use super::anthropic::AnthropicConfig;
use super::{TargetFailure, TargetOutput, ToolCall};

/// promptfoo's `parseMessages`: `(system, messages)` of a rendered prompt.
pub fn parse_messages(prompt: &str) -> (Option<Value>, Vec<Value>) {
    if let Ok(Value::Array(parsed)) = serde_json::from_str::<Value>(prompt) {
        let text_blocks = |content: &Value| match content {
            Value::Array(_) => content.clone(),
            other => json!([{"type": "text", "text": js_text(other)}]),
        };
        let system = parsed
            .iter()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("system"))
            .map(|m| text_blocks(m.get("content").unwrap_or(&Value::Null)));
        let messages = parsed
            .iter()
            .filter(|m| {
                m.get("role")
                    .and_then(Value::as_str)
                    .is_some_and(|r| !r.is_empty() && r != "system")
            })
            .map(|m| {
                json!({
                    "role": m["role"],
                    "content": text_blocks(m.get("content").unwrap_or(&Value::Null)),
                })
            })
            .collect();
        return (system, messages);
    }
    let mut system = None;
    let mut messages: Vec<Value> = Vec::new();
    let mut role: Option<&str> = None;
    let mut content: Vec<&str> = Vec::new();
    let push = |role: Option<&str>, content: &mut Vec<&str>, messages: &mut Vec<Value>| {
        if let Some(r) = role
            && !content.is_empty()
        {
            messages.push(
                json!({"role": r, "content": [{"type": "text", "text": content.join("\n")}]}),
            );
            content.clear();
        }
    };
    for line in prompt.split('\n').map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(rest) = line.strip_prefix("system:") {
            system = Some(json!([{"type": "text", "text": rest.trim()}]));
        } else if line.starts_with("thinking:") {
            // A thinking config line: read by promptfoo, not sent as text.
        } else if line.starts_with("user:") || line.starts_with("assistant:") {
            push(role, &mut content, &mut messages);
            role = Some(if line.starts_with("user:") {
                "user"
            } else {
                "assistant"
            });
            let colon = line.find(':').unwrap_or(0);
            content.push(line[colon + 1..].trim());
        } else if role.is_some() {
            content.push(line);
        } else {
            role = Some("user");
            content.push(line);
        }
    }
    push(role, &mut content, &mut messages);
    if messages.is_empty() && system.is_none() {
        messages
            .push(json!({"role": "user", "content": [{"type": "text", "text": prompt.trim()}]}));
    }
    (system, messages)
}

/// A JSON value as JavaScript's template string writes it (a message's
/// content that is not a list).
fn js_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

/// Whether promptfoo omits `temperature`, `top_p` and `top_k` for `model`
/// (`samplingParamsDeprecated` in its Claude model table).
fn sampling_deprecated(model: &str) -> bool {
    family(
        model,
        &[
            "claude-fable-5",
            "claude-mythos-5",
            "claude-opus-5",
            "claude-sonnet-5",
            "claude-opus-4-7",
            "claude-opus-4-8",
        ],
    )
}

/// Whether the model thinks without being asked (promptfoo's default
/// `max_tokens` is then 2048).
fn thinks_by_default(model: &str) -> bool {
    family(
        model,
        &["claude-fable-5", "claude-mythos-5", "claude-opus-5"],
    )
}

/// `model` names one of `families` (`claude-opus-5`, not `claude-opus-50`).
fn family(model: &str, families: &[&str]) -> bool {
    let m = model.to_ascii_lowercase();
    families.iter().any(|f| {
        m.match_indices(f).any(|(i, _)| {
            let before = m[..i].chars().last();
            let after = m[i + f.len()..].chars().next();
            before.is_none_or(|c| !c.is_ascii_alphanumeric())
                && after.is_none_or(|c| !c.is_ascii_digit())
        })
    })
}

/// The request body promptfoo sends for `prompt`; `params` are the
/// config's request fields (`temperature`, `max_tokens`, `top_p`, `top_k`,
/// `stop_sequences`, `metadata`, `tools`, `tool_choice`, `extra_body`).
pub fn body(model: &str, prompt: &str, params: &Map<String, Value>) -> Value {
    let (system, messages) = parse_messages(prompt);
    let deprecated = sampling_deprecated(model);
    let always_on = family(model, &["claude-fable-5", "claude-mythos-5"]);
    // promptfoo's `normalizeClaudeThinkingConfig`: a budget becomes
    // adaptive where sampling parameters are deprecated; `disabled` is
    // dropped where thinking is always on.
    let requested = params.get("thinking").filter(|t| t.is_object());
    let resolved = match requested {
        Some(t) if t["type"] == "enabled" && deprecated => {
            let mut a = Map::new();
            a.insert("type".into(), json!("adaptive"));
            if let Some(d) = t.get("display") {
                a.insert("display".into(), d.clone());
            }
            Some(Value::Object(a))
        }
        Some(t) if t["type"] == "disabled" && always_on => None,
        other => other.cloned(),
    };
    let enabled = |t: &Option<Value>| {
        t.as_ref()
            .is_some_and(|t| t["type"] == "enabled" || t["type"] == "adaptive")
    };
    let thinking_enabled = always_on || enabled(&resolved);
    let consumes =
        always_on || enabled(&resolved) || (resolved.is_none() && thinks_by_default(model));
    let thinking = thinking_enabled;
    let top_p = params
        .get("top_p")
        .filter(|v| !v.is_null())
        .map(|p| match p.as_f64() {
            Some(x) if thinking_enabled => json!(x.clamp(0.95, 1.0)),
            _ => p.clone(),
        });
    let top_p = top_p.as_ref();
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    if let Some(s) = system.filter(|s| s.as_array().is_some_and(|a| !a.is_empty())) {
        body.insert("system".into(), s);
    }
    body.insert(
        "max_tokens".into(),
        params
            .get("max_tokens")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or_else(|| json!(if consumes { 2048 } else { 1024 })),
    );
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(false));
    if !(top_p.is_some() || thinking || deprecated) {
        body.insert(
            "temperature".into(),
            params
                .get("temperature")
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or(json!(0)),
        );
    }
    if let Some(p) = top_p.filter(|_| !deprecated) {
        body.insert("top_p".into(), p.clone());
    }
    if let Some(k) = params.get("top_k").filter(|v| !v.is_null())
        && !thinking
        && !deprecated
    {
        body.insert("top_k".into(), k.clone());
    }
    for key in ["cache_control", "service_tier", "metadata", "tool_choice"] {
        if let Some(v) = params.get(key).filter(|v| is_truthy(v)) {
            body.insert(key.into(), v.clone());
        }
    }
    if let Some(stops) = params
        .get("stop_sequences")
        .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
    {
        body.insert("stop_sequences".into(), stops.clone());
    }
    if let Some(t) = resolved {
        body.insert("thinking".into(), t);
    }
    // `output_format` (structured output) and `effort`, under
    // `output_config`, as promptfoo sends them.
    let format = params.get("output_format").filter(|v| v.is_object());
    let effort = params.get("effort").filter(|v| is_truthy(v));
    if format.is_some() || effort.is_some() {
        let mut config = Map::new();
        if let Some(f) = format {
            config.insert("format".into(), f.clone());
        }
        if let Some(e) = effort {
            config.insert("effort".into(), e.clone());
        }
        body.insert("output_config".into(), Value::Object(config));
    }
    if let Some(tools) = params
        .get("tools")
        .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
    {
        body.insert("tools".into(), tools.clone());
    }
    if let Some(Value::Object(extra)) = params.get("extra_body") {
        body.extend(extra.clone());
    }
    Value::Object(body)
}

/// JavaScript's truthiness of a config value.
fn is_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// promptfoo's `outputFromMessage`.
pub fn output(content: &[Value], show_thinking: bool) -> String {
    let is = |t: &str| content.iter().any(|b| b["type"] == t);
    if is("tool_use") || is("thinking") || is("redacted_thinking") {
        return content
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => js_text(&b["text"]),
                Some("thinking")
                    if show_thinking && !b["thinking"].as_str().unwrap_or("").trim().is_empty() =>
                {
                    format!(
                        "Thinking: {}\nSignature: {}",
                        js_text(&b["thinking"]),
                        js_text(&b["signature"])
                    )
                }
                Some("redacted_thinking") if show_thinking => {
                    format!("Redacted Thinking: {}", js_text(&b["data"]))
                }
                Some("thinking" | "redacted_thinking") => String::new(),
                _ => b.to_string(),
            })
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
    }
    content
        .iter()
        .map(|b| match &b["text"] {
            Value::String(s) => s.clone(),
            _ => "undefined".to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Calls the Messages API once for the rendered `prompt`, as promptfoo.
pub fn call(
    config: &AnthropicConfig,
    prompt: &str,
    show_thinking: bool,
    timeout: std::time::Duration,
) -> Result<TargetOutput, TargetFailure> {
    let url = format!("{}/v1/messages", config.base_url);
    let Some(key) = &config.api_key else {
        return Err(TargetFailure::fatal(
            "Anthropic API key is not set. Set the ANTHROPIC_API_KEY environment variable or add `apiKey` to the provider config (promptfoo's message)"
                .to_owned(),
        ));
    };
    let body = body(&config.model, prompt, &config.request_params);
    let started = Instant::now();
    let response = super::api::send(
        &url,
        &[
            ("x-api-key", key.clone()),
            ("anthropic-version", "2023-06-01".to_owned()),
        ],
        &body,
        timeout,
    )?;
    let doc = super::anthropic::message_reply(&url, response)?;
    let blocks = doc["content"].as_array().expect("checked by message_reply");
    let tool_calls = blocks
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| ToolCall {
            id: b["id"].as_str().map(str::to_owned),
            tool: b["name"].as_str().unwrap_or_default().to_owned(),
            input: b.get("input").cloned(),
            ..ToolCall::default()
        })
        .collect();
    let u64_at = |p: &str| doc.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let text = output(blocks, show_thinking);
    // A `json_schema` output format: promptfoo parses the reply.
    let structured = config
        .request_params
        .get("output_format")
        .is_some_and(|f| f["type"] == "json_schema");
    let parsed = structured
        .then(|| serde_json::from_str::<Value>(&text).ok())
        .flatten();
    let mut out = super::api::answer(
        text,
        tool_calls,
        started,
        [
            u64_at("/usage/input_tokens"),
            u64_at("/usage/output_tokens"),
            u64_at("/usage/cache_read_input_tokens"),
            u64_at("/usage/cache_creation_input_tokens"),
        ],
        ("anthropic", &config.model),
        doc["stop_reason"].as_str().map(str::to_owned),
    );
    // promptfoo's price, not pi-ai's: its own table, read by the suite.
    out.cost_usd = config.pricing.map(|p| {
        p.cost(
            u64_at("/usage/input_tokens"),
            u64_at("/usage/output_tokens"),
            u64_at("/usage/cache_read_input_tokens"),
            u64_at("/usage/cache_creation_input_tokens"),
        )
    });
    out.output_json = parsed;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_parsed_as_promptfoos_parse_messages() {
        let (s, m) = parse_messages("Tell me a joke about cats.\n");
        assert!(s.is_none());
        assert_eq!(
            m,
            vec![
                json!({"role": "user", "content": [{"type": "text", "text": "Tell me a joke about cats."}]})
            ]
        );
        let (s, m) =
            parse_messages("system: Be terse.\nuser: Hi\nthere\nassistant: Hello\nuser: Bye");
        assert_eq!(s, Some(json!([{"type": "text", "text": "Be terse."}])));
        assert_eq!(m.len(), 3);
        assert_eq!(m[0]["content"][0]["text"], "Hi\nthere");
        assert_eq!(m[1]["role"], "assistant");
        let (s, m) = parse_messages(
            r#"[{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]"#,
        );
        assert_eq!(s, Some(json!([{"type": "text", "text": "S"}])));
        assert_eq!(
            m,
            vec![json!({"role": "user", "content": [{"type": "text", "text": "U"}]})]
        );
    }

    #[test]
    fn the_body_has_promptfoos_defaults() {
        let none = Map::new();
        let b = body("claude-3-5-haiku-latest", "Hi", &none);
        assert_eq!(b["max_tokens"], 1024);
        assert_eq!(b["temperature"], 0);
        assert_eq!(b["stream"], false);
        assert!(b.get("system").is_none());
        let mut params = Map::new();
        params.insert("temperature".into(), json!(0.7));
        params.insert("max_tokens".into(), json!(300));
        let b = body("claude-sonnet-4-20250514", "Hi", &params);
        assert_eq!(
            (b["temperature"].clone(), b["max_tokens"].clone()),
            (json!(0.7), json!(300))
        );
        // Sampling parameters are omitted where promptfoo omits them.
        let b = body("claude-opus-4-7", "Hi", &params);
        assert!(b.get("temperature").is_none());
        assert_eq!(body("claude-opus-5", "Hi", &none)["max_tokens"], 2048);
        assert!(!family("claude-opus-50", &["claude-opus-5"]));
    }

    #[test]
    fn output_format_and_effort_go_under_output_config() {
        let mut params = Map::new();
        params.insert(
            "output_format".into(),
            json!({"type": "json_schema", "schema": {"type": "object"}}),
        );
        params.insert("effort".into(), json!("high"));
        let b = body("claude-sonnet-4-6", "Hi", &params);
        assert_eq!(
            b["output_config"],
            json!({"format": {"type": "json_schema", "schema": {"type": "object"}}, "effort": "high"})
        );
        assert!(
            body("claude-sonnet-4-6", "Hi", &Map::new())
                .get("output_config")
                .is_none()
        );
    }

    #[test]
    fn the_output_is_promptfoos() {
        let text = [
            json!({"type": "text", "text": "a"}),
            json!({"type": "text", "text": "b"}),
        ];
        assert_eq!(output(&text, true), "a\n\nb");
        let tool = [
            json!({"type": "text", "text": "calling"}),
            json!({"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}}),
        ];
        assert_eq!(
            output(&tool, true),
            "calling\n\n{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{\"x\":1}}"
        );
    }
}
