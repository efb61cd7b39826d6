//! AgentV's `copilot` (`copilot-cli`) target: GitHub Copilot CLI over the
//! Agent Client Protocol, as AgentV 4.42.4's `CopilotCliProvider` runs it:
//! `copilot --acp --stdio --allow-all-tools --yolo [--model M] [args…]` in
//! the case workspace (else `cwd`, else evalhost's own directory), then, as
//! JSON-RPC lines on its stdin and stdout, `initialize`, `session/new` with
//! that directory and `session/prompt` with the system prompt (when given)
//! and AgentV's prompt document. While the prompt runs, `session/update`
//! notifications bring the tool calls (`tool_call`, `tool_call_update`),
//! the answer (`agent_message_chunk`) and usage; a permission request is
//! granted (`allow`), as AgentV grants it; any other request from the agent
//! is refused as not offered. The answer is one assistant message with the
//! completed tool calls; tokens from the prompt's `usage`, else the last
//! `usage_update`; a tool call the CLI rejected fails the run with AgentV's
//! advice.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::agent::{AgentConfig, prompt_document};
use super::{Invocation, OutputMessage, TargetFailure, TargetOutput, TokenUsage, ToolCall};
use crate::suite::TestCase;

/// ACP's protocol version (the SDK's `PROTOCOL_VERSION`).
const PROTOCOL_VERSION: u64 = 1;

/// The arguments AgentV runs Copilot with.
pub fn args(config: &AgentConfig) -> Vec<String> {
    let mut args: Vec<String> = ["--acp", "--stdio", "--allow-all-tools", "--yolo"]
        .map(str::to_owned)
        .to_vec();
    if let Some(m) = &config.model {
        args.extend(["--model".to_owned(), m.clone()]);
    }
    args.extend(config.extra_args.iter().cloned());
    args
}

/// A tool call still running.
struct Running {
    tool: String,
    input: Option<Value>,
    started: Instant,
}

/// What the session has said so far.
#[derive(Default)]
struct Session {
    running: Vec<(String, Running)>,
    done: Vec<ToolCall>,
    text: String,
    usage: Option<TokenUsage>,
    cost: Option<f64>,
}

impl Session {
    /// One `session/update`.
    fn update(&mut self, update: &Value) {
        let title = || {
            update["title"]
                .as_str()
                .or(update["kind"].as_str())
                .unwrap_or("unknown")
                .to_owned()
        };
        match update["sessionUpdate"].as_str() {
            Some("tool_call") => {
                let id = update["toolCallId"].as_str().unwrap_or("").to_owned();
                match update["status"].as_str() {
                    None | Some("pending" | "in_progress") => self.running.push((
                        id,
                        Running {
                            tool: title(),
                            input: update.get("rawInput").cloned(),
                            started: Instant::now(),
                        },
                    )),
                    Some("completed" | "failed") => self.done.push(ToolCall {
                        id: Some(id),
                        tool: title(),
                        input: update.get("rawInput").cloned(),
                        output: update.get("rawOutput").cloned(),
                        status: update["status"].as_str().map(str::to_owned),
                        duration_ms: Some(0),
                    }),
                    _ => {}
                }
            }
            Some("tool_call_update") => {
                let id = update["toolCallId"].as_str().unwrap_or("");
                if matches!(update["status"].as_str(), Some("completed" | "failed"))
                    && let Some(i) = self.running.iter().position(|(r, _)| r == id)
                {
                    let (id, run) = self.running.remove(i);
                    self.done.push(ToolCall {
                        id: Some(id),
                        tool: run.tool,
                        input: run.input,
                        output: update.get("rawOutput").cloned(),
                        status: update["status"].as_str().map(str::to_owned),
                        duration_ms: Some(run.started.elapsed().as_millis() as u64),
                    });
                }
            }
            Some("agent_message_chunk") => {
                if update["content"]["type"] == "text"
                    && let Some(t) = update["content"]["text"].as_str()
                {
                    self.text.push_str(t);
                }
            }
            Some("usage_update") => {
                self.usage = Some(TokenUsage {
                    input: update["used"].as_u64().unwrap_or(0),
                    ..TokenUsage::default()
                });
                if update["cost"]["currency"] == "USD"
                    && let Some(a) = update["cost"]["amount"].as_f64()
                {
                    self.cost = Some(self.cost.unwrap_or(0.0) + a);
                }
            }
            _ => {}
        }
    }
}

