//! promptfoo's retrieval types (its RAGAS ports): `context-recall`,
//! `context-relevance` and `context-faithfulness` (`matchesContextRecall`,
//! `matchesContextRelevance`, `matchesContextFaithfulness`), each asking
//! the text grader and counting what its reply says, as promptfoo counts.
//!
//! The context is the test's `context` var (text, or a list of chunks),
//! else, for `context-recall` only, the prompt. The prompts have promptfoo's
//! structure in evalhost's words; the markers the counting reads
//! (`[Attributed]`, `Insufficient Information`, `Final verdict for each
//! statement in order:`) are promptfoo's, since they are the protocol.
//! `not-` is ignored, as promptfoo's handlers ignore it.

use evalhost_plugin_sdk::{Grade, GradeError, Request, Value};

use crate::grading::{self, try_parse};
use crate::prompts;

const ATTRIBUTED: &str = "[attributed]";
const NOT_ATTRIBUTED: &str = "[not attributed]";
const INSUFFICIENT: &str = "Insufficient Information";
const FINAL_VERDICT: &str = "final verdict for each statement in order:";

/// promptfoo's `splitIntoSentences`: the non-blank lines.
fn lines(text: &str) -> Vec<&str> {
    text.split('\n')
        .filter(|l| !crate::js::trim(l).is_empty())
        .collect()
}

/// promptfoo's `splitTextIntoSentences`: two or more non-blank lines are
/// the units; else the text split after `.`, `!` or `?` and whitespace;
/// trimmed, without empty units or bare list markers (`1.`, `2)`).
fn sentences(text: &str) -> Vec<String> {
    let ls = lines(text);
    let parts: Vec<&str> = if ls.len() > 1 {
        ls
    } else {
        let mut parts = Vec::new();
        let mut start = 0;
        let mut prev: Option<char> = None;
        let mut iter = text.char_indices().peekable();
        while let Some((i, c)) = iter.next() {
            if crate::js::is_js_space(c) && matches!(prev, Some('.' | '!' | '?')) {
                parts.push(&text[start..i]);
                let mut end = i + c.len_utf8();
                while let Some(&(j, d)) = iter.peek() {
                    if !crate::js::is_js_space(d) {
                        break;
                    }
                    end = j + d.len_utf8();
                    iter.next();
                }
                start = end;
                prev = None;
                continue;
            }
            prev = Some(c);
        }
        parts.push(&text[start..]);
        parts
    };
    parts
        .into_iter()
        .map(|s| crate::js::trim(s).to_owned())
        .filter(|s| !s.is_empty() && !is_list_marker(s))
        .collect()
}

/// `/^\d+[.)]$/`.
fn is_list_marker(s: &str) -> bool {
    let Some(body) = s.strip_suffix(['.', ')']) else {
        return false;
    };
    !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit())
}

/// The context: a text, or chunks.
enum Context {
    Text(String),
    Chunks(Vec<String>),
}

impl Context {
    /// promptfoo's `serializeContext`: chunks joined by a blank line.
    fn joined(&self) -> String {
        match self {
            Context::Text(t) => t.clone(),
            Context::Chunks(c) => c.join("\n\n"),
        }
    }
}

/// promptfoo's `resolveContext`: the `context` var (text, or a list of
/// texts), else `fallback`; it must not be empty.
fn context(request: &Request, fallback: Option<String>) -> Result<Context, GradeError> {
    let vars = grading::vars(request);
    let var = vars.get("context");
    // JavaScript truthiness: an empty text is no context var.
    let set = match var {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        Some(_) => true,
    };
    let found = if set {
        match var {
            Some(Value::String(s)) => Some(Context::Text(s.clone())),
            Some(Value::Array(items)) => {
                let mut chunks = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => chunks.push(s.clone()),
                        other => {
                            return Err(GradeError::Failed(format!(
                                "Invalid context: expected an array of strings, but found {} at index {i}",
                                match other {
                                    Value::Number(_) => "number",
                                    Value::Bool(_) => "boolean",
                                    _ => "object",
                                }
                            )));
                        }
                    }
                }
                Some(Context::Chunks(chunks))
            }
            _ => None,
        }
    } else {
        fallback.map(Context::Text)
    };
    match found {
        Some(Context::Text(t)) if !t.is_empty() => Ok(Context::Text(t)),
        Some(Context::Chunks(c)) if !c.is_empty() && c.iter().all(|s| !s.is_empty()) => {
            Ok(Context::Chunks(c))
        }
        _ => Err(GradeError::Failed(
            "Context is required for context-based assertions. Provide either a \"context\" variable (string or array of strings) in your test case or use \"contextTransform\" to extract context from the provider response.".into(),
        )),
    }
}

