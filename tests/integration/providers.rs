//! AgentV's model-API providers on loopback servers replaying each API's
//! documented answers: the request evalhost sends (path, headers, body) is
//! checked, not only what it reads back.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{FakeServer, Project, Reply};

fn with_targets(targets_yaml: &str) -> Project {
    let project = Project::with_mock("unused");
    std::fs::write(project.path().join(".evalhost/targets.yaml"), targets_yaml).unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: Say hi\n    assertions: [{type: contains, value: hi}]\n",
    );
    project
}

fn run(project: &Project) -> crate::support::Run {
    crate::support::evalhost()
        .current_dir(project.path())
        .env("EVALHOST_TEST_KEY", "sk-loopback")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into()
}

/// A streamed answer: `events` as server-sent events.
fn sse(events: &[(&str, Value)]) -> Reply {
    let mut reply = Reply::json(200, json!(null));
    reply
        .headers
        .push(("Content-Type".into(), "text/event-stream".into()));
    reply.body = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    reply
}

/// Anthropic's documented stream for a text answer (with a tool-use block).
fn anthropic_stream(text: &str) -> Reply {
    sse(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "usage": {"input_tokens": 25, "output_tokens": 1, "cache_read_input_tokens": 10, "cache_creation_input_tokens": 0}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ("ping", json!({"type": "ping"})),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": &text[..2]}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": &text[2..]}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": "}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"Paris\"}"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 15}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ])
}

fn anthropic_targets(url: &str, extra: &str) -> String {
    format!(
        "targets:\n  - {{name: default, provider: anthropic, base_url: '{url}', model: claude-sonnet-4-5, api_key: '${{{{ EVALHOST_TEST_KEY }}}}', retry_initial_delay_ms: 20{extra}}}\n"
    )
}

#[test]
fn anthropic_streams_the_messages_api_and_records_tokens_and_cost() {
    let server = FakeServer::start(vec![anthropic_stream("hi there")]);
    let project = with_targets(&anthropic_targets(&server.url, ", thinking_budget: 2048"));
    let r = run(&project);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let row = project.row("t1");
    assert_eq!(row["output"], "hi there");
    assert_eq!(row["token_usage"]["input"], 25);
    assert_eq!(row["token_usage"]["output"], 15);
    assert_eq!(row["token_usage"]["cached"], 10);
    // pi-ai's price for claude-sonnet-4-5: $3 / $15 / $0.30 per million.
    let cost = row["cost_usd"].as_f64().unwrap();
    assert!(
        (cost - (25.0 * 3.0 + 15.0 * 15.0 + 10.0 * 0.3) / 1e6).abs() < 1e-12,
        "{cost}"
    );
    assert_eq!(row["finish_reason"], "tool_use");
    let calls = &row["output_messages"][0]["tool_calls"];
    assert_eq!(calls[0]["tool"], "get_weather");
    assert_eq!(calls[0]["input"], json!({"city": "Paris"}));
    // The request is AgentV's.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/messages");
    let header = |name: &str| {
        requests[0]
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-api-key").as_deref(), Some("sk-loopback"));
    assert_eq!(header("anthropic-version").as_deref(), Some("2023-06-01"));
    assert_eq!(header("authorization"), None);
    let body: Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 21333);
    assert_eq!(
        body["system"][0]["text"],
        "You are a careful assistant. Follow all provided instructions and do not fabricate results."
    );
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["messages"][0]["content"][0]["text"], "Say hi");
    assert_eq!(body["thinking"]["budget_tokens"], 2048);
    assert!(body.get("temperature").is_none());
    let results = std::fs::read_to_string(project.path().join("out/results.jsonl")).unwrap();
    assert!(!results.contains("sk-loopback"));
}

#[test]
fn anthropic_rate_limits_are_retried_after_the_servers_wait_and_errors_are_said() {
    let mut busy = Reply::json(
        429,
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
    );
    busy.headers.push(("retry-after".into(), "1".into()));
    let overloaded = Reply::json(
        529,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
    );
    let server = FakeServer::start(vec![busy, overloaded, anthropic_stream("hi again")]);
    let project = with_targets(&anthropic_targets(&server.url, ", max_retries: 3"));
    let start = Instant::now();
    let r = run(&project);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(server.requests().len(), 3, "429, then 529, then the answer");
    assert!(
        start.elapsed() >= Duration::from_millis(1000),
        "{:?}",
        start.elapsed()
    );
    // A bad key is not retried, and its message reaches the row.
    let server = FakeServer::start(vec![Reply::json(
        401,
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    )]);
    let project = with_targets(&anthropic_targets(&server.url, ", max_retries: 3"));
    assert_eq!(run(&project).code, 3);
    assert_eq!(server.requests().len(), 1);
    let error = project.row("t1")["error"].as_str().unwrap().to_owned();
    assert!(
        error.contains("HTTP 401") && error.contains("invalid x-api-key"),
        "{error}"
    );
    // An error in the middle of a stream is an error, not a short answer.
    let broken = sse(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
        ),
        (
            "error",
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad turn"}}),
        ),
    ]);
    let server = FakeServer::start(vec![broken]);
    let project = with_targets(&anthropic_targets(&server.url, ", max_retries: 0"));
    assert_eq!(run(&project).code, 3);
    let error = project.row("t1")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("invalid_request_error: bad turn"), "{error}");
}

#[test]
fn an_openai_target_sends_agentvs_system_prompt_when_the_test_has_none() {
    let server = FakeServer::start(vec![Reply::chat("hi")]);
    let project = with_targets(&format!(
        "targets:\n  - {{name: default, provider: openai, base_url: '{}/v1', model: m, api_key: '${{{{ EVALHOST_TEST_KEY }}}}'}}\n",
        server.url
    ));
    assert_eq!(run(&project).code, 0);
    let body: Value = serde_json::from_str(&server.requests()[0].body).unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are a careful assistant. Follow all provided instructions and do not fabricate results."},
            {"role": "user", "content": "Say hi"}
        ])
    );
}

