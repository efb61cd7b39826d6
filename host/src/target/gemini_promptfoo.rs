//! promptfoo's `google:<model>` (AI Studio) and `vertex:<model>` (Vertex
//! AI, express mode) providers (0.121.20, `src/providers/google/`), as a
//! promptfoo config's `gemini` target with `output_style: promptfoo` calls
//! them: `POST {base}/models/{model}:generateContent` with the key in
//! `x-goog-api-key`; `contents` from the rendered prompt as promptfoo's
//! `maybeCoerceToGeminiFormat` makes them (plain text one user turn; an
//! OpenAI-style chat its turns, `assistant` as `model`, system messages
//! moved into the system instruction after the config's own; Gemini's own
//! format as written); the request fields settled by the suite reader.
//! The output as promptfoo's `formatCandidateContents` makes it: every
//! part's text joined (thoughts too), or the parts as JSON when one has no
//! text; a blocked prompt or a candidate stopped for safety is an error.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::file::get_str;
use super::gemini::GeminiConfig;
use super::{TargetFailure, TargetOutput, ToolCall};

/// What the suite reader settled for a promptfoo Google provider.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `system_instruction` (AI Studio) or `systemInstruction` (Vertex).
    pub system_key: String,
    /// The config's `systemInstruction`, `{parts: [...]}`.
    pub system_instruction: Option<Value>,
    /// More request fields (`generationConfig`, `safetySettings`, …).
    pub request_params: Map<String, Value>,
}

impl Settings {
    /// Reads an entry's promptfoo settings.
    pub fn parse(entry: &Map<String, Value>) -> Result<Self, (String, String)> {
        Ok(Self {
            system_key: get_str(entry, "system_key")?
                .unwrap_or_else(|| "system_instruction".into()),
            system_instruction: entry.get("system_instruction").cloned(),
            request_params: match entry.get("request_params") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(o)) => o.clone(),
                Some(_) => {
                    return Err((
                        "request_params".into(),
                        "`request_params` must be an object of request fields".into(),
                    ));
                }
            },
        })
    }
}

