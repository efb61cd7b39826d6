//! OpenAI's Responses API, streamed, as AgentV 4.42.4 calls it through
//! pi-ai 0.74: every `azure` (`azure-openai`) target, and `openai` targets
//! with `api_format: responses`. The system messages are one `system` item
//! (`developer` for a reasoning model), AgentV's default prompt when there
//! is none; user turns are `input_text`, assistant turns `output_text`
//! messages; `max_output_tokens` and `temperature` only when set; a
//! reasoning model that can switch thinking off is asked to (pi-ai's
//! `reasoning: {effort: none}`). Tokens are pi-ai's (input less cached) and
//! the cost at its prices.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::file::{get_f64, get_str, get_u64};
use super::{Invocation, TargetFailure, TargetOutput, ToolCall};
use crate::suite::TestCase;

/// AgentV's Azure API version when the target gives none.
const DEFAULT_AZURE_API_VERSION: &str = "v1";

/// A Responses API target.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesConfig {
    /// The base URL, ending before `/responses`.
    pub base_url: String,
    /// `?api-version=` (Azure).
    pub api_version: Option<String>,
    /// The model (Azure: the deployment).
    pub model: String,
    /// The API key.
    pub api_key: Option<String>,
    /// Azure sends the key as `api-key`, OpenAI as a bearer token.
    pub azure: bool,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// `max_output_tokens`.
    pub max_output_tokens: Option<u64>,
    /// Request timeout.
    pub timeout: Duration,
}

/// AgentV's `buildAzureBaseUrl` and pi-ai's `normalizeAzureBaseUrl`: a full
/// URL ends at `/openai/v1`; a bare resource name is
/// `https://<name>.openai.azure.com/openai/v1`.
pub fn azure_base_url(endpoint: &str) -> String {
    let trimmed = endpoint.trim().trim_end_matches('/');
    let is_url = trimmed.starts_with("http://") || trimmed.starts_with("https://");
    if !is_url {
        return format!("https://{trimmed}.openai.azure.com/openai/v1");
    }
    if trimmed.ends_with("/openai/v1") {
        trimmed.to_owned()
    } else if let Some(base) = trimmed.strip_suffix("/openai") {
        format!("{base}/openai/v1")
    } else {
        format!("{trimmed}/openai/v1")
    }
}

