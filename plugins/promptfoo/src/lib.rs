//! Built-in `promptfoo-*` types: promptfoo 0.121's deterministic assertions
//! with promptfoo's semantics and reason texts (`src/assertions/*.ts`),
//! where they differ from AgentV's (`equals` does not trim, `starts-with`
//! does not trim, `contains` takes a number, the list types take a comma
//! string). A suite read in the promptfoo dialect grades `contains` with
//! `promptfoo-contains`; its `not-` prefix arrives as `inverse`, which each
//! handler applies as promptfoo's does. A binary handler scores 1 when it
//! passes, else 0; `bleu`, `gleu`, `rouge-n` and `tool-call-f1` report
//! promptfoo's score with an explicit verdict, and `is-refusal` passes an
//! empty output with score 0, as promptfoo does. Built only on the public
//! plugin SDK.
//!
//! `testdata/oracle.mjs` records what promptfoo itself answers for several
//! hundred cases (`oracle.json`); the `oracle` tests below grade the same
//! cases and compare pass, score and reason.

use evalhost_plugin_sdk::{
    AssertionType, Config, Grade, GradeError, Grader, Plugin, Request, Value, export_grader, json,
};

mod grading;
mod html;
mod is_html;
mod js;
mod meteor;
mod provider;
mod rag;
mod refusal;
mod rouge;
mod rubric;
pub mod schema;
mod similar;
mod toolcall;
mod tools;
mod unicode;
pub mod xml;

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
    (
        "is-json",
        "Output parses as JSON (and, with a JSON Schema value, conforms to it, as ajv checks it)",
    ),
    (
        "contains-json",
        "Output contains a JSON object (and, with a JSON Schema value, one that conforms to it)",
    ),
    (
        "is-valid-openai-tools-call",
        "Every tool call of the output is an OpenAI tool call whose arguments match the provider's `tools`",
    ),
    (
        "is-valid-openai-function-call",
        "The output is an OpenAI function call whose arguments match the provider's `functions`",
    ),
    (
        "is-valid-function-call",
        "The output is a function call whose arguments match the provider's `functions`",
    ),
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
    (
        "is-refusal",
        "Output is a refusal (an empty output counts as one, with score 0)",
    ),
    (
        "contains-html",
        "Output contains HTML (promptfoo's indicator heuristics)",
    ),
    (
        "tool-call-f1",
        "F1 of the expected tool names and those the output calls reaches the threshold (default 1)",
    ),
    (
        "rouge-n",
        "ROUGE-1 F-measure against the value reaches the threshold (default 0.75)",
    ),
    (
        "is-xml",
        "Output is well-formed XML holding the required element paths, if any",
    ),
    (
        "contains-xml",
        "Output contains an XML element holding the required element paths, if any",
    ),
    (
        "is-html",
        "Output is HTML: parsed as a browser parses it, it holds a recognized element and no bare text",
    ),
    (
        "finish-reason",
        "The provider's finish reason (normalised as promptfoo normalises it) equals the value",
    ),
    (
        "perplexity",
        "exp(-mean token log-probability) is at most the threshold (no threshold: passes)",
    ),
    (
        "perplexity-score",
        "The logistic of the mean token log-probability, at least the threshold",
    ),
    (
        "meteor",
        "METEOR against the reference(s) (exact, Porter-stem and WordNet-synonym matches, fragmentation penalty) reaches the threshold (default 0.5)",
    ),
    (
        "llm-rubric",
        "The grading model judges the output against the rubric (JSON pass, score, reason)",
    ),
    (
        "model-graded-closedqa",
        "The grading model says the output meets the criterion (its reply ends with Y)",
    ),
    (
        "factuality",
        "The grading model places the output against the reference: a disagreement (D) fails",
    ),
    (
        "context-recall",
        "The grading model attributes each sentence of the expected answer to the context, or not; the attributed share reaches the threshold (default 0)",
    ),
    (
        "context-relevance",
        "The grading model copies the context's sentences the query needs; their share of the context reaches the threshold (default 0)",
    ),
    (
        "context-faithfulness",
        "The grading model breaks the output into statements and checks each against the context; the supported share reaches the threshold (default 0)",
    ),
    (
        "similar",
        "The output's embedding is close to the value's (cosine, dot product, or euclidean distance) at the threshold (default 0.75)",
    ),
    (
        "answer-relevance",
        "The grading model writes the question the output answers, three times; their mean embedding similarity to the query reaches the threshold (default 0)",
    ),
    (
        "search-rubric",
        "A grading model that searches the web judges the output against the rubric (JSON pass, score, reason)",
    ),
    (
        "select-best",
        "The grading model picks, among the outputs of every prompt and provider for a test, the one that best fits the criteria",
    ),
    (
        "g-eval",
        "G-Eval: the grading model writes steps for each criterion, then scores the output 0-10 by them; the mean over 10 reaches the threshold (default 0.7)",
    ),
];

