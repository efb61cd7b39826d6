//! Nunjucks, as promptfoo and AgentV 5 render templates with it, over
//! minijinja: a template is parsed by minijinja's parser and printed back
//! with Nunjucks' meaning ([`print`]); values follow JavaScript's
//! semantics ([`js`]); the filters, tests and globals are Nunjucks 3.2.4's
//! own, written from its source, and no others (a filter Nunjucks lacks is
//! an error, as in Nunjucks). What evalhost cannot render as Nunjucks does
//! is refused at its line, never rendered differently.
//!
//! Checked byte for byte against real Nunjucks on the corpus in
//! `tests/data/nunjucks` (recorded by `scripts/nunjucks/record.mjs`).

pub mod js;
pub mod print;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use minijinja::value::{Rest, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, UndefinedBehavior, Value};

pub use print::{Refusal, TranslateError, translate};

fn error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// The translations made so far, by template text (a suite renders the
/// same prompt for every test).
#[derive(Default)]
pub struct Cache {
    translated: Mutex<HashMap<String, Result<String, TranslateError>>>,
}

impl Cache {
    /// `template` translated, from the cache when it was before.
    pub fn translate(&self, template: &str) -> Result<String, TranslateError> {
        let mut map = self
            .translated
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(hit) = map.get(template) {
            return hit.clone();
        }
        let result = translate(template);
        // A bound on what a suite of generated templates can hold here.
        if map.len() >= 4096 {
            map.clear();
        }
        map.insert(template.to_owned(), result.clone());
        result
    }
}

/// A minijinja environment that renders translated templates as Nunjucks
/// (`autoescape: false`, undefined names print nothing, trailing newlines
/// kept), bounded by `fuel`.
pub fn environment(fuel: u64) -> Environment<'static> {
    let mut e = Environment::empty();
    e.set_undefined_behavior(UndefinedBehavior::Lenient);
    e.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    e.set_keep_trailing_newline(true);
    e.set_fuel(Some(fuel));
    e.set_formatter(|out, _state, value| {
        out.write_str(&js::display(value))
            .map_err(|_| error("could not write the output"))
    });
    e.set_unknown_method_callback(|_state, value, method, args| js_method(value, method, args));
    e.add_function("__nj_op", |op: String, a: Value, b: Value| {
        js::binary(&op, &a, &b).map_err(error)
    });
    e.add_function("__nj_truthy", |v: Value| js::truthy(&v));
    e.add_function("__nj_item", |obj: Value, key: Value| js::member(&obj, &key));
    e.add_function("__nj_in", |needle: Value, haystack: Value| {
        js::contains(&needle, &haystack).map_err(error)
    });
    e.add_function("__nj_key", |key: Value| js::to_string(&key));
    e.add_function("__nj_iter", |v: Value| -> Value {
        match v.kind() {
            ValueKind::Seq | ValueKind::Iterable => v,
            ValueKind::String => Value::from(
                v.as_str()
                    .unwrap_or_default()
                    .chars()
                    .map(|c| Value::from(c.to_string()))
                    .collect::<Vec<_>>(),
            ),
            _ => Value::from(Vec::<Value>::new()),
        }
    });
    e.add_function("__nj_pairs", |v: Value| -> Value {
        let pair = |a: Value, b: Value| Value::from(vec![a, b]);
        match v.kind() {
            ValueKind::Map => Value::from(
                entries(&v)
                    .into_iter()
                    .map(|(k, value)| pair(Value::from(k), value))
                    .collect::<Vec<_>>(),
            ),
            // A string walked as an object: its indexes and characters.
            ValueKind::String => Value::from(
                items(&v)
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| pair(Value::from(i.to_string()), c))
                    .collect::<Vec<_>>(),
            ),
            ValueKind::Seq | ValueKind::Iterable => Value::from(
                v.try_iter()
                    .into_iter()
                    .flatten()
                    .map(|item| {
                        pair(
                            js::member(&item, &Value::from(0)),
                            js::member(&item, &Value::from(1)),
                        )
                    })
                    .collect::<Vec<_>>(),
            ),
            _ => Value::from(Vec::<Value>::new()),
        }
    });
    e.add_global("null", Value::from(()));
    e.add_function("range", range);
    e.add_function("joiner", |sep: Option<String>| {
        let sep = sep.filter(|s| !s.is_empty()).unwrap_or_else(|| ",".into());
        let first = Arc::new(Mutex::new(true));
        Value::from_function(move || {
            let mut f = first
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let out = if *f { String::new() } else { sep.clone() };
            *f = false;
            out
        })
    });
    for name in FILTERS {
        e.add_filter(
            *name,
            move |state: &State, value: Value, args: Rest<Value>| {
                filter(state, name, value, args.0)
            },
        );
    }
    e.add_filter("d", |state: &State, value: Value, args: Rest<Value>| {
        filter(state, "default", value, args.0)
    });
    e.add_filter("e", |state: &State, value: Value, args: Rest<Value>| {
        filter(state, "escape", value, args.0)
    });
    for name in TESTS {
        e.add_test(*name, move |value: Value, args: Rest<Value>| {
            test(name, &value, &args.0)
        });
    }
    for (alias, name) in [
        ("eq", "equalto"),
        ("sameas", "equalto"),
        ("gt", "greaterthan"),
        ("lt", "lessthan"),
    ] {
        e.add_test(alias, move |value: Value, args: Rest<Value>| {
            test(name, &value, &args.0)
        });
    }
    e
}

