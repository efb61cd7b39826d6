//! JavaScript's value semantics over minijinja values, as Nunjucks gets
//! them from the JavaScript it compiles a template to: `String()` (what
//! `{{ x }}` prints), `ToNumber`, truthiness, `==` and `===`, `<`, the
//! arithmetic operators and property lookup.

use minijinja::Value;
use minijinja::value::ValueKind;

/// The largest integer a JavaScript number holds exactly.
const SAFE: f64 = 9_007_199_254_740_991.0;

/// `Number.prototype.toString()` (ryu-js, the formatter Boa uses): the
/// shortest digits that read back as the same double, positioned as
/// ECMA-262 says — `1`, not `1.0`; `1e-7`; `1e+21`.
pub fn number_to_string(f: f64) -> String {
    ryu_js::Buffer::new().format(f).to_owned()
}

/// A number as a template value: an integer where it is one JavaScript
/// holds exactly (so that `range(n + 1)` and indexes take it), else a
/// float. Either prints as JavaScript prints the number.
pub fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() <= SAFE && !(f == 0.0 && f.is_sign_negative()) {
        Value::from(f as i64)
    } else {
        Value::from(f)
    }
}

/// A numeric value as JavaScript's double (an integer beyond 2^53 rounds,
/// as JavaScript reads it).
pub fn as_f64(v: &Value) -> Option<f64> {
    if v.kind() != ValueKind::Number {
        return None;
    }
    if let Some(i) = v.as_i64() {
        return Some(i as f64);
    }
    f64::try_from(v.clone()).ok()
}

/// Whether `v` is a JavaScript object (an array, an object, a function):
/// truthy, and a string only through `ToPrimitive`.
fn is_object(v: &Value) -> bool {
    matches!(
        v.kind(),
        ValueKind::Seq | ValueKind::Map | ValueKind::Iterable | ValueKind::Plain | ValueKind::Bytes
    )
}

/// `String(v)`.
pub fn to_string(v: &Value) -> String {
    match v.kind() {
        ValueKind::Undefined => "undefined".into(),
        ValueKind::None => "null".into(),
        ValueKind::Bool => if v.is_true() { "true" } else { "false" }.into(),
        ValueKind::Number => as_f64(v).map(number_to_string).unwrap_or_default(),
        ValueKind::String => v.as_str().unwrap_or_default().to_owned(),
        ValueKind::Seq | ValueKind::Iterable => match v.try_iter() {
            // Array.prototype.toString: join(","), null and undefined empty.
            Ok(items) => items
                .map(|item| match item.kind() {
                    ValueKind::Undefined | ValueKind::None => String::new(),
                    _ => to_string(&item),
                })
                .collect::<Vec<_>>()
                .join(","),
            Err(_) => String::new(),
        },
        ValueKind::Map | ValueKind::Plain => {
            // A macro prints as its text in minijinja; a JavaScript
            // function as its source: neither is anything a prompt holds.
            if v.as_object().is_some() && v.kind() == ValueKind::Plain {
                v.to_string()
            } else {
                "[object Object]".into()
            }
        }
        ValueKind::Bytes => String::from_utf8_lossy(v.as_bytes().unwrap_or_default()).into_owned(),
        _ => v.to_string(),
    }
}

/// What `{{ v }}` prints: Nunjucks' `suppressValue` (null and undefined
/// print nothing), then `String()`.
pub fn display(v: &Value) -> String {
    match v.kind() {
        ValueKind::Undefined | ValueKind::None => String::new(),
        _ => to_string(v),
    }
}

