//! The `openai` target: any OpenAI-compatible chat-completions endpoint —
//! OpenAI, Azure OpenAI, OpenRouter, vLLM, Ollama, llama.cpp's server.
//!
//! Settings: `base_url` (default `https://api.openai.com/v1`), `model`,
//! `api_key` (from `${{ VAR }}`; optional for local servers), `temperature`,
//! `max_output_tokens`, `timeout_seconds` (default 120), and `pricing`
//! (`input_per_million`, `output_per_million` USD) for cost when the server
//! reports none; `request_params`, an object of more request fields (`top_p`,
//! `stop`, `tools`...) sent as given; `output_style: promptfoo` makes the
//! candidate what promptfoo's OpenAI provider makes it (a refusal's text,
//! tool calls as JSON, `Thinking:` before reasoning). 429 and 5xx answers and network errors are retried by the
//! target's retry policy, honouring `Retry-After`; other 4xx are not.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::{Invocation, OutputMessage, TargetFailure, TargetOutput, TokenUsage, ToolCall, prompt};
use crate::suite::TestCase;

/// An OpenAI-compatible endpoint's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    /// The provider name as written (`openai`, `azure`, `ollama`, ...).
    pub provider: String,
    /// Base URL, ending before `/chat/completions`.
    pub base_url: String,
    /// Model (or Azure deployment).
    pub model: String,
    /// API key.
    pub api_key: Option<String>,
    /// Headers sent with every call (`headers:`), over the key's header of
    /// the same name.
    pub headers: Vec<(String, String)>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Cap on the reply's tokens.
    pub max_output_tokens: Option<u64>,
    /// Request timeout.
    pub timeout: Duration,
    /// USD per million input tokens.
    pub input_per_million: Option<f64>,
    /// USD per million output tokens.
    pub output_per_million: Option<f64>,
    /// USD per million cached prompt tokens (else the input price).
    pub cached_input_per_million: Option<f64>,
    /// More request fields, sent as given (never overriding `model` or
    /// `messages`).
    pub request_params: Map<String, Value>,
    /// How the candidate text is made from the reply.
    pub output_style: OutputStyle,
    /// promptfoo's `openai:responses:` provider: the Responses API, as
    /// promptfoo calls it (`api_format: responses` with `output_style:
    /// promptfoo`).
    pub promptfoo_responses: bool,
    /// Azure's `api-version` query parameter (promptfoo's `azure:chat:`).
    pub api_version: Option<String>,
    /// The header the key goes in, when not `Authorization: Bearer`
    /// (`api-key` for Azure).
    pub api_key_header: Option<String>,
    /// Ollama's own API instead of the OpenAI-compatible one (promptfoo's
    /// `ollama:` providers).
    pub ollama: Option<super::ollama::OllamaApi>,
}

/// How the candidate text is made from a chat completion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OutputStyle {
    /// The message's `content` (tool calls are in the messages).
    #[default]
    Content,
    /// promptfoo 0.121's OpenAI chat provider: a refusal's text, a
    /// filtered answer's placeholder, tool calls (with any content, the
    /// whole message) as JSON, reasoning as a `Thinking:` prefix, a
    /// `json_schema` reply re-serialised.
    Promptfoo {
        /// promptfoo's `showThinking` (default true).
        show_thinking: bool,
        /// A `json_schema` reply is parsed (promptfoo parses it when the
        /// config's `response_format` is written inline: one given as a
        /// `file://` is still a string when the provider checks its type).
        json_reply: bool,
    },
}