/// Gemini's documented `streamGenerateContent?alt=sse` chunks: a thought, the
/// text in two parts, then the finish reason and usage.
fn gemini_stream(text: &str) -> Reply {
    let chunk = |v: Value| format!("data: {v}\r\n\r\n");
    let mut reply = Reply::json(200, json!(null));
    reply
        .headers
        .push(("Content-Type".into(), "text/event-stream".into()));
    reply.body = [
        chunk(json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "thinking it over", "thought": true}]}}]})),
        chunk(json!({"candidates": [{"content": {"role": "model", "parts": [{"text": &text[..3]}]}}]})),
        chunk(json!({"candidates": [{"content": {"role": "model", "parts": [{"text": &text[3..]}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 40, "cachedContentTokenCount": 8, "candidatesTokenCount": 12, "thoughtsTokenCount": 5, "totalTokenCount": 57}})),
    ]
    .concat();
    reply
}

#[test]
fn gemini_streams_generate_content_and_records_pi_ai_tokens() {
    let server = FakeServer::start(vec![gemini_stream("hi from gemini")]);
    let project = with_targets(&format!(
        "targets:\n  - {{name: default, provider: gemini, base_url: '{}/v1beta', model: gemini-2.5-flash, api_key: '${{{{ EVALHOST_TEST_KEY }}}}', temperature: 0.3}}\n",
        server.url
    ));
    let r = run(&project);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let row = project.row("t1");
    // The thought is not the answer.
    assert_eq!(row["output"], "hi from gemini");
    assert_eq!(row["finish_reason"], "STOP");
    // pi-ai's counts: input less cached, output with thoughts.
    assert_eq!(row["token_usage"]["input"], 32);
    assert_eq!(row["token_usage"]["output"], 17);
    assert_eq!(row["token_usage"]["cached"], 8);
    assert!(row["cost_usd"].as_f64().is_some_and(|c| c > 0.0), "{row}");
    let requests = server.requests();
    assert_eq!(
        requests[0].path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert!(
        requests[0]
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("x-goog-api-key") && v == "sk-loopback")
    );
    let body: Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(
        body["contents"],
        json!([{"role": "user", "parts": [{"text": "Say hi"}]}])
    );
    assert_eq!(
        body["systemInstruction"]["parts"][0]["text"],
        "You are a careful assistant. Follow all provided instructions and do not fabricate results."
    );
    assert_eq!(body["generationConfig"], json!({"temperature": 0.3}));
}

/// Any model kind can be the judge: an `llm-grader` asks an Anthropic
/// target through the `llm` capability.
#[test]
fn an_anthropic_target_judges_through_the_llm_capability() {
    let server = FakeServer::start(vec![anthropic_stream(
        r#"{"score": 0.9, "assertions": [{"text": "greets", "passed": true}]}"#,
    )]);
    let project = Project::with_mock("hi there");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        format!(
            "targets:\n  - {{name: default, provider: mock, response: 'hi there', grader_target: claude}}\n  - {{name: claude, provider: anthropic, base_url: '{}', model: claude-haiku-4-5, api_key: '${{{{ EVALHOST_TEST_KEY }}}}'}}\n",
            server.url
        ),
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: Say hi\n    assertions: [{type: llm-grader, prompt: 'Does it greet?'}]\n",
    );
    let r = run(&project);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(project.row("t1")["score"], 0.9);
    let body: Value = serde_json::from_str(&server.requests()[0].body).unwrap();
    assert_eq!(body["model"], "claude-haiku-4-5");
    // The judge's own system message, not AgentV's default.
    assert_ne!(
        body["system"][0]["text"],
        "You are a careful assistant. Follow all provided instructions and do not fabricate results."
    );
}

/// The Responses API's documented stream: deltas, the finished message
/// item, then `response.completed` with usage.
fn responses_stream(text: &str) -> Reply {
    sse(&[
        (
            "response.created",
            json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        ),
        (
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": &text[..2]}),
        ),
        (
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": &text[2..]}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 30, "input_tokens_details": {"cached_tokens": 6}, "output_tokens": 9, "total_tokens": 39}}}),
        ),
    ])
}

#[test]
fn azure_calls_the_responses_api_of_its_resource_with_its_api_version() {
    let server = FakeServer::start(vec![responses_stream("hi from azure")]);
    let project = with_targets(&format!(
        "targets:\n  - {{name: default, provider: azure, endpoint: '{}', deployment: gpt-5-mini, version: '2025-04-01-preview', api_key: '${{{{ EVALHOST_TEST_KEY }}}}', max_output_tokens: 300}}\n",
        server.url
    ));
    let r = run(&project);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let row = project.row("t1");
    assert_eq!(row["output"], "hi from azure");
    assert_eq!(row["finish_reason"], "completed");
    assert_eq!(row["token_usage"]["input"], 24);
    assert_eq!(row["token_usage"]["cached"], 6);
    assert_eq!(row["token_usage"]["output"], 9);
    let requests = server.requests();
    assert_eq!(
        requests[0].path,
        "/openai/v1/responses?api-version=2025-04-01-preview"
    );
    assert!(
        requests[0]
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("api-key") && v == "sk-loopback")
    );
    let body: Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(body["model"], "gpt-5-mini");
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_output_tokens"], 300);
    // gpt-5-mini reasons: the system prompt is the developer's.
    assert_eq!(body["input"][0]["role"], "developer");
    assert_eq!(
        body["input"][1],
        json!({"role": "user", "content": [{"type": "input_text", "text": "Say hi"}]})
    );
    // A failed response is an error with its reason.
    let failed = sse(&[(
        "response.failed",
        json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "server_error", "message": "it broke"}}}),
    )]);
    let server = FakeServer::start(vec![failed]);
    let project = with_targets(&format!(
        "targets:\n  - {{name: default, provider: azure, endpoint: '{}', deployment: d, api_key: '${{{{ EVALHOST_TEST_KEY }}}}', max_retries: 0}}\n",
        server.url
    ));
    assert_eq!(run(&project).code, 3);
    let error = project.row("t1")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("server_error: it broke"), "{error}");
    assert_eq!(
        server.requests()[0].path,
        "/openai/v1/responses?api-version=v1"
    );
}

#[test]
fn an_openai_target_with_api_format_responses_calls_the_responses_api() {
    let server = FakeServer::start(vec![responses_stream("hi responses")]);
    let project = with_targets(&format!(
        "targets:\n  - {{name: default, provider: openai, api_format: responses, base_url: '{}/v1', model: gpt-4.1, api_key: '${{{{ EVALHOST_TEST_KEY }}}}', temperature: 0}}\n",
        server.url
    ));
    let r = run(&project);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(project.row("t1")["output"], "hi responses");
    // gpt-4.1 at pi-ai's prices: $2 in, $8 out, $0.50 cached, per million.
    let cost = project.row("t1")["cost_usd"].as_f64().unwrap();
    assert!(
        (cost - (24.0 * 2.0 + 9.0 * 8.0 + 6.0 * 0.5) / 1e6).abs() < 1e-12,
        "{cost}"
    );
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/responses");
    assert!(
        requests[0]
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("authorization") && v == "Bearer sk-loopback")
    );
    let body: Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(body["input"][0]["role"], "system");
    assert_eq!(body["temperature"], 0.0);
}

/// A fake agent on `PATH`: records its arguments, environment, working
/// directory and stdin, then prints a recorded stream.
fn fake_agent(project: &Project, name: &str, trace: &str) -> std::path::PathBuf {
    let bin = project.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = project.path().join(format!("{name}-log"));
    std::fs::create_dir_all(&log).unwrap();
    let trace = crate::support::root().join("tests/data/traces").join(trace);
    let script = bin.join(name);
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{log}/args'\nenv > '{log}/env'\npwd > '{log}/cwd'\ncat > '{log}/stdin'\ncat '{trace}'\n",
            log = log.display(),
            trace = trace.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    log
}

