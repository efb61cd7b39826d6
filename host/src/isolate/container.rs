//! Container runtimes, for suites that ask their code graders to run in a
//! container (AgentV's `workspace.docker`): the first of docker and podman
//! that answers (`info`) runs them; where none does, a run says exactly
//! why it refuses such a suite — it never runs one on the host instead.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The first runtime that answers (its name and path), or why none does,
/// one sentence per runtime.
pub fn find(which: impl Fn(&str) -> Option<PathBuf>) -> Result<(String, PathBuf), Vec<String>> {
    let mut why = Vec::new();
    for name in ["docker", "podman"] {
        match which(name) {
            None => why.push(format!("{name}: not on PATH")),
            Some(path) => match info(&path) {
                Ok(()) => return Ok((name.to_owned(), path)),
                Err(e) => why.push(format!("{name}: installed, but `{name} info` fails ({e})")),
            },
        }
    }
    Err(why)
}

/// `RUNTIME info`, within 15 seconds.
fn info(path: &PathBuf) -> Result<(), String> {
    let mut child = Command::new(path)
        .arg("info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read as _;
                    let _ = e.read_to_string(&mut err);
                }
                let line = err
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or_default()
                    .trim()
                    .chars()
                    .take(200)
                    .collect::<String>();
                return Err(if line.is_empty() {
                    status.to_string()
                } else {
                    line
                });
            }
            Ok(None) if started.elapsed() > Duration::from_secs(15) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("no answer in 15 s".into());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
}
