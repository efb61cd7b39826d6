//! AgentV's `anthropic` target: Anthropic's Messages API, called as
//! AgentV 4.42.4 calls it (through pi-ai 0.74's Anthropic provider):
//! streamed (`stream: true`), the system messages joined into one `system`
//! block, AgentV's default system prompt when the test has none,
//! `max_tokens` from `max_output_tokens` else a third of the model's
//! ceiling, `thinking` for reasoning models when `thinking_budget` is set
//! (adaptive on the 4.6 models), temperature only without thinking, the
//! prompt-cache marker on the system block and the last user message.
//! Tokens (cache reads as `cached`) and cost (pi-ai's price table) are
//! recorded; 408, 429, 5xx and 529 are retried after the server's
//! `retry-after`.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::file::{get_f64, get_str, get_u64};
use super::{Invocation, TargetFailure, TargetOutput, ToolCall};
use crate::suite::TestCase;

/// The API's address, pi-ai's for every Anthropic model.
const BASE_URL: &str = "https://api.anthropic.com";

/// The models whose thinking is adaptive (no budget).
const ADAPTIVE: &[&str] = &["claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-7"];

/// An `anthropic` target.
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicConfig {
    /// The model id.
    pub model: String,
    /// The API key.
    pub api_key: Option<String>,
    /// The API's address (an evalhost extension, `base_url`, for proxies and
    /// tests; AgentV always calls Anthropic's).
    pub base_url: String,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// `max_tokens`.
    pub max_output_tokens: Option<u64>,
    /// The thinking budget, in tokens.
    pub thinking_budget: Option<u64>,
    /// Request timeout.
    pub timeout: Duration,
    /// `output_style: promptfoo`: the request and output of promptfoo's
    /// `anthropic:messages` provider (a promptfoo config's target), with
    /// whether thinking is shown; else AgentV's.
    pub promptfoo: Option<bool>,
    /// promptfoo's request fields (`output_style: promptfoo` only).
    pub request_params: Map<String, Value>,
    /// promptfoo's price of a reply (`output_style: promptfoo` only;
    /// `pricing:`): without it, such a reply has no cost, as in promptfoo.
    pub pricing: Option<PromptfooPricing>,
}

/// What promptfoo charges for a reply of its Anthropic provider
/// (`calculateAnthropicCost`): USD per input and output token; cache reads
/// and writes at these factors of the input price (none: a flat `cost`,
/// which prices cache tokens at nothing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PromptfooPricing {
    /// USD per uncached input token.
    pub input_per_token: f64,
    /// USD per output token.
    pub output_per_token: f64,
    /// Cache read and cache write prices, as factors of the input price.
    pub cache_factors: Option<(f64, f64)>,
}

impl PromptfooPricing {
    fn parse(v: &Value) -> Result<Self, (String, String)> {
        let bad = |what: &str| {
            (
                "pricing".to_owned(),
                format!("`pricing.{what}` must be a number"),
            )
        };
        let num = |k: &str| v.get(k).and_then(Value::as_f64);
        let factor = |k: &str| match v.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x.as_f64().map(Some).ok_or_else(|| bad(k)),
        };
        let input_per_token = num("input_per_token").ok_or_else(|| bad("input_per_token"))?;
        let output_per_token = num("output_per_token").ok_or_else(|| bad("output_per_token"))?;
        let cache_factors = match (factor("cache_read_factor")?, factor("cache_write_factor")?) {
            (Some(r), Some(w)) => Some((r, w)),
            (None, None) => None,
            _ => {
                return Err((
                    "pricing".to_owned(),
                    "`pricing` needs both `cache_read_factor` and `cache_write_factor`, or neither"
                        .to_owned(),
                ));
            }
        };
        Ok(Self {
            input_per_token,
            output_per_token,
            cache_factors,
        })
    }

    /// The cost of a reply, in promptfoo's order of operations (so the same
    /// double): `input` uncached tokens, `output` tokens, cache reads and
    /// writes.
    pub fn cost(&self, input: u64, output: u64, cache_read: u64, cache_write: u64) -> f64 {
        let (i, o) = (input as f64, output as f64);
        match self.cache_factors {
            Some((read, write)) if cache_read > 0 || cache_write > 0 => {
                let rate = self.input_per_token;
                i * rate
                    + cache_read as f64 * rate * read
                    + cache_write as f64 * rate * write
                    + o * self.output_per_token
            }
            _ => self.input_per_token * i + self.output_per_token * o,
        }
    }
}