impl OpenAiConfig {
    /// Reads an `openai`-style entry.
    pub fn parse(provider: &str, entry: &Map<String, Value>) -> Result<Self, (String, String)> {
        let model = entry
            .get("model")
            .or(entry.get("deployment"))
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| {
                (
                    "model".to_owned(),
                    format!("a `{provider}` target needs a `model`"),
                )
            })?
            .to_owned();
        let default_base = match provider {
            "openrouter" => "https://openrouter.ai/api/v1",
            "ollama" => "http://localhost:11434/v1",
            "vllm" => "http://localhost:8000/v1",
            _ => "https://api.openai.com/v1",
        };
        let base_url = entry
            .get("base_url")
            .or(entry.get("endpoint"))
            .and_then(Value::as_str)
            .unwrap_or(default_base)
            .trim_end_matches('/')
            .to_owned();
        let number = |key: &str| -> Result<Option<f64>, (String, String)> {
            match entry.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => Ok(n.as_f64()),
                Some(Value::String(s)) if s.parse::<f64>().is_ok() => Ok(s.parse().ok()),
                Some(_) => Err((key.to_owned(), format!("`{key}` must be a number"))),
            }
        };
        let pricing = entry.get("pricing").and_then(Value::as_object);
        let headers = match entry.get("headers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(o)) => o
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    _ => Err((
                        "headers".to_owned(),
                        format!("`headers.{k}` must be a string"),
                    )),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err((
                    "headers".to_owned(),
                    "`headers` must be a mapping of header names to values".to_owned(),
                ));
            }
        };
        Ok(Self {
            headers,
            provider: provider.to_owned(),
            base_url,
            model,
            api_key: entry
                .get("api_key")
                .and_then(Value::as_str)
                .filter(|k| !k.is_empty())
                .map(str::to_owned),
            temperature: number("temperature")?,
            max_output_tokens: number("max_output_tokens")?.map(|n| n as u64),
            timeout: super::seconds_field(
                "timeout_seconds",
                number("timeout_seconds")?.unwrap_or(120.0),
            )?,
            input_per_million: pricing
                .and_then(|p| p.get("input_per_million"))
                .and_then(Value::as_f64),
            output_per_million: pricing
                .and_then(|p| p.get("output_per_million"))
                .and_then(Value::as_f64),
            cached_input_per_million: pricing
                .and_then(|p| p.get("cached_input_per_million"))
                .and_then(Value::as_f64),
            request_params: match entry.get("request_params") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(o)) => o.clone(),
                Some(_) => {
                    return Err((
                        "request_params".to_owned(),
                        "`request_params` must be an object of request fields".to_owned(),
                    ));
                }
            },
            output_style: match entry.get("output_style") {
                None | Some(Value::Null) => OutputStyle::Content,
                Some(Value::String(s)) if s == "content" => OutputStyle::Content,
                Some(Value::String(s)) if s == "promptfoo" => OutputStyle::Promptfoo {
                    show_thinking: entry
                        .get("show_thinking")
                        .and_then(Value::as_bool)
                        .unwrap_or(true),
                    json_reply: entry
                        .get("json_reply")
                        .and_then(Value::as_bool)
                        .unwrap_or(true),
                },
                Some(_) => {
                    return Err((
                        "output_style".to_owned(),
                        "`output_style` must be `content` or `promptfoo`".to_owned(),
                    ));
                }
            },
            promptfoo_responses: false,
            api_version: get_text(entry, "api_version")?,
            api_key_header: get_text(entry, "api_key_header")?,
            ollama: None,
        })
    }

    fn url(&self) -> String {
        match &self.api_version {
            Some(v) => format!(
                "{}/chat/completions?api-version={}",
                self.base_url,
                url_encode(v)
            ),
            None => format!("{}/chat/completions", self.base_url),
        }
    }
}

/// A text field of an entry, when given.
fn get_text(entry: &Map<String, Value>, key: &str) -> Result<Option<String>, (String, String)> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err((key.to_owned(), format!("`{key}` must be text"))),
    }
}

/// `s` as a URL query value.
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// POSTs `body` to `url` with the endpoint's key: the answer as JSON, or
/// why there is none (429 and 5xx retryable, with the server's
/// `retry-after`).
pub(super) fn post(
    config: &OpenAiConfig,
    url: &str,
    body: &Value,
    timeout: Option<Duration>,
) -> Result<Value, TargetFailure> {
    let timeout = timeout.map_or(config.timeout, |t| t.min(config.timeout));
    let mut headers = Vec::new();
    if let Some(key) = &config.api_key {
        headers.push(match config.api_key_header.as_deref() {
            Some(h) => (h, key.clone()),
            None if config.provider.starts_with("azure") => ("api-key", key.clone()),
            None => ("Authorization", format!("Bearer {key}")),
        });
    }
    // The entry's own headers, over the key's when they name the same one.
    headers.retain(|(name, _)| {
        !config
            .headers
            .iter()
            .any(|(h, _)| h.eq_ignore_ascii_case(name))
    });
    headers.extend(config.headers.iter().map(|(k, v)| (k.as_str(), v.clone())));
    let response = super::api::send(url, &headers, body, timeout)?;
    super::api::json(url, response)
}

