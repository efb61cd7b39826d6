//! AgentV's `copilot-sdk` target: GitHub Copilot CLI driven the way the
//! Copilot SDK (`@github/copilot-sdk` 0.1.32, which AgentV 4.42.4's
//! `CopilotSdkProvider` loads) drives it, without Node. The CLI runs as the
//! SDK's server: `copilot [args…] --headless --no-auto-update --log-level
//! debug --stdio [--auth-token-env COPILOT_SDK_AUTH_TOKEN --no-auto-login]`
//! in the case workspace (else `cwd`, else evalhost's own directory), or
//! evalhost connects to a running one at `cli_url` (`host:port`). Over
//! JSON-RPC with `Content-Length` framing (vscode-jsonrpc's): `ping` (the
//! server's protocol version must be 2 or 3, as the SDK requires),
//! `session.create` with AgentV's options (model, the system prompt
//! appended, the working directory and its skill directories, a custom
//! provider from `base_url`/`subprovider`/`api_key`/`bearer_token`/
//! `api_version`/`api_format`), `session.send` with AgentV's prompt
//! document, then `session.event` notifications until `session.idle` (a
//! `session.error` fails the run with its message), then
//! `session.destroy`. Permission requests are approved, as AgentV approves
//! them; tool calls, user-input and hook requests are refused (AgentV
//! registers none). Tool calls come from `tool.execution_start` and
//! `tool.execution_complete`, the answer from the last `assistant.message`,
//! tokens and cost from `assistant.usage`, summed.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::agent::{AgentConfig, prompt_document};
use super::{Invocation, OutputMessage, TargetFailure, TargetOutput, TokenUsage, ToolCall};
use crate::suite::TestCase;

/// The protocol versions the SDK speaks.
const PROTOCOL_VERSIONS: std::ops::RangeInclusive<u64> = 2..=3;

/// AgentV's default when the target sets no `timeout_seconds`: 90 minutes.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(90 * 60);

/// The arguments the SDK starts the CLI server with.
pub fn args(config: &AgentConfig) -> Vec<String> {
    let mut args = config.extra_args.clone();
    args.extend(
        [
            "--headless",
            "--no-auto-update",
            "--log-level",
            "debug",
            "--stdio",
        ]
        .map(str::to_owned),
    );
    if config.github_token.is_some() {
        args.extend(
            [
                "--auth-token-env",
                "COPILOT_SDK_AUTH_TOKEN",
                "--no-auto-login",
            ]
            .map(str::to_owned),
        );
    }
    args
}

/// The `session.create` parameters for AgentV's options.
pub fn session_options(config: &AgentConfig, cwd: &Path) -> Value {
    let skills: Vec<String> = [".claude/skills", ".agents/skills", ".codex/skills"]
        .iter()
        .map(|d| cwd.join(d))
        .filter(|d| d.is_dir())
        .map(|d| d.display().to_string())
        .collect();
    let mut options = json!({
        "requestPermission": true,
        "requestUserInput": false,
        "hooks": false,
        "envValueMode": "direct",
        "workingDirectory": cwd.display().to_string(),
        "skillDirectories": skills,
    });
    if let Some(m) = &config.model {
        options["model"] = json!(m);
    }
    if let Some(system) = &config.system_prompt {
        options["systemMessage"] = json!({"mode": "append", "content": system});
    }
    if let Some(base) = &config.base_url {
        let kind = config
            .subprovider
            .clone()
            .unwrap_or_else(|| "openai".into());
        let trimmed = base.trim().trim_end_matches('/');
        let lower = trimmed.to_ascii_lowercase();
        let base_url = if lower.starts_with("http://") || lower.starts_with("https://") {
            trimmed.to_owned()
        } else if kind == "azure" {
            format!("https://{trimmed}.openai.azure.com")
        } else {
            trimmed.to_owned()
        };
        let mut provider = json!({"type": kind, "baseUrl": base_url});
        if let Some(t) = &config.bearer_token {
            provider["bearerToken"] = json!(t);
        } else if let Some(k) = &config.api_key {
            provider["apiKey"] = json!(k);
        }
        if let Some(w) = &config.wire_api {
            provider["wireApi"] = json!(w);
        }
        if kind == "azure"
            && let Some(v) = &config.api_version
        {
            provider["azure"] = json!({"apiVersion": v});
        }
        options["provider"] = provider;
    }
    options
}

