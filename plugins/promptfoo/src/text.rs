//! promptfoo's text assertions: `equals`, `contains` and its `i`, `-any`
//! and `-all` forms, `starts-with`, `regex`, `word-count`, `levenshtein`;
//! and how their values are read.

use evalhost_plugin_sdk::{Config, Grade, GradeError, Value};

use crate::{js, js_num, not, outcome};

/// A value as JavaScript's `String(value)` writes it.
fn js_string(v: &Value) -> String {
    js::string(v)
}

/// promptfoo's `parseCommaSeparatedValues`: fields split on commas, a
/// field in double quotes may hold commas (`\"` escapes a quote).
pub fn comma_values(value: &str) -> Vec<String> {
    let chars: Vec<char> = value.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ',') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        if chars[i] == '"' {
            let mut field = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() && chars[i + 1] == '"' {
                    field.push('"');
                    i += 2;
                    continue;
                }
                field.push(chars[i]);
                i += 1;
            }
            i += 1;
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            out.push(field);
        } else {
            let start = i;
            while i < chars.len() && chars[i] != ',' {
                i += 1;
            }
            out.push(chars[start..i].iter().collect::<String>().trim().to_owned());
        }
    }
    out
}

pub(crate) fn list(config: &Config) -> Result<Vec<String>, String> {
    match config.get("value") {
        Some(Value::String(s)) if !s.is_empty() => {
            let items = comma_values(s);
            if items.is_empty() {
                // promptfoo splits "," into empty strings every output
                // contains: a vacuous pass evalhost refuses.
                return Err(format!("the value {s:?} names no strings to look for"));
            }
            Ok(items)
        }
        Some(Value::Array(items)) if !items.is_empty() => Ok(items.iter().map(js_string).collect()),
        _ => Err("must have a value: a list, or a comma-separated string".into()),
    }
}

pub(crate) fn contains_value(config: &Config) -> Result<String, String> {
    match config.get("value") {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(v @ Value::Number(_)) => Ok(js_string(v)),
        _ => Err("must have a string or number value".into()),
    }
}

/// The edit distance between `a` and `b`, in characters.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// promptfoo's `equals`: the output is the value's text exactly (an
/// object or array value: the output parsed as JSON equals it).
pub(crate) fn equals(output: &str, value: &Value, inverse: bool) -> Grade {
    let (pass, shown) = if value.is_object() || value.is_array() {
        let pass = match serde_json::from_str::<Value>(output) {
            Ok(parsed) => (parsed == *value) != inverse,
            Err(_) => inverse,
        };
        (pass, value.to_string())
    } else {
        let s = js_string(value);
        ((s == output) != inverse, s)
    };
    outcome(
        pass,
        format!(
            "Expected output \"{output}\" to {}equal \"{shown}\"",
            not(inverse)
        ),
    )
}

/// promptfoo's `contains` and `icontains`.
pub(crate) fn contains(
    t: &str,
    output: &str,
    config: &Config,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let v = contains_value(config)?;
    let found = if t == "icontains" {
        output.to_lowercase().contains(&v.to_lowercase())
    } else {
        output.contains(&v)
    };
    Ok(outcome(
        found != inverse,
        format!("Expected output to {}contain \"{v}\"", not(inverse)),
    ))
}

/// promptfoo's `contains-any` and `icontains-any`.
pub(crate) fn contains_any(
    t: &str,
    output: &str,
    config: &Config,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let values = list(config)?;
    let lower = t.starts_with('i');
    let hay = if lower {
        output.to_lowercase()
    } else {
        output.to_owned()
    };
    let any = values.iter().any(|v| {
        if lower {
            hay.contains(&v.to_lowercase())
        } else {
            hay.contains(v.as_str())
        }
    });
    Ok(outcome(
        any != inverse,
        format!(
            "Expected output to {}contain one of \"{}\"",
            not(inverse),
            values.join(", ")
        ),
    ))
}