impl ResponsesConfig {
    /// Reads an `azure` entry (AgentV's field names; `api_format` refused as
    /// AgentV refuses it).
    pub fn azure(entry: &Map<String, Value>) -> Result<Self, (String, String)> {
        if entry.contains_key("api_format") {
            return Err((
                "api_format".into(),
                "`api_format` is no longer supported on Azure targets: AgentV (and evalhost) always use Azure's Responses API; for a deployment that only has /chat/completions, use `provider: openai` with a deployment-scoped `base_url`".into(),
            ));
        }
        let endpoint = get_str(entry, "endpoint")?
            .or(get_str(entry, "resource")?)
            .filter(|e| !e.trim().is_empty())
            .ok_or_else(|| {
                (
                    "endpoint".to_owned(),
                    "an `azure` target needs an `endpoint` (https://<resource>.openai.azure.com, or the resource name)".to_owned(),
                )
            })?;
        let model = get_str(entry, "deployment")?
            .or(get_str(entry, "model")?)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| {
                (
                    "deployment".to_owned(),
                    "an `azure` target needs a `deployment` (or `model`)".to_owned(),
                )
            })?;
        let version = get_str(entry, "version")?
            .or(get_str(entry, "api_version")?)
            .map(|v| {
                let t = v.trim();
                let lower = t.to_ascii_lowercase();
                // AgentV's `normalizeAzureApiVersion`: `api-version=X` is X.
                let rest = ["api-version", "api_version", "apiversion"]
                    .iter()
                    .find_map(|p| lower.starts_with(p).then(|| &t[p.len()..]))
                    .and_then(|r| r.trim_start().strip_prefix('='))
                    .map_or(t, str::trim);
                rest.to_owned()
            })
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| DEFAULT_AZURE_API_VERSION.to_owned());
        Ok(Self {
            base_url: azure_base_url(&endpoint),
            api_version: Some(version),
            model,
            api_key: get_str(entry, "api_key")?.filter(|k| !k.is_empty()),
            azure: true,
            temperature: get_f64(entry, "temperature")?,
            max_output_tokens: get_u64(entry, "max_output_tokens")?,
            timeout: super::seconds_field(
                "timeout_seconds",
                get_f64(entry, "timeout_seconds")?.unwrap_or(120.0),
            )?,
        })
    }

    /// An `openai` target with `api_format: responses`.
    pub fn openai(config: &super::openai::OpenAiConfig) -> Self {
        Self {
            base_url: config.base_url.clone(),
            api_version: None,
            model: config.model.clone(),
            api_key: config.api_key.clone(),
            azure: false,
            temperature: config.temperature,
            max_output_tokens: config.max_output_tokens,
            timeout: config.timeout,
        }
    }

    fn url(&self) -> String {
        match &self.api_version {
            Some(v) => format!("{}/responses?api-version={v}", self.base_url),
            None => format!("{}/responses", self.base_url),
        }
    }

    /// pi-ai's model table: Azure's for Azure, OpenAI's otherwise.
    fn price_table(&self) -> &'static str {
        if self.azure {
            "azure-openai-responses"
        } else {
            "openai"
        }
    }

    /// pi-ai's entry for the model.
    fn model_entry(&self) -> Option<&'static super::models::Model> {
        super::models::find(self.price_table(), &self.model)
    }

    /// The request body AgentV sends for `messages`.
    pub fn body(
        &self,
        messages: &[(String, String)],
        temperature: Option<f64>,
        max_tokens: Option<u64>,
    ) -> Value {
        let model = self.model_entry();
        let reasoning = model.is_some_and(|m| m.reasoning);
        let system = super::api::system_prompt(messages);
        let mut input = vec![json!({
            "role": if reasoning { "developer" } else { "system" },
            "content": system,
        })];
        let mut assistant_turns = 0;
        for (role, content) in messages.iter().filter(|(r, _)| r != "system") {
            match role.as_str() {
                "user" => input.push(
                    json!({"role": "user", "content": [{"type": "input_text", "text": content}]}),
                ),
                other => {
                    let text = if matches!(other, "tool" | "function") {
                        format!("@[Tool]: {content}")
                    } else {
                        content.clone()
                    };
                    input.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                        "status": "completed",
                        "id": format!("msg_{assistant_turns}"),
                    }));
                    assistant_turns += 1;
                }
            }
        }
        let mut body = json!({"model": self.model, "input": input, "stream": true});
        if let Some(m) = max_tokens.or(self.max_output_tokens) {
            body["max_output_tokens"] = json!(m);
        }
        if let Some(t) = temperature.or(self.temperature) {
            body["temperature"] = json!(t);
        }
        if let Some(off) = model.filter(|m| m.reasoning).and_then(|m| m.reasoning_off) {
            body["reasoning"] = json!({"effort": off});
        }
        body
    }
}

