//! CSV test files as promptfoo reads them: `csv-parse` (`columns: true`,
//! `bom: true`) and `assertionFromString` for `__expected` cells.

use super::*;

/// A CSV file's rows as test mappings, each with its line: columns are
/// vars, except `__expected[N]` (an assertion in promptfoo's mini-syntax),
/// `__description`, `__threshold` and `__metric`. Read as promptfoo's
/// `csv-parse` reads it (`columns: true`, `bom: true`): a row whose
/// number of fields is not the header's — a stray unquoted comma, an empty
/// line between rows — is refused with its line, as promptfoo refuses it
/// (`CSV_RECORD_INCONSISTENT_COLUMNS`), never read with its columns
/// shifted. A row of empty fields is a test of empty vars, as in promptfoo.
pub(super) fn csv_rows(text: &str) -> Result<Vec<(usize, Value)>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let records = crate::csv::parse_csv_lines(text)?;
    let Some(((_, header), body)) = records.split_first() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (line, record) in body {
        if record.len() != header.len() {
            return Err(format!(
                "line {line}: {} field{} where the header has {} (a comma outside quotes, or an empty line?)",
                record.len(),
                if record.len() == 1 { "" } else { "s" },
                header.len()
            ));
        }
        let mut vars = Map::new();
        let mut assert = Vec::new();
        let mut test = Map::new();
        let mut metric = None;
        let mut metadata = Map::new();
        let mut configs = Vec::new();
        for (name, cell) in header.iter().zip(record) {
            let name = name.trim();
            if name.starts_with("__expected") {
                if !cell.trim().is_empty() {
                    assert.push(
                        assertion_from_string(cell.trim())
                            .map_err(|e| format!("line {line}: `{name}`: {e}"))?,
                    );
                }
            } else if name == "__description" {
                if !cell.is_empty() {
                    test.insert("description".into(), Value::String(cell.clone()));
                }
            } else if name == "__threshold" {
                if let Some(t) = parse_finite_number(cell) {
                    test.insert("threshold".into(), json!(t));
                }
            } else if name == "__metric" {
                metric = Some(cell.clone());
            } else if let Some(key) = name.strip_prefix("__metadata:") {
                // promptfoo's `testCaseFromCsvRow`: `key[]` is a list split
                // on commas not escaped by a backslash; an empty cell is
                // no key.
                if !cell.trim().is_empty() {
                    let value = match key.strip_suffix("[]") {
                        Some(_) => Value::Array(
                            split_unescaped_commas(cell)
                                .into_iter()
                                .map(|v| Value::String(v.trim().replace("\\,", ",")))
                                .collect(),
                        ),
                        None => Value::String(cell.clone()),
                    };
                    metadata.insert(key.trim_end_matches("[]").to_owned(), value);
                }
            } else if name == "__metadata" {
                // promptfoo warns that it needs a key, and ignores it.
            } else if let Some(spec) = name.strip_prefix("__config:") {
                // `__config:__expected[N]:threshold`: the threshold of the
                // Nth assertion the row's `__expected` cells make (1 when
                // unnumbered), copied into the row's metadata too.
                let parts: Vec<&str> = spec.split(':').collect();
                let [expected, key] = parts[..] else {
                    return Err(format!(
                        "line {line}: the CSV column `{name}` must be `__config:__expected:threshold` or `__config:__expected<N>:threshold` (promptfoo ignores it with a warning; evalhost refuses it rather than drop a threshold)"
                    ));
                };
                let index = match expected.strip_prefix("__expected") {
                    Some("") => Some(0),
                    Some(n) => n.parse::<usize>().ok().filter(|n| *n >= 1).map(|n| n - 1),
                    None => None,
                };
                let Some(index) = index else {
                    return Err(format!(
                        "line {line}: Invalid expected key \"{expected}\" in __config column \"{name}\": it must be __expected or __expected<N> with N a positive integer"
                    ));
                };
                if key != "threshold" {
                    return Err(format!(
                        "line {line}: Invalid config key \"{key}\" in __config column \"{name}\"; valid config keys include: threshold"
                    ));
                }
                let Some(value) = parse_finite_number(cell) else {
                    return Err(format!(
                        "line {line}: Invalid numeric value \"{cell}\" for config key \"{key}\" in column \"{name}\""
                    ));
                };
                configs.push((index, key.to_owned(), value));
            } else if name.starts_with("__") {
                return Err(format!(
                    "the CSV column `{name}` is not read by this version of evalhost"
                ));
            } else {
                vars.insert(name.to_owned(), Value::String(cell.clone()));
            }
        }
        if let Some(m) = metric {
            for a in &mut assert {
                a["metric"] = Value::String(m.clone());
            }
        }
        // As promptfoo applies them: to the Nth assertion made, when there
        // is one, and into the metadata.
        for (index, key, value) in configs {
            if let Some(a) = assert.get_mut(index) {
                a[key.as_str()] = json!(value);
                metadata.insert(key, json!(value));
            }
        }
        test.insert("vars".into(), Value::Object(vars));
        if !metadata.is_empty() {
            test.insert("metadata".into(), Value::Object(metadata));
        }
        if !assert.is_empty() {
            test.insert("assert".into(), Value::Array(assert));
        }
        out.push((*line, Value::Object(test)));
    }
    Ok(out)
}

