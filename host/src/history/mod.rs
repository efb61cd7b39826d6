//! Run history: every run directory of a project, indexed in SQLite
//! (`index`), compared with statistics (`compare`, `stats`), followed over
//! time (`trend`) and browsed in the viewer (`crate::view`).
//!
//! The run directories are the source of truth: `run.json` (written when a
//! run starts), `results.jsonl` (a row per finished test, appended as they
//! finish) and `summary.json` (written at the end). The index is built from
//! them and can always be rebuilt (`evalhost runs reindex`); a run killed
//! before its summary is still a run (`interrupted`), with the rows it
//! finished.

pub mod compare;
pub mod index;
pub mod stats;
pub mod trend;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

/// What a run directory says about its run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunInfo {
    /// Its id: the directory's name (with a digest of its path when it is
    /// not in the project's `.evalhost/runs`).
    pub id: String,
    /// The directory, absolute.
    pub dir: String,
    /// The suite's name.
    pub suite: String,
    /// The eval file.
    pub eval: Option<String>,
    /// `agentv4`, `agentv5`, `promptfoo`.
    pub dialect: Option<String>,
    /// The targets.
    pub targets: Vec<String>,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// How long it took, when it finished.
    pub duration_ms: Option<u64>,
    /// `complete`, or `interrupted` (stopped, or killed before its summary).
    pub status: String,
    /// The commit the suite was at.
    pub git_commit: Option<String>,
    /// Uncommitted changes to tracked files.
    pub git_dirty: Option<bool>,
    /// evalhost's version.
    pub evalhost_version: Option<String>,
    /// The plugins it graded with: `name@version sha256:digest`.
    pub plugins: Vec<String>,
    /// Rows (tests × targets × trials) finished.
    pub total: u64,
    /// Tests (test × target) finished: a test's trials are one test.
    #[serde(default)]
    pub tests: u64,
    /// Why the run covers only part of its suite, or under other terms
    /// than a plain run (`--test-id a*`, `--tag x`, `--rerun-failed`,
    /// `--shard 1/2`, `--targets other.yaml`): its numbers are not the
    /// suite's. Empty for a whole run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partial: Vec<String>,
    /// Passed tests.
    pub passed: u64,
    /// Failed tests.
    pub failed: u64,
    /// Tests with an execution error.
    pub errors: u64,
    /// passed / tests.
    pub pass_rate: Option<f64>,
    /// Mean row score.
    pub mean_score: Option<f64>,
    /// Summed cost of the rows that report one.
    pub cost_usd: Option<f64>,
    /// Summed input tokens.
    pub tokens_in: Option<u64>,
    /// Summed output tokens.
    pub tokens_out: Option<u64>,
    /// The run's `--tag` selection.
    pub tags: Vec<String>,
    /// A keyed tag (the per-user key of the compile cache) over the id,
    /// directory and start, made when this machine's evalhost recorded the
    /// run at its end: what `compare --last` trusts. A run directory that
    /// came with a checkout, or an index someone planted, has none that
    /// checks out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
}

impl RunInfo {
    fn seal_of(&self) -> Option<String> {
        crate::user_key::keyed_tag(
            "evalhost-run-recorded-v1",
            &[
                self.id.as_bytes(),
                self.dir.as_bytes(),
                self.started_at.as_bytes(),
            ],
        )
        .ok()
        .map(|t| blake3::Hash::from(t).to_hex().to_string())
    }

    /// Seals the run: this machine's evalhost recorded it at its end.
    pub fn seal(&mut self) {
        self.seal = self.seal_of();
    }

    /// True when the seal checks out.
    pub fn sealed(&self) -> bool {
        match (&self.seal, self.seal_of()) {
            (Some(have), Some(want)) => {
                blake3::Hash::from_hex(have).ok() == blake3::Hash::from_hex(&want).ok()
                    && blake3::Hash::from_hex(have).is_ok()
            }
            _ => false,
        }
    }
}

