//! AgentV 5's reading of an `llm-rubric` reply (`llm-grader.ts`,
//! `normalizePromptfooGradingResult`): a reply in promptfoo's shape —
//! `{reason, pass, score, checks}` — is read with promptfoo's rules instead
//! of AgentV 4's. A missing `pass` is every check passing (no checks: a
//! pass); a text `pass` passes when it reads `true`, `yes`, `pass` or `y`;
//! a missing `score` is the checks' mean (a check without a score counts
//! its pass), else the pass as 0 or 1; scores are clamped to [0, 1]; a
//! threshold (`config.threshold`, else `min_score`) also needs the score to
//! reach it. Replies without those fields are read as AgentV 4's.

use evalhost_plugin_sdk::{Check, Grade, Value, json};

use crate::Criterion;

/// AgentV 5's system prompt for an `llm-rubric` without criteria
/// (`buildPromptfooRubricOutputSchema`): the answer's shape.
pub const SYSTEM: &str = "You must respond with a single JSON object matching this schema:

{
  \"reason\": \"<brief explanation for the grading decision>\",
  \"pass\": <boolean>,
  \"score\": <number between 0.0 and 1.0>,
  \"checks\": [
    {
      \"id\": \"<optional rubric id>\",
      \"text\": \"<optional description of what was checked>\",
      \"pass\": <boolean>,
      \"score\": <optional number between 0.0 and 1.0>,
      \"reason\": \"<brief explanation for this check>\",
      \"evidence\": \"<optional supporting observation distinct from reason>\"
    }
  ]
}

The \"checks\" array is optional. Return only JSON.";

/// Whether AgentV 5 reads `reply` as promptfoo's shape
/// (`hasPromptfooAggregateFields`).
pub fn is_promptfoo_shaped(reply: &Value) -> bool {
    let Value::Object(o) = reply else {
        return false;
    };
    o.contains_key("pass")
        || o.contains_key("reason")
        || (o.contains_key("checks")
            && !o.contains_key("overall_reasoning")
            && !o.contains_key("assertions"))
}

/// JavaScript's `Number(x)`.
fn number(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Null => 0.0,
        Value::String(s) if s.trim().is_empty() => 0.0,
        Value::String(s) => s.trim().parse().unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

fn pass_of(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::String(s) => ["true", "yes", "pass", "y"]
            .iter()
            .any(|w| s.eq_ignore_ascii_case(w)),
        other => ["true", "yes", "pass", "y"]
            .iter()
            .any(|w| other.to_string().eq_ignore_ascii_case(w)),
    }
}

fn score_of(v: Option<&Value>, pass: bool) -> f64 {
    let raw = match v {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(v) if number(v).is_finite() => number(v),
        _ => f64::from(u8::from(pass)),
    };
    if raw.is_nan() {
        0.0
    } else {
        raw.clamp(0.0, 1.0)
    }
}

