//! The judge proxy of a code grader with `target:` (AgentV's target proxy):
//! for the duration of one grader command, a loopback HTTP server through
//! which the script asks the run's judge. The script gets the server's URL
//! and a random token in `AGENTV_TARGET_PROXY_URL` /
//! `AGENTV_TARGET_PROXY_TOKEN` (and `EVALHOST_JUDGE_PROXY_URL` /
//! `EVALHOST_JUDGE_PROXY_TOKEN`); the host calls the judge with its own keys,
//! so the script never sees one.
//!
//! It speaks AgentV's protocol (`GET /info`, `POST /invoke`,
//! `POST /invokeBatch`, so `@agentv/eval`'s `createTargetClient` works
//! unchanged) and OpenAI's (`POST /v1/chat/completions`, so any OpenAI
//! client with `base_url = $EVALHOST_JUDGE_PROXY_URL/v1` and the token as its
//! key works). Every request needs the token. Calls count against
//! `max_calls` (default 50); past it the answer is 429. Answers come from
//! the judge cache when they can, and their tokens and cost are the
//! assertion's judge usage.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::judge::{Judge, JudgeUsage, Request};
use crate::target::Target;

/// AgentV's default `max_calls`.
pub const DEFAULT_MAX_CALLS: u64 = 50;

/// The largest request body read.
const MAX_BODY: u64 = 8 << 20;

/// The calls a code grader's `target:` allows (`true`, or `{max_calls}`),
/// when it has one.
pub fn requested_calls(kind: &str, config: &serde_json::Map<String, Value>) -> Option<u64> {
    if kind != "code-grader" {
        return None;
    }
    match config.get("target")? {
        Value::Bool(true) => Some(DEFAULT_MAX_CALLS),
        Value::Object(o) => Some(
            o.get("max_calls")
                .and_then(Value::as_f64)
                .map_or(DEFAULT_MAX_CALLS, |n| n.max(0.0) as u64),
        ),
        _ => None,
    }
}

/// What the proxy forwards to and how many calls it allows.
#[derive(Debug, Clone)]
pub struct ProxyGrant {
    /// The run's judge.
    pub judge: Arc<Judge>,
    /// The judge target of this case.
    pub default: Result<Target, String>,
    /// The grader plugin's digest (part of the cache key).
    pub digest: String,
    /// Calls allowed.
    pub max_calls: u64,
}

/// A running proxy; stopped when dropped.
pub struct Proxy {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// The bearer token.
    pub token: String,
    server: Arc<tiny_http::Server>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    usage: Arc<Mutex<JudgeUsage>>,
    calls: Arc<AtomicU64>,
}

struct Shared {
    grant: ProxyGrant,
    token: String,
    usage: Arc<Mutex<JudgeUsage>>,
    calls: Arc<AtomicU64>,
}