/// Calls the API once for `messages`.
pub fn chat(
    config: &ResponsesConfig,
    messages: &[(String, String)],
    temperature: Option<f64>,
    max_tokens: Option<u64>,
    timeout: Option<Duration>,
) -> Result<TargetOutput, TargetFailure> {
    let url = config.url();
    let Some(key) = &config.api_key else {
        return Err(TargetFailure::fatal(format!(
            "the target for {} has no `api_key`: give it `api_key: ${{{{ {} }}}}`",
            config.model,
            if config.azure {
                "AZURE_OPENAI_API_KEY"
            } else {
                "OPENAI_API_KEY"
            }
        )));
    };
    let header = if config.azure {
        ("api-key", key.clone())
    } else {
        ("Authorization", format!("Bearer {key}"))
    };
    let body = config.body(messages, temperature, max_tokens);
    let timeout = timeout.map_or(config.timeout, |t| t.min(config.timeout));
    let started = Instant::now();
    let response = super::api::send(&url, &[header], &body, timeout)?;
    let mut text = String::new();
    let mut tool_calls: Vec<ToolCall> = Vec::new();
    let mut usage = [0u64; 4];
    let mut status = None;
    super::api::events(&url, response, |event| {
        if event.data.is_empty() || event.data == "[DONE]" {
            return Ok(());
        }
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            TargetFailure::fatal(format!("{url} streamed an event that is not JSON ({e})"))
        })?;
        match data["type"].as_str().unwrap_or(event.event.as_str()) {
            "response.output_text.delta" => text.push_str(data["delta"].as_str().unwrap_or("")),
            // The finished item's text is the text (pi-ai's `text_end`).
            "response.output_item.done" => {
                let item = &data["item"];
                match item["type"].as_str() {
                    Some("message") => {
                        let whole: String = item["content"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|c| c["text"].as_str().or(c["refusal"].as_str()).unwrap_or(""))
                            .collect();
                        text = whole;
                    }
                    Some("function_call") => {
                        let args = item["arguments"].as_str().unwrap_or("{}");
                        tool_calls.push(ToolCall {
                            id: item["call_id"].as_str().map(str::to_owned),
                            tool: item["name"].as_str().unwrap_or_default().to_owned(),
                            input: Some(
                                serde_json::from_str(args)
                                    .unwrap_or_else(|_| Value::String(args.to_owned())),
                            ),
                            ..ToolCall::default()
                        });
                    }
                    _ => {}
                }
            }
            "response.completed" => {
                let response = &data["response"];
                let n = |p: &str| response.pointer(p).and_then(Value::as_u64).unwrap_or(0);
                let cached = n("/usage/input_tokens_details/cached_tokens");
                usage = [
                    n("/usage/input_tokens").saturating_sub(cached),
                    n("/usage/output_tokens"),
                    cached,
                    0,
                ];
                status = response["status"].as_str().map(str::to_owned);
            }
            "error" => {
                return Err(TargetFailure::fatal(format!(
                    "{url} streamed an error: Error Code {}: {}",
                    data["code"],
                    data["message"].as_str().unwrap_or("")
                )));
            }
            "response.failed" => {
                let response = &data["response"];
                let why = match response.get("error") {
                    Some(e) if !e.is_null() => format!(
                        "{}: {}",
                        e["code"].as_str().unwrap_or("unknown"),
                        e["message"].as_str().unwrap_or("no message")
                    ),
                    _ => match response
                        .pointer("/incomplete_details/reason")
                        .and_then(Value::as_str)
                    {
                        Some(r) => format!("incomplete: {r}"),
                        None => "Unknown error (no error details in response)".to_owned(),
                    },
                };
                return Err(TargetFailure::fatal(format!(
                    "{url}: the response failed: {why}"
                )));
            }
            _ => {}
        }
        Ok(())
    })?;
    // A stream that ended with nothing (no text, no call, no completed
    // response) is the endpoint's failure, never an empty answer.
    if status.is_none() && text.is_empty() && tool_calls.is_empty() {
        return Err(TargetFailure::fatal(format!(
            "{url} streamed no response (no text, no function call and no `response.completed` event)"
        )));
    }
    Ok(super::api::answer(
        text,
        tool_calls,
        started,
        usage,
        (config.price_table(), &config.model),
        status,
    ))
}

/// Runs the target for one test.
pub fn invoke(
    config: &ResponsesConfig,
    test: &TestCase,
    inv: &Invocation<'_>,
) -> Result<TargetOutput, TargetFailure> {
    let messages = super::prompt::chat_messages(&test.input);
    chat(
        config,
        &messages,
        None,
        None,
        inv.time_left(Some(config.timeout)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_addresses_are_agentvs() {
        assert_eq!(
            azure_base_url("my-res"),
            "https://my-res.openai.azure.com/openai/v1"
        );
        assert_eq!(
            azure_base_url("https://my-res.openai.azure.com/"),
            "https://my-res.openai.azure.com/openai/v1"
        );
        assert_eq!(
            azure_base_url("https://my-res.openai.azure.com/openai"),
            "https://my-res.openai.azure.com/openai/v1"
        );
        assert_eq!(
            azure_base_url("https://my-res.openai.azure.com/openai/v1"),
            "https://my-res.openai.azure.com/openai/v1"
        );
        let mut entry = Map::new();
        entry.insert("endpoint".into(), json!("r"));
        entry.insert("deployment".into(), json!("gpt-5-mini"));
        entry.insert("version".into(), json!("api-version=2025-04-01-preview"));
        let c = ResponsesConfig::azure(&entry).unwrap();
        assert_eq!(
            c.url(),
            "https://r.openai.azure.com/openai/v1/responses?api-version=2025-04-01-preview"
        );
        // A reasoning deployment: the system prompt is the developer's; gpt-5
        // cannot switch reasoning off, so none is asked; o3 can.
        let m = vec![("user".to_owned(), "Hi".to_owned())];
        let b = c.body(&m, None, None);
        assert_eq!(b["input"][0]["role"], "developer");
        assert!(b.get("reasoning").is_none());
        let o3 = ResponsesConfig {
            model: "o3".into(),
            ..c.clone()
        };
        assert_eq!(
            o3.body(&m, None, None)["reasoning"],
            json!({"effort": "none"})
        );
        entry.insert("api_format".into(), json!("chat"));
        assert!(ResponsesConfig::azure(&entry).is_err());
    }
}
