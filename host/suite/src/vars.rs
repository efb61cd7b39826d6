//! `{{ var }}` templating of a test's values from its `vars` (AgentV's
//! test-vars templating), shared by every dialect.

use serde_json::{Map, Value};

/// `{{ var }}` substitution (§1.8): a string that is exactly one placeholder
/// becomes the variable's value (any JSON type); inside a larger string,
/// non-strings are JSON-encoded; missing variables are left as written;
/// dotted names walk into mappings.
pub fn substitute_vars(value: &Value, vars: &Map<String, Value>) -> Value {
    match value {
        Value::String(s) if s.contains("{{") => {
            let spans = var_spans(s);
            if let [(0, end, name)] = spans.as_slice()
                && *end == s.len()
            {
                return lookup_var(vars, name)
                    .cloned()
                    .unwrap_or_else(|| value.clone());
            }
            let mut out = String::with_capacity(s.len());
            let mut last = 0;
            for (start, end, name) in &spans {
                out.push_str(&s[last..*start]);
                match lookup_var(vars, name) {
                    Some(Value::String(v)) => out.push_str(v),
                    Some(other) => out.push_str(&other.to_string()),
                    None => out.push_str(&s[*start..*end]),
                }
                last = *end;
            }
            out.push_str(&s[last..]);
            Value::String(out)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| substitute_vars(v, vars)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute_vars(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn var_spans(text: &str) -> Vec<(usize, usize, String)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(rel) = text[from..].find("{{") {
        let start = from + rel;
        // `${{` is environment syntax, already handled.
        if start > 0 && text.as_bytes()[start - 1] == b'$' {
            from = start + 2;
            continue;
        }
        let Some(close) = text[start + 2..].find("}}") else {
            break;
        };
        let name = text[start + 2..start + 2 + close].trim();
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        let end = start + 2 + close + 2;
        if valid {
            spans.push((start, end, name.to_owned()));
        }
        from = end;
    }
    spans
}

fn lookup_var<'a>(vars: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    let mut parts = name.split('.');
    let mut current = vars.get(parts.next()?)?;
    for part in parts {
        current = current.get(part)?;
    }
    Some(current)
}