/// One framed message from `reader`, or `None` at its end.
fn read_message(reader: &mut impl BufRead) -> Option<String> {
    let mut length: Option<usize> = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let mut body = vec![0u8; length?];
    reader.read_exact(&mut body).ok()?;
    Some(String::from_utf8_lossy(&body).into_owned())
}

fn frame(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// A tool call still running.
struct Running {
    id: String,
    tool: String,
    input: Option<Value>,
    started: Instant,
}

/// What the session's events have said.
#[derive(Default)]
struct Session {
    running: Vec<Running>,
    done: Vec<ToolCall>,
    answer: String,
    usage: Option<TokenUsage>,
    cost: Option<f64>,
    idle: bool,
    error: Option<String>,
}

impl Session {
    fn event(&mut self, event: &Value) {
        let data = &event["data"];
        match event["type"].as_str() {
            Some("tool.execution_start") => self.running.push(Running {
                id: data["toolCallId"]
                    .as_str()
                    .or(data["id"].as_str())
                    .unwrap_or("")
                    .to_owned(),
                tool: data["toolName"]
                    .as_str()
                    .or(data["name"].as_str())
                    .unwrap_or("unknown")
                    .to_owned(),
                input: data
                    .get("input")
                    .or(data.get("arguments"))
                    .filter(|v| !v.is_null())
                    .cloned(),
                started: Instant::now(),
            }),
            Some("tool.execution_end" | "tool.execution_complete") => {
                let id = data["toolCallId"].as_str().or(data["id"].as_str());
                if let Some(i) = id.and_then(|id| self.running.iter().position(|r| r.id == id)) {
                    let run = self.running.remove(i);
                    self.done.push(ToolCall {
                        id: Some(run.id),
                        tool: run.tool,
                        input: run.input,
                        output: data
                            .get("output")
                            .or(data.get("result"))
                            .filter(|v| !v.is_null())
                            .cloned(),
                        status: None,
                        duration_ms: Some(run.started.elapsed().as_millis() as u64),
                    });
                }
            }
            Some("assistant.message") => {
                if let Some(c) = data["content"].as_str() {
                    self.answer = c.to_owned();
                }
            }
            Some("assistant.usage") => {
                let n = |a: &str, b: &str| data[a].as_u64().or(data[b].as_u64()).unwrap_or(0);
                let before = self.usage.take().unwrap_or_default();
                self.usage = Some(TokenUsage {
                    input: before.input + n("inputTokens", "input"),
                    output: before.output + n("outputTokens", "output"),
                    ..TokenUsage::default()
                });
                if let Some(c) = data["costUsd"].as_f64() {
                    self.cost = Some(self.cost.unwrap_or(0.0) + c);
                }
            }
            Some("session.idle") => self.idle = true,
            Some("session.error") => {
                self.error = Some(
                    data["message"]
                        .as_str()
                        .unwrap_or("the session failed")
                        .to_owned(),
                );
            }
            _ => {}
        }
    }
}

/// The connection: messages in on a channel, frames out on a writer.
struct Connection {
    rx: mpsc::Receiver<String>,
    out: Box<dyn Write + Send>,
    next_id: u64,
    transcript: String,
    started: Instant,
    timeout: Duration,
}

impl Connection {
    fn send(&mut self, message: &Value) -> Result<(), TargetFailure> {
        self.transcript.push_str(&format!("> {message}\n"));
        self.out
            .write_all(&frame(message))
            .and_then(|()| self.out.flush())
            .map_err(|e| TargetFailure::new(format!("Copilot SDK server closed its input ({e})")))
    }

    /// The next message: a response, or `None` once a notification or a
    /// request of the server's has been dealt with.
    fn next(
        &mut self,
        session: &mut Session,
        waiting_for: &str,
    ) -> Result<Option<Value>, TargetFailure> {
        let wait = self
            .timeout
            .checked_sub(self.started.elapsed())
            .ok_or_else(|| TargetFailure::new("timed out".to_owned()))?;
        let text = match self.rx.recv_timeout(wait) {
            Ok(t) => t,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(TargetFailure::new("timed out".to_owned()));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(TargetFailure::new(format!(
                    "the Copilot CLI server exited before {waiting_for}"
                )));
            }
        };
        self.transcript.push_str(&format!("< {text}\n"));
        let Ok(msg) = serde_json::from_str::<Value>(&text) else {
            return Ok(None);
        };
        match (msg.get("id"), msg["method"].as_str()) {
            (Some(id), Some(method)) => {
                let reply = if method == "permission.request" {
                    json!({"jsonrpc": "2.0", "id": id, "result": {"result": {"kind": "approved"}}})
                } else {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("{method} is not offered by this client")}})
                };
                self.send(&reply)?;
            }
            (None, Some("session.event")) => session.event(&msg["params"]["event"]),
            (None, Some(_)) => {}
            _ => return Ok(Some(msg)),
        }
        Ok(None)
    }

    /// A request and its result.
    fn call(
        &mut self,
        session: &mut Session,
        method: &str,
        params: Value,
    ) -> Result<Value, TargetFailure> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let Some(msg) = self.next(session, &format!("answering `{method}`"))? else {
                continue;
            };
            if msg["id"].as_u64() != Some(id) {
                continue;
            }
            if let Some(e) = msg.get("error") {
                return Err(TargetFailure::new(format!(
                    "the Copilot CLI server refused `{method}`: {}",
                    e["message"].as_str().unwrap_or(&e.to_string())
                )));
            }
            return Ok(msg.get("result").cloned().unwrap_or(Value::Null));
        }
    }
}

