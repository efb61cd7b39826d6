//! Built-in `promptfoo-*` types: promptfoo 0.121's deterministic assertions
//! with promptfoo's semantics and reason texts (`src/assertions/*.ts`),
//! where they differ from AgentV's (`equals` does not trim, `starts-with`
//! does not trim, `contains` takes a number, the list types take a comma
//! string). A suite read in the promptfoo dialect grades `contains` with
//! `promptfoo-contains`; its `not-` prefix arrives as `inverse`, which each
//! handler applies as promptfoo's does. A binary handler scores 1 when it
//! passes, else 0; `bleu`, `gleu`, `rouge-n` and `tool-call-f1` report
//! promptfoo's score with an explicit verdict, and `is-refusal` passes an
//! empty output with score 0, as promptfoo does. Built only on the public
//! plugin SDK.
//!
//! `testdata/oracle.mjs` records what promptfoo itself answers for several
//! hundred cases (`oracle.json`); the `oracle` tests (`oracle.rs`) grade the
//! same cases and compare pass, score and reason.

use evalhost_plugin_sdk::{
    AssertionType, Config, Grade, GradeError, Grader, Plugin, Request, Value, export_grader, json,
};

mod grading;
mod html;
mod is_html;
mod is_json;
mod js;
mod meteor;
mod ngram;
mod prompts;
mod provider;
mod rag;
mod refusal;
mod rouge;
mod rubric;
pub mod schema;
mod similar;
mod text;
mod toolcall;
mod tools;
mod types;
mod unicode;
pub mod xml;

pub use is_json::json_objects;
use ngram::references;
pub use ngram::{bleu, gleu};
pub use text::{comma_values, levenshtein};
use text::{contains_value, list};
pub use types::MODEL_GRADED;
use types::{SCORED, TYPES};

/// The promptfoo grader plugin.
pub struct PromptfooGrader;

/// A result as promptfoo's handler returns it: its pass, its score, its
/// reason (the pass reason too, where promptfoo writes one), the verdict
/// explicit.
pub(crate) fn judged(pass: bool, score: f64, reason: String) -> Grade {
    let mut grade = Grade::new(score.clamp(0.0, 1.0));
    grade
        .checks
        .push(evalhost_plugin_sdk::Check::new(pass, reason));
    grade.with_details(verdict_details(pass, score))
}

/// A failed grade because the judge's reply could not be read (no JSON, no
/// verdict letter): promptfoo fails the assertion so, and the details say
/// `judge_reply_unusable`, so that the host never caches that reply and
/// the next run asks the judge again.
pub(crate) fn unusable_reply(reason: String) -> Grade {
    let grade = judged(false, 0.0, reason);
    let mut details = verdict_details(false, 0.0);
    details["judge_reply_unusable"] = json!(true);
    grade.with_details(details)
}

/// The verdict, and a score outside [0, 1] as promptfoo keeps it
/// (`raw_score`: a custom rubric's `3` of 5; the host makes it the
/// assertion's score in a promptfoo config).
fn verdict_details(pass: bool, score: f64) -> Value {
    let mut details = json!({"verdict": if pass { "pass" } else { "fail" }});
    if score.is_finite() && !(0.0..=1.0).contains(&score) {
        details["raw_score"] = json!(score);
    }
    details
}

fn outcome(pass: bool, reason: String) -> Grade {
    let mut grade = Grade::new(if pass { 1.0 } else { 0.0 });
    grade.checks.push(evalhost_plugin_sdk::Check::new(
        pass,
        if pass {
            "Assertion passed".to_owned()
        } else {
            reason
        },
    ));
    if !pass {
        grade = grade.with_details(json!({"verdict": "fail"}));
    }
    grade
}

/// A score-based result: `score` as promptfoo reports it, failing only
/// with an explicit verdict.
fn scored(pass: bool, score: f64, reason: String) -> Grade {
    let mut grade = Grade::new(score.clamp(0.0, 1.0));
    grade.checks.push(evalhost_plugin_sdk::Check::new(
        pass,
        if pass {
            "Assertion passed".to_owned()
        } else {
            reason
        },
    ));
    grade.with_details(verdict_details(pass, score))
}

fn not(inverse: bool) -> &'static str {
    if inverse { "not " } else { "" }
}

/// A number as JavaScript prints it.
fn js_num(f: f64) -> String {
    js::number(f)
}

