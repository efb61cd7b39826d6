//! Container runtimes, for suites that ask their cases to run in a
//! container (AgentV's `workspace.docker`). evalhost does not run a case
//! in a container itself yet; it finds whether docker or podman works here
//! so that a run can say exactly why it refuses such a suite — it never
//! runs one on the host instead.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What each runtime evalhost knows can do here, one sentence each.
pub fn probe(which: impl Fn(&str) -> Option<PathBuf>) -> Vec<String> {
    ["docker", "podman"]
        .iter()
        .map(|name| match which(name) {
            None => format!("{name}: not on PATH"),
            Some(path) => match info(&path) {
                Ok(()) => format!(
                    "{name}: answers (`{name} info`), but evalhost does not start cases in a container yet"
                ),
                Err(why) => format!("{name}: installed, but `{name} info` fails ({why})"),
            },
        })
        .collect()
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
