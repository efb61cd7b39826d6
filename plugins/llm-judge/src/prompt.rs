//! Judge prompts: AgentV's template variables and section layout
//! (`[[ ## name ## ]]`), written for evalhost.

use evalhost_plugin_sdk::{GradeError, Request, Value, json};

use crate::criterion::Criterion;

/// Instructions for a free-form judge.
pub const FREE_FORM_SYSTEM: &str = "You are an impartial expert grader. Judge the answer against the criteria and \
the reference answer when one is given. Reply with a single JSON object and nothing else: \
{\"score\": <number from 0 to 1>, \"assertions\": [{\"text\": <what you checked>, \"passed\": <true|false>, \
\"evidence\": <a short quote or reason>}], \"details\": {<anything useful>}}";

/// Instructions for a checklist judge.
pub const CHECKLIST_SYSTEM: &str = "You are an impartial expert grader. Decide for each rubric item whether the \
answer satisfies it. Reply with a single JSON object and nothing else: {\"checks\": [{\"id\": <rubric id>, \
\"satisfied\": <true|false>, \"reasoning\": <one or two sentences>}], \"overall_reasoning\": <a sentence>}. \
Give one check for every rubric id.";

/// Instructions for a score-range judge.
pub const SCORE_RANGE_SYSTEM: &str = "You are an impartial expert grader. Score the answer on each criterion with \
an integer from 0 to 10 matching one of its score ranges. Reply with a single JSON object and nothing else: \
{\"checks\": [{\"id\": <criterion id>, \"score\": <integer 0-10>, \"reasoning\": <one or two sentences>}], \
\"overall_reasoning\": <a sentence>}. Give one check for every criterion id.";

/// The free-form reply's schema.
pub fn free_form_schema() -> Value {
    json!({
        "type": "object",
        "required": ["score"],
        "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "assertions": {"type": "array", "items": {"type": "object", "required": ["text", "passed"],
                "properties": {"text": {"type": "string"}, "passed": {"type": "boolean"}, "evidence": {"type": "string"}}}},
            "details": {"type": "object"},
        },
    })
}

/// The checklist or score-range reply's schema.
pub fn checks_schema(scored: bool) -> Value {
    let verdict = if scored {
        json!({"score": {"type": "integer", "minimum": 0, "maximum": 10}})
    } else {
        json!({"satisfied": {"type": "boolean"}})
    };
    let mut props = json!({"id": {"type": "string"}, "reasoning": {"type": "string"}});
    for (k, v) in verdict.as_object().into_iter().flatten() {
        props[k] = v.clone();
    }
    json!({
        "type": "object",
        "required": ["checks"],
        "properties": {
            "checks": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": props}},
            "overall_reasoning": {"type": "string"},
        },
    })
}