fn run_with_agents(project: &Project) -> crate::support::Run {
    let path = format!(
        "{}:{}",
        project.path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    crate::support::evalhost()
        .current_dir(project.path())
        .env("PATH", path)
        .env("CLAUDECODE", "1")
        .env("CLAUDE_CODE_ENTRYPOINT", "cli")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into()
}

#[test]
fn claude_runs_as_agentv_runs_it_and_its_stream_reaches_the_graders() {
    let project = Project::with_mock("unused");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: claude, model: sonnet, max_turns: 3}\n",
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: Run the tests\n    assertions:\n      - {type: contains, value: '12 tests pass'}\n",
    );
    let log = fake_agent(&project, "claude", "claude-basic.jsonl");
    let r = run_with_agents(&project);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let args = std::fs::read_to_string(log.join("args")).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "-p",
            "--output-format",
            "stream-json",
            "--include-partial-messages",
            "--verbose",
            "--dangerously-skip-permissions",
            "--model",
            "sonnet",
            "--max-turns",
            "3"
        ]
    );
    // The prompt document on stdin; the nested-session variables removed.
    assert_eq!(
        std::fs::read_to_string(log.join("stdin")).unwrap(),
        "[[ ## user_query ## ]]\n\nRun the tests"
    );
    let env = std::fs::read_to_string(log.join("env")).unwrap();
    assert!(
        !env.contains("CLAUDECODE=") && !env.contains("CLAUDE_CODE_ENTRYPOINT="),
        "{env}"
    );
    let row = project.row("t1");
    assert_eq!(
        row["output"],
        "The server listens on port 8080 and all 12 tests pass."
    );
    // The agent's own stream is kept whole beside the row.
    let kept = project
        .path()
        .join("out")
        .join(row["transcript"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(kept).unwrap(),
        std::fs::read_to_string(
            crate::support::root().join("tests/data/traces/claude-basic.jsonl")
        )
        .unwrap()
    );
    assert_eq!(row["cost_usd"], 0.0237135);
    let tools: Vec<&str> = row["output_messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .filter_map(|c| c["tool"].as_str())
        .collect();
    assert!(
        tools.contains(&"Read") && tools.contains(&"Bash"),
        "{tools:?}"
    );
}

#[test]
fn codex_runs_as_agentvs_sdk_runs_it_and_failures_are_said() {
    let project = Project::with_mock("unused");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: codex, model: gpt-5-codex, model_reasoning_effort: low, cwd: work, system_prompt: Be terse.}\n",
    )
    .unwrap();
    std::fs::create_dir_all(project.path().join(".evalhost/work")).unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: Fix parse\n    assertions:\n      - {type: contains, value: 'all 3 tests now pass'}\n",
    );
    let log = fake_agent(&project, "codex", "codex-basic.jsonl");
    let r = run_with_agents(&project);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let args = std::fs::read_to_string(log.join("args")).unwrap();
    let work = project.path().join(".evalhost/work");
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "exec",
            "--experimental-json",
            "--config",
            "model=\"gpt-5-codex\"",
            "--cd",
            &work.display().to_string(),
            "--skip-git-repo-check",
            "--config",
            "model_reasoning_effort=\"low\""
        ]
    );
    assert_eq!(
        std::fs::read_to_string(log.join("stdin")).unwrap(),
        "Be terse.\n\n[[ ## user_query ## ]]\n\nFix parse"
    );
    let env = std::fs::read_to_string(log.join("env")).unwrap();
    assert!(
        env.contains("CODEX_INTERNAL_ORIGINATOR_OVERRIDE=codex_sdk_ts"),
        "{env}"
    );
    let row = project.row("t1");
    assert_eq!(row["token_usage"]["output"], 512);
    // A failed turn is the target's error.
    fake_agent(&project, "codex", "codex-failed.jsonl");
    let r = run_with_agents(&project);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    // An agent that is not installed is said plainly.
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: claude, executable: no-such-claude-here}\n",
    )
    .unwrap();
    let r = run_with_agents(&project);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let error = project.row("t1")["error"].as_str().unwrap().to_owned();
    assert!(
        error.contains("'no-such-claude-here' was not found on PATH"),
        "{error}"
    );
}

/// `evalhost doctor`: one line per target a run would use (with its judge
/// and fallbacks), each problem with its reason; a key's variable is named,
/// its value never shown.
#[test]
fn doctor_checks_each_target_a_run_would_use() {
    let api = FakeServer::start_fn(|req| {
        if req.path == "/v1/models" {
            Reply::json(200, json!({"data": []}))
        } else {
            Reply::json(401, json!({"error": "bad key"}))
        }
    });
    let project = Project::with_mock("unused");
    let bin = project.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("claude"),
        "#!/bin/sh\ncase \"$1\" in\n  --version) echo '2.0.14 (Claude Code)';;\n  --help) echo 'Usage: claude [options] --output-format <format> --include-partial-messages --verbose --max-turns <n>';;\nesac\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(bin.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        format!(
            "targets:
  - {{name: agent, provider: claude, grader_target: judge, fallback_targets: [backup, gem]}}
  - {{name: judge, provider: anthropic, base_url: '{url}', model: claude-haiku-4-5, api_key: '${{{{ EVALHOST_TEST_KEY }}}}'}}
  - {{name: backup, provider: codex, executable: no-such-codex-here}}
  - {{name: gem, provider: gemini, base_url: '{url}/v1beta', api_key: '${{{{ EVALHOST_TEST_KEY }}}}'}}
  - {{name: keyless, provider: openai, model: m, api_key: '${{{{ EVALHOST_TEST_UNSET_KEY }}}}'}}
  - {{name: default, provider: mock, response: hi}}
",
            url = api.url
        ),
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "execution: {targets: [agent, keyless]}\ntests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hi}]\n",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("PATH", path)
        .env("EVALHOST_TEST_KEY", "sk-doctor-secret")
        // The file was found beside the suite: trusted by saying so.
        .args(["doctor", "EVAL.yaml", "--trust"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let out = &r.stdout;
    assert!(
        out.contains("ok agent (claude): claude (2.0.14 (Claude Code))"),
        "{out}"
    );
    assert!(
        out.contains("ok judge (anthropic):") && out.contains("/v1/models answered"),
        "{out}"
    );
    assert!(
        out.contains("✗ backup (codex): `no-such-codex-here` is not on PATH"),
        "{out}"
    );
    assert!(
        out.contains("✗ gem (gemini):") && out.contains("refused the key (HTTP 401)"),
        "{out}"
    );
    // A key's variable that is not set: the target does not run at all
    // (never a request without its key).
    assert!(
        out.contains("✗ keyless: target `keyless`: `api_key` is `${{ EVALHOST_TEST_UNSET_KEY }}` and EVALHOST_TEST_UNSET_KEY is not set"),
        "{out}"
    );
    assert!(
        out.contains("✗ environment variable `EVALHOST_TEST_UNSET_KEY` is not set"),
        "{out}"
    );
    assert!(out.contains("4 problem(s)"), "{out}");
    assert!(!out.contains("sk-doctor-secret") && !r.stderr.contains("sk-doctor-secret"));
    // The health request carried the key where the API wants it.
    let models = api
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/models")
        .unwrap();
    assert!(
        models
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("x-api-key") && v == "sk-doctor-secret")
    );
}

/// The keys of every model-API target stay out of grader commands: a
/// code grader does not see the variable an `anthropic`, `gemini` or
/// `azure` target reads its key from.
#[test]
fn grader_commands_do_not_see_the_model_targets_keys() {
    let project = Project::with_mock("hi");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:
  - {name: default, provider: mock, response: hi}
  - {name: a, provider: anthropic, model: claude-haiku-4-5, api_key: '${{ EVALHOST_TEST_KEY }}'}
  - {name: g, provider: gemini, api_key: '${{ EVALHOST_TEST_GEMINI_KEY }}'}
  - {name: z, provider: azure, endpoint: r, deployment: d, api_key: '${{ EVALHOST_TEST_AZURE_KEY }}'}
",
    )
    .unwrap();
    project.write(
        "check.sh",
        "cat > /dev/null\nif env | grep -q 'sk-'; then echo '{\"score\": 0}'; else echo '{\"score\": 1}'; fi\n",
    );
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: hi\n    assertions:\n      - {type: code-grader, command: [sh, check.sh]}\n",
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("EVALHOST_TEST_KEY", "sk-anthropic")
        .env("EVALHOST_TEST_GEMINI_KEY", "sk-gemini")
        .env("EVALHOST_TEST_AZURE_KEY", "sk-azure")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(project.row("t1")["score"], 1.0);
}

