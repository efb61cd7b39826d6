//! `llm-rubric`, as promptfoo 0.121 grades it (`matchesLlmRubric`,
//! `runJsonGradingPrompt`, `handleLlmRubric`): the grading model reads the
//! output and the rubric and answers with JSON `{reason, pass, score}`.
//!
//! The prompt follows promptfoo's structure — a system message that sets
//! the task and the answer's shape with two examples, a user message with
//! the output and the rubric in tags — in evalhost's own words. The reply
//! is read as promptfoo reads it: the first JSON object in it; a missing
//! `pass` counts as true, a non-boolean one is true when it reads `true`,
//! `yes`, `pass` or `y`; a missing `score` is the pass as 0 or 1; a
//! threshold also needs the score to reach it. `not-llm-rubric` flips the
//! verdict and scores 1 − score. The model call is the host's `llm`
//! capability: the plugin never sees a key.

use evalhost_plugin_sdk::{CompletionRequest, Grade, GradeError, LlmError, Request, Value};

const SYSTEM: &str = "You grade an output against a rubric written by a user. The output passes when what the rubric states is true of it. Answer with one JSON object and nothing else: {\"reason\": string, \"pass\": boolean, \"score\": number between 0 and 1}.

Examples:

<Output>Good morning, everyone!</Output>
<Rubric>Opens with a greeting</Rubric>
{\"reason\": \"It starts with 'Good morning', a greeting\", \"pass\": true, \"score\": 1.0}

<Output>Arr, hoist the colours and man the cannons!</Output>
<Rubric>Avoids sounding like a pirate</Rubric>
{\"reason\": \"'Arr' and 'hoist the colours' are pirate speech\", \"pass\": false, \"score\": 0.0}";

/// JavaScript's `Number(x)` for a JSON value, enough for a score.
fn js_number(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Null => 0.0,
        Value::String(s) if s.trim().is_empty() => 0.0,
        Value::String(s) => s.trim().parse().unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

fn judge_error(e: LlmError) -> GradeError {
    match e {
        LlmError::NotGranted(m) | LlmError::Unavailable(m) | LlmError::Failed(m) => {
            GradeError::Judge(m)
        }
    }
}

const CLOSED_QA: &str = "You check a submitted answer against a criterion. You are given the task that was asked, the submission, and the criterion.

[BEGIN DATA]
***
[Task]: {input}
***
[Submission]: {completion}
***
[Criterion]: {criteria}
***
[END DATA]

Does the submission meet the criterion? Reason step by step first, so that your conclusion comes last. Then write the single letter Y or N alone on the last line.";

/// `model-graded-closedqa` (promptfoo's `matchesClosedQa`): the reply ends
/// with `Y` to pass; `not-` is ignored, as promptfoo's handler ignores it.
pub fn closed_qa(request: &Request) -> Result<Grade, GradeError> {
    let criterion = match request.config.get("value") {
        Some(Value::String(s)) => s.clone(),
        _ => {
            return Err(GradeError::Failed(
                "model-graded-closedqa assertion type must have a string value".into(),
            ));
        }
    };
    let input = request
        .input
        .first()
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let prompt = CLOSED_QA
        .replace("{input}", &input)
        .replace("{criteria}", &criterion)
        .replace("{completion}", &request.output);
    let completion = evalhost_plugin_sdk::complete(&CompletionRequest {
        messages: vec![("user".into(), prompt)],
        ..CompletionRequest::default()
    })
    .map_err(judge_error)?;
    let reply = completion.text;
    if reply.is_empty() {
        return Ok(crate::judged(false, 0.0, "No output".into()));
    }
    let end = reply.trim_end();
    let pass = end.ends_with('Y');
    let reason = if pass {
        format!("The submission meets the criterion:\n{reply}")
    } else if end.ends_with('N') {
        format!("The submission does not meet the criterion:\n{reply}")
    } else {
        format!("Model grader produced a malformed response:\n{reply}")
    };
    Ok(crate::judged(pass, if pass { 1.0 } else { 0.0 }, reason))
}

const FACTUALITY: &str = "You compare the facts of a submitted answer with an expert's answer, ignoring style, grammar and punctuation.

[Question]: {input}
[Expert answer]: {ideal}
[Submission]: {completion}

Choose the one category that fits:
(A) The submission is a subset of the expert answer and fully consistent with it.
(B) The submission is a superset of the expert answer and fully consistent with it.
(C) The submission has all the same details as the expert answer.
(D) The submission and the expert answer disagree.
(E) They differ, but the differences do not matter for factuality.

Answer with one JSON object: {\"category\": \"A\" to \"E\", \"reason\": string}.";

/// promptfoo's category descriptions, for a reply without a reason.
fn category_description(c: char) -> &'static str {
    match c {
        'A' => {
            "The submitted answer is a subset of the expert answer and is fully consistent with it."
        }
        'B' => {
            "The submitted answer is a superset of the expert answer and is fully consistent with it."
        }
        'C' => "The submitted answer contains all the same details as the expert answer.",
        'D' => "There is a disagreement between the submitted answer and the expert answer.",
        _ => {
            "The answers differ, but these differences don't matter from the perspective of factuality."
        }
    }
}

/// promptfoo's factuality reply rules: the JSON `category` (A–E, any
/// other value is an error), else the legacy `(A)` form; the category and
/// its reason, or why there is none.
fn factuality_category(reply: &str) -> Result<(char, String), String> {
    if let Some(Value::Object(o)) = crate::json_objects(reply).into_iter().next()
        && let Some(Value::String(category)) = o.get("category")
        && !category.is_empty()
    {
        let option = category.trim().to_uppercase();
        let mut chars = option.chars();
        let letter = match (chars.next(), chars.next()) {
            (Some(c @ 'A'..='E'), None) => c,
            _ => return Err(format!("Invalid category value: {option}")),
        };
        match o.get("reason") {
            None | Some(Value::Null) => {
                return Ok((
                    letter,
                    format!("Category {letter}: {}", category_description(letter)),
                ));
            }
            Some(Value::String(r)) => {
                let r = r.trim();
                return Ok((
                    letter,
                    if r.is_empty() {
                        format!("Category {letter}: {}", category_description(letter))
                    } else {
                        r.to_owned()
                    },
                ));
            }
            // `reason.trim` throws in promptfoo: it falls back to the
            // legacy form.
            Some(_) => {}
        }
    }
    let chars: Vec<char> = reply.chars().collect();
    let letter = chars
        .windows(2)
        .find(|w| matches!(w[0], 'a'..='e' | 'A'..='E') && w[1] == ')')
        .map(|w| w[0].to_ascii_uppercase())
        .ok_or_else(|| {
            format!("Factuality checker output did not match expected format: {reply}")
        })?;
    let reason = reply
        .find(')')
        .map(|i| reply[i + 1..].trim())
        .filter(|r| !r.is_empty())
        .unwrap_or(reply)
        .to_owned();
    Ok((letter, reason))
}

/// `factuality` (promptfoo's `matchesFactuality`): the text grader places
/// the output against the reference in one of five categories; D (a
/// disagreement) fails, the others pass with score 1. `not-` is ignored,
/// as promptfoo ignores it.
pub fn factuality(request: &Request) -> Result<Grade, GradeError> {
    let ideal = match request.config.get("value") {
        Some(Value::String(s)) => s.clone(),
        _ => {
            return Err(GradeError::Failed(
                "factuality assertion type must have a string value".into(),
            ));
        }
    };
    let input = request
        .input
        .first()
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let prompt = FACTUALITY
        .replace("{input}", &input)
        .replace("{ideal}", &ideal)
        .replace("{completion}", &request.output);
    let completion = evalhost_plugin_sdk::complete(&CompletionRequest {
        messages: vec![("user".into(), prompt)],
        ..CompletionRequest::default()
    })
    .map_err(judge_error)?;
    if completion.text.is_empty() {
        return Ok(crate::judged(false, 0.0, "No output".into()));
    }
    Ok(match factuality_category(&completion.text) {
        Ok((letter, reason)) => {
            let pass = letter != 'D';
            crate::judged(pass, if pass { 1.0 } else { 0.0 }, reason)
        }
        Err(reason) => crate::judged(false, 0.0, reason),
    })
}

/// Grades `llm-rubric`.
pub fn grade(request: &Request, inverse: bool) -> Result<Grade, GradeError> {
    let config = &request.config;
    let rubric = match config.get("value") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    let threshold = config
        .optional_f64("threshold")
        .map_err(GradeError::Failed)?;
    let completion = evalhost_plugin_sdk::complete(&CompletionRequest {
        messages: vec![
            ("system".into(), SYSTEM.into()),
            (
                "user".into(),
                format!(
                    "<Output>\n{}\n</Output>\n<Rubric>\n{rubric}\n</Rubric>",
                    request.output
                ),
            ),
        ],
        // The grader asked for JSON, where the reader names one.
        target: config
            .get("__judge")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ..CompletionRequest::default()
    })
    .map_err(judge_error)?;
    let fail = |reason: String| Ok(crate::judged(false, 0.0, reason));
    if completion.text.is_empty() {
        return fail("No output".into());
    }
    let objects = crate::json_objects(&completion.text);
    let Some(Value::Object(parsed)) = objects.into_iter().next() else {
        return fail("Could not extract JSON from llm-rubric response".into());
    };
    let mut pass = match parsed.get("pass") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            let text = match other {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            ["true", "yes", "pass", "y"]
                .iter()
                .any(|w| text.eq_ignore_ascii_case(w))
        }
    };
    let score = match parsed.get("score") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
        Some(v) if js_number(v).is_finite() => js_number(v),
        _ => f64::from(u8::from(pass)),
    };
    if let Some(t) = threshold {
        pass = pass && score >= t;
    }
    let reason = match parsed.get("reason") {
        Some(Value::String(r)) if !r.is_empty() => r.clone(),
        Some(v) if !matches!(v, Value::Null | Value::Bool(false)) && !v.is_string() => {
            v.to_string()
        }
        _ if pass => "Grading passed".to_owned(),
        _ => format!(
            "Score {} below threshold {}",
            crate::js::number(score),
            threshold.map_or("undefined".to_owned(), crate::js::number)
        ),
    };
    let score = if inverse {
        (1.0 - if score.is_finite() { score } else { 0.0 }).clamp(0.0, 1.0)
    } else {
        score
    };
    Ok(crate::judged(pass != inverse, score, reason))
}

#[cfg(test)]
mod tests {
    use evalhost_plugin_sdk::testing::Harness;
    use evalhost_plugin_sdk::{Completion, Request, json};

    fn with_reply(reply: &'static str, config: Value) -> Grade {
        let harness = Harness::<crate::PromptfooGrader>::new().llm(move |req| {
            // The output and the rubric reach the model in their tags.
            let user = &req.messages[1].1;
            assert!(user.contains("<Output>\nthe answer\n</Output>"), "{user}");
            assert!(user.contains("<Rubric>\nbe right\n</Rubric>"), "{user}");
            Ok(Completion {
                text: reply.into(),
                model: "m".into(),
                input_tokens: None,
                output_tokens: None,
                cost_usd: None,
                cached: false,
            })
        });
        let mut c = json!({"value": "be right"});
        if let (Some(c), Value::Object(extra)) = (c.as_object_mut(), config) {
            c.extend(extra);
        }
        harness
            .grade(&Request::new("promptfoo-llm-rubric", "the answer").with_config(c))
            .unwrap()
    }

    use super::*;

    fn verdict(g: &Grade) -> bool {
        g.details.as_ref().unwrap()["verdict"] == "pass"
    }

    #[test]
    fn factuality_replies_are_read_as_promptfoo_reads_them() {
        assert_eq!(
            factuality_category(r#"{"category": " b ", "reason": " x "}"#),
            Ok(('B', "x".to_owned()))
        );
        assert_eq!(
            factuality_category(r#"{"category": "D"}"#).unwrap().1,
            "Category D: There is a disagreement between the submitted answer and the expert answer."
        );
        assert_eq!(
            factuality_category(r#"{"category": "F"}"#),
            Err("Invalid category value: F".to_owned())
        );
        assert_eq!(
            factuality_category("I pick (e) since they differ"),
            Ok(('E', "since they differ".to_owned()))
        );
        assert!(factuality_category("no idea").is_err());
    }

    #[test]
    fn replies_are_read_as_promptfoo_reads_them() {
        let g = with_reply(r#"{"reason": "ok", "pass": true, "score": 0.9}"#, json!({}));
        assert!(verdict(&g) && (g.score - 0.9).abs() < 1e-12);
        // No pass: a pass; no score: the pass as 1.
        let g = with_reply(r#"text {"reason": "fine"} more"#, json!({}));
        assert!(verdict(&g) && g.score == 1.0);
        // A threshold needs the score too.
        let g = with_reply(
            r#"{"pass": "yes", "score": "0.4"}"#,
            json!({"threshold": 0.5}),
        );
        assert!(!verdict(&g));
        assert_eq!(g.checks[0].text, "Score 0.4 below threshold 0.5");
        // Inverted: the verdict flips, the score is 1 - s.
        let g = with_reply(
            r#"{"pass": true, "score": 0.8, "reason": "r"}"#,
            json!({"inverse": true}),
        );
        assert!(!verdict(&g) && (g.score - 0.2).abs() < 1e-9);
        // No JSON: a failure, never a pass.
        let g = with_reply("It passes, I think.", json!({}));
        assert!(!verdict(&g));
        assert_eq!(
            g.checks[0].text,
            "Could not extract JSON from llm-rubric response"
        );
    }
}