/// promptfoo's `contains-all` and `icontains-all`.
pub(crate) fn contains_all(
    t: &str,
    output: &str,
    config: &Config,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let values = list(config)?;
    let lower = t.starts_with('i');
    let hay = if lower {
        output.to_lowercase()
    } else {
        output.to_owned()
    };
    let missing: Vec<&str> = values
        .iter()
        .filter(|v| {
            if lower {
                !hay.contains(&v.to_lowercase())
            } else {
                !hay.contains(v.as_str())
            }
        })
        .map(String::as_str)
        .collect();
    Ok(outcome(
        missing.is_empty() != inverse,
        format!(
            "Expected output to {}contain all of [{}]. Missing: [{}]",
            not(inverse),
            values.join(", "),
            missing.join(", ")
        ),
    ))
}

/// promptfoo's `starts-with` (no trimming).
pub(crate) fn starts_with(output: &str, value: &Value, inverse: bool) -> Grade {
    let v = js_string(value);
    outcome(
        output.starts_with(&v) != inverse,
        format!("Expected output to {}start with \"{v}\"", not(inverse)),
    )
}

/// promptfoo's `regex`: a JavaScript regular expression matches.
pub(crate) fn regex(output: &str, value: &Value, inverse: bool) -> Grade {
    let pattern = js_string(value);
    match regress::Regex::new(&pattern) {
        Ok(re) => {
            let matched = re.find(output).is_some();
            outcome(
                matched != inverse,
                format!(
                    "Expected output to {}match regex \"{pattern}\"",
                    not(inverse)
                ),
            )
        }
        Err(e) => outcome(false, format!("Invalid regex pattern: {e}")),
    }
}

/// promptfoo's `word-count`: exactly N words, or between `min` and `max`.
pub(crate) fn word_count(output: &str, value: &Value, inverse: bool) -> Result<Grade, GradeError> {
    let count = output.split_whitespace().count();
    Ok(match value {
        Value::Object(o) => {
            let min = o.get("min").and_then(Value::as_f64);
            let max = o.get("max").and_then(Value::as_f64);
            let c = count as f64;
            let (base, reason_fail, reason_inv) = match (min, max) {
                (Some(lo), Some(hi)) => (
                    c >= lo && c <= hi,
                    format!(
                        "Word count {count} is not between {} and {}",
                        js_num(lo),
                        js_num(hi)
                    ),
                    format!(
                        "Expected word count to not be between {} and {}, but got {count}",
                        js_num(lo),
                        js_num(hi)
                    ),
                ),
                (None, Some(hi)) => (
                    c <= hi,
                    format!("Word count {count} is greater than maximum {}", js_num(hi)),
                    format!(
                        "Expected word count to be greater than {}, but got {count}",
                        js_num(hi)
                    ),
                ),
                (Some(lo), None) => (
                    c >= lo,
                    format!("Word count {count} is less than minimum {}", js_num(lo)),
                    format!(
                        "Expected word count to be less than {}, but got {count}",
                        js_num(lo)
                    ),
                ),
                (None, None) => return Err(GradeError::Failed(
                    "\"word-count\" assertion object must have \"min\" and/or \"max\" properties"
                        .into(),
                )),
            };
            outcome(
                base != inverse,
                if inverse { reason_inv } else { reason_fail },
            )
        }
        other => {
            let expected = match other {
                Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
                Value::String(s) => s.trim().parse::<f64>().unwrap_or(f64::NAN),
                _ => f64::NAN,
            };
            let base = (count as f64) == expected;
            outcome(
                base != inverse,
                if inverse {
                    format!(
                        "Expected word count to not equal {}, but got {count}",
                        js_num(expected)
                    )
                } else {
                    format!(
                        "Word count {count} does not equal expected {}",
                        js_num(expected)
                    )
                },
            )
        }
    })
}

/// promptfoo's `levenshtein`: the edit distance to the value is at most
/// the threshold (default 5).
pub(crate) fn edit_distance(
    output: &str,
    config: &Config,
    value: &Value,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let v = js_string(value);
    let d = levenshtein(output, &v);
    let threshold = config.optional_f64("threshold")?.unwrap_or(5.0);
    Ok(outcome(
        ((d as f64) <= threshold) != inverse,
        format!(
            "Levenshtein distance {d} is {} threshold {}",
            if inverse {
                "less than or equal to"
            } else {
                "greater than"
            },
            js_num(threshold)
        ),
    ))
}