/// A discovered provider (`provider: my-llm` with `.agentv/providers/my-llm.ts`)
/// runs as AgentV 4.42.4 runs it — `bun run <script> {PROMPT}` through the
/// cli runner — so its answer is read from `{OUTPUT_FILE}`, which that
/// command does not pass: a script that only prints fails, as in AgentV,
/// with the reason; a `command` with `{OUTPUT_FILE}` works; `--sandbox
/// strict` refuses it like any command.
#[test]
fn a_discovered_provider_runs_its_script_with_bun_as_agentv_does() {
    let project = Project::with_mock("unused");
    project.write(".agentv/providers/my-llm.ts", "console.log('hi')\n");
    let bin = project.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = project.path().join("bun-args");
    std::fs::write(
        bin.join("bun"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nlast=''; for a in \"$@\"; do last=$a; done\ncase \"$last\" in /*) echo 'hi from the script' > \"$last\";; esac\necho 'hi from stdout'\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(bin.join("bun"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: my-llm, max_retries: 0}\n",
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: Say hi\n    assertions: [{type: contains, value: hi}]\n",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |args: &[&str]| -> crate::support::Run {
        crate::support::evalhost()
            .current_dir(project.path())
            .env("PATH", &path)
            .args(args)
            .output()
            .unwrap()
            .into()
    };
    let r = run(&["run", "EVAL.yaml", "-o", "out"]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let args = std::fs::read_to_string(&log).unwrap();
    let script = project.path().join(".agentv/providers/my-llm.ts");
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        ["run", &script.display().to_string(), "Say hi"]
    );
    let error = project.row("t1")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("Failed to read output file"), "{error}");
    // With {OUTPUT_FILE} in its own command, the answer is read.
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: my-llm, command: 'bun run .agentv/providers/my-llm.ts {PROMPT} {OUTPUT_FILE}'}\n",
    )
    .unwrap();
    let r = run(&["run", "EVAL.yaml", "-o", "out"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(project.row("t1")["output"], "hi from the script\n");
    let r = run(&["run", "EVAL.yaml", "-o", "out", "--sandbox", "strict"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("refuses the command target `default`"),
        "{}",
        r.stderr
    );
    // A kind with no script and no command is not run, and says where a
    // script would be.
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: your-llm}\n",
    )
    .unwrap();
    let r = run(&["run", "EVAL.yaml", "-o", "out"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(".agentv/providers/<kind>.ts"),
        "{}",
        r.stderr
    );
}

/// `examples/coding-agent`: offline, the recording of Claude Code solving
/// both tasks passes every grader (the repository's tests in the case
/// workspace, the trajectory, the tool budget); the same transcript
/// without the recorded edit fails the tests, so the graders can fail.
#[test]
fn the_coding_agent_example_replays_offline_and_its_graders_can_fail() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("run");
    let root = crate::support::root();
    let r = crate::support::run_in(
        &root,
        &[
            "run",
            "examples/coding-agent/EVAL.yaml",
            "-o",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let rows: Vec<Value> = std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(row["status"], "passed", "{row}");
        for name in ["read-edit-test", "stays-focused"] {
            assert_eq!(crate::support::score(row, name)["score"], 1.0, "{row}");
        }
        assert!(row["cost_usd"].as_f64().is_some_and(|c| c > 0.0));
    }
    let control = out.path().join("control");
    let r = crate::support::run_in(
        &root,
        &[
            "run",
            "examples/coding-agent/EVAL.yaml",
            "--target",
            "recording",
            "-o",
            control.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    for line in std::fs::read_to_string(control.join("results.jsonl"))
        .unwrap()
        .lines()
    {
        let row: Value = serde_json::from_str(line).unwrap();
        assert_eq!(row["status"], "failed", "{row}");
    }
}

#[test]
fn pi_cli_runs_as_agentv_runs_it_with_the_key_in_its_providers_variable() {
    let project = Project::with_mock("unused");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: pi-cli, subprovider: anthropic, model: claude-sonnet-4-5, api_key: '${{ EVALHOST_TEST_KEY }}', tools: 'read,bash', thinking: low, args: [--verbose-off]}\n",
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "input: [{role: system, content: Be careful.}]\ntests:\n  - id: t1\n    input: Check the tests\n    assertions:\n      - {type: contains, value: 'All 4 tests pass'}\n",
    );
    let log = fake_agent(&project, "pi", "pi-basic.jsonl");
    let path = format!(
        "{}:{}",
        project.path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("PATH", path)
        .env("EVALHOST_TEST_KEY", "sk-pi")
        .env("OPENAI_API_KEY", "sk-other")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let args = std::fs::read_to_string(log.join("args")).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-5",
            "--mode",
            "json",
            "--print",
            "--no-session",
            "--tools",
            "read,bash",
            "--thinking",
            "low",
            "--verbose-off",
            // The question, its role markers escaped as AgentV escapes them.
            "[[System]]:",
            "Be careful.",
            "",
            "[[User]]:",
            "Check the tests"
        ]
    );
    // The key is in the provider's variable, never on the command line;
    // another provider's variables are removed.
    let env = std::fs::read_to_string(log.join("env")).unwrap();
    assert!(env.contains("ANTHROPIC_API_KEY=sk-pi"), "{env}");
    assert!(!env.contains("OPENAI_API_KEY"), "{env}");
    assert!(!args.contains("sk-pi"));
    // No workspace and no `cwd`: a fresh directory of its own, as in AgentV.
    let cwd = std::fs::read_to_string(log.join("cwd")).unwrap();
    assert!(cwd.contains("agentv-pi-"), "{cwd}");
    let row = project.row("t1");
    assert_eq!(row["output"], "All 4 tests pass; nothing to fix.");
    assert_eq!(row["token_usage"]["input"], 2700);
    assert_eq!(row["token_usage"]["cached"], 900);
    let tools: Vec<&str> = row["output_messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .filter_map(|c| c["tool"].as_str())
        .collect();
    assert_eq!(tools, ["bash", "read"]);
}

/// A fake Copilot CLI speaking the Agent Client Protocol on stdio: it
/// records its arguments and every message it receives, asks for a
/// permission, streams a tool call and the answer, then answers the prompt.
const FAKE_COPILOT: &str = r#"#!/usr/bin/env python3
import json, os, sys
log = os.environ["FAKE_COPILOT_LOG"]
open(os.path.join(log, "args"), "w").write("\n".join(sys.argv[1:]))
received = open(os.path.join(log, "received"), "w")
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
def update(sid, u):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": u}})
for line in sys.stdin:
    msg = json.loads(line)
    received.write(line); received.flush()
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
    elif msg.get("method") == "session/new":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "sess-1"}})
    elif msg.get("method") == "session/prompt":
        sid = msg["params"]["sessionId"]
        send({"jsonrpc": "2.0", "id": 900, "method": "session/request_permission", "params": {"sessionId": sid, "options": [{"optionId": "allow", "kind": "allow_once"}]}})
        reply = json.loads(sys.stdin.readline()); received.write(json.dumps(reply) + "\n"); received.flush()
        send({"jsonrpc": "2.0", "id": 901, "method": "fs/read_text_file", "params": {"sessionId": sid, "path": "/etc/passwd"}})
        reply = json.loads(sys.stdin.readline()); received.write(json.dumps(reply) + "\n"); received.flush()
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "bash", "kind": "execute", "status": "pending", "rawInput": {"command": "ls"}})
        code = "rejected" if os.environ.get("FAKE_COPILOT_REJECT") else None
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "rawOutput": {"code": code} if code else {"stdout": "a.txt"}})
        update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi, I found "}})
        update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a.txt"}})
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "end_turn", "usage": {"inputTokens": 120, "outputTokens": 30, "totalTokens": 150, "cachedReadTokens": 40}}})
"#;

