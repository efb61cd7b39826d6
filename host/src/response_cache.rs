//! The response cache (`--cache`): target answers stored on disk, keyed by
//! the target's identity (provider, command or endpoint and model, sampling
//! settings — never its key), the test id and the full input, so that
//! re-running an unchanged suite does not call the target again. Sampled
//! models (`temperature > 0`) are not cached unless `--cache-sampled`; cases
//! with a workspace and repeated trials never are (their value is in what
//! happens each time).

use std::path::{Path, PathBuf};

use crate::plugin::sha256_hex;
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
        if let Some(dir) = std::env::var_os("EVALHOST_CACHE_DIR") {
            return Some(PathBuf::from(dir).join("responses"));
        }
        dirs::cache_dir().map(|d| d.join("evalhost").join("responses"))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of `test` on a target with `identity`.
    pub fn key(identity: &str, test: &TestCase) -> String {
        let input: Vec<serde_json::Value> = test
            .input
            .iter()
            .map(|m| serde_json::json!({"role": m.role, "content": m.content, "json": m.content_json}))
            .collect();
        let material = format!(
            "{identity}\u{0}{}\u{0}{}",
            test.id,
            serde_json::Value::Array(input)
        );
        sha256_hex(material.as_bytes())
    }

    /// The cached answer for `key`.
    pub fn get(&self, key: &str) -> Option<TargetOutput> {
        let text = std::fs::read_to_string(self.dir.join(format!("{key}.json"))).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Stores an answer (a cache that cannot be written only costs time).
    pub fn put(&self, key: &str, output: &TargetOutput) {
        let Ok(text) = serde_json::to_string(output) else {
            return;
        };
        if std::fs::create_dir_all(&self.dir).is_err() {
            return;
        }
        let path = self.dir.join(format!("{key}.json"));
        let tmp = self
            .dir
            .join(format!("{key}.json.tmp{}", std::process::id()));
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
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