/// JavaScript's `StringToNumber`.
fn string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    if t.is_empty() {
        return 0.0;
    }
    let radix = |prefix: [&str; 2], radix: u32| {
        prefix.iter().find_map(|p| t.strip_prefix(p)).map(|digits| {
            if digits.is_empty() {
                f64::NAN
            } else {
                u128::from_str_radix(digits, radix)
                    .map(|n| n as f64)
                    .unwrap_or(f64::NAN)
            }
        })
    };
    if let Some(n) = radix(["0x", "0X"], 16)
        .or_else(|| radix(["0o", "0O"], 8))
        .or_else(|| radix(["0b", "0B"], 2))
    {
        return n;
    }
    match t {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    // A decimal literal: digits, one dot, an exponent; nothing else (Rust
    // also takes "inf", "nan" and "1_0"? no: but it takes "inf").
    let valid = {
        let body = t.strip_prefix(['+', '-']).unwrap_or(t);
        let (mant, exp) = match body.find(['e', 'E']) {
            Some(i) => (&body[..i], Some(&body[i + 1..])),
            None => (body, None),
        };
        let mant_ok = {
            let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
            (!int.is_empty() || !frac.is_empty())
                && int.chars().all(|c| c.is_ascii_digit())
                && frac.chars().all(|c| c.is_ascii_digit())
                && mant.matches('.').count() <= 1
        };
        let exp_ok = exp.is_none_or(|e| {
            let e = e.strip_prefix(['+', '-']).unwrap_or(e);
            !e.is_empty() && e.chars().all(|c| c.is_ascii_digit())
        });
        mant_ok && exp_ok
    };
    if valid {
        t.parse().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

/// `ToNumber(v)`.
pub fn to_number(v: &Value) -> f64 {
    match v.kind() {
        ValueKind::Undefined => f64::NAN,
        ValueKind::None => 0.0,
        ValueKind::Bool => f64::from(u8::from(v.is_true())),
        ValueKind::Number => as_f64(v).unwrap_or(f64::NAN),
        ValueKind::String => string_to_number(v.as_str().unwrap_or_default()),
        _ => string_to_number(&to_string(v)),
    }
}

/// JavaScript truthiness: `undefined`, `null`, `false`, `0`, `NaN` and
/// `""` are false; every object — an empty array, an empty object — true.
pub fn truthy(v: &Value) -> bool {
    match v.kind() {
        ValueKind::Undefined | ValueKind::None => false,
        ValueKind::Bool => v.is_true(),
        ValueKind::Number => {
            let f = to_number(v);
            f != 0.0 && !f.is_nan()
        }
        ValueKind::String => !v.as_str().unwrap_or_default().is_empty(),
        _ => true,
    }
}

fn nullish(v: &Value) -> bool {
    matches!(v.kind(), ValueKind::Undefined | ValueKind::None)
}

/// `a === b`. Two objects are equal only when they are one object, which
/// values copied into a template never are; two macros compare by
/// minijinja's identity.
pub fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a.kind(), b.kind()) {
        (ValueKind::Undefined, ValueKind::Undefined) | (ValueKind::None, ValueKind::None) => true,
        (ValueKind::Number, ValueKind::Number) => to_number(a) == to_number(b),
        (ValueKind::String, ValueKind::String) | (ValueKind::Bool, ValueKind::Bool) => a == b,
        _ => false,
    }
}

/// `a == b` (IsLooselyEqual).
pub fn loose_eq(a: &Value, b: &Value) -> bool {
    let (ka, kb) = (a.kind(), b.kind());
    if nullish(a) || nullish(b) {
        return nullish(a) && nullish(b);
    }
    if ka == kb || (is_object(a) && is_object(b)) {
        return strict_eq(a, b);
    }
    match (ka, kb) {
        (ValueKind::Number, ValueKind::String) | (ValueKind::String, ValueKind::Number) => {
            to_number(a) == to_number(b)
        }
        (ValueKind::Bool, _) => loose_eq(&number(to_number(a)), b),
        (_, ValueKind::Bool) => loose_eq(a, &number(to_number(b))),
        _ if is_object(a) => loose_eq(&Value::from(to_string(a)), b),
        _ if is_object(b) => loose_eq(a, &Value::from(to_string(b))),
        _ => false,
    }
}