/// An embedding and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    /// The vector.
    pub vector: Vec<f64>,
    /// Input tokens, as reported.
    pub input_tokens: Option<u64>,
    /// Cost in USD, when the config prices input tokens.
    pub cost_usd: Option<f64>,
}

/// The embedding of `text` from the endpoint's `/embeddings` (OpenAI's
/// shape: `{model, input}` → `data[0].embedding`).
pub fn embed(
    config: &OpenAiConfig,
    text: &str,
    timeout: Option<Duration>,
) -> Result<Embedded, TargetFailure> {
    let mut body = json!({"model": config.model, "input": text});
    for (k, v) in &config.request_params {
        if k != "model" && k != "input" {
            body[k] = v.clone();
        }
    }
    let url = format!("{}/embeddings", config.base_url);
    let doc = post(config, &url, &body, timeout)?;
    let vector = doc
        .pointer("/data/0/embedding")
        .and_then(Value::as_array)
        .and_then(|v| v.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            TargetFailure::fatal(match doc.get("error") {
                Some(error) => format!("{url} answered with an error: {error}"),
                None => format!("{url} answered without data[0].embedding, a list of numbers"),
            })
        })?;
    let input_tokens = doc.pointer("/usage/prompt_tokens").and_then(Value::as_u64);
    Ok(Embedded {
        vector,
        input_tokens,
        cost_usd: config
            .input_per_million
            .zip(input_tokens)
            .map(|(p, t)| p * t as f64 / 1e6),
    })
}

/// Optional request parameters beyond the config's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatParams {
    /// Overrides the config's temperature.
    pub temperature: Option<f64>,
    /// Overrides the config's max tokens.
    pub max_tokens: Option<u64>,
    /// A JSON Schema for the reply (`response_format`).
    pub response_schema: Option<Value>,
    /// A seed.
    pub seed: Option<u64>,
}

/// Sends one chat completion.
pub fn chat(
    config: &OpenAiConfig,
    messages: &[(String, String)],
    params: &ChatParams,
    timeout: Option<Duration>,
) -> Result<TargetOutput, TargetFailure> {
    let messages = messages
        .iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    chat_messages(config, Value::Array(messages), params, timeout)
}

/// promptfoo's `parseChatPrompt`: a prompt that starts with `- role:` is a
/// YAML chat, one that parses as JSON is its value (a chat's messages),
/// any other is one user message — except text that looks like JSON (in
/// `{…}` or `[…]`) but does not parse, or a `- role:` chat that is not
/// YAML, which promptfoo refuses (the row is an error, naming why).
pub fn promptfoo_chat(prompt: &str) -> Result<Value, String> {
    let trimmed = prompt.trim();
    if trimmed.starts_with("- role:") {
        return crate::suite::yaml::parse(prompt).map_err(|e| {
            format!(
                "Chat Completion prompt is not a valid YAML string: {}\n\n{prompt}",
                e.message
            )
        });
    }
    match serde_json::from_str::<Value>(prompt) {
        Ok(v) => Ok(v),
        Err(e)
            if (trimmed.starts_with('{') && trimmed.ends_with('}'))
                || (trimmed.starts_with('[') && trimmed.ends_with(']')) =>
        {
            Err(format!(
                "Chat Completion prompt is not a valid JSON string: {e}\n\n{prompt}"
            ))
        }
        Err(_) => Ok(json!([{"role": "user", "content": prompt}])),
    }
}

