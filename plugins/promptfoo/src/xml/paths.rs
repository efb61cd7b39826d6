//! Required element paths (`"a.b"`, `"a.0.@_id"`), looked up in the parsed
//! object as JavaScript looks them up.

use super::fxp::Js;

/// `Object.getOwnPropertyNames(Object.prototype)`: every plain object has
/// them (`record[key] !== undefined`).
const OBJECT_PROTOTYPE: &[&str] = &[
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

/// `hasElementPath(value, path)`.
pub(super) fn has_path(root: &Js, path: &[&str]) -> bool {
    enum At<'a> {
        Val(&'a Js),
        /// `Object.prototype` (reached through `__proto__`).
        Proto,
        /// A function or `null`: nothing further.
        Leaf,
    }
    let mut at = At::Val(root);
    for key in path {
        at = match at {
            At::Val(Js::Prim) | At::Leaf => return false,
            At::Val(Js::Arr(items)) => {
                let canonical = *key == "0"
                    || (key.starts_with(|c: char| ('1'..='9').contains(&c))
                        && key.chars().all(|c| c.is_ascii_digit())
                        && key
                            .parse::<f64>()
                            .is_ok_and(|f| crate::js::number(f) == *key));
                let Some(item) = canonical
                    .then(|| key.parse::<f64>().ok())
                    .flatten()
                    .and_then(|f| items.get(f as usize))
                else {
                    return false;
                };
                At::Val(item)
            }
            At::Val(Js::Obj(m)) => match m.iter().find(|(k, _)| k == key) {
                Some((_, v)) => At::Val(v),
                None if *key == "__proto__" => At::Proto,
                None if OBJECT_PROTOTYPE.contains(key) => At::Leaf,
                None => return false,
            },
            At::Proto => {
                if OBJECT_PROTOTYPE.contains(key) {
                    At::Leaf
                } else {
                    return false;
                }
            }
        };
    }
    true
}
