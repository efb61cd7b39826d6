//! The object group: `maxProperties`, `minProperties`, `required`,
//! `propertyNames`, `additionalProperties`, `dependencies`, `properties`,
//! `patternProperties`.

use evalhost_plugin_sdk::Value;
use serde_json::json;

use super::validate::At;
use super::values::{as_num, escape_pointer, has_prop, regex_u};
use super::{Check, Cx, Validator};
use crate::js::{self, js_keys};

impl<'s> Validator<'s> {
    /// The object group's keywords.
    pub(super) fn object_keyword(&self, at: At<'_, 's>) -> Check {
        match at.kw {
            "maxProperties" | "minProperties" => self.kw_properties_count(at),
            "required" => self.kw_required(at),
            "propertyNames" => self.kw_property_names(at),
            "additionalProperties" => self.kw_additional_properties(at),
            "dependencies" => self.kw_dependencies(at),
            "properties" => self.kw_properties(at),
            "patternProperties" => self.kw_pattern_properties(at),
            _ => Ok(()),
        }
    }

    /// `maxProperties`, `minProperties`.
    fn kw_properties_count(&self, at: At<'_, 's>) -> Check {
        let At { kw, sch, data, .. } = at;
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
            Err(self.err(
                at,
                kw,
                json!({ "limit": sch }),
                format!("must NOT have {w} than {} properties", js::number(limit)),
            ))
        } else {
            Ok(())
        }
    }

    /// `required`: the first property missing (`data[prop] === undefined`).
    fn kw_required(&self, at: At<'_, 's>) -> Check {
        let At { kw, sch, data, .. } = at;
        let (Some(o), Some(req)) = (data.as_object(), sch.as_array()) else {
            return Ok(());
        };
        for p in req.iter().filter_map(Value::as_str) {
            if !has_prop(o, p) {
                return Err(self.err(
                    at,
                    kw,
                    json!({ "missingProperty": p }),
                    format!("must have required property '{p}'"),
                ));
            }
        }
        Ok(())
    }

    /// `propertyNames`: each key, as a string, against the subschema.
    fn kw_property_names(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            sch,
            data,
            ipath,
            cx,
            ..
        } = at;
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

    /// `additionalProperties`: the keys neither `properties` nor a
    /// `patternProperties` pattern names.
    fn kw_additional_properties(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            m,
            kw,
            sch,
            data,
            ipath,
            ..
        } = at;
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
            let additional = !props.contains(&key) && !pats.iter().any(|re| re.find(key).is_some());
            if !additional {
                continue;
            }
            match sch {
                Value::Bool(false) => {
                    return Err(self.err(
                        at,
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
                        at.sub_cx(false),
                    )?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `dependencies`: the property lists first, then the schemas.
    fn kw_dependencies(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            kw,
            sch,
            data,
            ipath,
            ..
        } = at;
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
                return Err(self.err(
                    at,
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
            self.node(&node.child(d, kw, Some(k)), data, ipath, at.sub_cx(false))?;
        }
        Ok(())
    }

    /// `properties`: each named property the data has.
    fn kw_properties(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            kw,
            sch,
            data,
            ipath,
            ..
        } = at;
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
                at.sub_cx(false),
            )?;
        }
        Ok(())
    }

    /// `patternProperties`: each key a pattern matches.
    fn kw_pattern_properties(&self, at: At<'_, 's>) -> Check {
        let At {
            node,
            kw,
            sch,
            data,
            ipath,
            ..
        } = at;
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
                    at.sub_cx(false),
                )?;
            }
        }
        Ok(())
    }
}
