//! Built-in LLM judges: `rubrics` (weighted criteria, checklist or 0–10
//! score ranges, required criteria) and `llm-grader` (free-form judging with
//! a template). The judge model is called through the host's `llm`
//! capability: this plugin builds the prompt and reads the reply; it never
//! sees a key or the network. Built only on the public plugin SDK.

use evalhost_plugin_sdk::{
    AssertionType, Capability, Check, CompletionRequest, Config, Grade, GradeError, Grader, Plugin,
    Request, Value, complete, export_grader, json,
};

mod agentv5;
mod criterion;
mod parse;
mod prompt;
mod rubric;

pub use criterion::Criterion;
pub use parse::extract_json;
pub use rubric::parse_criteria;

/// The LLM judge plugin.
pub struct LlmJudge;

/// Attempts to get a usable reply, before one repair request.
pub const ATTEMPTS: u32 = 3;

fn samples(config: &Config) -> Result<u32, String> {
    match config.optional_u64("judge_samples")? {
        None => Ok(1),
        Some(n) if (1..=20).contains(&n) => Ok(n as u32),
        Some(n) => Err(format!("`judge_samples` must be from 1 to 20, got {n}")),
    }
}

/// Asks the judge until a reply passes `read`: up to [`ATTEMPTS`] attempts
/// (different seeds), then one repair request quoting the problem.
pub fn ask<T>(
    config: &Config,
    system: &str,
    user: &str,
    schema: &Value,
    sample: u32,
    read: impl Fn(&Value) -> Result<T, String>,
) -> Result<T, GradeError> {
    let base = CompletionRequest {
        messages: vec![
            ("system".into(), system.to_owned()),
            ("user".into(), user.to_owned()),
        ],
        temperature: Some(
            config
                .optional_f64("temperature")
                .ok()
                .flatten()
                .unwrap_or(0.0),
        ),
        max_tokens: config
            .optional_u64("max_tokens")
            .ok()
            .flatten()
            .map(|t| t as u32),
        response_schema: Some(schema.to_string()),
        seed: None,
        target: config
            .optional_str("target")
            .ok()
            .flatten()
            .map(str::to_owned),
    };
    let mut last_problem = String::new();
    let mut last_reply = String::new();
    for attempt in 0..ATTEMPTS {
        let request = CompletionRequest {
            seed: Some(u64::from(sample) * 100 + u64::from(attempt)),
            ..base.clone()
        };
        let reply =
            complete(&request).map_err(|e| GradeError::Judge(format!("the judge failed: {e}")))?;
        match extract_json(&reply.text).and_then(|v| read(&v)) {
            Ok(value) => return Ok(value),
            Err(problem) => {
                last_problem = problem;
                last_reply = reply.text;
            }
        }
    }
    if !last_reply.trim().is_empty() {
        let mut repair = base;
        repair.seed = Some(u64::from(sample) * 100 + 99);
        repair
            .messages
            .push(("assistant".into(), last_reply.clone()));
        repair.messages.push((
            "user".into(),
            format!("That reply could not be used: {last_problem}. Answer again with only the JSON object the instructions ask for."),
        ));
        let reply =
            complete(&repair).map_err(|e| GradeError::Judge(format!("the judge failed: {e}")))?;
        match extract_json(&reply.text).and_then(|v| read(&v)) {
            Ok(value) => return Ok(value),
            Err(problem) => last_problem = problem,
        }
    }
    let excerpt: String = last_reply.chars().take(200).collect();
    Err(GradeError::Judge(format!(
        "judge reply unusable after {ATTEMPTS} attempts and 1 repair: {last_problem} (reply: {excerpt:?})"
    )))
}

