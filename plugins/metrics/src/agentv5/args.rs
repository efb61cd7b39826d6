//! `trajectory:tool-args-match`: what it expects, AgentV's partial and
//! exact argument matches (with ignored and default arguments), and its
//! verdict.

use evalhost_plugin_sdk::{Config, Grade, Value};

use super::steps::{Matcher, Step, matcher};
use super::{glob, list_or, value, verdict};
use crate::js::deep_equal;

pub(super) struct ArgsSpec {
    matcher: Matcher,
    expected: Value,
    exact: bool,
    defaults: Option<serde_json::Map<String, Value>>,
    ignore: Vec<String>,
}

pub(super) fn args_spec(config: &Config) -> Result<ArgsSpec, String> {
    let what = "trajectory:tool-args-match";
    let v = value(config)?;
    let Value::Object(o) = v else {
        return Err(format!("{what} assertion must have an object value"));
    };
    let matcher = matcher(v, Some("tool"), what)?;
    if matcher.pattern.is_none() {
        return Err(format!(
            "{what} assertion object must include a name or pattern property"
        ));
    }
    let expected = o
        .get("args")
        .or_else(|| o.get("arguments"))
        .cloned()
        .ok_or_else(|| format!("{what} assertion must include an args or arguments property"))?;
    let exact = match o.get("mode") {
        None | Some(Value::Null) => false,
        Some(Value::String(m)) if m == "partial" => false,
        Some(Value::String(m)) if m == "exact" => true,
        Some(_) => {
            return Err(format!(
                "{what} assertion mode must be \"partial\" or \"exact\""
            ));
        }
    };
    let defaults = match o.get("defaults") {
        None | Some(Value::Null) => None,
        Some(Value::Object(d)) => Some(d.clone()),
        Some(_) => {
            return Err(format!(
                "{what} assertion defaults must be an object mapping argument names to default values"
            ));
        }
    };
    let ignore = match o.get("ignore") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.clone()],
        Some(Value::Array(items))
            if items
                .iter()
                .all(|i| i.as_str().is_some_and(|s| !s.trim().is_empty())) =>
        {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        }
        Some(_) => {
            return Err(format!(
                "{what} assertion ignore must be a non-empty string or an array of non-empty strings"
            ));
        }
    };
    Ok(ArgsSpec {
        matcher,
        expected,
        exact,
        defaults,
        ignore,
    })
}

/// AgentV's partial match: every expected key present and matching;
/// arrays element by element with the same length.
fn partial(actual: &Value, expected: &Value) -> bool {
    match expected {
        Value::Array(e) => {
            matches!(actual, Value::Array(a) if a.len() == e.len() && e.iter().zip(a).all(|(x, y)| partial(y, x)))
        }
        Value::Object(e) => match actual {
            Value::Object(a) => e
                .iter()
                .all(|(k, v)| a.get(k).is_some_and(|av| partial(av, v))),
            _ => false,
        },
        other => deep_equal(actual, other),
    }
}

fn strip(value: &Value, drop: impl Fn(&str, &Value) -> bool) -> (Value, Vec<String>) {
    let Value::Object(o) = value else {
        return (value.clone(), Vec::new());
    };
    let mut kept = serde_json::Map::new();
    let mut stripped = Vec::new();
    for (k, v) in o {
        if drop(k, v) {
            stripped.push(k.clone());
        } else {
            kept.insert(k.clone(), v.clone());
        }
    }
    (Value::Object(kept), stripped)
}

fn ignored(value: &Value, ignore: &[String]) -> (Value, Vec<String>) {
    strip(value, |k, _| {
        ignore.iter().any(|e| {
            if e.contains('*') || e.contains('?') {
                glob(k, e)
            } else {
                e == k
            }
        })
    })
}

fn defaulted(
    value: &Value,
    defaults: Option<&serde_json::Map<String, Value>>,
) -> (Value, Vec<String>) {
    match defaults {
        None => (value.clone(), Vec::new()),
        Some(d) => strip(value, |k, v| d.get(k).is_some_and(|dv| deep_equal(v, dv))),
    }
}

fn args_match(spec: &ArgsSpec, actual: &Value) -> bool {
    let (a, _) = ignored(actual, &spec.ignore);
    let (a, _) = defaulted(&a, spec.defaults.as_ref());
    let (e, _) = ignored(&spec.expected, &spec.ignore);
    if spec.exact {
        deep_equal(&a, &e)
    } else {
        partial(&a, &e)
    }
}

fn json_text(v: Option<&Value>) -> String {
    v.map_or_else(|| "(none)".into(), Value::to_string)
}

pub(super) fn tool_args(spec: &ArgsSpec, tools: &[&Step], actual: &[String], inv: bool) -> Grade {
    let label = spec.matcher.label();
    let mode = if spec.exact { "exact" } else { "partial" };
    let matching: Vec<&&Step> = tools.iter().filter(|s| spec.matcher.matches(s)).collect();
    let with_args: Vec<&&Step> = matching
        .iter()
        .copied()
        .filter(|s| s.args.is_some())
        .collect();
    let hit = with_args
        .iter()
        .find(|s| s.args.as_ref().is_some_and(|a| args_match(spec, a)));
    let base = hit.is_some();
    let observed = if with_args.is_empty() {
        "(none)".to_owned()
    } else {
        with_args
            .iter()
            .map(|s| json_text(s.args.as_ref()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if inv {
        return verdict(
            !base,
            match hit {
                Some(s) => format!(
                    "Forbidden argument match for tool \"{label}\" was observed on {}. Args: {}",
                    s.label(),
                    json_text(s.args.as_ref())
                ),
                None if matching.is_empty() => format!(
                    "Forbidden argument match for tool \"{label}\" was not observed because no tool call matched it"
                ),
                None => format!(
                    "Forbidden argument match for tool \"{label}\" was not observed. Observed args: {observed}"
                ),
            },
        );
    }
    if let Some(s) = hit {
        let args = s.args.clone().unwrap_or(Value::Null);
        let (after_ignore, ignored_keys) = ignored(&args, &spec.ignore);
        let (_, default_keys) = defaulted(&after_ignore, spec.defaults.as_ref());
        let mut text = format!(
            "Tool \"{label}\" matched expected arguments ({mode}) on {}. Args: {}",
            s.label(),
            args
        );
        if !ignored_keys.is_empty() {
            text += &format!(". Ignored argument(s): {}", ignored_keys.join(", "));
        }
        if !default_keys.is_empty() {
            text += &format!(". Ignored default argument(s): {}", default_keys.join(", "));
        }
        return verdict(true, text);
    }
    let text = if matching.is_empty() {
        format!(
            "No tool call matched \"{label}\". Actual tools: {}",
            list_or(actual)
        )
    } else if with_args.is_empty() {
        format!(
            "Tool \"{label}\" was observed but no arguments were captured. Actual tools: {}",
            list_or(actual)
        )
    } else {
        format!(
            "No call to tool \"{label}\" matched expected arguments ({mode}): {}. Observed args: {observed}",
            spec.expected
        )
    };
    verdict(false, text)
}
