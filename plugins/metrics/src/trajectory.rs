//! `tool-trajectory`: the tools the agent called, against an expected
//! trajectory, in AgentV 4.42's five modes with its `args_match` rules and
//! per-tool latency checks.

use evalhost_plugin_sdk::{Check, Config, Grade, Request, Value};

use crate::js::deep_equal;

const MODES: &[&str] = &["any_order", "in_order", "exact", "subset", "superset"];
const ARG_MODES: &[&str] = &["exact", "superset", "subset", "ignore"];
const ITEM_KEYS: &[&str] = &[
    "tool",
    "args",
    "input",
    "output",
    "args_match",
    "argsMatch",
    "max_duration_ms",
    "maxDurationMs",
];

/// How an expected call's arguments are compared.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgsMatch {
    Exact,
    Superset,
    Subset,
    Ignore,
    /// Only these fields (dotted paths) are compared.
    Fields(Vec<String>),
}

/// An expected arguments constraint.
#[derive(Debug, Clone, PartialEq)]
pub enum Args {
    /// No constraint (`args` absent).
    Unset,
    /// `args: any`.
    Any,
    /// These arguments.
    Value(Value),
}

#[derive(Debug, Clone)]
struct Expected {
    tool: String,
    args: Args,
    /// `output`: what the tool's result must contain (beyond AgentV, which
    /// reads but ignores it).
    output: Option<Value>,
    /// Written as `input`: without an `args_match`, the call must have
    /// these arguments and may have more (AgentV's example writes the ones
    /// that matter, expecting a match).
    from_input: bool,
    args_match: Option<ArgsMatch>,
    max_duration_ms: Option<f64>,
}

struct Spec {
    mode: String,
    minimums: Vec<(String, f64)>,
    expected: Vec<Expected>,
    args_match: Option<ArgsMatch>,
}

fn args_match(value: &Value, key: &str) -> Result<Option<ArgsMatch>, String> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => match s.as_str() {
            "exact" => Ok(Some(ArgsMatch::Exact)),
            "superset" => Ok(Some(ArgsMatch::Superset)),
            "subset" => Ok(Some(ArgsMatch::Subset)),
            "ignore" => Ok(Some(ArgsMatch::Ignore)),
            other => Err(format!(
                "`{key}` must be {} or a list of field paths, got {other:?}",
                ARG_MODES.join(", ")
            )),
        },
        Value::Array(items) => {
            let mut fields = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(s) if !s.is_empty() => fields.push(s.to_owned()),
                    _ => return Err(format!("`{key}[{i}]` must be a non-empty field path")),
                }
            }
            if fields.is_empty() {
                return Err(format!(
                    "`{key}` is an empty list: name the fields to compare, or use `ignore`"
                ));
            }
            Ok(Some(ArgsMatch::Fields(fields)))
        }
        other => Err(format!(
            "`{key}` must be {} or a list of field paths, got {}",
            ARG_MODES.join(", "),
            crate::show(other)
        )),
    }
}

