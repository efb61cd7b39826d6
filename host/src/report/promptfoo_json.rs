//! `--export promptfoo-json FILE`: a run in promptfoo's output JSON shape
//! (`promptfoo eval -o out.json`, results version 3), for the tooling
//! promptfoo users already have: `evalId`, `results.{version, timestamp,
//! prompts, results, stats}`, `config`. Each row carries its prompt, provider,
//! vars, output, pass, score, failure reason and the component result of
//! each assertion (an `assert-set`'s followed by its members', as promptfoo
//! lists them).

use serde_json::{Map, Value, json};

use super::Summary;
use crate::results::{ExecutionStatus, ResultRow, ScoreRow, Verdict};

fn component(s: &ScoreRow, out: &mut Vec<Value>) {
    let reason = if s.verdict == Verdict::Pass {
        "Assertion passed".to_owned()
    } else {
        s.assertions
            .iter()
            .find(|c| !c.passed)
            .map(|c| c.text.clone())
            .or_else(|| s.error.clone())
            .unwrap_or_default()
    };
    // The assertion's own type (`not-` as written), and its metric apart,
    // as promptfoo writes them: anything that groups by type gets types.
    // (promptfoo's `not-` types are negated by their plugin: the name,
    // when no metric replaced it, keeps the `not-`.)
    let kind = if (s.negate || s.name == format!("not-{}", s.kind)) && s.kind != "assert-set" {
        format!("not-{}", s.kind)
    } else {
        s.kind.clone()
    };
    let mut assertion = json!({"type": kind});
    // An assertion's name is its metric when it has one, else its type.
    if s.name != kind {
        assertion["metric"] = Value::String(s.name.clone());
    }
    if let Some(e) = &s.expected {
        assertion["value"] = Value::String(e.clone());
    }
    out.push(json!({
        "pass": s.verdict == Verdict::Pass,
        "score": s.score,
        "reason": reason,
        "assertion": assertion,
    }));
    if s.kind == "assert-set" {
        for m in &s.scores {
            component(m, out);
        }
    }
}

/// The export of `rows` (the run's `results.jsonl`).
pub fn render(summary: &Summary, rows: &[ResultRow]) -> Value {
    let mut prompts: Vec<(String, String, String)> = Vec::new();
    let mut results = Vec::new();
    let (mut successes, mut failures, mut errors) = (0u64, 0u64, 0u64);
    for (i, row) in rows.iter().enumerate() {
        let raw = row
            .input
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let label = row
            .prompt
            .as_ref()
            .map_or_else(|| raw.clone(), |p| p.label.clone());
        let key = (label.clone(), row.target.clone(), raw.clone());
        let prompt_idx = match prompts
            .iter()
            .position(|(l, t, _)| *l == key.0 && *t == key.1)
        {
            Some(p) => p,
            None => {
                prompts.push(key);
                prompts.len() - 1
            }
        };
        let passed = row.status == crate::results::Status::Passed;
        let error = row.execution_status == ExecutionStatus::ExecutionError;
        match (passed, error) {
            (true, _) => successes += 1,
            (false, true) => errors += 1,
            (false, false) => failures += 1,
        }
        let mut components = Vec::new();
        for s in &row.scores {
            component(s, &mut components);
        }
        let reason = if passed {
            "All assertions passed".to_owned()
        } else {
            row.error.clone().unwrap_or_else(|| {
                components
                    .iter()
                    .find(|c| c["pass"] == false)
                    .and_then(|c| c["reason"].as_str())
                    .unwrap_or("")
                    .to_owned()
            })
        };
        let vars = row
            .metadata
            .get("vars")
            .cloned()
            .unwrap_or(Value::Object(Map::new()));
        let mut test_case = json!({"vars": vars});
        if let Some(d) = row.metadata.get("description") {
            test_case["description"] = d.clone();
        }
        results.push(json!({
            "id": format!("{}:{}:{}", row.test_id, row.target, row.trial.unwrap_or(1)),
            "promptIdx": prompt_idx,
            "testIdx": i,
            "prompt": {"raw": raw, "label": label},
            "provider": {"id": row.target, "label": row.target},
            "response": {"output": row.output},
            "vars": vars,
            "success": passed,
            "score": row.score,
            "latencyMs": row.duration_ms.unwrap_or(row.wall_ms),
            "cost": row.cost_usd.unwrap_or(0.0),
            "error": if passed { Value::Null } else { Value::String(reason.clone()) },
            "failureReason": if passed { 0 } else if error { 2 } else { 1 },
            "gradingResult": {
                "pass": passed,
                "score": row.score,
                "reason": reason,
                "namedScores": {},
                "componentResults": components,
            },
            "testCase": test_case,
        }));
    }
    json!({
        "evalId": summary.run_dir.file_name().map(|n| n.to_string_lossy().into_owned()),
        "results": {
            "version": 3,
            "timestamp": jiff::Timestamp::now().to_string(),
            "prompts": prompts.iter().map(|(label, target, raw)| {
                let mut p = json!({"raw": raw, "label": label, "provider": target});
                // promptfoo's per-prompt `metrics.namedScores`: the named
                // metrics' totals and the derived ones (0 where promptfoo
                // could not evaluate one).
                if let Some(m) = summary.metrics.iter().find(|m| &m.target == target && m.prompt.as_deref() == Some(label.as_str())) {
                    let mut named = serde_json::Map::new();
                    for (k, v) in &m.named {
                        named.insert(k.clone(), json!(v));
                    }
                    for (k, v) in &m.derived {
                        named.insert(k.clone(), json!(v.unwrap_or(0.0)));
                    }
                    p["metrics"] = json!({"namedScores": named});
                }
                p
            }).collect::<Vec<_>>(),
            "results": results,
            "stats": {"successes": successes, "failures": failures, "errors": errors, "durationMs": summary.duration_ms},
        },
        "config": {"description": summary.suite},
        "shareableUrl": null,
    })
}
