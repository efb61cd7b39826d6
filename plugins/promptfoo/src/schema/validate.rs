//! Validation as ajv's generated code runs it: a schema object's rule
//! groups in order, the type check, and each keyword handed to its group.

use evalhost_plugin_sdk::Value;
use serde_json::{Map, json};

use super::rules::{Group, group_used, is_rule, is_type, schema_types};
use super::{AjvError, Check, Cx, Fail, Node, Validator};
use crate::js;

/// One keyword of a schema object applied to one instance: what the
/// keyword's validation reads.
#[derive(Clone, Copy)]
pub(super) struct At<'a, 's> {
    pub(super) node: &'a Node<'s>,
    pub(super) m: &'s Map<String, Value>,
    pub(super) kw: &'a str,
    pub(super) sch: &'s Value,
    pub(super) g: Group,
    pub(super) data: &'a Value,
    pub(super) ipath: &'a str,
    pub(super) cx: Cx<'a>,
}

impl<'a> At<'a, '_> {
    /// The context of a subschema the keyword applies (composite when the
    /// keyword's is).
    pub(super) fn sub_cx(&self, composite: bool) -> Cx<'a> {
        Cx {
            composite: composite || self.cx.composite,
            property_name: self.cx.property_name,
        }
    }

    /// The context of a composite keyword's subschemas: errors collected.
    pub(super) fn comp(&self) -> Cx<'a> {
        Cx {
            composite: true,
            property_name: self.cx.property_name,
        }
    }
}

impl<'s> Validator<'s> {
    pub(super) fn node(&self, node: &Node<'s>, data: &Value, ipath: &str, cx: Cx<'_>) -> Check {
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

    pub(super) fn error(
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
    pub(super) fn fail(&self, _cx: Cx<'_>, e: AjvError) -> Fail {
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
            self.keyword(At {
                node,
                m,
                kw,
                sch,
                g,
                data,
                ipath,
                cx,
            })?;
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

    /// One keyword, handed to its group.
    fn keyword(&self, at: At<'_, 's>) -> Check {
        match at.kw {
            "$ref" => self.kw_ref(at.node, at.m, at.data, at.ipath, at.cx),
            "const" | "enum" | "not" | "anyOf" | "oneOf" | "allOf" | "if" => {
                self.untyped_keyword(at)
            }
            "maximum" | "minimum" | "exclusiveMaximum" | "exclusiveMinimum" | "multipleOf" => {
                self.number_keyword(at)
            }
            "maxLength" | "minLength" | "pattern" => self.string_keyword(at),
            "format" => self.kw_format(at),
            "maxItems" | "minItems" | "additionalItems" | "items" | "contains" | "uniqueItems" => {
                self.array_keyword(at)
            }
            "maxProperties"
            | "minProperties"
            | "required"
            | "propertyNames"
            | "additionalProperties"
            | "dependencies"
            | "properties"
            | "patternProperties" => self.object_keyword(at),
            _ => Ok(()),
        }
    }

    /// The keyword's error, reported (`reportError`).
    pub(super) fn err(
        &self,
        at: At<'_, 's>,
        keyword: &str,
        params: Value,
        message: String,
    ) -> Fail {
        self.fail(
            at.cx,
            self.error(at.node, at.cx, at.ipath, keyword, params, message),
        )
    }
}