/// A mapping's keys (as JavaScript's property names) and values, in
/// order: what `for k in obj` walks in Nunjucks' filters and loops.
fn entries(v: &Value) -> Vec<(String, Value)> {
    v.try_iter()
        .into_iter()
        .flatten()
        .map(|k| {
            let value = v.get_item(&k).unwrap_or_default();
            (js::to_string(&k), value)
        })
        .collect()
}

/// Nunjucks' `range(start, stop, step)`.
fn range(a: Value, b: Option<Value>, step: Option<Value>) -> Result<Value, Error> {
    let (start, stop, step) = match b {
        None => (0.0, js::to_number(&a), 1.0),
        Some(b) => {
            let step = step
                .map(|s| js::to_number(&s))
                .filter(|s| *s != 0.0 && !s.is_nan());
            (js::to_number(&a), js::to_number(&b), step.unwrap_or(1.0))
        }
    };
    let mut out = Vec::new();
    let mut i = start;
    while (step > 0.0 && i < stop) || (step < 0.0 && i > stop) {
        if out.len() >= 1_000_000 {
            return Err(error("range(): more than a million numbers"));
        }
        out.push(js::number(i));
        i += step;
    }
    Ok(Value::from(out))
}

/// Nunjucks 3.2.4's filters.
const FILTERS: &[&str] = &[
    "abs",
    "batch",
    "capitalize",
    "center",
    "default",
    "dictsort",
    "dump",
    "escape",
    "first",
    "float",
    "forceescape",
    "indent",
    "int",
    "join",
    "last",
    "length",
    "list",
    "lower",
    "nl2br",
    "reject",
    "rejectattr",
    "replace",
    "reverse",
    "round",
    "safe",
    "select",
    "selectattr",
    "slice",
    "sort",
    "string",
    "striptags",
    "sum",
    "title",
    "trim",
    "truncate",
    "upper",
    "urlencode",
    "wordcount",
    "groupby",
    "random",
    "urlize",
];

/// Nunjucks 3.2.4's tests.
const TESTS: &[&str] = &[
    "callable",
    "defined",
    "divisibleby",
    "escaped",
    "equalto",
    "even",
    "falsy",
    "ge",
    "greaterthan",
    "iterable",
    "le",
    "lessthan",
    "lower",
    "mapping",
    "ne",
    "null",
    "number",
    "odd",
    "string",
    "truthy",
    "undefined",
    "upper",
];

fn test(name: &str, v: &Value, args: &[Value]) -> Result<bool, Error> {
    let arg = || args.first().cloned().unwrap_or(Value::UNDEFINED);
    let num = |v: &Value| js::to_number(v);
    Ok(match name {
        "callable" => v.kind() == ValueKind::Plain && v.as_object().is_some(),
        "defined" => !v.is_undefined(),
        "undefined" => v.is_undefined(),
        "null" => v.is_none(),
        "divisibleby" => num(v) % num(&arg()) == 0.0,
        "escaped" => v.is_safe(),
        "equalto" => js::strict_eq(v, &arg()),
        "ne" => !js::strict_eq(v, &arg()),
        "even" => num(v) % 2.0 == 0.0,
        "odd" => num(v) % 2.0 == 1.0,
        "falsy" => !js::truthy(v),
        "truthy" => js::truthy(v),
        "ge" => js::binary(">=", v, &arg()).map_err(error)?.is_true(),
        "le" => js::binary("<=", v, &arg()).map_err(error)?.is_true(),
        "greaterthan" => js::binary(">", v, &arg()).map_err(error)?.is_true(),
        "lessthan" => js::binary("<", v, &arg()).map_err(error)?.is_true(),
        "number" => v.kind() == ValueKind::Number,
        "string" => v.kind() == ValueKind::String,
        "mapping" => v.kind() == ValueKind::Map,
        "iterable" => matches!(
            v.kind(),
            ValueKind::Seq | ValueKind::Iterable | ValueKind::String
        ),
        "lower" => v.as_str().is_some_and(|s| s.to_lowercase() == s),
        "upper" => v.as_str().is_some_and(|s| s.to_uppercase() == s),
        _ => return Err(error(format!("test not found: {name}"))),
    })
}