impl AnthropicConfig {
    /// Reads an `anthropic` entry (AgentV's field names).
    pub fn parse(entry: &Map<String, Value>) -> Result<Self, (String, String)> {
        let model = get_str(entry, "model")?
            .or(get_str(entry, "deployment")?)
            .or(get_str(entry, "variant")?)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| {
                (
                    "model".to_owned(),
                    "an `anthropic` target needs a `model` (e.g. claude-sonnet-4-5)".to_owned(),
                )
            })?;
        Ok(Self {
            model,
            api_key: get_str(entry, "api_key")?.filter(|k| !k.is_empty()),
            base_url: get_str(entry, "base_url")?
                .or(get_str(entry, "endpoint")?)
                .unwrap_or_else(|| BASE_URL.to_owned())
                .trim_end_matches('/')
                .to_owned(),
            temperature: get_f64(entry, "temperature")?,
            max_output_tokens: get_u64(entry, "max_output_tokens")?,
            thinking_budget: get_u64(entry, "thinking_budget")?,
            timeout: super::seconds_field(
                "timeout_seconds",
                get_f64(entry, "timeout_seconds")?.unwrap_or(120.0),
            )?,
            promptfoo: match entry.get("output_style") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s == "content" => None,
                Some(Value::String(s)) if s == "promptfoo" => Some(
                    entry
                        .get("show_thinking")
                        .and_then(Value::as_bool)
                        .unwrap_or(true),
                ),
                Some(_) => {
                    return Err((
                        "output_style".to_owned(),
                        "`output_style` must be `content` or `promptfoo`".to_owned(),
                    ));
                }
            },
            pricing: match entry.get("pricing") {
                None | Some(Value::Null) => None,
                Some(v) => Some(PromptfooPricing::parse(v)?),
            },
            request_params: match entry.get("request_params") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(m)) => m.clone(),
                Some(_) => {
                    return Err((
                        "request_params".to_owned(),
                        "`request_params` must be a mapping of request fields".to_owned(),
                    ));
                }
            },
        })
    }

    fn url(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }

    /// The request body AgentV sends for `messages`.
    pub fn body(&self, messages: &[(String, String)], temperature: Option<f64>) -> Value {
        let known = super::models::find("anthropic", &self.model);
        let ceiling = known.map_or(16_384, |m| m.max_tokens);
        let reasoning = known.is_some_and(|m| m.reasoning);
        let cache = json!({"type": "ephemeral"});
        let system = super::api::system_prompt(messages);
        let mut turns: Vec<Value> = messages
            .iter()
            .filter(|(r, c)| r != "system" && !(r == "user" && c.trim().is_empty()))
            .map(|(role, content)| match role.as_str() {
                "user" => json!({"role": "user", "content": content}),
                // A tool message is an assistant turn naming the tool, as
                // AgentV's adapter writes it.
                "tool" | "function" => {
                    json!({"role": "assistant", "content": [{"type": "text", "text": format!("@[Tool]: {content}")}]})
                }
                _ => json!({"role": "assistant", "content": [{"type": "text", "text": content}]}),
            })
            .collect();
        if let Some(last) = turns.last_mut()
            && last["role"] == "user"
            && let Some(text) = last["content"].as_str().map(str::to_owned)
        {
            last["content"] = json!([{"type": "text", "text": text, "cache_control": cache}]);
        }
        let mut body = json!({
            "model": self.model,
            "messages": turns,
            "max_tokens": self.max_output_tokens.unwrap_or(ceiling / 3),
            "stream": true,
            "system": [{"type": "text", "text": system, "cache_control": cache}],
        });
        let thinking = reasoning && self.thinking_budget.is_some();
        if let Some(t) = temperature.or(self.temperature)
            && !thinking
        {
            body["temperature"] = json!(t);
        }
        if thinking {
            body["thinking"] = if ADAPTIVE.iter().any(|a| self.model.starts_with(a)) {
                json!({"type": "adaptive", "display": "summarized"})
            } else {
                json!({"type": "enabled", "budget_tokens": self.thinking_budget, "display": "summarized"})
            };
        }
        body
    }
}

/// The answer of one streamed call.
#[derive(Debug, Default)]
struct Answer {
    text: String,
    tool_calls: Vec<ToolCall>,
    tool_inputs: Vec<String>,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    stop_reason: Option<String>,
    /// A `message_start` (or a whole reply) was read: the stream was a
    /// Messages API answer, not something else.
    started: bool,
}