/// The test's `query` var, which two of the types need.
fn query(request: &Request, kind: &str) -> Result<String, GradeError> {
    match grading::vars(request).get("query") {
        Some(Value::String(q)) => Ok(q.clone()),
        _ => Err(GradeError::Failed(format!(
            "{kind} assertion requires a \"query\" variable with the user question"
        ))),
    }
}

fn threshold(request: &Request) -> Result<f64, GradeError> {
    Ok(request
        .config
        .optional_f64("threshold")
        .map_err(GradeError::Failed)?
        .unwrap_or(0.0))
}

/// promptfoo's comparison: at the threshold, within a rounding error.
fn reaches(score: f64, threshold: f64) -> bool {
    score >= threshold - f64::EPSILON
}

fn verdict(name: &str, score: f64, threshold: f64) -> Grade {
    let pass = reaches(score, threshold);
    crate::judged(
        pass,
        score,
        format!(
            "{name} {} is {} {}",
            crate::js::to_fixed(score, 2),
            if pass { ">=" } else { "<" },
            crate::js::number(threshold)
        ),
    )
}

/// `context-recall`: the share of the expected answer's sentences the
/// grader attributes to the context.
pub fn context_recall(request: &Request) -> Result<Grade, GradeError> {
    let Some(Value::String(truth)) = request.config.get("value") else {
        return Err(GradeError::Failed(
            "context-recall assertion requires a string value (expected answer or fact to verify)"
                .into(),
        ));
    };
    let threshold = threshold(request)?;
    let ctx = context(request, Some(grading::prompt(request)))?.joined();
    let messages = grading::messages(
        request,
        grading::custom_prompt(request).as_deref(),
        prompts::CONTEXT_RECALL,
        &[
            ("context", Value::String(ctx.clone())),
            ("groundTruth", Value::String(truth.clone())),
        ],
    )?;
    let reply = grading::ask(request, messages)?;
    if reply.is_empty() {
        return Ok(crate::judged(false, 0.0, "No output".into()));
    }
    let marked: Vec<String> = lines(&reply)
        .into_iter()
        .map(str::to_lowercase)
        .filter(|l| l.contains(ATTRIBUTED) || l.contains(NOT_ATTRIBUTED))
        .collect();
    let attributed = marked
        .iter()
        .filter(|l| !l.contains(NOT_ATTRIBUTED) && l.contains(ATTRIBUTED))
        .count();
    let score = if marked.is_empty() {
        0.0
    } else {
        attributed as f64 / marked.len() as f64
    };
    Ok(verdict("Recall", score, threshold))
}

/// `context-relevance`: the share of the context's units (its chunks, its
/// lines, or its sentences) the grader copies out as needed for the query.
pub fn context_relevance(request: &Request) -> Result<Grade, GradeError> {
    let query = query(request, "context-relevance")?;
    let threshold = threshold(request)?;
    let ctx = context(request, None)?;
    let joined = ctx.joined();
    let messages = grading::messages_own(
        grading::custom_prompt(request).as_deref(),
        prompts::CONTEXT_RELEVANCE,
        &[
            ("context", Value::String(joined.clone())),
            ("query", Value::String(query.clone())),
        ],
    )?;
    let reply = grading::ask(request, messages)?;
    if reply.is_empty() {
        return Ok(crate::judged(false, 0.0, "No output".into()));
    }
    let (pre_segmented, units) = match &ctx {
        Context::Chunks(c) => (
            true,
            c.iter().filter(|s| !crate::js::trim(s).is_empty()).count(),
        ),
        Context::Text(t) => (lines(t).len() > 1, sentences(t).len()),
    };
    let relevant = if reply.contains(INSUFFICIENT) {
        0
    } else {
        let mut found: Vec<String> = if pre_segmented {
            lines(&reply).into_iter().map(str::to_owned).collect()
        } else {
            sentences(&reply)
        };
        let mut seen = std::collections::HashSet::new();
        found.retain(|s| seen.insert(s.clone()));
        found.len()
    };
    let score = if units > 0 {
        relevant.min(units) as f64 / units as f64
    } else {
        0.0
    };
    Ok(verdict("Context relevance", score, threshold))
}

