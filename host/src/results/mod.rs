//! Result rows and the `results.jsonl` writer.
//!
//! One JSON object per (test, target), appended and flushed as soon as it is
//! graded, so a crash or Ctrl-C loses nothing already graded. Field names
//! follow AgentV's `index.jsonl` (`test_id`, `suite`, `target`, `score`,
//! `execution_status`, `scores[]` with `name`, `type`, `score`, `weight`,
//! `verdict`, `assertions`), plus evalhost's `failure_class` and, per score,
//! `plugin` and `plugin_digest`.

mod check;
pub mod output;
pub mod usage;

pub use check::raw_score;

use crate::safe_fs::AtomicFile;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::failure::FailureClass;

/// True when `score` reaches `threshold`. Scores are sums and means of
/// floats: (1 + 1 + 0.4) / 3 is 0.7999999999999999, which a person reads as
/// 0.8; a difference below 1e-9 counts as reaching the threshold.
pub fn reaches(score: f64, threshold: f64) -> bool {
    score + 1e-9 >= threshold
}

/// The weighted mean of the scores that were graded (not skipped); 0 when
/// none weighs anything. The test score before gates, as the host computes
/// it and as a row read back must show it.
pub fn weighted_mean(scores: &[ScoreRow]) -> f64 {
    let (total, weights) = scores
        .iter()
        .filter(|s| s.verdict != Verdict::Skip)
        .fold((0.0, 0.0), |(t, w), s| {
            (t + s.score * s.weight, w + s.weight)
        });
    if weights > 0.0 { total / weights } else { 0.0 }
}

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

/// A test's outcome, with expected failures applied (skillgym's statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Passed.
    Passed,
    /// Failed on quality.
    Failed,
    /// Could not be graded (an execution error).
    Error,
    /// Failed, and `expected_fail: true` said it would: counts as passing.
    ExpectedFailed,
    /// Passed although `expected_fail: true`: fails the run.
    UnexpectedPassed,
}

impl Status {
    /// True for the statuses that let a run succeed.
    pub fn is_success(self) -> bool {
        matches!(self, Self::Passed | Self::ExpectedFailed)
    }

    /// The status of a graded result.
    pub fn of(execution_status: ExecutionStatus, expected_fail: bool) -> Self {
        match (execution_status, expected_fail) {
            (ExecutionStatus::ExecutionError, _) => Self::Error,
            (ExecutionStatus::Ok, false) => Self::Passed,
            (ExecutionStatus::Ok, true) => Self::UnexpectedPassed,
            (ExecutionStatus::QualityFailure, false) => Self::Failed,
            (ExecutionStatus::QualityFailure, true) => Self::ExpectedFailed,
        }
    }

    /// Its name in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Error => "error",
            Self::ExpectedFailed => "expected-failed",
            Self::UnexpectedPassed => "unexpected-passed",
        }
    }
}

pub use evalhost_suite::model::Strategy;

/// Where a test was written, for annotations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRef {
    /// The file, as shown to the user.
    pub file: String,
    /// The line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
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

/// The prompt template a row's test was rendered from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptRow {
    /// Its label.
    pub label: String,
    /// Its id (a `file://` path), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
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
    /// What an `equals` that failed expected, for the diff the terminal
    /// and the report show against the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// Time spent grading, in microseconds.
    pub duration_us: u64,
    /// The judge calls of this assertion (LLM graders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<usage::JudgeUsage>,
    /// The members' scores, for a `composite` or `assert-set`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<ScoreRow>,
}

/// A `required` assertion below its gate, which set the test's score to 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    /// The assertion's name.
    pub assertion: String,
    /// What it scored.
    pub score: f64,
    /// The score it had to reach.
    pub min_score: f64,
}