/// Calls the API once for `messages`.
pub fn chat(
    config: &AnthropicConfig,
    messages: &[(String, String)],
    temperature: Option<f64>,
    max_tokens: Option<u64>,
    timeout: Option<Duration>,
) -> Result<TargetOutput, TargetFailure> {
    let url = config.url();
    let Some(key) = &config.api_key else {
        return Err(TargetFailure::fatal(format!(
            "the `anthropic` target for {} has no `api_key`: give it `api_key: ${{{{ ANTHROPIC_API_KEY }}}}`",
            config.model
        )));
    };
    let mut body = config.body(messages, temperature);
    if let Some(m) = max_tokens {
        body["max_tokens"] = json!(m);
    }
    let timeout = timeout.map_or(config.timeout, |t| t.min(config.timeout));
    let started = Instant::now();
    let response = super::api::send(
        &url,
        &[
            ("x-api-key", key.clone()),
            ("anthropic-version", "2023-06-01".to_owned()),
            ("accept", "text/event-stream".to_owned()),
        ],
        &body,
        timeout,
    )?;
    let mut answer = Answer::default();
    if super::api::is_json(&response) {
        // A server (a proxy, a gateway) that answers the streamed request
        // with one Messages API reply: read that shape.
        read_message(&url, response, &mut answer)?;
    } else {
        super::api::events(&url, response, |event| {
            read_event(&url, &event, &mut answer)
        })?;
        if !answer.started {
            return Err(TargetFailure::fatal(format!(
                "{url} streamed events, but no Messages API answer (no `message_start`)"
            )));
        }
    }
    for (call, input) in answer.tool_calls.iter_mut().zip(&answer.tool_inputs) {
        if !input.is_empty() {
            call.input = Some(serde_json::from_str(input).unwrap_or(Value::String(input.clone())));
        }
    }
    // The thinking is not part of the answer (AgentV keeps only the text).
    Ok(super::api::answer(
        answer.text,
        answer.tool_calls,
        started,
        [
            answer.input,
            answer.output,
            answer.cache_read,
            answer.cache_write,
        ],
        ("anthropic", &config.model),
        answer.stop_reason,
    ))
}

/// A whole (not streamed) Messages API reply: its JSON, checked to be
/// one (a `content` list); an error reply or another body is a target
/// failure naming what came back.
pub(super) fn message_reply(
    url: &str,
    mut response: ureq::http::Response<ureq::Body>,
) -> Result<Value, TargetFailure> {
    let text = response
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
        .map_err(|e| TargetFailure::new(format!("reading the answer of {url} failed: {e}")))?;
    let shown = || crate::text::shown(&text.chars().take(200).collect::<String>()).into_owned();
    let doc: Value = serde_json::from_str(&text).map_err(|e| {
        TargetFailure::fatal(format!(
            "{url} answered JSON that does not parse ({e}): `{}`",
            shown()
        ))
    })?;
    if let Some(error) = doc.get("error").filter(|_| doc["type"] == "error") {
        return Err(TargetFailure::fatal(format!(
            "{url} answered an error: {}: {}",
            error["type"].as_str().unwrap_or("error"),
            error["message"].as_str().unwrap_or("")
        )));
    }
    if !doc.get("content").is_some_and(Value::is_array) {
        return Err(TargetFailure::fatal(format!(
            "{url} answered JSON that is no Messages API reply (no `content` list): `{}`",
            shown()
        )));
    }
    Ok(doc)
}

/// Reads a whole (not streamed) Messages API reply into the answer: its
/// text and tool-use blocks, usage and stop reason. A body that is not
/// such a reply is a target failure naming what came back.
fn read_message(
    url: &str,
    response: ureq::http::Response<ureq::Body>,
    answer: &mut Answer,
) -> Result<(), TargetFailure> {
    let doc = message_reply(url, response)?;
    let blocks = doc["content"].as_array().expect("checked by message_reply");
    for block in blocks {
        match block["type"].as_str() {
            Some("text") => answer.text.push_str(block["text"].as_str().unwrap_or("")),
            Some("tool_use") => {
                answer.tool_calls.push(ToolCall {
                    id: block["id"].as_str().map(str::to_owned),
                    tool: block["name"].as_str().unwrap_or_default().to_owned(),
                    ..ToolCall::default()
                });
                answer
                    .tool_inputs
                    .push(block.get("input").map(Value::to_string).unwrap_or_default());
            }
            _ => {}
        }
    }
    let u64_at = |p: &str| doc.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    answer.input = u64_at("/usage/input_tokens");
    answer.output = u64_at("/usage/output_tokens");
    answer.cache_read = u64_at("/usage/cache_read_input_tokens");
    answer.cache_write = u64_at("/usage/cache_creation_input_tokens");
    answer.stop_reason = doc["stop_reason"].as_str().map(str::to_owned);
    answer.started = true;
    Ok(())
}