/// One row of a run, as the index and the viewer list it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RowInfo {
    /// Its position in `results.jsonl`.
    #[serde(skip)]
    pub seq: u64,
    /// The test.
    pub test_id: String,
    /// The target.
    pub target: String,
    /// The trial (0 when the run had one).
    pub trial: u32,
    /// `passed`, `failed`, `error`, ….
    pub status: String,
    /// Its score.
    pub score: Option<f64>,
    /// Its threshold.
    pub threshold: Option<f64>,
    /// The test's tags.
    pub tags: Vec<String>,
    /// Its cost.
    pub cost_usd: Option<f64>,
    /// How long the target took.
    pub duration_ms: Option<u64>,
    /// Why it errored.
    pub error: Option<String>,
    /// Searchable text: the input and the output, shortened.
    pub text: String,
    /// The whole row, as written.
    #[serde(skip)]
    pub row: Value,
}

/// A run directory read.
#[derive(Debug, Clone)]
pub struct Run {
    /// Its facts.
    pub info: RunInfo,
    /// Its rows, in file order.
    pub rows: Vec<RowInfo>,
}

/// Why a run directory could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// No `run.json`: not a run directory (or one killed before it started).
    #[error("{0} is not a run directory (it has no run.json)")]
    NotARun(PathBuf),
    /// A file that could not be read or parsed.
    #[error("{path}: {message}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// The id of the run in `dir` for the project whose runs live in
