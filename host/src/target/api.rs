//! What the model-API targets share: one POST with the provider's headers
//! (a failure says which URL and why; 408, 429 and 5xx are retryable, after
//! the server's `retry-after`), the server-sent events a streaming answer
//! arrives as, AgentV's system prompt, and the output one answer makes.

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{OutputMessage, TargetFailure, TargetOutput, TokenUsage, ToolCall};

/// AgentV's system prompt for a test that gives none.
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a careful assistant. Follow all provided instructions and do not fabricate results.";

/// The system messages of `messages` joined into one prompt, as pi-ai joins
/// them; AgentV's default when there are none.
pub fn system_prompt(messages: &[(String, String)]) -> String {
    let system: Vec<&str> = messages
        .iter()
        .filter(|(r, _)| r == "system")
        .map(|(_, c)| c.as_str())
        .collect();
    if system.is_empty() {
        DEFAULT_SYSTEM_PROMPT.to_owned()
    } else {
        system.join("\n\n")
    }
}

/// What one streamed answer makes: its text, one assistant message with its
/// tool calls, the time since `started`, the tokens (input, output, cache
/// reads, cache writes; the last is priced, not reported) and their cost at
/// pi-ai's `table` prices for `model`.
pub fn answer(
    text: String,
    tool_calls: Vec<ToolCall>,
    started: Instant,
    tokens: [u64; 4],
    (table, model): (&str, &str),
    finish_reason: Option<String>,
) -> TargetOutput {
    let mut out = TargetOutput::text(text.clone());
    out.messages = vec![OutputMessage {
        role: "assistant".into(),
        content: text,
        content_json: None,
        tool_calls,
        name: None,
    }];
    out.duration_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
    out.token_usage = Some(TokenUsage {
        input: tokens[0],
        output: tokens[1],
        cached: tokens[2],
        reasoning: 0,
    });
    out.cost_usd = cost(table, model, tokens);
    out.finish_reason = finish_reason;
    out
}

/// The longest wait a server's `retry-after` is honoured for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// The statuses worth another try: AgentV's list (`withRetry`) and
/// Anthropic's "overloaded".
fn retryable(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504 | 529)
}

/// How long the server asks to wait: `retry-after-ms`, else `retry-after`
/// in seconds or as a date.
pub fn retry_after(headers: &ureq::http::HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        return Some(super::clamp_seconds(ms / 1000.0, MAX_RETRY_AFTER));
    }
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return Some(super::clamp_seconds(secs, MAX_RETRY_AFTER));
    }
    let when = jiff::fmt::rfc2822::parse(value).ok()?.timestamp();
    let wait = when.duration_since(jiff::Timestamp::now());
    Some(super::clamp_seconds(wait.as_secs_f64(), MAX_RETRY_AFTER))
}

/// The process's HTTP client for model APIs: one connection pool, so a
/// run's calls to one API reuse their connections (TLS set up once per
/// connection, not per call) — as many idle per host as calls can be in
/// flight at once.
pub fn agent() -> &'static ureq::Agent {
    static AGENT: std::sync::OnceLock<ureq::Agent> = std::sync::OnceLock::new();
    AGENT.get_or_init(|| {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_idle_connections(1024)
            .max_idle_connections_per_host(512)
            .build();
        // ureq's default chain with evalhost's TCP transport
        // (`net::QuickAckConnector`) in place of its own.
        use ureq::unversioned::transport::{ConnectProxyConnector, Connector, RustlsConnector};
        let connector =
            ().chain(ConnectProxyConnector::default())
                .chain(super::net::QuickAckConnector)
                .chain(RustlsConnector::default());
        ureq::Agent::with_parts(config, connector, super::net::CachingResolver::default())
    })
}

/// POSTs `body` as JSON to `url` with `headers`; the response when its
/// status is 2xx.
pub fn send(
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
    timeout: Duration,
) -> Result<ureq::http::Response<ureq::Body>, TargetFailure> {
    let mut request = agent()
        .post(url)
        .config()
        .timeout_global(Some(timeout))
        .build()
        .header("Content-Type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let mut response = match request.send(body.to_string().as_bytes()) {
        Ok(r) => r,
        Err(ureq::Error::Timeout(_)) => {
            return Err(TargetFailure::new(format!(
                "{url} did not answer within {:.1}s",
                timeout.as_secs_f64()
            )));
        }
        // A certificate the client refuses is refused again on every try:
        // said at once, not retried.
        Err(e) if e.to_string().contains("invalid peer certificate") => {
            return Err(TargetFailure::fatal(format!(
                "request to {url} failed: {e} (the server's TLS certificate is not one this machine trusts)"
            )));
        }
        Err(e) => return Err(TargetFailure::new(format!("request to {url} failed: {e}"))),
    };
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let text = response
        .body_mut()
        .with_config()
        .limit(1 << 20)
        .read_to_string()
        .unwrap_or_default();
    let excerpt: String = text.chars().take(300).collect();
    let message = format!("{url} answered HTTP {status}: {excerpt}");
    Err(if retryable(status) {
        TargetFailure {
            retry_after,
            ..TargetFailure::new(message)
        }
    } else {
        TargetFailure::fatal(message)
    })
}

