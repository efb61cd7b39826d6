//! Rubric criteria (AgentV §5.4) and their scoring.
//!
//! As AgentV 4.42 scores them (`calculateRubricScore`,
//! `calculateScoreRangeResult`): checklist items score Σ weight of satisfied
//! / Σ weight of the items the judge answered (an item it left out counts
//! for nothing, and is shown as a failed check saying so). Score-range items
//! (0–10, normalised /10) score their weighted mean; an item passes when its
//! normalised score reaches its gate and the raw score is at least 7. A
//! required item that fails fails the grader's verdict (`details.verdict`)
//! and keeps its score; `zero_on_required_failure: true` opts into
//! evalhost's stricter rule, which zeroes the score.

use evalhost_plugin_sdk::{Check, Config, Grade, GradeError, Request, Value, json};

use crate::criterion::Criterion;
use crate::parse::truthy;
use crate::{ask, prompt, spread};

fn ranges(value: &Value, id: &str) -> Result<Vec<(u8, u8, String)>, String> {
    let mut out: Vec<(u8, u8, String)> = Vec::new();
    match value {
        Value::Array(items) => {
            for item in items {
                let pair = item.get("score_range").and_then(Value::as_array);
                let (Some([lo, hi]), Some(outcome)) = (
                    pair.map(Vec::as_slice),
                    item.get("outcome").and_then(Value::as_str),
                ) else {
                    return Err(format!(
                        "criterion `{id}`: each score range needs `score_range: [min, max]` and `outcome`"
                    ));
                };
                let (Some(lo), Some(hi)) = (lo.as_u64(), hi.as_u64()) else {
                    return Err(format!(
                        "criterion `{id}`: score range bounds must be integers 0-10"
                    ));
                };
                if lo > hi || hi > 10 {
                    return Err(format!(
                        "criterion `{id}`: score range [{lo}, {hi}] is not within 0-10 with min ≤ max"
                    ));
                }
                out.push((lo as u8, hi as u8, outcome.to_owned()));
            }
        }
        Value::Object(map) => {
            let mut starts: Vec<(u8, String)> = Vec::new();
            for (k, v) in map {
                let lo: u8 = k.parse().ok().filter(|n: &u8| *n <= 10).ok_or_else(|| {
                    format!("criterion `{id}`: score range key `{k}` is not an integer 0-10")
                })?;
                let outcome = v.as_str().ok_or_else(|| {
                    format!("criterion `{id}`: score range {k} needs a text outcome")
                })?;
                starts.push((lo, outcome.to_owned()));
            }
            starts.sort_by_key(|(lo, _)| *lo);
            if starts.first().map(|(lo, _)| *lo) != Some(0) {
                return Err(format!(
                    "criterion `{id}`: a score range map must start at 0"
                ));
            }
            for (i, (lo, outcome)) in starts.iter().enumerate() {
                let hi = starts.get(i + 1).map_or(10, |(next, _)| next - 1);
                out.push((*lo, hi, outcome.clone()));
            }
        }
        _ => {
            return Err(format!(
                "criterion `{id}`: `score_ranges` must be a list or a map"
            ));
        }
    }
    out.sort_by_key(|(lo, _, _)| *lo);
    let mut covered = [false; 11];
    for (lo, hi, _) in &out {
        for s in *lo..=*hi {
            if covered[s as usize] {
                return Err(format!("criterion `{id}`: overlapping score ranges at {s}"));
            }
            covered[s as usize] = true;
        }
    }
    let missing: Vec<String> = (0..=10)
        .filter(|s| !covered[*s])
        .map(|s| s.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "criterion `{id}`: score ranges do not cover {}",
            missing.join(", ")
        ));
    }
    Ok(out)
}

