//! Container runtimes, for suites that ask their code graders to run in a
//! container (AgentV's `workspace.docker`): the first of docker and podman
//! that answers (`info`) runs them; where none does, a run says exactly
//! why it refuses such a suite — it never runs one on the host instead.

use std::path::{Path, PathBuf};

/// The first runtime that answers (its name and path), or why none does,
/// one sentence per runtime. `which` finds a program on PATH; `info` runs
/// `RUNTIME info` and says why it failed (the caller runs it, with a
/// deadline).
pub fn find(
    which: impl Fn(&str) -> Option<PathBuf>,
    info: impl Fn(&Path) -> Result<(), String>,
) -> Result<(String, PathBuf), Vec<String>> {
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
