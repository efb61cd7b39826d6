//! promptfoo's `tool-call-f1` (`src/assertions/toolCallF1.ts`,
//! `pf:evaluator-8V_ULngs.js:3866-4000`): the F1 score between the expected
//! tool names and the names `extractToolNames` finds in the output.

use std::collections::BTreeSet;

use evalhost_plugin_sdk::{Config, Grade, GradeError, Value};

use crate::{js, js_num, judged};

/// The tool names of a parsed output (`extractToolNames` on an object).
fn names_of(v: &Value, names: &mut Vec<String>) {
    let mut add = |n: &str| {
        if !names.iter().any(|x| x == n) {
            names.push(n.to_owned());
        }
    };
    let name_of = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_owned);
    // `x && typeof x === "object"`: an object or an array.
    let is_object = |v: Option<&Value>| matches!(v, Some(Value::Object(_) | Value::Array(_)));
    match v {
        Value::String(s) => {
            for n in extract_tool_names(s) {
                add(&n);
            }
        }
        Value::Object(obj) => {
            if let Some(Value::Array(calls)) = obj.get("tool_calls") {
                for tc in calls {
                    if let Value::Object(call) = tc {
                        if let Some(f @ Value::Object(_)) = call.get("function")
                            && let Some(n) = name_of(f)
                        {
                            add(&n);
                        }
                        if let Some(Value::String(n)) = call.get("name") {
                            add(n);
                        }
                    }
                }
                return;
            }
            if obj.get("type").and_then(Value::as_str) == Some("tool_use")
                && let Some(Value::String(n)) = obj.get("name")
            {
                add(n);
                return;
            }
            if is_object(obj.get("functionCall")) {
                if let Some(n) = obj.get("functionCall").and_then(name_of) {
                    add(&n);
                }
                return;
            }
            if is_object(obj.get("toolCall"))
                && let Some(Value::Array(fcs)) =
                    obj.get("toolCall").and_then(|t| t.get("functionCalls"))
            {
                for fc in fcs {
                    if let Some(n) = name_of(fc) {
                        add(&n);
                    }
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                let Value::Object(block) = item else {
                    continue;
                };
                if block.get("type").and_then(Value::as_str) == Some("tool_use")
                    && let Some(Value::String(n)) = block.get("name")
                {
                    add(n);
                    continue;
                }
                if is_object(block.get("functionCall")) {
                    if let Some(n) = block.get("functionCall").and_then(name_of) {
                        add(&n);
                    }
                    continue;
                }
                if is_object(block.get("function")) {
                    if let Some(n) = block.get("function").and_then(name_of) {
                        add(&n);
                    }
                    continue;
                }
                if let Some(Value::String(n)) = block.get("name") {
                    add(n);
                }
            }
        }
        _ => {}
    }
}

/// `extractToolNames(output)` for a string output: the output parsed as
/// JSON, else each line that starts with `{` or `[` and parses. In the
/// order first seen (a JavaScript `Set`).
pub fn extract_tool_names(output: &str) -> Vec<String> {
    let mut names = Vec::new();
    if let Some(parsed) = crate::js::json_parse(output) {
        names_of(&parsed, &mut names);
        return names;
    }
    for line in output.split('\n') {
        let trimmed = crate::js::trim(line);
        if (trimmed.starts_with('{') || trimmed.starts_with('['))
            && let Some(parsed) = crate::js::json_parse(trimmed)
        {
            names_of(&parsed, &mut names);
        }
    }
    names
}

/// The expected tools of a `value`: a list (`String` of each item), or a
/// comma string split and trimmed. `None` for any other value.
pub fn expected_tools(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Array(items) => Some(items.iter().map(crate::js::string).collect()),
        Value::String(s) => Some(
            s.split(',')
                .map(|p| crate::js::trim(p).to_owned())
                .collect(),
        ),
        _ => None,
    }
}

/// The F1 result, with promptfoo's precision and recall.
pub struct F1 {
    pub f1: f64,
    pub precision: f64,
    pub recall: f64,
    /// Expected names, sorted (JavaScript's default sort: UTF-16 order).
    pub expected: Vec<String>,
    /// Called names, sorted.
    pub actual: Vec<String>,
}