impl Proxy {
    /// Starts a proxy on a free loopback port.
    pub fn start(grant: ProxyGrant) -> std::io::Result<Self> {
        let server = tiny_http::Server::http("127.0.0.1:0").map_err(std::io::Error::other)?;
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .ok_or_else(|| std::io::Error::other("the proxy has no IP address"))?;
        let mut token = [0u8; 32];
        {
            use std::io::Read as _;
            std::fs::File::open("/dev/urandom")?.read_exact(&mut token)?;
        }
        let token: String = token.iter().map(|b| format!("{b:02x}")).collect();
        let server = Arc::new(server);
        let stop = Arc::new(AtomicBool::new(false));
        let usage = Arc::new(Mutex::new(JudgeUsage::default()));
        let calls = Arc::new(AtomicU64::new(0));
        let shared = Arc::new(Shared {
            grant,
            token: token.clone(),
            usage: usage.clone(),
            calls: calls.clone(),
        });
        let thread = {
            let (server, stop) = (server.clone(), stop.clone());
            std::thread::spawn(move || {
                std::thread::scope(|scope| {
                    while !stop.load(Ordering::SeqCst) {
                        match server.recv_timeout(Duration::from_millis(50)) {
                            Ok(Some(request)) => {
                                let shared = shared.clone();
                                scope.spawn(move || serve(&shared, request));
                            }
                            Ok(None) => {}
                            Err(_) => break,
                        }
                    }
                });
            })
        };
        Ok(Self {
            url: format!("http://127.0.0.1:{port}"),
            token,
            server,
            stop,
            thread: Some(thread),
            usage,
            calls,
        })
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> Option<u16> {
        self.url.rsplit_once(':').and_then(|(_, p)| p.parse().ok())
    }

    /// The environment the grader command gets.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("AGENTV_TARGET_PROXY_URL".into(), self.url.clone()),
            ("AGENTV_TARGET_PROXY_TOKEN".into(), self.token.clone()),
            ("EVALHOST_JUDGE_PROXY_URL".into(), self.url.clone()),
            ("EVALHOST_JUDGE_PROXY_TOKEN".into(), self.token.clone()),
        ]
    }

    /// Stops the server and returns what the calls cost, and how many the
    /// script made (refused ones included).
    pub fn finish(mut self) -> (JudgeUsage, u64) {
        self.shutdown();
        let usage = *self.usage.lock().unwrap_or_else(|e| e.into_inner());
        (usage, self.calls.load(Ordering::SeqCst))
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn respond(request: tiny_http::Request, status: u16, body: &Value) {
    let header =
        tiny_http::Header::from_bytes("Content-Type", "application/json").expect("a valid header");
    let _ = request.respond(
        tiny_http::Response::from_string(body.to_string())
            .with_status_code(status)
            .with_header(header),
    );
}

fn serve(shared: &Shared, mut request: tiny_http::Request) {
    let authorized = request
        .headers()
        .iter()
        .find(|h| h.field.equiv("Authorization"))
        .is_some_and(|h| {
            let v = h.value.as_str();
            v.strip_prefix("Bearer ") == Some(shared.token.as_str())
        });
    if !authorized {
        return respond(request, 401, &json!({"error": "Unauthorized"}));
    }
    let method = request.method().clone();
    let url = request.url().to_owned();
    let mut body = String::new();
    if method == tiny_http::Method::Post {
        use std::io::Read as _;
        if request
            .as_reader()
            .take(MAX_BODY)
            .read_to_string(&mut body)
            .is_err()
        {
            return respond(
                request,
                400,
                &json!({"error": "the body is not UTF-8 text"}),
            );
        }
    }
    let parsed = || serde_json::from_str::<Value>(&body);
    let max = shared.grant.max_calls;
    match (method, url.as_str()) {
        (tiny_http::Method::Get, "/info") => {
            let name = shared
                .grant
                .default
                .as_ref()
                .map_or(String::new(), |t| t.name.clone());
            respond(
                request,
                200,
                &json!({"targetName": name, "maxCalls": max, "callCount": shared.calls.load(Ordering::SeqCst), "availableTargets": [name]}),
            )
        }
        (tiny_http::Method::Post, "/invoke") => {
            let Ok(req) = parsed() else {
                return respond(request, 400, &json!({"error": "the body is not JSON"}));
            };
            let Some(question) = req
                .get("question")
                .and_then(Value::as_str)
                .filter(|q| !q.is_empty())
            else {
                return respond(
                    request,
                    400,
                    &json!({"error": "Missing required field: question"}),
                );
            };
            if !take_call(shared, 1) {
                return respond(
                    request,
                    429,
                    &json!({"error": format!("Max calls exceeded (limit: {max})")}),
                );
            }
            match ask(
                shared,
                question,
                req.get("systemPrompt").and_then(Value::as_str),
                req.get("target").and_then(Value::as_str),
            ) {
                Ok(answer) => respond(request, 200, &answer),
                Err(e) => respond(request, 500, &json!({"error": e})),
            }
        }
        (tiny_http::Method::Post, "/invokeBatch") => {
            let Some(requests) = parsed()
                .ok()
                .and_then(|r| r.get("requests").and_then(Value::as_array).cloned())
            else {
                return respond(
                    request,
                    400,
                    &json!({"error": "Missing required field: requests (array)"}),
                );
            };
            let current = shared.calls.load(Ordering::SeqCst);
            if !take_call(shared, requests.len() as u64) {
                return respond(
                    request,
                    429,
                    &json!({"error": format!("Batch would exceed max calls (current: {current}, batch: {}, limit: {max})", requests.len())}),
                );
            }
            let responses: Vec<Value> = requests
                .iter()
                .map(|r| match r.get("question").and_then(Value::as_str).filter(|q| !q.is_empty()) {
                    None => json!({"output": [], "rawText": "Error: Missing required field: question"}),
                    Some(q) => ask(shared, q, r.get("systemPrompt").and_then(Value::as_str), r.get("target").and_then(Value::as_str))
                        .unwrap_or_else(|e| json!({"output": [], "rawText": format!("Error: {e}")})),
                })
                .collect();
            respond(request, 200, &json!({"responses": responses}))
        }
        (tiny_http::Method::Post, "/v1/chat/completions" | "/chat/completions") => {
            let Ok(req) = parsed() else {
                return respond(
                    request,
                    400,
                    &json!({"error": {"message": "the body is not JSON"}}),
                );
            };
            let Some(messages) = req.get("messages").and_then(Value::as_array) else {
                return respond(
                    request,
                    400,
                    &json!({"error": {"message": "Missing required field: messages"}}),
                );
            };
            let messages: Vec<(String, String)> = messages
                .iter()
                .map(|m| {
                    let role = m
                        .get("role")
                        .and_then(Value::as_str)
                        .unwrap_or("user")
                        .to_owned();
                    let content = match m.get("content") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Array(parts)) => parts
                            .iter()
                            .filter_map(|p| p.get("text").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join("\n"),
                        _ => String::new(),
                    };
                    (role, content)
                })
                .collect();
            if !take_call(shared, 1) {
                return respond(
                    request,
                    429,
                    &json!({"error": {"message": format!("Max calls exceeded (limit: {max})"), "type": "rate_limit"}}),
                );
            }
            let judge_request = Request {
                messages,
                temperature: req.get("temperature").and_then(Value::as_f64),
                max_tokens: req
                    .get("max_tokens")
                    .or(req.get("max_completion_tokens"))
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok()),
                seed: req.get("seed").and_then(Value::as_u64),
                ..Request::default()
            };
            match complete(shared, &judge_request) {
                Ok(a) => respond(
                    request,
                    200,
                    &json!({
                        "id": "evalhost-judge-proxy",
                        "object": "chat.completion",
                        "model": a.model,
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": a.text}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": a.input_tokens.unwrap_or(0), "completion_tokens": a.output_tokens.unwrap_or(0), "total_tokens": a.input_tokens.unwrap_or(0) + a.output_tokens.unwrap_or(0)},
                    }),
                ),
                Err(e) => respond(request, 502, &json!({"error": {"message": e}})),
            }
        }
        _ => respond(request, 404, &json!({"error": "Not found"})),
    }
}

