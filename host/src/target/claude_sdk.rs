//! AgentV's `claude-sdk` target: Claude Code driven the way the Claude
//! Agent SDK (0.2.141, which AgentV 4.42.4's `ClaudeSdkProvider` loads)
//! drives it, without Node: `claude --output-format stream-json --verbose
//! --input-format stream-json [--max-turns N] [--max-budget-usd X]
//! [--model M] --permission-mode bypassPermissions
//! --allow-dangerously-skip-permissions` in the case workspace (else
//! `cwd`, else evalhost's own directory), `CLAUDECODE`, `NODE_OPTIONS` and
//! `DEBUG` removed and `CLAUDE_CODE_ENTRYPOINT=sdk-ts` set, as the SDK sets
//! them. On its stdin, as JSON lines: the SDK's `initialize` control
//! request (with `systemPrompt`: the target's `system_prompt`, else the
//! empty prompt the SDK sends when given none), then one user message
//! with AgentV's prompt document; after the `result` message stdin is
//! closed, as the SDK ends a single-turn query. Control requests from
//! Claude Code (tool permission, hooks, MCP) are answered with an error:
//! the SDK as AgentV configures it offers none of them, and permissions
//! are bypassed. The stream is Claude Code's stream-json, read by the
//! trace normalizer as the `claude` target's is.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::agent::{AgentConfig, prompt_document};
use super::{Invocation, TargetFailure, TargetOutput};
use crate::suite::TestCase;
use crate::trace::TraceFormat;

/// The SDK version AgentV 4.42.4 installs (it sets this variable).
const SDK_VERSION: &str = "0.2.141";

/// The arguments the SDK runs Claude Code with, for AgentV's options.
pub fn args(config: &AgentConfig) -> Vec<String> {
    let mut args: Vec<String> = [
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
    ]
    .map(str::to_owned)
    .to_vec();
    if let Some(n) = config.max_turns {
        args.extend(["--max-turns".to_owned(), n.to_string()]);
    }
    if let Some(b) = config.max_budget_usd {
        args.extend(["--max-budget-usd".to_owned(), b.to_string()]);
    }
    if let Some(m) = &config.model {
        args.extend(["--model".to_owned(), m.clone()]);
    }
    args.extend(
        [
            "--permission-mode",
            "bypassPermissions",
            "--allow-dangerously-skip-permissions",
        ]
        .map(str::to_owned),
    );
    args
}

/// A request id as the SDK makes them: random base-36.
fn request_id() -> String {
    let n: u64 = rand::random();
    let mut s = String::new();
    let mut v = n;
    while v > 0 && s.len() < 13 {
        let d = (v % 36) as u32;
        s.push(char::from_digit(d, 36).unwrap_or('0'));
        v /= 36;
    }
    if s.is_empty() { "0".into() } else { s }
}

/// Runs Claude Code through the SDK's protocol for one test.
pub fn invoke(
    config: &AgentConfig,
    test: &TestCase,
    inv: &Invocation<'_>,
) -> Result<TargetOutput, TargetFailure> {
    let cwd: PathBuf = super::agent::session_cwd(config, inv);
    let timeout = inv.time_left(config.timeout);
    let case_bound = inv.deadline.is_some() && timeout != config.timeout;
    let label = config.kind.label();
    let started = Instant::now();
    let session = super::agent::Session::new(
        config,
        inv,
        args(config),
        &cwd,
        vec![
            ("CLAUDE_CODE_ENTRYPOINT".into(), "sdk-ts".into()),
            ("CLAUDE_AGENT_SDK_VERSION".into(), SDK_VERSION.into()),
        ],
        &["CLAUDECODE", "NODE_OPTIONS", "DEBUG"],
    );
    let (mut child, _sandbox) = super::agent::spawn_session(
        &session,
        label,
        &config.executable,
        "Install Claude Code or give the target an `executable`",
        label,
    )?;
    let pid = child.id() as i32;
    let mut stdin = Some(child.stdin.take().expect("piped"));
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
    let init_id = request_id();
    let system = config.system_prompt.clone().unwrap_or_default();
    let opening = [
        json!({"request_id": init_id, "type": "control_request", "request": {"subtype": "initialize", "systemPrompt": [system]}}),
        json!({"type": "user", "session_id": "", "message": {"role": "user", "content": [{"type": "text", "text": prompt_document(test)}]}, "parent_tool_use_id": null}),
    ];
    let mut stream = String::new();
    let result = (|| -> Result<(), TargetFailure> {
        let input = stdin.as_mut().expect("open");
        for line in &opening {
            writeln!(input, "{line}")
                .map_err(|e| TargetFailure::new(format!("{label} closed its input ({e})")))?;
        }
        let mut got_result = false;
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
                // Claude Code is done (it exits after the single turn).
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
            };
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                stream.push_str(&line);
                stream.push('\n');
                continue;
            };
            match msg["type"].as_str() {
                Some("control_request") => {
                    let reply = json!({"type": "control_response", "response": {"subtype": "error", "request_id": msg["request_id"], "error": format!("Unsupported control request subtype: {}", msg["request"]["subtype"].as_str().unwrap_or("?"))}});
                    if let Some(input) = stdin.as_mut() {
                        let _ = writeln!(input, "{reply}");
                    }
                }
                Some("control_response") => {
                    let response = &msg["response"];
                    if response["request_id"] == init_id.as_str() && response["subtype"] == "error"
                    {
                        return Err(TargetFailure::new(format!(
                            "{label} refused the SDK's initialize request: {}",
                            response["error"].as_str().unwrap_or("no reason given")
                        )));
                    }
                }
                Some("keep_alive" | "control_cancel_request") => {}
                other => {
                    stream.push_str(&line);
                    stream.push('\n');
                    if other == Some("result") && !got_result {
                        got_result = true;
                        // A single-turn query: the SDK ends the input.
                        stdin = None;
                    }
                }
            }
        }
    })();
    drop(stdin);
    // Give Claude Code a moment to exit by itself after its input closed.
    let exit_by = Instant::now() + Duration::from_secs(5);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < exit_by && result.is_ok() => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                crate::process::kill_group(pid);
                break child.wait().ok();
            }
        }
    };
    let tail = err_tail.join().unwrap_or_default();
    result.map_err(|e| super::agent::session_failure(e, label, timeout, case_bound, &tail))?;
    if !stream
        .lines()
        .any(|l| l.contains("\"type\":\"result\"") || l.contains("\"type\": \"result\""))
    {
        let code = status.and_then(|s| s.code());
        let prefix = match code {
            Some(c) => format!("Claude Code process exited with code {c} before its result"),
            None => "Claude Code process ended before its result".to_owned(),
        };
        return Err(TargetFailure::new(if tail.trim().is_empty() {
            prefix
        } else {
            format!("{prefix}: {}", tail.trim())
        }));
    }
    let mut output = crate::trace::normalize(&stream, TraceFormat::ClaudeCode)
        .map_err(|e| TargetFailure::fatal(e.message))?;
    if output.duration_ms.is_none() {
        output.duration_ms = Some(started.elapsed().as_millis() as u64);
    }
    output.raw = Some(stream);
    Ok(output)
}
