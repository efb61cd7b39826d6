//! `field-accuracy`: fields of a JSON answer against the expected output's,
//! matched exactly, within a numeric tolerance, or as dates; as AgentV 4.42
//! scores them.

use evalhost_plugin_sdk::{Check, Config, Grade, Request, Value};

use crate::date;
use crate::js::{deep_equal, num, parse_json_from_text, to_fixed, type_of};

const MATCHES: &[&str] = &["exact", "numeric_tolerance", "date"];
const FIELD_KEYS: &[&str] = &[
    "path",
    "match",
    "required",
    "weight",
    "tolerance",
    "relative",
    "formats",
];

#[derive(Debug, Clone)]
struct Field {
    path: String,
    matcher: String,
    required: bool,
    weight: f64,
    tolerance: f64,
    relative: bool,
    formats: Vec<String>,
}

struct Spec {
    fields: Vec<Field>,
    all_or_nothing: bool,
}

fn spec(config: &Config) -> Result<Spec, String> {
    let items = match config.get("fields") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) => return Err("`fields` is empty: list the fields to compare".into()),
        Some(other) => return Err(format!("`fields` must be a list of {{path, match}}, got {}", crate::show(other))),
        None => return Err("missing `fields` (a list of {path, match, required?, weight?, tolerance?, relative?, formats?})".into()),
    };
    let mut fields = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("fields[{i}]");
        let Value::Object(o) = item else {
            return Err(format!(
                "`{at}` must be a mapping with `path` and `match`, got {}",
                crate::show(item)
            ));
        };
        if let Some(unknown) = o.keys().find(|k| !FIELD_KEYS.contains(&k.as_str())) {
            return Err(format!(
                "`{at}.{unknown}` is not a key of a field (known: {})",
                FIELD_KEYS.join(", ")
            ));
        }
        let path = match o.get("path") {
            Some(Value::String(p)) if !p.is_empty() => p.clone(),
            _ => {
                return Err(format!(
                    "`{at}.path` must be the field's path (`invoice.total`, `items[0].sku`)"
                ));
            }
        };
        let matcher = match o.get("match") {
            Some(Value::String(m)) if MATCHES.contains(&m.as_str()) => m.clone(),
            other => {
                return Err(format!(
                    "`{at}.match` must be exact, numeric_tolerance or date, got {} (for fuzzy matching use a code-grader or an LLM grader)",
                    other.map_or("nothing".to_owned(), crate::show)
                ));
            }
        };
        let flag = |key: &str, default: bool| match o.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(format!(
                "`{at}.{key}` must be true or false, got {}",
                crate::show(other)
            )),
        };
        let number = |key: &str, default: f64| match o.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
                _ => Err(format!(
                    "`{at}.{key}` must be a non-negative number, got {}",
                    crate::show(v)
                )),
            },
        };
        let formats = match o.get("formats") {
            None | Some(Value::Null) => date::default_formats(),
            Some(Value::Array(list)) => {
                let mut out = Vec::new();
                for (j, f) in list.iter().enumerate() {
                    match f.as_str() {
                        Some(s) => out.push(s.to_owned()),
                        None => {
                            return Err(format!(
                                "`{at}.formats[{j}]` must be a string such as DD/MM/YYYY"
                            ));
                        }
                    }
                }
                out
            }
            Some(other) => {
                return Err(format!(
                    "`{at}.formats` must be a list of date formats, got {}",
                    crate::show(other)
                ));
            }
        };
        if matcher != "numeric_tolerance" {
            for key in ["tolerance", "relative"] {
                if o.contains_key(key) {
                    return Err(format!(
                        "`{at}.{key}` only applies to `match: numeric_tolerance`"
                    ));
                }
            }
        }
        if matcher != "date" && o.contains_key("formats") {
            return Err(format!("`{at}.formats` only applies to `match: date`"));
        }
        fields.push(Field {
            required: flag("required", true)?,
            weight: number("weight", 1.0)?,
            tolerance: number("tolerance", 0.0)?,
            relative: flag("relative", false)?,
            path,
            matcher,
            formats,
        });
    }
    let all_or_nothing = match config.get("aggregation") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) if s == "weighted_average" => false,
        Some(Value::String(s)) if s == "all_or_nothing" => true,
        Some(other) => {
            return Err(format!(
                "`aggregation` must be weighted_average or all_or_nothing, got {}",
                crate::show(other)
            ));
        }
    };
    Ok(Spec {
        fields,
        all_or_nothing,
    })
}

pub fn check(config: &Config) -> Result<(), String> {
    spec(config).map(drop)
}

/// AgentV's `resolvePath`: `a.b[0].c` and `a.b.0.c` alike.
fn resolve<'a>(data: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = data;
    for part in path.split(['.', '[', ']']).filter(|p| !p.is_empty()) {
        current = match current {
            Value::Object(o) => o.get(part)?,
            Value::Array(a) if part.bytes().all(|b| b.is_ascii_digit()) => {
                a.get(part.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(current)
}

/// JavaScript's `Number.parseFloat` of a string: the longest prefix that
/// is a decimal number (`100 USD` → 100, `1e3` → 1000, `$5` → none).
fn parse_float(s: &str) -> Option<f64> {
    let t = s.trim_start();
    for (word, value) in [
        ("Infinity", f64::INFINITY),
        ("+Infinity", f64::INFINITY),
        ("-Infinity", f64::NEG_INFINITY),
    ] {
        if t.starts_with(word) {
            return Some(value);
        }
    }
    let b = t.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        let frac_start = i + 1;
        let mut j = frac_start;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        digits += j - frac_start;
        if digits > 0 {
            i = j;
        }
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        let mut j = i + 1;
        if j < b.len() && matches!(b[j], b'+' | b'-') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    t[..i].trim_end_matches('.').parse().ok()
}

fn to_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse_float(s),
        _ => None,
    }
}

/// JavaScript's `String(v)`, for dates.
fn js_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => num(n.as_f64().unwrap_or(f64::NAN)),
        Value::Object(_) => "[object Object]".into(),
        other => other.to_string(),
    }
}