/// `contents` and the system instruction's parts for a rendered prompt.
pub fn contents(
    prompt: &str,
    configured: Option<&Value>,
) -> Result<(Value, Option<Value>), String> {
    let chat = super::openai::promptfoo_chat(prompt)?;
    let mut system_parts: Vec<Value> = configured
        .and_then(|s| s.get("parts"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let contents = match &chat {
        // Plain text (promptfoo's default): parts, then role.
        Value::Array(items)
            if items.len() == 1
                && items[0].get("role") == Some(&json!("user"))
                && items[0].get("content") == Some(&json!(prompt)) =>
        {
            json!([{"parts": [{"text": prompt}], "role": "user"}])
        }
        Value::Array(items) if items.iter().all(|m| m.get("parts").is_some()) => chat.clone(),
        Value::Array(items) => {
            let mut turns = Vec::new();
            for m in items {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
                let parts: Vec<Value> = match m.get("content") {
                    Some(Value::String(s)) => vec![json!({"text": s})],
                    Some(Value::Array(blocks)) => blocks
                        .iter()
                        .map(|b| match b.get("text") {
                            Some(t) => json!({"text": t}),
                            None => b.clone(),
                        })
                        .collect(),
                    Some(other) => vec![json!({"text": other.to_string()})],
                    None => Vec::new(),
                };
                if role == "system" {
                    system_parts.extend(parts);
                    continue;
                }
                let role = if role == "assistant" { "model" } else { role };
                turns.push(json!({"role": role, "parts": parts}));
            }
            if turns.is_empty() && !system_parts.is_empty() && configured.is_none() {
                // Only system messages: one user turn.
                turns.push(json!({"role": "user", "parts": std::mem::take(&mut system_parts)}));
            }
            Value::Array(turns)
        }
        Value::String(s) => json!([{"parts": [{"text": s}], "role": "user"}]),
        other => json!([{"parts": [{"text": other.to_string()}], "role": "user"}]),
    };
    let system = (!system_parts.is_empty()).then(|| json!({"parts": system_parts}));
    Ok((contents, system))
}

/// The request body for `prompt`.
pub fn body(settings: &Settings, prompt: &str) -> Result<Value, String> {
    let (contents, system) = contents(prompt, settings.system_instruction.as_ref())?;
    let mut body = Map::new();
    body.insert("contents".into(), contents);
    for (k, v) in &settings.request_params {
        if k != "contents" {
            body.insert(k.clone(), v.clone());
        }
    }
    body.entry("generationConfig").or_insert_with(|| json!({}));
    if let Some(s) = system {
        body.insert(settings.system_key.clone(), s);
    }
    Ok(Value::Object(body))
}

/// promptfoo's output of a reply: the text, and the parts as JSON when one
/// has no text.
pub fn output(doc: &Value) -> Result<(String, Option<Value>, Vec<ToolCall>), String> {
    let candidate = match doc {
        Value::Array(chunks) => chunks.first().and_then(|c| c.pointer("/candidates/0")),
        _ => doc.pointer("/candidates/0"),
    };
    let Some(candidate) = candidate else {
        let reason = doc
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str);
        return Err(match reason {
            Some(r) => format!("Content was blocked due to {r}"),
            None => format!(
                "No candidates returned in API response: {}",
                crate::text::shown(&doc.to_string())
            ),
        });
    };
    if let Some(r) = candidate.get("finishReason").and_then(Value::as_str)
        && [
            "SAFETY",
            "RECITATION",
            "PROHIBITED_CONTENT",
            "BLOCKLIST",
            "SPII",
        ]
        .contains(&r)
    {
        return Err(format!("Content was blocked due to {r}"));
    }
    let parts = candidate
        .pointer("/content/parts")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let tool_calls = parts
        .iter()
        .filter_map(|p| p.get("functionCall"))
        .map(|c| ToolCall {
            id: c["id"].as_str().map(str::to_owned),
            tool: c["name"].as_str().unwrap_or_default().to_owned(),
            input: Some(c.get("args").cloned().unwrap_or(json!({}))),
            ..ToolCall::default()
        })
        .collect();
    if parts
        .iter()
        .all(|p| p.get("text").is_some_and(Value::is_string))
    {
        let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        return Ok((text, None, tool_calls));
    }
    let raw = Value::Array(parts);
    Ok((raw.to_string(), Some(raw), tool_calls))
}

/// One call.
pub fn call(
    config: &GeminiConfig,
    settings: &Settings,
    prompt: &str,
    timeout: Duration,
) -> Result<TargetOutput, TargetFailure> {
    let url = format!(
        "{}/models/{}:generateContent",
        config.base_url.trim_end_matches('/'),
        config.model
    );
    let Some(key) = &config.api_key else {
        return Err(TargetFailure::fatal(format!(
            "the Google provider for {} has no API key",
            config.model
        )));
    };
    let body = body(settings, prompt).map_err(TargetFailure::fatal)?;
    let started = Instant::now();
    let response = super::api::send(&url, &[("x-goog-api-key", key.clone())], &body, timeout)?;
    let doc = super::api::json(&url, response)?;
    if let Some(error) = doc.get("error").filter(|e| !e.is_null()) {
        return Err(TargetFailure::fatal(format!(
            "{url} answered with an error: {error}"
        )));
    }
    let (text, structured, tool_calls) =
        output(&doc).map_err(|e| TargetFailure::fatal(format!("{url}: {e}")))?;
    let n = |k: &str| {
        doc.pointer(&format!("/usageMetadata/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let finish = doc
        .pointer("/candidates/0/finishReason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut out = super::api::answer(
        text,
        tool_calls,
        started,
        [
            n("promptTokenCount") + n("toolUsePromptTokenCount"),
            n("candidatesTokenCount"),
            n("cachedContentTokenCount"),
            0,
        ],
        ("google", &config.model),
        finish,
    );
    if let Some(u) = out.token_usage.as_mut() {
        u.reasoning = n("thoughtsTokenCount");
    }
    out.cost_usd = None;
    out.output_json = structured;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_are_promptfoos() {
        let (c, s) = contents("Hello", None).unwrap();
        assert_eq!(
            c.to_string(),
            r#"[{"parts":[{"text":"Hello"}],"role":"user"}]"#
        );
        assert!(s.is_none());
        let chat = r#"[{"role":"system","content":"S1"},{"role":"user","content":"U1"},{"role":"assistant","content":"A1"}]"#;
        let configured = json!({"parts": [{"text": "CFG"}]});
        let (c, s) = contents(chat, Some(&configured)).unwrap();
        assert_eq!(
            c.to_string(),
            r#"[{"role":"user","parts":[{"text":"U1"}]},{"role":"model","parts":[{"text":"A1"}]}]"#
        );
        assert_eq!(
            s.unwrap().to_string(),
            r#"{"parts":[{"text":"CFG"},{"text":"S1"}]}"#
        );
    }

    #[test]
    fn the_output_joins_every_text_part() {
        let doc = json!({"candidates": [{"content": {"parts": [{"text": "I reasoned.", "thought": true}, {"text": "The answer."}]}, "finishReason": "STOP"}]});
        assert_eq!(output(&doc).unwrap().0, "I reasoned.The answer.");
        let blocked = json!({"candidates": [{"finishReason": "SAFETY"}]});
        assert!(output(&blocked).is_err());
        let none = json!({"promptFeedback": {"blockReason": "OTHER"}});
        assert_eq!(
            output(&none).unwrap_err(),
            "Content was blocked due to OTHER"
        );
        let call = json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {"x": 1}}}]}}]});
        let (text, structured, calls) = output(&call).unwrap();
        assert!(structured.is_some() && text.starts_with('['));
        assert_eq!(calls[0].tool, "f");
    }
}
