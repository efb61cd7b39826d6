//! JavaScript's semantics as ajv's generated code relies on them:
//! `!== undefined`, deep equality, JSON pointers, regular expressions,
//! `parseInt` (key order is [`crate::js::js_keys`]).

use evalhost_plugin_sdk::Value;
use serde_json::Map;

use crate::js;

/// Names every JavaScript object has through its prototype:
/// `data[name] !== undefined` holds for them.
const PROTO: &[&str] = &[
    "constructor",
    "__defineGetter__",
    "__defineSetter__",
    "hasOwnProperty",
    "__lookupGetter__",
    "__lookupSetter__",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toString",
    "valueOf",
    "__proto__",
    "toLocaleString",
];

pub(super) fn has_prop(data: &Map<String, Value>, prop: &str) -> bool {
    data.contains_key(prop) || PROTO.contains(&prop)
}

pub(super) fn as_num(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// `fast-deep-equal`.
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

/// `escapeJsonPointer`.
pub(super) fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// `encodeURIComponent(escapeJsonPointer(s))`.
pub(super) fn escape_fragment(s: &str) -> String {
    let mut out = String::new();
    for b in escape_pointer(s).bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `decodeURIComponent`, or `None` where it throws.
pub(super) fn decode_uri_component(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A JavaScript regular expression as ajv builds it for `pattern` and
/// `patternProperties` (`new RegExp(p, "u")`).
pub(super) fn regex_u(pattern: &str) -> Result<regress::Regex, String> {
    regress::Regex::with_flags(pattern, "u")
        .map_err(|e| format!("Invalid regular expression: /{pattern}/u: {e}"))
}

pub(super) fn regex_plain(pattern: &str) -> Result<regress::Regex, String> {
    regress::Regex::with_flags(pattern, "")
        .map_err(|e| format!("Invalid regular expression: /{pattern}/: {e}"))
}

/// JavaScript's `parseInt(String(x))`, `None` for NaN.
pub(super) fn js_parse_int(x: f64) -> Option<f64> {
    let s = js::number(x);
    let (sign, digits) = match s.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, s.as_str()),
    };
    let d: String = digits.chars().take_while(char::is_ascii_digit).collect();
    if d.is_empty() {
        return None;
    }
    d.parse::<f64>().ok().map(|v| sign * v)
}