/// Types that ask the grading model (capability `llm`).
pub const MODEL_GRADED: &[&str] = &[
    "llm-rubric",
    "model-graded-closedqa",
    "factuality",
    "g-eval",
    "context-recall",
    "context-relevance",
    "context-faithfulness",
    "similar",
    "answer-relevance",
    "search-rubric",
    "select-best",
];

/// Types whose score is not 0 or 1: the plugin's verdict decides.
const SCORED: &[&str] = &[
    "bleu",
    "gleu",
    "tool-call-f1",
    "rouge-n",
    "perplexity-score",
    "meteor",
    "llm-rubric",
    "g-eval",
    "context-recall",
    "context-relevance",
    "context-faithfulness",
    "similar",
    "answer-relevance",
    "search-rubric",
];

/// A result as promptfoo's handler returns it: its pass, its score, its
/// reason (the pass reason too, where promptfoo writes one), the verdict
/// explicit.
pub(crate) fn judged(pass: bool, score: f64, reason: String) -> Grade {
    let mut grade = Grade::new(score.clamp(0.0, 1.0));
    grade
        .checks
        .push(evalhost_plugin_sdk::Check::new(pass, reason));
    grade.with_details(json!({"verdict": if pass { "pass" } else { "fail" }}))
}

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
                    match js::json_parse(&candidate) {
                        Some(v @ (Value::Object(_) | Value::Array(_))) => {
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
            let mut ty = AssertionType::new(format!("promptfoo-{name}"), *description);
            if MODEL_GRADED.contains(name) {
                ty = ty.capability(evalhost_plugin_sdk::Capability::Llm);
            }
            plugin = plugin.assertion_type(
                ty
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
        if let Some(n) = config.optional_u64("judge_samples")? {
            if !grading::SAMPLED.contains(&t) {
                return Err(format!(
                    "`judge_samples` applies to {} only",
                    grading::SAMPLED.join(", ")
                ));
            }
            if !(1..=20).contains(&n) {
                return Err(format!("`judge_samples` must be from 1 to 20, got {n}"));
            }
        }
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
            // promptfoo reads the schema only when the output holds JSON:
            // a bad one is an error then, not at load.
            "is-json" | "contains-json" => Ok(()),
            "is-valid-openai-tools-call"
            | "is-valid-openai-function-call"
            | "is-valid-function-call" => tools::check_config(config),
            "bleu" | "gleu" => references(config.get("value").unwrap_or(&Value::Null))
                .map(drop)
                .map_err(prefix),
            "finish-reason" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                _ => Err(prefix("must have a string value".into())),
            },
            "perplexity" | "perplexity-score" => Ok(()),
            "model-graded-closedqa" | "factuality" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                _ => Err(prefix("must have a string value".into())),
            },
            "context-recall" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                _ => Err("context-recall assertion requires a string value (expected answer or fact to verify)".into()),
            },
            "context-relevance" | "context-faithfulness" | "answer-relevance" => Ok(()),
            "select-best" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                _ => Err("select-best must have a string value".into()),
            },
            "search-rubric" => match config.get("value") {
                None | Some(Value::Null) => Err("search-rubric assertion type must have a string value".into()),
                Some(_) => Ok(()),
            },
            "similar" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                Some(Value::Array(items)) if !items.is_empty() => Ok(()),
                Some(Value::Array(_)) => Err("Similarity assertion must have at least one value to compare against".into()),
                _ => Err("Similarity assertion type must have a string or array of strings value".into()),
            },
            "g-eval" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                Some(Value::Array(items)) if items.iter().all(Value::is_string) => Ok(()),
                _ => Err("G-Eval assertion type must have a string or array of strings value".into()),
            },
            "llm-rubric" => match config.get("value") {
                None | Some(Value::Null | Value::String(_)) => Ok(()),
                Some(_) => Err(prefix("must have a string value (an object rubric is not read by this version of evalhost)".into())),
            },
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
            // promptfoo reads no value for these.
            "is-refusal" | "contains-html" | "is-html" => Ok(()),
            "tool-call-f1" => match config.get("value").and_then(toolcall::expected_tools) {
                None => Err("\"tool-call-f1\" assertion requires a value: array of tool names or comma-separated string".into()),
                Some(tools) if tools.is_empty() => Err("\"tool-call-f1\" assertion requires at least one expected tool name".into()),
                Some(_) => Ok(()),
            },
            "rouge-n" => match config.get("value") {
                Some(Value::String(_)) => Ok(()),
                _ => Err("\"rouge\" assertion type must be a string value".into()),
            },
            "is-xml" | "contains-xml" => {
                xml::required_elements(config.get("value").unwrap_or(&Value::Null)).map(drop)
            }
            "meteor" => meteor::check_config(config),
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
            "is-json" => is_json(config, output, &value, inverse)?,
            "contains-json" => contains_json(config, output, &value, inverse)?,
            "is-valid-openai-tools-call" => tools::tools_call(config, request)?,
            "is-valid-openai-function-call" | "is-valid-function-call" => {
                tools::function_call(config, request)?
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
            "finish-reason" => provider::finish_reason(config, request, inverse)?,
            "llm-rubric" => grading::sampled(request, || rubric::grade(request, inverse))?,
            "model-graded-closedqa" => grading::sampled(request, || rubric::closed_qa(request))?,
            "factuality" => grading::sampled(request, || rubric::factuality(request))?,
            "g-eval" => grading::sampled(request, || rubric::g_eval(request, inverse))?,
            "context-recall" => rag::context_recall(request)?,
            "context-relevance" => rag::context_relevance(request)?,
            "context-faithfulness" => rag::context_faithfulness(request)?,
            "similar" => similar::similar(request, inverse)?,
            "answer-relevance" => similar::answer_relevance(request)?,
            "search-rubric" => {
                grading::sampled(request, || rubric::search_rubric(request, inverse))?
            }
            "select-best" => rubric::select_best(request)?,
            "perplexity" => provider::perplexity(config, request, inverse)?,
            "perplexity-score" => provider::perplexity_score(config, request, inverse)?,
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
            "is-refusal" => {
                // `handleIsRefusal`: an empty output is a refusal that
                // scores 0 even when it passes.
                if js::trim(output).is_empty() {
                    let pass = !inverse;
                    judged(
                        pass,
                        0.0,
                        if pass {
                            "Empty response treated as refusal".into()
                        } else {
                            "Expected output to not be a refusal".into()
                        },
                    )
                } else {
                    let pass = refusal::is_basic_refusal(output) != inverse;
                    judged(
                        pass,
                        if pass { 1.0 } else { 0.0 },
                        if pass {
                            "Assertion passed".into()
                        } else {
                            format!("Expected output to {}be a refusal", not(inverse))
                        },
                    )
                }
            }
            "contains-html" => {
                let pass = html::contains_html(output) != inverse;
                judged(
                    pass,
                    if pass { 1.0 } else { 0.0 },
                    if pass {
                        "Assertion passed".into()
                    } else {
                        format!("Expected output to {}contain HTML content", not(inverse))
                    },
                )
            }
            "is-html" => {
                let result = is_html::validate_html(output);
                let pass = result.is_ok() != inverse;
                judged(
                    pass,
                    if pass { 1.0 } else { 0.0 },
                    if pass {
                        "Assertion passed".into()
                    } else {
                        result.err().unwrap_or("Output is valid HTML").into()
                    },
                )
            }
            "tool-call-f1" => {
                let expected = toolcall::expected_tools(&value)
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| {
                        GradeError::Failed("\"tool-call-f1\" assertion requires a value: array of tool names or comma-separated string".into())
                    })?;
                let r = toolcall::score(output, &expected);
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
                judged(
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
                )
            }
            "rouge-n" => {
                let Value::String(reference) = &value else {
                    return Err(GradeError::Failed(
                        "\"rouge\" assertion type must be a string value".into(),
                    ));
                };
                let s = rouge::rouge_1(&output.to_lowercase(), &reference.to_lowercase())
                    .map_err(GradeError::Failed)?;
                let threshold = config.optional_f64("threshold")?.unwrap_or(0.75);
                let pass = (s >= threshold) != inverse;
                judged(
                    pass,
                    if inverse { 1.0 - s } else { s },
                    format!(
                        "ROUGE-N score {} is {} threshold {}",
                        js::to_fixed(s, 2),
                        if s >= threshold {
                            "greater than or equal to"
                        } else {
                            "less than"
                        },
                        js_num(threshold)
                    ),
                )
            }
            "is-xml" | "contains-xml" => {
                let required = xml::required_elements(&value).map_err(GradeError::Failed)?;
                let (valid, reason) = if t == "is-xml" {
                    xml::is_xml(output, required.as_deref())
                } else {
                    xml::contains_xml(output, required.as_deref())
                };
                let pass = valid != inverse;
                judged(
                    pass,
                    if pass { 1.0 } else { 0.0 },
                    if pass {
                        "Assertion passed".into()
                    } else {
                        reason
                    },
                )
            }
            "meteor" => meteor::grade(output, config, inverse)?,
            other => return Err(format!("evalhost-promptfoo does not grade `{other}`").into()),
        })
    }
}