/// Runs Copilot for one test.
pub fn invoke(
    config: &AgentConfig,
    test: &TestCase,
    inv: &Invocation<'_>,
) -> Result<TargetOutput, TargetFailure> {
    let cwd: PathBuf = super::agent::session_cwd(config, inv);
    let timeout = inv.time_left(config.timeout);
    let case_bound = inv.deadline.is_some() && timeout != config.timeout;
    let started = Instant::now();
    let session = super::agent::Session::new(config, inv, args(config), &cwd, Vec::new(), &[]);
    let (mut child, _sandbox) = super::agent::spawn_session(
        &session,
        "Copilot CLI",
        &config.executable,
        "Install it or give the target an `executable`",
        "Copilot CLI",
    )?;
    let pid = child.id() as i32;
    let mut stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let err_tail = super::agent::stderr_tail(stderr);
    let finish = |child: &mut std::process::Child| {
        crate::process::kill_group(pid);
        let _ = child.wait();
    };
    let mut session = Session::default();
    let mut acp_session: Option<String> = None;
    // Every protocol line, both ways: the transcript.
    let mut transcript = String::new();
    let result = (|| -> Result<Value, TargetFailure> {
        let mut next_id = 0u64;
        let mut call = |stdin: &mut std::process::ChildStdin,
                        session: &mut Session,
                        method: &str,
                        params: Value|
         -> Result<Value, TargetFailure> {
            next_id += 1;
            let id = next_id;
            let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            transcript.push_str(&format!("> {line}\n"));
            writeln!(stdin, "{line}")
                .map_err(|e| TargetFailure::new(format!("Copilot CLI closed its input ({e})")))?;
            loop {
                let wait = match timeout {
                    Some(t) => t
                        .checked_sub(started.elapsed())
                        .ok_or_else(|| TargetFailure::new("timed out".to_owned()))?,
                    None => Duration::from_secs(24 * 3600),
                };
                let line = match rx.recv_timeout(wait) {
                    Ok(l) => l,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        return Err(TargetFailure::new("timed out".to_owned()));
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        return Err(TargetFailure::new(format!(
                            "Copilot CLI exited before answering `{method}`"
                        )));
                    }
                };
                transcript.push_str(&format!("< {line}\n"));
                let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                match (msg.get("id"), msg.get("method").and_then(Value::as_str)) {
                    // A request from the agent.
                    (Some(rid), Some(m)) => {
                        let reply = if m == "session/request_permission" {
                            json!({"jsonrpc": "2.0", "id": rid, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
                        } else {
                            json!({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": format!("Method not found: {m}")}})
                        };
                        transcript.push_str(&format!("> {reply}\n"));
                        let _ = writeln!(stdin, "{reply}");
                    }
                    // A notification.
                    (None, Some("session/update")) => session.update(&msg["params"]["update"]),
                    (None, Some(_)) => {}
                    // The answer to our request.
                    (Some(rid), None) if rid.as_u64() == Some(id) => {
                        if let Some(e) = msg.get("error") {
                            return Err(TargetFailure::new(format!(
                                "Copilot CLI refused `{method}`: {}",
                                e["message"].as_str().unwrap_or(&e.to_string())
                            )));
                        }
                        return Ok(msg.get("result").cloned().unwrap_or(Value::Null));
                    }
                    _ => {}
                }
            }
        };
        call(
            &mut stdin,
            &mut session,
            "initialize",
            json!({"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}),
        )?;
        let created = call(
            &mut stdin,
            &mut session,
            "session/new",
            json!({"cwd": cwd.display().to_string(), "mcpServers": []}),
        )?;
        let session_id = created["sessionId"].clone();
        acp_session = session_id.as_str().map(str::to_owned);
        let mut prompt = Vec::new();
        if let Some(system) = &config.system_prompt {
            prompt.push(json!({"type": "text", "text": system}));
        }
        prompt.push(json!({"type": "text", "text": prompt_document(test)}));
        call(
            &mut stdin,
            &mut session,
            "session/prompt",
            json!({"sessionId": session_id, "prompt": prompt}),
        )
    })();
    finish(&mut child);
    drop(stdin);
    let tail = err_tail.join().unwrap_or_default();
    let response = result
        .map_err(|e| super::agent::session_failure(e, "Copilot CLI", timeout, case_bound, &tail))?;
    let usage = &response["usage"];
    if usage["totalTokens"].as_u64().unwrap_or(0) > 0 {
        session.usage = Some(TokenUsage {
            input: usage["inputTokens"].as_u64().unwrap_or(0),
            output: usage["outputTokens"].as_u64().unwrap_or(0),
            cached: usage["cachedReadTokens"].as_u64().unwrap_or(0),
            reasoning: usage["thoughtTokens"].as_u64().unwrap_or(0),
        });
    }
    let rejected: Vec<&str> = session
        .done
        .iter()
        .filter(|c| {
            c.output
                .as_ref()
                .is_some_and(|o| matches!(o["code"].as_str(), Some("rejected" | "denied")))
        })
        .map(|c| c.tool.as_str())
        .collect();
    if !rejected.is_empty() {
        return Err(TargetFailure::fatal(format!(
            "Copilot rejected {} tool call(s): {}. Add args: [\"--yolo\"] to your target config or re-run with --yolo to bypass permission checks.",
            rejected.len(),
            rejected.join(", ")
        )));
    }
    let mut out = TargetOutput::text(session.text.clone());
    out.messages = if session.done.is_empty() && session.text.is_empty() {
        Vec::new()
    } else {
        vec![OutputMessage {
            role: "assistant".into(),
            content: session.text,
            content_json: None,
            tool_calls: session.done,
            name: None,
        }]
    };
    out.token_usage = session.usage;
    out.cost_usd = session.cost;
    out.duration_ms = Some(started.elapsed().as_millis() as u64);
    out.finish_reason = response["stopReason"].as_str().map(str::to_owned);
    // Files Copilot wrote into its session state rather than the
    // workspace, as AgentV collects them (`~/.copilot/session-state/<id>/files`).
    out.file_changes = acp_session
        .zip(std::env::var_os("HOME"))
        .and_then(|(id, home)| {
            let dir = PathBuf::from(home).join(".copilot/session-state").join(id);
            super::copilot_log::session_artifacts(&dir.join("files"))
        });
    out.raw = Some(transcript);
    Ok(out)
}
