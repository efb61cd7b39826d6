//! Built-in `code-grader`: AgentV 4.42's code-grader contract. The plugin
//! builds the JSON payload a grader command reads on stdin and scores what
//! the command prints; the command itself is started by the host through the
//! `exec` capability (refused under `--sandbox strict`), never by the
//! plugin. Built only on the public plugin SDK.

use evalhost_plugin_sdk::{
    AssertionType, Capability, Check, Command, Config, ExecError, Grade, GradeError, Grader,
    Message, Plugin, Request, Value, export_grader, json, run_command, write_temp_file,
};

/// The code-grader plugin.
pub struct CodeGrader;

/// AgentV's cut-over: an output whose JSON encoding is longer goes through a
/// file (`output_path`) instead of the payload.
pub const MAX_INLINE_OUTPUT: usize = 50_000;

/// Default deadline of a grader command.
pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;

/// Keys the plugin reads itself; every other key joins `config`.
const OWN_KEYS: &[&str] = &[
    "command",
    "cwd",
    "config",
    "timeout_ms",
    "script",
    "target",
    "aggregate_results",
    "protocol",
];

fn command(config: &Config) -> Result<Command, String> {
    let mut command = match config.get("command") {
        Some(Value::String(s)) if !s.trim().is_empty() => Command {
            shell: Some(s.clone()),
            ..Command::default()
        },
        Some(Value::String(_)) => return Err("`command` is empty".into()),
        Some(Value::Array(items)) if !items.is_empty() => {
            let mut argv = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) if !s.is_empty() => argv.push(s.clone()),
                    _ => return Err(format!("`command[{i}]` must be a non-empty string")),
                }
            }
            Command {
                argv,
                ..Command::default()
            }
        }
        Some(Value::Array(_)) => return Err("`command` is an empty list".into()),
        Some(_) => {
            return Err("`command` must be a list of arguments or a shell command line".into());
        }
        None => {
            return Err("missing `command` (a list of arguments, or a shell command line)".into());
        }
    };
    command.cwd = config.optional_str("cwd")?.map(str::to_owned);
    let timeout = config
        .optional_u64("timeout_ms")?
        .unwrap_or(DEFAULT_TIMEOUT_MS);
    command.timeout_ms = Some(u32::try_from(timeout).unwrap_or(u32::MAX));
    Ok(command)
}

/// `camelCase` keys (first letter lower-case) → `snake_case`, recursively,
/// as AgentV does to the whole payload.
pub fn snake_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let key = if k.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                        let mut out = String::with_capacity(k.len() + 4);
                        for c in k.chars() {
                            if c.is_ascii_uppercase() {
                                out.push('_');
                                out.push(c.to_ascii_lowercase());
                            } else {
                                out.push(c);
                            }
                        }
                        out
                    } else {
                        k
                    };
                    (key, snake_keys(v))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(snake_keys).collect()),
        other => other,
    }
}

fn message_json(m: &Message) -> Value {
    let mut o = json!({"role": m.role, "content": m.content_json.clone().unwrap_or(Value::String(m.content.clone()))});
    if !m.tool_calls.is_empty() {
        o["tool_calls"] = Value::Array(
            m.tool_calls
                .iter()
                .map(|c| json!({"id": c.id, "tool": c.tool, "input": c.input, "output": c.output, "status": c.status, "duration_ms": c.duration_ms}))
                .collect(),
        );
    }
    if let Some(name) = &m.name {
        o["name"] = Value::String(name.clone());
    }
    o
}

