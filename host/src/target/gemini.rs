//! AgentV's `gemini` (`google`, `google-gemini`) target: Google's Gemini
//! API, called as AgentV 4.42.4 calls it (pi-ai 0.74 through
//! `@google/genai`): `POST {base}/models/{model}:streamGenerateContent?alt=sse`
//! with `x-goog-api-key`, the turns as `contents` (`user`/`model`), the
//! system messages joined into `systemInstruction` (AgentV's default prompt
//! when there is none), `temperature` and `maxOutputTokens` in
//! `generationConfig` when set. Thought parts are not the answer; tokens
//! are pi-ai's (input less cached, output with thoughts, cached reads) and
//! the cost is at its prices.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::file::{get_f64, get_str, get_u64};
use super::{Invocation, TargetFailure, TargetOutput, ToolCall};
use crate::suite::TestCase;

/// The API's address, pi-ai's for every Gemini model.
const BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// AgentV's model when the target names none.
const DEFAULT_MODEL: &str = "gemini-2.5-flash";

/// A `gemini` target.
#[derive(Debug, Clone, PartialEq)]
pub struct GeminiConfig {
    /// The model id.
    pub model: String,
    /// The API key.
    pub api_key: Option<String>,
    /// The API's address, ending before `/models` (an evalhost extension,
    /// `base_url`, for proxies and tests).
    pub base_url: String,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// `maxOutputTokens`.
    pub max_output_tokens: Option<u64>,
    /// Request timeout.
    pub timeout: Duration,
    /// promptfoo's `google:`/`vertex:` providers: their request and output
    /// (`output_style: promptfoo`).
    pub promptfoo: Option<Box<super::gemini_promptfoo::Settings>>,
}

impl GeminiConfig {
    /// Reads a `gemini` entry (AgentV's field names).
    pub fn parse(entry: &Map<String, Value>) -> Result<Self, (String, String)> {
        Ok(Self {
            model: get_str(entry, "model")?
                .or(get_str(entry, "deployment")?)
                .or(get_str(entry, "variant")?)
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
            api_key: get_str(entry, "api_key")?.filter(|k| !k.is_empty()),
            base_url: get_str(entry, "base_url")?
                .or(get_str(entry, "endpoint")?)
                .unwrap_or_else(|| BASE_URL.to_owned())
                .trim_end_matches('/')
                .to_owned(),
            temperature: get_f64(entry, "temperature")?,
            max_output_tokens: get_u64(entry, "max_output_tokens")?,
            timeout: super::seconds_field(
                "timeout_seconds",
                get_f64(entry, "timeout_seconds")?.unwrap_or(120.0),
            )?,
            promptfoo: match get_str(entry, "output_style")?.as_deref() {
                None | Some("content") => None,
                Some("promptfoo") => {
                    Some(Box::new(super::gemini_promptfoo::Settings::parse(entry)?))
                }
                Some(_) => {
                    return Err((
                        "output_style".into(),
                        "`output_style` must be `content` or `promptfoo`".into(),
                    ));
                }
            },
        })
    }

    fn url(&self) -> String {
        format!(
            "{}/models/{}:streamGenerateContent?alt=sse",
            self.base_url, self.model
        )
    }

    /// The request body AgentV sends for `messages`.
    pub fn body(
        &self,
        messages: &[(String, String)],
        temperature: Option<f64>,
        max_tokens: Option<u64>,
    ) -> Value {
        let system = super::api::system_prompt(messages);
        let contents: Vec<Value> = messages
            .iter()
            .filter(|(r, c)| r != "system" && !(r == "user" && c.trim().is_empty()))
            .map(|(role, content)| match role.as_str() {
                "user" => json!({"role": "user", "parts": [{"text": content}]}),
                "tool" | "function" => {
                    json!({"role": "model", "parts": [{"text": format!("@[Tool]: {content}")}]})
                }
                _ => json!({"role": "model", "parts": [{"text": content}]}),
            })
            .collect();
        let mut body = json!({
            "contents": contents,
            "systemInstruction": {"parts": [{"text": system}]},
        });
        let mut generation = Map::new();
        if let Some(t) = temperature.or(self.temperature) {
            generation.insert("temperature".into(), json!(t));
        }
        if let Some(m) = max_tokens.or(self.max_output_tokens) {
            generation.insert("maxOutputTokens".into(), json!(m));
        }
        if !generation.is_empty() {
            body["generationConfig"] = Value::Object(generation);
        }
        body
    }
}