/// Folds one streamed event into the answer.
fn read_event(
    url: &str,
    event: &super::api::Event,
    answer: &mut Answer,
) -> Result<(), TargetFailure> {
    if event.data.is_empty() || event.event == "ping" {
        return Ok(());
    }
    let data: Value = serde_json::from_str(&event.data).map_err(|e| {
        TargetFailure::fatal(format!("{url} streamed an event that is not JSON ({e})"))
    })?;
    let kind = data["type"].as_str().unwrap_or(event.event.as_str());
    let u64_at = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    match kind {
        "message_start" => {
            answer.started = true;
            answer.input = u64_at(&data, "/message/usage/input_tokens");
            answer.output = u64_at(&data, "/message/usage/output_tokens");
            answer.cache_read = u64_at(&data, "/message/usage/cache_read_input_tokens");
            answer.cache_write = u64_at(&data, "/message/usage/cache_creation_input_tokens");
        }
        "content_block_start" => {
            let block = &data["content_block"];
            if block["type"] == "tool_use" {
                answer.tool_calls.push(ToolCall {
                    id: block["id"].as_str().map(str::to_owned),
                    tool: block["name"].as_str().unwrap_or_default().to_owned(),
                    ..ToolCall::default()
                });
                answer.tool_inputs.push(String::new());
            } else if block["type"] == "text"
                && let Some(t) = block["text"].as_str()
            {
                answer.text.push_str(t);
            }
        }
        "content_block_delta" => {
            let delta = &data["delta"];
            match delta["type"].as_str() {
                Some("text_delta") => answer.text.push_str(delta["text"].as_str().unwrap_or("")),
                Some("input_json_delta") => {
                    if let Some(input) = answer.tool_inputs.last_mut() {
                        input.push_str(delta["partial_json"].as_str().unwrap_or(""));
                    }
                }
                _ => {}
            }
        }
        "message_delta" => {
            if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                answer.stop_reason = Some(reason.to_owned());
            }
            let usage = &data["usage"];
            // The final counts (pi-ai keeps the later value when present).
            for (key, slot) in [
                ("input_tokens", &mut answer.input),
                ("output_tokens", &mut answer.output),
                ("cache_read_input_tokens", &mut answer.cache_read),
                ("cache_creation_input_tokens", &mut answer.cache_write),
            ] {
                if let Some(n) = usage.get(key).and_then(Value::as_u64) {
                    *slot = n;
                }
            }
        }
        "error" => {
            let kind = data
                .pointer("/error/type")
                .and_then(Value::as_str)
                .unwrap_or("error");
            let message = data
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("");
            let text = format!("{url} streamed an error: {kind}: {message}");
            // An overloaded or rate-limited stream is worth another try.
            return Err(
                if matches!(kind, "overloaded_error" | "rate_limit_error" | "api_error") {
                    TargetFailure::new(text)
                } else {
                    TargetFailure::fatal(text)
                },
            );
        }
        _ => {}
    }
    Ok(())
}

/// Runs the target for one test.
pub fn invoke(
    config: &AnthropicConfig,
    test: &TestCase,
    inv: &Invocation<'_>,
) -> Result<TargetOutput, TargetFailure> {
    if let Some(show_thinking) = config.promptfoo {
        let timeout = inv
            .time_left(Some(config.timeout))
            .map_or(config.timeout, |t| t.min(config.timeout));
        return super::anthropic_promptfoo::call(
            config,
            &super::echo_text(test),
            show_thinking,
            timeout,
        );
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(model: &str, thinking: Option<u64>) -> AnthropicConfig {
        AnthropicConfig {
            model: model.into(),
            api_key: Some("k".into()),
            base_url: BASE_URL.into(),
            temperature: Some(0.2),
            promptfoo: None,
            request_params: Map::new(),
            pricing: None,
            max_output_tokens: None,
            thinking_budget: thinking,
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn the_request_is_agentvs() {
        let m = vec![("user".to_owned(), "Hi".to_owned())];
        let b = config("claude-sonnet-4-5", None).body(&m, None);
        // No system message: AgentV's; a third of the model's 64,000.
        assert_eq!(
            b["system"][0]["text"],
            super::super::api::DEFAULT_SYSTEM_PROMPT
        );
        assert_eq!(b["max_tokens"], 21333);
        assert_eq!(b["temperature"], 0.2);
        assert_eq!(
            b["messages"][0]["content"][0]["cache_control"]["type"],
            "ephemeral"
        );
        // A thinking budget on a reasoning model: no temperature.
        let b = config("claude-sonnet-4-5", Some(2048)).body(&m, None);
        assert_eq!(
            b["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048, "display": "summarized"})
        );
        assert!(b.get("temperature").is_none());
        let b = config("claude-opus-4-6", Some(2048)).body(&m, None);
        assert_eq!(b["thinking"]["type"], "adaptive");
        // An unknown model: pi-ai's fallback ceiling, and no thinking.
        let b = config("claude-next", Some(2048)).body(&m, None);
        assert_eq!(b["max_tokens"], 5461);
        assert!(b.get("thinking").is_none());
    }
}
