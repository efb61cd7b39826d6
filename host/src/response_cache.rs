//! The response cache (`--cache`): target answers stored on disk, keyed by
//! everything that decides the answer — the target's identity (provider,
//! command and the directory it runs in, or endpoint and model, sampling
//! settings; never its key), the suite (its file and name), whether the run
//! was under `--sandbox strict`, the test id, the full input and the
//! contents of the files it attaches — so that re-running an unchanged
//! suite does not call the target again, and no suite can plant an answer
//! another suite will read. Sampled models (`temperature > 0`) are not
//! cached unless `--cache-sampled`; cases with a workspace and repeated
//! trials never are (their value is in what happens each time); and an
//! answer a fallback target gave is never stored (it is not the primary's).
//!
//! Entries are read and written without following links, and the directory
//! must belong to the user and be writable by nobody else.

use std::path::{Path, PathBuf};

use crate::digest::sha256_hex;
use crate::suite::TestCase;
use crate::target::TargetOutput;

/// A response cache directory.
#[derive(Debug, Clone)]
pub struct ResponseCache {
    dir: PathBuf,
    /// Cache sampled models too.
    pub sampled: bool,
}

impl ResponseCache {
    /// A cache in `dir`.
    pub fn new(dir: PathBuf, sampled: bool) -> Self {
        Self { dir, sampled }
    }

    /// `$EVALHOST_CACHE_DIR/responses`, else the user's cache directory.
    pub fn default_dir() -> Option<PathBuf> {
        crate::safe_fs::cache_root().map(|d| d.join("responses"))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of `test` on a target with `identity`, in a run of `scope`
    /// (the suite and the sandbox mode: see [`scope`]).
    pub fn key(identity: &str, scope: &str, test: &TestCase) -> String {
        let input: Vec<serde_json::Value> = test
            .input
            .iter()
            .map(|m| serde_json::json!({"role": m.role, "content": m.content, "json": m.content_json}))
            .collect();
        // What the attached files hold, not just their names.
        let files: Vec<String> = crate::target::prompt::input_files(&test.input)
            .iter()
            .map(|p| {
                crate::safe_fs::read_capped(p, 64 << 20)
                    .map_or_else(|e| format!("unreadable: {e}"), |b| sha256_hex(&b))
            })
            .collect();
        let material = serde_json::json!({
            "v": 2,
            "target": identity,
            "scope": scope,
            "test": test.id,
            "input": input,
            "files": files,
        });
        sha256_hex(material.to_string().as_bytes())
    }

    /// The cached answer for `key`.
    pub fn get(&self, key: &str) -> Option<TargetOutput> {
        let text =
            crate::safe_fs::read_text_capped(&self.dir.join(format!("{key}.json")), 64 << 20)
                .ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Stores an answer (a cache that cannot be written only costs time).
    /// An answer a fallback target gave is not stored: it is not the answer
    /// of the target the key names.
    pub fn put(&self, key: &str, output: &TargetOutput) {
        if output.target_used.is_some() {
            return;
        }
        let Ok(text) = serde_json::to_string(output) else {
            return;
        };
        let _ =
            crate::safe_fs::write_atomic(&self.dir.join(format!("{key}.json")), text.as_bytes());
    }

    /// A cache in `dir` when the directory can be trusted (see
    /// [`crate::safe_fs::check_owned_dir`]), else why not.
    pub fn open(dir: PathBuf, sampled: bool) -> Result<Self, String> {
        crate::safe_fs::check_owned_dir(&dir)
            .map_err(|e| format!("the response cache {} {e}; it is not used", dir.display()))?;
        Ok(Self::new(dir, sampled))
    }

    /// Removes every cached answer; returns how many files were removed.
    pub fn clear(dir: &Path) -> std::io::Result<usize> {
        let mut removed = 0;
        if dir.is_dir() {
            for entry in std::fs::read_dir(dir)? {
                let path = entry?.path();
                if path.is_file() {
                    std::fs::remove_file(&path)?;
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }
}

/// The scope of a run's cached answers: the suite's file and name, and
/// whether the run was under `--sandbox strict` (an untrusted run never
/// shares answers with a trusted one).
pub fn scope(eval: &Path, suite_name: &str, strict: bool) -> String {
    let eval = std::path::absolute(eval).unwrap_or_else(|_| eval.to_path_buf());
    format!(
        "{}\u{0}{}\u{0}{suite_name}",
        if strict { "strict" } else { "trusted" },
        eval.display()
    )
}
