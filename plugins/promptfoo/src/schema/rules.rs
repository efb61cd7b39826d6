//! The keywords ajv knows, its rule groups in their order, and the type
//! checks of a schema (`type`, `nullable`) and of data.

use evalhost_plugin_sdk::Value;
use serde_json::Map;

use crate::js::js_keys;

/// Every keyword ajv's draft-07 instance knows (`RULES.keywords`, with
/// ajv-formats' limit keywords); any other is an unknown keyword in strict
/// mode.
const KNOWN: &[&str] = &[
    "$async",
    "$schema",
    "$id",
    "$defs",
    "$vocabulary",
    "$comment",
    "definitions",
    "id",
    "$ref",
    "maximum",
    "minimum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "multipleOf",
    "maxLength",
    "minLength",
    "pattern",
    "maxProperties",
    "minProperties",
    "required",
    "maxItems",
    "minItems",
    "uniqueItems",
    "type",
    "nullable",
    "const",
    "enum",
    "not",
    "anyOf",
    "oneOf",
    "allOf",
    "if",
    "then",
    "else",
    "propertyNames",
    "additionalProperties",
    "dependencies",
    "properties",
    "patternProperties",
    "additionalItems",
    "items",
    "contains",
    "format",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "formatMaximum",
    "formatMinimum",
    "formatExclusiveMaximum",
    "formatExclusiveMinimum",
];

pub(super) const FORMAT_LIMITS: &[&str] = &[
    "formatMaximum",
    "formatMinimum",
    "formatExclusiveMaximum",
    "formatExclusiveMinimum",
];

/// The rule groups in ajv's order (`RULES.rules`): the keywords of each,
/// in the order their code runs.
const UNTYPED: &[&str] = &[
    "$comment", "id", "$ref", "type", "nullable", "const", "enum", "not", "anyOf", "oneOf",
    "allOf", "if", "then", "else",
];
const NUMBER: &[&str] = &[
    "maximum",
    "minimum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "multipleOf",
    "format",
];
const STRING: &[&str] = &[
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "formatMaximum",
    "formatMinimum",
    "formatExclusiveMaximum",
    "formatExclusiveMinimum",
];
const ARRAY: &[&str] = &[
    "maxItems",
    "minItems",
    "additionalItems",
    "items",
    "contains",
    "uniqueItems",
];
const OBJECT: &[&str] = &[
    "maxProperties",
    "minProperties",
    "required",
    "propertyNames",
    "additionalProperties",
    "dependencies",
    "properties",
    "patternProperties",
];

/// `RULES.all`: the keywords that are rules (the others are annotations).
pub(super) fn is_rule(k: &str) -> bool {
    UNTYPED.contains(&k)
        || NUMBER.contains(&k)
        || STRING.contains(&k)
        || ARRAY.contains(&k)
        || OBJECT.contains(&k)
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Group {
    Untyped,
    Number,
    String,
    Array,
    Object,
}

impl Group {
    pub(super) const ALL: [Group; 5] = [
        Group::Untyped,
        Group::Number,
        Group::String,
        Group::Array,
        Group::Object,
    ];
    pub(super) fn keywords(self) -> &'static [&'static str] {
        match self {
            Group::Untyped => UNTYPED,
            Group::Number => NUMBER,
            Group::String => STRING,
            Group::Array => ARRAY,
            Group::Object => OBJECT,
        }
    }
    pub(super) fn type_name(self) -> Option<&'static str> {
        match self {
            Group::Untyped => None,
            Group::Number => Some("number"),
            Group::String => Some("string"),
            Group::Array => Some("array"),
            Group::Object => Some("object"),
        }
    }
}

pub(super) fn group_used(schema: &Map<String, Value>, g: Group) -> bool {
    g.keywords().iter().any(|k| schema.contains_key(*k))
}

/// `checkUnknownRules` in strict mode.
pub(super) fn check_unknown(m: &Map<String, Value>) -> Result<(), String> {
    for k in js_keys(m) {
        if !KNOWN.contains(&k.as_str()) {
            return Err(format!("strict mode: unknown keyword: \"{k}\""));
        }
    }
    Ok(())
}

/// `getSchemaTypes`: `type` as a list, with `nullable`.
pub(super) fn schema_types(m: &Map<String, Value>) -> Result<Vec<&str>, String> {
    let mut types: Vec<&str> = match m.get("type") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        Some(_) => Vec::new(),
    };
    const JSON_TYPES: &[&str] = &[
        "string", "number", "integer", "boolean", "null", "object", "array",
    ];
    if !types.iter().all(|t| JSON_TYPES.contains(t)) {
        return Err(format!(
            "type must be JSONType or JSONType[]: {}",
            types.join(",")
        ));
    }
    let nullable = m.get("nullable");
    if types.contains(&"null") {
        if nullable == Some(&Value::Bool(false)) {
            return Err("type: null contradicts nullable: false".into());
        }
    } else {
        if types.is_empty() && nullable.is_some() {
            return Err("\"nullable\" cannot be used without \"type\"".into());
        }
        if nullable == Some(&Value::Bool(true)) {
            types.push("null");
        }
    }
    Ok(types)
}

/// `checkDataType` (strict numbers: finite).
pub(super) fn is_type(data: &Value, t: &str) -> bool {
    match t {
        "null" => data.is_null(),
        "array" => data.is_array(),
        "object" => data.is_object(),
        "string" => data.is_string(),
        "boolean" => data.is_boolean(),
        "number" => data.as_f64().is_some_and(f64::is_finite),
        "integer" => data
            .as_f64()
            .is_some_and(|x| x.is_finite() && x.fract() == 0.0),
        _ => false,
    }
}
