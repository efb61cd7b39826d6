//! JSON Schema validation as promptfoo 0.121 runs it: `getAjv()` is ajv
//! 8.20 (`new Ajv({strictSchema: true})`, draft-07, `allErrors: false`)
//! with ajv-formats 3.0.1's full formats. This is a port of what ajv's
//! generated code does, not a general validator: the keyword order of its
//! rule groups, the first error only (and what the composite keywords
//! collect: `anyOf`, `oneOf`, `contains`, `propertyNames`, `if`), its
//! messages and `errorsText`, `$ref` with sibling keywords evaluated, JS
//! number semantics (`multipleOf` through `parseInt`), `data[prop] !==
//! undefined` for `required`, patterns with the `u` flag (through
//! `regress`, a JavaScript regex engine), and what `compile` throws: the
//! schema checked against the draft-07 meta-schema ("schema is invalid:
//! …"), strict mode (unknown keywords, unknown formats, `if` without
//! `then`/`else`, …), unresolvable `$ref`s.
//!
//! Not modelled: `$id`-relative references other than to the root's own
//! `$id` and `#name` anchors, the one `getAjv()` instance's memory across
//! calls (a second compile of a different schema with the same `$id`
//! throws in promptfoo), and ajv-formats' `formatMaximum`/`formatMinimum`
//! keywords (refused).
//!
//! What `compile` throws is in `compile` (and `refs`, for `$ref`); what
//! validation does is in `validate`, which hands each keyword to its
//! group: `combinators` (the untyped group), `scalars` (number and
//! string), `arrays`, `objects`, `formats`. `rules` holds ajv's keyword
//! tables and type checks, `values` the JavaScript semantics they rely on.

mod arrays;
mod combinators;
mod compile;
mod formats;
mod objects;
mod refs;
mod rules;
mod scalars;
mod validate;
mod values;

use std::sync::OnceLock;

use evalhost_plugin_sdk::Value;

use crate::js;
pub use crate::js::js_keys;
use refs::{META_IDS, normalize_id};
pub use values::deep_equal;
use values::escape_fragment;

/// One of ajv's error objects.
#[derive(Debug, Clone, PartialEq)]
pub struct AjvError {
    pub instance_path: String,
    pub schema_path: String,
    pub keyword: String,
    pub params: Value,
    pub message: String,
    pub property_name: Option<String>,
}

/// `ajv.errorsText(errors)`: `data<path> <message>`, joined with ", ".
pub fn errors_text(errors: &[AjvError]) -> String {
    if errors.is_empty() {
        return "No errors".into();
    }
    errors
        .iter()
        .map(|e| format!("data{} {}", e.instance_path, e.message))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `JSON.stringify(errors)`.
pub fn errors_json(errors: &[AjvError]) -> String {
    let items: Vec<String> = errors
        .iter()
        .map(|e| {
            let mut s = format!(
                "{{\"instancePath\":{},\"schemaPath\":{},\"keyword\":{},\"params\":{},\"message\":{}",
                js::stringify(&Value::String(e.instance_path.clone())),
                js::stringify(&Value::String(e.schema_path.clone())),
                js::stringify(&Value::String(e.keyword.clone())),
                js::stringify(&e.params),
                js::stringify(&Value::String(e.message.clone())),
            );
            if let Some(p) = &e.property_name {
                s.push_str(&format!(
                    ",\"propertyName\":{}",
                    js::stringify(&Value::String(p.clone()))
                ));
            }
            s.push('}');
            s
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// The draft-07 meta-schema ajv validates every schema against.
fn meta() -> &'static Value {
    static META: OnceLock<Value> = OnceLock::new();
    META.get_or_init(|| {
        serde_json::from_str(include_str!("../draft-07.json")).expect("the meta-schema parses")
    })
}

/// A schema to compile: the user's, or the meta-schema.
#[derive(Clone, Copy)]
struct Doc<'s> {
    root: &'s Value,
    /// The root's `$id`, normalized (`""` when it has none).
    base: &'s str,
}

/// A schema position: the subschema, its document, and ajv's
/// `errSchemaPath`.
#[derive(Clone)]
struct Node<'s> {
    schema: &'s Value,
    doc: Doc<'s>,
    path: String,
}

impl<'s> Node<'s> {
    fn child(&self, schema: &'s Value, keyword: &str, prop: Option<&str>) -> Node<'s> {
        let mut path = format!("{}/{keyword}", self.path);
        if let Some(p) = prop {
            path.push('/');
            path.push_str(&escape_fragment(p));
        }
        Node {
            schema,
            doc: self.doc,
            path,
        }
    }
}

/// Where a validation runs: inside a composite keyword (errors collected)
/// or not (the first error ends the function).
#[derive(Clone, Copy)]
struct Cx<'a> {
    composite: bool,
    property_name: Option<&'a str>,
}

/// A failed subschema: the errors ajv holds, and whether the generated
/// function returned there (an error reported outside a composite
/// keyword) or went on (a failed `$ref` call).
struct Fail {
    errors: Vec<AjvError>,
    returned: bool,
}

type Check = Result<(), Fail>;

/// A compiled schema, ready to validate.
pub struct Validator<'s> {
    doc: Doc<'s>,
}

/// `ajv.compile(schema)`: what it throws, or the validator.
pub fn compile(schema: &Value) -> Result<Validator<'_>, String> {
    let (base, schema_field) = match schema {
        Value::Object(m) => (
            m.get("$id").and_then(Value::as_str).map(normalize_id),
            m.get("$schema"),
        ),
        Value::Bool(_) => (None, None),
        Value::Array(_) => (None, None),
        Value::Null => return Err("Cannot read properties of null (reading '$id')".into()),
        _ => return Err("schema must be object or boolean".into()),
    };
    // validateSchema: against the meta-schema `$schema` names.
    if !schema.is_boolean() {
        match schema_field {
            None => {}
            Some(Value::String(s)) if !META_IDS.contains(&normalize_id(s)) => {
                return Err(format!("no schema with key or ref \"{s}\""));
            }
            Some(Value::String(_)) => {}
            Some(_) => return Err("$schema must be a string".into()),
        }
        let meta_doc = Doc {
            root: meta(),
            base: META_IDS[0],
        };
        let mv = Validator { doc: meta_doc };
        if let Err(errors) = mv.validate(schema) {
            return Err(format!("schema is invalid: {}", errors_text(&errors)));
        }
    }
    let v = Validator {
        doc: Doc {
            root: schema,
            base: base.unwrap_or(""),
        },
    };
    let root = Node {
        schema,
        doc: v.doc,
        path: "#".into(),
    };
    let mut compiled = Vec::new();
    v.check(&root, &mut compiled)?;
    Ok(v)
}

impl<'s> Validator<'s> {
    /// `validate(data)`: `Ok` or ajv's `validate.errors`.
    pub fn validate(&self, data: &Value) -> Result<(), Vec<AjvError>> {
        let root = Node {
            schema: self.doc.root,
            doc: self.doc,
            path: "#".into(),
        };
        let cx = Cx {
            composite: false,
            property_name: None,
        };
        self.node(&root, data, "", cx).map_err(|f| f.errors)
    }
}

#[cfg(test)]
mod tests;