/// The question: every user message's text.
fn question(request: &Request) -> String {
    request
        .input
        .iter()
        .filter(|m| m.role == "user")
        .map(|m| m.content.trim())
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn tool_calls(request: &Request) -> String {
    request
        .output_messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|c| {
            format!(
                "- {} {}",
                c.tool,
                c.input
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every template variable.
pub fn variables(request: &Request, criteria: Option<&[Criterion]>) -> Vec<(&'static str, String)> {
    let metadata = &request.metadata;
    let rubrics: Value = criteria.map_or(Value::Null, |c| {
        Value::Array(c.iter().map(|r| json!({"id": r.id, "outcome": r.outcome, "weight": r.weight, "required": r.required})).collect())
    });
    let q = question(request);
    let expected = request
        .expected_output
        .clone()
        .unwrap_or_default()
        .trim()
        .to_owned();
    vec![
        ("input", q.clone()),
        ("input_text", q),
        ("output", request.output.trim().to_owned()),
        ("output_text", request.output.trim().to_owned()),
        ("expected_output", expected.clone()),
        ("expected_output_text", expected),
        (
            "criteria",
            request
                .criteria
                .clone()
                .unwrap_or_default()
                .trim()
                .to_owned(),
        ),
        (
            "metadata",
            serde_json::to_string_pretty(metadata).unwrap_or_default(),
        ),
        ("metadata_json", metadata.to_string()),
        (
            "rubrics",
            if rubrics.is_null() {
                String::new()
            } else {
                serde_json::to_string_pretty(&rubrics).unwrap_or_default()
            },
        ),
        (
            "rubrics_json",
            if rubrics.is_null() {
                String::new()
            } else {
                rubrics.to_string()
            },
        ),
        (
            "file_changes",
            request.trace.file_changes.clone().unwrap_or_default(),
        ),
        ("tool_calls", tool_calls(request)),
    ]
}

/// Replaces `{{ name }}` with known variables; unknown ones stay.
pub fn fill(template: &str, vars: &[(&'static str, String)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start + 2..].find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = rest[start + 2..start + 2 + len].trim();
        match vars.iter().find(|(k, _)| *k == name) {
            Some((_, v)) => out.push_str(v),
            None => out.push_str(&rest[start..start + 2 + len + 2]),
        }
        rest = &rest[start + 2 + len + 2..];
    }
    out.push_str(rest);
    out
}

fn has_known_variable(template: &str) -> bool {
    [
        "input",
        "output",
        "expected_output",
        "criteria",
        "metadata",
        "rubrics",
        "file_changes",
        "tool_calls",
    ]
    .iter()
    .any(|v| {
        template.contains(&format!("{{{{{v}}}}}")) || template.contains(&format!("{{{{ {v} }}}}"))
    })
}

fn sections(parts: &[(&str, String)]) -> String {
    parts
        .iter()
        .filter(|(_, text)| !text.trim().is_empty())
        .map(|(name, text)| format!("[[ ## {name} ## ]]\n{text}"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The free-form prompt: the default template, or the config's `prompt`.
/// Inline text without a known variable is the criteria of the default
/// template (as AgentV).
pub fn free_form(request: &Request) -> Result<(String, String), GradeError> {
    let vars = variables(request, None);
    let get = |k: &str| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let custom = request
        .config
        .optional_str("prompt")
        .map_err(GradeError::Failed)?;
    let whole = request
        .config
        .optional_bool("prompt_is_template")
        .map_err(GradeError::Failed)?
        .unwrap_or(false);
    let user = match custom {
        Some(template) if whole || has_known_variable(template) => fill(template, &vars),
        other => {
            let criteria = other.map(str::to_owned).unwrap_or_else(|| get("criteria"));
            let mut text = String::from("Grade the answer to the question below.\n\n");
            text.push_str(&sections(&[
                (
                    "criteria",
                    if criteria.is_empty() {
                        "The answer is correct, complete and helpful.".into()
                    } else {
                        criteria
                    },
                ),
                ("question", get("input")),
                ("reference_answer", get("expected_output")),
                ("answer", get("output")),
                ("file_changes", get("file_changes")),
                ("tool_calls", get("tool_calls")),
            ]));
            text
        }
    };
    Ok((FREE_FORM_SYSTEM.to_owned(), user))
}

/// The rubric prompt (checklist or score ranges).
pub fn rubric(request: &Request, criteria: &[Criterion]) -> Result<(String, String), GradeError> {
    let scored = criteria.iter().any(|c| !c.score_ranges.is_empty());
    let system = if scored {
        SCORE_RANGE_SYSTEM
    } else {
        CHECKLIST_SYSTEM
    }
    .to_owned();
    let vars = variables(request, Some(criteria));
    if let Some(template) = request
        .config
        .optional_str("prompt")
        .map_err(GradeError::Failed)?
    {
        return Ok((system, fill(template, &vars)));
    }
    let get = |k: &str| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let mut items = String::new();
    for c in criteria {
        if scored {
            items.push_str(&format!(
                "### Criterion: {}{}\n",
                c.id,
                if c.weight == 1.0 {
                    String::new()
                } else {
                    format!(" (weight: {})", c.weight)
                }
            ));
            items.push_str(&format!("Description: {}\n", c.outcome));
            for (lo, hi, outcome) in &c.score_ranges {
                let label = if lo == hi {
                    lo.to_string()
                } else {
                    format!("{lo}-{hi}")
                };
                items.push_str(&format!("  - Score {label}: {outcome}\n"));
            }
        } else {
            items.push_str(&format!(
                "- [{}]{}{}: {}\n",
                c.id,
                if c.required { " (REQUIRED)" } else { "" },
                if c.weight == 1.0 {
                    String::new()
                } else {
                    format!(" (weight: {})", c.weight)
                },
                c.outcome
            ));
        }
    }
    let mut text = String::from(if scored {
        "Score the answer below on each criterion.\n\n"
    } else {
        "Check the answer below against each rubric item.\n\n"
    });
    text.push_str(&sections(&[
        ("question", get("input")),
        ("criteria", get("criteria")),
        ("reference_answer", get("expected_output")),
        ("answer", get("output")),
        ("file_changes", get("file_changes")),
        ("tool_calls", get("tool_calls")),
        (
            if scored {
                "scoring_criteria"
            } else {
                "rubrics"
            },
            items,
        ),
    ]));
    Ok((system, text))
}
