//! JavaScript semantics the promptfoo handlers rely on: `String.prototype.trim`,
//! `Number.prototype.toFixed`, `String(number)`, UTF-16 lengths, an
//! object's keys in JavaScript's order, and a `JSON.parse` that accepts and
//! rejects exactly what V8's does.

use evalhost_plugin_sdk::Value;
use serde_json::Map;

/// JavaScript's `WhiteSpace` and `LineTerminator` (what `trim()` and `\s`
/// remove): unlike Rust's `char::is_whitespace`, U+FEFF is one and U+0085
/// is not.
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{000B}' | '\u{000C}' | '\r' | ' ' | '\u{00A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// `text.trim()`.
pub fn trim(text: &str) -> &str {
    text.trim_matches(is_js_space)
}

/// `text.length`: the count of UTF-16 code units.
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// `x.toFixed(digits)` for a finite `x` below 1e21: the decimal nearest to
/// the exact binary value, a tie going to the larger magnitude.
pub fn to_fixed(x: f64, digits: usize) -> String {
    if !x.is_finite() || x.abs() >= 1e21 {
        return number(x);
    }
    let negative = x < 0.0;
    // 1100 fractional digits hold any f64 exactly.
    let exact = format!("{:.1100}", x.abs());
    let (int_part, frac_part) = exact.split_once('.').unwrap_or((&exact, ""));
    let mut kept: Vec<u8> = int_part
        .bytes()
        .chain(frac_part.bytes().take(digits))
        .collect();
    let rest = &frac_part.as_bytes()[digits.min(frac_part.len())..];
    if rest.first().is_some_and(|d| *d >= b'5') {
        let mut i = kept.len();
        loop {
            if i == 0 {
                kept.insert(0, b'1');
                break;
            }
            i -= 1;
            if kept[i] == b'9' {
                kept[i] = b'0';
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    let split = kept.len() - digits;
    let mut out = String::new();
    let all_zero = kept.iter().all(|d| *d == b'0');
    if negative && !all_zero {
        out.push('-');
    }
    out.push_str(std::str::from_utf8(&kept[..split]).unwrap_or("0"));
    if digits > 0 {
        out.push('.');
        out.push_str(std::str::from_utf8(&kept[split..]).unwrap_or(""));
    }
    out
}

/// `String(x)` for a number: the shortest round-trip digits, in exponent
/// form below 1e-6 and from 1e21.
pub fn number(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return "0".into();
    }
    // `{:e}` gives the shortest round-trip digits: "d.ddde±x".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i64;
    let n = exp.parse::<i64>().unwrap_or(0) + 1;
    let sign = if x < 0.0 { "-" } else { "" };
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e = if e >= 0 {
            format!("+{e}")
        } else {
            e.to_string()
        };
        if k == 1 {
            format!("{digits}e{e}")
        } else {
            format!("{}.{}e{e}", &digits[..1], &digits[1..])
        }
    };
    format!("{sign}{body}")
}

/// A value as JavaScript's `String(value)` writes it.
pub fn string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), number),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                // `[null].join()` and `[undefined].join()` are "".
                Value::Null => String::new(),
                other => string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// `JSON.parse(text)`, or `None` where it throws. V8's grammar: no depth
/// limit, any number (one beyond f64 is `Infinity`, kept here as `null`,
/// which no caller distinguishes), lone surrogate escapes (kept as U+FFFD),
/// the last of duplicate keys.
pub fn json_parse(text: &str) -> Option<Value> {
    let mut p = JsonParser {
        s: text.as_bytes(),
        text,
        i: 0,
    };
    let v = p.value()?;
    p.ws();
    (p.i == p.s.len()).then_some(v)
}

struct JsonParser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
}

enum Frame {
    Array(Vec<Value>),
    Object(serde_json::Map<String, Value>, String),
}