/// `a < b` (IsLessThan), `None` where either side is `NaN` (every
/// comparison with it is false).
fn less_than(a: &Value, b: &Value) -> Option<bool> {
    let prim = |v: &Value| {
        if is_object(v) {
            Value::from(to_string(v))
        } else {
            v.clone()
        }
    };
    let (a, b) = (prim(a), prim(b));
    if let (Some(x), Some(y)) = (a.as_str(), b.as_str()) {
        // UTF-16 code-unit order, as JavaScript compares strings.
        return Some(x.encode_utf16().lt(y.encode_utf16()));
    }
    let (x, y) = (to_number(&a), to_number(&b));
    if x.is_nan() || y.is_nan() {
        None
    } else {
        Some(x < y)
    }
}

/// JavaScript's `+`: a string on either side (after `ToPrimitive`)
/// concatenates, else numbers add.
pub fn add(a: &Value, b: &Value) -> Value {
    let stringy = |v: &Value| v.kind() == ValueKind::String || is_object(v);
    if stringy(a) || stringy(b) {
        Value::from(format!("{}{}", to_string(a), to_string(b)))
    } else {
        number(to_number(a) + to_number(b))
    }
}

/// A binary operator of a Nunjucks expression, by its spelling.
pub fn binary(op: &str, a: &Value, b: &Value) -> Result<Value, String> {
    let x = || to_number(a);
    let y = || to_number(b);
    Ok(match op {
        "==" => Value::from(loose_eq(a, b)),
        "!=" => Value::from(!loose_eq(a, b)),
        "===" => Value::from(strict_eq(a, b)),
        "!==" => Value::from(!strict_eq(a, b)),
        "<" => Value::from(less_than(a, b).unwrap_or(false)),
        ">" => Value::from(less_than(b, a).unwrap_or(false)),
        "<=" => Value::from(less_than(b, a).is_some_and(|lt| !lt)),
        ">=" => Value::from(less_than(a, b).is_some_and(|lt| !lt)),
        "+" => add(a, b),
        "-" => number(x() - y()),
        "*" => number(x() * y()),
        "/" => number(x() / y()),
        // Nunjucks compiles `//` to Math.floor(a / b), `%` to JavaScript's
        // remainder (the dividend's sign, as Rust's), `**` to Math.pow.
        "//" => number((x() / y()).floor()),
        "%" => number(x() % y()),
        "**" => number(x().powf(y())),
        "~" => Value::from(format!("{}{}", to_string(a), to_string(b))),
        other => return Err(format!("unknown operator {other}")),
    })
}

/// `a in b` as Nunjucks' `inOperator`: an array's or a string's
/// `indexOf`, an object's keys; anything else is an error.
pub fn contains(needle: &Value, haystack: &Value) -> Result<bool, String> {
    match haystack.kind() {
        ValueKind::String => Ok(haystack
            .as_str()
            .unwrap_or_default()
            .contains(&to_string(needle))),
        ValueKind::Seq | ValueKind::Iterable => Ok(haystack
            .try_iter()
            .map(|mut items| items.any(|item| strict_eq(&item, needle)))
            .unwrap_or(false)),
        ValueKind::Map => {
            let key = to_string(needle);
            Ok(haystack
                .try_iter()
                .map(|mut keys| keys.any(|k| to_string(&k) == key))
                .unwrap_or(false))
        }
        _ => Err(format!(
            "Cannot use \"in\" operator to search for \"{}\" in unexpected types.",
            to_string(needle)
        )),
    }
}