/// The stdin payload (AgentV §4.2). `output_path` is filled in when the
/// output is too long to inline.
pub fn payload(request: &Request, output_path: Option<&str>) -> Value {
    let config = &request.config;
    let mut merged = serde_json::Map::new();
    for (k, v) in config.as_map() {
        if !OWN_KEYS.contains(&k.as_str()) {
            merged.insert(k.clone(), v.clone());
        }
    }
    if let Some(Value::Object(explicit)) = config.get("config") {
        for (k, v) in explicit {
            merged.insert(k.clone(), v.clone());
        }
    }
    let input_files: Vec<Value> = request
        .input
        .iter()
        .filter_map(|m| m.content_json.as_ref()?.as_array().cloned())
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("file"))
        .filter_map(|b| b.get("resolved_path").cloned())
        .collect();
    let tool_calls: usize = request
        .output_messages
        .iter()
        .map(|m| m.tool_calls.len())
        .sum();
    let errors = request
        .output_messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .filter(|c| c.status.as_deref() == Some("error"))
        .count();
    let llm_calls = request.trace.llm_calls.unwrap_or(0);
    let token_usage = request
        .trace
        .token_usage
        .map(|t| json!({"input": t.input, "output": t.output, "cached": t.cached}));
    let transcript: Vec<Value> = request
        .input
        .iter()
        .chain(&request.output_messages)
        .map(message_json)
        .collect();
    let summary = json!({"event_count": transcript.len(), "tool_calls": tool_calls, "error_count": errors, "llm_call_count": llm_calls});
    let mut trace = json!({
        "event_count": transcript.len(),
        "tool_calls": tool_calls,
        "error_count": errors,
        "llm_call_count": llm_calls,
        "messages": request.output_messages.iter().map(message_json).collect::<Vec<_>>(),
        "metadata": {"eval_case_id": request.test_id},
    });
    if let Some(t) = &token_usage {
        trace["token_usage"] = t.clone();
    }
    let output = match output_path {
        Some(_) => Value::Null,
        None => Value::String(request.output.clone()),
    };
    let mut doc = json!({
        "criteria": request.criteria.clone().unwrap_or_default(),
        "expected_output": request.expected_messages.iter().map(message_json).collect::<Vec<_>>(),
        "output": output,
        "messages": transcript,
        "input_files": input_files,
        "input": request.input.iter().map(message_json).collect::<Vec<_>>(),
        "metadata": if request.metadata.as_object().is_some_and(|m| !m.is_empty()) { request.metadata.clone() } else { Value::Null },
        "trace": trace,
        "trace_summary": summary,
        "token_usage": token_usage,
        "cost_usd": request.trace.cost_usd,
        "duration_ms": request.trace.duration_ms,
        "start_time": Value::Null,
        "end_time": Value::Null,
        "file_changes": request.trace.file_changes,
        "workspace_path": request.workspace_path,
        "config": if merged.is_empty() { Value::Null } else { Value::Object(merged) },
    });
    if let Some(path) = output_path {
        doc["output_path"] = Value::String(path.to_owned());
    }
    snake_keys(doc)
}

/// The first bytes of what a grader printed, for a message.
fn head(text: &str) -> String {
    const MAX: usize = 200;
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// The last bytes of what a grader wrote to stderr.
fn tail(text: &str) -> String {
    let chars: Vec<char> = text.trim().chars().collect();
    chars[chars.len().saturating_sub(2000)..].iter().collect()
}

/// Scores what a grader command printed: AgentV's verdict shapes (§4.3),
/// `{"score": 0.7}` and/or `{"assertions": [{"text", "passed"}]}`, and
/// nothing else. Output that is not a verdict (plain text, nothing, a debug
/// line before the JSON, an object without `score` or `assertions`, a
/// score outside [0, 1]) and a grader that exits non-zero or is killed are
/// errors of the grader, never a pass: AgentV passes the first kinds
/// (exit 0) and scores the last 0.
pub fn score(exit_code: Option<i32>, stdout: &str, stderr: &str) -> Result<Grade, GradeError> {
    let out = stdout.trim();
    let Some(code) = exit_code else {
        return Err(GradeError::Failed(format!(
            "the grader command was killed by a signal{}",
            match tail(stderr) {
                t if t.is_empty() => String::new(),
                t => format!(": {t}"),
            }
        )));
    };
    if code != 0 {
        let said = match (tail(stderr), head(out)) {
            (t, _) if !t.is_empty() => format!(": {t}"),
            (_, h) if !h.is_empty() => format!("; it printed: {h}"),
            _ => String::new(),
        };
        return Err(GradeError::Failed(format!(
            "the grader command exited with code {code}{said}"
        )));
    }
    let not_a_verdict = |why: &str| {
        GradeError::BadOutput(format!(
            "the grader's output is not a verdict ({why}); it printed: {}",
            if out.is_empty() {
                "nothing".to_owned()
            } else {
                head(out)
            }
        ))
    };
    let reply = match serde_json::from_str::<Value>(out) {
        Ok(Value::Object(reply)) => reply,
        Ok(_) => return Err(not_a_verdict("JSON, but not an object")),
        Err(_) if out.is_empty() => return Err(not_a_verdict("no output")),
        Err(_) => return Err(not_a_verdict("not one JSON object")),
    };
    let checks: Vec<Check> = match reply.get("assertions") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|a| {
                let text = a.get("text")?.as_str()?.to_owned();
                let passed = match a.get("passed") {
                    Some(Value::Bool(b)) => *b,
                    Some(Value::Null) | None => false,
                    Some(Value::Number(n)) => n.as_f64() != Some(0.0),
                    Some(Value::String(s)) => !s.is_empty(),
                    Some(_) => true,
                };
                let mut check = Check::new(passed, text);
                if let Some(e) = a.get("evidence").and_then(Value::as_str) {
                    check = check.with_evidence(e);
                }
                Some(check)
            })
            .collect(),
        Some(_) => return Err(not_a_verdict("`assertions` is not a list")),
        None => Vec::new(),
    };
    let score = match reply.get("score") {
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if (0.0..=1.0).contains(&s) => s,
            _ => return Err(not_a_verdict(&format!("`score` {n} is outside [0, 1]"))),
        },
        Some(other) => {
            return Err(not_a_verdict(&format!(
                "`score` is {}, not a number",
                match other {
                    Value::String(_) => "a string",
                    Value::Bool(_) => "a boolean",
                    Value::Null => "null",
                    _ => "not a number",
                }
            )));
        }
        None if checks.is_empty() => {
            return Err(not_a_verdict("no `score` and no `assertions`"));
        }
        None => checks.iter().filter(|c| c.passed).count() as f64 / checks.len() as f64,
    };
    let mut grade = Grade::new(score);
    grade.checks = checks;
    if let Some(Value::Object(details)) = reply.get("details") {
        grade = grade.with_details(Value::Object(details.clone()));
    }
    Ok(grade)
}

