//! `llm-rubric`, as promptfoo 0.121 grades it (`matchesLlmRubric`,
//! `runJsonGradingPrompt`, `handleLlmRubric`): the grading model reads the
//! output and the rubric and answers with JSON `{reason, pass, score}`.
//!
//! The prompt is promptfoo's own (`crate::prompts`), or the test's
//! `rubricPrompt`, rendered as promptfoo renders it. The reply
//! is read as promptfoo reads it: the first JSON object in it; a missing
//! `pass` counts as true, a non-boolean one is true when it reads `true`,
//! `yes`, `pass` or `y`; a missing `score` is the pass as 0 or 1; a
//! threshold also needs the score to reach it. `not-llm-rubric` flips the
//! verdict and scores 1 − score. The model call is the host's `llm`
//! capability: the plugin never sees a key.

use evalhost_plugin_sdk::{Grade, GradeError, Request, Value};

use crate::grading::{self, try_parse};
use crate::prompts;

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

/// Asks the text grader about the output against the assertion's string
/// `value` (`{key}` in `template`, beside `{input}` and `{completion}`), in
/// the test's `rubricPrompt` when it has one; `None` when the grader says
/// nothing (promptfoo's "No output").
fn ask_about_value(
    request: &Request,
    kind: &str,
    key: &str,
    template: &str,
) -> Result<Option<String>, GradeError> {
    let Some(Value::String(value)) = request.config.get("value") else {
        return Err(GradeError::Failed(format!(
            "{kind} assertion type must have a string value"
        )));
    };
    let messages = grading::messages(
        request,
        grading::custom_prompt(request).as_deref(),
        template,
        &[
            ("input", Value::String(grading::prompt(request))),
            (key, Value::String(value.clone())),
            ("completion", try_parse(&request.output)),
        ],
    )?;
    let reply = grading::ask(request, messages)?;
    Ok((!reply.is_empty()).then_some(reply))
}

