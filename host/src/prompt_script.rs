//! LLM-grader prompts computed by a command (AgentV §4.4):
//! `prompt: {command: [node, ../prompts/grader.js], config: {...}}`. The
//! command runs on the host, in its script's directory, reads the case as
//! snake_case JSON on stdin (`criteria`, `expected_output`, `output`,
//! `answer`, `messages`, `input_files`, `input`, `metadata`, `trace`,
//! `file_changes`, `workspace_path`, `config`) and prints the whole judge
//! prompt. It is the host's `exec`: `--sandbox strict` refuses it and
//! `execution.allow_commands` applies.

use std::path::Path;

use serde_json::{Value, json};

use crate::grants::Policy;
use crate::plugin::bindings::evalhost::grader::types as wit;
use crate::suite::PromptScript;

fn message_json(m: &wit::Message) -> Value {
    let content = m
        .content_json
        .as_deref()
        .and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_else(|| Value::String(m.content.clone()));
    let mut o = json!({"role": m.role, "content": content});
    if !m.tool_calls.is_empty() {
        o["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| {
                let parse = |s: &Option<String>| {
                    s.as_deref()
                        .and_then(|j| serde_json::from_str::<Value>(j).ok())
                        .unwrap_or(Value::Null)
                };
                json!({"id": c.id, "tool": c.tool, "input": parse(&c.input_json), "output": parse(&c.output_json), "status": c.status})
            })
            .collect();
    }
    o
}

/// The payload a prompt script reads.
pub fn payload(request: &wit::GradeRequest, config: Option<&Value>) -> Value {
    let input_files: Vec<Value> = request
        .input
        .iter()
        .filter_map(|m| serde_json::from_str::<Value>(m.content_json.as_deref()?).ok())
        .filter_map(|v| v.as_array().cloned())
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("file"))
        .filter_map(|b| b.get("resolved_path").cloned())
        .collect();
    let metadata = serde_json::from_str::<Value>(&request.metadata_json)
        .ok()
        .filter(|m| m.as_object().is_some_and(|o| !o.is_empty()))
        .unwrap_or(Value::Null);
    json!({
        "criteria": request.criteria.clone().unwrap_or_default(),
        "expected_output": request.expected_messages.iter().map(message_json).collect::<Vec<_>>(),
        "output": request.output,
        "answer": request.output,
        "messages": request.output_messages.iter().map(message_json).collect::<Vec<_>>(),
        "input_files": input_files,
        "input": request.input.iter().map(message_json).collect::<Vec<_>>(),
        "metadata": metadata,
        "trace": Value::Null,
        "file_changes": request.trace.file_changes,
        "workspace_path": request.workspace_path,
        "config": config.cloned().unwrap_or(Value::Null),
    })
}

/// Runs the script; its trimmed output is the prompt.
pub fn render(
    script: &PromptScript,
    request: &wit::GradeRequest,
    policy: &Policy,
    sandbox: Option<&crate::isolate::CaseSandbox>,
) -> Result<String, String> {
    let program = script.argv.first().cloned().unwrap_or_default();
    if policy.strict {
        return Err(format!(
            "`--sandbox strict` refuses the prompt script `{}`",
            script.argv.join(" ")
        ));
    }
    if let Some(allow) = &policy.exec_allow
        && !allow.contains(&program)
    {
        return Err(format!(
            "the prompt script's command `{program}` is not in the suite's allow-list of commands ({})",
            allow.join(", ")
        ));
    }
    let stdin = serde_json::to_vec_pretty(&payload(request, script.config.as_ref()))
        .map_err(|e| e.to_string())?;
    let cwd = script
        .argv
        .last()
        .and_then(|s| Path::new(s).parent())
        .map_or_else(|| policy.base_dir.clone(), Path::to_path_buf);
    // Under --isolate: it reads the case's workspace, writes nothing, and
    // starts only inside the workspace or the project.
    let confined = sandbox
        .map(|s| s.preprocessor("prompt script", Some(&cwd), &[]))
        .transpose()
        .map_err(|refused| format!("Prompt template execution failed: {refused}"))?;
    let outcome = crate::process::run(&crate::process::Spec {
        argv: &script.argv,
        shell: None,
        cwd: Some(&cwd),
        stdin: &stdin,
        timeout: Some(policy.max_exec),
        env: &[],
        shell_args: &[],
        env_remove: &policy.scrub_env,
        sandbox: confined.as_ref(),
        clear_env: false,
    })
    .map_err(|e| format!("Prompt template execution failed: `{program}` could not start: {e}"))?;
    if outcome.timed_out {
        return Err(format!(
            "Prompt template execution failed: timed out after {} s",
            policy.max_exec.as_secs()
        ));
    }
    let stderr = String::from_utf8_lossy(&outcome.stderr).trim().to_owned();
    if outcome.code != Some(0) {
        return Err(format!(
            "Prompt template execution failed: exited with code {}{}",
            outcome
                .code
                .map_or("(signal)".to_owned(), |c| c.to_string()),
            if stderr.is_empty() {
                String::new()
            } else {
                format!(": {stderr}")
            }
        ));
    }
    let prompt = String::from_utf8_lossy(&outcome.stdout).trim().to_owned();
    if prompt.is_empty() {
        return Err(
            "Prompt template execution failed: Prompt template produced empty output".into(),
        );
    }
    Ok(prompt)
}