/// The expected data: the last assistant message of `expected_output` with
/// content (an object or list as it is, a string parsed as JSON).
fn expected_data(request: &Request) -> Option<Value> {
    for m in request.expected_messages.iter().rev() {
        if m.role != "assistant" {
            continue;
        }
        if let Some(v @ (Value::Object(_) | Value::Array(_))) = &m.content_json {
            return Some(v.clone());
        }
        if !m.content.is_empty()
            && let Some(v) = parse_json_from_text(&m.content)
        {
            return Some(v);
        }
    }
    None
}

struct Scored {
    check: Check,
    score: f64,
    weight: f64,
}

fn score_field(f: &Field, candidate: &Value, expected: &Value) -> Scored {
    let hit = |text: String| Scored {
        check: Check::pass(text),
        score: 1.0,
        weight: f.weight,
    };
    let miss = |text: String| Scored {
        check: Check::fail(text),
        score: 0.0,
        weight: f.weight,
    };
    let p = &f.path;
    let Some(e) = resolve(expected, p) else {
        return hit(format!("{p}: no expected value"));
    };
    let Some(c) = resolve(candidate, p) else {
        return if f.required {
            miss(format!("{p} (required, missing)"))
        } else {
            Scored {
                check: Check::pass(format!("{p}: optional field missing")),
                score: 1.0,
                weight: 0.0,
            }
        };
    };
    match f.matcher.as_str() {
        "exact" => {
            if deep_equal(c, e) {
                hit(p.clone())
            } else if type_of(c) != type_of(e) {
                miss(format!(
                    "{p} (type mismatch: got {}, expected {})",
                    type_of(c),
                    type_of(e)
                ))
            } else {
                miss(format!("{p} (value mismatch)"))
            }
        }
        "numeric_tolerance" => {
            let (Some(cn), Some(en)) = (to_number(c), to_number(e)) else {
                return miss(format!("{p} (non-numeric value)"));
            };
            if !cn.is_finite() || !en.is_finite() {
                return miss(format!("{p} (invalid numeric value)"));
            }
            let diff = (cn - en).abs();
            let within = if f.relative {
                let rel = if en == 0.0 { diff } else { diff / en.abs() };
                rel <= f.tolerance
            } else {
                diff <= f.tolerance
            };
            if within {
                hit(format!(
                    "{p} (within tolerance: diff={})",
                    to_fixed(diff, 2)
                ))
            } else {
                miss(format!(
                    "{p} (outside tolerance: diff={}, tolerance={})",
                    to_fixed(diff, 2),
                    num(f.tolerance)
                ))
            }
        }
        _ => {
            let Some(cd) = date::parse(&js_string(c), &f.formats) else {
                return miss(format!("{p} (unparseable candidate date)"));
            };
            let Some(ed) = date::parse(&js_string(e), &f.formats) else {
                return miss(format!("{p} (unparseable expected date)"));
            };
            if cd == ed {
                hit(p.clone())
            } else {
                miss(format!(
                    "{p} (date mismatch: got {}, expected {})",
                    date::show(cd),
                    date::show(ed)
                ))
            }
        }
    }
}

pub fn grade(request: &Request) -> Result<Grade, String> {
    let spec = spec(&request.config)?;
    let Some(candidate) = parse_json_from_text(&request.output) else {
        return Ok(Grade::from_check(Check::fail(
            "Failed to parse candidate answer as JSON",
        )));
    };
    let Some(expected) = expected_data(request) else {
        return Ok(Grade::from_check(Check::fail(
            "No expected data found in expected_output",
        )));
    };
    let results: Vec<Scored> = spec
        .fields
        .iter()
        .map(|f| score_field(f, &candidate, &expected))
        .collect();
    let score = if spec.all_or_nothing {
        if results.iter().all(|r| r.check.passed) {
            1.0
        } else {
            0.0
        }
    } else {
        let total: f64 = results.iter().map(|r| r.weight).sum();
        if total == 0.0 {
            if results.is_empty() { 1.0 } else { 0.0 }
        } else {
            results.iter().map(|r| r.score * r.weight).sum::<f64>() / total
        }
    };
    let mut grade = Grade::new(if score.is_finite() {
        score.clamp(0.0, 1.0)
    } else {
        0.0
    });
    grade.checks = results.into_iter().map(|r| r.check).collect();
    Ok(grade)
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalhost_plugin_sdk::json;

    #[test]
    fn paths_resolve_as_agentv_s() {
        let v = json!({"x": {"y": [{"z": 1}, {"z": 2}]}});
        assert_eq!(resolve(&v, "x.y[1].z"), Some(&json!(2)));
        assert_eq!(resolve(&v, "x.y.0.z"), Some(&json!(1)));
        assert_eq!(resolve(&v, "x.q"), None);
        assert_eq!(resolve(&json!([{"b": 1}]), "0.b"), Some(&json!(1)));
    }

    #[test]
    fn parse_float_takes_the_numeric_prefix() {
        assert_eq!(parse_float("100 USD"), Some(100.0));
        assert_eq!(parse_float("  1e3"), Some(1000.0));
        assert_eq!(parse_float("1.004abc"), Some(1.004));
        assert_eq!(parse_float("$5"), None);
        assert_eq!(parse_float("-2.5e-1x"), Some(-0.25));
        assert_eq!(parse_float("Infinity"), Some(f64::INFINITY));
    }
}
