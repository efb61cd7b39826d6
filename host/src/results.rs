//! Result rows and the `results.jsonl` writer.
//!
//! One JSON object per (test, target), appended and flushed as soon as it is
//! graded, so a crash or Ctrl-C loses nothing already graded. Field names
//! follow AgentV's `index.jsonl` (`test_id`, `suite`, `target`, `score`,
//! `execution_status`, `scores[]` with `name`, `type`, `score`, `weight`,
//! `verdict`, `assertions`), plus evalhost's `failure_class` and, per score,
//! `plugin` and `plugin_digest`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::failure::FailureClass;

/// Outcome of one test, as AgentV names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// Graded and passed.
    Ok,
    /// Graded and failed.
    QualityFailure,
    /// Could not be graded properly: the target or a plugin failed.
    ExecutionError,
}

/// Verdict of one assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Score reached the type's threshold.
    Pass,
    /// It did not, or the plugin failed.
    Fail,
    /// Not graded.
    Skip,
}

/// A message, as results show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageRow {
    /// Its role.
    pub role: String,
    /// Its text.
    pub content: String,
}

/// One check behind a score.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRow {
    /// What was checked.
    pub text: String,
    /// Whether it passed.
    pub passed: bool,
    /// What the grader saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// One assertion's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreRow {
    /// Assertion name.
    pub name: String,
    /// Assertion type (kebab-case, without `not-`).
    #[serde(rename = "type")]
    pub kind: String,
    /// Score in [0, 1], after negation.
    pub score: f64,
    /// Weight in the test score.
    pub weight: f64,
    /// Pass, fail or skip.
    pub verdict: Verdict,
    /// The checks.
    pub assertions: Vec<CheckRow>,
    /// True when negated (`not-` or `negate: true`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub negate: bool,
    /// True when a `required` gate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// Why it did not pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_class: Option<FailureClass>,
    /// The plugin's error or failure message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The plugin's name.
    pub plugin: String,
    /// sha256 of the plugin's `.wasm`.
    pub plugin_digest: String,
    /// What the plugin printed (capped), when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_output: Option<String>,
    /// The plugin's free-form details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Time spent grading, in microseconds.
    pub duration_us: u64,
}

/// One (test, target) result: a line of `results.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    /// When grading finished (RFC 3339).
    pub timestamp: String,
    /// The test id.
    pub test_id: String,
    /// The suite name.
    pub suite: String,
    /// The target name.
    pub target: String,
    /// Test score in [0, 1].
    pub score: f64,
    /// The threshold the score was held to.
    pub threshold: f64,
    /// ok, quality_failure or execution_error.
    pub execution_status: ExecutionStatus,
    /// Why the test did not pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_class: Option<FailureClass>,
    /// The first error, for execution errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Time the target took, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The input messages sent to the target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input: Vec<MessageRow>,
    /// The expected output, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_output: Option<String>,
    /// The test's criteria.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criteria: Option<String>,
    /// The test's metadata (suite metadata merged in).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, Value>,
    /// The candidate output that was graded.
    pub output: String,
    /// Per-assertion results.
    pub scores: Vec<ScoreRow>,
}

impl ResultRow {
    /// True when the test counts as passed.
    pub fn passed(&self) -> bool {
        self.execution_status == ExecutionStatus::Ok
    }
}

/// Appends rows to `results.jsonl`, one `write` and one flush per row.
#[derive(Debug)]
pub struct ResultsWriter {
    path: PathBuf,
    file: File,
}

impl ResultsWriter {
    /// Opens (creating) `dir/results.jsonl` for appending.
    pub fn create(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("results.jsonl");
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Self { path, file })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one row and flushes it to the OS.
    pub fn append(&mut self, row: &ResultRow) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(row).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.flush()
    }
}

impl ResultsWriter {
    /// Rewrites the file with `rows` in this order (the suite's), atomically:
    /// during the run rows are appended as they complete, so a crash loses
    /// nothing; at the end they are put in suite order.
    pub fn rewrite_in_order(&mut self, rows: &[ResultRow]) -> std::io::Result<()> {
        let tmp = self.path.with_extension("jsonl.tmp");
        let mut out = std::io::BufWriter::new(File::create(&tmp)?);
        for row in rows {
            serde_json::to_writer(&mut out, row).map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
        }
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, &self.path)?;
        self.file = OpenOptions::new().append(true).open(&self.path)?;
        Ok(())
    }
}

/// Reads `results.jsonl` rows; a torn last line (from a crash) is skipped.
pub fn read_rows(path: &Path) -> std::io::Result<Vec<ResultRow>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}
