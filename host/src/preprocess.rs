//! Content preprocessors (AgentV §5.7): before an LLM grader sees the
//! answer, the file blocks of the target's last assistant message become
//! text. A block whose media type has a preprocessor goes through its
//! command (stdin `{"path", "original_path", "media_type"}`, stdout the
//! text); any other file is read as UTF-8. What cannot be converted becomes
//! a `[file preprocessing warning]` line the judge sees, as in AgentV.
//!
//! Beyond AgentV: a file must lie inside the directory the target ran in
//! (the case workspace, else the target's `cwd`, else the eval file's
//! directory) — a recorded or hostile output cannot make the host read
//! `/etc/shadow` into a judge prompt — and the commands are the host's
//! `exec`, so `--sandbox strict` and `execution.allow_commands` apply.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::grants::Policy;
use crate::plugin::bindings::evalhost::grader::types as wit;
use crate::suite::{Preprocessor, normalize_media_type};

/// The largest file read as text without a preprocessor.
const MAX_TEXT_FILE: u64 = 16 << 20;

/// Why the preprocessors could not run at all (the assertion fails).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The candidate text an LLM grader with `preprocessors` sees: `None` when
/// the last assistant message is plain text (the answer is graded as is).
pub fn candidate(
    output_messages: &[wit::Message],
    preprocessors: &[Preprocessor],
    base: &Path,
    policy: &Policy,
    sandbox: Option<&crate::isolate::CaseSandbox>,
) -> Result<Option<String>, Refused> {
    let Some(last) = output_messages
        .iter()
        .rev()
        .find(|m| m.role == "assistant" && (m.content_json.is_some() || !m.content.is_empty()))
    else {
        return Ok(None);
    };
    let Some(Value::Array(blocks)) = last
        .content_json
        .as_deref()
        .and_then(|j| serde_json::from_str::<Value>(j).ok())
    else {
        return Ok(None);
    };
    let mut parts = Vec::new();
    let mut warnings = Vec::new();
    for block in &blocks {
        let kind = block.get("type").and_then(Value::as_str);
        match kind {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    parts.push(t.to_owned());
                }
            }
            Some("file") => {
                let path = block.get("path").and_then(Value::as_str).unwrap_or("");
                let media_type = block
                    .get("media_type")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match file_text(path, media_type, preprocessors, base, policy, sandbox)? {
                    Ok(text) => parts.push(format!("[[ file: {path} ]]\n{text}")),
                    Err(reason) => warnings.push(format!(
                        "[file preprocessing warning] {path} ({media_type}): {reason}"
                    )),
                }
            }
            _ => {}
        }
    }
    let text = parts.join("\n");
    Ok(Some(
        std::iter::once(text)
            .chain(warnings)
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
    ))
}

/// One file block's text, or why there is none; `Err(Refused)` when the
/// policy refuses its preprocessor.
fn file_text(
    path: &str,
    media_type: &str,
    preprocessors: &[Preprocessor],
    base: &Path,
    policy: &Policy,
    sandbox: Option<&crate::isolate::CaseSandbox>,
) -> Result<Result<String, String>, Refused> {
    let resolved = match resolve(path, base) {
        Ok(p) => p,
        Err(why) => return Ok(Err(why)),
    };
    let wanted = normalize_media_type(media_type);
    if let Some(pre) = preprocessors.iter().find(|p| p.media_type == wanted) {
        return run(pre, &resolved, path, media_type, policy, sandbox);
    }
    Ok(read_text(&resolved))
}

/// The file a block names, inside `base`.
fn resolve(value: &str, base: &Path) -> Result<PathBuf, String> {
    if value.is_empty() {
        return Err("the file block has no `path`".into());
    }
    let local = if let Some(rest) = value.strip_prefix("file://") {
        PathBuf::from(rest)
    } else if value.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphabetic())
    }) {
        return Err("remote file paths are not supported for preprocessing".into());
    } else {
        base.join(value)
    };
    let real = local
        .canonicalize()
        .map_err(|e| format!("{}: {e}", local.display()))?;
    // Only a regular file is read or handed on (opening a FIFO the target
    // made would wait for a writer for ever).
    let meta = std::fs::metadata(&real).map_err(|e| format!("{}: {e}", real.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", real.display()));
    }
    let root = base.canonicalize().unwrap_or_else(|_| base.to_path_buf());
    if !real.starts_with(&root) {
        return Err(format!(
            "outside the directory the target ran in ({}); evalhost reads only files under it",
            root.display()
        ));
    }
    Ok(real)
}

/// AgentV's default: the file as UTF-8, refused when binary.
fn read_text(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_TEXT_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_TEXT_FILE {
        return Err(format!(
            "larger than {} MiB; configure a preprocessor",
            MAX_TEXT_FILE >> 20
        ));
    }
    match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') && !text.contains('\u{fffd}') => {
            Ok(text.replace("\r\n", "\n"))
        }
        _ => Err(
            "default UTF-8 read produced binary or invalid text; configure a preprocessor".into(),
        ),
    }
}