fn spec(config: &Config) -> Result<Spec, String> {
    let mode = match config.get("mode") {
        Some(Value::String(m)) if MODES.contains(&m.as_str()) => m.clone(),
        Some(other) => {
            return Err(format!(
                "`mode` must be one of {}, got {}",
                MODES.join(", "),
                crate::show(other)
            ));
        }
        None => return Err(format!("missing `mode` (one of {})", MODES.join(", "))),
    };
    let top_key = if config.get("args_match").is_some() {
        "args_match"
    } else {
        "argsMatch"
    };
    let top_args = match config.get(top_key) {
        Some(v) => args_match(v, top_key)?,
        None => None,
    };
    let mut minimums = Vec::new();
    match config.get("minimums") {
        None | Some(Value::Null) => {
            if mode == "any_order" {
                return Err(
                    "`any_order` mode needs `minimums` (tool name → least number of calls)".into(),
                );
            }
        }
        Some(Value::Object(map)) => {
            for (tool, n) in map {
                match n.as_f64() {
                    Some(x) if x.is_finite() && x >= 0.0 => minimums.push((tool.clone(), x)),
                    _ => {
                        return Err(format!(
                            "`minimums.{tool}` must be a non-negative number, got {}",
                            crate::show(n)
                        ));
                    }
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "`minimums` must map tool names to counts, got {}",
                crate::show(other)
            ));
        }
    }
    let mut expected = Vec::new();
    match config.get("expected") {
        None | Some(Value::Null) => {
            if mode != "any_order" {
                return Err(format!(
                    "`{mode}` mode needs `expected` (a list of {{tool, args?, args_match?, max_duration_ms?}})"
                ));
            }
        }
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let at = format!("expected[{i}]");
                let Value::Object(o) = item else {
                    return Err(format!(
                        "`{at}` must be a mapping with `tool`, got {}",
                        crate::show(item)
                    ));
                };
                if let Some(unknown) = o.keys().find(|k| !ITEM_KEYS.contains(&k.as_str())) {
                    return Err(format!(
                        "`{at}.{unknown}` is not a key of an expected tool call (known: tool, args or input, output, args_match, max_duration_ms)"
                    ));
                }
                let tool = match o.get("tool") {
                    Some(Value::String(t)) if !t.is_empty() => t.clone(),
                    _ => return Err(format!("`{at}.tool` must be the tool's name")),
                };
                if o.contains_key("args") && o.contains_key("input") {
                    return Err(format!(
                        "`{at}` has both `args` and `input`; they are the same: keep one"
                    ));
                }
                let args_key = if o.contains_key("input") {
                    "input"
                } else {
                    "args"
                };
                let args = match o.get(args_key) {
                    None | Some(Value::Null) => Args::Unset,
                    Some(Value::String(s)) if s == "any" => Args::Any,
                    Some(v @ Value::Object(_)) => Args::Value(v.clone()),
                    Some(other) => {
                        return Err(format!(
                            "`{at}.{args_key}` must be a mapping of arguments or `any`, got {}",
                            crate::show(other)
                        ));
                    }
                };
                let key = if o.contains_key("args_match") {
                    "args_match"
                } else {
                    "argsMatch"
                };
                let item_args = match o.get(key) {
                    Some(v) => args_match(v, &format!("{at}.{key}"))?,
                    None => None,
                };
                let dkey = if o.contains_key("max_duration_ms") {
                    "max_duration_ms"
                } else {
                    "maxDurationMs"
                };
                let max_duration_ms = match o.get(dkey) {
                    None | Some(Value::Null) => None,
                    Some(v) => match v.as_f64() {
                        Some(x) if x.is_finite() && x >= 0.0 => Some(x),
                        _ => {
                            return Err(format!(
                                "`{at}.{dkey}` must be a non-negative number, got {}",
                                crate::show(v)
                            ));
                        }
                    },
                };
                expected.push(Expected {
                    tool,
                    args,
                    output: o.get("output").filter(|v| !v.is_null()).cloned(),
                    from_input: args_key == "input",
                    args_match: item_args,
                    max_duration_ms,
                });
            }
        }
        Some(other) => {
            return Err(format!(
                "`expected` must be a list of tool calls, got {}",
                crate::show(other)
            ));
        }
    }
    Ok(Spec {
        mode,
        minimums,
        expected,
        args_match: top_args,
    })
}

pub fn check(config: &Config) -> Result<(), String> {
    spec(config).map(drop)
}