/// The criteria of a config (`criteria`, or the deprecated `rubrics`).
pub fn parse_criteria(config: &Config) -> Result<Vec<Criterion>, String> {
    let list = match config.get("criteria").or(config.get("rubrics")) {
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) => return Err("`criteria` is an empty list".into()),
        Some(_) => return Err("`criteria` must be a list of strings or criterion objects".into()),
        None => {
            return Err(
                "missing `criteria` (a list of strings or {id, outcome, weight, required})".into(),
            );
        }
    };
    let mut out = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let default_id = format!("rubric-{}", i + 1);
        let c = match item {
            Value::String(s) if !s.trim().is_empty() => Criterion {
                id: default_id,
                outcome: s.trim().to_owned(),
                weight: 1.0,
                required: true,
                min_score: None,
                score_ranges: Vec::new(),
            },
            Value::Object(o) => {
                let id = o
                    .get("id")
                    .and_then(Value::as_str)
                    .map_or(default_id, str::to_owned);
                let outcome = o
                    .get("outcome")
                    .or(o.get("criteria"))
                    .or(o.get("description"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .trim()
                    .to_owned();
                let score_ranges = match o.get("score_ranges") {
                    Some(r) => ranges(r, &id)?,
                    None => Vec::new(),
                };
                if outcome.is_empty() && score_ranges.is_empty() {
                    return Err(format!("criterion `{id}` has no `outcome`"));
                }
                let weight = match o.get("weight") {
                    None => 1.0,
                    Some(w) => w
                        .as_f64()
                        .filter(|w| w.is_finite() && *w >= 0.0)
                        .ok_or_else(|| {
                            format!("criterion `{id}`: `weight` must be a number ≥ 0")
                        })?,
                };
                let min_score = match (o.get("min_score"), o.get("required_min_score")) {
                    (Some(m), _) => Some(m.as_f64().filter(|m| *m > 0.0 && *m <= 1.0).ok_or_else(
                        || format!("criterion `{id}`: `min_score` must be in (0, 1]"),
                    )?),
                    (None, Some(r)) => Some(
                        r.as_u64().filter(|r| *r <= 10).ok_or_else(|| {
                            format!(
                                "criterion `{id}`: `required_min_score` must be an integer 0-10"
                            )
                        })? as f64
                            / 10.0,
                    ),
                    (None, None) => None,
                };
                let required = match o.get("required") {
                    None => score_ranges.is_empty(),
                    Some(Value::Bool(b)) => *b,
                    Some(_) => {
                        return Err(format!(
                            "criterion `{id}`: `required` must be true or false"
                        ));
                    }
                };
                Criterion {
                    id,
                    outcome,
                    weight,
                    required,
                    min_score,
                    score_ranges,
                }
            }
            _ => {
                return Err(format!(
                    "`criteria[{i}]` must be a non-empty string or a criterion object"
                ));
            }
        };
        if out.iter().any(|o: &Criterion| o.id == c.id) {
            return Err(format!("criterion id `{}` is used twice", c.id));
        }
        out.push(c);
    }
    Ok(out)
}

/// One judge's verdict on one criterion.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Satisfied (checklist) or passing (score ranges).
    pub passed: bool,
    /// The normalised score, 0..=1.
    pub score: f64,
    /// The raw 0-10 score (score ranges).
    pub raw: Option<u8>,
    /// The judge's reasoning.
    pub reasoning: String,
    /// False when the judge did not answer for it.
    pub answered: bool,
}

/// One sample: a verdict per criterion.
pub type Run = Vec<Verdict>;

/// Asks the judge once.
pub fn judge_once(
    request: &Request,
    criteria: &[Criterion],
    sample: u32,
) -> Result<Run, GradeError> {
    let scored = criteria.iter().any(|c| !c.score_ranges.is_empty());
    let (system, user) = prompt::rubric(request, criteria)?;
    let schema = prompt::checks_schema(scored);
    let read = |reply: &Value| read_run(reply, criteria, scored);
    ask(&request.config, &system, &user, &schema, sample, read)
}

/// A reply AgentV 5 may read whole (promptfoo's shape) or per criterion.
pub enum Reply {
    /// Per criterion, as AgentV 4 reads it.
    Run(Run),
    /// Graded whole, as AgentV 5 reads a promptfoo-shaped reply.
    Whole(Grade),
}