#[test]
fn copilot_speaks_the_agent_client_protocol_as_agentv_does() {
    let project = Project::with_mock("unused");
    let bin = project.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("copilot"), FAKE_COPILOT).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(bin.join("copilot"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = project.path().join("copilot-log");
    std::fs::create_dir_all(&log).unwrap();
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: copilot, model: gpt-5, system_prompt: Be brief., max_retries: 0}\n",
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: List the files\n    assertions: [{type: contains, value: a.txt}]\n",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |reject: bool| -> crate::support::Run {
        let mut cmd = crate::support::evalhost();
        cmd.current_dir(project.path())
            .env("PATH", &path)
            .env("FAKE_COPILOT_LOG", &log)
            .env("HOME", project.path().join("home"))
            .args(["run", "EVAL.yaml", "-o", "out"]);
        if reject {
            cmd.env("FAKE_COPILOT_REJECT", "1");
        }
        cmd.output().unwrap().into()
    };
    // A file Copilot wrote into its session state (`sess-1`).
    project.write(
        "home/.copilot/session-state/sess-1/files/notes.txt",
        "a.txt\n",
    );
    let r = run(false);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        std::fs::read_to_string(log.join("args"))
            .unwrap()
            .lines()
            .collect::<Vec<_>>(),
        [
            "--acp",
            "--stdio",
            "--allow-all-tools",
            "--yolo",
            "--model",
            "gpt-5"
        ]
    );
    let received: Vec<Value> = std::fs::read_to_string(log.join("received"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(received[0]["method"], "initialize");
    assert_eq!(received[0]["params"]["protocolVersion"], 1);
    assert_eq!(received[1]["method"], "session/new");
    assert_eq!(
        received[1]["params"]["cwd"],
        project.path().display().to_string()
    );
    assert_eq!(received[2]["method"], "session/prompt");
    assert_eq!(
        received[2]["params"]["prompt"],
        json!([{"type": "text", "text": "Be brief."}, {"type": "text", "text": "[[ ## user_query ## ]]\n\nList the files"}])
    );
    // The permission is granted; a request not offered is refused.
    assert_eq!(
        received[3]["result"]["outcome"],
        json!({"outcome": "selected", "optionId": "allow"})
    );
    assert_eq!(received[4]["error"]["code"], -32601);
    let row = project.row("t1");
    assert_eq!(row["output"], "hi, I found a.txt");
    assert!(
        row["file_changes"].as_str().is_some_and(|d| d
            .starts_with("diff --git a/notes.txt b/notes.txt")
            && d.ends_with("+a.txt")),
        "{}",
        row["file_changes"]
    );
    let kept = std::fs::read_to_string(
        project
            .path()
            .join("out")
            .join(row["transcript"].as_str().unwrap()),
    )
    .unwrap();
    assert!(
        kept.starts_with("> {") && kept.contains("\"method\":\"initialize\""),
        "{kept}"
    );
    assert!(
        kept.contains("< {") && kept.contains("agent_message_chunk"),
        "{kept}"
    );
    assert_eq!(row["finish_reason"], "end_turn");
    assert_eq!(row["token_usage"]["input"], 120);
    assert_eq!(row["token_usage"]["cached"], 40);
    assert_eq!(row["output_messages"][0]["tool_calls"][0]["tool"], "bash");
    assert_eq!(
        row["output_messages"][0]["tool_calls"][0]["input"],
        json!({"command": "ls"})
    );
    // A tool call the CLI rejected fails the run, with AgentV's advice.
    let r = run(true);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let error = project.row("t1")["error"].as_str().unwrap().to_owned();
    assert!(
        error.contains("Copilot rejected 1 tool call(s): bash"),
        "{error}"
    );
}

/// AgentV's `cc-mirror`: Claude Code installed under a variant, found
/// through `~/.cc-mirror/<variant>/variant.json`, run as `claude` is.
#[test]
fn cc_mirror_runs_the_variants_claude_binary() {
    let project = Project::with_mock("unused");
    let log = fake_agent(&project, "zai-claude", "claude-basic.jsonl");
    let home = project.path().join("home");
    std::fs::create_dir_all(home.join(".cc-mirror/zai")).unwrap();
    std::fs::write(
        home.join(".cc-mirror/zai/variant.json"),
        json!({"binaryPath": project.path().join("bin/zai-claude")}).to_string(),
    )
    .unwrap();
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: cc-mirror, variant: zai, model: glm}\n  - {name: other, provider: cc-mirror}\n",
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: Run the tests\n    assertions:\n      - {type: contains, value: '12 tests pass'}\n",
    );
    let run = |args: &[&str]| -> crate::support::Run {
        crate::support::evalhost()
            .current_dir(project.path())
            .env("HOME", &home)
            .args(args)
            .output()
            .unwrap()
            .into()
    };
    let r = run(&["run", "EVAL.yaml", "-o", "out"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let args = std::fs::read_to_string(log.join("args")).unwrap();
    assert!(
        args.starts_with("-p\n--output-format\nstream-json"),
        "{args}"
    );
    assert!(args.contains("--model\nglm"), "{args}");
    // A variant that is not installed stops only the runs that select it.
    let r = run(&["run", "EVAL.yaml", "-o", "out", "--target", "other"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("cc-mirror variant \"other\""),
        "{}",
        r.stderr
    );
}

/// AgentV's `copilot-log`: a Copilot CLI session on disk is the output —
/// named by id, or the latest one started in a directory.
#[test]
fn copilot_log_reads_a_recorded_session() {
    let project = Project::with_mock("unused");
    let state = project.path().join("state");
    let trace = crate::support::root().join("tests/data/traces/copilot-session.jsonl");
    for id in ["0b9e1c2d", "older"] {
        std::fs::create_dir_all(state.join(id)).unwrap();
    }
    std::fs::write(
        state.join("older/events.jsonl"),
        "{\"type\":\"session.start\",\"data\":{\"context\":{\"cwd\":\"/elsewhere\"}}}\n{\"type\":\"assistant.message\",\"data\":{\"content\":\"wrong session\"}}\n",
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::copy(&trace, state.join("0b9e1c2d/events.jsonl")).unwrap();
    // Files Copilot wrote into its session state: text ones are the row's
    // file changes, binary ones and `node_modules` are not.
    let files = state.join("0b9e1c2d/files");
    std::fs::create_dir_all(files.join("out")).unwrap();
    std::fs::create_dir_all(files.join("node_modules")).unwrap();
    std::fs::write(files.join("out/report.csv"), "region,sold\nsouth,32\n").unwrap();
    std::fs::write(files.join("blob.bin"), b"a\0b").unwrap();
    std::fs::write(files.join("node_modules/x.js"), "x").unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: unused\n    assertions:\n      - {type: contains, value: '42 in all'}\n",
    );
    for target in [
        "{name: default, provider: copilot-log, session_state_dir: ../state, session_id: 0b9e1c2d}",
        "{name: default, provider: copilot-log, session_state_dir: ../state, discover: latest, cwd: /work/app}",
    ] {
        std::fs::write(
            project.path().join(".evalhost/targets.yaml"),
            format!("targets:\n  - {target}\n"),
        )
        .unwrap();
        let r = project.run(&[]);
        assert_eq!(r.code, 0, "{target}: {}{}", r.stdout, r.stderr);
        let row = project.row("t1");
        assert_eq!(row["output"], "South sold 32, north 10: 42 in all.");
        assert_eq!(row["token_usage"]["input"], 6000);
        assert_eq!(row["duration_ms"], 12500);
        let tools: Vec<&str> = row["output_messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
            .filter_map(|c| c["tool"].as_str())
            .collect();
        assert_eq!(tools, ["view", "view", "Skill"]);
        assert_eq!(
            row["file_changes"],
            "diff --git a/out/report.csv b/out/report.csv\nnew file mode 100644\n--- /dev/null\n+++ b/out/report.csv\n@@ -0,0 +1,2 @@\n+region,sold\n+south,32"
        );
    }
    // No session: said, with where it looked.
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: copilot-log, session_state_dir: ../state, discover: latest, cwd: /nowhere}\n",
    )
    .unwrap();
    let r = project.run(&[]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(
        project.row("t1")["error"]
            .as_str()
            .unwrap()
            .contains("No Copilot CLI sessions found for cwd=/nowhere")
    );
}

#[test]
fn the_agentv_provider_calls_its_models_api_with_keys_from_the_environment() {
    // `azure:` reads its address, deployment map and key from pi-ai's
    // variables; temperature is AgentV's default 0.
    let server = FakeServer::start(vec![responses_stream("hi from agentv")]);
    let project =
        with_targets("targets:\n  - {name: default, provider: agentv, model: 'azure:gpt-4.1'}\n");
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("AZURE_OPENAI_API_KEY", "sk-azure-env")
        .env("AZURE_OPENAI_BASE_URL", &server.url)
        .env(
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
            "gpt-5=other, gpt-4.1=my-dep",
        )
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(project.row("t1")["output"], "hi from agentv");
    let requests = server.requests();
    assert!(
        requests[0].path.starts_with("/openai/v1/responses"),
        "{}",
        requests[0].path
    );
    assert!(
        requests[0]
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("api-key") && v == "sk-azure-env")
    );
    let body: Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(body["model"], "my-dep");
    assert_eq!(body["temperature"], 0.0);
    // No key: the run stops naming the variable, never sending a request.
    let project = with_targets(
        "targets:\n  - {name: default, provider: agentv, model: 'openai:gpt-5-mini'}\n",
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env_remove("OPENAI_API_KEY")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("OPENAI_API_KEY"), "{}", r.stderr);
    // A model without its provider, or one AgentV does not know, is an
    // error at its line.
    for (model, says) in [
        ("gpt-5-mini", "Expected \"provider:model\""),
        (
            "mistral:large",
            "Supported: openai, anthropic, azure, google",
        ),
    ] {
        let project = with_targets(&format!(
            "targets:\n  - {{name: default, provider: agentv, model: '{model}'}}\n"
        ));
        let r = run(&project);
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(says), "{}", r.stderr);
        assert!(r.stderr.contains("targets.yaml:2"), "{}", r.stderr);
    }
}