impl Grader for PromptfooGrader {
    fn describe() -> Plugin {
        let mut plugin =
            Plugin::new("evalhost-promptfoo", env!("CARGO_PKG_VERSION")).stateless(true);
        for (name, description) in TYPES {
            let mut ty = AssertionType::new(format!("promptfoo-{name}"), *description);
            if MODEL_GRADED.contains(name) {
                ty = ty.capability(evalhost_plugin_sdk::Capability::Llm);
            }
            plugin = plugin.assertion_type(
                ty
                    .threshold(if SCORED.contains(name) { 0.0 } else { 1.0 })
                    .schema(json!({"type": "object", "properties": {
                        "value": {}, "threshold": {"type": "number"}, "inverse": {"type": "boolean"},
                    }})),
            );
        }
        plugin
    }

    fn check_config(assertion_type: &str, config: &Config) -> Result<(), String> {
        let t = assertion_type
            .strip_prefix("promptfoo-")
            .unwrap_or(assertion_type);
        let prefix = |e: String| format!("\"{t}\" assertion type {e}");
        config.optional_bool("inverse")?;
        config.optional_f64("threshold")?;
        if let Some(n) = config.optional_u64("judge_samples")? {
            if !grading::SAMPLED.contains(&t) {
                return Err(format!(
                    "`judge_samples` applies to {} only",
                    grading::SAMPLED.join(", ")
                ));
            }
            if !(1..=20).contains(&n) {
                return Err(format!("`judge_samples` must be from 1 to 20, got {n}"));
            }
        }
        match t {
            "contains" | "icontains" => contains_value(config).map(drop).map_err(prefix),
            "contains-any" | "contains-all" | "icontains-any" | "icontains-all" => {
                list(config).map(drop).map_err(prefix)
            }
            "starts-with" | "regex" | "levenshtein" => match config.get("value") {
                Some(Value::String(s)) if !s.is_empty() => Ok(()),
                _ => Err(prefix("must have a string value".into())),
            },
            "equals" => match config.get("value") {
                Some(_) => Ok(()),
                None => Err(prefix("must have a value".into())),
            },
            // promptfoo reads the schema only when the output holds JSON:
            // a bad one is an error then, not at load.
            "is-json" | "contains-json" => Ok(()),
            "is-valid-openai-tools-call"
            | "is-valid-openai-function-call"
            | "is-valid-function-call" => tools::check_config(config),
            "bleu" | "gleu" => references(config.get("value").unwrap_or(&Value::Null))
                .map(drop)
                .map_err(prefix),
            "finish-reason" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                _ => Err(prefix("must have a string value".into())),
            },
            "perplexity" | "perplexity-score" => Ok(()),
            "model-graded-closedqa" | "factuality" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                _ => Err(prefix("must have a string value".into())),
            },
            "context-recall" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                _ => Err("context-recall assertion requires a string value (expected answer or fact to verify)".into()),
            },
            "context-relevance" | "context-faithfulness" | "answer-relevance" => Ok(()),
            "select-best" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                _ => Err("select-best must have a string value".into()),
            },
            "search-rubric" => match config.get("value") {
                None | Some(Value::Null) => Err("search-rubric assertion type must have a string value".into()),
                Some(_) => Ok(()),
            },
            "similar" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                Some(Value::Array(items)) if !items.is_empty() => Ok(()),
                Some(Value::Array(_)) => Err("Similarity assertion must have at least one value to compare against".into()),
                _ => Err("Similarity assertion type must have a string or array of strings value".into()),
            },
            "g-eval" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                Some(Value::Array(items)) if items.iter().all(Value::is_string) => Ok(()),
                _ => Err("G-Eval assertion type must have a string or array of strings value".into()),
            },
            "llm-rubric" => match config.get("value") {
                None | Some(Value::Null | Value::String(_)) => Ok(()),
                Some(_) => Err(prefix("must have a string value (an object rubric is not read by this version of evalhost)".into())),
            },
            "latency" | "cost" => match config.optional_f64("threshold")? {
                Some(_) => Ok(()),
                None => Err(format!(
                    "{} assertion must have a threshold{}",
                    if t == "cost" { "Cost" } else { "Latency" },
                    if t == "cost" { "" } else { " in milliseconds" }
                )),
            },
            "word-count" => match config.get("value") {
                Some(Value::Number(_)) => Ok(()),
                Some(Value::String(s)) if s.trim().parse::<f64>().is_ok() => Ok(()),
                Some(Value::Object(o)) if o.contains_key("min") || o.contains_key("max") => Ok(()),
                _ => Err(prefix(
                    "value must be a number or an object with min/max properties".into(),
                )),
            },
            // promptfoo reads no value for these.
            "is-refusal" | "contains-html" | "is-html" => Ok(()),
            "tool-call-f1" => match config.get("value").and_then(toolcall::expected_tools) {
                None => Err("\"tool-call-f1\" assertion requires a value: array of tool names or comma-separated string".into()),
                Some(tools) if tools.is_empty() => Err("\"tool-call-f1\" assertion requires at least one expected tool name".into()),
                Some(_) => Ok(()),
            },
            "rouge-n" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                _ => Err("\"rouge\" assertion type must be a string value".into()),
            },
            "is-xml" | "contains-xml" => {
                xml::required_elements(config.get("value").unwrap_or(&Value::Null)).map(drop)
            }
            "meteor" => meteor::check_config(config),
            other => Err(format!("evalhost-promptfoo does not grade `{other}`")),
        }
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        let output = request.output.as_str();
        let config = &request.config;
        let inverse = config.optional_bool("inverse")?.unwrap_or(false);
        let t = request
            .assertion_type
            .strip_prefix("promptfoo-")
            .unwrap_or(&request.assertion_type);
        let value = config.get("value").cloned().unwrap_or(Value::Null);
        Ok(match t {
            "equals" => text::equals(output, &value, inverse),
            "contains" | "icontains" => text::contains(t, output, config, inverse)?,
            "contains-any" | "icontains-any" => text::contains_any(t, output, config, inverse)?,
            "contains-all" | "icontains-all" => text::contains_all(t, output, config, inverse)?,
            "starts-with" => text::starts_with(output, &value, inverse),
            "regex" => text::regex(output, &value, inverse),
            "is-json" => is_json::is_json(config, output, &value, inverse)?,
            "contains-json" => is_json::contains_json(config, output, &value, inverse)?,
            "is-valid-openai-tools-call" => tools::tools_call(config, request)?,
            "is-valid-openai-function-call" | "is-valid-function-call" => {
                tools::function_call(config, request)?
            }
            "word-count" => text::word_count(output, &value, inverse)?,
            "levenshtein" => text::edit_distance(output, config, &value, inverse)?,
            "bleu" | "gleu" => ngram::grade(t, output, config, &value, inverse)?,
            "finish-reason" => provider::finish_reason(config, request, inverse)?,
            "llm-rubric" => grading::sampled(request, || rubric::grade(request, inverse))?,
            "model-graded-closedqa" => grading::sampled(request, || rubric::closed_qa(request))?,
            "factuality" => grading::sampled(request, || rubric::factuality(request))?,
            "g-eval" => grading::sampled(request, || rubric::g_eval(request, inverse))?,
            "context-recall" => rag::context_recall(request)?,
            "context-relevance" => rag::context_relevance(request)?,
            "context-faithfulness" => rag::context_faithfulness(request)?,
            "similar" => similar::similar(request, inverse)?,
            "answer-relevance" => similar::answer_relevance(request)?,
            "search-rubric" => {
                grading::sampled(request, || rubric::search_rubric(request, inverse))?
            }
            "select-best" => rubric::select_best(request)?,
            "perplexity" => provider::perplexity(config, request, inverse)?,
            "perplexity-score" => provider::perplexity_score(config, request, inverse)?,
            "latency" => provider::latency(config, request, inverse)?,
            "cost" => provider::cost(config, request, inverse)?,
            "is-refusal" => refusal::grade(output, inverse),
            "contains-html" => html::grade(output, inverse),
            "is-html" => is_html::grade(output, inverse),
            "tool-call-f1" => toolcall::grade(output, config, &value, inverse)?,
            "rouge-n" => rouge::grade(output, config, &value, inverse)?,
            "is-xml" | "contains-xml" => xml::grade(t, output, &value, inverse)?,
            "meteor" => meteor::grade(output, config, inverse)?,
            other => return Err(format!("evalhost-promptfoo does not grade `{other}`").into()),
        })
    }
}

export_grader!(PromptfooGrader);

#[cfg(test)]
mod new_types;
#[cfg(test)]
mod oracle;
#[cfg(test)]
mod tests;