/// The UTF-16 length of a string, as `.length` counts.
pub fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// A property lookup `obj[key]` / `obj.key` (Nunjucks' `memberLookup`):
/// an array's non-negative index and `length`, a string's character and
/// `length`, an object's key as a string; `undefined` otherwise (a
/// negative index too).
pub fn member(obj: &Value, key: &Value) -> Value {
    let index = |len: usize| -> Option<usize> {
        let f = match key.kind() {
            ValueKind::Number => to_number(key),
            ValueKind::String => {
                let s = key.as_str().unwrap_or_default();
                // Only a canonical numeric string is an index ("01" is not).
                let n = string_to_number(s);
                if number_to_string(n) != s {
                    return None;
                }
                n
            }
            _ => return None,
        };
        (f.fract() == 0.0 && f >= 0.0 && f < len as f64).then_some(f as usize)
    };
    match obj.kind() {
        ValueKind::Undefined | ValueKind::None => Value::UNDEFINED,
        ValueKind::Seq => {
            let len = obj.len().unwrap_or(0);
            if key.as_str() == Some("length") {
                return Value::from(len);
            }
            index(len)
                .and_then(|i| obj.get_item_by_index(i).ok())
                .unwrap_or(Value::UNDEFINED)
        }
        ValueKind::String => {
            let s = obj.as_str().unwrap_or_default();
            if key.as_str() == Some("length") {
                return Value::from(utf16_len(s));
            }
            let units: Vec<u16> = s.encode_utf16().collect();
            index(units.len())
                .map(|i| Value::from(String::from_utf16_lossy(&units[i..=i])))
                .unwrap_or(Value::UNDEFINED)
        }
        ValueKind::Map => {
            let name = to_string(key);
            match obj.get_item(&Value::from(name.as_str())) {
                Ok(v) if !v.is_undefined() => v,
                // A key written as a number in YAML is a number here.
                _ => match key.kind() {
                    ValueKind::Number => obj.get_item(key).unwrap_or(Value::UNDEFINED),
                    _ => obj.get_attr(&name).unwrap_or(Value::UNDEFINED),
                },
            }
        }
        // `loop`, a macro, a cycler: minijinja's own attributes.
        _ => obj.get_attr(&to_string(key)).unwrap_or(Value::UNDEFINED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_javascript_prints_them() {
        for (f, s) in [
            (1.0, "1"),
            (2.5, "2.5"),
            (0.0000001, "1e-7"),
            (0.000001, "0.000001"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789012.0, "123456789012"),
            (-0.5, "-0.5"),
            (1.5e-10, "1.5e-10"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.0 / 3.0, "0.3333333333333333"),
            (2f64.powi(70), "1.1805916207174113e+21"),
            (-0.0, "0"),
            (f64::INFINITY, "Infinity"),
        ] {
            assert_eq!(number_to_string(f), s, "{f}");
        }
    }

    #[test]
    fn loose_equality_coerces_as_javascript_does() {
        let n = |i: i64| Value::from(i);
        let s = |t: &str| Value::from(t);
        assert!(loose_eq(&n(10), &s("10")));
        assert!(loose_eq(&Value::from(true), &n(1)));
        assert!(loose_eq(&s("1"), &Value::from(true)));
        assert!(!loose_eq(&n(10), &s("ten")));
        assert!(loose_eq(&Value::UNDEFINED, &Value::from(())));
        assert!(!loose_eq(&Value::from(()), &n(0)));
        assert!(loose_eq(&Value::from(vec![1, 2]), &s("1,2")));
        assert!(!strict_eq(&n(10), &s("10")));
        assert!(strict_eq(&n(1), &Value::from(1.0)));
    }

    #[test]
    fn string_to_number_is_javascripts() {
        assert_eq!(string_to_number(" 42 "), 42.0);
        assert_eq!(string_to_number(""), 0.0);
        assert_eq!(string_to_number("0x1A"), 26.0);
        assert!(string_to_number("1_0").is_nan());
        assert!(string_to_number("inf").is_nan());
        assert_eq!(string_to_number(".5"), 0.5);
        assert_eq!(string_to_number("5."), 5.0);
        assert_eq!(string_to_number("-Infinity"), f64::NEG_INFINITY);
    }
}