/// Asks the judge once, reading the reply as AgentV 5's `llm-rubric`
/// does.
pub fn judge_once_agentv5(
    request: &Request,
    criteria: &[Criterion],
    sample: u32,
    threshold: Option<f64>,
    fallback: &str,
) -> Result<Reply, GradeError> {
    let scored = criteria.iter().any(|c| !c.score_ranges.is_empty());
    let (system, user) = prompt::rubric(request, criteria)?;
    let schema = prompt::checks_schema(scored);
    let read = |reply: &Value| -> Result<Reply, String> {
        if crate::agentv5::is_promptfoo_shaped(reply) {
            return Ok(Reply::Whole(crate::agentv5::grade(
                reply, threshold, criteria, fallback,
            )));
        }
        read_run(reply, criteria, scored).map(Reply::Run)
    };
    ask(&request.config, &system, &user, &schema, sample, read)
}

/// A reply's verdict per criterion.
fn read_run(reply: &Value, criteria: &[Criterion], scored: bool) -> Result<Run, String> {
    {
        let checks = reply
            .get("checks")
            .and_then(Value::as_array)
            .ok_or_else(|| "the reply has no `checks` list".to_owned())?;
        let mut answered = 0;
        let run = criteria
            .iter()
            .map(|c| {
                let check = checks
                    .iter()
                    .find(|k| k.get("id").and_then(Value::as_str) == Some(c.id.as_str()));
                let reasoning = check
                    .and_then(|k| k.get("reasoning"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if scored {
                    let raw = check.and_then(|k| k.get("score")).and_then(|s| {
                        s.as_f64()
                            .or_else(|| s.as_str().and_then(|t| t.trim().parse().ok()))
                    });
                    match raw {
                        Some(r) => {
                            answered += 1;
                            let raw = r.round().clamp(0.0, 10.0) as u8;
                            let score = f64::from(raw) / 10.0;
                            let gate = c.min_score.unwrap_or(if c.required { 1.0 } else { 0.0 });
                            Verdict {
                                passed: score + 1e-9 >= gate && raw >= 7,
                                score,
                                raw: Some(raw),
                                reasoning,
                                answered: true,
                            }
                        }
                        None => Verdict {
                            passed: false,
                            score: 0.0,
                            raw: None,
                            reasoning: "the judge did not score this criterion".into(),
                            answered: false,
                        },
                    }
                } else {
                    match truthy(check.and_then(|k| k.get("satisfied").or(k.get("passed")))) {
                        Some(b) => {
                            answered += 1;
                            Verdict {
                                passed: b,
                                score: if b { 1.0 } else { 0.0 },
                                raw: None,
                                reasoning,
                                answered: true,
                            }
                        }
                        None => Verdict {
                            passed: false,
                            score: 0.0,
                            raw: None,
                            reasoning: "the judge did not answer for this criterion".into(),
                            answered: false,
                        },
                    }
                }
            })
            .collect::<Run>();
        if answered == 0 {
            return Err("the reply's `checks` name none of the criteria".into());
        }
        Ok(run)
    }
}

/// One sample's score and the gated items it failed. Only the items the
/// judge answered count, as in AgentV; a gate fails below its `min_score`
/// (score ranges) or when a required checklist item is not satisfied.
fn score_of(
    criteria: &[Criterion],
    run: &Run,
    zero_on_required_failure: bool,
) -> (f64, Vec<String>) {
    let answered = || criteria.iter().zip(run).filter(|(_, v)| v.answered);
    let total: f64 = answered().map(|(c, _)| c.weight).sum();
    let got: f64 = answered().map(|(c, v)| c.weight * v.score).sum();
    let failed_required: Vec<String> = answered()
        .filter(|(c, v)| match (c.min_score, v.raw) {
            // Score ranges: below the gate (AgentV: min_score, else
            // required_min_score/10, else required → 1.0).
            (_, Some(_)) => {
                let gate = c.min_score.unwrap_or(if c.required { 1.0 } else { 0.0 });
                (c.required || c.min_score.is_some()) && v.score + 1e-9 < gate
            }
            (_, None) => c.required && !v.passed,
        })
        .map(|(c, _)| c.id.clone())
        .collect();
    let score = if total > 0.0 {
        (got / total).clamp(0.0, 1.0)
    } else {
        0.0
    };
    (
        if zero_on_required_failure && !failed_required.is_empty() {
            0.0
        } else {
            score
        },
        failed_required,
    )
}

/// Combines the samples into a grade: the mean score, the spread, and per
/// criterion the majority verdict. A failed gate sets `details.verdict` to
/// `fail` (the host fails the assertion whatever its score).
pub fn combine(criteria: &[Criterion], runs: &[Run], zero_on_required_failure: bool) -> Grade {
    let scored: Vec<(f64, Vec<String>)> = runs
        .iter()
        .map(|r| score_of(criteria, r, zero_on_required_failure))
        .collect();
    let scores: Vec<f64> = scored.iter().map(|(s, _)| *s).collect();
    let (mean, sd) = spread(&scores);
    let n = runs.len();
    let mut checks = Vec::new();
    let mut unanimous = 0;
    for (i, c) in criteria.iter().enumerate() {
        let passes = runs.iter().filter(|r| r[i].passed).count();
        let passed = passes * 2 > n;
        if passes == 0 || passes == n {
            unanimous += 1;
        }
        let mut label = format!("[{}]", c.id);
        if c.required {
            label.push_str(" (REQUIRED)");
        }
        let first = &runs[0][i];
        let mut evidence = first.reasoning.clone();
        if let Some(raw) = first.raw {
            evidence = format!("score {raw}/10: {evidence}");
        }
        if n > 1 {
            evidence = format!("{passes}/{n} samples: {evidence}");
        }
        let mut check = Check::new(passed, format!("{label} {}", c.outcome));
        if !evidence.trim().is_empty() {
            check = check.with_evidence(evidence);
        }
        checks.push(check);
    }
    let mut details = json!({
        "criteria": criteria.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
    });
    if let Some((_, failed)) = scored.first()
        && !failed.is_empty()
    {
        details["failed_required"] = json!(failed);
        details["verdict"] = json!("fail");
    }
    let unanswered: Vec<&str> = criteria
        .iter()
        .zip(&runs[0])
        .filter(|(_, v)| !v.answered)
        .map(|(c, _)| c.id.as_str())
        .collect();
    if !unanswered.is_empty() {
        details["unanswered"] = json!(unanswered);
    }
    if criteria.iter().any(|c| !c.score_ranges.is_empty()) {
        details["raw_scores"] = json!(runs[0].iter().map(|v| v.raw).collect::<Vec<_>>());
        details["normalization"] = json!("score / 10");
    }
    if n > 1 {
        details["samples"] = json!({
            "scores": scores,
            "mean": mean,
            "stdev": sd,
            "agreement": unanimous as f64 / criteria.len().max(1) as f64,
        });
    }
    let mut grade = Grade::new(mean);
    grade.checks = checks;
    grade.with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalhost_plugin_sdk::json;

    fn config(v: Value) -> Config {
        Config::from_value(v).unwrap()
    }

    #[test]
    fn criteria_parse_with_agentv_defaults() {
        let c = parse_criteria(&config(json!({"criteria": ["Be polite", {"id": "acc", "outcome": "Correct", "weight": 5, "required": false}]}))).unwrap();
        assert_eq!(
            (c[0].id.as_str(), c[0].required, c[0].weight),
            ("rubric-1", true, 1.0)
        );
        assert_eq!(
            (c[1].id.as_str(), c[1].required, c[1].weight),
            ("acc", false, 5.0)
        );
        assert!(
            parse_criteria(&config(json!({"criteria": []})))
                .unwrap_err()
                .contains("empty")
        );
        assert!(
            parse_criteria(&config(json!({})))
                .unwrap_err()
                .contains("missing `criteria`")
        );
    }

    #[test]
    fn score_ranges_must_cover_0_to_10_without_overlap() {
        let ok = parse_criteria(&config(json!({"criteria": [{"id": "q", "outcome": "Quality", "score_ranges": {"0": "bad", "4": "ok", "8": "great"}}]}))).unwrap();
        assert_eq!(
            ok[0].score_ranges,
            [
                (0, 3, "bad".into()),
                (4, 7, "ok".into()),
                (8, 10, "great".into())
            ]
        );
        assert!(
            !ok[0].required,
            "score-range items are not required by default"
        );
        let gap = parse_criteria(&config(
            json!({"criteria": [{"id": "q", "score_ranges": [{"score_range": [0, 4], "outcome": "a"}, {"score_range": [6, 10], "outcome": "b"}]}]}),
        ));
        assert!(gap.unwrap_err().contains("do not cover 5"));
        let overlap = parse_criteria(&config(
            json!({"criteria": [{"id": "q", "score_ranges": [{"score_range": [0, 5], "outcome": "a"}, {"score_range": [5, 10], "outcome": "b"}]}]}),
        ));
        assert!(overlap.unwrap_err().contains("overlapping"));
        assert!(
            parse_criteria(&config(
                json!({"criteria": [{"id": "q", "score_ranges": {"2": "x"}}]})
            ))
            .unwrap_err()
            .contains("start at 0")
        );
    }

    fn v(passed: bool) -> Verdict {
        Verdict {
            passed,
            score: if passed { 1.0 } else { 0.0 },
            raw: None,
            reasoning: "r".into(),
            answered: true,
        }
    }

    #[test]
    fn weighted_checklist_and_required_gates() {
        let c = parse_criteria(&config(json!({"criteria": [
            {"id": "a", "outcome": "A", "weight": 3, "required": false},
            {"id": "b", "outcome": "B", "weight": 1, "required": false},
        ]})))
        .unwrap();
        assert_eq!(combine(&c, &[vec![v(true), v(false)]], false).score, 0.75);
        let strict =
            parse_criteria(&config(json!({"criteria": ["A", "B", "C", "D", "E"]}))).unwrap();
        // 4 of 5 satisfied; every string criterion is required: AgentV keeps
        // 0.8 and fails the verdict; the opt-in zeroes it.
        let run = [vec![v(true), v(true), v(true), v(true), v(false)]];
        let g = combine(&strict, &run, false);
        assert!((g.score - 0.8).abs() < 1e-12, "{}", g.score);
        let details = g.details.unwrap();
        assert_eq!(details["failed_required"], json!(["rubric-5"]));
        assert_eq!(details["verdict"], "fail");
        assert_eq!(combine(&strict, &run, true).score, 0.0);
    }

    /// AgentV's rubric example: weights 5 and 3, the 3 unmet (and required
    /// by default): 0.625, verdict fail.
    #[test]
    fn a_failed_required_criterion_keeps_its_weighted_score_as_in_agentv() {
        let c = parse_criteria(&config(json!({"criteria": [
            {"id": "a", "outcome": "A", "weight": 5},
            {"id": "b", "outcome": "B", "weight": 3},
        ]})))
        .unwrap();
        let g = combine(&c, &[vec![v(true), v(false)]], false);
        assert_eq!(g.score, 0.625);
        assert_eq!(g.details.unwrap()["verdict"], "fail");
    }

    /// An item the judge left out counts for nothing (AgentV), and says so.
    #[test]
    fn an_unanswered_item_is_left_out_of_the_score_and_named() {
        let c = parse_criteria(&config(json!({"criteria": [
            {"id": "a", "outcome": "A", "required": false},
            {"id": "b", "outcome": "B", "required": false},
        ]})))
        .unwrap();
        let unanswered = Verdict {
            passed: false,
            score: 0.0,
            raw: None,
            reasoning: "the judge did not answer for this criterion".into(),
            answered: false,
        };
        let g = combine(&c, &[vec![v(true), unanswered]], false);
        assert_eq!(g.score, 1.0);
        assert!(!g.checks[1].passed);
        assert_eq!(g.details.unwrap()["unanswered"], json!(["b"]));
    }

    #[test]
    fn samples_report_mean_spread_and_majority() {
        let c = parse_criteria(&config(json!({"criteria": [{"id": "a", "outcome": "A", "required": false}, {"id": "b", "outcome": "B", "required": false}]}))).unwrap();
        let g = combine(
            &c,
            &[
                vec![v(true), v(true)],
                vec![v(true), v(false)],
                vec![v(true), v(false)],
            ],
            false,
        );
        assert!((g.score - (1.0 + 0.5 + 0.5) / 3.0).abs() < 1e-12);
        assert!(
            g.checks[0].passed && !g.checks[1].passed,
            "majority per criterion"
        );
        assert_eq!(g.checks[1].evidence.as_deref(), Some("1/3 samples: r"));
        let samples = &g.details.unwrap()["samples"];
        assert_eq!(samples["agreement"], 0.5);
    }
}
