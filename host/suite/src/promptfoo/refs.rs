//! `$ref`s: JSON Pointers into the config itself, followed as promptfoo's
//! reference parser follows them, with a bound on how far they expand.

use super::*;

/// `value` with every `{$ref: "#/…"}` replaced by what it points to in
/// `root` (a JSON Pointer), as promptfoo's reference parser does; a
/// reference into another file, one that points nowhere, or a chain deeper
/// than 32 is an error at its place; so are references that expand the
/// config past [`MAX_REF_VALUES`] values (a few `$ref`s to each other can
/// otherwise grow it exponentially, as YAML aliases could).
/// `None` when the config has no `$ref` (most have none: not copied).
pub(super) fn dereference(
    value: &Value,
    root: &Value,
    depth: usize,
) -> Result<Option<Value>, (KeyPath, String)> {
    fn walk(
        value: &Value,
        root: &Value,
        depth: usize,
        at: &KeyPath,
        budget: &mut usize,
    ) -> Result<Value, (KeyPath, String)> {
        if *budget == 0 {
            return Err((
                at.clone(),
                format!("the config's `$ref`s expand it past {MAX_REF_VALUES} values"),
            ));
        }
        *budget -= 1;
        match value {
            Value::Object(o) => {
                if let Some(r) = o.get("$ref") {
                    let Some(pointer) = r.as_str().and_then(|r| r.strip_prefix('#')) else {
                        return Err((
                            at.key("$ref"),
                            format!(
                                "`$ref: {r}`: evalhost follows only references into this config (`#/…`)"
                            ),
                        ));
                    };
                    if o.len() > 1 {
                        return Err((
                            at.key("$ref"),
                            "a `$ref` with other keys beside it is not read by this version of evalhost".into(),
                        ));
                    }
                    if depth >= 32 {
                        return Err((
                            at.key("$ref"),
                            "`$ref`s nested more than 32 deep (a cycle?)".into(),
                        ));
                    }
                    let Some(target) = root.pointer(pointer) else {
                        return Err((
                            at.key("$ref"),
                            format!(
                                "`$ref: {}` points to nothing in this config",
                                r.as_str().unwrap_or("")
                            ),
                        ));
                    };
                    return walk(target, root, depth + 1, at, budget);
                }
                let mut out = Map::new();
                for (k, v) in o {
                    out.insert(k.clone(), walk(v, root, depth, &at.key(k), budget)?);
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| walk(v, root, depth, &at.index(i), budget))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            other => Ok(other.clone()),
        }
    }
    fn has_ref(value: &Value) -> bool {
        match value {
            Value::Object(o) => o.contains_key("$ref") || o.values().any(has_ref),
            Value::Array(items) => items.iter().any(has_ref),
            _ => false,
        }
    }
    if !has_ref(value) {
        return Ok(None);
    }
    let mut budget = MAX_REF_VALUES;
    walk(value, root, depth, &KeyPath::default(), &mut budget).map(Some)
}

/// The most values a config's `$ref`s may expand it to.
const MAX_REF_VALUES: usize = 1_000_000;