/// `runs_dir`.
pub fn run_id(dir: &Path, runs_dir: &Path) -> String {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if canon(dir).parent() == Some(canon(runs_dir).as_path()) {
        name
    } else {
        let digest = blake3::hash(canon(dir).to_string_lossy().as_bytes()).to_hex();
        format!("{name}-{}", &digest[..8])
    }
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join(" "),
        Value::Object(map) => map
            .iter()
            .filter(|(k, _)| matches!(k.as_str(), "content" | "text" | "value"))
            .map(|(_, v)| text_of(v))
            .collect::<Vec<_>>()
            .join(" "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn shortened(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn row_info(seq: u64, row: Value) -> Option<RowInfo> {
    let test_id = row["test_id"].as_str()?.to_owned();
    let target = row["target"].as_str().unwrap_or("").to_owned();
    let text = shortened(
        &format!("{} {}", text_of(&row["input"]), text_of(&row["output"])),
        2000,
    );
    Some(RowInfo {
        seq,
        test_id,
        target,
        trial: row["trial"]
            .as_u64()
            .and_then(|t| u32::try_from(t).ok())
            .unwrap_or(0),
        status: row["status"].as_str().unwrap_or("unknown").to_owned(),
        score: row["score"].as_f64(),
        threshold: row["threshold"].as_f64(),
        tags: row["tags"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        cost_usd: row["cost_usd"].as_f64(),
        duration_ms: row["duration_ms"].as_u64(),
        error: row["error"].as_str().map(str::to_owned),
        text,
        row,
    })
}

/// The largest `run.json` or `summary.json` read back.
const MAX_RECORD: u64 = 64 << 20;

/// The longest line of `results.jsonl` read back (as `--resume` reads it).
const MAX_ROW: u64 = 256 << 20;

/// What the index takes from `summary.json`. Read field by field: its
/// `tests` (one entry per test, 100,000 in a large run) are skipped, never
/// built in memory. A field of another type reads as absent, as an
/// unreadable summary does.
#[derive(Debug, Default, serde::Deserialize)]
struct SummaryFacts {
    #[serde(default, deserialize_with = "lenient")]
    suite: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    passed: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    failed: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    errors: Option<u64>,
    /// Expected failures that failed: successes, as the run counted them.
    #[serde(default, deserialize_with = "lenient")]
    expected_failed: Option<u64>,
    /// Expected failures that passed: failures.
    #[serde(default, deserialize_with = "lenient")]
    unexpected_passed: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    interrupted: Option<bool>,
    #[serde(default, deserialize_with = "lenient")]
    duration_ms: Option<u64>,
    #[serde(default, deserialize_with = "lenient_list")]
    plugins: Vec<PluginFacts>,
}

/// A plugin as `summary.json` lists it.
#[derive(Debug, Default, serde::Deserialize)]
struct PluginFacts {
    #[serde(default, deserialize_with = "lenient")]
    name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    version: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    digest: Option<String>,
}

/// A value of the expected type, else absent (as `value["key"].as_u64()`).
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = <Value as serde::Deserialize>::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}

/// A list whose entries are objects, else empty; entries of another kind
/// are left out.
fn lenient_list<'de, D>(d: D) -> Result<Vec<PluginFacts>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let value = <Value as serde::Deserialize>::deserialize(d)?;
    Ok(match value {
        Value::Array(items) => items
            .into_iter()
            .filter(Value::is_object)
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect(),
        _ => Vec::new(),
    })
}

/// `summary.json`'s facts; `None` when it is missing or unreadable (the
/// run then counts as interrupted, its counts from its rows).
fn read_summary(path: &Path) -> Option<SummaryFacts> {
    let text = crate::safe_fs::read_text_capped(path, MAX_RECORD).ok()?;
    serde_json::from_str(&text).ok()
}

fn read_json(path: &Path) -> Result<Option<Value>, RunDirError> {
    // Capped, a regular file, not through a link: a run directory may
    // come from an untrusted checkout (`results.jsonl -> /dev/zero`).
    match crate::safe_fs::read_text_capped(path, MAX_RECORD) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| RunDirError::Unreadable {
                path: path.to_path_buf(),
                message: e.to_string(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(RunDirError::Unreadable {
            path: path.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

/// The rows of `results.jsonl`, read line by line (each line capped), not
/// through a link; a torn last line is skipped. A row that breaks the row
/// checks of `merge` and `--resume` (a score that is not a finite number in
/// [0, 1], a trial of 0) makes the run unreadable: history never shows a
/// number a run cannot have produced.
fn read_rows(results: &Path, keep: bool) -> Result<Rows, RunDirError> {
    use std::io::{BufRead as _, Read as _};
    let unreadable = |message: String| RunDirError::Unreadable {
        path: results.to_path_buf(),
        message,
    };
    let file = match crate::safe_fs::open_read(results) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Rows::default()),
        Err(e) => return Err(unreadable(e.to_string())),
    };
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let mut rows = Rows::default();
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_ROW + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| unreadable(e.to_string()))?;
        if read == 0 {
            break;
        }
        number += 1;
        if line.len() as u64 > MAX_ROW {
            return Err(unreadable(format!(
                "line {number} is longer than {MAX_ROW} bytes"
            )));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // Only the facts a run's summary needs, unless the rows are kept
        // (`runs show`, the viewer): recording a run at its end reads no
        // more of each line than that.
        let Ok(facts) = serde_json::from_slice::<Facts<'_>>(&line) else {
            // A torn line (a run killed while writing) is skipped.
            continue;
        };
        // A score outside [0, 1] only where an assertion reported one
        // (promptfoo's raw scores, `details.raw_score`): the scores are
        // read only then.
        let raw = || {
            facts
                .scores
                .and_then(|s| serde_json::from_str::<Value>(s.get()).ok())
                .and_then(|s| s.as_array().cloned())
                .is_some_and(|s| s.iter().any(|s| s.pointer("/details/raw_score").is_some()))
        };
        if let Some(score) = facts.score.as_ref().filter(|v| !v.is_null()) {
            match score.as_f64() {
                Some(x) if x.is_finite() && ((0.0..=1.0).contains(&x) || raw()) => {}
                _ => {
                    return Err(unreadable(format!(
                        "line {number}: score {score} is not a number in [0, 1] (nor an assertion's own score)"
                    )));
                }
            }
        }
        if facts.trial.as_ref().and_then(Value::as_u64) == Some(0) {
            return Err(unreadable(format!(
                "line {number}: trial 0 (trials count from 1)"
            )));
        }
        let text = |v: Option<Value>| match v {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        let Some(test_id) = text(facts.test_id) else {
            continue;
        };
        let status = text(facts.status);
        if keep
            && let Ok(value) = serde_json::from_slice::<Value>(&line)
            && let Some(row) = row_info(rows.facts.len() as u64, value)
        {
            rows.kept.push(row);
        }
        if rows.suite.is_none() {
            rows.suite = text(facts.suite);
        }
        rows.facts.push(RowFacts {
            test_id,
            target: text(facts.target).unwrap_or_default(),
            // An expected failure that failed is a success, as the run's
            // own tally counts it (`compare` too).
            passed: matches!(status.as_deref(), Some("passed" | "expected-failed")),
            error: status.as_deref() == Some("error"),
            score: facts.score.as_ref().and_then(Value::as_f64),
            cost_usd: facts.cost_usd.as_ref().and_then(Value::as_f64),
            tokens: facts
                .token_usage
                .map(|t| (t["input"].as_u64(), t["output"].as_u64())),
        });
    }
    Ok(rows)
}

/// What a line of `results.jsonl` says that a run's summary needs (the
/// rest of the line is skipped, not built; the scores kept as text, read
/// only when a row's score needs them).
#[derive(serde::Deserialize)]
struct Facts<'a> {
    test_id: Option<Value>,
    target: Option<Value>,
    trial: Option<Value>,
    status: Option<Value>,
    score: Option<Value>,
    cost_usd: Option<Value>,
    token_usage: Option<Value>,
    suite: Option<Value>,
    #[serde(borrow)]
    scores: Option<&'a serde_json::value::RawValue>,
}

/// One row as a run's summary counts it.
struct RowFacts {
    test_id: String,
    target: String,
    passed: bool,
    error: bool,
    score: Option<f64>,
    cost_usd: Option<f64>,
    tokens: Option<(Option<u64>, Option<u64>)>,
}

/// The rows of a run: their facts, the first row's suite, and (when asked)
/// the rows themselves.
#[derive(Default)]
struct Rows {
    facts: Vec<RowFacts>,
    suite: Option<String>,
    kept: Vec<RowInfo>,
}

/// When the run started: `run.json`'s `started_at` when it is a timestamp
/// no later than the file itself was last written (a run directory that
/// came with a checkout cannot date itself into the future and become the
/// "latest" run), else that time.
fn started_at(record: &Value, run_json: &Path) -> String {
    let written = std::fs::symlink_metadata(run_json)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| jiff::Timestamp::try_from(t).ok())
        .unwrap_or_else(jiff::Timestamp::now)
        .min(jiff::Timestamp::now());
    match record["started_at"]
        .as_str()
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
    {
        // A second of slack for file systems that round times.
        Some(t) if t <= written + jiff::SignedDuration::from_secs(1) => t.to_string(),
        _ => written.to_string(),
    }
}

/// Why the run recorded in `record` (its `run.json`) covers only part of
/// its suite, or ran it under other terms (another targets file).
fn partial_of(record: &serde_json::Value) -> Vec<String> {
    let mut why = Vec::new();
    let list = |key: &str| -> Vec<String> {
        record[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x.as_str().map(|s| crate::text::shown(s).into_owned()))
            .collect()
    };
    if !list("test_ids").is_empty() {
        why.push(format!("--test-id {}", list("test_ids").join(",")));
    }
    if !list("tags").is_empty() {
        why.push(format!("--tag {}", list("tags").join(",")));
    }
    if record["only"].is_array() {
        why.push("--rerun-failed".to_owned());
    }
    if let Some(shard) = record["shard"].as_str() {
        why.push(format!("--shard {}", crate::text::shown(shard)));
    }
    if let Some(file) = record["targets_file"].as_str()
        && record["targets_file_found"].as_bool() != Some(true)
    {
        let name = Path::new(file)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        why.push(format!("--targets {name}"));
    }
    if record["regrade_of"].is_string() {
        why.push("regrade".to_owned());
    }
    why
}

/// The tests of `rows` (test id and target), each once, with its verdict:
/// passed when every trial passed, an error when any trial is one, else
/// failed.
fn test_verdicts(rows: &[RowFacts]) -> (u64, u64, u64, u64) {
    let mut tests: std::collections::HashMap<(&str, &str), (bool, bool)> = Default::default();
    for r in rows {
        let e = tests
            .entry((r.test_id.as_str(), r.target.as_str()))
            .or_insert((true, false));
        e.0 &= r.passed;
        e.1 |= r.error;
    }
    let total = tests.len() as u64;
    let errors = tests.values().filter(|(_, err)| *err).count() as u64;
    let passed = tests.values().filter(|(ok, err)| *ok && !*err).count() as u64;
    (total, passed, total - passed - errors, errors)
}

/// Reads the run in `dir`. A torn last line of `results.jsonl` (a run
/// killed while writing) is skipped; a missing `summary.json` makes the
/// run `interrupted`, its counts taken from its rows. Every file is read
/// capped and not through a link.
pub fn read_run(dir: &Path, runs_dir: &Path) -> Result<Run, RunDirError> {
    scan_run(dir, runs_dir, true).map(|(info, rows)| Run { info, rows })
}

/// The facts of the run in `dir` without its rows (what the index records):
/// each line of `results.jsonl` read for the few fields a summary needs,
/// none kept — memory does not grow with the run.
pub fn read_run_info(dir: &Path, runs_dir: &Path) -> Result<RunInfo, RunDirError> {
    scan_run(dir, runs_dir, false).map(|(info, _)| info)
}

fn scan_run(
    dir: &Path,
    runs_dir: &Path,
    keep: bool,
) -> Result<(RunInfo, Vec<RowInfo>), RunDirError> {
    let Some(record) = read_json(&dir.join("run.json"))? else {
        return Err(RunDirError::NotARun(dir.to_path_buf()));
    };
    let summary = read_summary(&dir.join("summary.json"));
    let Rows {
        facts: rows,
        suite: first_suite,
        kept,
    } = read_rows(&dir.join("results.jsonl"), keep)?;
    let strs = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let total = rows.len() as u64;
    let scores: Vec<f64> = rows.iter().filter_map(|r| r.score).collect();
    let sum_opt = |f: &dyn Fn(&RowFacts) -> Option<f64>| {
        let v: Vec<f64> = rows.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>())
    };
    let tokens = |output: bool| {
        let v: Vec<u64> = rows
            .iter()
            .filter_map(|r| r.tokens.and_then(|(i, o)| if output { o } else { i }))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<u64>())
    };
    let summary_ref = summary.as_ref();
    let interrupted = summary_ref.is_none_or(|s| s.interrupted == Some(true));
    // Counts of tests (not rows: a test of three trials is one test). The
    // summary's, when they add up to the tests the rows hold (it combined
    // trials by the suite's own rule); else counted from the rows — a
    // summary that claims more than its rows is not believed.
    let (tests, row_passed, row_failed, row_errors) = test_verdicts(&rows);
    let from_summary = summary_ref.and_then(|s| {
        let (p, f, e) = (s.passed?, s.failed?, s.errors.unwrap_or(0));
        let (xf, xp) = (
            s.expected_failed.unwrap_or(0),
            s.unexpected_passed.unwrap_or(0),
        );
        let sum = p
            .checked_add(f)?
            .checked_add(e)?
            .checked_add(xf)?
            .checked_add(xp)?;
        // An expected failure is a success, an unexpected pass a failure,
        // as the run printed them.
        (sum == tests).then_some((p + xf, f + xp, e))
    });
    let (passed, failed, errors) = from_summary.unwrap_or((row_passed, row_failed, row_errors));
    let info = RunInfo {
        id: run_id(dir, runs_dir),
        dir: std::path::absolute(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .display()
            .to_string(),
        suite: summary_ref
            .and_then(|s| s.suite.clone())
            .or(first_suite)
            .or_else(|| {
                record["eval"]
                    .as_str()
                    .and_then(|e| Path::new(e).file_stem())
                    .map(|s| s.to_string_lossy().into_owned())
            })
            .unwrap_or_default(),
        eval: record["eval"].as_str().map(str::to_owned),
        dialect: record["dialect"].as_str().map(str::to_owned),
        targets: {
            let t = strs(&record["targets"]);
            if t.is_empty() {
                record["target"]
                    .as_str()
                    .map(|t| vec![t.to_owned()])
                    .unwrap_or_default()
            } else {
                t
            }
        },
        started_at: started_at(&record, &dir.join("run.json")),
        duration_ms: summary_ref.and_then(|s| s.duration_ms),
        status: if interrupted {
            "interrupted"
        } else {
            "complete"
        }
        .to_owned(),
        git_commit: record["git_commit"].as_str().map(str::to_owned),
        git_dirty: record["git_dirty"].as_bool(),
        evalhost_version: record["evalhost_version"].as_str().map(str::to_owned),
        plugins: summary_ref
            .map(|s| {
                s.plugins
                    .iter()
                    .map(|p| {
                        format!(
                            "{}@{} sha256:{}",
                            p.name.as_deref().unwrap_or("?"),
                            p.version.as_deref().unwrap_or("?"),
                            p.digest.as_deref().unwrap_or("?")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        total,
        tests,
        partial: partial_of(&record),
        passed,
        failed,
        errors,
        pass_rate: (tests > 0).then(|| passed as f64 / tests as f64),
        mean_score: (!scores.is_empty()).then(|| scores.iter().sum::<f64>() / scores.len() as f64),
        cost_usd: sum_opt(&|r| r.cost_usd),
        tokens_in: tokens(false),
        tokens_out: tokens(true),
        tags: strs(&record["tags"]),
        seal: None,
    };
    Ok((info, kept))
}

/// The run directories under `runs_dir`, oldest first (by name: names are
/// start times).
pub fn run_dirs(runs_dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(runs_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("run.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// The project directory (the one holding `.evalhost/`) for `start`: the
/// nearest ancestor with `.evalhost/`, else the git root, else `start`.
pub fn project_of(start: &Path) -> PathBuf {
    let start = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
    if let Some(d) = start.ancestors().find(|d| d.join(".evalhost").is_dir()) {
        return d.to_path_buf();
    }
    if let Some(d) = start.ancestors().find(|d| d.join(".git").exists()) {
        return d.to_path_buf();
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_facts_read_without_its_rows_are_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("runs").join("20261128T000000");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(
            run.join("run.json"),
            r#"{"eval": "evals/x.yaml", "targets": ["a", "b"], "started_at": "2026-11-28T00:00:00Z"}"#,
        )
        .unwrap();
        let row = |test: &str, target: &str, trial: u32, status: &str, score: f64| {
            format!(
                r#"{{"test_id":"{test}","suite":"s","target":"{target}","trial":{trial},"status":"{status}","score":{score},"cost_usd":0.5,"token_usage":{{"input":10,"output":3}},"input":[{{"role":"user","content":"q"}}],"output":"a long answer","scores":[]}}"#
            )
        };
        let lines = [
            row("t1", "a", 1, "passed", 1.0),
            row("t1", "a", 2, "failed", 0.0),
            row("t2", "a", 1, "passed", 0.75),
            row("t2", "b", 1, "error", 0.0),
            r#"{"test_id":"t3","target":"a","score":26,"status":"passed","scores":[{"details":{"raw_score":26}}]}"#.to_owned(),
            r#"{"test_id":"torn"#.to_owned(),
        ];
        std::fs::write(run.join("results.jsonl"), lines.join("\n")).unwrap();
        let runs_dir = dir.path().join("runs");
        let full = read_run(&run, &runs_dir).unwrap();
        let info = read_run_info(&run, &runs_dir).unwrap();
        assert_eq!(info, full.info);
        assert_eq!(full.rows.len(), 5);
        assert_eq!((info.total, info.tests), (5, 4));
        assert_eq!((info.passed, info.failed, info.errors), (2, 1, 1));
        assert_eq!(info.suite, "s");
        assert_eq!(info.cost_usd, Some(2.0));
        assert_eq!((info.tokens_in, info.tokens_out), (Some(40), Some(12)));
        assert_eq!(info.status, "interrupted");
        // A score outside [0, 1] that no assertion reported: unreadable,
        // whichever way the run is read.
        std::fs::write(
            run.join("results.jsonl"),
            r#"{"test_id":"t","target":"a","score":7,"status":"passed","scores":[]}"#,
        )
        .unwrap();
        assert!(read_run_info(&run, &runs_dir).is_err());
        assert!(read_run(&run, &runs_dir).is_err());
    }
}