/// JavaScript's truthiness of an assertion value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0 && !x.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// The schema of an `is-json`/`contains-json` value as promptfoo's handler
/// takes it: an object as it is; a string through `loadYaml` (the suite
/// reader parsed it, `__parsed_value`, or recorded why not,
/// `__parse_error`); anything else throws.
fn schema_of(t: &str, config: &Config, value: &Value) -> Result<Value, GradeError> {
    match value {
        Value::Object(_) | Value::Array(_) => Ok(value.clone()),
        Value::String(s) if s.starts_with("file://") => Err(GradeError::Failed(format!(
            "{t} references a file that does not export a JSON schema"
        ))),
        Value::String(s) => {
            if let Some(e) = config.get("__parse_error").and_then(Value::as_str) {
                return Err(GradeError::Failed(e.to_owned()));
            }
            match config.get("__parsed_value") {
                Some(v) => Ok(v.clone()),
                // Not read by evalhost's suite reader: JSON is YAML.
                None => js::json_parse(s).ok_or_else(|| {
                    GradeError::Failed(format!(
                        "the {t} schema is not JSON, and no YAML parse of it was handed over"
                    ))
                }),
            }
        }
        _ => Err(GradeError::Failed(format!(
            "{t} assertion must have a string or object value"
        ))),
    }
}

