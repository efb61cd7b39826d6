//! `trajectory:tool-used`, `trajectory:tool-sequence` and
//! `trajectory:step-count`: what each expects, and its verdict.

use evalhost_plugin_sdk::{Config, Grade, Value};

use super::steps::{Matcher, Step, count, matcher};
use super::{js_num, list_or, value, verdict};

/// What `trajectory:tool-used` expects.
pub(super) enum Used {
    List(Vec<Matcher>),
    Count(Matcher, f64, Option<f64>),
}

pub(super) fn tool_used_spec(config: &Config) -> Result<Used, String> {
    let what = "trajectory:tool-used";
    match value(config)? {
        Value::String(s) => Ok(Used::List(vec![matcher(
            &Value::String(s.clone()),
            Some("tool"),
            what,
        )?])),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            if items.is_empty() {
                return Err(format!(
                    "{what} assertion requires at least one expected tool"
                ));
            }
            Ok(Used::List(
                items
                    .iter()
                    .map(|i| matcher(i, Some("tool"), what))
                    .collect::<Result<_, _>>()?,
            ))
        }
        v @ Value::Object(o) => {
            let m = matcher(v, Some("tool"), what)?;
            if m.pattern.is_none() {
                return Err(format!(
                    "{what} assertion object must include a name or pattern property"
                ));
            }
            let min = count(o, "min", what)?.unwrap_or(1.0);
            Ok(Used::Count(m, min, count(o, "max", what)?))
        }
        _ => Err(format!(
            "{what} assertion must have a string, string array, or object value"
        )),
    }
}

pub(super) fn sequence_spec(config: &Config) -> Result<(bool, Vec<Matcher>), String> {
    let what = "trajectory:tool-sequence";
    let (exact, raw) = match value(config)? {
        Value::Array(items) => (false, items.clone()),
        Value::Object(o) => (
            o.get("mode").and_then(Value::as_str) == Some("exact"),
            match o.get("steps") {
                Some(Value::Array(s)) => s.clone(),
                _ => Vec::new(),
            },
        ),
        _ => {
            return Err(format!(
                "{what} assertion must have an array or object value"
            ));
        }
    };
    let mut steps = Vec::new();
    for (i, s) in raw.iter().enumerate() {
        let m = matcher(s, Some("tool"), what)?;
        if m.pattern.is_none() {
            return Err(format!(
                "{what} assertion step {} must include a name or pattern property",
                i + 1
            ));
        }
        steps.push(m);
    }
    if steps.is_empty() {
        return Err(format!(
            "{what} assertion requires at least one expected step"
        ));
    }
    Ok((exact, steps))
}

pub(super) fn step_count_spec(
    config: &Config,
) -> Result<(Matcher, Option<f64>, Option<f64>), String> {
    let what = "trajectory:step-count";
    let v = value(config)?;
    let Value::Object(o) = v else {
        return Err(format!("{what} assertion must have an object value"));
    };
    let m = matcher(v, None, what)?;
    let (min, max) = (count(o, "min", what)?, count(o, "max", what)?);
    if min.is_none() && max.is_none() {
        return Err(format!(
            "{what} assertion must include a min or max property"
        ));
    }
    Ok((m, min, max))
}