impl Gate {
    /// The sentence every view shows.
    pub fn explain(&self) -> String {
        format!(
            "required assertion `{}` scored {:.2} < {:.2}: test score set to 0",
            self.assertion, self.score, self.min_score
        )
    }
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
    /// The test's position in the suite (for ordering merged shards).
    pub test_index: usize,
    /// The trial, 1-based, when the test runs more than once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    /// How many trials the test runs, when more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<u32>,
    /// How the trials combine, when more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
    /// The outcome, with `expected_fail` applied.
    pub status: Status,
    /// True when the case says it is expected to fail.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expected_fail: bool,
    /// The case's tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The case's `conversation_id`, as AgentV carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// Where the case was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceRef>,
    /// Test score in [0, 1].
    pub score: f64,
    /// The threshold the score was held to; none when the test passes by
    /// another rule (`pass_rule`: promptfoo's every assertion passing),
    /// so that no reader holds the score to a number that decided nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// ok, quality_failure or execution_error.
    /// The `required` assertion that zeroed the score, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gated: Option<Gate>,
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
    /// Wall time of the whole case (target and grading), in milliseconds.
    #[serde(default)]
    pub wall_ms: u64,
    /// Tokens the target reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<output::TokenUsage>,
    /// Cost the target reported, in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Model calls the target made, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_calls: Option<u32>,
    /// True when the answer came from the response cache (`--cache`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// Every message the target produced, when there is more to them than
    /// `output` (tool calls, several turns): kept so `regrade` sees them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_messages: Vec<output::OutputMessage>,
    /// The fallback target that answered, when the primary failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_used: Option<String>,
    /// Why the model stopped, as the target reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The output tokens' log-probabilities, when the target returned them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<f64>>,
    /// The agent's own transcript (its stream as it wrote it), saved in
    /// the run directory: its path there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// Every failed target attempt that was tried again (or handed to a
    /// fallback), in order, with why and how long evalhost waited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<output::Retry>,
    /// A unified diff of what the target changed in the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_changes: Option<String>,
    /// The case's workspace, when it was kept (failed, or --keep-workspaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_path: Option<String>,
    /// How the case's processes were confined (`--isolate`) and what the
    /// sandbox refused them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<usage::SandboxRow>,
    /// What the case's hooks printed and how they failed.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub hooks: std::collections::BTreeMap<String, usage::HookRow>,
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
    /// For a test made from a prompt template (promptfoo): which prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<PromptRow>,
    /// `all-pass` when the test passes only if every assertion passes
    /// (promptfoo's rule without a threshold), not by its score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_rule: Option<String>,
    /// The candidate output that was graded.
    pub output: String,
    /// The target's output before a transform rewrote it into `output`
    /// (promptfoo's `options.transform`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untransformed_output: Option<String>,
    /// Per-assertion results.
    pub scores: Vec<ScoreRow>,
}

impl ResultRow {
    /// True when the row counts as a success.
    pub fn passed(&self) -> bool {
        self.status.is_success()
    }

    /// The identity of the row: (test, target, trial).
    pub fn key(&self) -> (String, String, u32) {
        (
            self.test_id.clone(),
            self.target.clone(),
            self.trial.unwrap_or(1),
        )
    }
}

/// Appends rows to `results.jsonl`: buffered, and handed to the OS at least
/// every [`FLUSH_EVERY`] (and when the buffer fills), so a crash loses at
/// most that much work — `--resume` runs it again — and a fast run does not
/// make one `write` per row.
#[derive(Debug)]
pub struct ResultsWriter {
    path: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    flushed: std::time::Instant,
    /// The place in suite order, offset and length of every row in the
    /// file, when this writer wrote them all (the file was empty when
    /// opened): sorting then needs no second reading.
    places: Option<Vec<(PlaceKey, u64, usize)>>,
    /// Bytes in the file, flushed or not.
    len: u64,
}

/// A row's place in suite order: test index, target, trial.
type PlaceKey = (usize, String, u32);

/// The longest a finished row waits in memory before it is written.
pub const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