/// promptfoo's `handleIsJson`: JSON.parse, then the schema (compiled only
/// when the output parsed).
fn is_json(
    config: &Config,
    output: &str,
    value: &Value,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let parsed = js::json_parse(output);
    let mut pass = parsed.is_some() != inverse;
    if let Some(data) = &parsed
        && truthy(value)
    {
        let schema = schema_of("is-json", config, value)?;
        let validator = schema::compile(&schema).map_err(GradeError::Failed)?;
        let result = validator.validate(data);
        pass = result.is_ok() != inverse;
        if !pass {
            return Ok(outcome(
                false,
                match result {
                    Ok(()) => "Output is JSON that conforms to the provided schema".into(),
                    Err(errors) => format!(
                        "JSON does not conform to the provided schema. Errors: {}",
                        schema::errors_text(&errors)
                    ),
                },
            ));
        }
    }
    Ok(outcome(pass, "Expected output to be valid JSON".into()))
}

/// promptfoo's `handleContainsJson`: the objects `extractJsonObjects`
/// finds, each against the schema until one conforms.
fn contains_json(
    config: &Config,
    output: &str,
    value: &Value,
    inverse: bool,
) -> Result<Grade, GradeError> {
    let objects = json_objects(output);
    let mut pass = if inverse {
        objects.is_empty()
    } else {
        !objects.is_empty()
    };
    let mut message = "Expected output to contain valid JSON".to_owned();
    if truthy(value) {
        for object in &objects {
            let schema = schema_of("contains-json", config, value)?;
            let validator = schema::compile(&schema).map_err(GradeError::Failed)?;
            let result = validator.validate(object);
            pass = result.is_ok() != inverse;
            match result {
                Ok(()) => {
                    if inverse {
                        message = "Output contains JSON conforming to the provided schema".into();
                    }
                    break;
                }
                Err(errors) => {
                    message = format!(
                        "JSON does not conform to the provided schema. Errors: {}",
                        schema::errors_text(&errors)
                    );
                }
            }
        }
    }
    Ok(outcome(pass, message))
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
    js::number(f)
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

#[cfg(test)]
mod new_types {
    use super::*;

    /// `(pass, score, reason)` of one grade.
    fn grade(t: &str, output: &str, config: Value) -> (bool, f64, String) {
        let t = format!("promptfoo-{t}");
        PromptfooGrader::check_config(&t, &Config::from_value(config.clone()).unwrap()).unwrap();
        let g = PromptfooGrader::grade(&Request::new(t, output).with_config(config)).unwrap();
        (g.checks[0].passed, g.score, g.checks[0].text.clone())
    }

    fn passed() -> String {
        "Assertion passed".into()
    }

    #[test]
    fn is_refusal() {
        let none = json!({});
        let not = json!({"inverse": true});
        assert_eq!(
            grade("is-refusal", "I’m sorry, no.", none.clone()),
            (true, 1.0, passed())
        );
        assert_eq!(
            grade("is-refusal", "Here you are.", none.clone()),
            (false, 0.0, "Expected output to be a refusal".into())
        );
        assert_eq!(
            grade("is-refusal", " \n", none),
            (true, 0.0, "Empty response treated as refusal".into())
        );
        assert_eq!(
            grade("is-refusal", "", not.clone()),
            (false, 0.0, "Expected output to not be a refusal".into())
        );
        assert_eq!(
            grade("is-refusal", "As an AI, I can't.", not),
            (false, 0.0, "Expected output to not be a refusal".into())
        );
    }

    #[test]
    fn contains_html() {
        assert_eq!(
            grade("contains-html", "<p>hi</p>", json!({})),
            (true, 1.0, passed())
        );
        assert_eq!(
            grade("contains-html", "Vec<String>", json!({})),
            (false, 0.0, "Expected output to contain HTML content".into())
        );
        assert_eq!(
            grade("contains-html", "<p>hi</p>", json!({"inverse": true})),
            (
                false,
                0.0,
                "Expected output to not contain HTML content".into()
            )
        );
    }

    #[test]
    fn tool_call_f1() {
        let out = r#"[{"type":"tool_use","name":"search"},{"type":"tool_use","name":"fetch"}]"#;
        assert_eq!(
            grade("tool-call-f1", out, json!({"value": ["fetch", "search"]})),
            (
                true,
                1.0,
                "Tool Call F1: 1.000 (precision=1.000, recall=1.000). Expected: [fetch, search], Called: [fetch, search]".into()
            )
        );
        assert_eq!(
            grade("tool-call-f1", out, json!({"value": "search, calc"})),
            (
                false,
                0.5,
                "Tool Call F1 score 0.500 is below threshold 1. Expected: [calc, search], Called: [fetch, search]. Precision=0.500, Recall=0.500".into()
            )
        );
        // `not-` flips the pass only.
        assert_eq!(
            grade("tool-call-f1", "no calls", json!({"value": ["x"], "inverse": true, "threshold": 0.5})),
            (
                true,
                0.0,
                "Tool Call F1: 0.000 (precision=0.000, recall=0.000). Expected: [x], Called: [(none)]".into()
            )
        );
        assert!(
            PromptfooGrader::check_config(
                "promptfoo-tool-call-f1",
                &Config::from_value(json!({"value": []})).unwrap()
            )
            .is_err()
        );
    }

    #[test]
    fn rouge_n() {
        let value = json!({"value": "The cat sat on the mat."});
        assert_eq!(
            grade("rouge-n", "the cat sat on the mat.", value),
            (
                true,
                1.0,
                "ROUGE-N score 1.00 is greater than or equal to threshold 0.75".into()
            )
        );
        let (pass, score, reason) = grade(
            "rouge-n",
            "the cat",
            json!({"value": "the cat sat on the mat", "inverse": true}),
        );
        assert!(pass);
        assert!((score - 0.5).abs() < 1e-12);
        assert_eq!(reason, "ROUGE-N score 0.50 is less than threshold 0.75");
    }

    #[test]
    fn is_xml_and_contains_xml() {
        let xml = "<book><title>T</title></book>";
        assert_eq!(
            grade("is-xml", xml, json!({"value": "book.title"})),
            (true, 1.0, passed())
        );
        assert_eq!(
            grade("is-xml", xml, json!({"value": ["book.author"]})),
            (
                false,
                0.0,
                "XML is missing required elements: book.author".into()
            )
        );
        assert_eq!(
            grade("is-xml", xml, json!({"inverse": true})),
            (
                false,
                0.0,
                "XML is valid and contains all required elements".into()
            )
        );
        let (pass, _, reason) = grade("is-xml", "<a><b></a>", json!({}));
        assert!(
            !pass && reason.starts_with("XML parsing failed: "),
            "{reason}"
        );
        assert_eq!(
            grade("is-xml", "<!DOCTYPE a [<!ENTITY e 'x'>]><a/>", json!({})),
            (
                false,
                0.0,
                "DTD internal subsets are not supported by is-xml validation".into()
            )
        );
        assert_eq!(
            grade(
                "contains-xml",
                &format!("Sure: {xml} done"),
                json!({"value": {"requiredElements": ["book.title"]}})
            ),
            (true, 1.0, passed())
        );
        assert_eq!(
            grade("contains-xml", "no markup", json!({})),
            (false, 0.0, "No XML content found in the output".into())
        );
        assert_eq!(
            grade(
                "contains-xml",
                "x <a><b><c/></b></a>",
                json!({"value": "b.c"})
            ),
            (
                false,
                0.0,
                "No valid XML content found matching the requirements".into()
            )
        );
        assert!(
            PromptfooGrader::check_config(
                "promptfoo-is-xml",
                &Config::from_value(json!({"value": {"other": 1}})).unwrap()
            )
            .is_err()
        );
    }
}

/// Cases graded by promptfoo 0.121.20 itself (`testdata/oracle.mjs` runs its
/// `runAssertion` and js-rouge's tokenizer): the same pass, score and
/// reason here.
#[cfg(test)]
mod oracle {
    use super::*;

    fn oracle() -> Value {
        serde_json::from_str(include_str!("testdata/oracle.json")).expect("oracle.json parses")
    }

    /// Grades one recorded case; `(pass, score, reason)`.
    pub(crate) fn grade_case(case: &Value) -> Result<(bool, f64, String), String> {
        let raw = case["type"].as_str().unwrap();
        let (base, inverse) = match raw.strip_prefix("not-") {
            Some(b) => (b, true),
            None => (raw, false),
        };
        let mut config = serde_json::Map::new();
        if !case["value"].is_null() {
            config.insert("value".into(), case["value"].clone());
        }
        if !case["threshold"].is_null() {
            config.insert("threshold".into(), case["threshold"].clone());
        }
        if inverse {
            config.insert("inverse".into(), Value::Bool(true));
        }
        // What the suite reader hands over: a string schema's YAML parse,
        // the provider.
        if let Some(v) = case.get("parsed_value") {
            config.insert("__parsed_value".into(), v.clone());
        }
        if let Some(e) = case.get("parse_error") {
            config.insert("__parse_error".into(), e.clone());
        }
        if let Some(p) = case.get("provider") {
            config.insert("__provider".into(), p.clone());
        }
        let t = format!("promptfoo-{base}");
        let config = Value::Object(config);
        PromptfooGrader::check_config(&t, &Config::from_value(config.clone()).unwrap())?;
        // An object output (promptfoo's provider returned one) is its JSON
        // text in evalhost; an OpenAI reply with calls says so.
        let (output, structured) = match &case["output"] {
            Value::String(s) => (s.clone(), false),
            other => (js::stringify(other), true),
        };
        let mut request = Request::new(t, output).with_config(config);
        if structured && case["provider"]["kind"] == "openai" {
            request = request.with_finish_reason("tool_calls");
        }
        let grade = PromptfooGrader::grade(&request).map_err(|e| format!("grade: {e:?}"))?;
        let check = &grade.checks[0];
        Ok((check.passed, grade.score, check.text.clone()))
    }

    /// Outputs on which roxmltree and saxes disagree (documented in
    /// `xml.rs`): an XML 1.1 document that undeclares a prefix
    /// (`xmlns:x=""`) and then uses it is accepted by roxmltree, which does
    /// not expose prefixes.
    const KNOWN_XML_DIFFERENCES: &[&str] =
        &[r#"<?xml version="1.1"?><r xmlns:x="urn:x"><x:a xmlns:x=""/></r>"#];

    /// A saxes error as promptfoo reports it: "XML parsing failed: 1:5: …".
    fn is_saxes_message(reason: &str) -> bool {
        let Some(rest) = reason.strip_prefix("XML parsing failed: ") else {
            return false;
        };
        let mut parts = rest.splitn(3, ':');
        let digits = |p: Option<&str>| {
            p.is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        };
        digits(parts.next()) && digits(parts.next()) && parts.next().is_some()
    }

    /// A `JSON.parse` error as V8 words it ("Unexpected token …",
    /// "… in JSON at position …"): evalhost says where JSON.parse failed
    /// but not in V8's words.
    fn is_v8_json_message(reason: &str) -> bool {
        reason.contains("is not valid JSON")
            || reason.contains("in JSON at position")
            || reason.contains("Unexpected end of JSON input")
    }

    #[test]
    fn oracle_cases_match_promptfoo() {
        let oracle = oracle();
        let mut differ = Vec::new();
        let (mut saxes_wording, mut known, mut v8_wording) = (0, 0, 0);
        let cases = oracle["assertions"].as_array().unwrap();
        for case in cases {
            if case["output"]
                .as_str()
                .is_some_and(|o| KNOWN_XML_DIFFERENCES.contains(&o))
            {
                known += 1;
                continue;
            }
            if let Some(error) = case.get("error") {
                // promptfoo threw (an error row): evalhost accepts the
                // config and errors when it grades.
                match grade_case(case) {
                    Err(e) if e.starts_with("grade: ") => {}
                    other => differ.push(format!(
                        "{case}\n  promptfoo throws {error}\n  evalhost {other:?}"
                    )),
                }
                continue;
            }
            let want = (
                case["pass"].as_bool().unwrap(),
                case["score"].as_f64().unwrap(),
                case["reason"].as_str().unwrap().to_owned(),
            );
            match grade_case(case) {
                Ok(got) => {
                    if got.0 != want.0 || (got.1 - want.1).abs() > 1e-12 {
                        differ.push(format!("{case}\n  evalhost {got:?}"));
                    } else if got.2 != want.2 {
                        // saxes' own message ("L:C: …") is the one text not
                        // reproduced: roxmltree checks well-formedness.
                        if is_saxes_message(&want.2) && got.2.starts_with("XML parsing failed: ") {
                            saxes_wording += 1;
                        } else if is_v8_json_message(&want.2)
                            && got.2.starts_with(tools::JSON_PARSE_MARK)
                        {
                            v8_wording += 1;
                        } else {
                            differ.push(format!("{case}\n  evalhost {got:?}"));
                        }
                    }
                }
                Err(e) => differ.push(format!("{case}\n  evalhost error {e}")),
            }
        }
        eprintln!(
            "{} cases: {} differ; {saxes_wording} differ only in saxes' wording of a parse error, {v8_wording} only in V8's wording of a JSON.parse error; {known} on known differences not compared",
            cases.len(),
            differ.len()
        );
        assert!(
            differ.is_empty(),
            "{} of {} differ:\n{}",
            differ.len(),
            cases.len(),
            differ.join("\n")
        );
    }

    /// A parsed object's shape as the oracle writes it: primitives as null,
    /// keys sorted (JavaScript lists integer-like keys first).
    fn shape(js: &xml::Js) -> Value {
        match js {
            xml::Js::Prim => Value::Null,
            xml::Js::Arr(items) => Value::Array(items.iter().map(shape).collect()),
            xml::Js::Obj(m) => {
                let sorted: std::collections::BTreeMap<&str, Value> =
                    m.iter().map(|(k, v)| (k.as_str(), shape(v))).collect();
                serde_json::to_value(sorted).unwrap()
            }
        }
    }

    fn sorted(v: &Value) -> Value {
        match v {
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            Value::Object(m) => {
                let s: std::collections::BTreeMap<&str, Value> =
                    m.iter().map(|(k, v)| (k.as_str(), sorted(v))).collect();
                serde_json::to_value(s).unwrap()
            }
            other => other.clone(),
        }
    }

    #[test]
    fn fast_xml_parser_port_matches() {
        let oracle = oracle();
        let mut differ = Vec::new();
        let cases = oracle["fxp"].as_array().unwrap();
        for case in cases {
            let input = case["input"].as_str().unwrap();
            let got = xml::fxp_parse(input);
            let ok = match (&got, case.get("error")) {
                (Err(e), Some(want)) => e == want.as_str().unwrap(),
                (Ok(js), None) => shape(js) == sorted(&case["shape"]),
                _ => false,
            };
            if !ok {
                differ.push(format!(
                    "{input:?}\n  fast-xml-parser {}\n  evalhost {:?}",
                    case.get("error").unwrap_or(&case["shape"]),
                    got.map(|j| shape(&j))
                ));
            }
        }
        assert!(
            differ.is_empty(),
            "{} of {} differ:\n{}",
            differ.len(),
            cases.len(),
            differ.join("\n")
        );
    }

    #[test]
    fn tokens_match_js_rouge() {
        let oracle = oracle();
        let mut differ = Vec::new();
        let cases = oracle["tokenize"].as_array().unwrap();
        for case in cases {
            let input = case["input"].as_str().unwrap();
            let want: Vec<&str> = case["tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            let got: Vec<String> = rouge::tree_bank_tokenize(input)
                .iter()
                .map(|t| String::from_utf16_lossy(t))
                .collect();
            if got != want {
                differ.push(format!(
                    "{input:?}\n  js-rouge {want:?}\n  evalhost {got:?}"
                ));
            }
        }
        assert!(
            differ.is_empty(),
            "{} of {} differ:\n{}",
            differ.len(),
            cases.len(),
            differ.join("\n")
        );
    }
}
