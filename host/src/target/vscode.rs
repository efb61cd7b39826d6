//! AgentV's `vscode` and `vscode-insiders` targets: a VS Code chat agent
//! in a subagent workspace, driven as AgentV 4.42.4's `VSCodeProvider`
//! drives it, through files and the `code` command line:
//!
//! 1. A subagent directory under the subagent root (`subagent_root`, else
//!    `$AGENTV_DATA_DIR`, `$AGENTV_HOME` or `~/.agentv`, then
//!    `subagents/vscode-agents` — `vscode-insiders-agents` for
//!    `code-insiders`): the first `subagent-N` without a `subagent.lock`,
//!    one provisioned when none is free (its `.code-workspace` and
//!    `.github/agents/wakeup.md`, as AgentV's `provisionSubagents` writes
//!    them).
//! 2. The subagent prepared: its `.code-workspace` rewritten (the subagent
//!    folder, and the case workspace or `cwd` when there is one),
//!    `messages/` emptied, agent files other than `wakeup.md` and
//!    `subagent.md` removed, `subagent.lock` written.
//! 3. The request written to `messages/<timestamp>_req.md`: AgentV's
//!    request template around the prompt document (AgentV's VS Code
//!    variant: the system prompt, the attachments to read first, then
//!    `[[ ## user_query ## ]]` and the question), telling the agent to write
//!    its answer to `<timestamp>_res.tmp.md` and move it to
//!    `<timestamp>_res.md`.
//! 4. The workspace focused: `code --status` lists it, or it is opened
//!    (`code <workspace>`) and woken (`code -r chat -m wakeup "create a file
//!    named .alive in the <subagent> folder"`, then `.alive` awaited for up
//!    to 60 s); then `code -r chat -m <chat id> [-a <file>]… -a <request>
//!    "Follow instructions in [<request>](file://<request>)"`.
//! 5. The answer: `<timestamp>_res.md`, polled each second until
//!    `timeout_seconds` (AgentV's default: 10 minutes); the lock removed.
//!
//! One VS Code window serves one request at a time, as in AgentV (which
//! runs VS Code targets with one worker): calls wait their turn.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::json;

use super::agent::AgentConfig;
use super::{Invocation, TargetFailure, TargetOutput, prompt};
use crate::suite::TestCase;

/// AgentV's wait for an answer when the target sets no timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// One request at a time: the chat needs the window's focus.
static WINDOW: Mutex<()> = Mutex::new(());

/// AgentV's request template (`AGENTV_REQUEST_TEMPLATE`).
const REQUEST_TEMPLATE: &str = "[[ ## task ## ]]

{{userQuery}}