impl ResultsWriter {
    /// Opens (creating) `dir/results.jsonl` for appending.
    pub fn create(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("results.jsonl");
        let file = crate::safe_fs::open_append(&path)?;
        let len = file.metadata()?.len();
        Ok(Self {
            path,
            file: std::io::BufWriter::with_capacity(64 << 10, file),
            flushed: std::time::Instant::now(),
            places: (len == 0).then(Vec::new),
            len,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one row.
    pub fn append(&mut self, row: &ResultRow) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(row).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        if let Some(places) = &mut self.places {
            let key = (row.test_index, row.target.clone(), row.trial.unwrap_or(1));
            places.push((key, self.len, line.len()));
        }
        self.len += line.len() as u64;
        if self.flushed.elapsed() >= FLUSH_EVERY {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes every buffered row to the file.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.flushed = std::time::Instant::now();
        self.file.flush()
    }
}

/// Where one row is in the file, and its place in suite order.
#[derive(Debug, serde::Deserialize)]
struct RowPlace {
    test_index: usize,
    target: String,
    #[serde(default)]
    trial: Option<u32>,
}

impl ResultsWriter {
    /// Rewrites the file with `rows` in this order (the suite's), atomically.
    pub fn rewrite_in_order(&mut self, rows: &[ResultRow]) -> std::io::Result<()> {
        self.flush()?;
        let mut out = std::io::BufWriter::new(AtomicFile::create(&self.path)?);
        for row in rows {
            serde_json::to_writer(&mut out, row).map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
        }
        self.replace_with(out)
    }

    /// Puts the rows already in the file in suite order (test, target,
    /// trial), atomically, without holding them in memory: during the run
    /// rows are appended as they complete, so a crash loses nothing; at the
    /// end they are sorted. Lines that do not parse are dropped.
    pub fn sort_in_place(&mut self) -> std::io::Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        self.flush()?;
        let mut places = match self.places.take() {
            Some(places) => places,
            None => self.read_places()?,
        };
        let sorted = places.windows(2).all(|w| w[0].0 <= w[1].0);
        if sorted {
            self.places = Some(places);
            return Ok(());
        }
        places.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = std::io::BufWriter::with_capacity(256 << 10, AtomicFile::create(&self.path)?);
        let mut source = crate::safe_fs::open_read(&self.path)?;
        let mut buf = Vec::new();
        for (_, offset, len) in &places {
            source.seek(SeekFrom::Start(*offset))?;
            buf.resize(*len, 0);
            source.read_exact(&mut buf)?;
            if !buf.ends_with(b"\n") {
                buf.push(b'\n');
            }
            out.write_all(&buf)?;
        }
        self.replace_with(out)
    }

    /// The place of every row in the file, read from it (lines that do not
    /// parse are left out).
    fn read_places(&self) -> std::io::Result<Vec<(PlaceKey, u64, usize)>> {
        use std::io::{BufRead, Read};
        let mut places = Vec::new();
        let mut reader =
            std::io::BufReader::with_capacity(256 << 10, crate::safe_fs::open_read(&self.path)?);
        let mut line = String::new();
        let mut offset = 0u64;
        loop {
            line.clear();
            let n = (&mut reader).take(MAX_LINE + 1).read_line(&mut line)?;
            if n == 0 {
                break;
            }
            if n as u64 > MAX_LINE {
                return Err(line_too_long(&self.path));
            }
            if let Ok(p) = serde_json::from_str::<RowPlace>(line.trim_end()) {
                places.push(((p.test_index, p.target, p.trial.unwrap_or(1)), offset, n));
            }
            offset += n as u64;
        }
        Ok(places)
    }

    fn replace_with(&mut self, out: std::io::BufWriter<AtomicFile>) -> std::io::Result<()> {
        out.into_inner().map_err(|e| e.into_error())?.commit()?;
        let file = crate::safe_fs::open_append(&self.path)?;
        // Rows appended from here on are sorted by reading the file.
        self.len = file.metadata()?.len();
        self.places = None;
        self.file = std::io::BufWriter::with_capacity(64 << 10, file);
        Ok(())
    }
}

/// The longest line of `results.jsonl` read back (a row holds the output,
/// the input and every check: generous, but bounded).
pub const MAX_LINE: u64 = 256 << 20;

/// The largest `results.jsonl` read whole into memory ([`read_rows`]).
pub const MAX_RESULTS_FILE: u64 = 4 << 30;

fn line_too_long(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "{}: a line is longer than {} MiB; this is not a results file evalhost wrote",
            path.display(),
            MAX_LINE >> 20
        ),
    )
}