#[test]
fn claude_sdk_speaks_the_agent_sdks_protocol_to_claude_code() {
    let project = Project::with_mock("unused");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: claude-sdk, model: sonnet, max_turns: 3, max_budget_usd: 0.5, system_prompt: Be brief.}\n",
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: Run the tests\n    assertions:\n      - {type: contains, value: '12 tests pass'}\n",
    );
    // A Claude Code that answers the SDK: the initialize request gets its
    // response, a permission request of its own gets evalhost's answer
    // logged, the user message is logged, then the recorded stream; it
    // exits when its input closes.
    let bin = project.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = project.path().join("claude-log");
    std::fs::create_dir_all(&log).unwrap();
    let trace = crate::support::root().join("tests/data/traces/claude-basic.jsonl");
    let script = bin.join("claude");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
printf '%s\n' "$@" > '{log}/args'
env > '{log}/env'
pwd > '{log}/cwd'
read -r init
printf '%s\n' "$init" > '{log}/init'
id=$(printf '%s' "$init" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
printf '{{"type":"control_response","response":{{"subtype":"success","request_id":"%s","response":{{}}}}}}\n' "$id"
read -r user
printf '%s\n' "$user" > '{log}/user'
printf '%s\n' '{{"type":"control_request","request_id":"cli-1","request":{{"subtype":"can_use_tool","tool_name":"Bash","input":{{}}}}}}'
read -r reply
printf '%s\n' "$reply" > '{log}/reply'
cat '{trace}'
cat > /dev/null
"#,
            log = log.display(),
            trace = trace.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = run_with_agents(&project);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let args = std::fs::read_to_string(log.join("args")).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--max-turns",
            "3",
            "--max-budget-usd",
            "0.5",
            "--model",
            "sonnet",
            "--permission-mode",
            "bypassPermissions",
            "--allow-dangerously-skip-permissions"
        ]
    );
    let init: Value =
        serde_json::from_str(&std::fs::read_to_string(log.join("init")).unwrap()).unwrap();
    assert_eq!(init["type"], "control_request");
    assert_eq!(
        init["request"],
        json!({"subtype": "initialize", "systemPrompt": ["Be brief."]})
    );
    let user: Value =
        serde_json::from_str(&std::fs::read_to_string(log.join("user")).unwrap()).unwrap();
    assert_eq!(
        user,
        json!({"type": "user", "session_id": "", "message": {"role": "user", "content": [{"type": "text", "text": "[[ ## user_query ## ]]\n\nRun the tests"}]}, "parent_tool_use_id": null})
    );
    let reply: Value =
        serde_json::from_str(&std::fs::read_to_string(log.join("reply")).unwrap()).unwrap();
    assert_eq!(reply["response"]["subtype"], "error");
    assert_eq!(reply["response"]["request_id"], "cli-1");
    let env = std::fs::read_to_string(log.join("env")).unwrap();
    assert!(!env.contains("CLAUDECODE="), "{env}");
    assert!(env.contains("CLAUDE_CODE_ENTRYPOINT=sdk-ts"), "{env}");
    let row = project.row("t1");
    assert_eq!(
        row["output"],
        "The server listens on port 8080 and all 12 tests pass."
    );
    assert_eq!(row["cost_usd"], 0.0237135);
    // A Claude Code that dies before its result fails the row with its
    // exit code and what it said.
    std::fs::write(
        &script,
        "#!/bin/sh\nread -r init\necho 'Invalid API key' >&2\nexit 1\n",
    )
    .unwrap();
    let r = run_with_agents(&project);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let error = project.row("t1")["error"].as_str().unwrap().to_owned();
    assert!(
        error.contains("exited with code 1") && error.contains("Invalid API key"),
        "{error}"
    );
}

/// `messages` framed as vscode-jsonrpc frames them.
fn frames(messages: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in messages {
        let body = m.to_string();
        out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        out.extend_from_slice(body.as_bytes());
    }
    out
}

