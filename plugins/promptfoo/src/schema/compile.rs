//! What `ajv.compile` throws on a schema: strict mode (unknown keywords,
//! `if` without `then`/`else`, …), unknown formats, bad patterns,
//! unresolvable `$ref`s, in the order ajv's code generation meets them.

use evalhost_plugin_sdk::Value;
use serde_json::Map;

use super::formats::format_kind;
use super::rules::{FORMAT_LIMITS, Group, check_unknown, group_used, is_rule, schema_types};
use super::values::{regex_plain, regex_u};
use super::{Node, Validator};
use crate::js::js_keys;

impl<'s> Validator<'s> {
    /// `alwaysValidSchema`, with its strict check of unknown keywords.
    pub(super) fn always_valid(&self, schema: &Value) -> Result<bool, String> {
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

    pub(super) fn check_sub(
        &self,
        node: &Node<'s>,
        compiled: &mut Vec<*const Value>,
    ) -> Result<(), String> {
        self.check(node, compiled)
    }

    /// The checks ajv's code generation makes on one schema and what it
    /// reaches.
    pub(super) fn check(
        &self,
        node: &Node<'s>,
        compiled: &mut Vec<*const Value>,
    ) -> Result<(), String> {
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
            "not" | "anyOf" | "oneOf" | "allOf" | "if" | "then" | "else" => {
                self.check_applicator(node, m, kw, sch, compiled)
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
            "additionalItems" | "items" | "uniqueItems" => {
                self.check_array_keyword(node, m, kw, sch, compiled)
            }
            "contains" | "propertyNames" => {
                if !self.always_valid(sch)? {
                    self.check_sub(&node.child(sch, kw, None), compiled)?;
                }
                Ok(())
            }
            "additionalProperties" | "dependencies" | "properties" | "patternProperties" => {
                self.check_object_keyword(node, m, kw, sch, compiled)
            }
            _ => Ok(()),
        }
    }

    /// `not`, `anyOf`, `oneOf`, `allOf`, `if`, `then`, `else`: the subschemas
    /// they apply, and strict mode's `if`/`then`/`else` rules.
    fn check_applicator(
        &self,
        node: &Node<'s>,
        m: &'s Map<String, Value>,
        kw: &str,
        sch: &'s Value,
        compiled: &mut Vec<*const Value>,
    ) -> Result<(), String> {
        match kw {
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
            _ => Ok(()),
        }
    }

    /// `additionalItems`, `items`, `uniqueItems`.
    fn check_array_keyword(
        &self,
        node: &Node<'s>,
        m: &'s Map<String, Value>,
        kw: &str,
        sch: &'s Value,
        compiled: &mut Vec<*const Value>,
    ) -> Result<(), String> {
        match kw {
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
            "uniqueItems" => {
                if let Some(Value::Object(items)) = m.get("items") {
                    schema_types(items)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// `additionalProperties`, `dependencies`, `properties`,
    /// `patternProperties`: their subschemas, their patterns, and strict
    /// mode's properties that match a pattern.
    fn check_object_keyword(
        &self,
        node: &Node<'s>,
        m: &'s Map<String, Value>,
        kw: &str,
        sch: &'s Value,
        compiled: &mut Vec<*const Value>,
    ) -> Result<(), String> {
        match kw {
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
}