/// promptfoo 0.121.20's assertion types, in the order its
/// `BaseAssertionTypesSchema` lists them: `assertionFromString` matches a
/// cell against them in this order (so `similar:cosine:x` is `similar`
/// with the value `cosine:x`, as in promptfoo).
pub(super) const CSV_ASSERTION_TYPES: &[&str] = &[
    "agent-rubric",
    "answer-relevance",
    "bleu",
    "classifier",
    "contains",
    "contains-all",
    "contains-any",
    "contains-html",
    "contains-json",
    "contains-sql",
    "contains-xml",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "conversation-relevance",
    "cost",
    "equals",
    "factuality",
    "finish-reason",
    "g-eval",
    "gleu",
    "guardrails",
    "icontains",
    "icontains-all",
    "icontains-any",
    "is-html",
    "is-json",
    "is-refusal",
    "is-sql",
    "is-valid-function-call",
    "is-valid-openai-function-call",
    "is-valid-openai-tools-call",
    "is-xml",
    "javascript",
    "latency",
    "levenshtein",
    "llm-rubric",
    "pi",
    "meteor",
    "model-graded-closedqa",
    "model-graded-factuality",
    "moderation",
    "perplexity",
    "perplexity-score",
    "python",
    "regex",
    "rouge-n",
    "ruby",
    "similar",
    "similar:cosine",
    "similar:dot",
    "similar:euclidean",
    "starts-with",
    "tool-call-f1",
    "skill-used",
    "trajectory:goal-success",
    "trajectory:tool-args-match",
    "trajectory:step-count",
    "trajectory:tool-sequence",
    "trajectory:tool-used",
    "trace-error-spans",
    "trace-span-count",
    "trace-span-duration",
    "search-rubric",
    "webhook",
    "word-count",
];