/// The JSON bodies of a framed stream.
fn unframe(bytes: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = Vec::new();
    let mut rest: &str = &text;
    while let Some(i) = rest.find("\r\n\r\n") {
        let header = &rest[..i];
        let n: usize = header
            .trim()
            .trim_start_matches("Content-Length:")
            .trim()
            .parse()
            .unwrap();
        out.push(serde_json::from_str(&rest[i + 4..i + 4 + n]).unwrap());
        rest = &rest[i + 4 + n..];
    }
    out
}

#[test]
fn copilot_sdk_speaks_the_sdks_json_rpc_to_the_cli_server() {
    let project = Project::with_mock("unused");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: copilot-sdk, timeout_seconds: 60, model: gpt-5, system_prompt: Be brief., args: ['--plugin-dir', './p'], github_token: '${{ EVALHOST_GH }}', base_url: my-resource, subprovider: azure, api_key: '${{ EVALHOST_TEST_KEY }}', api_version: '2025-01-01'}\n",
    )
    .unwrap();
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input: Fix the bug\n    assertions:\n      - {type: contains, value: fixed}\n",
    );
    std::fs::create_dir_all(project.path().join(".claude/skills")).unwrap();
    // The server's side, recorded: answers by id, a permission request of
    // its own, and the session's events.
    let event = |e: Value| json!({"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": "s1", "event": e}});
    let server = frames(&[
        json!({"jsonrpc": "2.0", "id": 1, "result": {"message": "pong", "protocolVersion": 3}}),
        json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s1", "workspacePath": project.path().join("session-state").display().to_string()}}),
        json!({"jsonrpc": "2.0", "id": 3, "result": {"messageId": "m1"}}),
        json!({"jsonrpc": "2.0", "id": 70, "method": "permission.request", "params": {"sessionId": "s1", "permissionRequest": {"kind": "shell"}}}),
        event(
            json!({"type": "tool.execution_start", "data": {"toolCallId": "c1", "toolName": "bash", "arguments": {"command": "cargo test"}}}),
        ),
        event(
            json!({"type": "tool.execution_complete", "data": {"toolCallId": "c1", "result": {"content": "ok"}}}),
        ),
        event(
            json!({"type": "assistant.usage", "data": {"inputTokens": 100, "outputTokens": 20, "costUsd": 0.01}}),
        ),
        event(json!({"type": "assistant.usage", "data": {"inputTokens": 50, "outputTokens": 5}})),
        event(json!({"type": "assistant.message", "data": {"content": "It is fixed."}})),
        event(json!({"type": "session.idle", "data": {}})),
        json!({"jsonrpc": "2.0", "id": 4, "result": {}}),
    ]);
    std::fs::create_dir_all(project.path().join("session-state/files")).unwrap();
    project.write("session-state/files/plan.md", "# Plan\n");
    let bin = project.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = project.path().join("copilot-log");
    std::fs::create_dir_all(&log).unwrap();
    std::fs::write(log.join("server"), &server).unwrap();
    let script = bin.join("copilot");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{log}/args'\nenv > '{log}/env'\npwd > '{log}/cwd'\nexec 3<&0\ncat <&3 > '{log}/stdin' &\ncat '{log}/server'\nwait\n",
            log = log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("PATH", &path)
        .env("EVALHOST_GH", "gho_secret")
        .env("EVALHOST_TEST_KEY", "sk-loopback")
        .env("NODE_DEBUG", "x")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        std::fs::read_to_string(log.join("args"))
            .unwrap()
            .lines()
            .collect::<Vec<_>>(),
        [
            "--plugin-dir",
            "./p",
            "--headless",
            "--no-auto-update",
            "--log-level",
            "debug",
            "--stdio",
            "--auth-token-env",
            "COPILOT_SDK_AUTH_TOKEN",
            "--no-auto-login"
        ]
    );
    let env = std::fs::read_to_string(log.join("env")).unwrap();
    assert!(env.contains("COPILOT_SDK_AUTH_TOKEN=gho_secret"), "{env}");
    assert!(!env.contains("NODE_DEBUG="), "{env}");
    let sent = unframe(&std::fs::read(log.join("stdin")).unwrap());
    let methods: Vec<&str> = sent.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        ["ping", "session.create", "session.send", "session.destroy"]
    );
    let create = &sent[1]["params"];
    let cwd = project.path().canonicalize().unwrap();
    assert_eq!(create["model"], "gpt-5");
    assert_eq!(
        create["systemMessage"],
        json!({"mode": "append", "content": "Be brief."})
    );
    assert_eq!(create["requestPermission"], true);
    assert_eq!(
        create["provider"],
        json!({"type": "azure", "baseUrl": "https://my-resource.openai.azure.com", "apiKey": "sk-loopback", "azure": {"apiVersion": "2025-01-01"}})
    );
    assert_eq!(
        create["skillDirectories"],
        json!([cwd.join(".claude/skills").display().to_string()])
    );
    assert_eq!(
        sent[2]["params"],
        json!({"sessionId": "s1", "prompt": "[[ ## user_query ## ]]\n\nFix the bug"})
    );
    // The permission request was approved, as AgentV approves it.
    let reply = sent.iter().find(|m| m["id"] == 70).unwrap();
    assert_eq!(reply["result"], json!({"result": {"kind": "approved"}}));
    let row = project.row("t1");
    assert_eq!(row["output"], "It is fixed.");
    assert_eq!(
        row["file_changes"],
        "diff --git a/plan.md b/plan.md\nnew file mode 100644\n--- /dev/null\n+++ b/plan.md\n@@ -0,0 +1,1 @@\n+# Plan"
    );
    assert_eq!(row["token_usage"]["input"], 150);
    assert_eq!(row["token_usage"]["output"], 25);
    assert_eq!(row["cost_usd"], 0.01);
    let calls = &row["output_messages"][0]["tool_calls"];
    assert_eq!(calls[0]["tool"], "bash");
    assert_eq!(calls[0]["input"], json!({"command": "cargo test"}));
    // The token never reaches the results.
    let results = std::fs::read_to_string(project.path().join("out/results.jsonl")).unwrap();
    assert!(!results.contains("gho_secret"));
    // A server on an old protocol is refused with the SDK's words; a
    // session error fails the row with its message.
    std::fs::write(
        log.join("server"),
        frames(&[json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}})]),
    )
    .unwrap();
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("PATH", &path)
        .env("EVALHOST_GH", "gho_secret")
        .env("EVALHOST_TEST_KEY", "sk-loopback")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_ne!(r.code, 0);
    let error = project.row("t1")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("server reports version 1"), "{error}");
    std::fs::write(
        log.join("server"),
        frames(&[
            json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 2}}),
            json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s1"}}),
            json!({"jsonrpc": "2.0", "id": 3, "result": {"messageId": "m1"}}),
            event(json!({"type": "session.error", "data": {"message": "model gpt-5 is not available"}})),
            json!({"jsonrpc": "2.0", "id": 4, "result": {}}),
        ]),
    )
    .unwrap();
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("PATH", &path)
        .env("EVALHOST_GH", "gho_secret")
        .env("EVALHOST_TEST_KEY", "sk-loopback")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let error = project.row("t1")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("model gpt-5 is not available"), "{error}");
}

