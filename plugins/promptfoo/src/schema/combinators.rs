//! The keywords of ajv's untyped group that validate: `const`, `enum` and
//! the applicators `not`, `anyOf`, `oneOf`, `allOf`, `if`/`then`/`else`
//! (the composite ones collecting their subschemas' errors).

use evalhost_plugin_sdk::Value;
use serde_json::json;

use super::validate::At;
use super::values::deep_equal;
use super::{Check, Fail, Validator};

impl<'s> Validator<'s> {
    /// The untyped group's keywords.
    pub(super) fn untyped_keyword(&self, at: At<'_, 's>) -> Check {
        match at.kw {
            "const" => self.kw_const(at),
            "enum" => self.kw_enum(at),
            "not" => self.kw_not(at),
            "anyOf" => self.kw_any_of(at),
            "oneOf" => self.kw_one_of(at),
            "allOf" => self.kw_all_of(at),
            "if" => self.kw_if(at),
            _ => Ok(()),
        }
    }

    /// `const`: deep equality with the value.
    fn kw_const(&self, at: At<'_, 's>) -> Check {
        let At { sch, data, .. } = at;
        if deep_equal(data, sch) {
            Ok(())
        } else {
            Err(self.err(
                at,
                "const",
                json!({ "allowedValue": sch }),
                "must be equal to constant".into(),
            ))
        }
    }

    /// `enum`: deep equality with one of the values.
    fn kw_enum(&self, at: At<'_, 's>) -> Check {
        let At { sch, data, .. } = at;
        let ok = sch
            .as_array()
            .is_some_and(|a| a.iter().any(|v| deep_equal(data, v)));
        if ok {
            Ok(())
        } else {
            Err(self.err(
                at,
                "enum",
                json!({ "allowedValues": sch }),
                "must be equal to one of the allowed values".into(),
            ))
        }
    }

    /// `not`: the subschema fails.
    fn kw_not(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            sch,
            data,
            ipath,
            ..
        } = at;
        let valid = self.always_valid(sch).unwrap_or(false)
            || self
                .node(&node.child(sch, "not", None), data, ipath, at.comp())
                .is_ok();
        if valid {
            Err(self.err(at, "not", json!({}), "must NOT be valid".into()))
        } else {
            Ok(())
        }
    }

    /// `anyOf`: the first subschema that holds ends it; else every one's
    /// errors, then `anyOf`'s.
    fn kw_any_of(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            sch,
            data,
            ipath,
            cx,
            ..
        } = at;
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
                at.comp(),
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

    /// `oneOf`: exactly one subschema holds (`passingSchemas` names the
    /// first two that do).
    fn kw_one_of(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            sch,
            data,
            ipath,
            cx,
            ..
        } = at;
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
                    at.comp(),
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

    /// `allOf`: each subschema in turn.
    fn kw_all_of(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            sch,
            data,
            ipath,
            ..
        } = at;
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
                at.sub_cx(false),
            )?;
        }
        Ok(())
    }

    /// `if`: `then` or `else` by whether `if` holds.
    fn kw_if(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            m,
            sch,
            data,
            ipath,
            cx,
            ..
        } = at;
        let clause = |k: &str| m.get(k).filter(|s| !self.always_valid(s).unwrap_or(false));
        let (then, els) = (clause("then"), clause("else"));
        if then.is_none() && els.is_none() {
            return Ok(());
        }
        let if_valid = self
            .node(&node.child(sch, "if", None), data, ipath, at.comp())
            .is_ok();
        let (name, chosen) = if if_valid {
            ("then", then)
        } else {
            ("else", els)
        };
        let Some(c) = chosen else { return Ok(()) };
        match self.node(&node.child(c, name, None), data, ipath, at.sub_cx(false)) {
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
}
