//! The `replay` target: outputs recorded elsewhere, so CI can grade them
//! without calling anything. `fixtures` names a JSONL file (relative to the
//! targets file); each line is `{"id": "<test id>", ...}` with the same
//! fields as a `cli` output file (`text` or `output` messages, `token_usage`,
//! `cost_usd`, `duration_ms`). A `results.jsonl` of an earlier run also works:
//! its `test_id`, `target`, `trial` and `output` are read; when it holds
//! several targets, `target:` says which one to replay, and each trial
//! replays the row of the same trial. `transcripts` names AgentV 5's
//! normalized transcript JSONL instead (a line per message, grouped by
//! `test_id` and `target`).

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
    /// `fixtures` is AgentV's normalized transcript JSONL (`transcripts:`,
    /// `agentv.transcript.v1`): one line per message of a recorded
    /// trajectory, grouped by `test_id` and `target`.
    pub transcripts: bool,
}

impl ReplayConfig {
    /// Reads a `replay` entry.
    pub fn parse(entry: &Map<String, Value>, base_dir: &Path) -> Result<Self, (String, String)> {
        // Exactly one source, as AgentV 5's replay provider requires.
        let sources: Vec<&str> = ["fixtures", "execution_traces", "transcripts"]
            .into_iter()
            .filter(|k| entry.get(*k).is_some_and(|v| !v.is_null()))
            .collect();
        let source = match sources[..] {
            [one] => one,
            [] => {
                return Err((
                    "fixtures".to_owned(),
                    "a `replay` target needs `fixtures` (a JSONL file), or `transcripts` (AgentV's transcript JSONL)".to_owned(),
                ));
            }
            _ => {
                return Err((
                    sources[1].to_owned(),
                    format!(
                        "a `replay` target takes exactly one of `fixtures`, `execution_traces` and `transcripts`, got {}",
                        sources.join(" and ")
                    ),
                ));
            }
        };
        let file = entry[source].as_str().ok_or_else(|| {
            (
                source.to_owned(),
                format!("`{source}` must be the path of a JSONL file"),
            )
        })?;
        // AgentV 5 matches a transcript by `source_target`; evalhost's own
        // key (for fixtures too) is `target`.
        let by = if source == "transcripts" {
            entry.get("target").or(entry.get("source_target"))
        } else {
            entry.get("target")
        };
        let target = match by {
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
            transcripts: source == "transcripts",
        })
    }
}

/// The recorded trajectory of `test` in a transcript file: its lines (of
/// `target`, when named) in `message_index` order, as AgentV's
/// `groupTranscriptJsonLines` makes one replayed response — the messages
/// (role, content, tool calls with their input and output), and the
/// transcript's token usage, duration and cost from its first line.
fn transcript(
    config: &ReplayConfig,
    test: &TestCase,
    lines: &[Value],
) -> Result<TargetOutput, TargetFailure> {
    let target_of = |r: &Value| r.get("target").and_then(Value::as_str).map(str::to_owned);
    let mut targets: Vec<String> = lines.iter().filter_map(target_of).collect();
    targets.sort();
    targets.dedup();
    let want = match &config.target {
        Some(t) => t.clone(),
        None if targets.len() == 1 => targets[0].clone(),
        None => {
            return Err(TargetFailure::fatal(format!(
                "{} holds test `{}` for several targets ({}): set `source_target:` on the replay target to say which to replay",
                config.fixtures.display(),
                test.id,
                targets.join(", ")
            )));
        }
    };
    let mut own: Vec<&Value> = lines
        .iter()
        .filter(|l| target_of(l).as_deref() == Some(want.as_str()))
        .collect();
    if own.is_empty() {
        return Err(TargetFailure::fatal(format!(
            "Transcript replay lookup found no record for test_id={} source_target={want} in {}",
            test.id,
            config.fixtures.display()
        )));
    }
    own.sort_by_key(|l| l.get("message_index").and_then(Value::as_i64).unwrap_or(0));
    let first = own[0];
    let messages: Vec<Value> = own
        .iter()
        .map(|l| {
            let mut m = Map::new();
            for key in ["role", "name", "content", "tool_calls"] {
                if let Some(v) = l.get(key).filter(|v| !v.is_null()) {
                    m.insert(key.to_owned(), v.clone());
                }
            }
            Value::Object(m)
        })
        .collect();
    let mut record = serde_json::json!({"output": messages});
    if let Some(u) = first
        .get("transcript_token_usage")
        .filter(|u| u.is_object())
    {
        record["token_usage"] = u.clone();
    }
    if let Some(d) = first
        .get("transcript_duration_ms")
        .filter(|d| d.is_number())
    {
        record["duration_ms"] = d.clone();
    }
    if let Some(c) = first.get("transcript_cost_usd").filter(|c| c.is_number()) {
        record["cost_usd"] = c.clone();
    }
    Ok(cli::parse_output_file(&record.to_string()))
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
    // Capped, and never through a link (a recording is data a suite may
    // ship).
    let text = crate::safe_fs::read_text_capped(path, 256 << 20)
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
    if config.transcripts {
        return transcript(config, test, all);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_replays_its_messages_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.jsonl");
        let line = |i: u32, target: &str, body: &str| {
            format!(
                r#"{{"schema_version":"agentv.transcript.v1","test_id":"case-1","target":"{target}","message_index":{i},{body},"transcript_token_usage":{{"input":900,"output":220}},"transcript_duration_ms":1750,"transcript_cost_usd":null}}"#
            )
        };
        std::fs::write(
            &file,
            [
                line(2, "copilot-cli", r#""role":"assistant","content":"The answer is 42.""#),
                line(0, "copilot-cli", r#""role":"user","content":"Question?""#),
                line(
                    1,
                    "copilot-cli",
                    r#""role":"assistant","tool_calls":[{"tool":"Read","input":{"path":"a.csv"},"id":"c1","output":"x"}]"#,
                ),
                line(0, "other", r#""role":"assistant","content":"elsewhere""#),
            ]
            .join("\n"),
        )
        .unwrap();
        let entry = serde_json::json!({"transcripts": "t.jsonl", "source_target": "copilot-cli"});
        let config = ReplayConfig::parse(entry.as_object().unwrap(), dir.path()).unwrap();
        assert!(config.transcripts);
        let test = TestCase::synthetic("case-1", Vec::new());
        let out = invoke(&config, &test, 1).unwrap();
        assert_eq!(out.text, "The answer is 42.");
        assert_eq!(out.messages.len(), 3);
        assert_eq!(out.messages[1].tool_calls[0].tool, "Read");
        assert_eq!(out.duration_ms, Some(1750));
        assert_eq!(out.token_usage.as_ref().unwrap().input, 900);
        // Two targets recorded and none named: refused, naming them.
        let entry = serde_json::json!({"transcripts": "t.jsonl"});
        let config = ReplayConfig::parse(entry.as_object().unwrap(), dir.path()).unwrap();
        let e = invoke(&config, &test, 1).unwrap_err();
        assert!(e.message.contains("copilot-cli, other"), "{}", e.message);
        // Two sources: AgentV refuses it, so does evalhost.
        let entry = serde_json::json!({"transcripts": "t.jsonl", "fixtures": "f.jsonl"});
        assert!(ReplayConfig::parse(entry.as_object().unwrap(), dir.path()).is_err());
    }
}