/// `model-graded-closedqa` (promptfoo's `matchesClosedQa`): the reply ends
/// with `Y` to pass; `not-` is ignored, as promptfoo's handler ignores it.
pub fn closed_qa(request: &Request) -> Result<Grade, GradeError> {
    let Some(reply) = ask_about_value(
        request,
        "model-graded-closedqa",
        "criteria",
        prompts::CLOSED_QA,
    )?
    else {
        return Ok(crate::unusable_reply("No output".into()));
    };
    let end = reply.trim_end();
    let pass = end.ends_with('Y');
    let reason = if pass {
        format!("The submission meets the criterion:\n{reply}")
    } else if end.ends_with('N') {
        format!("The submission does not meet the criterion:\n{reply}")
    } else {
        return Ok(crate::unusable_reply(format!(
            "Model grader produced a malformed response:\n{reply}"
        )));
    };
    Ok(crate::judged(pass, if pass { 1.0 } else { 0.0 }, reason))
}

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
/// disagreement) fails, the others pass with score 1, unless the test's
/// `options.factuality` scores them otherwise (a score above 0 passes).
/// `not-` is ignored, as promptfoo ignores it.
pub fn factuality(request: &Request) -> Result<Grade, GradeError> {
    let Some(reply) = ask_about_value(request, "factuality", "ideal", prompts::FACTUALITY)? else {
        return Ok(crate::judged(false, 0.0, "No output".into()));
    };
    Ok(match factuality_category(&reply) {
        Ok((letter, reason)) => {
            // `options.factuality`: the score of each category; one above
            // 0 passes.
            let key = match letter {
                'A' => "subset",
                'B' => "superset",
                'C' => "agree",
                'D' => "disagree",
                _ => "differButFactual",
            };
            let score = request
                .config
                .get("__factuality")
                .and_then(|f| f.get(key))
                .and_then(Value::as_f64)
                .unwrap_or(if letter == 'D' { 0.0 } else { 1.0 });
            crate::judged(score > 0.0, score, reason)
        }
        Err(reason) => crate::unusable_reply(reason),
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
    let messages = grading::messages(
        request,
        grading::custom_prompt(request).as_deref(),
        prompts::LLM_RUBRIC,
        &[
            ("output", try_parse(&request.output)),
            ("rubric", Value::String(rubric.clone())),
        ],
    )?;
    // The grader asked for JSON, where the reader names one (`__judge`).
    let reply = grading::ask(request, messages)?;
    if reply.is_empty() {
        return Ok(crate::unusable_reply("No output".into()));
    }
    let objects = crate::json_objects(&reply);
    let Some(Value::Object(parsed)) = objects.into_iter().next() else {
        return Ok(crate::unusable_reply(
            "Could not extract JSON from llm-rubric response".into(),
        ));
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

/// The leftmost match of the JavaScript regex `<prefix>.+\}` (`.` stops at
/// a line break; greedy: to the line's last `}`).
fn line_match<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(i) = text[from..].find(prefix).map(|i| i + from) {
        let rest = &text[i + prefix.len()..];
        let line = rest
            .find(['\n', '\r', '\u{2028}', '\u{2029}'])
            .map_or(rest, |end| &rest[..end]);
        // `.+` takes at least one character before the closing brace.
        if let Some(close) = line.rfind('}')
            && close >= line.chars().next().map_or(1, char::len_utf8)
        {
            return Some(&text[i..i + prefix.len() + close + 1]);
        }
        from = i + prefix.len();
    }
    None
}

/// The highest score G-Eval's judge gives.
const GEVAL_MAX: f64 = 10.0;

/// One G-Eval criterion (promptfoo's `matchesGEval`): the judge writes
/// evaluation steps for the criterion, then scores the reply 0–10 by them;
/// the score is that over 10. `Err` is a grader failure (never inverted).
fn geval_one(
    request: &Request,
    criteria: &str,
) -> Result<Result<(f64, String), String>, GradeError> {
    let custom = request
        .config
        .get("__rubric_prompt")
        .and_then(Value::as_object);
    let part = |name: &str| {
        custom
            .and_then(|c| c.get(name))
            .filter(|v| !v.is_null())
            .map(|v| {
                v.as_str()
                    .map_or_else(|| crate::js::stringify(v), str::to_owned)
            })
    };
    let messages = grading::messages_own(
        part("steps").as_deref(),
        prompts::GEVAL_STEPS,
        &[("criteria", Value::String(criteria.to_owned()))],
    )?;
    let reply = grading::ask(request, messages)?;
    if reply.is_empty() {
        return Ok(Err("G-Eval step-generation call returned no output".into()));
    }
    let Some(found) = line_match(&reply, "{\"steps\"") else {
        return Ok(Err(format!(
            "LLM-proposed evaluation steps are not in JSON format: {reply}"
        )));
    };
    let steps = match serde_json::from_str::<Value>(found) {
        Ok(v) => v.get("steps").cloned().unwrap_or(Value::Null),
        Err(e) => {
            return Ok(Err(format!(
                "LLM-proposed evaluation steps are not in JSON format: {e}\n\n{reply}"
            )));
        }
    };
    let Value::Array(steps) = steps else {
        return Ok(Err(format!(
            "G-Eval steps response has invalid or missing steps: {}",
            crate::js::stringify(&steps)
        )));
    };
    if steps.is_empty() {
        return Ok(Err("LLM does not propose any evaluation step".into()));
    }
    if !steps
        .iter()
        .all(|s| s.as_str().is_some_and(|s| !crate::js::trim(s).is_empty()))
    {
        return Ok(Err(format!(
            "G-Eval steps response contains invalid steps: {}",
            crate::js::stringify(&Value::Array(steps))
        )));
    }
    let steps = steps
        .iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("\n- ");
    let messages = grading::messages_own(
        part("evaluate").as_deref(),
        prompts::GEVAL_EVALUATE,
        &[
            ("criteria", Value::String(criteria.to_owned())),
            ("steps", Value::String(steps.clone())),
            ("maxScore", Value::String("10".into())),
            ("input", try_parse(&grading::prompt(request))),
            ("output", try_parse(&request.output)),
        ],
    )?;
    let reply = grading::ask(request, messages)?;
    if reply.is_empty() {
        return Ok(Err("G-Eval evaluation call returned no output".into()));
    }
    let Some(found) = line_match(&reply, "{") else {
        return Ok(Err(format!(
            "LLM-proposed evaluation result is not in JSON format: {reply}"
        )));
    };
    let result = match serde_json::from_str::<Value>(found) {
        Ok(v) => v,
        Err(e) => {
            return Ok(Err(format!(
                "LLM-proposed evaluation result is not in JSON format: {e}\n\n{reply}"
            )));
        }
    };
    let raw = match result.get("score") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(v @ Value::String(s)) if !crate::js::trim(s).is_empty() => js_number(v),
        _ => f64::NAN,
    };
    let shown_score = || {
        result
            .get("score")
            .map_or("undefined".to_owned(), crate::js::stringify)
    };
    if !raw.is_finite() {
        return Ok(Err(format!(
            "G-Eval result has invalid or missing score: {}",
            shown_score()
        )));
    }
    if !(0.0..=GEVAL_MAX).contains(&raw) {
        return Ok(Err(format!(
            "G-Eval result score {} is outside the expected 0-10 range",
            crate::js::number(raw)
        )));
    }
    match result.get("reason") {
        Some(Value::String(r)) if !crate::js::trim(r).is_empty() => {
            Ok(Ok((raw / GEVAL_MAX, r.clone())))
        }
        other => Ok(Err(format!(
            "G-Eval result has invalid or missing reason: {}",
            other.map_or("undefined".to_owned(), crate::js::stringify)
        ))),
    }
}

/// `g-eval` (promptfoo's `handleGEval`): one criterion, or the mean over a
/// list of them; passes at the threshold (default 0.7). `not-` flips the
/// verdict and scores 1 − score; a grader failure fails either way.
pub fn g_eval(request: &Request, inverse: bool) -> Result<Grade, GradeError> {
    let threshold = request
        .config
        .optional_f64("threshold")
        .map_err(GradeError::Failed)?
        .unwrap_or(0.7);
    let criteria: Vec<String> = match request.config.get("value") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => {
            return Err(GradeError::Failed(
                "G-Eval assertion type must have a string or array of strings value".into(),
            ));
        }
    };
    let list = matches!(request.config.get("value"), Some(Value::Array(_)));
    if criteria.is_empty() {
        return Ok(crate::judged(
            false,
            0.0,
            "G-Eval assertion requires at least one criterion string in the value array.".into(),
        ));
    }
    let mut scores = Vec::new();
    let mut reasons = Vec::new();
    for (i, criterion) in criteria.iter().enumerate() {
        match geval_one(request, criterion)? {
            Ok((score, reason)) => {
                scores.push(score);
                reasons.push(reason);
            }
            Err(reason) if list => {
                return Ok(crate::judged(
                    false,
                    0.0,
                    format!(
                        "G-Eval criterion {}/{} ({}) failed: {reason}",
                        i + 1,
                        criteria.len(),
                        crate::js::stringify(&Value::String(criterion.clone()))
                    ),
                ));
            }
            Err(reason) => return Ok(crate::unusable_reply(reason)),
        }
    }
    let score = scores.iter().sum::<f64>() / scores.len() as f64;
    Ok(crate::judged(
        (score >= threshold) != inverse,
        if inverse { 1.0 - score } else { score },
        reasons.join("\n\n"),
    ))
}

/// JavaScript truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0 && !x.is_nan()),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// `search-rubric` (promptfoo's `matchesSearchRubric`): `llm-rubric` with a
/// grader that searches the web. The reply's first JSON object: a missing
/// `pass` fails (unlike `llm-rubric`), a missing score is the pass as 0 or
/// 1, a threshold needs the score too; a reply without JSON passes only
/// when it says `"pass": true`. `not-` flips the verdict, not the score.
/// A grader that gives no answer fails, inverted or not.
pub fn search_rubric(request: &Request, inverse: bool) -> Result<Grade, GradeError> {
    let rubric = match request.config.get("value") {
        None | Some(Value::Null) => {
            return Err(GradeError::Failed(
                "search-rubric assertion type must have a string value".into(),
            ));
        }
        Some(v) => crate::js::string(v),
    };
    let threshold = request
        .config
        .optional_f64("threshold")
        .map_err(GradeError::Failed)?;
    let messages = grading::messages(
        request,
        grading::custom_prompt(request).as_deref(),
        prompts::SEARCH_RUBRIC,
        &[
            ("output", try_parse(&request.output)),
            ("rubric", Value::String(rubric.clone())),
        ],
    )?;
    let reply = grading::ask(request, messages)?;
    if reply.is_empty() {
        return Err(GradeError::Judge(
            "Search rubric evaluation failed: No output".into(),
        ));
    }
    let (mut pass, score, reason) = match crate::json_objects(&reply).into_iter().next() {
        Some(Value::Object(result)) => {
            let mut pass = result.get("pass").is_some_and(truthy);
            let score = match result.get("score") {
                Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
                _ => f64::from(u8::from(pass)),
            };
            if let Some(t) = threshold {
                pass = pass && score >= t;
            }
            let reason = match result.get("reason") {
                Some(r) if truthy(r) => crate::js::string(r),
                _ => "No reason provided".to_owned(),
            };
            (pass, score, reason)
        }
        _ => {
            let lower = reply.to_lowercase();
            let pass = lower.contains("\"pass\":true") || lower.contains("\"pass\": true");
            (pass, f64::from(u8::from(pass)), reply.clone())
        }
    };
    let reason = if inverse {
        pass = !pass;
        if pass {
            format!("Output does not require web search verification: {reason}")
        } else {
            format!("Output requires web search verification: {reason}")
        }
    } else {
        reason
    };
    Ok(crate::judged(pass, score, reason))
}

/// `select-best` (promptfoo's `matchesSelectBest`), called once for a
/// group of outputs (`__outputs`, in promptfoo's order): the text grader
/// names the index of the one that best fits the criteria. The grade's
/// details say which (`best`), or that none could be chosen (`best` null,
/// and why): then every output fails.
pub fn select_best(request: &Request) -> Result<Grade, GradeError> {
    let criteria = match request.config.get("value") {
        Some(Value::String(s)) => s.clone(),
        _ => {
            return Err(GradeError::Failed(
                "select-best must have a string value".into(),
            ));
        }
    };
    let outputs: Vec<String> = match request.config.get("__outputs") {
        Some(Value::Array(items)) => items.iter().map(crate::js::string).collect(),
        _ => {
            return Err(GradeError::Failed(
                "select-best is graded across the outputs of a test, by the host once all of them exist".into(),
            ));
        }
    };
    if outputs.len() < 2 {
        return Err(GradeError::Failed(
            "select-best assertion must have at least two outputs to compare between".into(),
        ));
    }
    let parsed: Vec<Value> = outputs.iter().map(|o| try_parse(o)).collect();
    let messages = grading::messages(
        request,
        grading::custom_prompt(request).as_deref(),
        prompts::SELECT_BEST,
        &[
            ("criteria", Value::String(criteria.clone())),
            ("outputs", Value::Array(parsed)),
        ],
    )?;
    let reply = grading::ask(request, messages)?;
    let none = |reason: String| {
        let mut g = Grade::new(0.0);
        g.checks
            .push(evalhost_plugin_sdk::Check::new(false, reason.clone()));
        g.with_details(serde_json::json!({"verdict": "fail", "best": null, "reason": reason}))
    };
    if reply.is_empty() {
        return Ok(none("No output".into()));
    }
    // promptfoo: the first run of digits in the trimmed reply.
    let digits: String = crate::js::trim(&reply)
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    let best = digits.parse::<usize>().ok().filter(|b| *b < outputs.len());
    Ok(match best {
        Some(b) => {
            let mut g = Grade::new(1.0);
            g.checks.push(evalhost_plugin_sdk::Check::new(
                true,
                format!("Output {b} selected as the best: {criteria}"),
            ));
            g.with_details(serde_json::json!({"verdict": "pass", "best": b}))
        }
        None => none(format!(
            "Invalid select-best verdict: {}",
            if digits.is_empty() {
                "NaN".to_owned()
            } else {
                // parseInt of a long run of digits: JavaScript's number.
                crate::js::number(digits.parse::<f64>().unwrap_or(f64::NAN))
            }
        )),
    })
}

#[cfg(test)]
mod tests;
