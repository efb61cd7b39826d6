//! Built-in `promptfoo-*` types: promptfoo 0.121's deterministic assertions
//! with promptfoo's semantics and reason texts (`src/assertions/*.ts`),
//! where they differ from AgentV's (`equals` does not trim, `starts-with`
//! does not trim, `contains` takes a number, the list types take a comma
//! string). A suite read in the promptfoo dialect grades `contains` with
//! `promptfoo-contains`; its `not-` prefix arrives as `inverse`, which each
//! handler applies as promptfoo's does. Every handler is binary: score 1
//! when it passes, else 0. Built only on the public plugin SDK.

use evalhost_plugin_sdk::{
    AssertionType, Config, Grade, GradeError, Grader, Plugin, Request, Value, export_grader, json,
};

/// The promptfoo grader plugin.
pub struct PromptfooGrader;

const TYPES: &[(&str, &str)] = &[
    (
        "equals",
        "Output equals the value exactly (an object value: the output parsed as JSON equals it)",
    ),
    (
        "contains",
        "Output contains the value (case-sensitive; a number is its text)",
    ),
    ("icontains", "Output contains the value, ignoring case"),
    (
        "contains-any",
        "Output contains one of the values (a list, or a comma string)",
    ),
    (
        "contains-all",
        "Output contains every value (a list, or a comma string)",
    ),
    (
        "icontains-any",
        "Output contains one of the values, ignoring case",
    ),
    (
        "icontains-all",
        "Output contains every value, ignoring case",
    ),
    ("starts-with", "Output starts with the value (no trimming)"),
    (
        "regex",
        "A JavaScript regular expression matches the output",
    ),
    ("is-json", "Output parses as JSON"),
    ("contains-json", "Output contains a JSON object"),
    ("word-count", "Output has N words, or between min and max"),
    (
        "levenshtein",
        "Edit distance to the value is at most the threshold (default 5)",
    ),
    (
        "latency",
        "The target answered within `threshold` milliseconds",
    ),
    ("cost", "The answer cost at most `threshold` dollars"),
    (
        "bleu",
        "BLEU-4 against the reference(s) reaches the threshold (default 0.5)",
    ),
    (
        "gleu",
        "GLEU against the reference(s) reaches the threshold (default 0.5)",
    ),
];

/// Types whose score is not 0 or 1: the plugin's verdict decides.
const SCORED: &[&str] = &["bleu", "gleu"];

fn outcome(pass: bool, reason: String) -> Grade {
    let mut grade = Grade::new(if pass { 1.0 } else { 0.0 });
    grade.checks.push(evalhost_plugin_sdk::Check::new(
        pass,
        if pass {
            "Assertion passed".to_owned()
        } else {
            reason
        },
    ));
    if !pass {
        grade = grade.with_details(json!({"verdict": "fail"}));
    }
    grade
}

/// A score-based result: `score` as promptfoo reports it, failing only
/// with an explicit verdict.
fn scored(pass: bool, score: f64, reason: String) -> Grade {
    let mut grade = Grade::new(score.clamp(0.0, 1.0));
    grade.checks.push(evalhost_plugin_sdk::Check::new(
        pass,
        if pass {
            "Assertion passed".to_owned()
        } else {
            reason
        },
    ));
    grade.with_details(json!({"verdict": if pass { "pass" } else { "fail" }}))
}

/// JavaScript's `text.toLowerCase().trim().split(/\s+/)` (an empty text is
/// one empty word).
fn js_words(text: &str) -> Vec<String> {
    let t = text.to_lowercase();
    let t = t.trim();
    if t.is_empty() {
        return vec![String::new()];
    }
    t.split_whitespace().map(str::to_owned).collect()
}

fn ngrams(words: &[String], n: usize) -> Vec<String> {
    if n == 0 || n > words.len() {
        return Vec::new();
    }
    (0..=words.len() - n)
        .map(|i| words[i..i + n].join(" "))
        .collect()
}