/// Calls the API once for `messages`.
pub fn chat(
    config: &GeminiConfig,
    messages: &[(String, String)],
    temperature: Option<f64>,
    max_tokens: Option<u64>,
    timeout: Option<Duration>,
) -> Result<TargetOutput, TargetFailure> {
    let url = config.url();
    let Some(key) = &config.api_key else {
        return Err(TargetFailure::fatal(format!(
            "the `gemini` target for {} has no `api_key`: give it `api_key: ${{{{ GOOGLE_API_KEY }}}}`",
            config.model
        )));
    };
    let body = config.body(messages, temperature, max_tokens);
    let timeout = timeout.map_or(config.timeout, |t| t.min(config.timeout));
    let started = Instant::now();
    let response = super::api::send(&url, &[("x-goog-api-key", key.clone())], &body, timeout)?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut finish = None;
    let mut usage = [0u64; 4];
    // Whether any chunk carried a candidate, and why none did: a blocked
    // prompt answers with `promptFeedback` only — a target error, never an
    // empty answer graded as the model's.
    let mut answered = false;
    let mut feedback: Option<Value> = None;
    super::api::events(&url, response, |event| {
        if event.data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(&event.data).map_err(|e| {
            TargetFailure::fatal(format!("{url} streamed a chunk that is not JSON ({e})"))
        })?;
        if let Some(error) = chunk.get("error") {
            return Err(TargetFailure::fatal(format!(
                "{url} streamed an error: {error}"
            )));
        }
        if let Some(f) = chunk.get("promptFeedback") {
            feedback = Some(f.clone());
        }
        answered |= chunk["candidates"]
            .as_array()
            .is_some_and(|c| !c.is_empty());
        let candidate = &chunk["candidates"][0];
        for part in candidate["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(call) = part.get("functionCall") {
                tool_calls.push(ToolCall {
                    id: call["id"].as_str().map(str::to_owned),
                    tool: call["name"].as_str().unwrap_or_default().to_owned(),
                    input: Some(call.get("args").cloned().unwrap_or(json!({}))),
                    ..ToolCall::default()
                });
            } else if let Some(t) = part["text"].as_str()
                && part["thought"] != true
            {
                text.push_str(t);
            }
        }
        if let Some(reason) = candidate["finishReason"].as_str() {
            finish = Some(reason.to_owned());
        }
        if let Some(u) = chunk.get("usageMetadata") {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            let cached = n("cachedContentTokenCount");
            usage = [
                n("promptTokenCount").saturating_sub(cached),
                n("candidatesTokenCount") + n("thoughtsTokenCount"),
                cached,
                0,
            ];
        }
        Ok(())
    })?;
    if !answered {
        return Err(TargetFailure::fatal(format!(
            "{url} streamed no candidate{}",
            feedback.map_or(String::new(), |f| format!(
                " (promptFeedback: {})",
                crate::text::shown(&f.to_string())
            ))
        )));
    }
    Ok(super::api::answer(
        text,
        tool_calls,
        started,
        usage,
        ("google", &config.model),
        finish,
    ))
}

/// Runs the target for one test.
pub fn invoke(
    config: &GeminiConfig,
    test: &TestCase,
    inv: &Invocation<'_>,
) -> Result<TargetOutput, TargetFailure> {
    if let Some(settings) = &config.promptfoo {
        let timeout = inv
            .time_left(Some(config.timeout))
            .map_or(config.timeout, |t| t.min(config.timeout));
        return super::gemini_promptfoo::call(config, settings, &super::echo_text(test), timeout);
    }
    let messages = super::prompt::chat_messages(&test.input);
    chat(
        config,
        &messages,
        None,
        None,
        inv.time_left(Some(config.timeout)),
    )
}