/// A value at a dotted path (`a.b.0`), as AgentV's `getNestedValue`.
fn nested<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = value;
    for part in path.split('.') {
        current = match current {
            Value::Object(o) => o.get(part)?,
            Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// AgentV's `argsMatch`.
fn args_ok(expected: &Args, actual: Option<&Value>, mode: &ArgsMatch) -> bool {
    let expected = match expected {
        Args::Unset | Args::Any => return true,
        Args::Value(v) => v,
    };
    if *mode == ArgsMatch::Ignore {
        return true;
    }
    let Some(actual) = actual else { return false };
    match mode {
        ArgsMatch::Fields(fields) => fields.iter().all(|f| match nested(expected, f) {
            None => true,
            Some(e) => nested(actual, f).is_some_and(|a| deep_equal(e, a)),
        }),
        ArgsMatch::Superset => match (expected, actual) {
            (Value::Object(e), Value::Object(a)) => e
                .iter()
                .all(|(k, v)| a.get(k).is_some_and(|w| deep_equal(v, w))),
            _ => deep_equal(expected, actual),
        },
        ArgsMatch::Subset => match (expected, actual) {
            (Value::Object(e), Value::Object(a)) => a
                .iter()
                .all(|(k, v)| e.get(k).is_some_and(|w| deep_equal(v, w))),
            _ => deep_equal(expected, actual),
        },
        ArgsMatch::Exact | ArgsMatch::Ignore => deep_equal(expected, actual),
    }
}

struct Call<'a> {
    name: &'a str,
    args: Option<&'a Value>,
    output: Option<&'a Value>,
    duration_ms: Option<u64>,
}

/// True when `actual` contains `expected`: every key of an expected mapping
/// with a value it contains, every item of an expected list contained in
/// some item of the actual one, equal scalars. A tool result given as JSON
/// text is read as JSON.
fn contains(expected: &Value, actual: &Value) -> bool {
    if let Value::String(text) = actual
        && !expected.is_string()
        && let Ok(parsed) = serde_json::from_str::<Value>(text)
    {
        return contains(expected, &parsed);
    }
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|w| contains(v, w))),
        (Value::Array(e), Value::Array(a)) => e.iter().all(|v| a.iter().any(|w| contains(v, w))),
        _ => deep_equal(expected, actual),
    }
}

/// Latency check of a matched expected call: `Some(passed check)`, or
/// `None` when there is no limit or no duration (not counted).
fn latency(item: &Expected, call: &Call<'_>) -> Option<Check> {
    let max = item.max_duration_ms?;
    let actual = call.duration_ms?;
    let m = crate::js::num(max);
    Some(if actual as f64 <= max {
        Check::pass(format!(
            "{} completed in {actual}ms (max: {m}ms)",
            item.tool
        ))
    } else {
        Check::fail(format!("{} took {actual}ms (max: {m}ms)", item.tool))
    })
}

/// The score of `in_order` and `exact`: hits over the expected calls plus
/// their latency limits, less the limits of matched calls that reported no
/// duration (`skipped`). An unmatched call's limit still counts, as AgentV.
fn grade_sequence(checks: Vec<Check>, hits: usize, expected: &[Expected], skipped: usize) -> Grade {
    let with_limit = expected
        .iter()
        .filter(|e| e.max_duration_ms.is_some())
        .count();
    let denominator = expected.len() + with_limit - skipped;
    let score = if denominator == 0 {
        1.0
    } else {
        hits as f64 / denominator as f64
    };
    let mut grade = Grade::new(score.clamp(0.0, 1.0));
    grade.checks = checks;
    grade
}

