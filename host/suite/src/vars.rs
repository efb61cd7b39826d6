//! `{{ var }}` templating of a test's values from its `vars` (AgentV's
//! test-vars templating), shared by every dialect.

use serde_json::{Map, Value};

/// `{{ var }}` substitution (§1.8): a string that is exactly one placeholder
/// becomes the variable's value (any JSON type); inside a larger string,
/// non-strings are JSON-encoded as JavaScript encodes them (`1.0` is `1`); missing variables are left as written;
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
                    // JSON.stringify: JavaScript's numbers (`1.0` is `1`).
                    Some(other) => out.push_str(&crate::nunjucks::json_stringify(other)),
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

/// What an empty list does in [`cartesian`]: the two tools differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmptyList {
    /// It stays one value, `[]` (promptfoo: it expands lists whose first
    /// item is a string, and an empty one has none).
    Keep,
    /// It expands into no values, so the test has no rows at all (AgentV
    /// 5's `shouldExpandVarValue`: `length === 0 || typeof value[0] ===
    /// 'string'`).
    NoRows,
}

/// The var matrix both promptfoo and AgentV 5 build: each var whose value
/// is a list starting with a string takes each of its values in turn, and
/// the rows are the cartesian product in key order (the first key varying
/// slowest); every other value is the same in each row. `None` when the
/// rows would be more than `max_rows`.
pub fn cartesian(
    vars: &Map<String, Value>,
    empty: EmptyList,
    max_rows: usize,
) -> Option<Vec<Map<String, Value>>> {
    let mut rows = vec![Map::new()];
    for (k, v) in vars {
        match v {
            Value::Array(items)
                if items.first().is_some_and(Value::is_string)
                    || (items.is_empty() && empty == EmptyList::NoRows) =>
            {
                if rows.len().saturating_mul(items.len()) > max_rows {
                    return None;
                }
                let mut next = Vec::with_capacity(rows.len() * items.len());
                for row in &rows {
                    for item in items {
                        let mut r = row.clone();
                        r.insert(k.clone(), item.clone());
                        next.push(r);
                    }
                }
                rows = next;
            }
            other => {
                for r in &mut rows {
                    r.insert(k.clone(), other.clone());
                }
            }
        }
    }
    Some(rows)
}

#[cfg(test)]
mod tests {
    use super::{EmptyList, cartesian};
    use serde_json::{Map, Value, json};

    fn vars(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn lists_starting_with_a_string_expand_first_key_slowest() {
        let rows = cartesian(
            &vars(json!({"a": ["x", "y"], "b": ["1", 2], "c": [1, "z"], "d": 5})),
            EmptyList::Keep,
            100,
        )
        .unwrap();
        let got: Vec<(Value, Value)> = rows
            .iter()
            .map(|r| (r["a"].clone(), r["b"].clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (json!("x"), json!("1")),
                (json!("x"), json!(2)),
                (json!("y"), json!("1")),
                (json!("y"), json!(2)),
            ]
        );
        // A list starting with a number is one value; so is a scalar.
        assert!(
            rows.iter()
                .all(|r| r["c"] == json!([1, "z"]) && r["d"] == json!(5))
        );
    }

    #[test]
    fn an_empty_list_is_one_value_for_promptfoo_and_no_rows_for_agentv5() {
        let v = vars(json!({"a": ["x", "y"], "e": []}));
        let kept = cartesian(&v, EmptyList::Keep, 100).unwrap();
        assert_eq!(kept.len(), 2);
        assert!(kept.iter().all(|r| r["e"] == json!([])));
        assert!(cartesian(&v, EmptyList::NoRows, 100).unwrap().is_empty());
    }

    #[test]
    fn too_many_rows_is_none() {
        let v = vars(json!({"a": ["1", "2", "3"], "b": ["1", "2", "3"]}));
        assert!(cartesian(&v, EmptyList::Keep, 8).is_none());
        assert_eq!(cartesian(&v, EmptyList::Keep, 9).unwrap().len(), 9);
    }
}