fn counts(grams: &[String]) -> std::collections::HashMap<&str, usize> {
    let mut m = std::collections::HashMap::new();
    for g in grams {
        *m.entry(g.as_str()).or_insert(0) += 1;
    }
    m
}

/// promptfoo's `calculateBleuScore`: BLEU-4, uniform weights over the
/// orders the candidate has, clipped counts (the best reference per
/// order), brevity penalty against the closest reference length, a zero
/// precision smoothed to 1e-7.
pub fn bleu(candidate: &str, references: &[String]) -> f64 {
    if candidate.trim().is_empty() {
        return 0.0;
    }
    let cand = js_words(candidate);
    let refs: Vec<Vec<String>> = references.iter().map(|r| js_words(r)).collect();
    let closest = refs
        .iter()
        .map(Vec::len)
        .reduce(|prev, cur| {
            let (dc, dp) = (cur.abs_diff(cand.len()), prev.abs_diff(cand.len()));
            if dc < dp || (dc == dp && cur < prev) {
                cur
            } else {
                prev
            }
        })
        .unwrap_or(0);
    let mut orders = Vec::new();
    for n in 1..=4 {
        let grams = ngrams(&cand, n);
        if grams.is_empty() {
            continue;
        }
        let cc = counts(&grams);
        let mut best = 0;
        for r in &refs {
            let rgrams = ngrams(r, n);
            let rc = counts(&rgrams);
            let clipped: usize = cc
                .iter()
                .map(|(g, c)| (*c).min(rc.get(g).copied().unwrap_or(0)))
                .sum();
            best = best.max(clipped);
        }
        orders.push(best as f64 / grams.len() as f64);
    }
    let bp = if cand.len() > closest {
        1.0
    } else {
        (1.0 - closest as f64 / cand.len() as f64).exp()
    };
    if orders.is_empty() {
        return 0.0;
    }
    let w = 0.25 / (0.25 * orders.len() as f64);
    let sum: f64 = orders
        .iter()
        .map(|p| w * if *p == 0.0 { 1e-7f64 } else { *p }.ln())
        .sum();
    bp * sum.exp()
}

/// promptfoo's `calculateGleuScore`: n = 1..4, min(precision, recall) of
/// the matched n-grams, trailing dots dropped from words, the best
/// reference.
pub fn gleu(candidate: &str, references: &[String]) -> f64 {
    let strip = |w: String| w.trim_end_matches('.').to_owned();
    let cand: Vec<String> = js_words(candidate).into_iter().map(strip).collect();
    references
        .iter()
        .map(|r| {
            let refw: Vec<String> = js_words(r).into_iter().map(strip).collect();
            if cand == refw {
                return 1.0;
            }
            let (mut matched, mut ct, mut rt) = (0usize, 0usize, 0usize);
            for n in 1..=4 {
                let cg = ngrams(&cand, n);
                let rg = ngrams(&refw, n);
                let (cc, rc) = (counts(&cg), counts(&rg));
                matched += cc
                    .iter()
                    .map(|(g, c)| (*c).min(rc.get(g).copied().unwrap_or(0)))
                    .sum::<usize>();
                ct += cg.len();
                rt += rg.len();
            }
            if ct == 0 || rt == 0 {
                0.0
            } else {
                (matched as f64 / ct as f64).min(matched as f64 / rt as f64)
            }
        })
        .fold(f64::NEG_INFINITY, f64::max)
}

fn references(value: &Value) -> Result<Vec<String>, String> {
    match value {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) if items.iter().all(Value::is_string) && !items.is_empty() => Ok(items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()),
        _ => Err("must have a string or array of strings value".into()),
    }
}

fn not(inverse: bool) -> &'static str {
    if inverse { "not " } else { "" }
}

/// A value as JavaScript's `String(value)` writes it.
fn js_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        Value::Array(items) => items.iter().map(js_string).collect::<Vec<_>>().join(","),
        Value::Object(_) => "[object Object]".into(),
    }
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

