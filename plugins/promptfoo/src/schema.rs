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

use std::sync::OnceLock;

use evalhost_plugin_sdk::Value;
use serde_json::{Map, json};

use crate::js;

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
        serde_json::from_str(include_str!("draft-07.json")).expect("the meta-schema parses")
    })
}

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

const FORMAT_LIMITS: &[&str] = &[
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
fn is_rule(k: &str) -> bool {
    UNTYPED.contains(&k)
        || NUMBER.contains(&k)
        || STRING.contains(&k)
        || ARRAY.contains(&k)
        || OBJECT.contains(&k)
}

#[derive(Clone, Copy, PartialEq)]
enum Group {
    Untyped,
    Number,
    String,
    Array,
    Object,
}

impl Group {
    const ALL: [Group; 5] = [
        Group::Untyped,
        Group::Number,
        Group::String,
        Group::Array,
        Group::Object,
    ];
    fn keywords(self) -> &'static [&'static str] {
        match self {
            Group::Untyped => UNTYPED,
            Group::Number => NUMBER,
            Group::String => STRING,
            Group::Array => ARRAY,
            Group::Object => OBJECT,
        }
    }
    fn type_name(self) -> Option<&'static str> {
        match self {
            Group::Untyped => None,
            Group::Number => Some("number"),
            Group::String => Some("string"),
            Group::Array => Some("array"),
            Group::Object => Some("object"),
        }
    }
}

fn group_used(schema: &Map<String, Value>, g: Group) -> bool {
    g.keywords().iter().any(|k| schema.contains_key(*k))
}

/// The keys of an object in JavaScript's order: array indices ascending,
/// then the others as inserted.
pub fn js_keys(m: &Map<String, Value>) -> Vec<&String> {
    let index = |k: &str| -> Option<u32> {
        if k.is_empty()
            || (k.len() > 1 && k.starts_with('0'))
            || !k.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        k.parse::<u64>()
            .ok()
            .filter(|n| *n < 4_294_967_295)
            .map(|n| n as u32)
    };
    let mut ints: Vec<(u32, &String)> = m.keys().filter_map(|k| index(k).map(|n| (n, k))).collect();
    ints.sort_by_key(|(n, _)| *n);
    let mut out: Vec<&String> = ints.into_iter().map(|(_, k)| k).collect();
    out.extend(m.keys().filter(|k| index(k).is_none()));
    out
}

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

fn has_prop(data: &Map<String, Value>, prop: &str) -> bool {
    data.contains_key(prop) || PROTO.contains(&prop)
}

