//! Reporting: a line per test as it completes, the summary at the end, and
//! `summary.json`. Human output goes to stderr and is not a stable
//! interface; `results.jsonl` and `summary.json` are.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::failure::FailureClass;
use crate::plugin::{CompileSource, Registry};
use crate::results::{ExecutionStatus, ResultRow, Verdict};
use crate::suite::Suite;

/// A plugin as the summary reports it.
#[derive(Debug, Clone, Serialize)]
pub struct PluginSummary {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// sha256 of the `.wasm`.
    pub digest: String,
    /// True when loaded from the compile cache.
    pub from_cache: bool,
    /// Milliseconds spent compiling or loading.
    pub load_ms: u128,
}

/// The numbers of a finished run (`summary.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Suite name.
    pub suite: String,
    /// Target name.
    pub target: String,
    /// The run directory.
    pub run_dir: PathBuf,
    /// The results file.
    pub results: PathBuf,
    /// Tests run.
    pub total: usize,
    /// Tests passed.
    pub passed: usize,
    /// Tests that failed on quality.
    pub quality_failures: usize,
    /// Tests with execution errors.
    pub execution_errors: usize,
    /// Mean test score.
    pub mean_score: f64,
    /// Failed tests per failure class.
    pub failures_by_class: BTreeMap<FailureClass, usize>,
    /// Plugins used.
    pub plugins: Vec<PluginSummary>,
    /// Wall time of the run, in milliseconds.
    pub duration_ms: u128,
}

impl Summary {
    /// Computes the summary of `rows`.
    pub fn new(
        suite: &Suite,
        target: &str,
        run_dir: &Path,
        results: &Path,
        rows: &[ResultRow],
        registry: &Registry,
        took: Duration,
    ) -> Self {
        let count = |s: ExecutionStatus| rows.iter().filter(|r| r.execution_status == s).count();
        let mut failures_by_class = BTreeMap::new();
        for row in rows.iter().filter(|r| !r.passed()) {
            *failures_by_class
                .entry(row.failure_class.unwrap_or(FailureClass::Assertion))
                .or_insert(0) += 1;
        }
        Self {
            suite: suite.name.clone(),
            target: target.to_owned(),
            run_dir: run_dir.to_path_buf(),
            results: results.to_path_buf(),
            total: rows.len(),
            passed: count(ExecutionStatus::Ok),
            quality_failures: count(ExecutionStatus::QualityFailure),
            execution_errors: count(ExecutionStatus::ExecutionError),
            mean_score: if rows.is_empty() {
                0.0
            } else {
                rows.iter().map(|r| r.score).sum::<f64>() / rows.len() as f64
            },
            failures_by_class,
            plugins: registry
                .plugins()
                .iter()
                .map(|p| PluginSummary {
                    name: p.name.clone(),
                    version: p.version.clone(),
                    digest: p.digest.clone(),
                    from_cache: p.compiled.0 == CompileSource::Cache,
                    load_ms: p.compiled.1.as_millis(),
                })
                .collect(),
            duration_ms: took.as_millis(),
        }
    }

    /// Writes `summary.json`.
    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n")
    }

    /// True when every test passed.
    pub fn all_passed(&self) -> bool {
        self.passed == self.total
    }
}

/// One line for a finished test, with its failed checks under it.
pub fn print_progress(out: &mut dyn Write, row: &ResultRow) -> std::io::Result<()> {
    let mark = match row.execution_status {
        ExecutionStatus::Ok => "PASS",
        ExecutionStatus::QualityFailure => "FAIL",
        ExecutionStatus::ExecutionError => "ERROR",
    };
    let class = row
        .failure_class
        .map_or(String::new(), |c| format!("  [{c}]"));
    writeln!(out, "  {mark:<5} {}  {:.2}{class}", row.test_id, row.score)?;
    if let (ExecutionStatus::ExecutionError, Some(error), true) =
        (row.execution_status, &row.error, row.scores.is_empty())
    {
        writeln!(out, "        {error}")?;
    }
    for score in row.scores.iter().filter(|s| s.verdict != Verdict::Pass) {
        let class = score
            .failure_class
            .map_or(String::new(), |c| format!(" [{c}]"));
        writeln!(out, "        ✗ {} ({}){class}", score.name, score.kind)?;
        for check in score.assertions.iter().filter(|c| !c.passed).take(3) {
            writeln!(out, "          {}", one_line(&check.text, 160))?;
        }
    }
    Ok(())
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// The closing summary.
pub fn print_summary(
    out: &mut dyn Write,
    summary: &Summary,
    _rows: &[ResultRow],
) -> std::io::Result<()> {
    writeln!(out)?;
    let verdict = if summary.all_passed() { "PASS" } else { "FAIL" };
    writeln!(
        out,
        "RESULT: {verdict}  {}/{} passed · mean score {:.2} · {} ms",
        summary.passed, summary.total, summary.mean_score, summary.duration_ms
    )?;
    if summary.quality_failures + summary.execution_errors > 0 {
        let classes: Vec<String> = summary
            .failures_by_class
            .iter()
            .map(|(class, n)| format!("{class}: {n}"))
            .collect();
        writeln!(
            out,
            "  {} quality failure(s), {} execution error(s) · by class: {}",
            summary.quality_failures,
            summary.execution_errors,
            classes.join(", ")
        )?;
    }
    writeln!(out, "  results: {}", summary.results.display())?;
    Ok(())
}
