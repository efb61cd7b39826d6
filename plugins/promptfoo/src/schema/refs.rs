//! `$ref`: resolving a reference (JSON pointers, the root's `$id`, `#name`
//! anchors, the meta-schema), and what compile and validation do with it.

use evalhost_plugin_sdk::Value;
use serde_json::Map;

use super::values::decode_uri_component;
use super::{Check, Cx, Doc, Fail, Node, Validator, meta};

pub(super) fn normalize_id(id: &str) -> &str {
    id.strip_suffix("#/")
        .or_else(|| id.strip_suffix('#'))
        .unwrap_or(id)
}

pub(super) const META_IDS: &[&str] = &[
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

impl<'s> Validator<'s> {
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

    pub(super) fn check_ref(
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

    pub(super) fn kw_ref(
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
}