fn run(
    pre: &Preprocessor,
    resolved: &Path,
    original: &str,
    media_type: &str,
    policy: &Policy,
    sandbox: Option<&crate::isolate::CaseSandbox>,
) -> Result<Result<String, String>, Refused> {
    let program = pre.argv.first().cloned().unwrap_or_default();
    if policy.strict {
        return Err(Refused(format!(
            "`--sandbox strict` refuses the preprocessor command `{}` ({}{})",
            pre.argv.join(" "),
            pre.loc.file.display(),
            pre.loc
                .pos
                .map(|p| format!(":{}", p.line))
                .unwrap_or_default()
        )));
    }
    if let Some(allow) = &policy.exec_allow
        && !allow.contains(&program)
    {
        return Err(Refused(format!(
            "the preprocessor command `{program}` is not in the suite's allow-list of commands ({})",
            allow.join(", ")
        )));
    }
    let stdin = serde_json::json!({
        "path": resolved.display().to_string(),
        "original_path": original,
        "media_type": media_type,
    })
    .to_string();
    // Under --isolate: the case's workspace and the file it converts
    // readable, nothing writable.
    let confined = match sandbox
        .map(|s| {
            s.preprocessor(
                "preprocessor",
                Some(&policy.base_dir),
                &[resolved.to_path_buf()],
            )
        })
        .transpose()
    {
        Ok(c) => c,
        Err(refused) => return Ok(Err(refused.to_string())),
    };
    let outcome = crate::process::run(&crate::process::Spec {
        argv: &pre.argv,
        shell: None,
        cwd: Some(&policy.base_dir),
        stdin: stdin.as_bytes(),
        timeout: Some(policy.max_exec),
        env: &[],
        shell_args: &[],
        env_remove: &policy.scrub_env,
        sandbox: confined.as_ref(),
        clear_env: false,
    });
    Ok(match outcome {
        Err(e) => Err(format!("`{program}` could not start: {e}")),
        Ok(o) if o.timed_out => Err(format!(
            "preprocessor timed out after {} s",
            policy.max_exec.as_secs()
        )),
        Ok(o) if o.code != Some(0) => {
            let stderr = String::from_utf8_lossy(&o.stderr).trim().to_owned();
            Err(if stderr.is_empty() {
                format!(
                    "preprocessor exited with code {}",
                    o.code.map_or("(signal)".to_owned(), |c| c.to_string())
                )
            } else {
                stderr
            })
        }
        Ok(o) => Ok(String::from_utf8_lossy(&o.stdout).trim().to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(content: &str, json: Option<Value>) -> wit::Message {
        wit::Message {
            role: "assistant".into(),
            content: content.into(),
            content_json: json.map(|j| j.to_string()),
            tool_calls: Vec::new(),
            name: None,
        }
    }

    fn output_with(blocks: Value) -> Vec<wit::Message> {
        vec![message("", Some(blocks))]
    }

    #[test]
    fn text_answers_are_graded_as_they_are() {
        let out = vec![message("plain", None)];
        let got = candidate(&out, &[], Path::new("."), &Policy::default(), None).unwrap();
        assert_eq!(got, None);
    }

    #[test]
    fn files_are_read_as_text_inside_the_base_and_refused_outside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "line 1\r\nline 2\n").unwrap();
        std::fs::write(dir.path().join("b.bin"), [0u8, 159, 146]).unwrap();
        let out = output_with(serde_json::json!([
            {"type": "text", "text": "Here:"},
            {"type": "file", "media_type": "text/markdown", "path": "a.md"},
            {"type": "file", "media_type": "application/octet-stream", "path": "b.bin"},
            {"type": "file", "media_type": "text/plain", "path": "/etc/passwd"},
            {"type": "file", "media_type": "text/plain", "path": "https://x.test/a"},
        ]));
        let got = candidate(&out, &[], dir.path(), &Policy::default(), None)
            .unwrap()
            .unwrap();
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(
            &lines[..4],
            ["Here:", "[[ file: a.md ]]", "line 1", "line 2"]
        );
        assert!(got.contains("[file preprocessing warning] b.bin (application/octet-stream): default UTF-8 read produced binary"), "{got}");
        assert!(
            got.contains(
                "[file preprocessing warning] /etc/passwd (text/plain): outside the directory"
            ),
            "{got}"
        );
        assert!(!got.contains("root:"), "{got}");
        assert!(got.contains("remote file paths are not supported"), "{got}");
    }

    #[test]
    fn media_types_are_normalised_as_agentv_does() {
        assert_eq!(
            normalize_media_type(" XLSX "),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
        );
        assert_eq!(normalize_media_type("text/CSV"), "text/csv");
    }
}