pub(super) fn tool_used(spec: &Used, tools: &[&Step], actual: &[String], inv: bool) -> Grade {
    match spec {
        Used::List(matchers) => {
            let used = |m: &Matcher| tools.iter().any(|s| m.matches(s));
            let missing: Vec<String> = matchers
                .iter()
                .filter(|m| !used(m))
                .map(Matcher::label)
                .collect();
            let matched: Vec<String> = matchers
                .iter()
                .filter(|m| used(m))
                .map(Matcher::label)
                .collect();
            let expected: Vec<String> = matchers.iter().map(Matcher::label).collect();
            if inv {
                let pass = matched.is_empty();
                return verdict(
                    pass,
                    if pass {
                        format!("Forbidden tool(s) were not used: {}", expected.join(", "))
                    } else {
                        format!(
                            "Forbidden tool(s) were used: {}. Actual tools: {}",
                            matched.join(", "),
                            list_or(actual)
                        )
                    },
                );
            }
            let pass = missing.is_empty();
            verdict(
                pass,
                if pass {
                    format!(
                        "Observed required tool(s): {}. Actual tools: {}",
                        expected.join(", "),
                        list_or(actual)
                    )
                } else {
                    format!(
                        "Missing required tool(s): {}. Actual tools: {}",
                        missing.join(", "),
                        list_or(actual)
                    )
                },
            )
        }
        Used::Count(m, min, max) => {
            let matches: Vec<String> = tools
                .iter()
                .filter(|s| m.matches(s))
                .map(|s| s.label())
                .collect();
            let n = matches.len() as f64;
            let base = n >= *min && max.is_none_or(|x| n <= x);
            let label = m.label();
            if inv {
                return verdict(
                    !base,
                    if base {
                        format!(
                            "Tool \"{label}\" matched {} time(s), which violates the inverse assertion",
                            matches.len()
                        )
                    } else {
                        format!("Tool \"{label}\" did not satisfy the forbidden match condition")
                    },
                );
            }
            let mut reason = format!("Matched tool \"{label}\" {} time(s)", matches.len());
            match max {
                None => reason += &format!(" (expected at least {})", js_num(*min)),
                Some(x) => reason += &format!(" (expected {}-{})", js_num(*min), js_num(*x)),
            }
            if !matches.is_empty() {
                reason += &format!(". Matches: {}", matches.join(", "));
            }
            verdict(base, reason)
        }
    }
}

pub(super) fn tool_sequence(
    spec: &(bool, Vec<Matcher>),
    tools: &[&Step],
    actual: &[String],
    inv: bool,
) -> Grade {
    let (exact, expected) = spec;
    let (base, reason) = if *exact {
        let base =
            tools.len() == expected.len() && expected.iter().zip(tools).all(|(m, s)| m.matches(s));
        let reason = if base {
            format!("Observed exact tool sequence: {}", list_or(actual))
        } else {
            format!(
                "Expected exact tool sequence of {}, but actual tools were {}",
                expected
                    .iter()
                    .map(Matcher::label)
                    .collect::<Vec<_>>()
                    .join(", "),
                list_or(actual)
            )
        };
        (base, reason)
    } else {
        let mut next = 0;
        let mut matched = Vec::new();
        for s in tools {
            if next >= expected.len() {
                break;
            }
            if expected[next].matches(s) {
                matched.push(s.label());
                next += 1;
            }
        }
        let base = next == expected.len();
        let reason = if base {
            format!(
                "Observed tool sequence in order: {}. Actual tools: {}",
                matched.join(", "),
                list_or(actual)
            )
        } else {
            format!(
                "Expected tool \"{}\" was not observed in order. Actual tools: {}",
                expected[next].label(),
                list_or(actual)
            )
        };
        (base, reason)
    };
    if inv {
        return verdict(
            !base,
            if base {
                format!(
                    "Forbidden tool sequence was observed. Actual tools: {}",
                    list_or(actual)
                )
            } else {
                "Forbidden tool sequence was not observed".into()
            },
        );
    }
    verdict(base, reason)
}

pub(super) fn step_count(
    spec: &(Matcher, Option<f64>, Option<f64>),
    all: &[Step],
    inv: bool,
) -> Grade {
    let (m, min, max) = spec;
    let matches: Vec<String> = all
        .iter()
        .filter(|s| m.matches(s))
        .map(Step::label)
        .collect();
    let n = matches.len() as f64;
    let base = min.is_none_or(|x| n >= x) && max.is_none_or(|x| n <= x);
    if inv {
        return verdict(
            !base,
            if base {
                "Trajectory step count satisfied the forbidden range".into()
            } else {
                "Trajectory step count did not satisfy the forbidden range".into()
            },
        );
    }
    let mut filters = Vec::new();
    if let Some(t) = &m.types {
        filters.push(format!("type={}", t.join("|")));
    }
    if let Some(p) = &m.pattern {
        filters.push(format!("pattern={p}"));
    }
    let mut reason = format!("Matched {} trajectory step(s)", matches.len());
    if !filters.is_empty() {
        reason += &format!(" for {}", filters.join(", "));
    }
    reason += &match (min, max) {
        (Some(a), Some(b)) => format!(" (expected {}-{})", js_num(*a), js_num(*b)),
        (Some(a), None) => format!(" (expected at least {})", js_num(*a)),
        (None, Some(b)) => format!(" (expected at most {})", js_num(*b)),
        (None, None) => String::new(),
    };
    if !matches.is_empty() {
        reason += &format!(". Matches: {}", matches.join(", "));
    }
    verdict(base, reason)
}