/// JavaScript's default `Array.prototype.sort` order: by UTF-16 code units.
fn js_sort(v: &mut [String]) {
    v.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
}

/// The F1 score of `output` against `expected`.
pub fn score(output: &str, expected: &[String]) -> F1 {
    let expected: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    let actual = extract_tool_names(output);
    let hits = expected
        .iter()
        .filter(|e| actual.iter().any(|a| a == *e))
        .count() as f64;
    let precision = if actual.is_empty() {
        0.0
    } else {
        hits / actual.len() as f64
    };
    let recall = if expected.is_empty() {
        0.0
    } else {
        hits / expected.len() as f64
    };
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    let mut e: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
    let mut a = actual;
    js_sort(&mut e);
    js_sort(&mut a);
    F1 {
        f1,
        precision,
        recall,
        expected: e,
        actual: a,
    }
}

/// promptfoo's `tool-call-f1`: the F1 of the expected tool names and the
/// called ones reaches the threshold (default 1); `not-` flips the pass
/// only.
pub(crate) fn grade(
    output: &str,
    config: &Config,
    value: &Value,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let expected = expected_tools(value)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            GradeError::Failed("\"tool-call-f1\" assertion requires a value: array of tool names or comma-separated string".into())
        })?;
    let r = score(output, &expected);
    let threshold = config.optional_f64("threshold")?.unwrap_or(1.0);
    // `not-` flips the pass only: the score stays the F1.
    let pass = (r.f1 >= threshold) != inverse;
    let expected_list = r.expected.join(", ");
    let actual_list = if r.actual.is_empty() {
        "(none)".to_owned()
    } else {
        r.actual.join(", ")
    };
    let f = |x: f64| js::to_fixed(x, 3);
    Ok(judged(
        pass,
        r.f1,
        if pass {
            format!(
                "Tool Call F1: {} (precision={}, recall={}). Expected: [{expected_list}], Called: [{actual_list}]",
                f(r.f1),
                f(r.precision),
                f(r.recall)
            )
        } else {
            format!(
                "Tool Call F1 score {} is {} threshold {}. Expected: [{expected_list}], Called: [{actual_list}]. Precision={}, Recall={}",
                f(r.f1),
                if inverse { "above" } else { "below" },
                js_num(threshold),
                f(r.precision),
                f(r.recall)
            )
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_found_in_every_shape() {
        let openai = r#"{"tool_calls":[{"function":{"name":"search"}},{"name":"fetch"}]}"#;
        assert_eq!(extract_tool_names(openai), ["search", "fetch"]);
        let anthropic = r#"[{"type":"text","text":"hi"},{"type":"tool_use","name":"calc"}]"#;
        assert_eq!(extract_tool_names(anthropic), ["calc"]);
        let gemini = r#"{"functionCall":{"name":"weather"}}"#;
        assert_eq!(extract_tool_names(gemini), ["weather"]);
        let live = r#"{"toolCall":{"functionCalls":[{"name":"a"},{"name":"b"}]}}"#;
        assert_eq!(extract_tool_names(live), ["a", "b"]);
        let mixed =
            "I will call tools.\n  {\"type\":\"tool_use\",\"name\":\"x\"}\n[{\"name\":\"y\"}]";
        assert_eq!(extract_tool_names(mixed), ["x", "y"]);
        // A JSON string holding JSON is read again.
        let nested = r#""{\"functionCall\":{\"name\":\"deep\"}}""#;
        assert_eq!(extract_tool_names(nested), ["deep"]);
        assert!(extract_tool_names("no tools").is_empty());
    }

    #[test]
    fn f1_is_the_harmonic_mean() {
        let out = r#"[{"name":"a"},{"name":"b"},{"name":"c"}]"#;
        let r = score(out, &["a".into(), "d".into()]);
        assert!((r.precision - 1.0 / 3.0).abs() < 1e-12);
        assert!((r.recall - 0.5).abs() < 1e-12);
        assert!((r.f1 - 0.4).abs() < 1e-12);
        assert_eq!(r.expected, ["a", "d"]);
        assert_eq!(r.actual, ["a", "b", "c"]);
    }
}