[[ ## system_instructions ## ]]

**IMPORTANT**: Follow these exact steps:
1. Create and write your complete response to: {{responseFileTmp}}
2. When completely finished, run these PowerShell commands to signal completion:
```
Move-Item -LiteralPath '{{responseFileTmp}}' -Destination '{{responseFileFinal}}'
if (Test-Path subagent.lock) { del subagent.lock }
```

Do not proceed to step 2 until your response is completely written to the temporary file.
";

/// The wake-up agent the workspace is opened with (`vscodeProcess.ts`).
const WAKEUP: &str = "---
description: 'Wake-up Signal'
model: Grok Code Fast 1 (copilot)
---";

/// The wake-up agent a provisioned subagent gets (`provision.ts`).
const PROVISION_WAKEUP: &str = "---
description: 'Wake-up Signal'
tools: ['edit', 'runNotebooks', 'search', 'new', 'runCommands', 'runTasks', 'usages', 'vscodeAPI', 'problems', 'changes', 'testFailure', 'openSimpleBrowser', 'fetch', 'githubRepo']
model: GPT-4.1 (copilot)
---";

const LOCK: &str = "subagent.lock";

/// The subagent root AgentV uses for this executable.
pub fn subagent_root(config: &AgentConfig) -> PathBuf {
    if let Some(root) = &config.subagent_root {
        return resolved(root);
    }
    let var = |n: &str| {
        std::env::var_os(n)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let data = var("AGENTV_DATA_DIR")
        .or_else(|| var("AGENTV_HOME"))
        .or_else(|| var("HOME").map(|h| h.join(".agentv")))
        .unwrap_or_else(|| PathBuf::from(".agentv"));
    let folder = if config.executable == "code-insiders" {
        "vscode-insiders-agents"
    } else {
        "vscode-agents"
    };
    data.join("subagents").join(folder)
}

/// `path` made absolute with `.` and `..` resolved by name, as Node's
/// `path.resolve` does.
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `subagent-N` directories of `root`, by number.
fn subagents(root: &Path) -> Vec<(u64, PathBuf)> {
    let mut out: Vec<(u64, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name.strip_prefix("subagent-")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// AgentV's `ensureVSCodeSubagents` for one worker: a free subagent,
/// provisioned when there is none.
fn free_subagent(root: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(root)?;
    let all = subagents(root);
    if let Some((_, dir)) = all.iter().find(|(_, d)| !d.join(LOCK).exists()) {
        return Ok(dir.clone());
    }
    let n = all.last().map_or(1, |(n, _)| n + 1);
    let dir = root.join(format!("subagent-{n}"));
    let agents = dir.join(".github/agents");
    std::fs::create_dir_all(&agents)?;
    let template = json!({
        "folders": [{"path": "."}],
        "settings": {"chat.modeFilesLocations": {".github/agents/**/*.md": true}}
    });
    std::fs::write(
        dir.join(format!("subagent-{n}.code-workspace")),
        serde_json::to_string_pretty(&template).unwrap_or_default(),
    )?;
    std::fs::write(agents.join("wakeup.md"), PROVISION_WAKEUP)?;
    Ok(dir)
}

/// AgentV's `copyAgentConfig` and `createSubagentLock`.
fn prepare(dir: &Path, name: &str, cwd: Option<&Path>) -> std::io::Result<()> {
    let mut folders = vec![
        json!({"path": "."}),
        json!({"path": dir.display().to_string()}),
    ];
    if let Some(c) = cwd {
        let c = c.display().to_string();
        if !folders.iter().any(|f| f["path"] == c.as_str()) {
            folders.push(json!({"path": c}));
        }
    }
    std::fs::write(
        dir.join(format!("{name}.code-workspace")),
        serde_json::to_string_pretty(&json!({"folders": folders})).unwrap_or_default(),
    )?;
    let messages = dir.join("messages");
    std::fs::create_dir_all(&messages)?;
    for entry in std::fs::read_dir(&messages)?.flatten() {
        let _ = std::fs::remove_file(entry.path());
    }
    if let Ok(entries) = std::fs::read_dir(dir.join(".github/agents")) {
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            if file.ends_with(".md") && file != "wakeup.md" && file != "subagent.md" {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    std::fs::write(dir.join(LOCK), "")
}

/// AgentV's VS Code prompt document.
pub fn prompt_document(test: &TestCase) -> String {
    let mut parts: Vec<String> = Vec::new();
    let system = prompt::system_text(&test.input);
    if !system.trim().is_empty() {
        parts.push(system.trim().to_owned());
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for f in prompt::input_files(&test.input) {
        if !files.contains(&f) {
            files.push(f);
        }
    }
    if !files.is_empty() {
        let list: Vec<String> = files
            .iter()
            .map(|p| {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                format!("* [{name}](file://{})", p.display())
            })
            .collect();
        parts.push("\n".into());
        parts.push(format!(
            "Read all attachment files:\n{}.\nIf any file is missing, fail with ERROR: missing-file <filename> and stop.\nThen apply system_instructions on the user query below.",
            list.join("\n")
        ));
    }
    parts.push("\n[[ ## user_query ## ]]\n".into());
    parts.push(prompt::agent_prompt(&test.input).trim().to_owned());
    parts.join("\n").trim().to_owned()
}

/// Runs `code` with `args` and lets it go (VS Code hands the request to
/// its window and returns); a program that cannot start is an error.
fn spawn(executable: &str, args: &[String]) -> Result<(), TargetFailure> {
    let mut argv = vec![executable.to_owned()];
    argv.extend(args.iter().cloned());
    crate::process::detach(&argv).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            TargetFailure::fatal(format!(
                "VS Code executable '{executable}' was not found on PATH. Check the 'executable' setting in your target configuration."
            ))
        } else {
            TargetFailure::new(format!("VS Code could not start: {e}"))
        }
    })
}

/// Runs one test through a VS Code subagent.
pub fn invoke(
    config: &AgentConfig,
    test: &TestCase,
    inv: &Invocation<'_>,
) -> Result<TargetOutput, TargetFailure> {
    if inv.sandbox.is_some() {
        return Err(TargetFailure::fatal(
            "--isolate: a VS Code target hands each case to a VS Code window running outside any sandbox of evalhost's, so it cannot be confined; run it without --isolate, or use the `copilot` or `claude` target".to_owned(),
        ));
    }
    let _turn = WINDOW.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let exe = config.executable.clone();
    if crate::process::which(&exe).is_none() {
        return Err(TargetFailure::fatal(if exe.contains('/') {
            format!(
                "VS Code executable not found at '{exe}'. Check the 'executable' setting in your target configuration."
            )
        } else {
            format!(
                "VS Code executable '{exe}' was not found on PATH. Check the 'executable' setting in your target configuration."
            )
        }));
    }
    let io = |what: &str| {
        let what = what.to_owned();
        move |e: std::io::Error| TargetFailure::fatal(format!("{what}: {e}"))
    };
    let root = subagent_root(config);
    let dir = free_subagent(&root).map_err(io(&format!(
        "cannot provision a VS Code subagent under {}",
        root.display()
    )))?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let chat_id = format!("{:08x}", rand::random::<u32>());
    let cwd = inv
        .workspace
        .map(Path::to_path_buf)
        .or_else(|| config.cwd.clone())
        .map(|c| resolved(&c));
    prepare(&dir, &name, cwd.as_deref()).map_err(io("Failed to prepare subagent workspace"))?;
    let unlock = || {
        let _ = std::fs::remove_file(dir.join(LOCK));
    };
    let timestamp = jiff::Timestamp::now().strftime("%Y%m%d%H%M%S").to_string();
    let messages = dir.join("messages");
    let tmp = messages.join(format!("{timestamp}_res.tmp.md"));
    let answer = messages.join(format!("{timestamp}_res.md"));
    let request = REQUEST_TEMPLATE
        .replace("{{userQuery}}", &prompt_document(test))
        .replace("{{responseFileTmp}}", &tmp.display().to_string())
        .replace("{{responseFileFinal}}", &answer.display().to_string());
    if config.dry_run {
        unlock();
        let mut out = TargetOutput::text("{}");
        out.token_usage = Some(super::TokenUsage::default());
        out.duration_ms = Some(started.elapsed().as_millis() as u64);
        return Ok(out);
    }
    let req_file = messages.join(format!("{timestamp}_req.md"));
    std::fs::write(&req_file, &request).map_err(io("cannot write the request"))?;
    // The workspace, focused (opened and woken when VS Code does not have it).
    let workspace_file = dir.join(format!("{name}.code-workspace"));
    let status = crate::process::run(&crate::process::Spec {
        argv: &[exe.clone(), "--status".to_owned()],
        timeout: Some(Duration::from_secs(30)),
        ..crate::process::Spec::default()
    })
    .map(|o| String::from_utf8_lossy(&o.stdout).contains(&name))
    .unwrap_or(false);
    spawn(&exe, &[workspace_file.display().to_string()])?;
    if !status {
        let alive = dir.join(".alive");
        let _ = std::fs::remove_file(&alive);
        let agents = dir.join(".github/agents");
        std::fs::create_dir_all(&agents).map_err(io("cannot write the wake-up agent"))?;
        std::fs::write(agents.join("wakeup.md"), WAKEUP)
            .map_err(io("cannot write the wake-up agent"))?;
        std::thread::sleep(Duration::from_millis(100));
        spawn(
            &exe,
            &[
                "-r".into(),
                "chat".into(),
                "-m".into(),
                "wakeup".into(),
                format!("create a file named .alive in the {name} folder"),
            ],
        )?;
        let ready_by = Instant::now() + Duration::from_secs(60);
        while !alive.exists() {
            if Instant::now() > ready_by {
                unlock();
                return Err(TargetFailure::fatal(format!(
                    "VS Code workspace '{name}' failed to become ready within the timeout. Check that '{exe}' can open workspaces."
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let mut args: Vec<String> = ["-r", "chat", "-m", &chat_id].map(str::to_owned).to_vec();
    let mut attachments: Vec<PathBuf> = Vec::new();
    for f in prompt::input_files(&test.input) {
        if !attachments.contains(&f) {
            attachments.push(f);
        }
    }
    for a in &attachments {
        if !a.exists() {
            unlock();
            return Err(TargetFailure::fatal(format!(
                "Attachment not found: {}",
                a.display()
            )));
        }
        args.extend(["-a".to_owned(), a.display().to_string()]);
    }
    args.extend(["-a".to_owned(), req_file.display().to_string()]);
    args.push(format!(
        "Follow instructions in [{timestamp}_req.md](file://{})",
        req_file.display()
    ));
    spawn(&exe, &args)?;
    if !config.wait {
        // AgentV returns at once and then reads an answer not yet written.
        return Err(TargetFailure::fatal(format!(
            "`wait: false`: the request was sent to VS Code ({}), and there is no answer to grade",
            req_file.display()
        )));
    }
    let timeout = inv
        .time_left(config.timeout.or(Some(DEFAULT_TIMEOUT)))
        .unwrap_or(DEFAULT_TIMEOUT);
    let case_bound =
        inv.deadline.is_some() && Some(timeout) != config.timeout.or(Some(DEFAULT_TIMEOUT));
    let until = Instant::now() + timeout;
    while !answer.exists() {
        if Instant::now() >= until {
            return Err(if case_bound {
                TargetFailure::timeout(format!(
                    "the case ran past its timeout_ms while VS Code worked ({:.1}s)",
                    timeout.as_secs_f64()
                ))
            } else {
                TargetFailure::new(format!(
                    "Timed out waiting for agent response ({}s): {}",
                    timeout.as_secs(),
                    answer.display()
                ))
            });
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let text = std::fs::read_to_string(&answer).map_err(io(&format!(
        "failed to read agent response {}",
        answer.display()
    )))?;
    unlock();
    let mut out = TargetOutput::text(text);
    out.duration_ms = Some(started.elapsed().as_millis() as u64);
    out.raw = Some(format!("{request}\n---\n{}", out.text));
    Ok(out)
}