/// Nunjucks' `normalize(value, '')`: null, undefined and false become
/// the empty string.
fn normalized(v: &Value) -> Value {
    match v.kind() {
        ValueKind::Undefined | ValueKind::None => Value::from(""),
        ValueKind::Bool if !v.is_true() => Value::from(""),
        _ => v.clone(),
    }
}

/// A string argument a string method needs (Nunjucks throws a TypeError
/// for anything else).
fn need_str(filter: &str, v: &Value) -> Result<String, Error> {
    match v.as_str() {
        Some(s) => Ok(s.to_owned()),
        None => Err(error(format!(
            "{filter}: {} is not a string (Nunjucks throws a TypeError here)",
            js::to_string(v)
        ))),
    }
}

fn items(v: &Value) -> Vec<Value> {
    match v.kind() {
        ValueKind::String => v
            .as_str()
            .unwrap_or_default()
            .chars()
            .map(|c| Value::from(c.to_string()))
            .collect(),
        ValueKind::Seq | ValueKind::Iterable => v.try_iter().into_iter().flatten().collect(),
        _ => Vec::new(),
    }
}

/// JSON.stringify(v, null, indent) with insertion order and JavaScript's
/// numbers; `None` where JSON.stringify returns undefined.
fn stringify(v: &Value, indent: &str, depth: usize, out: &mut String) -> Option<()> {
    let nl = |out: &mut String, depth: usize| {
        if !indent.is_empty() {
            out.push('\n');
            for _ in 0..depth {
                out.push_str(indent);
            }
        }
    };
    match v.kind() {
        ValueKind::Undefined => return None,
        ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            let f = js::to_number(v);
            if f.is_finite() {
                out.push_str(&js::number_to_string(f));
            } else {
                out.push_str("null");
            }
        }
        ValueKind::String => {
            out.push_str(&serde_json::to_string(v.as_str().unwrap_or_default()).ok()?);
        }
        ValueKind::Seq | ValueKind::Iterable => {
            let list = items(v);
            if list.is_empty() {
                out.push_str("[]");
                return Some(());
            }
            out.push('[');
            for (i, item) in list.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                nl(out, depth + 1);
                if stringify(item, indent, depth + 1, out).is_none() {
                    out.push_str("null");
                }
            }
            nl(out, depth);
            out.push(']');
        }
        ValueKind::Map => {
            let mut first = true;
            out.push('{');
            for (k, value) in entries(v) {
                let mut member = String::new();
                if stringify(&value, indent, depth + 1, &mut member).is_none() {
                    continue;
                }
                if !first {
                    out.push(',');
                }
                first = false;
                nl(out, depth + 1);
                out.push_str(&serde_json::to_string(&k).ok()?);
                out.push(':');
                if !indent.is_empty() {
                    out.push(' ');
                }
                out.push_str(&member);
            }
            if !first {
                nl(out, depth);
            }
            out.push('}');
        }
        _ => return None,
    }
    Some(())
}

/// The HTML escape Nunjucks' `lib.escape` does.
fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// JavaScript's `Math.round`: halves toward +∞.
fn js_round(f: f64) -> f64 {
    (f + 0.5).floor()
}

/// JavaScript's `parseFloat`: the longest decimal prefix.
fn parse_float(s: &str) -> f64 {
    let t = s.trim_start();
    let mut end = 0;
    let mut best = f64::NAN;
    for (i, c) in t.char_indices() {
        if !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')) {
            break;
        }
        end = i + c.len_utf8();
        if let Ok(f) = t[..end].parse::<f64>()
            && !t[..end].ends_with(['e', 'E', '+', '-'])
        {
            best = f;
        }
    }
    let _ = end;
    if t.starts_with("Infinity") || t.starts_with("+Infinity") {
        return f64::INFINITY;
    }
    if t.starts_with("-Infinity") {
        return f64::NEG_INFINITY;
    }
    best
}