/// Counts `n` calls if they fit under the maximum.
fn take_call(shared: &Shared, n: u64) -> bool {
    shared
        .calls
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| {
            (c + n <= shared.grant.max_calls).then_some(c + n)
        })
        .is_ok()
}

fn complete(shared: &Shared, request: &Request) -> Result<crate::judge::Answer, String> {
    let mut usage = JudgeUsage::default();
    let answer = shared.grant.judge.complete(
        &shared.grant.default,
        &shared.grant.digest,
        request,
        &mut usage,
    );
    *shared.usage.lock().unwrap_or_else(|e| e.into_inner()) += usage;
    answer.map_err(|e| e.to_string())
}

/// One AgentV `invoke`: the answer as AgentV's proxy shapes it.
fn ask(
    shared: &Shared,
    question: &str,
    system: Option<&str>,
    target: Option<&str>,
) -> Result<Value, String> {
    let mut messages = Vec::new();
    if let Some(s) = system.filter(|s| !s.is_empty()) {
        messages.push(("system".to_owned(), s.to_owned()));
    }
    messages.push(("user".to_owned(), question.to_owned()));
    let default_name = shared.grant.default.as_ref().map(|t| t.name.as_str()).ok();
    // The proxy reaches only what `/info` lists (`availableTargets`): the
    // judge itself. Another name is refused without saying which targets
    // exist.
    if let Some(t) = target
        && Some(t) != default_name
    {
        return Err(format!(
            "target `{t}` is not available to this grader (available: {})",
            default_name.unwrap_or("none")
        ));
    }
    let request = Request {
        messages,
        ..Request::default()
    };
    let a = complete(shared, &request)?;
    let mut out = json!({
        "output": [{"role": "assistant", "content": a.text}],
        "rawText": a.text,
    });
    if a.input_tokens.is_some() || a.output_tokens.is_some() {
        out["tokenUsage"] =
            json!({"input": a.input_tokens.unwrap_or(0), "output": a.output_tokens.unwrap_or(0)});
    }
    Ok(out)
}