impl Grader for CodeGrader {
    fn describe() -> Plugin {
        Plugin::new("evalhost-code-grader", env!("CARGO_PKG_VERSION")).assertion_type(
            AssertionType::new("code-grader", "A command grades the output (AgentV's code-grader contract)")
                .capability(Capability::Exec)
                .schema(json!({
                    "type": "object",
                    "required": ["command"],
                    "properties": {
                        "command": {"anyOf": [
                            {"type": "string", "minLength": 1},
                            {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
                        ]},
                        "cwd": {"type": "string"},
                        "config": {"type": "object"},
                        "timeout_ms": {"type": "integer", "minimum": 1},
                        "target": {"description": "the command may call the judge through a loopback proxy (AGENTV_TARGET_PROXY_URL/TOKEN): true, or {max_calls: n} (default 50)", "anyOf": [{"const": true}, {"type": "object", "properties": {"max_calls": {"type": "integer", "minimum": 0}}}]},
                        "protocol": {"enum": ["agentv4", "agentv5"], "description": "the stdout protocol: AgentV 4's (score/assertions, the default) or AgentV 5's (pass/score/checks), set by the reader of an AgentV 5 suite"},
                        "aggregate_results": {"type": "object", "description": "set by the host for a composite's code-grader aggregator: the members' results, sent on stdin as {\"results\": ...}"},
                    },
                })),
        )
    }

    fn check_config(_assertion_type: &str, config: &Config) -> Result<(), String> {
        match config.get("target") {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Object(o)) => {
                if let Some(key) = o.keys().find(|k| k.as_str() != "max_calls") {
                    return Err(format!(
                        "`target.{key}` is not a key of `target` (its key: max_calls)"
                    ));
                }
                match o.get("max_calls") {
                    None => {}
                    Some(n) if n.as_f64().is_some_and(|n| n >= 0.0 && n.fract() == 0.0) => {}
                    Some(other) => {
                        return Err(format!(
                            "`target.max_calls` must be a whole number ≥ 0, got {other}"
                        ));
                    }
                }
            }
            Some(other) => {
                return Err(format!(
                    "`target` must be true or {{max_calls: n}} (the judge proxy the command may call), got {other}"
                ));
            }
        }
        command(config).map(|_| ())
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        let mut cmd = command(&request.config)?;
        if let Some(results) = request.config.get("aggregate_results") {
            return aggregate(&mut cmd, results);
        }
        let encoded_len = serde_json::to_string(&request.output).map_or(0, |s| s.len());
        let output_path = if encoded_len > MAX_INLINE_OUTPUT {
            let encoded = serde_json::to_vec(&request.output).map_err(|e| e.to_string())?;
            Some(write_temp_file("output.json", &encoded).map_err(|e| e.to_string())?)
        } else {
            None
        };
        let payload = payload(request, output_path.as_deref());
        cmd.stdin = serde_json::to_vec_pretty(&payload).map_err(|e| e.to_string())?;
        let out = match run_command(&cmd) {
            Ok(out) => out,
            // A refused grant is not a grade: the assertion fails with the
            // reason (plugin_error).
            Err(e @ (ExecError::NotGranted(_) | ExecError::Denied(_))) => {
                return Err(e.to_string().into());
            }
            // A command that cannot start, or times out, is a failure of
            // the grader, not a verdict on the output (AgentV scores 0).
            Err(e) => {
                return Err(GradeError::Failed(format!(
                    "the grader command could not run: {e}"
                )));
            }
        };
        if out.timed_out {
            return Err(GradeError::Failed(format!(
                "the grader command timed out after {} ms",
                cmd.timeout_ms.unwrap_or_default()
            )));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if request.config.optional_str("protocol")? == Some("agentv5") {
            return score_v5(out.exit_code, &stdout, &stderr);
        }
        score(out.exit_code, &stdout, &stderr)
    }
}

/// AgentV 5's `script` protocol (`script-grader.ts`): `{pass?, score?,
/// reason?, checks?: [{id?, text, pass, score?, reason?, evidence?}],
/// details?}`. No `score`: the mean of the checks' scores (a check without
/// one scores 1 when it passes), else 1 or 0 by `pass`; no `pass`: the
/// score reaches 0.8. `assertions` is not read: a reply with none of
/// `pass`, `score`, `checks` is an error, as in AgentV 5. What is not a
/// verdict fails as in the AgentV 4 protocol.
pub fn score_v5(exit_code: Option<i32>, stdout: &str, stderr: &str) -> Result<Grade, GradeError> {
    let reply = match score(exit_code, stdout, stderr) {
        Err(e @ GradeError::Failed(_)) => return Err(e),
        _ => match serde_json::from_str::<Value>(stdout.trim()) {
            Ok(Value::Object(reply)) => reply,
            _ => {
                return Err(GradeError::BadOutput(format!(
                    "the script's output is not one JSON object; it printed: {}",
                    head(stdout)
                )));
            }
        },
    };
    let pass = reply.get("pass").and_then(Value::as_bool);
    let checks: Vec<(bool, f64, String, Option<String>)> = match reply.get("checks") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|c| {
                let text = c.get("text").and_then(Value::as_str)?.to_owned();
                let passed = c.get("pass").and_then(Value::as_bool).unwrap_or(false);
                let score = c.get("score").and_then(Value::as_f64).unwrap_or(if passed {
                    1.0
                } else {
                    0.0
                });
                let evidence = c
                    .get("evidence")
                    .or(c.get("reason"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Some((passed, score, text, evidence))
            })
            .collect(),
        Some(_) => return Err(GradeError::BadOutput("`checks` is not a list".into())),
        None => Vec::new(),
    };
    let score = match reply.get("score") {
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if (0.0..=1.0).contains(&s) => s,
            _ => {
                return Err(GradeError::BadOutput(format!(
                    "`score` {n} is outside [0, 1]"
                )));
            }
        },
        Some(_) => return Err(GradeError::BadOutput("`score` is not a number".into())),
        None if !checks.is_empty() => checks.iter().map(|c| c.1).sum::<f64>() / checks.len() as f64,
        None => match pass {
            Some(p) => f64::from(u8::from(p)),
            None => {
                return Err(GradeError::BadOutput(
                    "Script evaluator JSON must include pass, score, or checks[]".into(),
                ));
            }
        },
    };
    let passed = pass.unwrap_or(score >= 0.8);
    let mut grade = Grade::new(score);
    for (p, _, text, evidence) in checks {
        let mut check = Check::new(p, text);
        if let Some(e) = evidence {
            check = check.with_evidence(e);
        }
        grade.checks.push(check);
    }
    if let Some(reason) = reply.get("reason").and_then(Value::as_str) {
        grade.checks.push(Check::new(passed, reason));
    }
    let mut details = match reply.get("details") {
        Some(Value::Object(d)) => Value::Object(d.clone()),
        _ => json!({}),
    };
    details["verdict"] = Value::String(if passed { "pass" } else { "fail" }.into());
    Ok(grade.with_details(details))
}