/// JavaScript's `parseInt(s, base)`.
fn parse_int(s: &str, base: u32) -> f64 {
    let t = s.trim_start();
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (base, t) = if (base == 16 || base == 0) && (t.starts_with("0x") || t.starts_with("0X")) {
        (16, &t[2..])
    } else {
        (if base == 0 { 10 } else { base }, t)
    };
    let digits: String = t.chars().take_while(|c| c.is_digit(base)).collect();
    if digits.is_empty() {
        return f64::NAN;
    }
    let mut n = 0f64;
    for c in digits.chars() {
        n = n * f64::from(base) + f64::from(c.to_digit(base).unwrap_or(0));
    }
    if neg { -n } else { n }
}

fn filter(_state: &State, name: &str, v: Value, args: Vec<Value>) -> Result<Value, Error> {
    // Keyword arguments, where a filter takes them (Nunjucks' makeMacro).
    let (args, kwargs) = match args.last() {
        Some(last) if last.is_kwargs() => {
            let mut a = args.clone();
            let k = a.pop();
            (a, k)
        }
        _ => (args, None),
    };
    let kw = |key: &str| {
        kwargs
            .as_ref()
            .and_then(|k| k.get_attr(key).ok())
            .filter(|v| !v.is_undefined())
    };
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::UNDEFINED);
    let s = |v: &Value| need_str(name, &normalized(v));
    Ok(match name {
        "abs" => js::number(js::to_number(&v).abs()),
        "batch" => {
            let size = js::to_number(&arg(0));
            let list = items(&v);
            let size = if size.is_nan() || size < 1.0 {
                1
            } else {
                size as usize
            };
            let fill = arg(1);
            let mut out = Vec::new();
            for chunk in list.chunks(size) {
                let mut chunk = chunk.to_vec();
                if js::truthy(&fill) {
                    while chunk.len() < size {
                        chunk.push(fill.clone());
                    }
                }
                out.push(Value::from(chunk));
            }
            Value::from(out)
        }
        "capitalize" => {
            let lower = s(&v)?.to_lowercase();
            let mut c = lower.chars();
            Value::from(match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            })
        }
        "center" => {
            let text = s(&v)?;
            let width = js::to_number(&arg(0));
            let width = if js::truthy(&Value::from(width)) {
                width
            } else {
                80.0
            };
            let len = js::utf16_len(&text) as f64;
            if len >= width {
                Value::from(text)
            } else {
                let spaces = width - len;
                // lib.repeat(' ', n) repeats for i < n: a fraction rounds up.
                let pre = (spaces / 2.0 - spaces % 2.0).ceil().max(0.0) as usize;
                let post = (spaces / 2.0).ceil().max(0.0) as usize;
                Value::from(format!("{}{text}{}", " ".repeat(pre), " ".repeat(post)))
            }
        }
        "default" => {
            if js::truthy(&arg(1)) {
                if js::truthy(&v) { v } else { arg(0) }
            } else if v.is_undefined() {
                arg(0)
            } else {
                v
            }
        }
        "dictsort" => {
            if v.kind() != ValueKind::Map {
                return Err(error("dictsort filter: val must be an object"));
            }
            let case_sensitive = js::truthy(&arg(0));
            let by_value = match arg(1).as_str() {
                None if arg(1).is_undefined() => false,
                Some("key") => false,
                Some("value") => true,
                _ => {
                    return Err(error(
                        "dictsort filter: You can only sort by either key or value",
                    ));
                }
            };
            let mut pairs: Vec<(Value, Value)> = entries(&v)
                .into_iter()
                .map(|(k, value)| (Value::from(k), value))
                .collect();
            let key = |p: &(Value, Value)| {
                let x = if by_value { p.1.clone() } else { p.0.clone() };
                match x.as_str() {
                    Some(s) if !case_sensitive => Value::from(s.to_uppercase()),
                    _ => x,
                }
            };
            pairs.sort_by(|a, b| js_cmp(&key(a), &key(b)));
            Value::from(
                pairs
                    .into_iter()
                    .map(|(k, v)| Value::from(vec![k, v]))
                    .collect::<Vec<_>>(),
            )
        }
        "dump" => {
            let spaces = arg(0);
            let indent = match spaces.kind() {
                ValueKind::Number => " ".repeat(js::to_number(&spaces).clamp(0.0, 10.0) as usize),
                ValueKind::String => spaces
                    .as_str()
                    .unwrap_or_default()
                    .chars()
                    .take(10)
                    .collect(),
                _ => String::new(),
            };
            let mut out = String::new();
            match stringify(&v, &indent, 0, &mut out) {
                Some(()) => Value::from(out),
                None => Value::UNDEFINED,
            }
        }
        "escape" | "forceescape" => {
            if name == "escape" && v.is_safe() {
                v
            } else {
                let text = match v.kind() {
                    ValueKind::Undefined | ValueKind::None => String::new(),
                    _ => js::to_string(&v),
                };
                Value::from_safe_string(html_escape(&text))
            }
        }
        "safe" => match v.kind() {
            _ if v.is_safe() => v,
            ValueKind::Undefined | ValueKind::None => Value::from_safe_string(String::new()),
            _ => Value::from_safe_string(js::to_string(&v)),
        },
        "first" => js::member(&v, &Value::from(0)),
        "last" => {
            let len = js::to_number(&js::member(&v, &Value::from("length")));
            if len.is_nan() {
                Value::UNDEFINED
            } else {
                js::member(&v, &js::number(len - 1.0))
            }
        }
        "float" => {
            let f = parse_float(&js::to_string(&v));
            if f.is_nan() { arg(0) } else { js::number(f) }
        }
        "int" => {
            let default = kw("default").unwrap_or_else(|| arg(0));
            let base = kw("base").or_else(|| args.get(1).cloned());
            let base = base.map(|b| js::to_number(&b) as u32).unwrap_or(10);
            let f = parse_int(&js::to_string(&v), base);
            if f.is_nan() { default } else { js::number(f) }
        }
        "indent" => {
            let text = s(&v)?;
            if text.is_empty() {
                return Ok(Value::from(""));
            }
            let width = js::to_number(&arg(0));
            let width = if width > 0.0 {
                width.ceil() as usize
            } else {
                4
            };
            let first = js::truthy(&arg(1));
            let sp = " ".repeat(width);
            Value::from(
                text.split('\n')
                    .enumerate()
                    .map(|(i, l)| {
                        if i == 0 && !first {
                            l.to_owned()
                        } else {
                            format!("{sp}{l}")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        }
        "join" => {
            let del = arg(0);
            let del = if js::truthy(&del) {
                js::to_string(&del)
            } else {
                String::new()
            };
            let attr = arg(1);
            let list = items_or_err(name, &v)?;
            Value::from(
                list.iter()
                    .map(|item| {
                        let item = if js::truthy(&attr) {
                            js::member(item, &attr)
                        } else {
                            item.clone()
                        };
                        js::display(&item)
                    })
                    .collect::<Vec<_>>()
                    .join(&del),
            )
        }
        "length" => {
            let n = normalized(&v);
            match n.kind() {
                ValueKind::Map => Value::from(n.len().unwrap_or(0)),
                ValueKind::String => Value::from(js::utf16_len(n.as_str().unwrap_or_default())),
                ValueKind::Seq | ValueKind::Iterable => Value::from(items(&n).len()),
                _ => Value::UNDEFINED,
            }
        }
        "list" => match v.kind() {
            ValueKind::String => Value::from(items(&v)),
            ValueKind::Map => Value::from(
                entries(&v)
                    .into_iter()
                    .map(|(k, value)| {
                        let mut m = std::collections::BTreeMap::new();
                        m.insert("key".to_owned(), Value::from(k));
                        m.insert("value".to_owned(), value);
                        Value::from_iter(m)
                    })
                    .collect::<Vec<_>>(),
            ),
            ValueKind::Seq | ValueKind::Iterable => v,
            _ => return Err(error("list filter: type not iterable")),
        },
        "lower" => Value::from(s(&v)?.to_lowercase()),
        "upper" => Value::from(s(&v)?.to_uppercase()),
        "nl2br" => match v.kind() {
            ValueKind::Undefined | ValueKind::None => Value::from(""),
            _ => Value::from(
                need_str(name, &v)?
                    .replace("\r\n", "<br />\n")
                    .replace('\n', "<br />\n"),
            ),
        },
        "reject" | "select" => {
            let want = name == "select";
            let test_name = arg(0);
            let test_name = test_name.as_str().unwrap_or("truthy").to_owned();
            let second: Vec<Value> = args.get(1).cloned().into_iter().collect();
            let mut out = Vec::new();
            for item in items_or_err(name, &v)? {
                if test(&test_name, &item, &second)? == want {
                    out.push(item);
                }
            }
            Value::from(out)
        }
        "rejectattr" | "selectattr" => {
            let want = name == "selectattr";
            let attr = arg(0);
            Value::from(
                items_or_err(name, &v)?
                    .into_iter()
                    .filter(|item| js::truthy(&js::member(item, &attr)) == want)
                    .collect::<Vec<_>>(),
            )
        }
        "replace" => {
            let old = arg(0);
            let new = js::to_string(&arg(1));
            let max = args.get(2).map(js::to_number).unwrap_or(-1.0);
            let old = match old.kind() {
                ValueKind::Number => js::to_string(&old),
                ValueKind::String => old.as_str().unwrap_or_default().to_owned(),
                _ => return Ok(v),
            };
            let text = match v.kind() {
                ValueKind::Number => js::to_string(&v),
                ValueKind::String => v.as_str().unwrap_or_default().to_owned(),
                _ => return Ok(v),
            };
            if old.is_empty() {
                let chars: Vec<String> = text.chars().map(String::from).collect();
                return Ok(Value::from(format!("{new}{}{new}", chars.join(&new))));
            }
            if max == 0.0 || !text.contains(&old) {
                return Ok(Value::from(text));
            }
            let mut out = String::new();
            let mut rest = text.as_str();
            let mut count = 0.0;
            while let Some(i) = rest.find(&old) {
                if max >= 0.0 && count >= max {
                    break;
                }
                out.push_str(&rest[..i]);
                out.push_str(&new);
                rest = &rest[i + old.len()..];
                count += 1.0;
            }
            out.push_str(rest);
            Value::from(out)
        }
        "reverse" => match v.kind() {
            ValueKind::String => Value::from(
                v.as_str()
                    .unwrap_or_default()
                    .chars()
                    .rev()
                    .collect::<String>(),
            ),
            _ => {
                let mut list = items(&v);
                list.reverse();
                Value::from(list)
            }
        },
        "round" => {
            let precision = js::to_number(&arg(0));
            let precision = if precision.is_nan() { 0.0 } else { precision };
            let factor = 10f64.powf(precision);
            let x = js::to_number(&v) * factor;
            let r = match arg(1).as_str() {
                Some("ceil") => x.ceil(),
                Some("floor") => x.floor(),
                _ => js_round(x),
            };
            js::number(r / factor)
        }
        "slice" => {
            let list = items(&v);
            let slices = js::to_number(&arg(0)).max(1.0) as usize;
            let fill = arg(1);
            let len = list.len();
            let size = len / slices;
            let extra = len % slices;
            let mut offset = 0;
            let mut out = Vec::new();
            for i in 0..slices {
                let start = offset + i * size;
                if i < extra {
                    offset += 1;
                }
                let end = (offset + (i + 1) * size).min(len);
                let mut cur: Vec<Value> = list
                    .get(start..end)
                    .map(<[Value]>::to_vec)
                    .unwrap_or_default();
                if js::truthy(&fill) && i >= extra {
                    cur.push(fill.clone());
                }
                out.push(Value::from(cur));
            }
            Value::from(out)
        }
        "sort" => {
            let reverse = js::truthy(&kw("reverse").unwrap_or_else(|| arg(0)));
            let case_sensitive = js::truthy(&kw("case_sensitive").unwrap_or_else(|| arg(1)));
            let attribute = kw("attribute").unwrap_or_else(|| arg(2));
            let mut list = items_or_err(name, &v)?;
            let key = |x: &Value| {
                if js::truthy(&attribute) {
                    let mut cur = x.clone();
                    for part in js::to_string(&attribute).split('.') {
                        cur = js::member(&cur, &Value::from(part));
                    }
                    cur
                } else {
                    x.clone()
                }
            };
            list.sort_by(|a, b| {
                let (mut x, mut y) = (key(a), key(b));
                if !case_sensitive && let (Some(p), Some(q)) = (x.as_str(), y.as_str()) {
                    let (p, q) = (p.to_lowercase(), q.to_lowercase());
                    x = Value::from(p);
                    y = Value::from(q);
                }
                let o = js_cmp(&x, &y);
                if reverse { o.reverse() } else { o }
            });
            Value::from(list)
        }
        "string" => v,
        "striptags" => {
            let text = s(&v)?;
            let stripped = strip_tags(&text);
            let trimmed = stripped.trim_matches(char::is_whitespace).to_owned();
            if js::truthy(&arg(0)) {
                let lines: Vec<String> = trimmed
                    .split('\n')
                    .map(|l| l.trim_matches(' ').to_owned())
                    .collect();
                let mut joined = lines.join("\n");
                while joined.contains("  ") {
                    joined = joined.replace("  ", " ");
                }
                joined = joined.replace("\r\n", "\n");
                while joined.contains("\n\n\n") {
                    joined = joined.replace("\n\n\n", "\n\n");
                }
                Value::from(joined)
            } else {
                Value::from(trimmed.split_whitespace().collect::<Vec<_>>().join(" "))
            }
        }
        "sum" => {
            let attr = arg(0);
            let start = args.get(1).cloned().unwrap_or(Value::from(0));
            let list = items_or_err(name, &v)?;
            let mut total = Value::from(0);
            for item in list {
                let item = if js::truthy(&attr) {
                    js::member(&item, &attr)
                } else {
                    item
                };
                total = js::add(&total, &item);
            }
            js::add(&start, &total)
        }
        "title" => Value::from(
            s(&v)?
                .split(' ')
                .map(|w| {
                    let lower = w.to_lowercase();
                    let mut c = lower.chars();
                    match c.next() {
                        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                        None => String::new(),
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "trim" => Value::from(
            need_str(name, &v)?
                .trim_matches(char::is_whitespace)
                .to_owned(),
        ),
        "truncate" => {
            let text = s(&v)?;
            let length = js::to_number(&arg(0));
            let length = if length > 0.0 { length as usize } else { 255 };
            let units: Vec<u16> = text.encode_utf16().collect();
            if units.len() <= length {
                return Ok(Value::from(text));
            }
            let cut = if js::truthy(&arg(1)) {
                length
            } else {
                // lastIndexOf(' ', length)
                units[..=length.min(units.len() - 1)]
                    .iter()
                    .rposition(|&u| u == u16::from(b' '))
                    .unwrap_or(length)
            };
            let end = match arg(2).kind() {
                ValueKind::Undefined | ValueKind::None => "...".to_owned(),
                _ => js::to_string(&arg(2)),
            };
            Value::from(String::from_utf16_lossy(&units[..cut]) + &end)
        }
        "urlencode" => match v.as_str() {
            Some(text) => Value::from(encode_uri_component(text)),
            None => {
                let pairs: Vec<(Value, Value)> = if v.kind() == ValueKind::Map {
                    entries(&v)
                        .into_iter()
                        .map(|(k, value)| (Value::from(k), value))
                        .collect()
                } else {
                    items(&v)
                        .into_iter()
                        .map(|p| {
                            (
                                js::member(&p, &Value::from(0)),
                                js::member(&p, &Value::from(1)),
                            )
                        })
                        .collect()
                };
                Value::from(
                    pairs
                        .iter()
                        .map(|(k, v)| {
                            format!(
                                "{}={}",
                                encode_uri_component(&js::to_string(k)),
                                encode_uri_component(&js::to_string(v))
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("&"),
                )
            }
        },
        "wordcount" => {
            let text = s(&v)?;
            let n = text
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .count();
            if n == 0 {
                Value::from(())
            } else {
                Value::from(n)
            }
        }
        "groupby" | "random" | "urlize" => {
            return Err(error(format!(
                "the `{name}` filter ({}; see docs/dialects.md, \"Templates\")",
                print::REFUSED
            )));
        }
        _ => return Err(error(format!("filter not found: {name}"))),
    })
}

/// The items of an array a filter needs (`arr.join`, `arr.filter`,
/// `arr.reduce`: Nunjucks throws a TypeError for anything else); a string's
/// characters where the filter walks it by index (`lib.map`, `toArray`).
fn items_or_err(name: &str, v: &Value) -> Result<Vec<Value>, Error> {
    let strings_ok = matches!(name, "sort" | "select" | "reject");
    match v.kind() {
        ValueKind::Seq | ValueKind::Iterable => Ok(items(v)),
        ValueKind::String if strings_ok => Ok(items(v)),
        _ => Err(error(format!(
            "{name}: {} is not an array (Nunjucks throws a TypeError here)",
            js::to_string(v)
        ))),
    }
}

/// The order `a > b ? 1 : a < b ? -1 : 0` gives (Array.prototype.sort
/// with such a comparator).
fn js_cmp(a: &Value, b: &Value) -> std::cmp::Ordering {
    let gt = js::binary(">", a, b).map(|v| v.is_true()).unwrap_or(false);
    let lt = js::binary("<", a, b).map(|v| v.is_true()).unwrap_or(false);
    if gt {
        std::cmp::Ordering::Greater
    } else if lt {
        std::cmp::Ordering::Less
    } else {
        std::cmp::Ordering::Equal
    }
}

/// `/<\/?([a-z][a-z0-9]*)\b[^>]*>|<!--[\s\S]*?-->/gi` removed.
fn strip_tags(s: &str) -> String {
    static TAGS: std::sync::OnceLock<regress::Regex> = std::sync::OnceLock::new();
    let re = TAGS.get_or_init(|| {
        regress::Regex::with_flags(r"<\/?([a-z][a-z0-9]*)\b[^>]*>|<!--[\s\S]*?-->", "gi")
            .expect("a valid pattern")
    });
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for m in re.find_iter(s) {
        out.push_str(&s[last..m.start()]);
        last = m.end();
    }
    out.push_str(&s[last..]);
    out
}

/// JavaScript's `encodeURIComponent`.
fn encode_uri_component(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A JavaScript method called on a value (`s.toUpperCase()`,
/// `items.join(", ")`): the common methods of strings and arrays.
fn js_method(value: &Value, method: &str, args: &[Value]) -> Result<Value, Error> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::UNDEFINED);
    let unknown = || {
        Error::new(
            ErrorKind::UnknownMethod,
            format!(
                "the JavaScript method `{method}` of a {} ({}; see docs/dialects.md, \"Templates\")",
                value.kind(),
                print::REFUSED
            ),
        )
    };
    if let Some(s) = value.as_str() {
        let a0 = js::to_string(&arg(0));
        return Ok(match method {
            "toUpperCase" | "toLocaleUpperCase" => Value::from(s.to_uppercase()),
            "toLowerCase" | "toLocaleLowerCase" => Value::from(s.to_lowercase()),
            "trim" => Value::from(s.trim_matches(char::is_whitespace)),
            "trimStart" => Value::from(s.trim_start_matches(char::is_whitespace)),
            "trimEnd" => Value::from(s.trim_end_matches(char::is_whitespace)),
            "includes" => Value::from(s.contains(&a0)),
            "startsWith" => Value::from(s.starts_with(&a0)),
            "endsWith" => Value::from(s.ends_with(&a0)),
            "indexOf" => Value::from(
                s.find(&a0)
                    .map(|i| js::utf16_len(&s[..i]) as i64)
                    .unwrap_or(-1),
            ),
            "split" if args.len() == 1 && arg(0).kind() == ValueKind::String => {
                if a0.is_empty() {
                    Value::from(items(value))
                } else {
                    Value::from(s.split(a0.as_str()).map(Value::from).collect::<Vec<_>>())
                }
            }
            "toString" => value.clone(),
            _ => return Err(unknown()),
        });
    }
    if matches!(value.kind(), ValueKind::Seq) {
        return Ok(match method {
            "join" => {
                let sep = if arg(0).is_undefined() {
                    ",".to_owned()
                } else {
                    js::to_string(&arg(0))
                };
                Value::from(
                    items(value)
                        .iter()
                        .map(js::display)
                        .collect::<Vec<_>>()
                        .join(&sep),
                )
            }
            "includes" => Value::from(items(value).iter().any(|i| js::strict_eq(i, &arg(0)))),
            "indexOf" => Value::from(
                items(value)
                    .iter()
                    .position(|i| js::strict_eq(i, &arg(0)))
                    .map_or(-1, |p| p as i64),
            ),
            "toString" => Value::from(js::to_string(value)),
            _ => return Err(unknown()),
        });
    }
    Err(unknown())
}

/// promptfoo's `load` filter: `JSON.parse(String(v))`.
pub fn json_parse(v: &Value) -> Result<Value, Error> {
    serde_json::from_str::<serde_json::Value>(&js::to_string(v))
        .map(Value::from_serialize)
        .map_err(|e| error(format!("SyntaxError: {e}")))
}

/// `JSON.stringify(v)` of a JSON value: JavaScript's numbers (`1`, not
/// `1.0`), keys in order (AgentV's templating of non-string vars).
pub fn json_stringify(v: &serde_json::Value) -> String {
    let mut out = String::new();
    match stringify(&Value::from_serialize(v), "", 0, &mut out) {
        Some(()) => out,
        None => "null".into(),
    }
}

/// Renders `template` (Nunjucks) with `ctx` in `env` (from
/// [`environment`]), translating through `cache`.
pub fn render(
    env: &Environment<'static>,
    cache: &Cache,
    template: &str,
    ctx: Value,
) -> Result<String, String> {
    let translated = cache.translate(template).map_err(|e| e.to_string())?;
    env.render_str(&translated, ctx).map_err(|e| {
        // minijinja's message names the translated template's text; the
        // line is the user's (the translation keeps every line break of
        // the text, not of the tags).
        let mut msg = e.kind().to_string();
        if let Some(detail) = e.detail() {
            msg = format!("{msg}: {detail}");
        }
        msg
    })
}
