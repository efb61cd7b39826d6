//! JavaScript's number formatting and equality, as AgentV's texts and
//! comparisons use them: `String(x)`, `x.toFixed(n)`, `typeof`, and
//! AgentV's `deepEqual` and `parseJsonFromText`.

use evalhost_plugin_sdk::Value;

/// `String(x)` for a JavaScript number.
pub fn num(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let abs = x.abs();
    if (1e-6..1e21).contains(&abs) {
        return format!("{x}");
    }
    // Exponent form: Rust writes `1.5e-7` and `1e21`; JavaScript `1e+21`.
    let s = format!("{x:e}");
    match s.split_once('e') {
        Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
        _ => s,
    }
}

/// `x.toFixed(digits)`: the exact binary value rounded to `digits`
/// decimals, ties away from zero.
pub fn to_fixed(x: f64, digits: usize) -> String {
    if !x.is_finite() {
        return num(x);
    }
    if x.abs() >= 1e21 {
        return num(x);
    }
    let negative = x < 0.0;
    // Enough digits to see past any tie: the exact expansion of an f64 in
    // this range differs from a decimal tie by far more than 1e-40.
    let exact = format!("{:.*}", digits + 40, x.abs());
    let (int_part, frac_part) = exact.split_once('.').unwrap_or((&exact, ""));
    let mut kept: Vec<u8> = int_part
        .bytes()
        .chain(frac_part.bytes().take(digits))
        .collect();
    let round_up = frac_part.as_bytes().get(digits).is_some_and(|d| *d >= b'5');
    if round_up {
        let mut i = kept.len();
        loop {
            if i == 0 {
                kept.insert(0, b'1');
                break;
            }
            i -= 1;
            if kept[i] == b'9' {
                kept[i] = b'0';
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    let int_len = kept.len() - digits;
    let mut out = String::from_utf8(kept[..int_len].to_vec()).expect("ascii digits");
    if digits > 0 {
        out.push('.');
        out.push_str(std::str::from_utf8(&kept[int_len..]).expect("ascii digits"));
    }
    if negative {
        out.insert(0, '-');
    }
    out
}

/// JavaScript's `typeof` of a JSON value.
pub fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Null | Value::Array(_) | Value::Object(_) => "object",
    }
}

/// AgentV's `deepEqual`: numbers by value (`1` equals `1.0`), arrays in
/// order, objects by keys regardless of order.
pub fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| deep_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        _ => a == b,
    }
}

/// AgentV's `parseJsonFromText`: code fences removed, the span from the
/// first `{` to the last `}` (else the whole text), `"passed"` values
/// repaired to booleans, then parsed.
pub fn parse_json_from_text(text: &str) -> Option<Value> {
    let mut cleaned = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("```json") {
            rest = after.strip_prefix('\n').unwrap_or(after);
        } else if let Some(after) = rest.strip_prefix("```") {
            rest = after;
        } else {
            let c = rest.chars().next().expect("non-empty");
            cleaned.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    let cleaned = cleaned.trim();
    let blob = match (cleaned.find('{'), cleaned.rfind('}')) {
        (Some(start), Some(end)) if end > start => &cleaned[start..=end],
        _ => cleaned,
    };
    serde_json::from_str(&repair_passed(blob)).ok()
}

/// `"passed": "yes"` / `"passed": True` → `"passed": false` / `true`, as
/// AgentV's `repairSchemaNearBooleanFields` does (case-insensitive key).
fn repair_passed(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < bytes.len() {
        let at_key = bytes.len() - i >= 8 && text[i..i + 8].eq_ignore_ascii_case("\"passed\"");
        if !at_key {
            let c = text[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        let mut j = i + 8;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if j >= bytes.len() || bytes[j] != b':' {
            out.push_str(&text[i..j]);
            i = j;
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        let prefix_end = j;
        let value_end = if bytes.get(j) == Some(&b'"') {
            text[j + 1..]
                .find('"')
                .filter(|n| *n > 0)
                .map(|n| j + 1 + n + 1)
        } else if bytes
            .get(j)
            .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
        {
            let mut k = j + 1;
            while k < bytes.len()
                && (bytes[k].is_ascii_alphanumeric() || bytes[k] == b'_' || bytes[k] == b'-')
            {
                k += 1;
            }
            Some(k)
        } else {
            None
        };
        match value_end {
            Some(end) => {
                let value = text[prefix_end..end].trim_matches('"');
                out.push_str(&text[i..prefix_end]);
                out.push_str(if value.trim().eq_ignore_ascii_case("true") {
                    "true"
                } else {
                    "false"
                });
                i = end;
            }
            None => {
                out.push_str(&text[i..prefix_end]);
                i = prefix_end;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalhost_plugin_sdk::json;

    #[test]
    fn numbers_print_as_javascript_does() {
        assert_eq!(num(1000.0), "1000");
        assert_eq!(num(3.5), "3.5");
        assert_eq!(num(-0.0), "0");
        assert_eq!(num(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(num(1e21), "1e+21");
        assert_eq!(num(1e-7), "1e-7");
        assert_eq!(num(1.5e-7), "1.5e-7");
        assert_eq!(num(0.000001), "0.000001");
    }

    #[test]
    fn to_fixed_rounds_ties_away_from_zero() {
        assert_eq!(to_fixed(1.03125, 4), "1.0313");
        assert_eq!(to_fixed(0.125, 2), "0.13");
        assert_eq!(to_fixed(1.005, 2), "1.00"); // 1.00499999999999989...
        assert_eq!(to_fixed(0.01234, 4), "0.0123");
        assert_eq!(to_fixed(0.999, 2), "1.00");
        assert_eq!(to_fixed(9.995, 2), "9.99"); // 9.99499999999999957...
        assert_eq!(to_fixed(0.0, 2), "0.00");
        assert_eq!(to_fixed(-0.0, 2), "0.00");
        assert_eq!(to_fixed(-0.001, 2), "-0.00");
        assert_eq!(to_fixed(2.0 / 3.0, 2), "0.67");
        assert_eq!(to_fixed(12.0, 0), "12");
        assert_eq!(to_fixed(0.5, 0), "1");
    }

    #[test]
    fn deep_equal_is_agentv_s() {
        assert!(deep_equal(
            &json!({"n": 1, "a": [1, {"b": null}]}),
            &json!({"a": [1.0, {"b": null}], "n": 1.0})
        ));
        assert!(!deep_equal(&json!([1, 2]), &json!([2, 1])));
        assert!(!deep_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!deep_equal(&json!(null), &json!({})));
        assert!(!deep_equal(&json!("1"), &json!(1)));
    }

    #[test]
    fn json_is_found_in_text_as_agentv_finds_it() {
        assert_eq!(
            parse_json_from_text("prefix {\"a\":1} suffix"),
            Some(json!({"a": 1}))
        );
        assert_eq!(
            parse_json_from_text("```json\n{\"a\": 2}\n```"),
            Some(json!({"a": 2}))
        );
        assert_eq!(parse_json_from_text("{\"a\":1} and {\"b\":2}"), None);
        assert_eq!(parse_json_from_text("[{\"a\":1}]"), Some(json!({"a": 1})));
        assert_eq!(parse_json_from_text("42"), Some(json!(42)));
        assert_eq!(parse_json_from_text("not json"), None);
        assert_eq!(
            parse_json_from_text("{\"passed\": \"yes\", \"PASSED\": True, \"x\": 1}"),
            Some(json!({"passed": false, "PASSED": true, "x": 1}))
        );
    }
}