impl JsonParser<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// One value, containers kept on an explicit stack (no recursion).
    fn value(&mut self) -> Option<Value> {
        let mut stack: Vec<Frame> = Vec::new();
        loop {
            self.ws();
            // Parse a value, or open a container.
            let mut v = match self.s.get(self.i)? {
                b'[' => {
                    self.i += 1;
                    self.ws();
                    if self.eat(b']') {
                        Value::Array(Vec::new())
                    } else {
                        stack.push(Frame::Array(Vec::new()));
                        continue;
                    }
                }
                b'{' => {
                    self.i += 1;
                    self.ws();
                    if self.eat(b'}') {
                        Value::Object(serde_json::Map::new())
                    } else {
                        let key = self.key()?;
                        stack.push(Frame::Object(serde_json::Map::new(), key));
                        continue;
                    }
                }
                b'"' => Value::String(self.string()?),
                b't' => self.literal("true", Value::Bool(true))?,
                b'f' => self.literal("false", Value::Bool(false))?,
                b'n' => self.literal("null", Value::Null)?,
                _ => self.number()?,
            };
            // Close what the value completes.
            loop {
                let Some(frame) = stack.last_mut() else {
                    return Some(v);
                };
                self.ws();
                match frame {
                    Frame::Array(items) => {
                        items.push(v);
                        if self.eat(b',') {
                            break;
                        }
                        if !self.eat(b']') {
                            return None;
                        }
                        let Some(Frame::Array(items)) = stack.pop() else {
                            return None;
                        };
                        v = Value::Array(items);
                    }
                    Frame::Object(map, key) => {
                        map.insert(std::mem::take(key), v);
                        if self.eat(b',') {
                            self.ws();
                            *key = self.key()?;
                            break;
                        }
                        if !self.eat(b'}') {
                            return None;
                        }
                        let Some(Frame::Object(map, _)) = stack.pop() else {
                            return None;
                        };
                        v = Value::Object(map);
                    }
                }
            }
        }
    }

    fn key(&mut self) -> Option<String> {
        if self.s.get(self.i) != Some(&b'"') {
            return None;
        }
        let k = self.string()?;
        self.ws();
        self.eat(b':').then_some(k)
    }

    fn literal(&mut self, word: &str, v: Value) -> Option<Value> {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Some(v)
        } else {
            None
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.text.get(self.i..self.i + 4)?;
        if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.i += 4;
        u32::from_str_radix(h, 16).ok()
    }

    fn string(&mut self) -> Option<String> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while let Some(&b) = self.s.get(self.i) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.i += 1;
            }
            out.push_str(&self.text[start..self.i]);
            match *self.s.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(out);
                }
                b'\\' => {
                    self.i += 1;
                    let e = *self.s.get(self.i)?;
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            if (0xD800..0xDC00).contains(&hi)
                                && self.s.get(self.i..self.i + 2) == Some(b"\\u")
                            {
                                let save = self.i;
                                self.i += 2;
                                match self.hex4() {
                                    Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                                        let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                                        out.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
                                        continue;
                                    }
                                    _ => self.i = save,
                                }
                            }
                            out.push(char::from_u32(hi).unwrap_or('\u{FFFD}'));
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.i;
        self.eat(b'-');
        let digits = |p: &mut Self| {
            let s = p.i;
            while p.s.get(p.i).is_some_and(u8::is_ascii_digit) {
                p.i += 1;
            }
            p.i > s
        };
        if self.eat(b'0') {
        } else if !digits(self) {
            return None;
        }
        let mut integral = true;
        if self.eat(b'.') {
            integral = false;
            if !digits(self) {
                return None;
            }
        }
        if matches!(self.s.get(self.i), Some(b'e' | b'E')) {
            integral = false;
            self.i += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if !digits(self) {
                return None;
            }
        }
        let text = &self.text[start..self.i];
        let f: f64 = text.parse().ok()?;
        if !f.is_finite() {
            return Some(Value::Null);
        }
        if integral && f.abs() < 9_007_199_254_740_992.0 {
            return Some(Value::from(f as i64));
        }
        Some(
            serde_json::Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(Value::Null),
        )
    }
}

/// The keys of an object in JavaScript's order: array indices ascending,
/// then the others as inserted.
pub fn js_keys(m: &Map<String, Value>) -> Vec<&String> {
    let index = |k: &str| -> Option<u32> {
        if k.is_empty()
            || (k.len() > 1 && k.starts_with('0'))
            || !k.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        k.parse::<u64>()
            .ok()
            .filter(|n| *n < 4_294_967_295)
            .map(|n| n as u32)
    };
    let mut ints: Vec<(u32, &String)> = m.keys().filter_map(|k| index(k).map(|n| (n, k))).collect();
    ints.sort_by_key(|(n, _)| *n);
    let mut out: Vec<&String> = ints.into_iter().map(|(_, k)| k).collect();
    out.extend(m.keys().filter(|k| index(k).is_none()));
    out
}

/// `JSON.stringify(value)`: numbers as JavaScript writes them, object
/// keys in JavaScript's order (array indices first).
pub fn stringify(v: &Value) -> String {
    let mut out = String::new();
    write_json(v, &mut out);
    out
}

fn write_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.is_finite() => out.push_str(&number(x)),
            _ => out.push_str("null"),
        },
        Value::String(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    '\u{8}' => out.push_str("\\b"),
                    '\u{c}' => out.push_str("\\f"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, k) in js_keys(m).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(&Value::String(k.clone()), out);
                out.push(':');
                write_json(&m[k], out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_fixed_rounds_half_away_as_javascript_does() {
        assert_eq!(to_fixed(0.125, 2), "0.13");
        assert_eq!(to_fixed(0.5, 0), "1");
        assert_eq!(to_fixed(1.005, 2), "1.00"); // 1.00499999999999989...
        assert_eq!(to_fixed(2.0 / 3.0, 3), "0.667");
        assert_eq!(to_fixed(0.0, 3), "0.000");
        assert_eq!(to_fixed(0.9999, 2), "1.00");
        assert_eq!(to_fixed(1.0, 2), "1.00");
    }

    #[test]
    fn numbers_print_as_javascript_prints_them() {
        assert_eq!(number(0.75), "0.75");
        assert_eq!(number(5.0), "5");
        assert_eq!(number(1e-7), "1e-7");
        assert_eq!(number(1.5e-7), "1.5e-7");
        assert_eq!(number(0.000001), "0.000001");
        assert_eq!(number(1e21), "1e+21");
        assert_eq!(number(123456789012345680000.0), "123456789012345680000");
        assert_eq!(number(-0.1), "-0.1");
    }

    #[test]
    fn json_parse_accepts_what_v8_accepts() {
        assert!(json_parse("  {\"a\": [1, 2.5, -0, 1e400, \"\\ud800\"]} ").is_some());
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(json_parse(&deep).is_some());
        for bad in [
            "",
            "01",
            "1.",
            ".1",
            "[1,]",
            "{\"a\":1,}",
            "'a'",
            "\"\t\"",
            "nul",
            "{a:1}",
            "[1] x",
            "\u{FEFF}1",
            "+1",
            "0x1",
            "NaN",
        ] {
            assert!(json_parse(bad).is_none(), "{bad:?}");
        }
        assert_eq!(
            json_parse("{\"a\":1,\"a\":2}").unwrap(),
            serde_json::json!({"a": 2})
        );
        assert_eq!(
            json_parse("\"\\ud83d\\ude00\"").unwrap(),
            serde_json::json!("😀")
        );
    }
}
