//! The JSON Schema of the suite and case formats, made from the key tables
//! (the same tables the unknown-key warnings read).

use super::*;

pub(super) fn properties(fields: &[Field]) -> Value {
    let mut props = Map::new();
    for f in fields {
        let mut schema = (f.schema)();
        if let Value::Object(o) = &mut schema {
            let doc = match f.status {
                Status::Supported => f.doc.to_owned(),
                Status::Deprecated(instead) => format!("{} (deprecated: use `{instead}`)", f.doc),
                Status::Unsupported(why) => format!("{} (ignored by evalhost: {why})", f.doc),
            };
            o.insert("description".into(), Value::String(doc));
            if matches!(f.status, Status::Deprecated(_)) {
                o.insert("deprecated".into(), Value::Bool(true));
            }
        }
        props.insert(f.name.into(), schema);
    }
    Value::Object(props)
}

/// The JSON Schema of one assertion type's config, as a plugin describes it.
#[derive(Debug, Clone)]
pub struct TypeSchema {
    /// Kebab-case type name.
    pub name: String,
    /// One line.
    pub description: String,
    /// The config schema.
    pub config: Value,
}

pub(super) fn defs(types: &[TypeSchema]) -> Value {
    let type_names: Vec<Value> = types
        .iter()
        .flat_map(|t| {
            let snake = t.name.replace('-', "_");
            let mut v = vec![t.name.clone(), format!("not-{}", t.name)];
            if snake != t.name {
                v.push(snake.clone());
                v.push(format!("not_{snake}"));
            }
            v
        })
        .map(Value::String)
        .collect();
    let per_type: Vec<Value> = types
        .iter()
        .map(|t| {
            let snake = t.name.replace('-', "_");
            let names = json!([t.name, format!("not-{}", t.name), snake, format!("not_{snake}")]);
            let mut then = t.config.clone();
            if let Value::Object(o) = &mut then {
                o.remove("type");
                // A closed type stays closed for editors: its own keys and
                // the host's, nothing else (evalhost warns; AgentV ignores).
                let closed = o.remove("additionalProperties") == Some(Value::Bool(false));
                if closed {
                    let props = o
                        .entry("properties")
                        .or_insert_with(|| json!({}));
                    if let Value::Object(props) = props {
                        for host in self::names(ASSERTION_HOST) {
                            props.entry(host).or_insert(Value::Bool(true));
                        }
                    }
                    o.insert("additionalProperties".into(), Value::Bool(false));
                }
            }
            json!({"if": {"properties": {"type": {"enum": names}}, "required": ["type"]}, "then": then})
        })
        .collect();
    let mut assertion_props = properties(ASSERTION_HOST);
    assertion_props["type"] = json!({
        "description": "Assertion type; `not-` prefix negates; `_` and `-` are the same",
        "anyOf": [{"enum": type_names}, {"type": "string"}],
    });
    json!({
        "message": message_schema(),
        "case": {
            "type": "object",
            "description": "A test case",
            "properties": properties(CASE),
            "additionalProperties": false,
        },
        "execution": {"type": "object", "properties": properties(EXECUTION), "additionalProperties": false},
        "limits": {"type": "object", "properties": properties(LIMITS), "additionalProperties": false},
        // if/then/else rather than anyOf, so that a validator reports the
        // key that is wrong instead of "matches none of the branches".
        "assertion": {
            "type": ["string", "object"],
            "if": {"type": "string"},
            "then": {"description": "A rubric criterion for an LLM judge"},
            "else": {
                "if": {"required": ["include"]},
                "then": {"properties": {"include": {"type": "string"}}, "additionalProperties": false,
                         "description": "Assertions from a template file"},
                "else": {"required": ["type"], "properties": assertion_props, "allOf": per_type},
            },
        },
    })
}

/// The JSON Schema of a suite file (`EVAL.yaml`).
pub fn suite_schema(types: &[TypeSchema]) -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://evalhost.invalid/schema/suite.schema.json",
        "title": "evalhost suite (AgentV EVAL.yaml)",
        "type": "object",
        "required": ["tests"],
        "properties": properties(SUITE),
        "additionalProperties": false,
        "$defs": defs(types),
    })
}

/// The JSON Schema of a `case.yaml`.
pub fn case_schema(types: &[TypeSchema]) -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://evalhost.invalid/schema/case.schema.json",
        "title": "evalhost test case (case.yaml)",
        "$ref": "#/$defs/case",
        "$defs": defs(types),
    })
}