fn as_num(v: &Value) -> Option<f64> {
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
fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// `encodeURIComponent(escapeJsonPointer(s))`.
fn escape_fragment(s: &str) -> String {
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
fn decode_uri_component(s: &str) -> Option<String> {
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
fn regex_u(pattern: &str) -> Result<regress::Regex, String> {
    regress::Regex::with_flags(pattern, "u")
        .map_err(|e| format!("Invalid regular expression: /{pattern}/u: {e}"))
}

fn regex_plain(pattern: &str) -> Result<regress::Regex, String> {
    regress::Regex::with_flags(pattern, "")
        .map_err(|e| format!("Invalid regular expression: /{pattern}/: {e}"))
}

/// JavaScript's `parseInt(String(x))`, `None` for NaN.
fn js_parse_int(x: f64) -> Option<f64> {
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

fn normalize_id(id: &str) -> &str {
    id.strip_suffix("#/")
        .or_else(|| id.strip_suffix('#'))
        .unwrap_or(id)
}

const META_IDS: &[&str] = &[
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/schema",
];

/// `hasRef`: a `$ref` key anywhere inside.
fn has_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| {
            matches!(
                k.as_str(),
                "$ref" | "$recursiveRef" | "$recursiveAnchor" | "$dynamicRef" | "$dynamicAnchor"
            ) || has_ref(v)
        }),
        Value::Array(items) => items.iter().any(has_ref),
        _ => false,
    }
}

/// A `$ref` resolved: the target, and whether ajv inlines it (keeping the
/// caller's context) or calls it as its own function.
enum Resolved<'s> {
    Inline(Node<'s>),
    Call(Node<'s>),
}

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

    fn resolve(&self, from: &Node<'s>, reference: &str) -> Result<Resolved<'s>, String> {
        let missing = || {
            format!(
                "can't resolve reference {reference} from id {}#",
                from.doc.base
            )
        };
        let (uri, fragment) = match reference.split_once('#') {
            Some((u, f)) => (u, Some(f)),
            None => (reference, None),
        };
        let doc = if uri.is_empty() || uri == from.doc.base {
            from.doc
        } else if META_IDS.contains(&uri) {
            Doc {
                root: meta(),
                base: META_IDS[0],
            }
        } else {
            return Err(missing());
        };
        let fragment = fragment.unwrap_or("");
        if fragment.is_empty() || fragment == "/" {
            // The root: always a function call.
            return Ok(Resolved::Call(Node {
                schema: doc.root,
                doc,
                path: "#".into(),
            }));
        }
        let target = if let Some(pointer) = fragment.strip_prefix('/') {
            let mut cur = doc.root;
            for part in pointer.split('/') {
                let part = decode_uri_component(part)
                    .ok_or_else(missing)?
                    .replace("~1", "/")
                    .replace("~0", "~");
                cur = match cur {
                    Value::Object(m) => m.get(&part).ok_or_else(missing)?,
                    Value::Array(items) => part
                        .parse::<usize>()
                        .ok()
                        .and_then(|i| items.get(i))
                        .ok_or_else(missing)?,
                    _ => return Err(missing()),
                };
            }
            cur
        } else {
            find_anchor(doc.root, &format!("#{fragment}")).ok_or_else(missing)?
        };
        if !(target.is_object() || target.is_boolean()) {
            return Err(missing());
        }
        if !has_ref(target) {
            Ok(Resolved::Inline(Node {
                schema: target,
                doc,
                path: reference.to_owned(),
            }))
        } else {
            Ok(Resolved::Call(Node {
                schema: target,
                doc,
                path: "#".into(),
            }))
        }
    }

    // ---- compile: what ajv's code generation throws ----

    /// `alwaysValidSchema`, with its strict check of unknown keywords.
    fn always_valid(&self, schema: &Value) -> Result<bool, String> {
        match schema {
            Value::Bool(b) => Ok(*b),
            Value::Object(m) => {
                if m.is_empty() {
                    return Ok(true);
                }
                check_unknown(m)?;
                Ok(!m.keys().any(|k| is_rule(k)))
            }
            _ => Ok(false),
        }
    }

    fn check_sub(&self, node: &Node<'s>, compiled: &mut Vec<*const Value>) -> Result<(), String> {
        self.check(node, compiled)
    }

    /// The checks ajv's code generation makes on one schema and what it
    /// reaches.
    fn check(&self, node: &Node<'s>, compiled: &mut Vec<*const Value>) -> Result<(), String> {
        let Value::Object(m) = node.schema else {
            return Ok(());
        };
        check_unknown(m)?;
        if !m.keys().any(|k| is_rule(k)) {
            return Ok(());
        }
        schema_types(m)?;
        if m.contains_key("$ref") && !m.keys().any(|k| k != "$ref" && is_rule(k)) {
            return self.check_ref(node, m, compiled);
        }
        for g in Group::ALL {
            if !group_used(m, g) {
                continue;
            }
            for kw in g.keywords() {
                let Some(sch) = m.get(*kw) else { continue };
                self.check_keyword(node, m, kw, sch, g, compiled)?;
            }
        }
        Ok(())
    }

    fn check_ref(
        &self,
        node: &Node<'s>,
        m: &'s Map<String, Value>,
        compiled: &mut Vec<*const Value>,
    ) -> Result<(), String> {
        let Some(Value::String(r)) = m.get("$ref") else {
            return Err("$ref value must be \"string\"".into());
        };
        match self.resolve(node, r)? {
            Resolved::Inline(target) => self.check_sub(&target, compiled),
            Resolved::Call(target) => {
                let key = target.schema as *const Value;
                if compiled.contains(&key) || std::ptr::eq(target.schema, self.doc.root) {
                    return Ok(());
                }
                compiled.push(key);
                if std::ptr::eq(target.doc.root, meta()) {
                    return Ok(());
                }
                self.check_sub(&target, compiled)
            }
        }
    }

    #[allow(clippy::too_many_lines)]
    fn check_keyword(
        &self,
        node: &Node<'s>,
        m: &'s Map<String, Value>,
        kw: &str,
        sch: &'s Value,
        group: Group,
        compiled: &mut Vec<*const Value>,
    ) -> Result<(), String> {
        match kw {
            "id" => Err("NOT SUPPORTED: keyword \"id\", use \"$id\" for schema ID".into()),
            "$ref" => self.check_ref(node, m, compiled),
            "enum" => match sch {
                Value::Array(a) if a.is_empty() => Err("enum must have non-empty array".into()),
                _ => Ok(()),
            },
            "not" => {
                if !self.always_valid(sch)? {
                    self.check_sub(&node.child(sch, "not", None), compiled)?;
                }
                Ok(())
            }
            "anyOf" | "oneOf" | "allOf" => {
                let Value::Array(items) = sch else {
                    return Ok(());
                };
                if kw == "anyOf" {
                    for s in items {
                        if self.always_valid(s)? {
                            return Ok(());
                        }
                    }
                }
                for (i, s) in items.iter().enumerate() {
                    if !self.always_valid(s)? {
                        self.check_sub(&node.child(s, kw, Some(&i.to_string())), compiled)?;
                    }
                }
                Ok(())
            }
            "if" => {
                if !m.contains_key("then") && !m.contains_key("else") {
                    return Err(
                        "strict mode: \"if\" without \"then\" and \"else\" is ignored".into(),
                    );
                }
                let has = |k: &str| -> Result<Option<&'s Value>, String> {
                    match m.get(k) {
                        Some(s) if !self.always_valid(s)? => Ok(Some(s)),
                        _ => Ok(None),
                    }
                };
                let then = has("then")?;
                let els = has("else")?;
                if then.is_none() && els.is_none() {
                    return Ok(());
                }
                self.check_sub(&node.child(sch, "if", None), compiled)?;
                if let Some(t) = then {
                    self.check_sub(&node.child(t, "then", None), compiled)?;
                }
                if let Some(e) = els {
                    self.check_sub(&node.child(e, "else", None), compiled)?;
                }
                Ok(())
            }
            "then" | "else" => {
                if m.contains_key("if") {
                    Ok(())
                } else {
                    Err(format!("strict mode: \"{kw}\" without \"if\" is ignored"))
                }
            }
            "format" => {
                let Value::String(f) = sch else { return Ok(()) };
                if format_kind(f).is_none() {
                    return Err(format!(
                        "unknown format \"{f}\" ignored in schema at path \"{}\"",
                        node.path
                    ));
                }
                Ok(())
            }
            k if FORMAT_LIMITS.contains(&k) => Err(format!(
                "`{k}` (ajv-formats' format limits) is not supported by evalhost"
            )),
            "pattern" => {
                if group == Group::String
                    && let Value::String(p) = sch
                {
                    regex_u(p)?;
                }
                Ok(())
            }
            "additionalItems" => {
                let Some(Value::Array(_)) = m.get("items") else {
                    return Err("strict mode: \"additionalItems\" is ignored when \"items\" is not an array of schemas".into());
                };
                if sch.is_object() && !self.always_valid(sch)? {
                    self.check_sub(&node.child(sch, kw, None), compiled)?;
                }
                Ok(())
            }
            "items" => {
                match sch {
                    Value::Array(items) => {
                        for (i, s) in items.iter().enumerate() {
                            if !self.always_valid(s)? {
                                self.check_sub(
                                    &node.child(s, "items", Some(&i.to_string())),
                                    compiled,
                                )?;
                            }
                        }
                    }
                    other => {
                        if !self.always_valid(other)? {
                            self.check_sub(&node.child(other, "items", None), compiled)?;
                        }
                    }
                }
                Ok(())
            }
            "contains" | "propertyNames" => {
                if !self.always_valid(sch)? {
                    self.check_sub(&node.child(sch, kw, None), compiled)?;
                }
                Ok(())
            }
            "uniqueItems" => {
                if let Some(Value::Object(items)) = m.get("items") {
                    schema_types(items)?;
                }
                Ok(())
            }
            "additionalProperties" => {
                if self.always_valid(sch)? {
                    return Ok(());
                }
                if let Some(Value::Object(pp)) = m.get("patternProperties") {
                    for p in js_keys(pp) {
                        if p != "__proto__" {
                            regex_u(p)?;
                        }
                    }
                }
                if sch.is_object() {
                    self.check_sub(&node.child(sch, kw, None), compiled)?;
                }
                Ok(())
            }
            "dependencies" => {
                let Value::Object(deps) = sch else {
                    return Ok(());
                };
                for k in js_keys(deps) {
                    let d = &deps[k];
                    if k != "__proto__" && !d.is_array() && !self.always_valid(d)? {
                        self.check_sub(&node.child(d, kw, Some(k)), compiled)?;
                    }
                }
                Ok(())
            }
            "properties" => {
                let Value::Object(props) = sch else {
                    return Ok(());
                };
                for k in js_keys(props) {
                    if k == "__proto__" {
                        continue;
                    }
                    let s = &props[k];
                    if !self.always_valid(s)? {
                        self.check_sub(&node.child(s, kw, Some(k)), compiled)?;
                    }
                }
                Ok(())
            }
            "patternProperties" => {
                let Value::Object(pats) = sch else {
                    return Ok(());
                };
                let patterns: Vec<&String> = js_keys(pats)
                    .into_iter()
                    .filter(|p| *p != "__proto__")
                    .collect();
                let mut all_valid = true;
                for p in &patterns {
                    if !self.always_valid(&pats[*p])? {
                        all_valid = false;
                    }
                }
                if patterns.is_empty() || all_valid {
                    return Ok(());
                }
                for p in patterns {
                    if let Some(Value::Object(props)) = m.get("properties") {
                        let re = regex_plain(p)?;
                        for prop in js_keys(props) {
                            if re.find(prop).is_some() {
                                return Err(format!(
                                    "strict mode: property {prop} matches pattern {p} (use allowMatchingProperties)"
                                ));
                            }
                        }
                    }
                    let s = &pats[p];
                    if !self.always_valid(s)? {
                        self.check_sub(&node.child(s, kw, Some(p)), compiled)?;
                    }
                    regex_u(p)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    // ---- validate: what ajv's generated code does ----

    fn node(&self, node: &Node<'s>, data: &Value, ipath: &str, cx: Cx<'_>) -> Check {
        match node.schema {
            Value::Bool(true) => Ok(()),
            Value::Bool(false) => Err(self.fail(
                cx,
                self.error(
                    node,
                    cx,
                    ipath,
                    "false schema",
                    json!({}),
                    "boolean schema is false".into(),
                ),
            )),
            Value::Object(m) => {
                if !m.keys().any(|k| is_rule(k)) {
                    return Ok(());
                }
                self.object(node, m, data, ipath, cx)
            }
            _ => Ok(()),
        }
    }

    fn error(
        &self,
        node: &Node<'s>,
        cx: Cx<'_>,
        ipath: &str,
        keyword: &str,
        params: Value,
        message: String,
    ) -> AjvError {
        AjvError {
            instance_path: ipath.to_owned(),
            schema_path: format!("{}/{keyword}", node.path),
            keyword: keyword.to_owned(),
            params,
            message,
            property_name: cx.property_name.map(str::to_owned),
        }
    }

    /// `reportError`: one error; outside a composite keyword the function
    /// returns with it alone.
    fn fail(&self, _cx: Cx<'_>, e: AjvError) -> Fail {
        Fail {
            errors: vec![e],
            returned: true,
        }
    }

    fn type_error(
        &self,
        node: &Node<'s>,
        m: &Map<String, Value>,
        cx: Cx<'_>,
        ipath: &str,
    ) -> AjvError {
        let t = m.get("type").cloned().unwrap_or(Value::Null);
        let shown = js::string(&t);
        self.error(
            node,
            cx,
            ipath,
            "type",
            json!({ "type": t }),
            format!("must be {shown}"),
        )
    }

    fn object(
        &self,
        node: &Node<'s>,
        m: &'s Map<String, Value>,
        data: &Value,
        ipath: &str,
        cx: Cx<'_>,
    ) -> Check {
        let types = schema_types(m).unwrap_or_default();
        let has_rules_for = |t: &str| {
            Group::ALL
                .iter()
                .any(|g| g.type_name() == Some(t) && group_used(m, *g))
        };
        let check_types = !(types.is_empty() || types.len() == 1 && has_rules_for(types[0]));
        let mut errors = Vec::new();
        if check_types && !types.iter().any(|t| is_type(data, t)) {
            errors.push(self.type_error(node, m, cx, ipath));
            if !cx.composite {
                return Err(Fail {
                    errors,
                    returned: true,
                });
            }
        }
        if m.contains_key("$ref") && !m.keys().any(|k| k != "$ref" && is_rule(k)) {
            return self.kw_ref(node, m, data, ipath, cx);
        }
        let mut returned = false;
        for g in Group::ALL {
            if !group_used(m, g) {
                continue;
            }
            let result = match g.type_name() {
                None => self.keywords(node, m, g, data, ipath, cx),
                Some(t) => {
                    if is_type(data, t) {
                        self.keywords(node, m, g, data, ipath, cx)
                    } else if types.len() == 1 && types[0] == t && !check_types {
                        Err(Fail {
                            errors: vec![self.type_error(node, m, cx, ipath)],
                            returned: true,
                        })
                    } else {
                        Ok(())
                    }
                }
            };
            if let Err(f) = result {
                if !cx.composite && f.returned {
                    return Err(f);
                }
                returned = f.returned;
                errors.extend(f.errors);
            }
            if !errors.is_empty() {
                break;
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Fail { errors, returned })
        }
    }

    fn keywords(
        &self,
        node: &Node<'s>,
        m: &'s Map<String, Value>,
        g: Group,
        data: &Value,
        ipath: &str,
        cx: Cx<'_>,
    ) -> Check {
        for kw in g.keywords() {
            let Some(sch) = m.get(*kw) else { continue };
            self.keyword(node, m, kw, sch, g, data, ipath, cx)?;
            if *kw == "items" && self.tuple_cut_short(sch, data) {
                // ajv's `if (valid)` after a tuple item the data does not
                // have reads a hoisted, unset `var`: the rest of the group
                // (`contains`, `uniqueItems`) is skipped.
                break;
            }
        }
        Ok(())
    }

    /// A tuple `items` whose first checked position is past the data's end.
    fn tuple_cut_short(&self, sch: &Value, data: &Value) -> bool {
        let (Value::Array(schemas), Some(a)) = (sch, data.as_array()) else {
            return false;
        };
        schemas
            .iter()
            .position(|s| !self.always_valid(s).unwrap_or(false))
            .is_some_and(|first| first >= a.len())
    }

    fn kw_ref(
        &self,
        node: &Node<'s>,
        m: &'s Map<String, Value>,
        data: &Value,
        ipath: &str,
        cx: Cx<'_>,
    ) -> Check {
        let Some(Value::String(r)) = m.get("$ref") else {
            return Ok(());
        };
        match self.resolve(node, r) {
            Ok(Resolved::Inline(target)) => self.node(&target, data, ipath, cx),
            Ok(Resolved::Call(target)) => {
                let callee = Validator { doc: target.doc };
                let inner = Cx {
                    composite: false,
                    property_name: None,
                };
                callee.node(&target, data, ipath, inner).map_err(|f| Fail {
                    errors: f.errors,
                    returned: false,
                })
            }
            // compile refused it already.
            Err(_) => Ok(()),
        }
    }

    #[allow(clippy::too_many_arguments, clippy::too_many_lines)]
    fn keyword(
        &self,
        node: &Node<'s>,
        m: &'s Map<String, Value>,
        kw: &str,
        sch: &'s Value,
        g: Group,
        data: &Value,
        ipath: &str,
        cx: Cx<'_>,
    ) -> Check {
        let err = |keyword: &str, params: Value, message: String| -> Fail {
            self.fail(cx, self.error(node, cx, ipath, keyword, params, message))
        };
        let sub_cx = |composite: bool| Cx {
            composite: composite || cx.composite,
            property_name: cx.property_name,
        };
        let comp = Cx {
            composite: true,
            property_name: cx.property_name,
        };
        match kw {
            "$ref" => self.kw_ref(node, m, data, ipath, cx),
            "const" => {
                if deep_equal(data, sch) {
                    Ok(())
                } else {
                    Err(err(
                        "const",
                        json!({ "allowedValue": sch }),
                        "must be equal to constant".into(),
                    ))
                }
            }
            "enum" => {
                let ok = sch
                    .as_array()
                    .is_some_and(|a| a.iter().any(|v| deep_equal(data, v)));
                if ok {
                    Ok(())
                } else {
                    Err(err(
                        "enum",
                        json!({ "allowedValues": sch }),
                        "must be equal to one of the allowed values".into(),
                    ))
                }
            }
            "not" => {
                let valid = self.always_valid(sch).unwrap_or(false)
                    || self
                        .node(&node.child(sch, "not", None), data, ipath, comp)
                        .is_ok();
                if valid {
                    Err(err("not", json!({}), "must NOT be valid".into()))
                } else {
                    Ok(())
                }
            }
            "anyOf" => {
                let Value::Array(items) = sch else {
                    return Ok(());
                };
                if items.iter().any(|s| self.always_valid(s).unwrap_or(false)) {
                    return Ok(());
                }
                let mut errors = Vec::new();
                for (i, s) in items.iter().enumerate() {
                    match self.node(
                        &node.child(s, "anyOf", Some(&i.to_string())),
                        data,
                        ipath,
                        comp,
                    ) {
                        Ok(()) => return Ok(()),
                        Err(f) => errors.extend(f.errors),
                    }
                }
                errors.push(self.error(
                    node,
                    cx,
                    ipath,
                    "anyOf",
                    json!({}),
                    "must match a schema in anyOf".into(),
                ));
                Err(Fail {
                    errors,
                    returned: true,
                })
            }
            "oneOf" => {
                let Value::Array(items) = sch else {
                    return Ok(());
                };
                let mut errors = Vec::new();
                let mut valid = false;
                let mut passing = Value::Null;
                for (i, s) in items.iter().enumerate() {
                    let this = self.always_valid(s).unwrap_or(false)
                        || match self.node(
                            &node.child(s, "oneOf", Some(&i.to_string())),
                            data,
                            ipath,
                            comp,
                        ) {
                            Ok(()) => true,
                            Err(f) => {
                                errors.extend(f.errors);
                                false
                            }
                        };
                    if i > 0 && this && valid {
                        valid = false;
                        passing = json!([passing, i]);
                        break;
                    }
                    if this {
                        valid = true;
                        passing = json!(i);
                    }
                }
                if valid {
                    return Ok(());
                }
                errors.push(self.error(
                    node,
                    cx,
                    ipath,
                    "oneOf",
                    json!({ "passingSchemas": passing }),
                    "must match exactly one schema in oneOf".into(),
                ));
                Err(Fail {
                    errors,
                    returned: true,
                })
            }
            "allOf" => {
                let Value::Array(items) = sch else {
                    return Ok(());
                };
                for (i, s) in items.iter().enumerate() {
                    if self.always_valid(s).unwrap_or(false) {
                        continue;
                    }
                    self.node(
                        &node.child(s, "allOf", Some(&i.to_string())),
                        data,
                        ipath,
                        sub_cx(false),
                    )?;
                }
                Ok(())
            }
            "if" => {
                let clause = |k: &str| m.get(k).filter(|s| !self.always_valid(s).unwrap_or(false));
                let (then, els) = (clause("then"), clause("else"));
                if then.is_none() && els.is_none() {
                    return Ok(());
                }
                let if_valid = self
                    .node(&node.child(sch, "if", None), data, ipath, comp)
                    .is_ok();
                let (name, chosen) = if if_valid {
                    ("then", then)
                } else {
                    ("else", els)
                };
                let Some(c) = chosen else { return Ok(()) };
                match self.node(&node.child(c, name, None), data, ipath, sub_cx(false)) {
                    Ok(()) => Ok(()),
                    Err(f) if f.returned && !cx.composite => Err(f),
                    Err(mut f) => {
                        f.errors.push(self.error(
                            node,
                            cx,
                            ipath,
                            "if",
                            json!({ "failingKeyword": name }),
                            format!("must match \"{name}\" schema"),
                        ));
                        f.returned = true;
                        Err(f)
                    }
                }
            }
            "maximum" | "minimum" | "exclusiveMaximum" | "exclusiveMinimum" => {
                let (Some(x), Some(limit)) = (as_num(data), as_num(sch)) else {
                    return Ok(());
                };
                let (ok_str, ok) = match kw {
                    "maximum" => ("<=", x <= limit),
                    "minimum" => (">=", x >= limit),
                    "exclusiveMaximum" => ("<", x < limit),
                    _ => (">", x > limit),
                };
                if ok {
                    Ok(())
                } else {
                    Err(err(
                        kw,
                        json!({ "comparison": ok_str, "limit": sch }),
                        format!("must be {ok_str} {}", js::number(limit)),
                    ))
                }
            }
            "multipleOf" => {
                let (Some(x), Some(d)) = (as_num(data), as_num(sch)) else {
                    return Ok(());
                };
                let res = x / d;
                let invalid = d == 0.0 || js_parse_int(res) != Some(res);
                if invalid {
                    Err(err(
                        kw,
                        json!({ "multipleOf": sch }),
                        format!("must be multiple of {}", js::number(d)),
                    ))
                } else {
                    Ok(())
                }
            }
            "maxLength" | "minLength" => {
                let (Some(s), Some(limit)) = (data.as_str(), as_num(sch)) else {
                    return Ok(());
                };
                let len = s.chars().count() as f64;
                let (bad, comp_word) = if kw == "maxLength" {
                    (len > limit, "more")
                } else {
                    (len < limit, "fewer")
                };
                if bad {
                    Err(err(
                        kw,
                        json!({ "limit": sch }),
                        format!(
                            "must NOT have {comp_word} than {} characters",
                            js::number(limit)
                        ),
                    ))
                } else {
                    Ok(())
                }
            }
            "pattern" => {
                let (Some(s), Some(p)) = (data.as_str(), sch.as_str()) else {
                    return Ok(());
                };
                let matched = regex_u(p).is_ok_and(|re| re.find(s).is_some());
                if matched {
                    Ok(())
                } else {
                    Err(err(
                        kw,
                        json!({ "pattern": p }),
                        format!("must match pattern \"{p}\""),
                    ))
                }
            }
            "format" => {
                let Some(f) = sch.as_str() else { return Ok(()) };
                let Some(kind) = format_kind(f) else {
                    return Ok(());
                };
                let rule_type = if g == Group::Number {
                    "number"
                } else {
                    "string"
                };
                let ok = match kind {
                    FormatKind::Any => true,
                    FormatKind::String if rule_type == "string" => {
                        check_string_format(f, data.as_str().unwrap_or_default())
                    }
                    FormatKind::Number if rule_type == "number" => {
                        check_number_format(f, as_num(data).unwrap_or(f64::NAN))
                    }
                    _ => true,
                };
                if ok {
                    Ok(())
                } else {
                    Err(err(
                        kw,
                        json!({ "format": f }),
                        format!("must match format \"{f}\""),
                    ))
                }
            }
            "maxProperties" | "minProperties" => {
                let (Some(o), Some(limit)) = (data.as_object(), as_num(sch)) else {
                    return Ok(());
                };
                let n = o.len() as f64;
                let (bad, w) = if kw == "maxProperties" {
                    (n > limit, "more")
                } else {
                    (n < limit, "fewer")
                };
                if bad {
                    Err(err(
                        kw,
                        json!({ "limit": sch }),
                        format!("must NOT have {w} than {} properties", js::number(limit)),
                    ))
                } else {
                    Ok(())
                }
            }
            "required" => {
                let (Some(o), Some(req)) = (data.as_object(), sch.as_array()) else {
                    return Ok(());
                };
                for p in req.iter().filter_map(Value::as_str) {
                    if !has_prop(o, p) {
                        return Err(err(
                            kw,
                            json!({ "missingProperty": p }),
                            format!("must have required property '{p}'"),
                        ));
                    }
                }
                Ok(())
            }
            "maxItems" | "minItems" => {
                let (Some(a), Some(limit)) = (data.as_array(), as_num(sch)) else {
                    return Ok(());
                };
                let n = a.len() as f64;
                let (bad, w) = if kw == "maxItems" {
                    (n > limit, "more")
                } else {
                    (n < limit, "fewer")
                };
                if bad {
                    Err(err(
                        kw,
                        json!({ "limit": sch }),
                        format!("must NOT have {w} than {} items", js::number(limit)),
                    ))
                } else {
                    Ok(())
                }
            }
            "additionalItems" => {
                let (Some(a), Some(Value::Array(items))) = (data.as_array(), m.get("items")) else {
                    return Ok(());
                };
                match sch {
                    Value::Bool(false) => {
                        if a.len() <= items.len() {
                            Ok(())
                        } else {
                            Err(err(
                                kw,
                                json!({ "limit": items.len() }),
                                format!("must NOT have more than {} items", items.len()),
                            ))
                        }
                    }
                    Value::Object(_) if !self.always_valid(sch).unwrap_or(false) => {
                        for (i, item) in a.iter().enumerate().skip(items.len()) {
                            self.node(
                                &node.child(sch, kw, None),
                                item,
                                &format!("{ipath}/{i}"),
                                sub_cx(false),
                            )?;
                        }
                        Ok(())
                    }
                    _ => Ok(()),
                }
            }
            "items" => {
                let Some(a) = data.as_array() else {
                    return Ok(());
                };
                match sch {
                    Value::Array(schemas) => {
                        for (i, s) in schemas.iter().enumerate() {
                            if self.always_valid(s).unwrap_or(false) || i >= a.len() {
                                continue;
                            }
                            self.node(
                                &node.child(s, "items", Some(&i.to_string())),
                                &a[i],
                                &format!("{ipath}/{i}"),
                                sub_cx(false),
                            )?;
                        }
                        Ok(())
                    }
                    other => {
                        if self.always_valid(other).unwrap_or(false) {
                            return Ok(());
                        }
                        for (i, item) in a.iter().enumerate() {
                            self.node(
                                &node.child(other, "items", None),
                                item,
                                &format!("{ipath}/{i}"),
                                sub_cx(false),
                            )?;
                        }
                        Ok(())
                    }
                }
            }
            "contains" => {
                let Some(a) = data.as_array() else {
                    return Ok(());
                };
                let contains_err = || {
                    self.error(
                        node,
                        cx,
                        ipath,
                        "contains",
                        json!({ "minContains": 1 }),
                        "must contain at least 1 valid item(s)".into(),
                    )
                };
                if self.always_valid(sch).unwrap_or(false) {
                    return if a.is_empty() {
                        Err(self.fail(cx, contains_err()))
                    } else {
                        Ok(())
                    };
                }
                let mut errors = Vec::new();
                for (i, item) in a.iter().enumerate() {
                    match self.node(
                        &node.child(sch, "contains", None),
                        item,
                        &format!("{ipath}/{i}"),
                        comp,
                    ) {
                        Ok(()) => return Ok(()),
                        Err(f) => errors.extend(f.errors),
                    }
                }
                if !cx.composite {
                    errors.clear();
                }
                errors.push(contains_err());
                Err(Fail {
                    errors,
                    returned: true,
                })
            }
            "uniqueItems" => {
                if sch != &Value::Bool(true) {
                    return Ok(());
                }
                let Some(a) = data.as_array() else {
                    return Ok(());
                };
                let item_types = match m.get("items") {
                    Some(Value::Object(items)) => schema_types(items).unwrap_or_default(),
                    _ => Vec::new(),
                };
                let dup = unique_items(a, &item_types);
                match dup {
                    None => Ok(()),
                    Some((i, j)) => Err(err(
                        kw,
                        json!({ "i": i, "j": j }),
                        format!(
                            "must NOT have duplicate items (items ## {j} and {i} are identical)"
                        ),
                    )),
                }
            }
            "propertyNames" => {
                let Some(o) = data.as_object() else {
                    return Ok(());
                };
                if self.always_valid(sch).unwrap_or(false) {
                    return Ok(());
                }
                for key in js_keys(o) {
                    let key_cx = Cx {
                        composite: true,
                        property_name: Some(key.as_str()),
                    };
                    if let Err(mut f) = self.node(
                        &node.child(sch, "propertyNames", None),
                        &Value::String(key.clone()),
                        ipath,
                        key_cx,
                    ) {
                        f.errors.push(self.error(
                            node,
                            cx,
                            ipath,
                            "propertyNames",
                            json!({ "propertyName": key }),
                            "property name must be valid".into(),
                        ));
                        f.returned = true;
                        return Err(f);
                    }
                }
                Ok(())
            }
            "additionalProperties" => {
                let Some(o) = data.as_object() else {
                    return Ok(());
                };
                if self.always_valid(sch).unwrap_or(false) {
                    return Ok(());
                }
                let props: Vec<&String> = m
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().filter(|k| *k != "__proto__").collect())
                    .unwrap_or_default();
                let pats: Vec<regress::Regex> = m
                    .get("patternProperties")
                    .and_then(Value::as_object)
                    .map(|p| {
                        p.keys()
                            .filter(|k| *k != "__proto__")
                            .filter_map(|k| regex_u(k).ok())
                            .collect()
                    })
                    .unwrap_or_default();
                for key in js_keys(o) {
                    let additional =
                        !props.contains(&key) && !pats.iter().any(|re| re.find(key).is_some());
                    if !additional {
                        continue;
                    }
                    match sch {
                        Value::Bool(false) => {
                            return Err(err(
                                kw,
                                json!({ "additionalProperty": key }),
                                "must NOT have additional properties".into(),
                            ));
                        }
                        Value::Object(_) => {
                            self.node(
                                &node.child(sch, kw, None),
                                &o[key],
                                &format!("{ipath}/{}", escape_pointer(key)),
                                sub_cx(false),
                            )?;
                        }
                        _ => {}
                    }
                }
                Ok(())
            }
            "dependencies" => {
                let (Some(o), Some(deps)) = (data.as_object(), sch.as_object()) else {
                    return Ok(());
                };
                let keys: Vec<&String> = js_keys(deps)
                    .into_iter()
                    .filter(|k| *k != "__proto__")
                    .collect();
                for k in &keys {
                    let Value::Array(list) = &deps[*k] else {
                        continue;
                    };
                    if list.is_empty() || !has_prop(o, k) {
                        continue;
                    }
                    let names: Vec<String> = list.iter().map(js::string).collect();
                    if let Some(missing) = names.iter().find(|d| !has_prop(o, d)) {
                        let word = if names.len() == 1 {
                            "property"
                        } else {
                            "properties"
                        };
                        let joined = names.join(", ");
                        return Err(err(
                            kw,
                            json!({
                                "property": k,
                                "missingProperty": missing,
                                "depsCount": names.len(),
                                "deps": joined,
                            }),
                            format!("must have {word} {joined} when property {k} is present"),
                        ));
                    }
                }
                for k in keys {
                    let d = &deps[k];
                    if d.is_array() || self.always_valid(d).unwrap_or(false) || !has_prop(o, k) {
                        continue;
                    }
                    self.node(&node.child(d, kw, Some(k)), data, ipath, sub_cx(false))?;
                }
                Ok(())
            }
            "properties" => {
                let (Some(o), Some(props)) = (data.as_object(), sch.as_object()) else {
                    return Ok(());
                };
                for k in js_keys(props) {
                    if k == "__proto__" || self.always_valid(&props[k]).unwrap_or(false) {
                        continue;
                    }
                    let Some(v) = o.get(k.as_str()) else { continue };
                    self.node(
                        &node.child(&props[k], kw, Some(k)),
                        v,
                        &format!("{ipath}/{}", escape_pointer(k)),
                        sub_cx(false),
                    )?;
                }
                Ok(())
            }
            "patternProperties" => {
                let (Some(o), Some(pats)) = (data.as_object(), sch.as_object()) else {
                    return Ok(());
                };
                for p in js_keys(pats) {
                    if p == "__proto__" {
                        continue;
                    }
                    let s = &pats[p];
                    if self.always_valid(s).unwrap_or(false) {
                        continue;
                    }
                    let Ok(re) = regex_u(p) else { continue };
                    for key in js_keys(o) {
                        if re.find(key).is_none() {
                            continue;
                        }
                        self.node(
                            &node.child(s, kw, Some(p)),
                            &o[key],
                            &format!("{ipath}/{}", escape_pointer(key)),
                            sub_cx(false),
                        )?;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// `checkUnknownRules` in strict mode.
fn check_unknown(m: &Map<String, Value>) -> Result<(), String> {
    for k in js_keys(m) {
        if !KNOWN.contains(&k.as_str()) {
            return Err(format!("strict mode: unknown keyword: \"{k}\""));
        }
    }
    Ok(())
}

/// `getSchemaTypes`: `type` as a list, with `nullable`.
fn schema_types(m: &Map<String, Value>) -> Result<Vec<&str>, String> {
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
fn is_type(data: &Value, t: &str) -> bool {
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

/// `uniqueItems`: the pair ajv reports, `(i, j)` with `j < i` scanned
/// from the end (or, with scalar item types, the later index `j` of an
/// item seen again at `i`).
fn unique_items(a: &[Value], item_types: &[&str]) -> Option<(usize, usize)> {
    if a.len() < 2 {
        return None;
    }
    let optimize =
        !item_types.is_empty() && !item_types.iter().any(|t| *t == "object" || *t == "array");
    if optimize {
        let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for i in (0..a.len()).rev() {
            let item = &a[i];
            if !item_types.iter().any(|t| is_type(item, t)) {
                continue;
            }
            let mut key = js::string(item);
            if item_types.len() > 1 && item.is_string() {
                key.push('_');
            }
            if let Some(j) = seen.get(&key) {
                return Some((i, *j));
            }
            seen.insert(key, i);
        }
        None
    } else {
        for i in (0..a.len()).rev() {
            for j in (0..i).rev() {
                if deep_equal(&a[i], &a[j]) {
                    return Some((i, j));
                }
            }
        }
        None
    }
}

/// A subschema whose `$id` is this anchor (`#name`).
fn find_anchor<'s>(v: &'s Value, anchor: &str) -> Option<&'s Value> {
    match v {
        Value::Object(m) => {
            if m.get("$id").and_then(Value::as_str) == Some(anchor) {
                return Some(v);
            }
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "enum" | "const" | "default" | "examples"))
                .find_map(|(_, c)| find_anchor(c, anchor))
        }
        Value::Array(items) => items.iter().find_map(|c| find_anchor(c, anchor)),
        _ => None,
    }
}

enum FormatKind {
    String,
    Number,
    Any,
}

/// ajv-formats' full formats, and what each applies to.
fn format_kind(f: &str) -> Option<FormatKind> {
    Some(match f {
        "date"
        | "time"
        | "date-time"
        | "iso-time"
        | "iso-date-time"
        | "duration"
        | "uri"
        | "uri-reference"
        | "uri-template"
        | "url"
        | "email"
        | "hostname"
        | "ipv4"
        | "ipv6"
        | "regex"
        | "uuid"
        | "json-pointer"
        | "json-pointer-uri-fragment"
        | "relative-json-pointer"
        | "byte" => FormatKind::String,
        "int32" | "int64" | "float" | "double" => FormatKind::Number,
        "password" | "binary" => FormatKind::Any,
        _ => return None,
    })
}

fn cached(
    slot: &'static OnceLock<regress::Regex>,
    pattern: &str,
    flags: &str,
) -> &'static regress::Regex {
    slot.get_or_init(|| regress::Regex::with_flags(pattern, flags).expect("ajv-formats pattern"))
}

macro_rules! format_regex {
    ($pattern:expr, $flags:expr) => {{
        static SLOT: OnceLock<regress::Regex> = OnceLock::new();
        cached(&SLOT, $pattern, $flags)
    }};
}

const URI_REFERENCE: &str = r#"^(?:[a-z][a-z0-9+\-.]*:)?(?:\/?\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:){0,1}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)|[Vv][0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)|(?:[a-z0-9\-._~!$&'"()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})*)*)?(?:\?(?:[a-z0-9\-._~!$&'"()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[a-z0-9\-._~!$&'"()*+,;=:@/?]|%[0-9a-f]{2})*)?$"#;
const URI: &str = r#"^(?:[a-z][a-z0-9+\-.]*:)(?:\/?\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:){0,1}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)|[Vv][0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)|(?:[a-z0-9\-._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)(?:\?(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?$"#;
const URL: &str = r"^(?:https?|ftp):\/\/(?:\S+(?::\S*)?@)?(?:(?!(?:10|127)(?:\.\d{1,3}){3})(?!(?:169\.254|192\.168)(?:\.\d{1,3}){2})(?!172\.(?:1[6-9]|2\d|3[0-1])(?:\.\d{1,3}){2})(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}(?:\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4]))|(?:(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)(?:\.(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)*(?:\.(?:[a-z\u{00a1}-\u{ffff}]{2,})))(?::\d{2,5})?(?:\/[^\s]*)?$";
const IPV6: &str = r"^((([0-9a-f]{1,4}:){7}([0-9a-f]{1,4}|:))|(([0-9a-f]{1,4}:){6}(:[0-9a-f]{1,4}|((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9a-f]{1,4}:){5}(((:[0-9a-f]{1,4}){1,2})|:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9a-f]{1,4}:){4}(((:[0-9a-f]{1,4}){1,3})|((:[0-9a-f]{1,4})?:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){3}(((:[0-9a-f]{1,4}){1,4})|((:[0-9a-f]{1,4}){0,2}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){2}(((:[0-9a-f]{1,4}){1,5})|((:[0-9a-f]{1,4}){0,3}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){1}(((:[0-9a-f]{1,4}){1,6})|((:[0-9a-f]{1,4}){0,4}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(:(((:[0-9a-f]{1,4}){1,7})|((:[0-9a-f]{1,4}){0,5}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:)))$";

fn is_leap_year(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn check_date(s: &str) -> bool {
    let re = format_regex!(r"^(\d\d\d\d)-(\d\d)-(\d\d)$", "");
    let Some(m) = re.find(s) else { return false };
    let part = |i: usize| -> i64 {
        m.group(i)
            .and_then(|r| s[r].parse::<i64>().ok())
            .unwrap_or(0)
    };
    let (year, month, day) = (part(1), part(2), part(3));
    const DAYS: [i64; 13] = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    (1..=12).contains(&month)
        && day >= 1
        && day
            <= if month == 2 && is_leap_year(year) {
                29
            } else {
                DAYS[month as usize]
            }
}

fn check_time(s: &str, strict_tz: bool) -> bool {
    let re = format_regex!(
        r"^(\d\d):(\d\d):(\d\d(?:\.\d+)?)(z|([+-])(\d\d)(?::?(\d\d))?)?$",
        "i"
    );
    let Some(m) = re.find(s) else { return false };
    let text = |i: usize| m.group(i).map(|r| &s[r]);
    let num = |i: usize| text(i).and_then(|t| t.parse::<f64>().ok()).unwrap_or(0.0);
    let (hr, min, sec) = (num(1), num(2), num(3));
    let tz = text(4);
    let sign = if text(5) == Some("-") { -1.0 } else { 1.0 };
    let (tz_h, tz_m) = (num(6), num(7));
    if tz_h > 23.0 || tz_m > 59.0 || (strict_tz && tz.is_none_or(str::is_empty)) {
        return false;
    }
    if hr <= 23.0 && min <= 59.0 && sec < 60.0 {
        return true;
    }
    let utc_min = min - tz_m * sign;
    let utc_hr = hr - tz_h * sign - if utc_min < 0.0 { 1.0 } else { 0.0 };
    (utc_hr == 23.0 || utc_hr == -1.0) && (utc_min == 59.0 || utc_min == -1.0) && sec < 61.0
}

fn check_date_time(s: &str, strict_tz: bool) -> bool {
    // `str.split(/t|\s/i)` must give two parts.
    let parts: Vec<&str> = s
        .split(|c: char| c == 't' || c == 'T' || js::is_js_space(c))
        .collect();
    parts.len() == 2 && check_date(parts[0]) && check_time(parts[1], strict_tz)
}

/// A string format of ajv-formats' full set.
fn check_string_format(f: &str, s: &str) -> bool {
    match f {
        "date" => check_date(s),
        "time" => check_time(s, true),
        "iso-time" => check_time(s, false),
        "date-time" => check_date_time(s, true),
        "iso-date-time" => check_date_time(s, false),
        "duration" => format_regex!(
            r"^P(?!$)((\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?|(\d+W)?)$",
            ""
        )
        .find(s)
        .is_some(),
        "uri" => {
            (s.contains('/') || s.contains(':')) && format_regex!(URI, "i").find(s).is_some()
        }
        "uri-reference" => format_regex!(URI_REFERENCE, "i").find(s).is_some(),
        "uri-template" => format_regex!(
            r#"^(?:(?:[^\x00-\x20"'<>%\\^`{|}]|%[0-9a-f]{2})|\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?(?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?)*\})*$"#,
            "i"
        )
        .find(s)
        .is_some(),
        "url" => format_regex!(URL, "iu").find(s).is_some(),
        "email" => format_regex!(
            r"^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$",
            "i"
        )
        .find(s)
        .is_some(),
        "hostname" => format_regex!(
            r"^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?$",
            "i"
        )
        .find(s)
        .is_some(),
        "ipv4" => format_regex!(
            r"^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$",
            ""
        )
        .find(s)
        .is_some(),
        "ipv6" => format_regex!(IPV6, "i").find(s).is_some(),
        "regex" => {
            let z_anchor = format_regex!(r"[^\\]\\Z", "");
            z_anchor.find(s).is_none() && regex_plain(s).is_ok()
        }
        "uuid" => format_regex!(
            r"^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$",
            "i"
        )
        .find(s)
        .is_some(),
        "json-pointer" => format_regex!(r"^(?:\/(?:[^~/]|~0|~1)*)*$", "").find(s).is_some(),
        "json-pointer-uri-fragment" => format_regex!(
            r"^#(?:\/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*$",
            "i"
        )
        .find(s)
        .is_some(),
        "relative-json-pointer" => format_regex!(
            r"^(?:0|[1-9][0-9]*)(?:#|(?:\/(?:[^~/]|~0|~1)*)*)$",
            ""
        )
        .find(s)
        .is_some(),
        "byte" => format_regex!(
            r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
            "m"
        )
        .find(s)
        .is_some(),
        _ => true,
    }
}

/// A number format: `int32`, `int64` (`Number.isInteger`), `float` and
/// `double` (anything).
fn check_number_format(f: &str, x: f64) -> bool {
    let integer = x.is_finite() && x.fract() == 0.0;
    match f {
        "int32" => integer && (-2_147_483_648.0..=2_147_483_647.0).contains(&x),
        "int64" => integer,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(schema: Value, data: Value) -> Result<(), String> {
        let v = compile(&schema)?;
        v.validate(&data).map_err(|e| errors_text(&e))
    }

    #[test]
    fn keys_come_in_javascript_order() {
        let m: Map<String, Value> =
            serde_json::from_str(r#"{"b":1,"10":1,"a":1,"2":1,"01":1}"#).unwrap();
        let keys: Vec<&str> = js_keys(&m).into_iter().map(String::as_str).collect();
        assert_eq!(keys, ["2", "10", "b", "a", "01"]);
    }

    #[test]
    fn first_error_and_composite_errors_as_ajv_reports_them() {
        let person = json!({"type": "object", "required": ["name"], "properties": {"age": {"type": "integer"}}});
        assert_eq!(
            check(person.clone(), json!({"age": 1.5})),
            Err("data must have required property 'name'".into())
        );
        assert_eq!(
            check(person, json!({"name": "x", "age": 1.5})),
            Err("data/age must be integer".into())
        );
        assert_eq!(
            check(json!({"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "number"}]}), json!(true)),
            Err("data must be string, data must be equal to one of the allowed values, data must be number, data must match a schema in anyOf".into())
        );
        // A tuple longer than the data skips the rest of its group.
        assert_eq!(
            check(
                json!({"items": [{"type": "string"}], "contains": {"type": "number"}}),
                json!([])
            ),
            Ok(())
        );
        // `multipleOf` through `parseInt(String(x))`.
        assert!(check(json!({"multipleOf": 1}), json!(1e22)).is_err());
        // `data[prop] !== undefined` holds for the prototype's names.
        assert_eq!(
            check(json!({"required": ["constructor"]}), json!({})),
            Ok(())
        );
    }

    #[test]
    fn compile_throws_what_ajv_throws() {
        assert_eq!(
            check(json!({"tpye": "string"}), json!(1)),
            Err("strict mode: unknown keyword: \"tpye\"".into())
        );
        assert_eq!(
            check(json!({"format": "phone"}), json!(1)),
            Err("unknown format \"phone\" ignored in schema at path \"#\"".into())
        );
        assert_eq!(
            check(json!({"type": "strin"}), json!(1)),
            Err("schema is invalid: data/type must be equal to one of the allowed values, data/type must be array, data/type must match a schema in anyOf".into())
        );
        assert_eq!(
            check(json!({"$ref": "#/definitions/x"}), json!(1)),
            Err("can't resolve reference #/definitions/x from id #".into())
        );
    }

    #[test]
    fn errors_serialise_as_json_stringify_writes_them() {
        let schema = json!({"properties": {"a": {"maximum": 1.0}}});
        let v = compile(&schema).unwrap();
        let errors = v.validate(&json!({"a": 2})).unwrap_err();
        assert_eq!(
            errors_json(&errors),
            r##"[{"instancePath":"/a","schemaPath":"#/properties/a/maximum","keyword":"maximum","params":{"comparison":"<=","limit":1},"message":"must be <= 1"}]"##
        );
    }
}