fn list(config: &Config) -> Result<Vec<String>, String> {
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

fn contains_value(config: &Config) -> Result<String, String> {
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

/// promptfoo's `extractJsonObjects` (JSON only; promptfoo also reads YAML
/// flow mappings there).
pub fn json_objects(text: &str) -> Vec<Value> {
    let bytes: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == '{' {
            let (mut open, mut close) = (1, 0);
            let mut j = i + 1;
            let mut found = false;
            while j < bytes.len().min(i + 100_000) && open > close {
                if bytes[j] == '{' {
                    open += 1;
                }
                if bytes[j] == '}' {
                    close += 1;
                }
                j += 1;
                if open == close || j == bytes.len() {
                    let mut candidate: String = bytes[i..j].iter().collect();
                    if open > close {
                        candidate.push_str(&"}".repeat(open - close));
                    }
                    match serde_json::from_str::<Value>(&candidate) {
                        Ok(v @ (Value::Object(_) | Value::Array(_))) => {
                            out.push(v);
                            i = j - 1;
                            found = true;
                            break;
                        }
                        _ if open == close => break,
                        _ => {}
                    }
                }
            }
            let _ = found;
        }
        i += 1;
    }
    out
}

impl Grader for PromptfooGrader {
    fn describe() -> Plugin {
        let mut plugin =
            Plugin::new("evalhost-promptfoo", env!("CARGO_PKG_VERSION")).stateless(true);
        for (name, description) in TYPES {
            plugin = plugin.assertion_type(
                AssertionType::new(format!("promptfoo-{name}"), *description)
                    .threshold(if SCORED.contains(name) { 0.0 } else { 1.0 })
                    .schema(json!({"type": "object", "properties": {
                        "value": {}, "threshold": {"type": "number"}, "inverse": {"type": "boolean"},
                    }})),
            );
        }
        plugin
    }

    fn check_config(assertion_type: &str, config: &Config) -> Result<(), String> {
        let t = assertion_type
            .strip_prefix("promptfoo-")
            .unwrap_or(assertion_type);
        let prefix = |e: String| format!("\"{t}\" assertion type {e}");
        config.optional_bool("inverse")?;
        config.optional_f64("threshold")?;
        match t {
            "contains" | "icontains" => contains_value(config).map(drop).map_err(prefix),
            "contains-any" | "contains-all" | "icontains-any" | "icontains-all" => {
                list(config).map(drop).map_err(prefix)
            }
            "starts-with" | "regex" | "levenshtein" => match config.get("value") {
                Some(Value::String(s)) if !s.is_empty() => Ok(()),
                _ => Err(prefix("must have a string value".into())),
            },
            "equals" => match config.get("value") {
                Some(_) => Ok(()),
                None => Err(prefix("must have a value".into())),
            },
            "is-json" | "contains-json" => match config.get("value") {
                None | Some(Value::Null) => Ok(()),
                Some(_) => Err(format!(
                    "\"{t}\" with a JSON Schema `value` is not graded by this version of evalhost"
                )),
            },
            "bleu" | "gleu" => references(config.get("value").unwrap_or(&Value::Null))
                .map(drop)
                .map_err(prefix),
            "latency" | "cost" => match config.optional_f64("threshold")? {
                Some(_) => Ok(()),
                None => Err(format!(
                    "{} assertion must have a threshold{}",
                    if t == "cost" { "Cost" } else { "Latency" },
                    if t == "cost" { "" } else { " in milliseconds" }
                )),
            },
            "word-count" => match config.get("value") {
                Some(Value::Number(_)) => Ok(()),
                Some(Value::String(s)) if s.trim().parse::<f64>().is_ok() => Ok(()),
                Some(Value::Object(o)) if o.contains_key("min") || o.contains_key("max") => Ok(()),
                _ => Err(prefix(
                    "value must be a number or an object with min/max properties".into(),
                )),
            },
            other => Err(format!("evalhost-promptfoo does not grade `{other}`")),
        }
    }

    fn grade(request: &Request) -> Result<Grade, GradeError> {
        let output = request.output.as_str();
        let config = &request.config;
        let inverse = config.optional_bool("inverse")?.unwrap_or(false);
        let t = request
            .assertion_type
            .strip_prefix("promptfoo-")
            .unwrap_or(&request.assertion_type);
        let value = config.get("value").cloned().unwrap_or(Value::Null);
        Ok(match t {
            "equals" => {
                let (pass, shown) = if value.is_object() || value.is_array() {
                    let pass = match serde_json::from_str::<Value>(output) {
                        Ok(parsed) => (parsed == value) != inverse,
                        Err(_) => inverse,
                    };
                    (pass, value.to_string())
                } else {
                    let s = js_string(&value);
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
            "contains" | "icontains" => {
                let v = contains_value(config)?;
                let found = if t == "icontains" {
                    output.to_lowercase().contains(&v.to_lowercase())
                } else {
                    output.contains(&v)
                };
                outcome(
                    found != inverse,
                    format!("Expected output to {}contain \"{v}\"", not(inverse)),
                )
            }
            "contains-any" | "icontains-any" => {
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
                outcome(
                    any != inverse,
                    format!(
                        "Expected output to {}contain one of \"{}\"",
                        not(inverse),
                        values.join(", ")
                    ),
                )
            }
            "contains-all" | "icontains-all" => {
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
                outcome(
                    missing.is_empty() != inverse,
                    format!(
                        "Expected output to {}contain all of [{}]. Missing: [{}]",
                        not(inverse),
                        values.join(", "),
                        missing.join(", ")
                    ),
                )
            }
            "starts-with" => {
                let v = js_string(&value);
                outcome(
                    output.starts_with(&v) != inverse,
                    format!("Expected output to {}start with \"{v}\"", not(inverse)),
                )
            }
            "regex" => {
                let pattern = js_string(&value);
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
            "is-json" => {
                let parsed = serde_json::from_str::<Value>(output).is_ok();
                outcome(parsed != inverse, "Expected output to be valid JSON".into())
            }
            "contains-json" => {
                let found = !json_objects(output).is_empty();
                outcome(
                    found != inverse,
                    "Expected output to contain valid JSON".into(),
                )
            }
            "word-count" => {
                let count = output.split_whitespace().count();
                match &value {
                    Value::Object(o) => {
                        let min = o.get("min").and_then(Value::as_f64);
                        let max = o.get("max").and_then(Value::as_f64);
                        let c = count as f64;
                        let (base, reason_fail, reason_inv) = match (min, max) {
                            (Some(lo), Some(hi)) => (
                                c >= lo && c <= hi,
                                format!("Word count {count} is not between {} and {}", js_num(lo), js_num(hi)),
                                format!("Expected word count to not be between {} and {}, but got {count}", js_num(lo), js_num(hi)),
                            ),
                            (None, Some(hi)) => (
                                c <= hi,
                                format!("Word count {count} is greater than maximum {}", js_num(hi)),
                                format!("Expected word count to be greater than {}, but got {count}", js_num(hi)),
                            ),
                            (Some(lo), None) => (
                                c >= lo,
                                format!("Word count {count} is less than minimum {}", js_num(lo)),
                                format!("Expected word count to be less than {}, but got {count}", js_num(lo)),
                            ),
                            (None, None) => return Err(GradeError::Failed("\"word-count\" assertion object must have \"min\" and/or \"max\" properties".into())),
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
                }
            }
            "levenshtein" => {
                let v = js_string(&value);
                let d = levenshtein(output, &v);
                let threshold = config.optional_f64("threshold")?.unwrap_or(5.0);
                outcome(
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
                )
            }
            "bleu" | "gleu" => {
                let refs = references(&value)?;
                if t == "gleu" && output.is_empty() {
                    return Err(GradeError::Failed("Invalid inputs".into()));
                }
                let threshold = config.optional_f64("threshold")?.unwrap_or(0.5);
                let s = if t == "bleu" {
                    bleu(output, &refs)
                } else {
                    gleu(output, &refs)
                };
                let pass = (s >= threshold) != inverse;
                scored(
                    pass,
                    if inverse { 1.0 - s } else { s },
                    format!(
                        "{} score {s:.4} is {} than threshold {}",
                        t.to_uppercase(),
                        if inverse { "greater" } else { "less" },
                        js_num(threshold)
                    ),
                )
            }
            "latency" => {
                let threshold = config.optional_f64("threshold")?.unwrap_or(f64::NAN);
                let Some(ms) = request.trace.duration_ms else {
                    return Err(GradeError::Failed(
                        "Latency assertion does not support cached results (the target reported no duration)".into(),
                    ));
                };
                outcome(
                    ((ms as f64) <= threshold) != inverse,
                    format!(
                        "Latency {ms}ms is {} threshold {}ms",
                        if inverse {
                            "less than or equal to"
                        } else {
                            "greater than"
                        },
                        js_num(threshold)
                    ),
                )
            }
            "cost" => {
                let threshold = config.optional_f64("threshold")?.unwrap_or(f64::NAN);
                let Some(cost) = request.trace.cost_usd else {
                    return Err(GradeError::Failed(
                        "Cost assertion does not support providers that do not return cost".into(),
                    ));
                };
                outcome(
                    (cost <= threshold) != inverse,
                    format!(
                        "Cost {} is {} threshold {}",
                        to_precision_2(cost),
                        if inverse {
                            "less than or equal to"
                        } else {
                            "greater than"
                        },
                        js_num(threshold)
                    ),
                )
            }
            other => return Err(format!("evalhost-promptfoo does not grade `{other}`").into()),
        })
    }
}

/// JavaScript's `n.toPrecision(2)` for the costs assertions print.
fn to_precision_2(n: f64) -> String {
    if n == 0.0 {
        return "0.0".into();
    }
    let digits = n.abs().log10().floor() as i32;
    let decimals = (1 - digits).max(0) as usize;
    format!("{n:.decimals$}")
}

/// A number as JavaScript prints it.
fn js_num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}

export_grader!(PromptfooGrader);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comma_strings_split_as_promptfoo_splits_them() {
        assert_eq!(comma_values("a, b,c"), ["a", "b", "c"]);
        assert_eq!(comma_values("\"a, b\", c"), ["a, b", "c"]);
        assert_eq!(comma_values("x \\\"y\\\""), ["x \\\"y\\\""]);
    }

    #[test]
    fn a_list_value_naming_nothing_is_refused() {
        let config = |v: &str| Config::from_value(json!({ "value": v })).unwrap();
        assert!(
            list(&config(" , ,"))
                .unwrap_err()
                .contains("names no strings")
        );
        assert_eq!(list(&config("a,b")).unwrap(), ["a", "b"]);
    }

    #[test]
    fn bleu_and_gleu_score_as_promptfoo() {
        let r = vec!["the cat sat on the mat".to_owned()];
        assert!((bleu("the cat sat on the mat", &r) - 1.0).abs() < 1e-12);
        assert_eq!(bleu("   ", &r), 0.0);
        let partial = bleu("the cat sat on a mat", &r);
        assert!(partial > 0.0 && partial < 1.0, "{partial}");
        assert_eq!(gleu("The cat sat on the mat.", &r), 1.0);
        let g = gleu("the cat", &r);
        assert!((g - 3.0 / 18.0).abs() < 1e-12, "{g}");
    }

    #[test]
    fn levenshtein_counts_edits() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
    }

    #[test]
    fn json_objects_are_found_in_text() {
        assert_eq!(json_objects("x {\"a\": 1} y").len(), 1);
        assert!(json_objects("no json here {").is_empty());
        assert_eq!(json_objects("{\"a\": {\"b\": 2}} and {\"c\": 3}").len(), 2);
    }
}