pub fn grade(request: &Request) -> Result<Grade, String> {
    let spec = spec(&request.config)?;
    if request.output_messages.is_empty() {
        return Ok(Grade::from_check(Check::fail(
            "No trace available for evaluation",
        )));
    }
    let calls: Vec<Call<'_>> = crate::metrics::tool_calls(request)
        .map(|c| Call {
            name: c.tool.as_str(),
            args: c.input.as_ref(),
            output: c.output.as_ref(),
            duration_ms: c.duration_ms,
        })
        .collect();
    let mode_of = |item: &Expected| {
        item.args_match
            .clone()
            .or_else(|| spec.args_match.clone())
            .unwrap_or(if item.from_input {
                ArgsMatch::Superset
            } else {
                ArgsMatch::Exact
            })
    };
    let matches = |item: &Expected, call: &Call<'_>| {
        call.name == item.tool
            && args_ok(&item.args, call.args, &mode_of(item))
            && item
                .output
                .as_ref()
                .is_none_or(|e| call.output.is_some_and(|a| contains(e, a)))
    };
    let grade = match spec.mode.as_str() {
        "any_order" => {
            if spec.minimums.is_empty() {
                return Ok(Grade::from_check(Check::pass(
                    "No tool requirements specified",
                )));
            }
            let checks = spec
                .minimums
                .iter()
                .map(|(tool, required)| {
                    let actual = calls.iter().filter(|c| c.name == tool).count();
                    Check::new(
                        actual as f64 >= *required,
                        format!(
                            "{tool}: called {actual} times (required >={})",
                            crate::js::num(*required)
                        ),
                    )
                })
                .collect();
            Grade::from_checks(checks)
        }
        "in_order" => {
            if spec.expected.is_empty() {
                return Ok(Grade::from_check(Check::pass("No tool sequence specified")));
            }
            let mut checks = Vec::new();
            let (mut hits, mut skipped) = (0, 0);
            let mut cursor = 0;
            for (i, item) in spec.expected.iter().enumerate() {
                let mut found = false;
                while cursor < calls.len() {
                    let call = &calls[cursor];
                    if call.name != item.tool {
                        cursor += 1;
                        continue;
                    }
                    if args_ok(&item.args, call.args, &mode_of(item)) {
                        checks.push(Check::pass(format!(
                            "Found {} at position {cursor}",
                            item.tool
                        )));
                        hits += 1;
                        match latency(item, call) {
                            Some(check) => {
                                hits += usize::from(check.passed);
                                checks.push(check);
                            }
                            None => skipped += usize::from(item.max_duration_ms.is_some()),
                        }
                    } else {
                        checks.push(Check::fail(format!(
                            "Expected {} at position {i}: tool found at {cursor} but args mismatch",
                            item.tool
                        )));
                    }
                    cursor += 1;
                    found = true;
                    break;
                }
                if !found {
                    checks.push(Check::fail(format!(
                        "Expected {} at position {i}, not found in remaining trace",
                        item.tool
                    )));
                }
            }
            grade_sequence(checks, hits, &spec.expected, skipped)
        }
        "exact" => {
            if spec.expected.is_empty() {
                return Ok(Grade::from_check(Check::pass("No tool sequence specified")));
            }
            let mut checks = Vec::new();
            if calls.len() != spec.expected.len() {
                // Shown, not scored (as AgentV).
                checks.push(Check::fail(format!(
                    "Expected {} tool calls, got {}",
                    spec.expected.len(),
                    calls.len()
                )));
            }
            let (mut hits, mut skipped) = (0, 0);
            for (i, item) in spec.expected.iter().enumerate() {
                match calls.get(i) {
                    Some(call) if call.name == item.tool => {
                        if args_ok(&item.args, call.args, &mode_of(item)) {
                            checks.push(Check::pass(format!("Position {i}: {}", item.tool)));
                            hits += 1;
                            match latency(item, call) {
                                Some(check) => {
                                    hits += usize::from(check.passed);
                                    checks.push(check);
                                }
                                None => skipped += usize::from(item.max_duration_ms.is_some()),
                            }
                        } else {
                            checks.push(Check::fail(format!(
                                "Position {i}: {} args mismatch",
                                item.tool
                            )));
                        }
                    }
                    Some(call) => checks.push(Check::fail(format!(
                        "Position {i}: expected {}, got {}",
                        item.tool, call.name
                    ))),
                    None => checks.push(Check::fail(format!(
                        "Position {i}: expected {}, got nothing",
                        item.tool
                    ))),
                }
            }
            grade_sequence(checks, hits, &spec.expected, skipped)
        }
        "superset" => {
            if spec.expected.is_empty() {
                return Ok(Grade::from_check(Check::pass(
                    "No expected tools specified",
                )));
            }
            let mut used = vec![false; calls.len()];
            let checks = spec
                .expected
                .iter()
                .map(|item| {
                    let hit = (0..calls.len()).find(|&j| !used[j] && matches(item, &calls[j]));
                    match hit {
                        Some(j) => {
                            used[j] = true;
                            Check::pass(format!("Found {} at position {j}", item.tool))
                        }
                        None => Check::fail(format!(
                            "Expected {} not found in actual trajectory",
                            item.tool
                        )),
                    }
                })
                .collect();
            Grade::from_checks(checks)
        }
        "subset" => {
            if spec.expected.is_empty() {
                return Ok(if calls.is_empty() {
                    Grade::from_check(Check::pass("No tool calls and no expected tools"))
                } else {
                    Grade::from_check(Check::fail(format!(
                        "{} unexpected tool call(s) with empty allowed list",
                        calls.len()
                    )))
                });
            }
            if calls.is_empty() {
                return Ok(Grade::from_check(Check::pass(
                    "No actual tool calls (trivially a subset)",
                )));
            }
            let checks = calls
                .iter()
                .enumerate()
                .map(|(i, call)| {
                    if spec.expected.iter().any(|item| matches(item, call)) {
                        Check::pass(format!("Position {i}: {} is in allowed set", call.name))
                    } else {
                        Check::fail(format!("Position {i}: {} is not in allowed set", call.name))
                    }
                })
                .collect();
            Grade::from_checks(checks)
        }
        other => return Err(format!("unknown mode {other:?}")),
    };
    Ok(grade)
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalhost_plugin_sdk::json;

    #[test]
    fn args_match_rules_are_agentv_s() {
        let e = Args::Value(json!({"path": "a", "n": 1}));
        let actual = json!({"path": "a", "n": 1.0, "extra": true});
        assert!(!args_ok(&e, Some(&actual), &ArgsMatch::Exact));
        assert!(args_ok(&e, Some(&actual), &ArgsMatch::Superset));
        assert!(!args_ok(&e, Some(&actual), &ArgsMatch::Subset));
        assert!(args_ok(&e, Some(&json!({"path": "a"})), &ArgsMatch::Subset));
        assert!(args_ok(&e, None, &ArgsMatch::Ignore));
        assert!(!args_ok(&e, None, &ArgsMatch::Superset));
        assert!(args_ok(&Args::Any, None, &ArgsMatch::Exact));
        let fields = ArgsMatch::Fields(vec!["path".into(), "deep.x".into()]);
        assert!(args_ok(&e, Some(&json!({"path": "a", "n": 2})), &fields));
        assert!(!args_ok(&e, Some(&json!({"path": "b"})), &fields));
        let nested = Args::Value(json!({"deep": {"x": [1, 2]}}));
        let fields = ArgsMatch::Fields(vec!["deep.x.1".into()]);
        assert!(args_ok(
            &nested,
            Some(&json!({"deep": {"x": [9, 2]}})),
            &fields
        ));
    }

    /// `output` on an expected call: the tool's result must contain it
    /// (keys with contained values, list items found in the actual list),
    /// also when the result is JSON text.
    #[test]
    fn an_expected_output_is_contained_in_the_result() {
        let e = json!({"results": [{"link": "https://a"}], "title": "T"});
        let actual = json!({"results": [{"link": "https://b"}, {"link": "https://a", "snippet": "s"}], "title": "T", "more": 1});
        assert!(contains(&e, &actual));
        assert!(
            contains(&e, &json!(actual.to_string())),
            "JSON text is read"
        );
        assert!(!contains(
            &e,
            &json!({"results": [{"link": "https://b"}], "title": "T"})
        ));
        assert!(!contains(
            &e,
            &json!({"results": [{"link": "https://a"}], "title": "U"})
        ));
        assert!(!contains(&json!("x"), &json!("y")));
    }

    /// `input` is `args`, matched as a superset by default (the call may
    /// have more arguments); both at once is an error.
    #[test]
    fn input_is_args_and_may_not_repeat_them() {
        let config = |v: Value| evalhost_plugin_sdk::Config::from_value(v).unwrap();
        let s = spec(&config(
            json!({"mode": "in_order", "expected": [{"tool": "t", "input": {"q": 1}}]}),
        ))
        .unwrap();
        assert!(s.expected[0].from_input);
        assert_eq!(s.expected[0].args, Args::Value(json!({"q": 1})));
        let err = spec(&config(
            json!({"mode": "in_order", "expected": [{"tool": "t", "input": {}, "args": {}}]}),
        ))
        .err()
        .unwrap();
        assert!(err.contains("both `args` and `input`"), "{err}");
    }
}
