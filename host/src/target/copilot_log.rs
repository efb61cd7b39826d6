//! AgentV's `copilot-log` target: a GitHub Copilot CLI session already on
//! disk (`<session>/events.jsonl`), read instead of running anything, as
//! AgentV 4.42.4's `CopilotLogProvider` reads it — the session named by
//! `session_dir`, else `session_id` under `session_state_dir` (default
//! `~/.copilot/session-state`), else, with `discover: latest`, the most
//! recent session there (the newest transcript; with `cwd`, the newest
//! whose session started in that directory).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::file::get_str;
use super::{TargetFailure, TargetOutput};

/// A `copilot-log` target.
#[derive(Debug, Clone, PartialEq)]
pub struct CopilotLogConfig {
    session_dir: Option<PathBuf>,
    session_id: Option<String>,
    state_dir: Option<PathBuf>,
    discover_latest: bool,
    cwd: Option<String>,
}

impl CopilotLogConfig {
    /// Reads a `copilot-log` entry.
    pub fn parse(entry: &Map<String, Value>, base_dir: &Path) -> Result<Self, (String, String)> {
        let discover = get_str(entry, "discover")?;
        if let Some(d) = &discover
            && d != "latest"
        {
            return Err((
                "discover".into(),
                format!("`discover` must be `latest`, got `{d}`"),
            ));
        }
        let config = Self {
            session_dir: get_str(entry, "session_dir")?.map(|d| base_dir.join(d)),
            session_id: get_str(entry, "session_id")?,
            state_dir: get_str(entry, "session_state_dir")?.map(|d| base_dir.join(d)),
            discover_latest: discover.is_some(),
            cwd: get_str(entry, "cwd")?,
        };
        if config.session_dir.is_none() && config.session_id.is_none() && !config.discover_latest {
            return Err((
                "session_dir".into(),
                "a `copilot-log` target needs one of `session_dir`, `session_id`, or `discover: latest`".into(),
            ));
        }
        Ok(config)
    }

    fn state_dir(&self) -> PathBuf {
        self.state_dir.clone().unwrap_or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default()
                .join(".copilot/session-state")
        })
    }

    /// The session directory to read.
    fn session(&self) -> Result<PathBuf, TargetFailure> {
        if let Some(d) = &self.session_dir {
            return Ok(d.clone());
        }
        if let Some(id) = &self.session_id {
            return Ok(self.state_dir().join(id));
        }
        let state = self.state_dir();
        let mut sessions: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&state)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|e| {
                let events = e.path().join("events.jsonl");
                let modified = events.metadata().ok()?.modified().ok()?;
                Some((modified, e.path()))
            })
            .filter(|(_, dir)| match &self.cwd {
                None => true,
                Some(cwd) => started_in(dir).is_some_and(|c| c == *cwd),
            })
            .collect();
        sessions.sort();
        sessions.pop().map(|(_, d)| d).ok_or_else(|| {
            TargetFailure::fatal(format!(
                "No Copilot CLI sessions found{}. Check that sessions exist in {}",
                self.cwd
                    .as_ref()
                    .map_or_else(String::new, |c| format!(" for cwd={c}")),
                state.display()
            ))
        })
    }
}

/// The directory a session started in (its `session.start` context).
fn started_in(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("events.jsonl")).ok()?;
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "session.start")
        .and_then(|e| e["data"]["context"]["cwd"].as_str().map(str::to_owned))
}

/// Reads the session for a test (the same session answers every test, as
/// in AgentV: nothing is run).
pub fn invoke(config: &CopilotLogConfig) -> Result<TargetOutput, TargetFailure> {
    let dir = config.session()?;
    let events = dir.join("events.jsonl");
    let text = crate::safe_fs::read_text_capped(&events, 256 << 20).map_err(|e| {
        TargetFailure::fatal(format!(
            "Failed to read Copilot session transcript at {}: {e}",
            events.display()
        ))
    })?;
    let mut output = crate::trace::normalize(&text, crate::trace::TraceFormat::CopilotLog)
        .map_err(|e| TargetFailure::fatal(e.message))?;
    output.file_changes = session_artifacts(&dir.join("files"));
    Ok(output)
}

/// AgentV's `captureSessionArtifacts`: every text file under a Copilot
/// session's `files/` directory as a new file in a unified diff (AgentV's
/// synthetic diff: one hunk per file), or `None` when there are none.
/// Files over 512 KB, files with NUL bytes or not UTF-8, and `.git`,
/// `node_modules`, `.agentv` and `__pycache__` are skipped, as AgentV skips
/// them; files are listed in path order.
pub fn session_artifacts(files_dir: &Path) -> Option<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if [".git", "node_modules", ".agentv", "__pycache__"]
                .iter()
                .any(|x| name == std::ffi::OsStr::new(x))
            {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                walk(root, &path, out);
            } else if meta.is_file() && meta.len() <= 512 * 1024 {
                let Ok(content) = std::fs::read_to_string(&path) else {
                    continue;
                };
                if content.contains('\0') {
                    continue;
                }
                let rel = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, content));
            }
        }
    }
    let mut files = Vec::new();
    walk(files_dir, files_dir, &mut files);
    if files.is_empty() {
        return None;
    }
    files.sort();
    let parts: Vec<String> = files
        .iter()
        .map(|(rel, content)| {
            let body = content.strip_suffix('\n').unwrap_or(content);
            let lines: Vec<String> = body.split('\n').map(|l| format!("+{l}")).collect();
            format!(
                "diff --git a/{rel} b/{rel}\nnew file mode 100644\n--- /dev/null\n+++ b/{rel}\n@@ -0,0 +1,{} @@\n{}",
                lines.len(),
                lines.join("\n")
            )
        })
        .collect();
    Some(parts.join("\n"))
}
