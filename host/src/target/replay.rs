//! The `replay` target: outputs recorded elsewhere, so CI can grade them
//! without calling anything. `fixtures` names a JSONL file (relative to the
//! targets file); each line is `{"id": "<test id>", ...}` with the same
//! fields as a `cli` output file (`text` or `output` messages, `token_usage`,
//! `cost_usd`, `duration_ms`). A `results.jsonl` of an earlier run also works:
//! its `test_id`, `target`, `trial` and `output` are read; when it holds
//! several targets, `target:` says which one to replay, and each trial
//! replays the row of the same trial.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};

use super::{TargetFailure, TargetOutput, cli};
use crate::suite::TestCase;

/// A replay target's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayConfig {
    /// The recordings.
    pub fixtures: PathBuf,
    /// Which recorded target to replay, when they hold several.
    pub target: Option<String>,
}

impl ReplayConfig {
    /// Reads a `replay` entry.
    pub fn parse(entry: &Map<String, Value>, base_dir: &Path) -> Result<Self, (String, String)> {
        let file = entry
            .get("fixtures")
            .or(entry.get("execution_traces"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                (
                    "fixtures".to_owned(),
                    "a `replay` target needs `fixtures` (a JSONL file)".to_owned(),
                )
            })?;
        let target = match entry.get("target") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) => Some(t.clone()),
            Some(_) => {
                return Err((
                    "target".to_owned(),
                    "`target` must be the name of a recorded target".to_owned(),
                ));
            }
        };
        Ok(Self {
            fixtures: base_dir.join(file),
            target,
        })
    }
}

type Recordings = Arc<HashMap<String, Vec<Value>>>;

/// Reads (once per file) the recordings, keyed by test id (every line of
/// that id, in file order).
pub fn recordings(path: &Path) -> Result<Recordings, String> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Recordings>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = cache.get(path) {
        return Ok(r.clone());
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read recordings {}: {e}", path.display()))?;
    let mut map = HashMap::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let value: Value = serde_json::from_str(line)
            .map_err(|e| format!("{}:{}: not valid JSON: {e}", path.display(), n + 1))?;
        let id = value
            .get("id")
            .or(value.get("test_id"))
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{}:{}: a recording needs an `id`", path.display(), n + 1))?
            .to_owned();
        map.entry(id).or_insert_with(Vec::new).push(value);
    }
    let map = Arc::new(map);
    cache.insert(path.to_path_buf(), map.clone());
    Ok(map)
}

/// The recorded output of `test` for `trial` (1-based).
pub fn invoke(
    config: &ReplayConfig,
    test: &TestCase,
    trial: u32,
) -> Result<TargetOutput, TargetFailure> {
    let recordings = recordings(&config.fixtures).map_err(TargetFailure::fatal)?;
    let missing = || {
        TargetFailure::fatal(format!(
            "no recording for test `{}` in {}",
            test.id,
            config.fixtures.display()
        ))
    };
    let all = recordings.get(&test.id).ok_or_else(missing)?;
    let target_of = |r: &Value| r.get("target").and_then(Value::as_str).map(str::to_owned);
    let rows: Vec<&Value> = match &config.target {
        Some(t) => all
            .iter()
            .filter(|r| target_of(r).as_deref() == Some(t.as_str()))
            .collect(),
        None => {
            let mut targets: Vec<String> = all.iter().filter_map(target_of).collect();
            targets.sort();
            targets.dedup();
            if targets.len() > 1 {
                return Err(TargetFailure::fatal(format!(
                    "{} holds test `{}` for several targets ({}): set `target:` on the replay target to say which to replay",
                    config.fixtures.display(),
                    test.id,
                    targets.join(", ")
                )));
            }
            all.iter().collect()
        }
    };
    if rows.is_empty() {
        return Err(TargetFailure::fatal(format!(
            "no recording for test `{}` of target `{}` in {}",
            test.id,
            config.target.as_deref().unwrap_or_default(),
            config.fixtures.display()
        )));
    }
    let trial_of = |r: &Value| r.get("trial").and_then(Value::as_u64);
    // The row of this trial; recordings without trials answer every trial.
    let record = match rows
        .iter()
        .rev()
        .find(|r| trial_of(r) == Some(u64::from(trial)))
    {
        Some(r) => *r,
        None if rows.iter().all(|r| trial_of(r).is_none()) => rows[rows.len() - 1],
        None => {
            return Err(TargetFailure::fatal(format!(
                "{} has no trial {trial} of test `{}`",
                config.fixtures.display(),
                test.id
            )));
        }
    };
    // A results.jsonl row carries the candidate as `output` (a string).
    if let (Some(Value::String(text)), None) = (record.get("output"), record.get("text")) {
        let mut out = TargetOutput::text(text.clone());
        out.duration_ms = record.get("duration_ms").and_then(Value::as_u64);
        return Ok(out);
    }
    Ok(cli::parse_output_file(&record.to_string()))
}