/// Mean and population standard deviation.
pub fn spread(scores: &[f64]) -> (f64, f64) {
    let n = scores.len().max(1) as f64;
    let mean = scores.iter().sum::<f64>() / n;
    let var = scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// AgentV 5's threshold of an `llm-rubric` (its `config.threshold`, else
/// its `min_score`), when the suite is AgentV 5's.
fn agentv5_threshold(config: &Config) -> Result<Option<Option<f64>>, String> {
    if config.optional_bool("agentv5")? != Some(true) {
        return Ok(None);
    }
    Ok(Some(config.optional_f64("agentv5_threshold")?))
}

fn grade_rubrics(request: &Request) -> Result<Grade, GradeError> {
    let config = &request.config;
    let criteria = parse_criteria(config)?;
    let n = samples(config)?;
    let mut runs = Vec::new();
    let agentv5 = agentv5_threshold(config)?;
    for sample in 0..n {
        match agentv5 {
            Some(threshold) => {
                let fallback = criteria
                    .iter()
                    .map(|c| c.outcome.as_str())
                    .collect::<Vec<_>>()
                    .join("; ");
                match rubric::judge_once_agentv5(request, &criteria, sample, threshold, &fallback)?
                {
                    rubric::Reply::Run(run) => runs.push(run),
                    // AgentV 5 grades a promptfoo-shaped reply whole (one
                    // sample: it asks once).
                    rubric::Reply::Whole(grade) => return Ok(grade),
                }
            }
            None => runs.push(rubric::judge_once(request, &criteria, sample)?),
        }
    }
    let zero = config
        .optional_bool("zero_on_required_failure")?
        .unwrap_or(false);
    Ok(rubric::combine(&criteria, &runs, zero))
}

fn grade_free_form(request: &Request) -> Result<Grade, GradeError> {
    let config = &request.config;
    // `rubrics` on an llm-grader makes it a rubric grader (AgentV).
    if config
        .get("rubrics")
        .is_some_and(|r| r.as_array().is_some_and(|a| !a.is_empty()))
    {
        return grade_rubrics(request);
    }
    let n = samples(config)?;
    let (system, user) = prompt::free_form(request)?;
    let schema = prompt::free_form_schema();
    if let Some(threshold) = agentv5_threshold(config)? {
        // AgentV 5's `llm-rubric` without criteria: the judge is asked for
        // promptfoo's shape, and a reply in it is graded whole.
        let read = |reply: &Value| -> Result<Result<Grade, parse::FreeForm>, String> {
            if agentv5::is_promptfoo_shaped(reply) {
                return Ok(Ok(agentv5::grade(reply, threshold, &[], "")));
            }
            parse::free_form(reply).map(Err)
        };
        match ask(config, agentv5::SYSTEM, &user, &schema, 0, read)? {
            Ok(grade) => return Ok(grade),
            Err(first) => return Ok(free_form_grade(vec![first], 1)),
        }
    }
    let mut replies = Vec::new();
    for sample in 0..n {
        replies.push(ask(
            config,
            &system,
            &user,
            &schema,
            sample,
            parse::free_form,
        )?);
    }
    Ok(free_form_grade(replies, n))
}

/// The grade of free-form replies: their mean, with the spread of several.
fn free_form_grade(replies: Vec<parse::FreeForm>, n: u32) -> Grade {
    let scores: Vec<f64> = replies.iter().map(|r| r.score).collect();
    let (mean, sd) = spread(&scores);
    let first = &replies[0];
    let mut checks: Vec<Check> = first.assertions.clone();
    if checks.is_empty() {
        checks.push(Check::new(
            mean >= 0.8,
            format!("LLM judge score {mean:.2}"),
        ));
    }
    let mut details = first.details.clone().unwrap_or_else(|| json!({}));
    if let Some(raw) = first.clamped_from {
        details["clamped_from"] = json!(raw);
    }
    if n > 1 {
        let verdicts: Vec<bool> = scores.iter().map(|s| *s >= 0.8).collect();
        let majority = verdicts.iter().filter(|v| **v).count() * 2 >= verdicts.len();
        let agree =
            verdicts.iter().filter(|v| **v == majority).count() as f64 / verdicts.len() as f64;
        details["samples"] =
            json!({"scores": scores, "mean": mean, "stdev": sd, "agreement": agree});
    }
    let mut grade = Grade::new(mean);
    grade.checks = checks;
    grade.with_details(details)
}

impl Grader for LlmJudge {
    fn describe() -> Plugin {
        let common = json!({
            "judge_samples": {"type": "integer", "minimum": 1, "maximum": 20},
            "temperature": {"type": "number", "minimum": 0, "maximum": 2},
            "max_tokens": {"type": "integer", "minimum": 1},
            "target": {"type": "string"},
            "prompt": {"type": "string"},
            "prompt_is_template": {"type": "boolean", "description": "the prompt is the whole judge prompt (a prompt script's output, an aggregator's prompt), never criteria for the default template"},
            "agentv5": {"type": "boolean", "description": "AgentV 5's llm-rubric: a reply in promptfoo's shape ({reason, pass, score, checks}) is read with AgentV 5's rules"},
            "agentv5_threshold": {"type": "number", "description": "AgentV 5's llm-rubric threshold (its config.threshold, else min_score)"},
        });
        let mut common = common;
        common["zero_on_required_failure"] = json!({"type": "boolean", "description": "evalhost's stricter rule: a failed required criterion zeroes the score (AgentV keeps the weighted score and fails the verdict)"});
        let mut rubric_props = common.clone();
        rubric_props["criteria"] = json!({"type": "array", "minItems": 1});
        rubric_props["rubrics"] = json!({"type": "array", "minItems": 1});
        let mut grader_props = common;
        grader_props["rubrics"] = json!({"type": "array"});
        Plugin::new("evalhost-llm-judge", env!("CARGO_PKG_VERSION"))
            .assertion_type(
                AssertionType::new(
                    "rubrics",
                    "An LLM judge checks weighted criteria (checklist or 0-10 score ranges)",
                )
                .capability(Capability::Llm)
                .schema(json!({"type": "object", "properties": rubric_props})),
            )
            .assertion_type(
                AssertionType::new(
                    "llm-grader",
                    "An LLM judge scores the output from a prompt template",
                )
                .capability(Capability::Llm)
                .schema(json!({"type": "object", "properties": grader_props})),
            )
    }

    fn check_config(assertion_type: &str, config: &Config) -> Result<(), String> {
        samples(config)?;
        config.optional_bool("zero_on_required_failure")?;
        config.optional_f64("temperature")?;
        config.optional_str("target")?;
        config.optional_str("prompt")?;
        config.optional_bool("prompt_is_template")?;
        agentv5_threshold(config)?;
        match assertion_type {
            "rubrics" => parse_criteria(config).map(|_| ()),
            "llm-grader" => {
                if config.get("rubrics").is_some() {
                    parse_criteria(config)?;
                }
                Ok(())
            }
            other => Err(format!("evalhost-llm-judge does not grade `{other}`")),
        }
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        match request.assertion_type.as_str() {
            "rubrics" => grade_rubrics(request),
            "llm-grader" => grade_free_form(request),
            other => Err(format!("evalhost-llm-judge does not grade `{other}`").into()),
        }
    }
}

export_grader!(LlmJudge);