/// The body of a 2xx response as JSON.
pub fn json(url: &str, response: ureq::http::Response<ureq::Body>) -> Result<Value, TargetFailure> {
    let text = text(url, response)?;
    serde_json::from_str(&text).map_err(|e| {
        let excerpt: String = text.chars().take(200).collect();
        TargetFailure::fatal(format!("{url} answered with invalid JSON ({e}): {excerpt}"))
    })
}

/// The answer's text (at most 64 MiB).
pub fn text(
    url: &str,
    mut response: ureq::http::Response<ureq::Body>,
) -> Result<String, TargetFailure> {
    match response
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
    {
        Ok(t) => Ok(t),
        Err(ureq::Error::Timeout(_)) => Err(TargetFailure::new(format!(
            "{url} timed out while answering"
        ))),
        Err(e) => Err(TargetFailure::new(format!(
            "reading the answer of {url} failed: {e}"
        ))),
    }
}

/// The cost of a call at pi-ai's prices for `model` of `provider`: input,
/// output, cache-read and cache-write tokens; none when the table does not
/// price the model (AgentV then reports no cost).
pub fn cost(provider: &str, model: &str, tokens: [u64; 4]) -> Option<f64> {
    let m = super::models::find(provider, model)?;
    let usd: f64 = tokens
        .iter()
        .zip(m.cost)
        .map(|(t, price)| *t as f64 * price)
        .sum::<f64>()
        / 1e6;
    (usd > 0.0).then_some(usd)
}

/// One server-sent event: its `event:` name (empty when none) and its
/// `data:` lines joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event: String,
    pub data: String,
}

/// The events of a streamed 2xx response, in order, calling `each` on
/// every one; stops at the first error `each` returns. A response with no
/// event at all (a server that answered the streamed request with plain
/// JSON, or with nothing) is a target failure naming what came back —
/// never an empty answer graded as the model's.
pub fn events(
    url: &str,
    mut response: ureq::http::Response<ureq::Body>,
    mut each: impl FnMut(Event) -> Result<(), TargetFailure>,
) -> Result<(), TargetFailure> {
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none")
        .to_owned();
    let reader = BufReader::new(response.body_mut().with_config().limit(64 << 20).reader());
    let mut event = String::new();
    let mut data: Vec<String> = Vec::new();
    let mut delivered = 0usize;
    let mut stray = String::new();
    for line in reader.lines() {
        let line = line
            .map_err(|e| TargetFailure::new(format!("reading the stream of {url} failed: {e}")))?;
        let line = line.strip_suffix('\r').unwrap_or(&line);
        if line.is_empty() {
            if !data.is_empty() || !event.is_empty() {
                delivered += 1;
                each(Event {
                    event: std::mem::take(&mut event),
                    data: std::mem::take(&mut data).join("\n"),
                })?;
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = value.to_owned(),
            "data" => data.push(value.to_owned()),
            _ if stray.len() < 200 => {
                stray.push_str(&line.chars().take(200 - stray.len()).collect::<String>());
            }
            _ => {}
        }
    }
    if !data.is_empty() || !event.is_empty() {
        delivered += 1;
        each(Event {
            event,
            data: data.join("\n"),
        })?;
    }
    if delivered == 0 {
        return Err(TargetFailure::fatal(format!(
            "{url} answered a streamed request without server-sent events (content-type {}): {}",
            crate::text::shown(&content_type),
            if stray.is_empty() {
                "an empty body".to_owned()
            } else {
                format!("`{}`", crate::text::shown(&stray))
            }
        )));
    }
    Ok(())
}

/// True when `response` says its body is JSON, not a stream of events.
pub fn is_json(response: &ureq::http::Response<ureq::Body>) -> bool {
    let types: Vec<&str> = response
        .headers()
        .get_all("content-type")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    types.iter().any(|ct| ct.contains("json"))
        && !types.iter().any(|ct| ct.contains("event-stream"))
}