/// Runs Copilot through the SDK's protocol for one test.
pub fn invoke(
    config: &AgentConfig,
    test: &TestCase,
    inv: &Invocation<'_>,
) -> Result<TargetOutput, TargetFailure> {
    let cwd: PathBuf = super::agent::session_cwd(config, inv);
    let timeout = inv.time_left(config.timeout.or(Some(DEFAULT_TIMEOUT)));
    let case_bound = inv.deadline.is_some() && timeout != config.timeout.or(Some(DEFAULT_TIMEOUT));
    let started = Instant::now();
    let (tx, rx) = mpsc::channel::<String>();
    // Dropped after the child: the sandbox of the server evalhost starts.
    let mut _sandbox = None;
    let mut child = None;
    let mut err_tail = None;
    let out: Box<dyn Write + Send> = match &config.cli_url {
        Some(_) if inv.sandbox.is_some() => {
            return Err(TargetFailure::fatal(
                "--isolate: this Copilot SDK target's `cli_url` names a Copilot server evalhost did not start, which no sandbox of evalhost's confines; remove `cli_url` so that evalhost starts the server in the case's sandbox".to_owned(),
            ));
        }
        Some(url) => {
            let address = url
                .trim()
                .trim_start_matches("http://")
                .trim_start_matches("tcp://")
                .trim_end_matches('/');
            let stream = std::net::TcpStream::connect(address).map_err(|e| {
                TargetFailure::fatal(format!(
                    "cannot connect to the Copilot CLI server at `{address}` (cli_url): {e}"
                ))
            })?;
            let reader = stream
                .try_clone()
                .map_err(|e| TargetFailure::new(format!("Copilot SDK connection: {e}")))?;
            std::thread::spawn(move || {
                let mut reader = BufReader::new(reader);
                while let Some(m) = read_message(&mut reader) {
                    if tx.send(m).is_err() {
                        break;
                    }
                }
            });
            Box::new(stream)
        }
        None => {
            let env = config
                .github_token
                .iter()
                .map(|token| ("COPILOT_SDK_AUTH_TOKEN".to_owned(), token.clone()))
                .collect();
            let session =
                super::agent::Session::new(config, inv, args(config), &cwd, env, &["NODE_DEBUG"]);
            let (mut spawned, guard) = super::agent::spawn_session(
                &session,
                "Copilot CLI",
                &config.executable,
                "Install it or give the target a `cli_path`",
                "the Copilot CLI server",
            )?;
            let stdout = spawned.stdout.take().expect("piped");
            let stderr = spawned.stderr.take().expect("piped");
            let stdin = spawned.stdin.take().expect("piped");
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stdout);
                while let Some(m) = read_message(&mut reader) {
                    if tx.send(m).is_err() {
                        break;
                    }
                }
            });
            err_tail = Some(super::agent::stderr_tail(stderr));
            child = Some(spawned);
            _sandbox = guard;
            Box::new(stdin)
        }
    };
    let mut conn = Connection {
        rx,
        out,
        next_id: 0,
        transcript: String::new(),
        started,
        timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
    };
    let mut session = Session::default();
    let mut workspace: Option<PathBuf> = None;
    let result = (|| -> Result<(), TargetFailure> {
        let pong = conn.call(&mut session, "ping", json!({}))?;
        match pong["protocolVersion"].as_u64() {
            Some(v) if PROTOCOL_VERSIONS.contains(&v) => {}
            Some(v) => {
                return Err(TargetFailure::fatal(format!(
                    "SDK protocol version mismatch: SDK supports versions {}-{}, but server reports version {v}. Please update your SDK or server to ensure compatibility.",
                    PROTOCOL_VERSIONS.start(),
                    PROTOCOL_VERSIONS.end()
                )));
            }
            None => {
                return Err(TargetFailure::fatal(format!(
                    "SDK protocol version mismatch: SDK supports versions {}-{}, but server does not report a protocol version. Please update your server to ensure compatibility.",
                    PROTOCOL_VERSIONS.start(),
                    PROTOCOL_VERSIONS.end()
                )));
            }
        }
        let created = conn
            .call(
                &mut session,
                "session.create",
                session_options(config, &cwd),
            )
            .map_err(|e| TargetFailure {
                message: format!("Failed to create Copilot SDK session: {}", e.message),
                ..e
            })?;
        let id = created["sessionId"].clone();
        workspace = created["workspacePath"].as_str().map(PathBuf::from);
        conn.call(
            &mut session,
            "session.send",
            json!({"sessionId": id, "prompt": prompt_document(test)}),
        )?;
        while !session.idle && session.error.is_none() {
            conn.next(&mut session, "the session went idle")?;
        }
        // The SDK destroys the session after each test; its answer does
        // not matter.
        let _ = conn.call(&mut session, "session.destroy", json!({"sessionId": id}));
        match session.error.take() {
            Some(e) => Err(TargetFailure::new(e)),
            None => Ok(()),
        }
    })();
    let transcript = std::mem::take(&mut conn.transcript);
    drop(conn);
    // Its input closed, the server may exit by itself; then it is stopped,
    // as the SDK's `stop()` stops it.
    if let Some(mut c) = child {
        let exit_by = Instant::now() + Duration::from_secs(2);
        while matches!(c.try_wait(), Ok(None)) && Instant::now() < exit_by {
            std::thread::sleep(Duration::from_millis(10));
        }
        crate::process::kill_group(c.id() as i32);
        let _ = c.wait();
    }
    let tail = err_tail.and_then(|t| t.join().ok()).unwrap_or_default();
    result.map_err(|e| {
        // The server's own refusal says enough; its debug log would bury it.
        let tail = if e.message.contains("refused") {
            ""
        } else {
            tail.as_str()
        };
        super::agent::session_failure(
            e,
            "Copilot SDK",
            timeout.or(Some(DEFAULT_TIMEOUT)),
            case_bound,
            tail,
        )
    })?;
    let mut out = TargetOutput::text(session.answer.clone());
    out.messages = if session.done.is_empty() && session.answer.is_empty() {
        Vec::new()
    } else {
        vec![OutputMessage {
            role: "assistant".into(),
            content: session.answer,
            content_json: None,
            tool_calls: session.done,
            name: None,
        }]
    };
    out.token_usage = session.usage;
    out.cost_usd = session.cost;
    out.duration_ms = Some(started.elapsed().as_millis() as u64);
    out.raw = Some(transcript);
    // Files the agent wrote into its session state (`workspacePath/files`).
    out.file_changes =
        workspace.and_then(|w| super::copilot_log::session_artifacts(&w.join("files")));
    Ok(out)
}