/// A `composite`'s `code-grader` aggregator (AgentV 4.42): the command
/// reads `{"results": {<member>: <result>}}` on stdin and prints
/// `{"score", "verdict"?, "assertions"?}`. A number `score` is clamped to
/// [0, 1], else 0; `verdict` (`pass`/`fail`), when given, decides the
/// verdict (returned as `details.verdict`). A command that fails, or prints
/// no JSON object, is an error (AgentV: 0, `Code aggregator failed`).
fn aggregate(cmd: &mut Command, results: &Value) -> Result<Grade, GradeError> {
    cmd.stdin =
        serde_json::to_vec_pretty(&json!({ "results": results })).map_err(|e| e.to_string())?;
    let out = match run_command(cmd) {
        Ok(out) => out,
        Err(e @ (ExecError::NotGranted(_) | ExecError::Denied(_))) => {
            return Err(e.to_string().into());
        }
        Err(e) => {
            return Err(GradeError::Failed(format!(
                "Code aggregator failed: the command could not run: {e}"
            )));
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.timed_out {
        return Err(GradeError::Failed(format!(
            "Code aggregator failed: timed out after {} ms",
            cmd.timeout_ms.unwrap_or_default()
        )));
    }
    match out.exit_code {
        Some(0) => {}
        code => {
            let err = tail(&stderr);
            return Err(GradeError::Failed(format!(
                "Code aggregator failed: Code evaluator exited with code {}{}",
                code.map_or("(signal)".to_owned(), |c| c.to_string()),
                if err.is_empty() {
                    String::new()
                } else {
                    format!(": {err}")
                }
            )));
        }
    }
    let Ok(Value::Object(reply)) = serde_json::from_str::<Value>(stdout.trim()) else {
        return Err(GradeError::BadOutput(format!(
            "the aggregator's output is not one JSON object; it printed: {}",
            if stdout.trim().is_empty() {
                "nothing".to_owned()
            } else {
                head(&stdout)
            }
        )));
    };
    let score = reply
        .get("score")
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite())
        .map_or(0.0, |s| s.clamp(0.0, 1.0));
    let mut grade = Grade::new(score);
    if let Some(Value::Array(items)) = reply.get("assertions") {
        grade.checks = items
            .iter()
            .filter_map(|a| {
                let text = a.get("text")?.as_str()?.to_owned();
                let passed = match a.get("passed") {
                    Some(Value::Bool(b)) => *b,
                    Some(Value::Null) | None => false,
                    Some(Value::Number(n)) => n.as_f64() != Some(0.0),
                    Some(Value::String(s)) => !s.is_empty(),
                    Some(_) => true,
                };
                let mut check = Check::new(passed, text);
                if let Some(e) = a.get("evidence").and_then(Value::as_str) {
                    check = check.with_evidence(e);
                }
                Some(check)
            })
            .collect();
    }
    if let Some(Value::String(v)) = reply.get("verdict")
        && matches!(v.as_str(), "pass" | "fail")
    {
        grade = grade.with_details(json!({ "verdict": v }));
    }
    Ok(grade)
}

export_grader!(CodeGrader);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agentv_verdicts_are_read_as_agentv_reads_them() {
        // JSON with score.
        let g = score(
            Some(0),
            "{\"score\": 0.7, \"assertions\": [{\"text\": \"a\", \"passed\": true}]}",
            "",
        )
        .unwrap();
        assert_eq!((g.score, g.checks.len()), (0.7, 1));
        // No score: passed / total.
        let g = score(
            Some(0),
            r#"{"assertions":[{"text":"a","passed":true},{"text":"b","passed":false}]}"#,
            "",
        )
        .unwrap();
        assert_eq!(g.score, 0.5);
        assert_eq!(score(Some(0), "  {\"score\": 0}\n", "").unwrap().score, 0.0);
    }

    #[test]
    fn output_that_is_not_a_verdict_never_passes() {
        let failed = |code: Option<i32>, out: &str, err: &str| match score(code, out, err) {
            Err(GradeError::BadOutput(message)) => message,
            other => panic!("{out:?} (exit {code:?}) gave {other:?}"),
        };
        for (out, why) in [
            ("FAIL: answer is wrong", "not one JSON object"),
            ("", "no output"),
            ("debug: starting\n{\"score\": 0.0}", "not one JSON object"),
            ("{\"pass\": true}", "no `score` and no `assertions`"),
            ("{\"score\": 7}", "`score` 7 is outside [0, 1]"),
            ("{\"score\": -0.5}", "outside [0, 1]"),
            ("{\"score\": \"high\"}", "`score` is a string"),
            ("[1, 2]", "not an object"),
            (
                "{\"assertions\": \"all good\"}",
                "`assertions` is not a list",
            ),
        ] {
            let message = failed(Some(0), out, "");
            assert!(message.contains("is not a verdict"), "{out:?}: {message}");
            assert!(message.contains(why), "{out:?}: {message}");
        }
        // The first bytes of what it printed are in the message.
        assert!(
            failed(Some(0), "FAIL: answer is wrong", "")
                .ends_with("it printed: FAIL: answer is wrong")
        );
        assert!(failed(Some(0), "", "").ends_with("it printed: nothing"));
        let long = "x".repeat(500);
        assert!(failed(Some(0), &long, "").ends_with(&format!("{}…", "x".repeat(200))));
    }

    #[test]
    fn a_grader_that_exits_non_zero_or_is_killed_is_a_grader_failure() {
        let failed = |code: Option<i32>, out: &str, err: &str| match score(code, out, err) {
            Err(GradeError::Failed(message)) => message,
            other => panic!("{out:?} (exit {code:?}) gave {other:?}"),
        };
        assert_eq!(
            failed(Some(2), "", "boom"),
            "the grader command exited with code 2: boom"
        );
        assert_eq!(
            failed(Some(1), "nope", ""),
            "the grader command exited with code 1; it printed: nope"
        );
        assert_eq!(
            failed(Some(1), "{\"score\": 1}", ""),
            "the grader command exited with code 1; it printed: {\"score\": 1}"
        );
        assert_eq!(
            failed(None, "", ""),
            "the grader command was killed by a signal"
        );
    }

    #[test]
    fn payload_keys_are_snake_case_and_config_merges() {
        let request = Request::new("code-grader", "hi")
            .with_config(
                json!({"command": ["x"], "threshold": 3, "config": {"maxLen": 5, "threshold": 4}}),
            )
            .with_criteria("say hi");
        let p = payload(&request, None);
        assert_eq!(p["config"], json!({"threshold": 4, "max_len": 5}));
        assert_eq!(
            (p["output"].as_str(), p["criteria"].as_str()),
            (Some("hi"), Some("say hi"))
        );
        assert!(p.get("output_path").is_none());
        let p = payload(&request, Some("/tmp/x/output.json"));
        assert_eq!(
            (p["output"].is_null(), p["output_path"].as_str()),
            (true, Some("/tmp/x/output.json"))
        );
    }

    #[test]
    fn commands_are_checked() {
        let check =
            |v: Value| CodeGrader::check_config("code-grader", &Config::from_value(v).unwrap());
        assert!(check(json!({"command": ["python3", "g.py"]})).is_ok());
        assert!(check(json!({"command": "python3 g.py"})).is_ok());
        assert!(check(json!({})).unwrap_err().contains("missing `command`"));
        assert!(check(json!({"command": ""})).unwrap_err().contains("empty"));
        assert!(
            check(json!({"command": ["ok", ""]}))
                .unwrap_err()
                .contains("`command[1]`")
        );
        assert!(check(json!({"command": "x", "target": true})).is_ok());
        assert!(check(json!({"command": "x", "target": {"max_calls": 3}})).is_ok());
        for bad in [
            json!(false),
            json!("judge"),
            json!({"max_calls": -1}),
            json!({"max_calls": 1.5}),
            json!({"calls": 2}),
        ] {
            assert!(
                check(json!({"command": "x", "target": bad.clone()})).is_err(),
                "{bad}"
            );
        }
    }
}