/// promptfoo's `parseFiniteNumber`: a complete decimal literal, else none.
pub(super) fn parse_finite_number(s: &str) -> Option<f64> {
    let t = s.trim();
    let b = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mantissa, exponent) = match b.find(['e', 'E']) {
        Some(i) => (&b[..i], Some(&b[i + 1..])),
        None => (b, None),
    };
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some((i, f)) => (digits(i) && (f.is_empty() || digits(f))) || (i.is_empty() && digits(f)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    if !(mantissa_ok && exponent_ok) {
        return None;
    }
    t.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// promptfoo's `parseCommaSeparatedAssertionValues`: fields split on
/// commas, `"…"` fields with `\"`, `\\` and `""` escapes, unquoted fields
/// trimmed, empty ones skipped.
pub(super) fn comma_separated_values(value: &str) -> Result<Vec<String>, String> {
    let v: Vec<char> = value.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let skip_ws = |mut i: usize| {
        while i < v.len() && v[i].is_whitespace() {
            i += 1;
        }
        i
    };
    while i < v.len() {
        loop {
            i = skip_ws(i);
            if i < v.len() && v[i] == ',' {
                i += 1;
            } else {
                break;
            }
        }
        if i >= v.len() {
            break;
        }
        if v[i] == '"' {
            let mut field = String::new();
            let mut terminated = false;
            i += 1;
            while i < v.len() {
                if v[i] == '\\' && i + 1 < v.len() && (v[i + 1] == '"' || v[i + 1] == '\\') {
                    field.push(v[i + 1]);
                    i += 2;
                } else if v[i] == '"' && i + 1 < v.len() && v[i + 1] == '"' {
                    field.push('"');
                    i += 2;
                } else if v[i] == '"' {
                    i += 1;
                    terminated = true;
                    break;
                } else {
                    field.push(v[i]);
                    i += 1;
                }
            }
            if !terminated {
                return Err("Unterminated quoted field in contains assertion value".into());
            }
            out.push(field);
            i = skip_ws(i);
            if i < v.len() && v[i] != ',' {
                return Err("Expected comma after quoted field in contains assertion value".into());
            }
        } else {
            let start = i;
            while i < v.len() && v[i] != ',' {
                i += 1;
            }
            out.push(v[start..i].iter().collect::<String>().trim().to_owned());
        }
    }
    Ok(out)
}

/// The parts of `[not-]TYPE[(threshold)][:value]` when `cell` matches
/// promptfoo's assertion regex: (negated, type, threshold text, value).
pub(super) fn match_assertion(
    cell: &str,
) -> Option<(bool, &'static str, Option<&str>, Option<&str>)> {
    let (negated, rest) = match cell.strip_prefix("not-") {
        Some(r) => (true, r),
        None => (false, cell),
    };
    // JavaScript's regex tries the types in order, and for each first with
    // the `(threshold)` group, then without it.
    fn tail(after: &str) -> Option<Option<&str>> {
        if after.is_empty() {
            Some(None)
        } else {
            after.strip_prefix(':').map(Some)
        }
    }
    let threshold = |after: &str| -> Option<(usize, usize)> {
        let inner = after.strip_prefix('(')?;
        let close = inner.find(')')?;
        let number = &inner[..close];
        let (i, f) = number.split_once('.').unwrap_or((number, "0"));
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
        (digits(i) && digits(f)).then_some((1, close))
    };
    for ty in CSV_ASSERTION_TYPES {
        let Some(after) = rest.strip_prefix(ty) else {
            continue;
        };
        if let Some((open, close)) = threshold(after) {
            let number = &after[open..open + close];
            if let Some(value) = tail(&after[open + close + 1..]) {
                return Some((negated, ty, Some(number), value));
            }
        }
        if let Some(value) = tail(after) {
            return Some((negated, ty, None, value));
        }
    }
    None
}

/// promptfoo 0.121.20's `assertionFromString` (`src/csv.ts`): `javascript:`,
/// `fn:`, `eval:` and JavaScript files; `grade:` and `llm-rubric:`;
/// `python:` and Python files; then `[not-]TYPE[(threshold)][:value]` over
/// every assertion type it knows, the value optional (`is-json` alone is
/// that assertion); anything else is `equals` with the whole cell.
pub(super) fn assertion_from_string(expected: &str) -> Result<Value, String> {
    let js_file = |p: &str| {
        let lower = p.to_ascii_lowercase();
        [".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"]
            .iter()
            .any(|e| lower.ends_with(e))
    };
    for prefix in ["javascript:", "fn:", "eval:"] {
        if let Some(code) = expected.strip_prefix(prefix) {
            return Ok(json!({"type": "javascript", "value": code.trim()}));
        }
    }
    if let Some(file) = expected.strip_prefix("file://")
        && js_file(file)
    {
        return Ok(json!({"type": "javascript", "value": expected.trim()}));
    }
    if let Some(rubric) = expected
        .strip_prefix("grade:")
        .or_else(|| expected.strip_prefix("llm-rubric:"))
    {
        return Ok(json!({"type": "llm-rubric", "value": rubric}));
    }
    if expected.starts_with("python:")
        || (expected.starts_with("file://")
            && (expected.ends_with(".py") || expected.contains(".py:")))
    {
        return Ok(json!({"type": "python", "value": expected[7..].trim()}));
    }
    let Some((negated, ty, threshold, value)) = match_assertion(expected) else {
        return Ok(json!({"type": "equals", "value": expected}));
    };
    let full = if negated {
        format!("not-{ty}")
    } else {
        ty.to_owned()
    };
    let mut a = json!({"type": full});
    match ty {
        "contains-all" | "contains-any" | "icontains-all" | "icontains-any" => {
            if let Some(v) = value {
                a["value"] = if v.is_empty() {
                    json!("")
                } else {
                    json!(comma_separated_values(v)?)
                };
            }
        }
        "contains-json" | "is-json" => {
            if let Some(v) = value {
                a["value"] = json!(v);
            }
        }
        "answer-relevance"
        | "classifier"
        | "context-faithfulness"
        | "context-recall"
        | "context-relevance"
        | "cost"
        | "latency"
        | "levenshtein"
        | "perplexity-score"
        | "perplexity"
        | "rouge-n"
        | "similar"
        | "starts-with" => {
            if let Some(v) = value {
                a["value"] = json!(v.trim());
            }
            let default = if ty == "similar" { 0.8 } else { 0.75 };
            a["threshold"] = json!(threshold.and_then(parse_finite_number).unwrap_or(default));
        }
        _ => {
            if let Some(v) = value {
                a["value"] = json!(v.trim());
            }
        }
    }
    Ok(a)
}

/// `cell` split on commas not preceded by a backslash (JavaScript's
/// `split(/(?<!\\),/)`).
fn split_unescaped_commas(cell: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = cell.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b',' && (i == 0 || bytes[i - 1] != b'\\') {
            out.push(&cell[start..i]);
            start = i + 1;
        }
    }
    out.push(&cell[start..]);
    out
}