/// `context-faithfulness`: the grader breaks the output into statements,
/// then says which the context supports; the score is the supported share
/// (statements without a verdict count as unsupported).
pub fn context_faithfulness(request: &Request) -> Result<Grade, GradeError> {
    let query = query(request, "context-faithfulness")?;
    let threshold = threshold(request)?;
    let ctx = context(request, None)?.joined();
    // A rubricPrompt here is a pair: the statements prompt, the NLI one.
    let (custom_statements, custom_nli) = match request.config.get("__rubric_prompt") {
        None | Some(Value::Null) => (None, None),
        Some(Value::Array(parts)) => {
            let part = |i: usize| match parts.get(i) {
                Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                Some(Value::Object(o)) => o
                    .get("content")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
                _ => None,
            };
            (part(0), part(1))
        }
        Some(_) => {
            return Err(GradeError::Failed("rubricPrompt must be an array".into()));
        }
    };
    let answer = try_parse(&request.output);
    let messages = grading::messages(
        request,
        custom_statements.as_deref(),
        prompts::FAITHFULNESS_STATEMENTS,
        &[
            ("question", Value::String(query.clone())),
            ("answer", answer.clone()),
        ],
    )?;
    let reply = grading::ask(request, messages)?;
    if reply.is_empty() {
        return Ok(crate::judged(false, 0.0, "No output".into()));
    }
    let statements: Vec<String> = lines(&reply).into_iter().map(str::to_owned).collect();
    let messages = grading::messages(
        request,
        custom_nli.as_deref(),
        prompts::FAITHFULNESS_NLI,
        &[
            ("context", Value::String(ctx.clone())),
            (
                "statements",
                Value::Array(statements.iter().cloned().map(Value::String).collect()),
            ),
        ],
    )?;
    let reply = grading::ask(request, messages)?;
    if reply.is_empty() {
        return Ok(crate::judged(false, 0.0, "No output".into()));
    }
    let n = statements.len() as f64;
    let verdicts = crate::js::trim(&reply.to_lowercase()).to_owned();
    let mut score = 0.0;
    if !statements.is_empty() {
        if let Some(at) = verdicts.find(FINAL_VERDICT) {
            let rest = &verdicts[at + FINAL_VERDICT.len()..];
            let parsed: Vec<&str> = rest
                .split('.')
                .filter(|a| !crate::js::trim(a).is_empty())
                .collect();
            if !parsed.is_empty() {
                let unsupported = parsed.iter().filter(|a| !a.contains("yes")).count() as f64;
                let missing = (n - parsed.len() as f64).max(0.0);
                score = 1.0 - (unsupported + missing) / n;
            }
        } else {
            let no = verdicts.matches("verdict: no").count() as f64;
            let yes = verdicts.matches("verdict: yes").count() as f64;
            if no + yes > 0.0 {
                score = 1.0 - (no + (n - no - yes).max(0.0)) / n;
            }
        }
    }
    let score = score.clamp(0.0, 1.0);
    Ok(verdict("Faithfulness", score, threshold))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_segmented_as_promptfoo_segments_it() {
        assert_eq!(
            sentences("1. Paris is big.  2. It is old! Is it? yes"),
            vec!["Paris is big.", "It is old!", "Is it?", "yes"]
        );
        // Two or more lines: the lines.
        assert_eq!(sentences("a. b.\n\nc"), vec!["a. b.", "c"]);
        // One line with a leading newline is still prose.
        assert_eq!(sentences("\nA. B."), vec!["A.", "B."]);
        assert_eq!(lines("x\n \ny\n"), vec!["x", "y"]);
        assert!(is_list_marker("12)") && !is_list_marker(")") && !is_list_marker("1.5"));
    }
}