#[test]
fn pi_coding_agent_runs_pi_with_the_sdks_settings() {
    let project = Project::with_mock("unused");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: pi-coding-agent, api_key: '${{ EVALHOST_TEST_KEY }}', system_prompt: Be careful.}\n",
    )
    .unwrap();
    project.write("notes.md", "some notes\n");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input:\n      - role: user\n        content:\n          - {type: file, value: notes.md}\n          - {type: text, value: Check the tests}\n    assertions:\n      - {type: contains, value: 'All 4 tests pass'}\n",
    );
    let log = fake_agent(&project, "pi", "pi-basic.jsonl");
    let path = format!(
        "{}:{}",
        project.path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("PATH", path)
        .env("EVALHOST_TEST_KEY", "sk-pi")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let args = std::fs::read_to_string(log.join("args")).unwrap();
    // AgentV's question (the file named where it stands), the system
    // prompt before it and the files after it as `@path` lines: one message.
    let notes = project.path().join("notes.md");
    let expected = format!(
        "--provider\ngoogle\n--model\ngemini-2.5-flash\n--mode\njson\n--print\n--no-session\nBe careful.\n\n<file: path=\"{0}\">\n\nCheck the tests\n\nFiles:\n@{0}\n",
        notes.display()
    );
    assert_eq!(args, expected);
    // The SDK's provider (google) has the key; the working directory is
    // evalhost's own, as the SDK's is AgentV's.
    let env = std::fs::read_to_string(log.join("env")).unwrap();
    assert!(env.contains("GEMINI_API_KEY=sk-pi"), "{env}");
    let cwd = std::fs::read_to_string(log.join("cwd")).unwrap();
    assert_eq!(
        std::path::Path::new(cwd.trim()).canonicalize().unwrap(),
        project.path().canonicalize().unwrap()
    );
    assert_eq!(
        project.row("t1")["output"],
        "All 4 tests pass; nothing to fix."
    );
}

/// A fake `code`: logs each call, opens nothing; a wake-up chat touches
/// `.alive`, a request chat answers by writing the response file its
/// request names.
const FAKE_CODE: &str = r#"#!/usr/bin/env python3
import json, os, re, sys
args = sys.argv[1:]
log = os.environ["FAKE_CODE_LOG"]
with open(os.path.join(log, "calls"), "a") as f:
    f.write(json.dumps(args) + "\n")
if args == ["--status"]:
    print(os.environ.get("FAKE_CODE_STATUS", "Version: Code 1.99"))
    sys.exit(0)
if args[:4] == ["-r", "chat", "-m", "wakeup"]:
    name = args[4].split()[-2]
    open(os.path.join(os.environ["FAKE_CODE_ROOT"], name, ".alive"), "w").close()
elif args[:3] == ["-r", "chat", "-m"]:
    req = args[args.index("-a", len(args) - 3) + 1]
    text = open(req).read()
    final = re.search(r"-Destination '([^']+)'", text).group(1)
    with open(final, "w") as f:
        f.write("The answer is 42.")
"#;

#[test]
fn vscode_dispatches_to_a_subagent_workspace_and_reads_its_answer() {
    let project = Project::with_mock("unused");
    let root = project.path().join("subagents");
    std::fs::write(
        project.path().join(".evalhost/targets.yaml"),
        "targets:\n  - {name: default, provider: vscode, subagent_root: ../subagents, timeout_seconds: 30}\n",
    )
    .unwrap();
    project.write("notes.md", "notes\n");
    project.write(
        "EVAL.yaml",
        "tests:\n  - id: t1\n    input:\n      - {role: system, content: Be exact.}\n      - role: user\n        content:\n          - {type: file, value: notes.md}\n          - {type: text, value: What is the answer?}\n    assertions:\n      - {type: contains, value: '42'}\n",
    );
    let bin = project.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = project.path().join("code-log");
    std::fs::create_dir_all(&log).unwrap();
    let script = bin.join("code");
    std::fs::write(&script, FAKE_CODE).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |status: &str| -> crate::support::Run {
        crate::support::evalhost()
            .current_dir(project.path())
            .env("PATH", &path)
            .env("FAKE_CODE_LOG", &log)
            .env("FAKE_CODE_ROOT", &root)
            .env("FAKE_CODE_STATUS", status)
            .args(["run", "EVAL.yaml", "-o", "out"])
            .output()
            .unwrap()
            .into()
    };
    let r = run("Version: Code 1.99");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(project.row("t1")["output"], "The answer is 42.");
    // A subagent was provisioned, used and unlocked.
    let sub = root.join("subagent-1");
    assert!(sub.join(".github/agents/wakeup.md").is_file());
    assert!(!sub.join("subagent.lock").exists());
    let workspace: Value = serde_json::from_str(
        &std::fs::read_to_string(sub.join("subagent-1.code-workspace")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        workspace,
        json!({"folders": [{"path": "."}, {"path": sub.display().to_string()}]})
    );
    let calls: Vec<Vec<String>> = std::fs::read_to_string(log.join("calls"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let workspace_file = sub.join("subagent-1.code-workspace").display().to_string();
    assert_eq!(calls[0], ["--status"]);
    // The workspace opened and the wake-up sent: two processes let go of
    // 100 ms apart (as AgentV does), so on a loaded machine either may log
    // first.
    let wakeup: Vec<String> = [
        "-r",
        "chat",
        "-m",
        "wakeup",
        "create a file named .alive in the subagent-1 folder",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut started = vec![calls[1].clone(), calls[2].clone()];
    started.sort();
    let mut expected = vec![vec![workspace_file], wakeup];
    expected.sort();
    assert_eq!(started, expected);
    let chat = &calls[3];
    assert_eq!(&chat[..3], ["-r", "chat", "-m"]);
    let notes = project.path().join("notes.md").display().to_string();
    assert_eq!(&chat[4..6], ["-a", notes.as_str()]);
    assert_eq!(chat[6], "-a");
    let req = std::path::PathBuf::from(&chat[7]);
    let req_name = req.file_name().unwrap().to_string_lossy().into_owned();
    assert!(req_name.ends_with("_req.md"), "{req_name}");
    assert_eq!(
        chat[8],
        format!(
            "Follow instructions in [{req_name}](file://{})",
            req.display()
        )
    );
    let request = std::fs::read_to_string(&req).unwrap();
    assert!(
        request.starts_with(&format!(
            "[[ ## task ## ]]\n\nBe exact.\n\n\nRead all attachment files:\n* [notes.md](file://{notes}).\nIf any file is missing, fail with ERROR: missing-file <filename> and stop.\nThen apply system_instructions on the user query below.\n\n[[ ## user_query ## ]]\n"
        )),
        "{request}"
    );
    assert!(request.contains("Move-Item -LiteralPath '"), "{request}");
    // A window that already has the workspace is focused, not woken.
    let _ = std::fs::remove_file(log.join("calls"));
    let r = run("|  Window (subagent-1 (Workspace))");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let calls = std::fs::read_to_string(log.join("calls")).unwrap();
    assert!(!calls.contains("wakeup"), "{calls}");
    // No `code` on PATH: said, naming the setting to fix.
    let r: crate::support::Run = crate::support::evalhost()
        .current_dir(project.path())
        .env("PATH", "/nonexistent")
        .args(["run", "EVAL.yaml", "-o", "out"])
        .output()
        .unwrap()
        .into();
    assert_ne!(r.code, 0);
    let error = project.row("t1")["error"].as_str().unwrap().to_owned();
    assert!(error.contains("'code' was not found on PATH"), "{error}");
}
