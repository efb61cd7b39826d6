//! The array group: `maxItems`, `minItems`, `additionalItems`, `items`,
//! `contains`, `uniqueItems`.

use evalhost_plugin_sdk::Value;
use serde_json::json;

use super::rules::{is_type, schema_types};
use super::validate::At;
use super::values::{as_num, deep_equal};
use super::{Check, Fail, Validator};
use crate::js;

impl<'s> Validator<'s> {
    /// The array group's keywords.
    pub(super) fn array_keyword(&self, at: At<'_, 's>) -> Check {
        match at.kw {
            "maxItems" | "minItems" => self.kw_items_count(at),
            "additionalItems" => self.kw_additional_items(at),
            "items" => self.kw_items(at),
            "contains" => self.kw_contains(at),
            "uniqueItems" => self.kw_unique_items(at),
            _ => Ok(()),
        }
    }

    /// `maxItems`, `minItems`.
    fn kw_items_count(&self, at: At<'_, 's>) -> Check {
        let At { kw, sch, data, .. } = at;
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
            Err(self.err(
                at,
                kw,
                json!({ "limit": sch }),
                format!("must NOT have {w} than {} items", js::number(limit)),
            ))
        } else {
            Ok(())
        }
    }

    /// `additionalItems`: `false` limits the items past a tuple `items`; a
    /// schema applies to each of them.
    fn kw_additional_items(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            m,
            kw,
            sch,
            data,
            ipath,
            ..
        } = at;
        let (Some(a), Some(Value::Array(items))) = (data.as_array(), m.get("items")) else {
            return Ok(());
        };
        match sch {
            Value::Bool(false) => {
                if a.len() <= items.len() {
                    Ok(())
                } else {
                    Err(self.err(
                        at,
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
                        at.sub_cx(false),
                    )?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// `items`: a tuple, position by position, or one schema for every item.
    fn kw_items(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            sch,
            data,
            ipath,
            ..
        } = at;
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
                        at.sub_cx(false),
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
                        at.sub_cx(false),
                    )?;
                }
                Ok(())
            }
        }
    }

    /// `contains`: some item is valid (the items' errors collected inside a
    /// composite keyword).
    fn kw_contains(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            sch,
            data,
            ipath,
            cx,
            ..
        } = at;
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
                at.comp(),
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

    /// `uniqueItems`: the pair of equal items ajv reports.
    fn kw_unique_items(&self, at: At<'_, 's>) -> Check {
        let At {
            m, kw, sch, data, ..
        } = at;
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
            Some((i, j)) => Err(self.err(
                at,
                kw,
                json!({ "i": i, "j": j }),
                format!("must NOT have duplicate items (items ## {j} and {i} are identical)"),
            )),
        }
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