/// Calls `f` with each complete row of `results.jsonl`, in file order,
/// reading one line at a time (not through a link, a regular file only,
/// lines of at most [`MAX_LINE`] bytes). Returns how many lines did not
/// parse.
pub fn for_each_row(path: &Path, mut f: impl FnMut(ResultRow)) -> std::io::Result<usize> {
    let mut dropped = 0;
    for_each_line(path, |parsed| match parsed {
        Ok(row) => f(row),
        Err(_) => dropped += 1,
    })?;
    Ok(dropped)
}

/// Which test and target a row is for.
#[derive(Debug, Deserialize)]
pub struct RowKey {
    /// The test's id.
    pub test_id: String,
    /// The target's name.
    pub target: String,
}

/// Like [`for_each_row`], but hands `f` each row as written (JSON text,
/// checked to be JSON) with its test and target, without building it: for
/// the reports, which copy most rows through unchanged.
pub fn for_each_raw_row(
    path: &Path,
    mut f: impl FnMut(RowKey, Box<serde_json::value::RawValue>),
) -> std::io::Result<()> {
    for_each_text_line(path, |text| {
        if let Some(text) = text
            && let Ok(raw) = serde_json::from_str::<Box<serde_json::value::RawValue>>(text)
            && let Ok(key) = serde_json::from_str::<RowKey>(raw.get())
        {
            f(key, raw);
        }
    })
}

/// Like [`for_each_row`], but hands every non-blank line to `f`: the row,
/// or why it is not one.
pub fn for_each_line(
    path: &Path,
    mut f: impl FnMut(Result<ResultRow, String>),
) -> std::io::Result<()> {
    for_each_text_line(path, |text| match text {
        Some(text) => f(serde_json::from_str(text).map_err(|e| e.to_string())),
        None => f(Err("not valid UTF-8".into())),
    })
}

/// Every non-blank line of `path` (`None` for one that is not UTF-8).
fn for_each_text_line(path: &Path, mut f: impl FnMut(Option<&str>)) -> std::io::Result<()> {
    use std::io::{BufRead, Read};
    let mut reader = std::io::BufReader::with_capacity(256 << 10, crate::safe_fs::open_read(path)?);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        if n as u64 > MAX_LINE {
            return Err(line_too_long(path));
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            f(None);
            continue;
        };
        if text.trim().is_empty() {
            continue;
        }
        f(Some(text));
    }
    Ok(())
}

/// Reads `results.jsonl`: every complete row, and how many lines were
/// dropped because they did not parse (a torn last line after a crash).
/// The file must be a regular file of at most [`MAX_RESULTS_FILE`] bytes.
pub fn read_rows(path: &Path) -> std::io::Result<(Vec<ResultRow>, usize)> {
    let size = crate::safe_fs::open_read(path)?.metadata()?.len();
    if size > MAX_RESULTS_FILE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} is larger than {} GiB",
                path.display(),
                MAX_RESULTS_FILE >> 30
            ),
        ));
    }
    let mut rows = Vec::new();
    let dropped = for_each_row(path, |row| rows.push(row))?;
    Ok((rows, dropped))
}

/// Cuts a torn last line (one without its newline) off `path`, so that rows
/// appended after a crash start on a line of their own. Returns true when
/// something was cut.
pub fn repair_torn_tail(path: &Path) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = crate::safe_fs::open_read(path)?;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    // Look back from the end for the last newline, a block at a time.
    let mut end = len;
    let mut buf = vec![0u8; 64 << 10];
    let mut keep = 0;
    let mut last = true;
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        if last && chunk.last() == Some(&b'\n') {
            return Ok(false);
        }
        last = false;
        if let Some(i) = chunk.iter().rposition(|b| *b == b'\n') {
            keep = start + i as u64 + 1;
            break;
        }
        end = start;
    }
    let file = crate::safe_fs::open_write(path)?;
    file.set_len(keep)?;
    file.sync_all()?;
    Ok(true)
}

#[cfg(test)]
mod tests;