/// Sends one chat completion of `messages` (the request's `messages` as
/// they are sent).
pub fn chat_messages(
    config: &OpenAiConfig,
    messages: Value,
    params: &ChatParams,
    timeout: Option<Duration>,
) -> Result<TargetOutput, TargetFailure> {
    let mut body = json!({
        "model": config.model,
        "messages": messages,
    });
    if let Some(t) = params.temperature.or(config.temperature) {
        // As JavaScript writes a number: `0`, not `0.0`.
        body["temperature"] = if t.fract() == 0.0 && t.abs() < 9e15 {
            json!(t as i64)
        } else {
            json!(t)
        };
    }
    if let Some(m) = params.max_tokens.or(config.max_output_tokens) {
        body["max_tokens"] = json!(m);
    }
    if let Some(seed) = params.seed {
        body["seed"] = json!(seed);
    }
    if let Some(schema) = &params.response_schema {
        body["response_format"] =
            json!({"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}});
    }
    for (k, v) in &config.request_params {
        if k != "model" && k != "messages" {
            body[k] = v.clone();
        }
    }
    let started = Instant::now();
    let doc = post(config, &config.url(), &body, timeout)?;
    let Some(message) = doc.pointer("/choices/0/message") else {
        if let Some(error) = doc.get("error") {
            return Err(TargetFailure::fatal(format!(
                "{} answered with an error: {error}",
                config.url()
            )));
        }
        return Err(TargetFailure::fatal(format!(
            "{} answered without choices[0].message",
            config.url()
        )));
    };
    let finish_reason = doc
        .pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let content = match config.output_style {
        OutputStyle::Content => match message.get("content") {
            Some(Value::String(s)) => s.clone(),
            // Content parts (some compatible servers answer so): their text.
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
            // No content is an answer only with tool calls or a refusal.
            None | Some(Value::Null)
                if message
                    .get("tool_calls")
                    .is_some_and(|c| c.as_array().is_some_and(|a| !a.is_empty()))
                    || message.get("refusal").is_some_and(Value::is_string) =>
            {
                String::new()
            }
            other => {
                return Err(TargetFailure::fatal(format!(
                    "{} answered a message without text content, tool calls or a refusal (`content`: {})",
                    config.url(),
                    other.map_or("missing".to_owned(), |v| crate::text::shown(&v.to_string())
                        .chars()
                        .take(200)
                        .collect())
                )));
            }
        },
        OutputStyle::Promptfoo {
            show_thinking,
            json_reply,
        } => promptfoo_output(
            message,
            finish_reason.as_deref(),
            json_reply && json_schema(&config.request_params),
            show_thinking,
        ),
    };
    // promptfoo's output is then a structured value (tool calls, a parsed
    // `json_schema` reply): code assertions read it as one.
    let output_json = match config.output_style {
        OutputStyle::Promptfoo { json_reply, .. }
            if content.starts_with(['{', '['])
                && promptfoo_structured(
                    message,
                    json_reply && json_schema(&config.request_params),
                ) =>
        {
            serde_json::from_str::<Value>(&content)
                .ok()
                .filter(|v| v.is_object() || v.is_array())
        }
        _ => None,
    };
    let tool_calls: Vec<ToolCall> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| ToolCall {
                    id: c.get("id").and_then(Value::as_str).map(str::to_owned),
                    tool: c
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    input: c
                        .pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .map(|a| serde_json::from_str(a).unwrap_or(Value::String(a.to_owned()))),
                    ..ToolCall::default()
                })
                .collect()
        })
        .unwrap_or_default();
    let usage = doc.get("usage");
    let token_usage = usage.and_then(|u| {
        Some(TokenUsage {
            input: u.get("prompt_tokens").and_then(Value::as_u64)?,
            output: u.get("completion_tokens").and_then(Value::as_u64)?,
            cached: u
                .pointer("/prompt_tokens_details/cached_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            reasoning: u
                .pointer("/completion_tokens_details/reasoning_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        })
    });
    let cost_usd = usage
        .and_then(|u| u.get("cost"))
        .and_then(Value::as_f64)
        .or_else(|| {
            let t = token_usage?;
            priced(config, t.input, t.output, t.cached)
        });
    Ok(TargetOutput {
        text: content.clone(),
        messages: vec![OutputMessage {
            role: "assistant".into(),
            content,
            tool_calls,
            ..OutputMessage::default()
        }],
        duration_ms: Some(started.elapsed().as_millis() as u64),
        token_usage,
        cost_usd,
        target_used: None,
        llm_calls: super::LlmCalls::Known(1),
        finish_reason,
        logprobs: doc
            .pointer("/choices/0/logprobs/content")
            .and_then(Value::as_array)
            .map(|tokens| {
                tokens
                    .iter()
                    .filter_map(|t| t.get("logprob").and_then(Value::as_f64))
                    .collect()
            }),
        output_json,
        raw: None,
        file_changes: None,
    })
}

/// The output promptfoo 0.121's OpenAI chat provider makes of a reply
/// (`src/providers/openai/chat.ts`), as the text its assertions read (an
/// object output is read as its `JSON.stringify`).
fn promptfoo_output(
    message: &Value,
    finish_reason: Option<&str>,
    json_reply: bool,
    show_thinking: bool,
) -> String {
    let text = |v: Option<&Value>| -> Option<String> {
        match v? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    };
    let content = message.get("content");
    if let Some(refusal) = message.get("refusal").filter(|r| !is_falsy(r)) {
        return text(Some(refusal)).unwrap_or_default();
    }
    let filtered = finish_reason
        .map(|r| r.trim().to_lowercase())
        .is_some_and(|r| r == "content_filter" || r == "refusal");
    if filtered {
        return match content {
            Some(c) if !is_falsy(c) => text(Some(c)).unwrap_or_default(),
            _ => "Content filtered by provider".to_owned(),
        };
    }
    let tool_calls = message.get("tool_calls");
    let function_call = message.get("function_call");
    let has_calls =
        tool_calls.is_some_and(|t| !is_falsy(t)) || function_call.is_some_and(|f| !is_falsy(f));
    let reasoning = message.get("reasoning").filter(|r| !is_falsy(r));
    let mut output: Value = if reasoning.is_some() {
        content.cloned().unwrap_or(Value::Null)
    } else if content.is_some_and(|c| !is_falsy(c)) && has_calls {
        if tool_calls
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            content.cloned().unwrap_or(Value::Null)
        } else {
            message.clone()
        }
    } else if content.is_none_or(Value::is_null)
        || (content.and_then(Value::as_str) == Some("") && tool_calls.is_some_and(|t| !is_falsy(t)))
    {
        function_call
            .filter(|f| !is_falsy(f))
            .or(tool_calls)
            .cloned()
            .unwrap_or(Value::Null)
    } else {
        content.cloned().unwrap_or(Value::Null)
    };
    if json_reply
        && let Value::String(s) = &output
        && let Ok(parsed) = serde_json::from_str::<Value>(s)
    {
        output = parsed;
    }
    if show_thinking && let (Some(r), Value::String(s)) = (reasoning, &output) {
        output = Value::String(format!(
            "Thinking: {}\n\n{s}",
            text(Some(r)).unwrap_or_default()
        ));
    }
    if show_thinking
        && let (Some(Value::String(r)), Value::String(s)) =
            (message.get("reasoning_content"), &output)
        && !r.is_empty()
    {
        output = Value::String(format!("Thinking: {r}\n\n{s}"));
    }
    match output {
        Value::String(s) => s,
        // `String(undefined)` / `String(null)` as promptfoo's string
        // assertions read them.
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Whether the request asks for a `json_schema` reply.
fn json_schema(params: &Map<String, Value>) -> bool {
    params
        .get("response_format")
        .and_then(|f| f.get("type"))
        .and_then(Value::as_str)
        == Some("json_schema")
}

/// Whether promptfoo's OpenAI provider made an object of this reply: tool
/// or function calls, or a `json_schema` reply it parses (`json_reply`).
fn promptfoo_structured(message: &Value, json_reply: bool) -> bool {
    let calls = |k: &str| message.get(k).is_some_and(|v| !is_falsy(v));
    (calls("tool_calls") || calls("function_call") || json_reply)
        && message.get("refusal").is_none_or(is_falsy)
}

/// JavaScript's falsiness for a JSON value.
fn is_falsy(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// What `input` prompt tokens (`cached` of them from the cache) and
/// `output` reply tokens cost at the config's `pricing`, if it has one.
pub(super) fn priced(config: &OpenAiConfig, input: u64, output: u64, cached: u64) -> Option<f64> {
    let rate = config.input_per_million?;
    let cached = cached.min(input);
    Some(
        rate * (input - cached) as f64 / 1e6
            + config.cached_input_per_million.unwrap_or(rate) * cached as f64 / 1e6
            + config.output_per_million? * output as f64 / 1e6,
    )
}

/// Runs the endpoint for one test.
pub fn invoke(
    config: &OpenAiConfig,
    test: &TestCase,
    inv: &Invocation<'_>,
) -> Result<TargetOutput, TargetFailure> {
    let mut messages = prompt::chat_messages(&test.input);
    // AgentV's chat prompt always has a system message: its default when
    // the test gives none (promptfoo's provider sends the prompt alone).
    if config.output_style == OutputStyle::Content && !messages.iter().any(|(r, _)| r == "system") {
        messages.insert(
            0,
            (
                "system".to_owned(),
                super::api::DEFAULT_SYSTEM_PROMPT.to_owned(),
            ),
        );
    }
    let timeout = inv.time_left(Some(config.timeout));
    let case_bound = inv.deadline.is_some() && timeout.is_some_and(|t| t < config.timeout);
    if let Some(api) = config.ollama {
        return super::ollama::call(
            config,
            api,
            &super::echo_text(test),
            timeout.map_or(config.timeout, |t| t.min(config.timeout)),
        );
    }
    if config.promptfoo_responses {
        return super::openai_responses_promptfoo::call(
            config,
            &super::echo_text(test),
            timeout.map_or(config.timeout, |t| t.min(config.timeout)),
        );
    }
    let sent = match config.output_style {
        // promptfoo's provider sends the rendered prompt as its chat.
        OutputStyle::Promptfoo { .. } => promptfoo_chat(&super::echo_text(test))
            .map_err(TargetFailure::fatal)
            .and_then(|chat| chat_messages(config, chat, &ChatParams::default(), timeout)),
        OutputStyle::Content => chat(config, &messages, &ChatParams::default(), timeout),
    };
    sent.map_err(|e| {
        if case_bound && e.message.contains("did not answer within") {
            TargetFailure::timeout(format!("the case ran past its timeout_ms: {}", e.message))
        } else {
            e
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_prompts_are_parsed_as_promptfoo_parses_them() {
        let user = |t: &str| json!([{"role": "user", "content": t}]);
        assert_eq!(promptfoo_chat("Hello {there}"), Ok(user("Hello {there}")));
        assert_eq!(
            promptfoo_chat(r#"[{"role": "system", "content": "x"}]"#),
            Ok(json!([{"role": "system", "content": "x"}]))
        );
        assert_eq!(promptfoo_chat("42"), Ok(json!(42)));
        // Looks like JSON, is not: promptfoo's error, the row fails.
        let e =
            promptfoo_chat("[\n {\"role\": \"user\", \"content\": \"a \"b\"\"}\n]").unwrap_err();
        assert!(
            e.starts_with("Chat Completion prompt is not a valid JSON string: "),
            "{e}"
        );
        assert!(promptfoo_chat("{not json}").is_err());
        // A `- role:` chat that is not YAML.
        let e = promptfoo_chat("- role: user\n  content: [unclosed").unwrap_err();
        assert!(
            e.starts_with("Chat Completion prompt is not a valid YAML string: "),
            "{e}"
        );
    }

    #[test]
    fn promptfoo_output_follows_promptfoos_openai_provider() {
        let out =
            |m: Value, reason: Option<&str>, show: bool| promptfoo_output(&m, reason, false, show);
        // Content with tool calls: the whole message, as JSON.
        let m = json!({"role": "assistant", "content": "Calling", "tool_calls": [{"id": "1"}]});
        assert_eq!(out(m.clone(), Some("tool_calls"), true), m.to_string());
        // Content with an empty tool-call list: the content.
        let m = json!({"content": "Hi", "tool_calls": []});
        assert_eq!(out(m, None, true), "Hi");
        // `reasoning`: the content, after the thinking unless hidden.
        let m = json!({"content": "42", "reasoning": "6*7"});
        assert_eq!(out(m.clone(), None, true), "Thinking: 6*7\n\n42");
        assert_eq!(out(m, None, false), "42");
        // A legacy function call with no content.
        let m = json!({"content": null, "function_call": {"name": "f", "arguments": "{}"}});
        assert_eq!(out(m, None, true), r#"{"name":"f","arguments":"{}"}"#);
        // A json_schema reply is re-serialised compactly, as JSON.stringify,
        // when promptfoo parses it; kept as sent when not.
        let m = json!({"content": "{ \"a\" : 1 }"});
        assert_eq!(promptfoo_output(&m, None, true, true), r#"{"a":1}"#);
        assert_eq!(promptfoo_output(&m, None, false, true), r#"{ "a" : 1 }"#);
    }
}
