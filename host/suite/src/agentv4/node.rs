//! Naming a YAML value's kind in messages.

use super::*;

/// A JSON type's name, for messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing (null)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

pub(super) fn show(value: &Value) -> String {
    match value {
        Value::String(s) => format!("string {s:?}"),
        Value::Number(n) => format!("number {n}"),
        Value::Bool(b) => format!("boolean {b}"),
        other => kind(other).to_owned(),
    }
}