fn text(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

/// The grade AgentV 5 gives a promptfoo-shaped reply. `threshold` is the
/// assertion's; `fallback` names the single check of a reply without
/// checks (the rubric text).
pub fn grade(
    reply: &Value,
    threshold: Option<f64>,
    criteria: &[Criterion],
    fallback: &str,
) -> Grade {
    let checks: Vec<(String, bool, Option<f64>, String)> = reply
        .get("checks")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|c| {
                    let pass = match c.get("pass").or(c.get("passed")).or(c.get("satisfied")) {
                        Some(p) if !p.is_null() => pass_of(p),
                        _ => match c.get("score") {
                            Some(s) if !s.is_null() => score_of(Some(s), false) >= 0.8,
                            _ => false,
                        },
                    };
                    let id = text(c.get("id"));
                    let label = match (id, id.and_then(|i| criteria.iter().find(|k| k.id == i))) {
                        (_, Some(k)) => format!("[{}] {}", k.id, k.outcome),
                        _ => match (text(c.get("text")), id) {
                            (Some(t), _) => t.trim().to_owned(),
                            (None, Some(i)) => format!("[{i}]"),
                            (None, None) => "llm-rubric check".to_owned(),
                        },
                    };
                    let score = c
                        .get("score")
                        .filter(|s| !s.is_null())
                        .map(|s| score_of(Some(s), pass));
                    let reason = text(c.get("reason"))
                        .or(text(c.get("evidence")))
                        .or(text(c.get("reasoning")))
                        .unwrap_or_default()
                        .to_owned();
                    (label, pass, score, reason)
                })
                .collect()
        })
        .unwrap_or_default();
    let raw_pass = match reply.get("pass") {
        Some(p) if !p.is_null() => pass_of(p),
        _ if !checks.is_empty() => checks.iter().all(|c| c.1),
        _ => true,
    };
    let score = match reply.get("score") {
        Some(s) if !s.is_null() => score_of(Some(s), raw_pass),
        _ if !checks.is_empty() => {
            checks
                .iter()
                .map(|c| c.2.unwrap_or(f64::from(u8::from(c.1))))
                .sum::<f64>()
                / checks.len() as f64
        }
        _ => score_of(None, raw_pass),
    };
    let pass = match threshold {
        Some(t) => raw_pass && score >= t,
        None => raw_pass,
    };
    let reason = match text(reply.get("reason")) {
        Some(r) => r.trim().to_owned(),
        None if pass => "Grading passed".to_owned(),
        None => match threshold {
            Some(t) if score < t => format!("Score {score} below threshold {t}"),
            _ => "Grading failed".to_owned(),
        },
    };
    let mut grade = Grade::new(score);
    grade.checks = if checks.is_empty() {
        let name = if fallback.trim().is_empty() {
            "llm-rubric result"
        } else {
            fallback.trim()
        };
        vec![Check::new(pass, name).with_evidence(reason.clone())]
    } else {
        checks
            .iter()
            .map(|(label, p, _, r)| {
                let c = Check::new(*p, label.clone());
                if r.is_empty() {
                    c
                } else {
                    c.with_evidence(r.clone())
                }
            })
            .collect()
    };
    let mut details = json!({
        "verdict": if pass { "pass" } else { "fail" },
        "pass": pass,
        "score": score,
        "reason": reason,
    });
    if let Some(t) = threshold {
        details["threshold"] = json!(t);
    }
    grade.with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(g: &Grade) -> &str {
        g.details.as_ref().unwrap()["verdict"].as_str().unwrap()
    }

    #[test]
    fn promptfoo_shaped_replies_are_read_as_agentv5_reads_them() {
        assert!(is_promptfoo_shaped(&json!({"reason": "x", "score": 1})));
        assert!(!is_promptfoo_shaped(
            &json!({"checks": [], "overall_reasoning": "x"})
        ));
        // No pass: every check passing; no score: the checks' mean.
        let g = grade(
            &json!({"checks": [{"id": "a", "pass": true}, {"text": "b", "pass": false, "score": 0.5}]}),
            None,
            &[],
            "rubric",
        );
        assert_eq!(verdict(&g), "fail");
        assert!((g.score - 0.75).abs() < 1e-12);
        assert_eq!(g.checks[0].text, "[a]");
        // A text pass, a threshold the score misses.
        let g = grade(&json!({"pass": "yes", "score": "0.4"}), Some(0.5), &[], "r");
        assert_eq!(verdict(&g), "fail");
        assert_eq!(
            g.checks[0].evidence.as_deref(),
            Some("Score 0.4 below threshold 0.5")
        );
        // Scores are clamped; nothing at all is a pass scoring 1.
        assert_eq!(
            grade(&json!({"reason": "ok", "score": 3}), None, &[], "r").score,
            1.0
        );
        let g = grade(&json!({"reason": "fine"}), None, &[], "r");
        assert_eq!((verdict(&g), g.score), ("pass", 1.0));
    }
}
